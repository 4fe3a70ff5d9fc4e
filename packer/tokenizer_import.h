#pragma once
// ImportVocab: GGUF `tokenizer.*` metadata -> tokenizer::Vocab, resolved the
// way llama.cpp's vocab loader resolves it (llama_vocab::impl::load), so the
// runtime only ever sees final values.
//
// Strict about types: a key that is present with the wrong type is an error
// naming the key, the expected and the found type, and the byte offset.
// Lenient where llama.cpp is lenient, with a warning: out-of-range special ids
// are dropped (the model's default is kept), empty token texts become
// "[EMPTY_<id>]", unknown token type values become UNDEFINED.
//
// Defaults for absent keys (each is llama.cpp's, for the reason given):
//   tokenizer.ggml.pre            "default", with a warning: llama.cpp falls back
//                                 to its generic GPT-2-like split and warns that
//                                 quality will degrade.
//   tokenizer.ggml.scores         all 0 (only SPM uses scores).
//   tokenizer.ggml.token_type     all NORMAL.
//   special ids                   per model, llama.cpp's historical defaults:
//                                 llama: bos 1, eos 2, unk 0; gpt2: bos = eos = 11
//                                 (GPT-2-era converters omitted them); bert:
//                                 [CLS] 101 as bos, [UNK] 100, [SEP] 102, [PAD] 0,
//                                 [MASK] 103 (the BERT vocab layout). A default
//                                 beyond the vocabulary is dropped with a warning.
//   add_bos_token                 true for llama and bert, and for gpt2 with the
//                                 llama3 family of pre-tokenizers; else false.
//   add_eos_token                 false.
//   add_sep_token                 true for bert and a few gpt2 pre-tokenizers.
//   add_space_prefix              true for llama (SentencePiece's default), else false.
//   remove_extra_whitespaces      false.
//   normalizer.lowercase          true (BertNormalizer's default);
//   normalizer.strip_accents      = lowercase, as HF couples them.
//   eot / eom                     found by token text (<|eot_id|>, <|im_end|>, ...)
//                                 because converters rarely write them.

#include <string>
#include <vector>

#include "packer/gguf/gguf_file.h"
#include "runtime/base/status.h"
#include "runtime/tokenizer/vocab.h"

namespace strata {

// Reads the vocabulary of `model`. Warnings (dropped ids, defaults worth
// knowing about, token types llama.cpp overrides) are appended to `warnings`
// when it is not null. The result passes tokenizer::ValidateVocab.
Result<tokenizer::Vocab> ImportVocab(const gguf::GgufModel& model, std::vector<std::string>* warnings = nullptr);

}  // namespace strata
