#include "tests/testing/run_command.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/testing/child_process.h"
#include "tests/testing/test_data.h"

namespace strata::testing {
namespace {
std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

std::string ProgramPath(const std::string& program) {
  std::string bin = std::getenv("STRATA_BINARY_DIR") ? std::getenv("STRATA_BINARY_DIR") : STRATA_BINARY_DIR;
#ifdef _WIN32
  const std::string exe = ".exe";
#else
  const std::string exe;
#endif
  if (program == "strata-pack") return bin + "/packer/strata-pack" + exe;
  if (program == "strata-validate") return bin + "/validate/strata-validate" + exe;
  if (program == "strata-run") return bin + "/runtime/strata-run" + exe;
  if (program == "strata-make-gguf") return bin + "/tests/strata-make-gguf" + exe;
  return bin + "/" + program + exe;
}

CommandResult RunProgram(const std::string& program, const std::vector<std::string>& args,
                         const std::string& stdin_text) {
  static int counter = 0;
  std::string dir = ScratchDir("run_command_" + std::to_string(counter++));
  std::string out_path = dir + "/stdout", err_path = dir + "/stderr", in_path = dir + "/stdin";
  {
    std::ofstream in(in_path, std::ios::binary);
    in << stdin_text;
  }
  std::vector<std::string> argv = {ProgramPath(program)};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r;
  ChildProcess child;
  std::string error;
  if (!child.Start(argv, {}, in_path, out_path, err_path, &error)) {
    r.err = error;
    return r;
  }
  r.exit_code = child.Wait(24 * 3600 * 1000);
  r.out = Slurp(out_path);
  r.err = Slurp(err_path);
  return r;
}

}  // namespace strata::testing
