#include "tests/testing/server_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fcntl.h>
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

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && exit_code_ < 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

bool ServerProcess::Start(const std::vector<std::string>& args,
                          const std::vector<std::pair<std::string, std::string>>& env, std::string* error,
                          int timeout_ms) {
  static int counter = 0;
  log_path_ = ScratchDir("server_" + std::to_string(counter++)) + "/stderr.log";
  std::vector<std::string> argv_s = {ProgramPath("strata-run")};
  bool has_port = false;
  for (const auto& a : args) {
    argv_s.push_back(a);
    has_port |= a == "--port";
  }
  if (!has_port) {
    argv_s.push_back("--port");
    argv_s.push_back("0");
  }
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment is built here: only async-signal-safe calls after fork.
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    bool overridden = false;
    for (const auto& [k, v] : env) overridden |= kv.rfind(k + "=", 0) == 0;
    if (!overridden) env_s.push_back(kv);
  }
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ < 0) {
    *error = "fork failed";
    return false;
  }
  if (pid_ == 0) {
    int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = ::open("/dev/null", O_RDWR);
    if (log >= 0) {
      ::dup2(log, 2);
      ::dup2(log, 1);
    }
    if (null >= 0) ::dup2(null, 0);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
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
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      *error = "strata-run exited with " + std::to_string(exit_code_) + ":\n" + Log();
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

void ServerProcess::Signal(int sig) const {
  if (pid_ > 0 && exit_code_ < 0) ::kill(pid_, sig);
}

int ServerProcess::WaitExit(int timeout_ms) {
  if (exit_code_ >= 0) return exit_code_;
  const auto t0 = Clock::now();
  while (Elapsed(t0) < timeout_ms) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

std::string ServerProcess::Log() const { return Slurp(log_path_); }

std::string RawHttp(int port, const std::string& request, int read_ms, size_t close_after_bytes) {
  int fd = Connect(port);
  if (fd < 0) return "";
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string out;
  const auto t0 = Clock::now();
  char buf[4096];
  while (Elapsed(t0) < read_ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (close_after_bytes > 0 && out.size() >= close_after_bytes) break;
  }
  ::close(fd);
  return out;
}

}  // namespace strata::testing
