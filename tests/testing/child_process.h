#pragma once
// The test harness's processes and sockets, the one test file that includes
// OS headers (POSIX fork/exec/waitpid/kill and sockets; Windows
// CreateProcessW, job-free handles, console control events and Winsock).

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::testing {

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // kills a child still running

  // Starts argv[0] (a path, no shell, no PATH search) with `env` added to
  // this process's environment; stdin from `stdin_path` (empty: the null
  // device), stdout and stderr to the files named (the same file for both is
  // allowed). False with *error if it cannot start.
  bool Start(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
             const std::string& stdin_path, const std::string& stdout_path, const std::string& stderr_path,
             std::string* error);
  // The exit code once it ended (128 + signal when a signal ended it), or -1
  // while it runs / after timeout_ms (0: do not wait).
  int Wait(int timeout_ms);
  bool running() const;
  // The process id (0 when none was started).
  long pid() const { return static_cast<long>(pid_ > 0 ? pid_ : 0); }
  // A graceful stop: SIGTERM, or Ctrl+Break on Windows (the process group it
  // was started in). A second kind, SIGINT / Ctrl+C, is Interrupt().
  void Terminate() const;
  void Interrupt() const;
  void Kill();

 private:
  int exit_code_ = -1;
#ifdef _WIN32
  void* process_ = nullptr;
  unsigned long pid_ = 0;
#else
  int pid_ = -1;
#endif
};

// Sends one HTTP/1.1 request over a raw socket to 127.0.0.1:port and returns
// everything read until the server closes or `read_ms` passes (for tests of
// what a client library would hide: chunking, keep-alives, disconnects).
// With close_after_bytes > 0, the socket is closed as soon as that many
// bytes arrived (a client that goes away).
std::string RawHttp(int port, const std::string& request, int read_ms, size_t close_after_bytes = 0);
#ifndef _WIN32
// A loopback TCP port no one listens on now (bound and released: another
// process could take it before the caller does), or -1.
int FreeLoopbackPort();
#endif
// POST `body` (application/json) to `path` on 127.0.0.1:port with
// Connection: close, through RawHttp: the raw reply.
std::string RawPostJson(int port, const std::string& path, const std::string& body, int read_ms);

// One raw TCP connection to 127.0.0.1:port, for hostile-client tests: send
// bytes when you like, read what comes, see when the server closes.
class RawConnection {
 public:
  explicit RawConnection(int port);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  bool connected() const;
  // False when the bytes could not all be sent (the server closed).
  bool Send(const std::string& bytes);
  // Reads what arrives within timeout_ms (returning early once the server
  // closes, or once `until` appears in what was read).
  std::string Read(int timeout_ms, const std::string& until = "");
  // True when the server closed the connection (EOF or reset) within timeout_ms;
  // data that arrives meanwhile is appended to *seen when given.
  bool WaitClosed(int timeout_ms, std::string* seen = nullptr);

 private:
  intptr_t fd_;
  bool closed_ = false;
};

}  // namespace strata::testing
