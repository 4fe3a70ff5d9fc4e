#pragma once
// What the packer changed (fixes) and what it would not accept (refusals).
// Every fix is recorded in the pack and printed; every refusal names the
// reason and, where one exists, the flag that would override it.

#include <string>
#include <vector>

namespace strata {

struct Fix {
  std::string kind;      // "default", "integer-type", "float-type", "per-layer-array", "squeeze-dims",
                         // "widen-type", "user-override", "drop-tensor",
                         // "split-tensor"
  std::string location;  // a metadata key or a tensor name
  std::string before;
  std::string after;
  std::string reason;
};

struct Refusal {
  std::string location;
  std::string message;        // what is wrong: expected vs found
  std::string override_flag;  // empty when nothing can override it
};

struct FixLog {
  std::vector<Fix> fixes;
  std::vector<Refusal> refusals;
  std::vector<std::string> warnings;

  void AddFix(std::string kind, std::string location, std::string before, std::string after, std::string reason) {
    fixes.push_back({std::move(kind), std::move(location), std::move(before), std::move(after), std::move(reason)});
  }
  void Refuse(std::string location, std::string message, std::string override_flag = "") {
    refusals.push_back({std::move(location), std::move(message), std::move(override_flag)});
  }
  bool refused() const { return !refusals.empty(); }
};

}  // namespace strata
