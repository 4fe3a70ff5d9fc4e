// The tokenizer against llama.cpp: test-tokenizer-0's cases for every vocab in
// ../shared/data/tokenizer, Qwen2/Qwen3.5 cases, and stories260K's prompt and
// generated text from the conformance fixtures.

#include "runtime/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "runtime/base/mapped_file.h"  // FileExists, used by STRATA_REQUIRE_SHARED_FILE
#include "runtime/base/strings.h"
#include "runtime/tokenizer/pretokenize.h"
#include "runtime/tokenizer/unicode.h"
#include "packer/gguf/gguf_file.h"
#include "packer/tokenizer_import.h"
#include "tests/testing/run_command.h"
#include "tests/testing/test_data.h"
#include "tests/testing/tokenizer_vocabs.h"

namespace strata::tokenizer {
namespace {

using testing::IdsToString;
using testing::SharedFile;
using testing::SharedTokenizer;

std::string VocabPath(const std::string& name) { return "tokenizer/ggml-vocab-" + name + ".gguf"; }

// gtest names cannot contain '-'.
std::string ParamName(const ::testing::TestParamInfo<std::string>& p) {
  std::string n = p.param;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

// --- test-tokenizer-0 ------------------------------------------------------

class TokenizerConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerConformance, MatchesLlamaCppTestCases) {
  const std::string name = GetParam();
  const std::string gguf = SharedFile(VocabPath(name));
  STRATA_REQUIRE_SHARED_FILE(gguf);
  STRATA_REQUIRE_SHARED_FILE(gguf + ".inp");
  auto cases = testing::ReadTokenizerCases(gguf + ".inp", gguf + ".out");
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  auto tok = SharedTokenizer(VocabPath(name));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();

