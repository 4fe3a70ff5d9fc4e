#pragma once
// Tokenizer: text <-> token ids, computing what llama.cpp's llama_tokenize,
// llama_token_to_piece and llama_detokenize compute for the same vocabulary.
//
// Built once from a Vocab (validated first); immutable afterwards, cheap to
// copy (shared state), and safe to use from many threads at once.
//
// Supported: SPM ("llama"), byte-level BPE ("gpt2") with the pre-tokenizers
// in pretokenize.h, WordPiece ("bert"), and "none". Any bytes are accepted as
// input: invalid UTF-8 never crashes or throws (see docs/tokenizer.md for what
// each model makes of it).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/tokenizer/vocab.h"

namespace strata::tokenizer {

struct TokenizerData;  // tokenizer_data.h

struct DecodeOptions {
  // llama_detokenize's remove_special: drop a leading BOS / trailing EOS the
  // vocabulary adds itself (add_bos / add_eos).
  bool remove_special = false;
  // llama_detokenize's unparse_special: render CONTROL and UNKNOWN tokens as
  // their text instead of nothing.
  bool unparse_special = false;
  // Strata addition: skip clean_up_tokenization_spaces (which llama.cpp applies
  // for vocabularies that ask for it and which can drop spaces), so that
  // Decode(Encode(s)) == s holds byte for byte for byte-level BPE.
  bool keep_spaces = false;
};

class Tokenizer {
 public:
  // Fails with the ValidateVocab message if the vocabulary is inconsistent.
  static Result<Tokenizer> Create(const Vocab& vocab);

  // llama_tokenize(text, add_special, parse_special).
  // add_special: add BOS/EOS (SPM, BPE: as the vocab's add_bos/add_eos say;
  //   WPM: always [CLS] ... [SEP]).
  // parse_special: also match CONTROL and UNKNOWN token texts in `text`
  //   (USER_DEFINED texts are always matched).
  std::vector<int32_t> Encode(std::string_view text, bool add_special, bool parse_special) const;

  // llama_token_to_piece(id, lstrip = 0, special). With special = false,
  // CONTROL and UNKNOWN tokens give "". An id out of range gives "".
  std::string TokenToPiece(int32_t id, bool special) const;
  // TokenToPiece(id, false) of every id: what each token writes as text
  // (constrained sampling's vocabulary trie).
  std::vector<std::string> TextPieces() const;

  // llama_detokenize(ids, remove_special, unparse_special). Ids out of range
  // contribute nothing.
  std::string Decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;

  const Vocab& vocab() const;
  int32_t n_tokens() const;
  // The id of a token text, or kNoToken.
  int32_t Find(std::string_view text) const;
  bool IsEog(int32_t id) const;

 private:
  explicit Tokenizer(std::shared_ptr<const TokenizerData> data) : data_(std::move(data)) {}
  std::shared_ptr<const TokenizerData> data_;
};

}  // namespace strata::tokenizer
