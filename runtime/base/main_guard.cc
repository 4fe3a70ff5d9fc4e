#include "runtime/base/main_guard.h"

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "runtime/base/platform.h"

namespace strata {

int GuardedMain(const char* program, int argc, char** argv, const std::function<int(int, char**)>& body) {
  try {
    SetUpConsole();
    std::vector<std::string> args = Utf8Arguments(argc, argv);
    std::vector<char*> utf8_argv;
    for (auto& a : args) utf8_argv.push_back(a.data());
    utf8_argv.push_back(nullptr);
    return body(static_cast<int>(args.size()), utf8_argv.data());
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
