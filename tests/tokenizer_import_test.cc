// ImportVocab on hand-made (often broken) tokenizer metadata, and
// ValidateVocab / Tokenizer::Create on hand-made Vocabs.

#include "packer/tokenizer_import.h"

#include <gmock/gmock.h>
#include <functional>
#include <gtest/gtest.h>

#include "runtime/tokenizer/tokenizer.h"
#include "tests/gguf_writer/gguf_builder.h"
#include "tests/testing/test_data.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
using testing::GgufBuilder;
using tokenizer::kNoToken;
using tokenizer::TokenType;
using tokenizer::Vocab;
using tokenizer::VocabModel;

// A small valid byte-level BPE vocabulary.
GgufBuilder Bpe() {
  GgufBuilder b;
  b.String("general.architecture", "llama");
  b.String("tokenizer.ggml.model", "gpt2");
  b.String("tokenizer.ggml.pre", "gpt-2");
  b.StringArray("tokenizer.ggml.tokens", {"a", "b", "ab", "<|endoftext|>"});
  b.I32Array("tokenizer.ggml.token_type", {1, 1, 1, 3});
  b.StringArray("tokenizer.ggml.merges", {"a b"});
  b.U32("tokenizer.ggml.bos_token_id", 3);
  b.U32("tokenizer.ggml.eos_token_id", 3);
  return b;
}

struct Imported {
  Result<Vocab> vocab = Internal("not run");
  std::vector<std::string> warnings;
};

Imported Import(const GgufBuilder& b, const std::string& name) {
  Imported r;
  const std::string path = testing::ScratchDir("tokenizer_import_" + name) + "/vocab.gguf";
  Status st = b.WriteFile(path);
  if (!st.ok()) {
    r.vocab = st;
    return r;
  }
  auto model = gguf::GgufModel::Open(path);
  if (!model.ok()) {
    r.vocab = model.status();
    return r;
  }
  r.vocab = ImportVocab(*model, &r.warnings);
  return r;
}

std::string Joined(const std::vector<std::string>& w) {
  std::string s;
  for (const auto& x : w) s += x + "\n";
  return s;
}

TEST(ImportVocab, ReadsAValidBpeVocabulary) {
  auto r = Import(Bpe(), "valid");
  ASSERT_TRUE(r.vocab.ok()) << r.vocab.status().ToString();
  const Vocab& v = *r.vocab;
  EXPECT_EQ(v.model, VocabModel::kBpe);
  EXPECT_EQ(v.pre, "gpt-2");
  EXPECT_EQ(v.tokens, (std::vector<std::string>{"a", "b", "ab", "<|endoftext|>"}));
  EXPECT_EQ(v.merges, (std::vector<std::string>{"a b"}));
  EXPECT_EQ(v.special.bos, 3);
  EXPECT_EQ(v.special.eot, 3) << "found by its text";
  EXPECT_EQ(v.eog_ids, (std::vector<int32_t>{3}));
  EXPECT_FALSE(v.add_bos);
  EXPECT_TRUE(v.scores.empty());
  auto tok = tokenizer::Tokenizer::Create(v);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->Encode("abab", false, false), (std::vector<int32_t>{2, 2}));
}

TEST(ImportVocab, TokensMustBeAnArrayOfStrings) {
  auto b = Bpe();
  b.String("tokenizer.ggml.tokens", "a b ab");
  auto r = Import(b, "tokens_string");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_EQ(r.vocab.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("tokenizer.ggml.tokens: expected array[string], found string"));
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("vocab.gguf: byte "));

  b.I32Array("tokenizer.ggml.tokens", {1, 2, 3});
  r = Import(b, "tokens_ints");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("expected array[string], found array[i32]"));
}

TEST(ImportVocab, MissingKeysAreNamed) {
  auto b = Bpe();
  b.Remove("tokenizer.ggml.tokens");
  auto r = Import(b, "no_tokens");
  EXPECT_EQ(r.vocab.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("tokenizer.ggml.tokens"));

  b = Bpe();
  b.Remove("tokenizer.ggml.model");
  r = Import(b, "no_model");
  EXPECT_EQ(r.vocab.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("tokenizer.ggml.model"));

  b = Bpe();
  b.Remove("tokenizer.ggml.merges");
  r = Import(b, "no_merges");
  EXPECT_EQ(r.vocab.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("tokenizer.ggml.merges: expected BPE merges"));
}

