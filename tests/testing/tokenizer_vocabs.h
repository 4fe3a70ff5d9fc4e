#pragma once
// Test helpers for the tokenizer: real vocabularies from ../shared/data and
// llama.cpp's test-tokenizer-0 case files.

#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::testing {

// Imports and builds the tokenizer of a GGUF under SharedDataDir(), once per
// process (later calls return the cached one). `relative` is e.g.
// "tokenizer/ggml-vocab-qwen2.gguf". Warnings from the import go to *warnings
// on the first call.
Result<tokenizer::Tokenizer> SharedTokenizer(const std::string& relative,
                                             std::vector<std::string>* warnings = nullptr);

struct TokenizerCase {
  std::string text;
  std::vector<int32_t> ids;
};

// Reads NAME.gguf.inp / NAME.gguf.out as llama.cpp's test-tokenizer-0 does:
// the .inp is split on "\n__ggml_vocab_test__\n" (each test string is followed
// by one separator; text after the last separator is ignored), the .out has
// one line of space-separated ids per test. Fails if the counts differ.
Result<std::vector<TokenizerCase>> ReadTokenizerCases(const std::string& inp_path, const std::string& out_path);

// "[1, 2, 3]"
std::string IdsToString(const std::vector<int32_t>& ids);

}  // namespace strata::testing
