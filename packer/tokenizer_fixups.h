#pragma once
// The corrections llama.cpp's vocab loader makes from token *texts*, because
// converters do not record them in GGUF metadata. Applied by ImportVocab so
// the pack carries the effective vocabulary.

#include <string>
#include <string_view>
#include <vector>

#include "runtime/tokenizer/vocab.h"

namespace strata {

// Fill-in-the-middle token ids from tokenizer.ggml.fim_*_token_id (kNoToken
// when absent); they decide which FIM texts are still looked for.
struct FimTokenIds {
  int32_t pre = tokenizer::kNoToken;
  int32_t suf = tokenizer::kNoToken;
  int32_t mid = tokenizer::kNoToken;
  int32_t pad = tokenizer::kNoToken;
  int32_t rep = tokenizer::kNoToken;
  int32_t sep = tokenizer::kNoToken;
};

// In llama.cpp's order:
//  1. eot / eom / FIM ids not set by metadata are found by text (<|im_end|>,
//     <|eom_id|>, <|fim_prefix|>, ...); each found token is forced to CONTROL.
//     Where several texts qualify, the lowest id is taken (llama.cpp takes the
//     first in its hash map's order).
//  2. end-of-generation ids: FIM pad/rep/sep, every token whose text is on
//     llama.cpp's EOG list (forced to CONTROL), then eos, eot, eom.
//  3. gpt-oss / solar-open: <|channel|>, <|message|>, <|start|>, <|constrain|>
//     become USER_DEFINED, and <|end|> leaves the EOG set (USER_DEFINED) when
//     <|return|>+<|call|> or <|calls|>+<|flush|> are there; gemma4/paddleocr:
//     </s> leaves it (NORMAL) when <|tool_response> is there.
//  4. strip attributes by model name: phi-3 special tokens swallow following
//     whitespace (except <unk>, <s>, <|endoftext|>); <mask> / [MASK] of
//     jina-v2 / nomic-bert-moe / jina-bert-v3 / modern-bert swallow preceding
//     whitespace.
// Every type change is reported in `warnings`.
void ApplyTokenTextRules(tokenizer::Vocab* vocab, const FimTokenIds& fim, std::string_view general_name,
                         std::string_view general_architecture, std::vector<std::string>* warnings);

}  // namespace strata
