// Cutting special-token texts out of raw input (llama.cpp's
// tokenizer_st_partition).
//
// Order matters and is llama.cpp's: special texts are taken one at a time,
// longest first, and each splits every raw fragment left over by the longer
// ones at all of its leftmost non-overlapping occurrences. Where two special
// texts overlap in the input, the longer one wins, wherever it starts.
//
// Cost: one pass over the input, then one substring search per special text
// whose first two bytes occur in it (llama.cpp searches for every one).

#include <cctype>

#include "runtime/tokenizer/tokenizer_data.h"

namespace strata::tokenizer {
namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }  // C locale: ASCII only

}  // namespace

namespace {

// Which bytes and byte pairs occur in the input. A special text whose first
// two bytes never occur cannot occur in any fragment (fragments are pieces of
// the input), so it is skipped without a search: vocabularies with thousands
// of user-defined tokens (DeepSeek's) would otherwise scan the input once per
// token.
class Occurs {
 public:
  explicit Occurs(std::string_view text) : pairs_(1u << 16) {
    for (size_t i = 0; i < text.size(); ++i) {
      bytes_[static_cast<uint8_t>(text[i])] = true;
      if (i + 1 < text.size()) pairs_[Pair(text[i], text[i + 1])] = true;
    }
  }
  bool MayContain(std::string_view needle) const {
    if (needle.size() == 1) return bytes_[static_cast<uint8_t>(needle[0])];
    return pairs_[Pair(needle[0], needle[1])];
  }

 private:
  static size_t Pair(char a, char b) { return (size_t{static_cast<uint8_t>(a)} << 8) | static_cast<uint8_t>(b); }
  bool bytes_[256] = {};
  std::vector<bool> pairs_;
};

}  // namespace

std::vector<Fragment> PartitionSpecial(const TokenizerData& d, std::string_view text, bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, text});
  if (d.special_texts.empty()) return fragments;
  const Occurs occurs(text);
  std::vector<Fragment> next;

  for (const auto& special : d.special_texts) {
    if (!parse_special && special.control_or_unknown) continue;
    const std::string_view needle = d.vocab.tokens[static_cast<size_t>(special.id)];
    if (!occurs.MayContain(needle)) continue;
    next.clear();
    bool changed = false;
    for (const Fragment& f : fragments) {
      if (f.token != kNoToken) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      while (!rest.empty()) {
        size_t at = rest.find(needle);
        if (at == std::string_view::npos) break;
        changed = true;
        std::string_view left = rest.substr(0, at);
        if (special.lstrip)
          while (!left.empty() && IsSpace(left.back())) left.remove_suffix(1);
        if (!left.empty()) next.push_back({kNoToken, left});
        next.push_back({special.id, {}});
        rest.remove_prefix(at + needle.size());
        if (special.rstrip)
          while (!rest.empty() && IsSpace(rest.front())) rest.remove_prefix(1);
      }
      if (!rest.empty()) next.push_back({kNoToken, rest});
    }
    if (changed) fragments.swap(next);
  }
  return fragments;
}

}  // namespace strata::tokenizer
