// strata-pack: GGUF (one file or a split set) -> one checksummed Strata pack.

#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "packer/gguf/gguf_file.h"
#include "packer/inspect.h"
#include "runtime/base/main_guard.h"
#include "strata/version.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"strata-pack: reads GGUF models (one file or a split set), checks and normalizes them, "
               "and writes one checksummed Strata pack."};
  app.set_version_flag("--version", std::string("strata-pack ") + strata::kVersion);
  std::vector<std::string> inputs;
  std::string output;
  bool inspect = false, json = false;
  app.add_option("inputs", inputs, "GGUF file(s): one file, the first shard of a split model, or every shard")
      ->required();
  app.add_option("-o,--output", output, "the pack to write");
  app.add_flag("--inspect", inspect, "print a summary of the GGUF and exit (writes nothing)");
  app.add_flag("--json", json, "machine-readable output");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? strata::kExitOk : strata::kExitUsage;
  }

  auto model = strata::gguf::GgufModel::Open(inputs);
  if (inspect) {
    if (!model.ok()) {
      if (json) {
        nlohmann::json j{{"ok", false}, {"error", model.status().message()}};
        std::printf("%s\n", j.dump(2).c_str());
      }
      std::fprintf(stderr, "strata-pack: error: %s\n", model.status().message().c_str());
      return strata::kExitError;
    }
    if (json) {
      nlohmann::json j = strata::InspectGgufJson(*model);
      j["ok"] = true;
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%s", strata::InspectGgufText(*model).c_str());
    }
    return strata::kExitOk;
  }
  std::fprintf(stderr, "strata-pack: writing packs is not implemented yet in this build (only --inspect is)\n");
  return strata::kExitUnsupported;
}

}  // namespace

int main(int argc, char** argv) {
  return strata::GuardedMain("strata-pack", [&] { return Main(argc, argv); });
}
