#pragma once
// TokenizerData: the lookup structures a Tokenizer derives from its Vocab.
// Internal to runtime/tokenizer. Built once (BuildTokenizerData), then
// read-only; string_views point into `vocab`, which never moves (the data
// lives behind a shared_ptr).

#include <array>
#include <span>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/tokenizer/pretokenize.h"
#include "runtime/tokenizer/vocab.h"

namespace strata::tokenizer {

struct TokenizerData {
  Vocab vocab;
  std::unordered_map<std::string_view, int32_t> text_to_id;

  // Special tokens matched in raw text before anything else, longest first
  // (ties by id; llama.cpp's std::sort leaves tie order unspecified).
  struct SpecialText {
    int32_t id;
    bool control_or_unknown;  // matched only when parse_special
    bool lstrip, rstrip;
  };
  std::vector<SpecialText> special_texts;

  // BPE: merge rank by (left id, right id), and the id of the merged text
  // (kNoToken when the concatenation is not a token).
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  std::unordered_map<uint64_t, Merge> merges;
  PreTokenizerInfo pre{};
  // BPE: the token of each byte's symbol in GPT-2's alphabet (kNoToken if absent).
  std::array<int32_t, 256> byte_symbol_ids{};

  // SPM: the <0xHH> token of each byte (kNoToken if absent).
  std::array<int32_t, 256> byte_tokens{};
  // SPM: no token has U+2581 right after another character, so no merge can
  // cross the start of a "\u2581word" and words can be merged one by one.
  bool spm_words_split_at_space = false;
  // WPM: longest token text in bytes.
  size_t max_token_bytes = 0;

  // llama_token_to_piece(id, special = true) for every id.
  std::vector<std::string> pieces;
  std::vector<bool> is_eog;

  int32_t Find(std::string_view text) const {
    auto it = text_to_id.find(text);
    return it == text_to_id.end() ? kNoToken : it->second;
  }
  TokenType type(int32_t id) const { return vocab.types[static_cast<size_t>(id)]; }
  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
};

// REQUIRES: ValidateVocab(vocab).ok()
std::shared_ptr<const TokenizerData> BuildTokenizerData(const Vocab& vocab);

// One run of the input after special tokens are cut out: either a token id or
// a slice of the raw text.
struct Fragment {
  int32_t token = kNoToken;  // kNoToken: raw text
  std::string_view text;
};
// llama.cpp's tokenizer_st_partition: for each special text (longest first),
// every occurrence in the remaining raw fragments becomes a token fragment.
std::vector<Fragment> PartitionSpecial(const TokenizerData& d, std::string_view text, bool parse_special);

// The three algorithms. Each appends the ids of the fragments of one input,
// in order: token fragments as they are, raw text tokenized (with caches
// shared by all fragments of the call).
void EncodeSpm(const TokenizerData& d, const std::vector<Fragment>& fragments, std::vector<int32_t>* out);
void EncodeBpe(const TokenizerData& d, const std::vector<Fragment>& fragments, std::vector<int32_t>* out);
void EncodeWpm(const TokenizerData& d, const std::vector<Fragment>& fragments, std::vector<int32_t>* out);

// The piece of one token with special = true (before caching).
std::string BuildPiece(const TokenizerData& d, int32_t id);
// clean_up_tokenization_spaces as llama_detokenize applies it.
void CleanUpSpaces(std::string* text);

}  // namespace strata::tokenizer
