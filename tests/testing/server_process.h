#pragma once
// Runs `strata-run PACK --serve` as a child process for end-to-end tests:
// on a loopback port it picks itself (--port 0; the port is read from its
// log), with its stderr captured to a file. The destructor kills a server a
// test left running.

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

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
  // Waits until /health answers 200.
  bool WaitReady(int timeout_ms = 30000);
  // Waits until the log contains `text`.
  bool WaitForLog(const std::string& text, int timeout_ms = 30000) const;
  // Sends a signal.
  void Signal(int sig) const;
  // Waits for the process to end; its exit code (128 + signal when killed),
  // or -1 on timeout.
  int WaitExit(int timeout_ms = 30000);

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  int port_ = -1;
  int exit_code_ = -1;
  std::string log_path_;
};

// Sends one HTTP/1.1 request over a raw socket to 127.0.0.1:port and returns
// everything read until the server closes or `read_ms` passes (for tests of
// what a client library would hide: chunking, keep-alives, disconnects).
// With close_after_bytes > 0, the socket is closed as soon as that many
// bytes arrived (a client that goes away).
std::string RawHttp(int port, const std::string& request, int read_ms, size_t close_after_bytes = 0);

}  // namespace strata::testing
