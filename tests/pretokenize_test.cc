// The pre-tokenizer scanners: splits traced through llama.cpp's expressions
// by hand, invalid UTF-8, and linear cost on long runs of one class.

#include "runtime/tokenizer/pretokenize.h"

#include <gtest/gtest.h>


#include "runtime/tokenizer/unicode.h"
#include "tests/testing/test_matrix.h"

namespace strata::tokenizer {
namespace {

using V = std::vector<std::string>;
using K = PreTokenizerKind;

V Words(K kind, std::string_view text) {
  V w;
  PreTokenize(kind, text, &w);
  return w;
}

TEST(PreTokenize, Gpt2) {
  EXPECT_EQ(Words(K::kGpt2, "Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(Words(K::kGpt2, "I'm here, they'RE"), (V{"I", "'m", " here", ",", " they", "'", "RE"}))
      << "GPT-2's contractions are case-sensitive";
  EXPECT_EQ(Words(K::kGpt2, "a  b"), (V{"a", " ", " b"})) << "\\s+(?!\\S) leaves one space for the word";
  EXPECT_EQ(Words(K::kGpt2, "a  "), (V{"a", "  "}));
  EXPECT_EQ(Words(K::kGpt2, "x 12345 !!?"), (V{"x", " 12345", " !!?"}));
  EXPECT_EQ(Words(K::kGpt2, "\n\n a"), (V{"\n\n", " a"}));
  EXPECT_EQ(Words(K::kGpt2, ""), V{});
}

TEST(PreTokenize, Llama3) {
  EXPECT_EQ(Words(K::kLlama3, "12345678"), (V{"123", "456", "78"}));
  EXPECT_EQ(Words(K::kLlama3, "they'RE"), (V{"they", "'RE"})) << "case-insensitive contractions";
  EXPECT_EQ(Words(K::kLlama3, "(hello)"), (V{"(hello", ")"})) << "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+";
  EXPECT_EQ(Words(K::kLlama3, "a\n\n  b"), (V{"a", "\n\n", " ", " b"}));
  EXPECT_EQ(Words(K::kLlama3, "x !!\n\ny"), (V{"x", " !!\n\n", "y"})) << " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*";
  EXPECT_EQ(Words(K::kLlama3, "a \t\n b"), (V{"a", " \t\n", " b"})) << "\\s*[\\r\\n]+ cuts after the last newline";
}

TEST(PreTokenize, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(Words(K::kQwen2, "apple1314"), (V{"apple", "1", "3", "1", "4"}));
  EXPECT_EQ(Words(K::kQwen2, " 3.3"), (V{" ", "3", ".", "3"}));
}

TEST(PreTokenize, ControlCharactersArePunctuationLike) {
  // A C0 control has a class (\p{C}), so [^\s\p{L}\p{N}] takes it, with an
  // optional leading space like any symbol.
  EXPECT_EQ(Words(K::kQwen2, "a ,"), (V{"a", " ,"}));
  EXPECT_EQ(Words(K::kQwen2, "a \x01!"), (V{"a", " \x01!"}));
  EXPECT_EQ(Words(K::kGpt2, "a \x01!"), (V{"a", " \x01!"}));
}

TEST(PreTokenize, DeepseekLlm) {
  // [\r\n] | \s?[letters]+ | \s?[punct]+ | \s+$ | [CJK]+ | \p{N}+, in order.
  EXPECT_EQ(Words(K::kDeepseekLlm, "Hello world!\n"), (V{"Hello", " world", "!", "\n"}));
  EXPECT_EQ(Words(K::kDeepseekLlm, "\u6211\u60F3 apple 1314"), (V{"\u6211\u60F3", " apple", " ", "1314"}));
  EXPECT_EQ(Words(K::kDeepseekLlm, "ab   "), (V{"ab", "   "}));
}

TEST(PreTokenize, DeepseekCoder) {
  // '=' is a symbol, not \p{P}: it stays in the gap with the spaces.
  EXPECT_EQ(Words(K::kDeepseekCoder, "x = 42;\n"), (V{"x", " = ", "4", "2", ";", "\n"}));
}

TEST(PreTokenize, FalconAndStarcoder) {
  // Punctuation and ASCII symbols first, then GPT-2, then runs of three digits.
  EXPECT_EQ(Words(K::kFalcon, "a+b 12345"), (V{"a", "+", "b", " ", "123", "45"}));
  EXPECT_EQ(Words(K::kStarcoder, "x 123"), (V{"x", " ", "1", "2", "3"}));
  EXPECT_EQ(Words(K::kDefault, "abc 1234567"), (V{"abc", " ", "123", "456", "7"}));
}

TEST(PreTokenize, InvalidUtf8BecomesReplacementCharacters) {
  // Each byte that does not start a well-formed sequence is one U+FFFD.
  EXPECT_EQ(Words(K::kQwen2, "a\xFF\xFE b"), (V{"a", "\uFFFD\uFFFD", " b"}));
  EXPECT_EQ(Words(K::kGpt2, "\xE4\xB8 x"), (V{"\uFFFD\uFFFD", " x"})) << "a truncated sequence";
  EXPECT_EQ(Words(K::kQwen2, "\xF4\x90\x80\x80"), (V{"\uFFFD\uFFFD\uFFFD\uFFFD"})) << "above U+10FFFF";
  EXPECT_EQ(Words(K::kQwen2, "\xC0\xAF"), (V{"/"})) << "overlong forms decode, as in llama.cpp";
}

TEST(Unicode, ClassesComeFromUtf8proc) {
  EXPECT_TRUE(FlagsOf('a').letter());
  EXPECT_TRUE(FlagsOf(0x0301).mark());
  EXPECT_TRUE(FlagsOf(0x00BD).number());
  EXPECT_TRUE(FlagsOf(0x3000).whitespace());
  EXPECT_TRUE(FlagsOf(0x0085).whitespace());
  EXPECT_FALSE(FlagsOf(0x001C).whitespace()) << "not White_Space, though Python's isspace says so";
  EXPECT_FALSE(FlagsOf(0x200B).whitespace());
  EXPECT_TRUE(FlagsOf(0xE000).control()) << "private use is \\p{C}";
  EXPECT_EQ(FlagsOf(0x0378).bits, CodepointFlags::kUndefined);
  EXPECT_EQ(ToLower(0x0130), 0x69u);
  EXPECT_EQ(NfdFirst(0x00E9), 0x65u);
  EXPECT_EQ(NfdFirst(0xD55C), 0x1112u) << "Hangul syllables decompose to their leading jamo";
  for (int b = 0; b < 256; ++b) {
    auto s = ByteToUnicode(static_cast<uint8_t>(b));
    auto cps = DecodeUtf8(s);
    ASSERT_EQ(cps.size(), 1u);
    EXPECT_EQ(UnicodeToByte(cps[0]), b);
  }
  EXPECT_EQ(ByteToUnicode(' '), "\u0120");
  EXPECT_EQ(ByteToUnicode('\n'), "\u010A");
}

// Megabytes of one class must not recurse or go quadratic (std::regex did
// both on Qwen's expression). No timing is compared here (the machine is
// shared): a 1 MiB run of one class finishes in milliseconds when linear and
// would take hours when quadratic, far beyond the test timeout; deep
// recursion would overflow the stack. The pieces must cover the input exactly.
TEST(PreTokenize, LongRunsOfOneClassNeitherRecurseNorGoQuadratic) {
  const std::vector<std::string> units = {"a", " ", "1", "!", "\n", "\u0301", "\u4E00", "a\u0301", " \t", "'s"};
  const K kinds[] = {K::kDefault,     K::kGpt2,          K::kLlama3, K::kQwen2,   K::kQwen35,     K::kGpt4o,
                     K::kDeepseekLlm, K::kDeepseekCoder, K::kKimiK2, K::kDeepseekV3, K::kFalcon, K::kStarcoder};
  // 1 MiB of each; 256 KiB in the subset builds (tests/testing/test_matrix.h):
  // still far past any recursion depth, and quadratic work would still show.
  const size_t bytes = testing::kMatrixSubset ? (1u << 18) : (1u << 20);
  for (const auto& u : units) {
    std::string text;
    while (text.size() < bytes) text += u;
    for (K kind : kinds) {
      V words;
      PreTokenize(kind, text, &words);
      std::string joined;
      for (const auto& w : words) joined += w;
      EXPECT_EQ(joined.size(), text.size()) << "unit \"" << u << "\" kind " << static_cast<int>(kind);
      EXPECT_TRUE(joined == text) << "unit \"" << u << "\" kind " << static_cast<int>(kind);
    }
  }
}

}  // namespace
}  // namespace strata::tokenizer
