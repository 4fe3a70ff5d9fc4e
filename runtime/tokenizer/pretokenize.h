#pragma once
// BPE pre-tokenizers: how text is cut into words before merges run.
//
// Each kind reproduces the list of split expressions llama.cpp's
// llm_tokenizer_bpe uses for it (src/llama-vocab.cpp), applied in order the
// way unicode_regex_split applies them: every expression re-splits every
// piece produced so far, and text between matches stays a piece of its own.
// No regex engine runs: each expression is a hand-written scanner
// (pretokenize_scanners.h), linear in the input and without recursion, so
// megabytes of one character class cannot blow the stack (the std::regex
// failure llama.cpp fixed for Qwen in PRs #21257 and #22110).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::tokenizer {

enum class PreTokenizerKind : uint8_t {
  kDefault,        // no/unknown-to-the-converter pre-tokenizer ("default")
  kGpt2,           // gpt-2, mpt, olmo, ...
  kLlama3,         // llama-bpe / llama3: digits in groups of up to 3
  kQwen2,          // single digits
  kQwen35,         // qwen2 + combining marks stay inside letter runs
  kGpt4o,          // o200k: case-split words, contractions attached, 1-3 digits
  kDeepseekLlm,
  kDeepseekCoder,
  kKimiK2,         // kimi-k2: Han runs, non-Han letter words with contractions, 1-3 digits (llama.cpp's own splitter)
  kDeepseekV3,     // deepseek-v3 (DeepSeek V3/V3.1/R1, Moonlight): 1-3 digits, kana/CJK runs, punct+ASCII words
  kFalcon,
  kStarcoder,      // starcoder, refact, command-r, smollm, ...
};

// What a `tokenizer.ggml.pre` name means to llama.cpp's vocab loader.
struct PreTokenizerInfo {
  std::string_view name;
  PreTokenizerKind kind;
  bool clean_spaces;    // Decode() applies clean_up_tokenization_spaces
  bool ignore_merges;   // a pre-token that is itself a token is emitted whole
  bool add_bos;         // default of add_bos before tokenizer.ggml.add_bos_token
  bool add_sep;         // default of add_sep before tokenizer.ggml.add_sep_token
  bool drop_default_bos;  // chatglm: the model's default BOS id is cleared
};

// nullptr for a name this runtime does not implement (llama.cpp refuses
// unknown names too: "unknown pre-tokenizer type").
const PreTokenizerInfo* FindPreTokenizer(std::string_view name);
// All accepted names, for messages and docs.
const std::vector<PreTokenizerInfo>& AllPreTokenizers();

// Splits `text` into words as llama.cpp's unicode_regex_split(text, exprs,
// byte_encode = false) does for `kind`: the text is decoded (invalid UTF-8
// becomes U+FFFD per bad byte), split, and each word re-encoded as UTF-8.
// `words` is cleared first. Empty text gives no words.
void PreTokenize(PreTokenizerKind kind, std::string_view text, std::vector<std::string>* words);

}  // namespace strata::tokenizer
