// Cutting special-token texts out of raw input (llama.cpp's
// tokenizer_st_partition).
//
// Order matters and is llama.cpp's: special texts are taken one at a time,
// longest first, and each splits every raw fragment left over by the longer
// ones at all of its leftmost non-overlapping occurrences. Where two special
// texts overlap in the input, the longer one wins, wherever it starts.
//
// Cost: O(special texts x input) substring searches, as in llama.cpp.

#include <cctype>

#include "runtime/tokenizer/tokenizer_data.h"

namespace strata::tokenizer {
namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }  // C locale: ASCII only

}  // namespace

std::vector<Fragment> PartitionSpecial(const TokenizerData& d, std::string_view text, bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, text});
  std::vector<Fragment> next;

  for (const auto& special : d.special_texts) {
    if (!parse_special && special.control_or_unknown) continue;
    const std::string_view needle = d.vocab.tokens[static_cast<size_t>(special.id)];
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
