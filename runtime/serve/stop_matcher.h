#pragma once
// StopMatcher: finds stop strings in generated text that arrives piece by
// piece, holding back the tail that could still grow into one, so a client
// never sees part of a stop string. (The same rule as the CLI's Generator.)

#include <string>
#include <string_view>
#include <vector>

namespace strata::serve {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops = {}) : stops_(std::move(stops)) {}
  // Appends a piece; returns the bytes that may be shown now. Sets *hit when
  // a stop string appeared: the bytes before it are returned, the rest dropped.
  std::string Push(std::string_view piece, bool* hit);
  // The held-back tail, at the end of generation without a stop string.
  std::string Flush();

 private:
  std::vector<std::string> stops_;
  std::string pending_;
};

}  // namespace strata::serve
