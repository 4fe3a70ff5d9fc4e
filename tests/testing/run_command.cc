#include "tests/testing/run_command.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/testing/test_data.h"

namespace strata::testing {
namespace {

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

std::string ProgramPath(const std::string& program) {
  std::string bin = std::getenv("STRATA_BINARY_DIR") ? std::getenv("STRATA_BINARY_DIR") : STRATA_BINARY_DIR;
  if (program == "strata-pack") return bin + "/packer/strata-pack";
  if (program == "strata-validate") return bin + "/validate/strata-validate";
  if (program == "strata-run") return bin + "/runtime/strata-run";
  if (program == "strata-make-gguf") return bin + "/tests/strata-make-gguf";
  return bin + "/" + program;
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
  std::string cmd = Quote(ProgramPath(program));
  for (const auto& a : args) cmd += " " + Quote(a);
  cmd += " <" + Quote(in_path) + " >" + Quote(out_path) + " 2>" + Quote(err_path);
  int rc = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
  r.out = Slurp(out_path);
  r.err = Slurp(err_path);
  return r;
}

}  // namespace strata::testing
