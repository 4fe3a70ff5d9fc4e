#pragma once
// Vocab: everything a tokenizer needs, as plain data. The packer fills it from
// GGUF metadata (packer/tokenizer_import.h) and the pack carries it; the
// runtime builds a Tokenizer from it and never sees GGUF.
//
// The fields are the *effective* values llama.cpp ends up with after loading
// (defaults applied, out-of-range ids dropped, control-looking tokens forced to
// CONTROL), so the runtime needs no knowledge of GGUF keys or converter quirks.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace strata::tokenizer {

// Tokenizer algorithm, named after the GGUF `tokenizer.ggml.model` value.
enum class VocabModel : uint8_t {
  kNone = 0,  // "no_vocab" / "none": ids only, Encode() returns nothing
  kSpm = 1,   // "llama": SentencePiece-style score-driven BPE with byte fallback
  kBpe = 2,   // "gpt2": byte-level BPE with a pre-tokenizer and ranked merges
  kWpm = 3,   // "bert": WordPiece
};
std::string_view VocabModelName(VocabModel m);  // "llama", "gpt2", "bert", "none"

// `tokenizer.ggml.token_type` values (llama_token_type in llama.h).
enum class TokenType : uint8_t {
  kUndefined = 0,  // also any value outside 1..6: the token never matches and decodes to ""
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};
std::string_view TokenTypeName(TokenType t);

inline constexpr int32_t kNoToken = -1;

struct SpecialTokens {
  int32_t bos = kNoToken;
  int32_t eos = kNoToken;
  int32_t eot = kNoToken;
  int32_t eom = kNoToken;
  int32_t unk = kNoToken;
  int32_t sep = kNoToken;
  int32_t pad = kNoToken;
  int32_t cls = kNoToken;   // carried for completeness; llama.cpp uses bos as BERT's [CLS]
  int32_t mask = kNoToken;
};

struct Vocab {
  VocabModel model = VocabModel::kNone;
  // Pre-tokenizer name as in `tokenizer.ggml.pre` ("qwen2", "llama-bpe", ...).
  // Only BPE uses it; "default" when the GGUF has none.
  std::string pre = "default";

  std::vector<std::string> tokens;  // id -> text; non-empty, unique
  std::vector<float> scores;        // empty (all 0) or one per token; SPM merge priority
  std::vector<TokenType> types;     // one per token
  std::vector<std::string> merges;  // BPE: "left right", rank = index

  SpecialTokens special;
  // Tokens that end generation (llama.cpp's special_eog_ids), sorted.
  std::vector<int32_t> eog_ids;
  // Special tokens that swallow whitespace next to them when matched in text
  // (llama.cpp's LSTRIP/RSTRIP attributes), sorted.
  std::vector<int32_t> lstrip_ids;
  std::vector<int32_t> rstrip_ids;

  bool add_bos = false;
  bool add_eos = false;
  bool add_sep = false;
  bool add_space_prefix = false;          // SPM: prepend " " to text after BOS/specials
  bool remove_extra_whitespaces = false;  // carried; llama.cpp's SPM does not act on it
  // WordPiece normalizer (BertNormalizer): lowercase, and strip accents.
  bool lowercase = true;
  bool strip_accents = true;

  std::string chat_template;  // Jinja source, may be empty

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
};

// Checks that a Vocab is internally consistent, whoever built it: sizes agree,
// token texts are non-empty and unique, every special id is in range, BYTE
// tokens read <0xHH>, each merge is "left right" over known tokens, the
// pre-tokenizer is one this runtime implements, and add_* flags name a token.
// Messages say which field, which index, what was expected and what was found.
Status ValidateVocab(const Vocab& vocab);

}  // namespace strata::tokenizer