TEST(ImportVocab, UnsupportedModelAndPreTokenizer) {
  auto b = Bpe();
  b.String("tokenizer.ggml.model", "t5");
  auto r = Import(b, "t5");
  EXPECT_EQ(r.vocab.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(r.vocab.status().message(),
              HasSubstr("tokenizer.ggml.model: expected one of llama, gpt2, bert, no_vocab, none, found \"t5\""));

  b = Bpe();
  b.String("tokenizer.ggml.pre", "nope");
  r = Import(b, "pre_nope");
  EXPECT_EQ(r.vocab.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("tokenizer.ggml.pre: expected a known pre-tokenizer"));
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("qwen35"));
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("found \"nope\""));
}

TEST(ImportVocab, MissingPreTokenizerFallsBackToDefaultWithAWarning) {
  auto b = Bpe();
  b.Remove("tokenizer.ggml.pre");
  auto r = Import(b, "no_pre");
  ASSERT_TRUE(r.vocab.ok()) << r.vocab.status().ToString();
  EXPECT_EQ(r.vocab->pre, "default");
  EXPECT_THAT(Joined(r.warnings), HasSubstr("tokenizer.ggml.pre is missing"));
}

TEST(ImportVocab, MergesMustJoinKnownTokens) {
  auto b = Bpe();
  b.StringArray("tokenizer.ggml.merges", {"a b", "a c"});
  auto r = Import(b, "merge_unknown");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_EQ(r.vocab.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(r.vocab.status().message(),
              HasSubstr("tokenizer.ggml.merges[1]: expected a merge of two known tokens, found \"a c\", whose \"c\" "
                        "is not a token"));

  b.StringArray("tokenizer.ggml.merges", {"ab"});
  r = Import(b, "merge_no_space");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("tokenizer.ggml.merges[0]: expected \"left right\""));
}

TEST(ImportVocab, OutOfRangeSpecialIdsAreDroppedWithAWarning) {
  auto b = Bpe();
  b.U32("tokenizer.ggml.bos_token_id", 99);
  b.I32("tokenizer.ggml.eos_token_id", -1);
  b.U64("tokenizer.ggml.padding_token_id", 2);
  auto r = Import(b, "ids_out_of_range");
  ASSERT_TRUE(r.vocab.ok()) << r.vocab.status().ToString();
  // gpt2's default bos/eos (11) is beyond these 4 tokens, so nothing is left.
  EXPECT_EQ(r.vocab->special.bos, kNoToken);
  EXPECT_EQ(r.vocab->special.eos, kNoToken);
  EXPECT_EQ(r.vocab->special.pad, 2) << "any integer type is accepted";
  const std::string w = Joined(r.warnings);
  EXPECT_THAT(w, HasSubstr("tokenizer.ggml.bos_token_id = u32 99 is outside the vocabulary (0..3)"));
  EXPECT_THAT(w, HasSubstr("tokenizer.ggml.eos_token_id = i32 -1 is outside the vocabulary"));
  EXPECT_THAT(w, HasSubstr("default tokenizer.ggml.bos_token_id = 11 is outside the vocabulary"));
}

TEST(ImportVocab, SpecialIdsMustBeIntegers) {
  auto b = Bpe();
  b.String("tokenizer.ggml.bos_token_id", "3");
  auto r = Import(b, "id_string");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_THAT(r.vocab.status().message(),
              HasSubstr("tokenizer.ggml.bos_token_id: expected an integer token id, found string"));
}

TEST(ImportVocab, AddingATokenThatDoesNotExistIsAnError) {
  auto b = Bpe();
  b.U32("tokenizer.ggml.bos_token_id", 42);
  b.Bool("tokenizer.ggml.add_bos_token", true);
  auto r = Import(b, "add_bos_no_bos");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_THAT(r.vocab.status().message(),
              HasSubstr("tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id names no token"));

  b = Bpe();
  b.U32("tokenizer.ggml.add_bos_token", 1);
  r = Import(b, "add_bos_u32");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("tokenizer.ggml.add_bos_token: expected bool, found u32"));
}

TEST(ImportVocab, DuplicateAndEmptyTokens) {
  auto b = Bpe();
  b.StringArray("tokenizer.ggml.tokens", {"a", "b", "ab", "a"});
  auto r = Import(b, "dup");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_THAT(r.vocab.status().message(),
              HasSubstr("tokenizer.ggml.tokens[3]: expected unique token texts, found \"a\", the text of token 0 too"));

  b.StringArray("tokenizer.ggml.tokens", {"a", "b", "ab", ""});
  r = Import(b, "empty");
  ASSERT_TRUE(r.vocab.ok()) << r.vocab.status().ToString();
  EXPECT_EQ(r.vocab->tokens[3], "[EMPTY_3]");
  EXPECT_THAT(Joined(r.warnings), HasSubstr("tokenizer.ggml.tokens[3] is empty"));
}

