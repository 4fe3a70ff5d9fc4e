// WordPiece (llama.cpp's llm_tokenizer_wpm_session).
//
// Normalization, as llama.cpp does it (a subset of HF's BertNormalizer):
//   - with strip_accents, each code point becomes the first code point of its
//     canonical decomposition, and marks (\p{M}) are dropped;
//   - whitespace separates words; U+0000, U+FFFD (so also invalid UTF-8) and
//     control/format characters (\p{C}) are dropped;
//   - punctuation, ASCII symbols and CJK ideographs are words of their own;
//   - with lowercase, the simple lowercase mapping is applied.
// Each word, prefixed with U+2581 (the converter's word-start marker), is then
// cut greedily into the longest tokens from the left; a word with any
// position no token matches becomes the unknown token.

#include "runtime/tokenizer/tokenizer_data.h"
#include "runtime/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

// The ideograph blocks BERT's _is_chinese_char checks (HF's ranges, including
// its 0x2B920 typo that llama.cpp keeps on purpose).
bool IsChineseChar(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::vector<std::string> SplitWords(const Vocab& v, std::string_view text) {
  std::vector<std::string> words(1);
  for (uint32_t cp : DecodeUtf8(text)) {
    if (v.strip_accents) cp = NfdFirst(cp);
    const CodepointFlags f = FlagsOf(cp);
    if (f.whitespace()) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cp == 0 || cp == kReplacementChar || f.control()) continue;
    if (v.strip_accents && f.mark()) continue;
    std::string c;
    AppendUtf8(v.lowercase ? ToLower(cp) : cp, &c);
    if (f.punctuation() || (cp < 0x7F && f.symbol()) || IsChineseChar(cp)) {
      if (!words.back().empty()) words.emplace_back();
      words.back() = std::move(c);
      words.emplace_back();
    } else {
      words.back() += c;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

void EncodeWpmText(const TokenizerData& d, std::string_view text, std::vector<int32_t>* out) {
  for (const std::string& word : SplitWords(d.vocab, text)) {
    if (word.empty()) continue;
    const std::string marked = "\xE2\x96\x81" + word;
    const size_t n = marked.size();
    const size_t start_size = out->size();
    for (size_t i = 0; i < n; ++i) {
      bool matched = false;
      for (size_t j = std::min(n, i + d.max_token_bytes + 1); j > i; --j) {
        int32_t id = d.Find(std::string_view(marked).substr(i, j - i));
        if (id != kNoToken) {
          out->push_back(id);
          matched = true;
          i = j - 1;
          break;
        }
      }
      if (!matched) {
        out->resize(start_size);  // the whole word becomes [UNK]
        break;
      }
    }
    // llama.cpp pushes the unknown id even when there is none (-1); skipped here.
    if (out->size() == start_size && d.vocab.special.unk != kNoToken) out->push_back(d.vocab.special.unk);
  }
}

}  // namespace

void EncodeWpm(const TokenizerData& d, const std::vector<Fragment>& fragments, std::vector<int32_t>* out) {
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken)
      out->push_back(f.token);
    else
      EncodeWpmText(d, f.text, out);
  }
}

}  // namespace strata::tokenizer
