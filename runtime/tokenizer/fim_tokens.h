#pragma once
// Fill-in-the-middle tokens: the texts llama.cpp recognizes them by
// (llama_vocab::impl::load), and a vocabulary's FIM tokens found by those
// texts. The packer marks them control tokens; the server's /infill writes
// its prompt with them.

#include <cstdint>
#include <span>
#include <string_view>

#include "runtime/tokenizer/vocab.h"

namespace strata::tokenizer {

// U+FF5C and U+2581 are written as escapes: DeepSeek's texts look like
// ASCII "|" and "_" but are not.
inline constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                                    "<\uFF5Cfim\u2581begin\uFF5C>", "<PRE>", "\u2581<PRE>",
                                                    "<|code_prefix|>", "<|prefix|>"};
inline constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                                    "<\uFF5Cfim\u2581hole\uFF5C>", "<SUF>", "\u2581<SUF>",
                                                    "<|code_suffix|>", "<|suffix|>"};
inline constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                                    "<\uFF5Cfim\u2581end\uFF5C>", "<MID>", "\u2581<MID>",
                                                    "<|code_middle|>", "<|middle|>"};
inline constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
inline constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                                    "<reponame>"};
inline constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};

struct FimTokens {
  int32_t pre = kNoToken, suf = kNoToken, mid = kNoToken, pad = kNoToken, rep = kNoToken, sep = kNoToken;
  bool CanInfill() const { return pre != kNoToken && suf != kNoToken && mid != kNoToken; }
};

// The lowest id whose text is one of `texts`, or kNoToken.
int32_t FindTokenByTexts(const Vocab& v, std::span<const std::string_view> texts);

// Each FIM token of `v`, found by its texts.
FimTokens FindFimTokens(const Vocab& v);

}  // namespace strata::tokenizer