TEST(ImportVocab, ScoresAndTypesAreChecked) {
  auto b = Bpe();
  b.F32Array("tokenizer.ggml.scores", {0.f, 1.f});
  auto r = Import(b, "short_scores");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_THAT(r.vocab.status().message(),
              HasSubstr("tokenizer.ggml.scores: expected at least one score per token (4), found 2 scores"));

  b = Bpe();
  b.StringArray("tokenizer.ggml.scores", {"0", "0", "0", "0"});
  r = Import(b, "string_scores");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_THAT(r.vocab.status().message(),
              HasSubstr("tokenizer.ggml.scores: expected array[f32] (or array[i32]), found array[string]"));

  b = Bpe();
  b.F32Array("tokenizer.ggml.token_type", {1.f, 1.f, 1.f, 3.f});
  r = Import(b, "f32_types");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_THAT(r.vocab.status().message(), HasSubstr("tokenizer.ggml.token_type: expected array[i32], found array[f32]"));

  b = Bpe();
  b.I32Array("tokenizer.ggml.token_type", {1, 9, 1, 3});
  r = Import(b, "type_9");
  ASSERT_TRUE(r.vocab.ok()) << r.vocab.status().ToString();
  EXPECT_EQ(r.vocab->types[1], TokenType::kUndefined);
  EXPECT_THAT(Joined(r.warnings), HasSubstr("1 values outside 1..6 read as UNDEFINED"));
}

GgufBuilder Spm() {
  GgufBuilder b;
  b.String("tokenizer.ggml.model", "llama");
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<0x41>", "\xE2\x96\x81" "A"};
  b.StringArray("tokenizer.ggml.tokens", tokens);
  b.F32Array("tokenizer.ggml.scores", {0, 0, 0, 0, -1});
  b.I32Array("tokenizer.ggml.token_type", {2, 3, 3, 6, 1});
  return b;
}

TEST(ImportVocab, SpmDefaultsAndByteTokens) {
  auto r = Import(Spm(), "spm");
  ASSERT_TRUE(r.vocab.ok()) << r.vocab.status().ToString();
  const Vocab& v = *r.vocab;
  EXPECT_EQ(v.model, VocabModel::kSpm);
  EXPECT_EQ(v.special.bos, 1);
  EXPECT_EQ(v.special.eos, 2);
  EXPECT_EQ(v.special.unk, 0);
  EXPECT_TRUE(v.add_bos);
  EXPECT_TRUE(v.add_space_prefix);
  auto tok = tokenizer::Tokenizer::Create(v);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(tok->Encode("A", true, false), (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(tok->Encode("AA", false, false), (std::vector<int32_t>{4, 3})) << "second A by byte fallback";
  EXPECT_EQ(tok->Decode(std::vector<int32_t>{4, 3}), "AA");

  auto b = Spm();
  b.StringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "<0xZZ>", "\xE2\x96\x81" "A"});
  r = Import(b, "spm_bad_byte");
  ASSERT_FALSE(r.vocab.ok());
  EXPECT_THAT(r.vocab.status().message(),
              HasSubstr("tokenizer.ggml.token_type[3]: expected BYTE only for a token reading <0xHH>, found BYTE "
                        "for \"<0xZZ>\""));
}

TEST(ImportVocab, BertDefaults) {
  GgufBuilder b;
  b.String("tokenizer.ggml.model", "bert");
  std::vector<std::string> tokens;
  for (int i = 0; i < 110; ++i) tokens.push_back("[unused" + std::to_string(i) + "]");
  tokens[0] = "[PAD]", tokens[100] = "[UNK]", tokens[101] = "[CLS]", tokens[102] = "[SEP]", tokens[103] = "[MASK]";
  b.StringArray("tokenizer.ggml.tokens", tokens);
  b.Bool("tokenizer.ggml.normalizer.lowercase", false);
  auto r = Import(b, "bert");
  ASSERT_TRUE(r.vocab.ok()) << r.vocab.status().ToString();
  const auto& s = r.vocab->special;
  EXPECT_EQ(s.bos, 101);
  EXPECT_EQ(s.unk, 100);
  EXPECT_EQ(s.sep, 102);
  EXPECT_EQ(s.pad, 0);
  EXPECT_EQ(s.mask, 103);
  EXPECT_TRUE(r.vocab->add_sep);
  EXPECT_FALSE(r.vocab->lowercase);
  EXPECT_FALSE(r.vocab->strip_accents) << "follows lowercase unless set itself";
}

