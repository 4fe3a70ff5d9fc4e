#include "runtime/base/main_guard.h"

#include <cstdio>
#include <exception>
#include <new>

namespace strata {

int GuardedMain(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory\n", program);
    return kExitError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", program, e.what());
    return kExitInternal;
  } catch (...) {
    std::fprintf(stderr, "%s: internal error: unknown exception\n", program);
    return kExitInternal;
  }
}

}  // namespace strata
