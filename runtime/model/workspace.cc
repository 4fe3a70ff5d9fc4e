#include "runtime/model/workspace.h"

#include <algorithm>
#include <cinttypes>

namespace strata {

int64_t ScratchTasks(int64_t jobs, int threads) {
  return std::max<int64_t>(1, std::min<int64_t>(jobs, 4 * static_cast<int64_t>(std::max(threads, 1))));
}

Status Workspace::Exhausted(std::string_view where) const {
  return Internal(StrFormat("%.*s: the forward-pass workspace is too small: %" PRIu64 " more bytes asked with %" PRIu64
                            " of %" PRIu64 " in use (the pass is larger than the memory plan's PassShape)",
                            static_cast<int>(where.size()), where.data(), failed_ask_, used_, size_));
}

}  // namespace strata
