#pragma once
// GuardedMain: the body of every Strata program runs inside it, so nothing
// escapes to the user as a crash: std::bad_alloc becomes "out of memory" and
// any other exception an internal error, each with a non-zero exit code.

#include <functional>

namespace strata {

// Exit codes shared by all three programs.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;        // bad input, failed check, I/O error
inline constexpr int kExitUsage = 2;        // bad command line
inline constexpr int kExitUnsupported = 3;  // the build or the input asks for something not there
inline constexpr int kExitInternal = 70;    // a bug in Strata
inline constexpr int kExitDeviceLost = 75;  // the server's GPU context was lost while serving: restart it

// Runs body(argc, argv) with the command line as UTF-8 (on Windows it is
// rebuilt from the UTF-16 one) after the console is set up for UTF-8.
int GuardedMain(const char* program, int argc, char** argv, const std::function<int(int, char**)>& body);

}  // namespace strata