  size_t passed = 0;
  for (size_t i = 0; i < cases->size(); ++i) {
    const auto& c = (*cases)[i];
    std::vector<int32_t> got = tok->Encode(c.text, /*add_special=*/false, /*parse_special=*/false);
    if (got == c.ids) {
      ++passed;
      continue;
    }
    ADD_FAILURE() << name << " case " << i << " \"" << Printable(c.text, 200) << "\"\n  expected "
                  << IdsToString(c.ids) << "\n  got      " << IdsToString(got);
  }
  std::cout << "[ tokenizer ] " << name << ": " << passed << "/" << cases->size() << " cases pass\n";
  RecordProperty("passed", static_cast<int>(passed));
  RecordProperty("cases", static_cast<int>(cases->size()));
  EXPECT_EQ(passed, cases->size());
  EXPECT_EQ(cases->size(), 46u) << "test-tokenizer-0 has 46 cases per vocab today";
}

INSTANTIATE_TEST_SUITE_P(AllSharedVocabs, TokenizerConformance,
                         ::testing::Values("bert-bge", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2",
                                           "llama-bpe", "llama-spm", "mpt", "phi-3", "refact", "starcoder"),
                         ParamName);

// Pre-tokenizer names whose real vocabularies are not on this machine
// (docs/tokenizer.md): a shared vocabulary rewritten under the name
// (strata-make-gguf --vocab-from ... --pre NAME), tokenized by llama.cpp
// (tests/tokenizer/NAME-on-llama-bpe[.extra].out, made with the reference
// driver of scripts/conformance-refs.sh: llama_ref --tokenize VOCAB CASES)
// and by Strata, case by case: test-tokenizer-0's 46 cases and
// tests/tokenizer/pretok-extra.inp (case splits, contractions, digits,
// slashes, whitespace runs, marks, scripts).
class PreTokenizerNames : public ::testing::TestWithParam<std::string> {};

TEST_P(PreTokenizerNames, MatchLlamaCppOnTheLlamaBpeVocabulary) {
  const std::string pre = GetParam();
  const std::string base = SharedFile(VocabPath("llama-bpe"));
  STRATA_REQUIRE_SHARED_FILE(base);
  const std::string gguf = testing::ScratchDir("pretok_" + pre) + "/vocab.gguf";
  auto r = testing::RunProgram("strata-make-gguf", {"--vocab-from", base, "--pre", pre, "-o", gguf});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto model = gguf::GgufModel::Open(gguf);
  ASSERT_TRUE(model.ok());
  std::vector<std::string> warnings;
  auto vocab = ImportVocab(*model, &warnings);
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  EXPECT_EQ(vocab->pre, pre);
  auto tok = tokenizer::Tokenizer::Create(*vocab);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const std::string dir = std::string(STRATA_SOURCE_DIR) + "/tests/tokenizer/";
  size_t passed = 0, total = 0;
  for (const auto& [inp, out] : {std::pair{base + ".inp", dir + pre + "-on-llama-bpe.out"},
                                 {dir + "pretok-extra.inp", dir + pre + "-on-llama-bpe.extra.out"},
                                 {dir + "pretok-differ.inp", dir + pre + "-on-llama-bpe.differ.out"}}) {
    auto cases = testing::ReadTokenizerCases(inp, out);
    ASSERT_TRUE(cases.ok()) << cases.status().ToString();
    for (const auto& c : *cases) {
      ++total;
      const std::vector<int32_t> got = tok->Encode(c.text, false, false);
      if (got == c.ids) ++passed;
      else ADD_FAILURE() << "\"" << Printable(c.text, 200) << "\"\n  expected " << IdsToString(c.ids) << "\n  got " << IdsToString(got);
    }
  }
  EXPECT_EQ(passed, total);
  EXPECT_EQ(total, 263u);
}

INSTANTIATE_TEST_SUITE_P(Names, PreTokenizerNames, ::testing::Values("glm4", "gpt-4o", "deepseek-v3", "kimi-k2"),
                         [](const auto& p) {
  std::string n = p.param;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
});

// Decode(Encode(s)) gives s back for byte-level BPE (special texts included,
// since they decode to their own text), and for SPM up to its space prefix.
class TokenizerRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerRoundTrip, DecodeOfEncodeIsIdentity) {
  const std::string name = GetParam();
  const std::string gguf = SharedFile(VocabPath(name));
  STRATA_REQUIRE_SHARED_FILE(gguf);
  auto cases = testing::ReadTokenizerCases(gguf + ".inp", gguf + ".out");
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  auto tok = SharedTokenizer(VocabPath(name));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const bool spm = tok->vocab().model == VocabModel::kSpm;
  const bool cleans = !spm && FindPreTokenizer(tok->vocab().pre)->clean_spaces;
  for (const auto& c : *cases) {
    std::vector<int32_t> ids = tok->Encode(c.text, false, false);
    EXPECT_EQ(tok->Decode(ids, {.keep_spaces = true}), c.text) << name << ": \"" << Printable(c.text) << "\"";
    if (!cleans) {
      EXPECT_EQ(tok->Decode(ids), c.text) << name << ": \"" << Printable(c.text) << "\"";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ByteLevelAndSpm, TokenizerRoundTrip,
                         ::testing::Values("deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "llama-bpe",
                                           "llama-spm", "mpt", "phi-3", "refact", "starcoder"),
                         ParamName);

// --- Qwen2 and Qwen3.5 -----------------------------------------------------

// The 43 cases of llama.cpp's models/ggml-vocab-qwen2.gguf.inp/.out (the
// older test list: "Führer", no "!!!!!!"); ids from HF's Qwen1.5 tokenizer.
struct QwenCase {
  const char* text;
  std::vector<int32_t> ids;
};

const std::string kQwenChkTxt =
    "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n\U0001F680 (normal) \U0001F636\u200D\U0001F32B\uFE0F (multiple "
    "emojis concatenated) \u2705 \U0001F999\U0001F999 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 "
    "\u1780\u17B6\u1793\u17CB\u178F\u17C2\u1796\u17B7\u179F\u17C1\u179F\u17A2\u17B6\u1785\U0001F601 "
    "?\u6211\u60F3\u5728apple\u5DE5\u4F5C1314151\u5929\uFF5E ------======= "
    "\u043D\u0435\u0449\u043E \u043D\u0430 \u0411\u044A\u043B\u0433\u0430\u0440\u0441\u043A\u0438 "
    "''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, "
    "'D you like some tea? We'Ve a'lL";

const std::vector<QwenCase>& QwenCases() {
  static const std::vector<QwenCase> kCases = {
      {"ied 4 \u00BD months", {1122, 220, 19, 220, 26062, 3951}},
      {"F\u00FChrer", {37, 50753, 261}},
      {"", {}},
      {" ", {220}},
      {"  ", {256}},
      {"   ", {262}},
      {"\t", {197}},
      {"\n", {198}},
      {"\n\n", {271}},
      {"\n\n\n", {1406}},
      {"\t\n", {1572}},
      {"Hello world", {9707, 1879}},
      {" Hello world", {21927, 1879}},
      {"Hello World", {9707, 4337}},
      {" Hello World", {21927, 4337}},
      {" Hello World!", {21927, 4337, 0}},
      {"Hello, world!", {9707, 11, 1879, 0}},
      {" Hello, world!", {21927, 11, 1879, 0}},
      {" this is \U0001F999.cpp", {419, 374, 11162, 99, 247, 13, 10821}},
      {"w048 7tuijk dsdfhu", {86, 15, 19, 23, 220, 22, 83, 1963, 41808, 11472, 2940, 16739}},
      {"\u043D\u0435\u0449\u043E \u043D\u0430 \u0411\u044A\u043B\u0433\u0430\u0440\u0441\u043A\u0438",
       {78762, 14144, 1456, 13073, 63471, 33594, 3038, 133178, 79012}},
      {"\u1780\u17B6\u1793\u17CB\u178F\u17C2\u1796\u17B7\u179F\u17C1\u179F\u17A2\u17B6\u1785\u1781\u179B\u1785\u17C1"
       "\u1789",
       {146394, 97529, 241, 44258, 233, 146568, 44258, 224, 147603, 20879, 115, 146280, 44258, 223, 146280, 147272,
        97529, 227, 147805, 148301, 147270, 44258, 223, 146848}},
      {"\U0001F680 (normal) \U0001F636\u200D\U0001F32B\uFE0F (multiple emojis concatenated) \u2705 (only emoji that "
       "has its own token)",
       {145836, 320, 8252, 8, 26525, 114, 378, 235, 149921, 30543, 320, 35673, 99066, 97534, 8, 25521, 227, 320, 3243,
        42365, 429, 702, 1181, 1828, 3950, 8}},
      {"Hello", {9707}},
      {" Hello", {21927}},
      {"  Hello", {220, 21927}},
      {"   Hello", {256, 21927}},
      {"    Hello", {262, 21927}},
      {"    Hello\n    Hello", {262, 21927, 198, 262, 21927}},
      {" (", {320}},
      {"\n =", {198, 284}},
      {"' era", {6, 11385}},
      {"Hello, y'all! How are you \U0001F601 ?\u6211\u60F3\u5728apple\u5DE5\u4F5C1314151\u5929\uFF5E",
       {9707, 11, 379, 64848, 0, 2585, 525, 498, 26525, 223, 937, 104100, 18493, 22377, 99257, 16, 18, 16, 19, 16, 20,
        16, 35727, 21216}},
      {"3", {18}},
      {"33", {18, 18}},
      {"333", {18, 18, 18}},
      {"3333", {18, 18, 18, 18}},
      {"33333", {18, 18, 18, 18, 18}},
      {"333333", {18, 18, 18, 18, 18, 18}},
      {"3333333", {18, 18, 18, 18, 18, 18, 18}},
      {"33333333", {18, 18, 18, 18, 18, 18, 18, 18}},
      {"333333333", {18, 18, 18, 18, 18, 18, 18, 18, 18}},
      {kQwenChkTxt.c_str(),
       {198,   4710,  14731, 65497, 7847,  1572,   2303,  78672, 10947,  145836, 320,    8252,  8,     26525, 114,
        378,   235,   149921, 30543, 320,  35673,  99066, 97534, 8,      25521,  227,    11162, 99,    247,   149955,
        220,   18,    220,   18,    18,    220,    18,    18,    18,     220,    18,     18,    18,    18,    220,
        18,    18,    18,    18,    18,    220,    18,    18,    18,     18,     18,     18,    220,   18,    18,
        18,    18,    18,    18,    18,    220,    18,    18,    18,     18,     18,     18,    18,    18,    220,
        18,    13,    18,    220,   18,    496,    18,    220,   18,     1112,   18,     220,   146394, 97529, 241,
        44258, 233,   146568, 44258, 224,  147603, 20879, 115,   146280, 44258,  223,    146280, 147272, 97529, 227,
        144534, 937,  104100, 18493, 22377, 99257, 16,    18,    16,     19,     16,     20,    16,    35727, 21216,
        55460, 53237, 18658, 14144, 1456,  13073,  63471, 33594, 3038,   133178, 79012,  3355,  4605,  4605,  13874,
        13874, 73594, 3014,  3014,  28149, 17085,  2928,  26610, 7646,   358,    3003,   1012,  364,   83,    813,
        566,   594,   1052,  11,    364,   787,    498,   2704,  30,     364,    44,     537,   2704,  358,   3278,
        1281,  432,   11,    364,   35,    498,    1075,  1045,  15243,  30,     1205,   6,     42612, 264,   63866,
        43}},
  };
  return kCases;
}

bool HasMark(std::string_view s) {
  for (uint32_t cp : DecodeUtf8(s))
    if (FlagsOf(cp).mark()) return true;
  return false;
}

TEST(QwenTokenizer, Qwen2MatchesLlamaCppCases) {
  STRATA_REQUIRE_SHARED_FILE(SharedFile(VocabPath("qwen2")));
  auto tok = SharedTokenizer(VocabPath("qwen2"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  size_t passed = 0;
  for (const auto& c : QwenCases()) {
    auto got = tok->Encode(c.text, false, false);
    if (got == c.ids)
      ++passed;
    else
      ADD_FAILURE() << "\"" << Printable(c.text) << "\"\n  expected " << IdsToString(c.ids) << "\n  got      "
                    << IdsToString(got);
    EXPECT_EQ(tok->Decode(got), c.text);  // qwen2 does not clean up spaces
  }
  std::cout << "[ tokenizer ] qwen2: " << passed << "/" << QwenCases().size() << " cases pass\n";
}

// Qwen3.5's split differs from Qwen2's only around combining marks, so every
// mark-free Qwen2 case must give the same ids with the qwen35 GGUF (which
// carries the same Qwen2 vocabulary and merges).
TEST(QwenTokenizer, Qwen35MatchesQwen2WithoutCombiningMarks) {
  STRATA_REQUIRE_SHARED_FILE(SharedFile(VocabPath("qwen35")));
  auto tok = SharedTokenizer(VocabPath("qwen35"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(tok->vocab().pre, "qwen35");
  size_t checked = 0;
  for (const auto& c : QwenCases()) {
    if (HasMark(c.text)) continue;
    ++checked;
    EXPECT_EQ(IdsToString(tok->Encode(c.text, false, false)), IdsToString(c.ids)) << "\"" << Printable(c.text) << "\"";
  }
  std::cout << "[ tokenizer ] qwen35: " << checked << "/" << QwenCases().size()
            << " Qwen2 cases have no combining mark and pass unchanged\n";
  EXPECT_EQ(checked, 40u);
}

std::vector<std::string> Words(PreTokenizerKind kind, std::string_view text) {
  std::vector<std::string> w;
  PreTokenize(kind, text, &w);
  return w;
}

// Cases derived from the Qwen3.5 expression: [\p{L}\p{M}]+ keeps a letter and
// its combining marks together; [^\s\p{L}\p{M}\p{N}]+ no longer swallows marks.
TEST(QwenTokenizer, Qwen35KeepsCombiningMarksInWords) {
  using V = std::vector<std::string>;
  // "café" with a combining acute (U+0301).
  EXPECT_EQ(Words(PreTokenizerKind::kQwen35, "cafe\u0301 au lait"), (V{"cafe\u0301", " au", " lait"}));
  EXPECT_EQ(Words(PreTokenizerKind::kQwen2, "cafe\u0301 au lait"), (V{"cafe", "\u0301", " au", " lait"}));
  // Devanagari: vowel signs are marks.
  EXPECT_EQ(Words(PreTokenizerKind::kQwen35, "\u0928\u092E\u0938\u094D\u0924\u0947 hi"),
            (V{"\u0928\u092E\u0938\u094D\u0924\u0947", " hi"}));
  EXPECT_EQ(Words(PreTokenizerKind::kQwen2, "\u0928\u092E\u0938\u094D\u0924\u0947 hi"),
            (V{"\u0928\u092E\u0938", "\u094D\u0924", "\u0947", " hi"}));
  // A mark after a punctuation run is not part of it any more; it opens a word.
  EXPECT_EQ(Words(PreTokenizerKind::kQwen35, "!!\u0301"), (V{"!!", "\u0301"}));
  EXPECT_EQ(Words(PreTokenizerKind::kQwen2, "!!\u0301"), (V{"!!\u0301"}));
  // So an emoji's trailing variation selector (U+FE0F, a mark) is split off a
  // symbol run ...
  EXPECT_EQ(Words(PreTokenizerKind::kQwen35, " \U0001F636\u200D\U0001F32B\uFE0F x"),
            (V{" \U0001F636\u200D\U0001F32B", "\uFE0F", " x"}));
  EXPECT_EQ(Words(PreTokenizerKind::kQwen2, " \U0001F636\u200D\U0001F32B\uFE0F x"),
            (V{" \U0001F636\u200D\U0001F32B\uFE0F", " x"}));
  // ... except right after one symbol, which then acts as the optional prefix
  // of [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ (the same piece Qwen2 makes).
  EXPECT_EQ(Words(PreTokenizerKind::kQwen35, "\u2705\uFE0F ok"), (V{"\u2705\uFE0F", " ok"}));

  STRATA_REQUIRE_SHARED_FILE(SharedFile(VocabPath("qwen35")));
  auto q35 = SharedTokenizer(VocabPath("qwen35"));
  auto q2 = SharedTokenizer(VocabPath("qwen2"));
  ASSERT_TRUE(q35.ok() && q2.ok());
  // Ids follow the words. This GGUF carries Qwen2's merges, learned under
  // Qwen2's split, and none of them crosses a letter/mark boundary, so here the
  // ids coincide with Qwen2's (pretokenize_test.cc shows a vocabulary where
  // they do not).
  const std::string text = "\u0928\u092E\u0938\u094D\u0924\u0947 hi";
  auto ids35 = q35->Encode(text, false, false);
  EXPECT_EQ(ids35, q2->Encode(text, false, false));
  EXPECT_EQ(q35->Decode(ids35), text);
  // The word is merged on its own, then the mark-free word after it.
  auto head = q35->Encode("\u0928\u092E\u0938\u094D\u0924\u0947", false, false);
  auto tail = q2->Encode(" hi", false, false);
  std::vector<int32_t> joined = head;
  joined.insert(joined.end(), tail.begin(), tail.end());
  EXPECT_EQ(ids35, joined);
}

TEST(QwenTokenizer, SpecialTokensNeedParseSpecial) {
  STRATA_REQUIRE_SHARED_FILE(SharedFile(VocabPath("qwen2")));
  auto tok = SharedTokenizer(VocabPath("qwen2"));
  ASSERT_TRUE(tok.ok());
  const std::string text = "<|im_start|>user\nHi<|im_end|>";
  auto parsed = tok->Encode(text, false, true);
  ASSERT_GE(parsed.size(), 3u);
  EXPECT_EQ(parsed.front(), 151644);
  EXPECT_EQ(parsed.back(), 151645);
  auto plain = tok->Encode(text, false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 151644), 0);
  EXPECT_EQ(tok->Decode(plain), text);
  EXPECT_EQ(tok->Decode(parsed), "user\nHi");  // control tokens render as nothing by default
  EXPECT_EQ(tok->Decode(parsed, {.unparse_special = true}), text);
  EXPECT_TRUE(tok->IsEog(151645));
  EXPECT_TRUE(tok->IsEog(151643));
  EXPECT_EQ(tok->vocab().special.eot, 151643) << "lowest id among <|endoftext|> and <|im_end|>";
}

// --- stories260K (conformance fixture) -------------------------------------

TEST(StoriesTokenizer, PromptAndGeneratedTextMatchLlamaCpp) {
  const std::string gguf = SharedFile("models/stories260K.gguf");
  const std::string json_path = SharedFile("conformance/stories260k-f32.prompt.json");
  STRATA_REQUIRE_SHARED_FILE(gguf);
  STRATA_REQUIRE_SHARED_FILE(json_path);
  std::vector<std::string> warnings;
  auto tok = SharedTokenizer("models/stories260K.gguf", &warnings);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(tok->Encode("Once upon a time", true, false), (std::vector<int32_t>{1, 403, 407, 261, 378}));

  // The GGUF stores sep and pad as 4294967295: dropped, with a warning each.
  EXPECT_EQ(tok->vocab().special.sep, kNoToken);
  EXPECT_EQ(tok->vocab().special.pad, kNoToken);
  size_t dropped = 0;
  for (const auto& w : warnings) dropped += w.find("4294967295") != std::string::npos;
  EXPECT_EQ(dropped, 2u);

  std::ifstream f(json_path);
  auto j = nlohmann::json::parse(f);
  const auto& gen = j.at("text_generation");
  EXPECT_EQ(gen.at("prompt_ids").get<std::vector<int32_t>>(), tok->Encode(gen.at("text").get<std::string>(), true, false));
  auto greedy = gen.at("greedy_ids").get<std::vector<int32_t>>();
  auto pieces = gen.at("greedy_pieces").get<std::vector<std::string>>();
  ASSERT_EQ(greedy.size(), pieces.size());
  for (size_t i = 0; i < greedy.size(); ++i) EXPECT_EQ(tok->TokenToPiece(greedy[i], false), pieces[i]) << i;
  std::vector<int32_t> all = gen.at("prompt_ids").get<std::vector<int32_t>>();
  all.insert(all.end(), greedy.begin(), greedy.end());
  const std::string full = gen.at("full_detokenized").get<std::string>();
  EXPECT_EQ(tok->Decode(all), full);
  // llama_detokenize keeps the space of "\u2581Once" after a BOS, removed or
  // not, and strips it when the text starts without one.
  EXPECT_EQ(tok->Decode(all, {.remove_special = true}), full);
  EXPECT_EQ(tok->Decode(std::span(all).subspan(1)), full.substr(1));
}

TEST(Unicode, VersionIsReported) {
  std::cout << "[ tokenizer ] Unicode classes from utf8proc, Unicode " << UnicodeVersion() << "\n";
  EXPECT_FALSE(UnicodeVersion().empty());
}

}  // namespace
}  // namespace strata::tokenizer
