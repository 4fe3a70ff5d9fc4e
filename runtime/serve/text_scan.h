#pragma once
// Small scanning helpers for the text a model streams (reasoning.cc,
// tool_calls.cc): whitespace, trimming, and a tag cut off at a piece's end.

#include <algorithm>
#include <string_view>

namespace strata::serve {

inline bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// The length of the longest suffix of `s` that is a proper prefix of `tag`:
// the bytes to hold back because the next piece may complete the tag.
inline size_t PartialTagAtEnd(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace strata::serve
