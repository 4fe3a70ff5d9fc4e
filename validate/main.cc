// strata-validate: proves a pack sound before anything serves it.

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "runtime/base/main_guard.h"
#include "strata/version.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"strata-validate: checks a Strata pack (structure, bounds, checksums, architecture, replay)."};
  app.set_version_flag("--version", std::string("strata-validate ") + strata::kVersion);
  std::string pack;
  app.add_option("pack", pack, "the pack to check")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? strata::kExitOk : strata::kExitUsage;
  }
  std::fprintf(stderr, "strata-validate: pack validation is not implemented yet in this build\n");
  return strata::kExitUnsupported;
}

}  // namespace

int main(int argc, char** argv) {
  return strata::GuardedMain("strata-validate", [&] { return Main(argc, argv); });
}
