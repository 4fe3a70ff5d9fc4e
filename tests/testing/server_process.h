#pragma once
// Runs `strata-run PACK --serve` as a child process for end-to-end tests:
// on a loopback port it picks itself (--port 0; the port is read from its
// log), with its stderr captured to a file. The destructor kills a server a
// test left running.

#include <string>
#include <utility>
#include <vector>

#include "tests/testing/child_process.h"

namespace strata::testing {

class ServerProcess {
 public:
  ServerProcess() = default;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess();

  // Starts strata-run with `args` (the pack, --serve and the rest; --port 0
  // is added unless args has --port) and `env` added to the environment.
  // Waits up to timeout_ms for the "listening on" line. False (with the log
  // in *error) if it exits or does not listen in time.
  bool Start(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env,
             std::string* error, int timeout_ms = 30000);
  // Waits until /health answers 200; false at once if the process exits.
  bool WaitReady(int timeout_ms = 30000);
  // Waits until the log contains `text`.
  bool WaitForLog(const std::string& text, int timeout_ms = 30000) const;
  // A graceful stop (SIGTERM; Ctrl+Break on Windows) and an interrupt
  // (SIGINT; Ctrl+Break again on Windows, where a process started in its own
  // group receives no Ctrl+C).
  void Terminate() const { child_.Terminate(); }
  void Interrupt() const { child_.Interrupt(); }
  void Kill() { child_.Kill(); }  // SIGKILL: a replica that dies
  // Waits for the process to end; its exit code (128 + signal when killed),
  // or -1 on timeout.
  int WaitExit(int timeout_ms = 30000);

  int port() const { return port_; }
  long pid() const { return child_.pid(); }
  std::string Log() const;

 private:
  mutable ChildProcess child_;
  int port_ = -1;
  std::string log_path_;
};


}  // namespace strata::testing
