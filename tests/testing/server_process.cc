#include "tests/testing/server_process.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/testing/run_command.h"
#include "tests/testing/test_data.h"

namespace strata::testing {
namespace {
using Clock = std::chrono::steady_clock;

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int Elapsed(Clock::time_point t0) {
  return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}
}  // namespace

ServerProcess::~ServerProcess() { child_.Kill(); }

bool ServerProcess::Start(const std::vector<std::string>& args,
                          const std::vector<std::pair<std::string, std::string>>& env, std::string* error,
                          int timeout_ms) {
  static int counter = 0;
  log_path_ = ScratchDir("server_" + std::to_string(counter++)) + "/stderr.log";
  std::vector<std::string> argv = {ProgramPath("strata-run")};
  bool has_port = false;
  for (const auto& a : args) {
    argv.push_back(a);
    has_port |= a == "--port";
  }
  if (!has_port) {
    argv.push_back("--port");
    argv.push_back("0");
  }
  if (!child_.Start(argv, env, "", log_path_, log_path_, error)) return false;
  const auto t0 = Clock::now();
  while (Elapsed(t0) < timeout_ms) {
    std::string log = Log();
    size_t at = log.find("listening on http://");
    if (at != std::string::npos) {
      size_t colon = log.find(':', at + 20);
      size_t end = log.find_first_not_of("0123456789", colon + 1);
      if (colon != std::string::npos && end != std::string::npos && end > colon + 1) {
        port_ = std::atoi(log.substr(colon + 1, end - colon - 1).c_str());
        return true;
      }
    }
    const int code = child_.Wait(0);
    if (code >= 0) {
      *error = "strata-run exited with " + std::to_string(code) + ":\n" + Log();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  *error = "strata-run did not start listening in time:\n" + Log();
  return false;
}

bool ServerProcess::WaitReady(int timeout_ms) {
  const auto t0 = Clock::now();
  while (Elapsed(t0) < timeout_ms) {
    std::string r = RawHttp(port_, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 2000);
    if (r.rfind("HTTP/1.1 200", 0) == 0) return true;
    if (child_.Wait(0) >= 0) return false;  // it exited (the log says why): no point waiting
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

bool ServerProcess::WaitForLog(const std::string& text, int timeout_ms) const {
  const auto t0 = Clock::now();
  while (Elapsed(t0) < timeout_ms) {
    if (Log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int ServerProcess::WaitExit(int timeout_ms) { return child_.Wait(timeout_ms); }

std::string ServerProcess::Log() const { return Slurp(log_path_); }

}  // namespace strata::testing
