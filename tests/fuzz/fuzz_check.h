#pragma once
// What a fuzz target does when an invariant it checks fails: stop at once,
// so libFuzzer records the input as a crash (the replay driver too).

#include "runtime/base/compiler.h"

namespace strata::fuzz {

inline void Check(bool ok) {
  if (!ok) STRATA_TRAP();
}

}  // namespace strata::fuzz
