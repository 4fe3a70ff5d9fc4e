#include "runtime/serve/stop_matcher.h"

#include <algorithm>

namespace strata::serve {

std::string StopMatcher::Push(std::string_view piece, bool* hit) {
  pending_ += piece;
  // The earliest stop string wins, so text after it never shows.
  size_t first = std::string::npos;
  for (const std::string& s : stops_) {
    if (s.empty()) continue;
    size_t at = pending_.find(s);
    if (at < first) first = at;
  }
  if (first != std::string::npos) {
    *hit = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  size_t keep = 0;  // the longest suffix of pending_ that is a proper prefix of a stop string
  for (const std::string& s : stops_) {
    if (s.empty()) continue;
    for (size_t k = std::min(s.size() - 1, pending_.size()); k > keep; --k)
      if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
  }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopMatcher::Flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace strata::serve