TEST(ImportVocab, ControlLookingTokensAreForcedToControl) {
  auto b = Bpe();
  b.StringArray("tokenizer.ggml.tokens", {"a", "b", "ab", "<|im_end|>", "<|fim_prefix|>", "<|channel|>"});
  b.I32Array("tokenizer.ggml.token_type", {1, 1, 1, 1, 4, 3});
  auto r = Import(b, "force_control");
  ASSERT_TRUE(r.vocab.ok()) << r.vocab.status().ToString();
  const Vocab& v = *r.vocab;
  EXPECT_EQ(v.types[3], TokenType::kControl);
  EXPECT_EQ(v.types[4], TokenType::kControl);
  EXPECT_EQ(v.types[5], TokenType::kUserDefined) << "gpt-oss tokens are always rendered";
  EXPECT_EQ(v.special.eot, 3);
  EXPECT_EQ(v.eog_ids, (std::vector<int32_t>{3}));
  EXPECT_THAT(Joined(r.warnings), HasSubstr("token 3 \"<|im_end|>\": type NORMAL -> CONTROL"));
}

TEST(ImportVocab, NoVocabIsEmpty) {
  GgufBuilder b;
  b.String("tokenizer.ggml.model", "no_vocab");
  auto r = Import(b, "none");
  ASSERT_TRUE(r.vocab.ok()) << r.vocab.status().ToString();
  EXPECT_EQ(r.vocab->model, VocabModel::kNone);
  auto tok = tokenizer::Tokenizer::Create(*r.vocab);
  ASSERT_TRUE(tok.ok());
  EXPECT_TRUE(tok->Encode("hello", true, true).empty());
}

// --- ValidateVocab ---------------------------------------------------------

Vocab SmallVocab() {
  Vocab v;
  v.model = VocabModel::kBpe;
  v.pre = "gpt-2";
  v.tokens = {"a", "b", "ab"};
  v.types = {TokenType::kNormal, TokenType::kNormal, TokenType::kNormal};
  v.merges = {"a b"};
  return v;
}

TEST(ValidateVocab, AcceptsAConsistentVocab) { EXPECT_TRUE(tokenizer::ValidateVocab(SmallVocab()).ok()); }

TEST(ValidateVocab, NamesWhatIsWrong) {
  struct Case {
    std::function<void(Vocab*)> mutate;
    std::string message;
  };
  const Case cases[] = {
      {[](Vocab* v) { v->types.pop_back(); }, "types: expected one per token (3), found 2"},
      {[](Vocab* v) { v->scores = {1.f}; }, "scores: expected none or one per token (3), found 1"},
      {[](Vocab* v) { v->tokens[2] = "a"; }, "token 2 \"a\": expected unique texts, found the same text at id 0"},
      {[](Vocab* v) { v->tokens[1] = ""; }, "token 1: expected non-empty text"},
      {[](Vocab* v) { v->special.eos = 3; }, "special token eos: expected an id in 0..2 or -1 (none), found 3"},
      {[](Vocab* v) { v->add_bos = true; }, "add_bos is true, but there is no bos token"},
      {[](Vocab* v) { v->merges = {"a c"}; }, "merge 0 \"a c\": expected both sides to be tokens, found \"c\""},
      {[](Vocab* v) { v->merges = {"ab"}; }, "merge 0 \"ab\": expected \"left right\""},
      {[](Vocab* v) { v->pre = "gpt-5"; }, "found \"gpt-5\""},
      {[](Vocab* v) { v->eog_ids = {2, 1}; }, "eog_ids[1]: expected ids sorted and unique, found 1 after 2"},
      {[](Vocab* v) { v->types[0] = TokenType::kByte; }, "token 0: expected a BYTE token to read <0xHH>, found \"a\""},
      {[](Vocab* v) { v->types[0] = static_cast<TokenType>(9); }, "token 0: expected a type in 0..6, found 9"},
  };
  for (const auto& c : cases) {
    Vocab v = SmallVocab();
    c.mutate(&v);
    Status st = tokenizer::ValidateVocab(v);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(st.message(), HasSubstr(c.message));
    auto tok = tokenizer::Tokenizer::Create(v);
    EXPECT_FALSE(tok.ok()) << c.message;
  }
}

}  // namespace
}  // namespace strata
