// Tokenizer behaviour beyond the conformance files: special-token matching,
// WordPiece normalization, invalid UTF-8, and long inputs.

#include <gtest/gtest.h>

#include <chrono>

#include "runtime/base/mapped_file.h"  // FileExists, used by STRATA_REQUIRE_SHARED_FILE
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/unicode.h"
#include "tests/testing/test_data.h"
#include "tests/testing/tokenizer_vocabs.h"

namespace strata::tokenizer {
namespace {

using testing::SharedFile;
using testing::SharedTokenizer;
using Ids = std::vector<int32_t>;

std::string ByteLevel(std::string_view raw) {
  std::string s;
  for (char c : raw) s += ByteToUnicode(static_cast<uint8_t>(c));
  return s;
}

// A byte-level BPE vocabulary: the 256 byte symbols (ids 0..255), then
// `extra` tokens given as raw text (byte-level encoded here unless special).
struct Extra {
  std::string text;
  TokenType type = TokenType::kNormal;
};
Vocab ByteLevelVocab(const std::string& pre, const std::vector<Extra>& extra, const std::vector<std::string>& merges) {
  Vocab v;
  v.model = VocabModel::kBpe;
  v.pre = pre;
  for (int b = 0; b < 256; ++b) {
    v.tokens.emplace_back(ByteToUnicode(static_cast<uint8_t>(b)));
    v.types.push_back(TokenType::kNormal);
  }
  for (const auto& e : extra) {
    v.tokens.push_back(e.type == TokenType::kNormal ? ByteLevel(e.text) : e.text);
    v.types.push_back(e.type);
  }
  v.merges = merges;
  return v;
}

Tokenizer Make(const Vocab& v) {
  auto t = Tokenizer::Create(v);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

// Qwen3.5 vs Qwen2 on a vocabulary with a merge across letter + mark: the
// ids differ exactly as the pre-tokens do.
TEST(TokenizerBpe, Qwen35MergesAcrossCombiningMarks) {
  const std::string acute = ByteLevel("\u0301");  // two byte symbols
  const std::string merges_0 = ByteLevel("\xCC") + " " + ByteLevel("\x81");
  const std::string merges_1 = "e " + acute;
  std::vector<Extra> extra = {{"\u0301"}, {"e\u0301"}};  // ids 256, 257
  auto q2 = Make(ByteLevelVocab("qwen2", extra, {merges_0, merges_1}));
  auto q35 = Make(ByteLevelVocab("qwen35", extra, {merges_0, merges_1}));
  EXPECT_EQ(q2.Encode("e\u0301", false, false), (Ids{'e', 256}));
  EXPECT_EQ(q35.Encode("e\u0301", false, false), (Ids{257}));
  EXPECT_EQ(q35.Decode(Ids{257}), "e\u0301");
}

TEST(TokenizerBpe, MergesByRankThenLeftmost) {
  // "abc": a+b (rank 1) and b+c (rank 0): b+c first, then nothing joins a.
  auto t = Make(ByteLevelVocab("gpt-2", {{"ab"}, {"bc"}}, {"b c", "a b"}));
  EXPECT_EQ(t.Encode("abc", false, false), (Ids{'a', 257}));
  // "aaa" with a+a: leftmost pair first.
  auto u = Make(ByteLevelVocab("gpt-2", {{"aa"}}, {"a a"}));
  EXPECT_EQ(u.Encode("aaa", false, false), (Ids{256, 'a'}));
}

TEST(TokenizerSpecial, ParseSpecialDecidesForControlNotForUserDefined) {
  auto t = Make(ByteLevelVocab("gpt-2", {{"<ctl>", TokenType::kControl}, {"<usr>", TokenType::kUserDefined}},
                               {}));
  const int ctl = 256, usr = 257;
  EXPECT_EQ(t.Encode("x<ctl>y", false, true), (Ids{'x', ctl, 'y'}));
  Ids plain = t.Encode("x<ctl>y", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), ctl), 0);
  EXPECT_EQ(t.Decode(plain), "x<ctl>y");
  EXPECT_EQ(t.Encode("x<usr>y", false, false), (Ids{'x', usr, 'y'}));
  EXPECT_EQ(t.Decode(Ids{ctl}), "");
  EXPECT_EQ(t.Decode(Ids{ctl}, {.unparse_special = true}), "<ctl>");
  EXPECT_EQ(t.TokenToPiece(usr, false), "<usr>");
}

TEST(TokenizerSpecial, LongestTextWinsAndStripFlagsEatSpaces) {
  Vocab v = ByteLevelVocab("gpt-2", {{"<a>", TokenType::kUserDefined}, {"a>bc", TokenType::kUserDefined}}, {});
  auto t = Make(v);
  // "a>bc" is longer, so it is cut out first although "<a>" starts earlier.
  EXPECT_EQ(t.Encode("<a>bc", false, false), (Ids{'<', 257}));
  v.rstrip_ids = {256};
  v.lstrip_ids = {257};
  auto s = Make(v);
  EXPECT_EQ(s.Encode("x <a>  y", false, false), (Ids{'x', ' ', 256, 'y'}));
  EXPECT_EQ(s.Encode("x  a>bc", false, false), (Ids{'x', 257}));
}

TEST(TokenizerWpm, NormalizesLikeBertBasicTokenizer) {
  STRATA_REQUIRE_SHARED_FILE(SharedFile("tokenizer/ggml-vocab-bert-bge.gguf"));
  auto t = SharedTokenizer("tokenizer/ggml-vocab-bert-bge.gguf");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto id = [&](const char* text) {
    int32_t i = t->Find(text);
    EXPECT_NE(i, kNoToken) << text;
    return i;
  };
  // Accents stripped, lower-cased, punctuation and CJK split off, ZWJ dropped.
  EXPECT_EQ(t->Encode("H\u00E9llo,\u4E16\u4E2D!", false, false),
            (Ids{id("\u2581hello"), id("\u2581,"), id("\u2581\u4E16"), id("\u2581\u4E2D"), id("\u2581!")}));
  EXPECT_EQ(t->Encode("he\u200Dllo", false, false), (Ids{id("\u2581hello")}));
  EXPECT_EQ(t->Encode("hello", true, false), (Ids{101, id("\u2581hello"), 102}));
  // A word with a character no token covers becomes [UNK] as a whole.
  EXPECT_EQ(t->Find("\u2581\U0001F999"), kNoToken);
  EXPECT_EQ(t->Encode("x\U0001F999 ok", false, false), (Ids{100, id("\u2581ok")}));
  EXPECT_EQ(t->Encode("\xFF\xFE ok", false, false), (Ids{id("\u2581ok")})) << "invalid UTF-8 is dropped";
}

TEST(TokenizerSpm, SpacePrefixAfterSpecialTokens) {
  STRATA_REQUIRE_SHARED_FILE(SharedFile("tokenizer/ggml-vocab-llama-spm.gguf"));
  auto t = SharedTokenizer("tokenizer/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const int32_t hi = t->Find("\u2581Hi");
  ASSERT_NE(hi, kNoToken);
  EXPECT_EQ(t->Encode("<s>Hi</s>Hi", false, true), (Ids{1, hi, 2, hi}));
  // Bytes without a token go through <0xHH> and come back exactly.
  for (const std::string raw : {"\x01 ok \x7F", "\xFF", "caf\xC3"}) {
    EXPECT_EQ(t->Decode(t->Encode(raw, false, false)), raw) << raw;
  }
  // llama.cpp's quirk, kept: an invalid lead byte claims the length its high
  // bits announce, here taking the escaped space after it, which then decodes
  // as the bytes of U+2581 instead of a space.
  EXPECT_EQ(t->Decode(t->Encode("\xFF ok", false, false)), "\xFF\u2581ok");
}

// SPM merges word by word when no token can span the start of a "\u2581word".
// A vocabulary with one extra token that breaks that rule (and can never be
// formed: no two-symbol token leads to it) takes the whole-text path; both
// must give the same ids on the conformance strings, long mixed text and
// invalid UTF-8.
TEST(TokenizerSpm, WordByWordMergingEqualsWholeTextMerging) {
  const std::string gguf = SharedFile("tokenizer/ggml-vocab-llama-spm.gguf");
  STRATA_REQUIRE_SHARED_FILE(gguf);
  auto split = SharedTokenizer("tokenizer/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(split.ok());
  Vocab v = split->vocab();
  v.tokens.push_back("Q\xE2\x96\x81\xF0");
  v.types.push_back(TokenType::kNormal);
  v.scores.push_back(0.0f);
  auto whole = Tokenizer::Create(v);
  ASSERT_TRUE(whole.ok());
  auto cases = testing::ReadTokenizerCases(gguf + ".inp", gguf + ".out");
  ASSERT_TRUE(cases.ok());
  std::vector<std::string> texts;
  std::string all;
  for (const auto& c : *cases) {
    texts.push_back(c.text);
    all += c.text + " \xFF\xE2 \xC3";
  }
  texts.push_back(all);
  texts.push_back("  a  b\xFF c\xE2\x96 \xF0 d");
  for (const auto& t : texts) {
    EXPECT_EQ(split->Encode(t, true, false), whole->Encode(t, true, false)) << t;
    EXPECT_EQ(split->Encode(t, false, true), whole->Encode(t, false, true)) << t;
  }
}

TEST(TokenizerBpe, InvalidUtf8BecomesReplacementCharacters) {
  STRATA_REQUIRE_SHARED_FILE(SharedFile("tokenizer/ggml-vocab-qwen2.gguf"));
  auto t = SharedTokenizer("tokenizer/ggml-vocab-qwen2.gguf");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Decode(t->Encode("a\xFF\xC3 b", false, false)), "a\uFFFD\uFFFD b");
  EXPECT_EQ(t->Decode(t->Encode("\xF0\x9F\x98", false, false)), "\uFFFD\uFFFD\uFFFD") << "a cut-off emoji";
  EXPECT_EQ(t->TokenToPiece(-1, true), "");
  EXPECT_EQ(t->TokenToPiece(t->n_tokens(), true), "");
  EXPECT_EQ(t->Decode(Ids{-5, 9707, 1 << 30}), "Hello");
}

// Whole tokenizers on long inputs: no recursion, no quadratic step.
TEST(Tokenizer, LongInputsStayCheap) {
  const char* vocabs[] = {"tokenizer/ggml-vocab-qwen2.gguf", "tokenizer/ggml-vocab-llama-spm.gguf",
                          "tokenizer/ggml-vocab-bert-bge.gguf", "tokenizer/ggml-vocab-deepseek-llm.gguf"};
  const std::string units[] = {"a", " ", "7", "\u0301", "Hello, world! 3.14 \u4E16\u4E2D\n"};
  for (const char* path : vocabs) {
    STRATA_REQUIRE_SHARED_FILE(SharedFile(path));
    auto t = SharedTokenizer(path);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    for (const auto& u : units) {
      std::string text;
      while (text.size() < (256u << 10)) text += u;
      auto t0 = std::chrono::steady_clock::now();
      Ids ids = t->Encode(text, false, true);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_LT(s, 30.0) << path << " on 256 KiB of \"" << u << "\"";
    }
  }
}

}  // namespace
}  // namespace strata::tokenizer
