#pragma once
// Runs one of the built programs and captures its exit code and output.

#include <string>
#include <vector>

namespace strata::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Path of a built program: "strata-pack" -> <build>/packer/strata-pack, etc.
std::string ProgramPath(const std::string& program);
// Runs `program args...` (no shell interpretation of args; they are quoted).
CommandResult RunProgram(const std::string& program, const std::vector<std::string>& args,
                         const std::string& stdin_text = "");

}  // namespace strata::testing
