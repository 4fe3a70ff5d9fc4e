// strata-run: maps a pack and runs it.

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "runtime/base/main_guard.h"
#include "strata/version.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"strata-run: maps a Strata pack and runs it."};
  app.set_version_flag("--version", std::string("strata-run ") + strata::kVersion);
  std::string pack;
  app.add_option("pack", pack, "the pack to run")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? strata::kExitOk : strata::kExitUsage;
  }
  std::fprintf(stderr, "strata-run: running packs is not implemented yet in this build\n");
  return strata::kExitUnsupported;
}

}  // namespace

int main(int argc, char** argv) {
  return strata::GuardedMain("strata-run", [&] { return Main(argc, argv); });
}
