#include "runtime/tokenizer/fim_tokens.h"

#include <algorithm>

namespace strata::tokenizer {

int32_t FindTokenByTexts(const Vocab& v, std::span<const std::string_view> texts) {
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (std::find(texts.begin(), texts.end(), v.tokens[i]) != texts.end()) return static_cast<int32_t>(i);
  return kNoToken;
}

FimTokens FindFimTokens(const Vocab& v) {
  FimTokens f;
  f.pre = FindTokenByTexts(v, kFimPreTexts);
  f.suf = FindTokenByTexts(v, kFimSufTexts);
  f.mid = FindTokenByTexts(v, kFimMidTexts);
  f.pad = FindTokenByTexts(v, kFimPadTexts);
  f.rep = FindTokenByTexts(v, kFimRepTexts);
  f.sep = FindTokenByTexts(v, kFimSepTexts);
  return f;
}

}  // namespace strata::tokenizer
