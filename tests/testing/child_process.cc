#include "tests/testing/child_process.h"

#include <chrono>
#include <thread>

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <winsock2.h>
#include <ws2tcpip.h>
#include <windows.h>
#include "runtime/base/platform.h"
#else
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
extern char** environ;
#endif

namespace strata::testing {
namespace {
using Clock = std::chrono::steady_clock;
int Elapsed(Clock::time_point t0) {
  return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
}

#ifdef _WIN32
// One argument quoted the way CommandLineToArgvW and the C runtime parse it.
std::wstring QuoteArg(const std::wstring& a) {
  if (!a.empty() && a.find_first_of(L" \t\n\v\"") == std::wstring::npos) return a;
  std::wstring q = L"\"";
  for (size_t i = 0;; ++i) {
    size_t slashes = 0;
    while (i < a.size() && a[i] == L'\\') {
      ++i;
      ++slashes;
    }
    if (i == a.size()) {
      q.append(slashes * 2, L'\\');
      break;
    }
    if (a[i] == L'"') {
      q.append(slashes * 2 + 1, L'\\');
      q += L'"';
    } else {
      q.append(slashes, L'\\');
      q += a[i];
    }
  }
  return q + L"\"";
}

HANDLE OpenInherited(const std::string& path, bool write) {
  SECURITY_ATTRIBUTES sa{sizeof(sa), nullptr, TRUE};
  const std::wstring w = path.empty() ? std::wstring(L"NUL") : WidePath(path);
  return CreateFileW(w.c_str(), write ? GENERIC_WRITE : GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, &sa,
                     write ? CREATE_ALWAYS : OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
}

struct WinsockInit {
  WinsockInit() {
    WSADATA d;
    WSAStartup(MAKEWORD(2, 2), &d);
  }
};
using Socket = SOCKET;
constexpr Socket kNoSocket = INVALID_SOCKET;
void CloseSocket(Socket s) { closesocket(s); }
#else
using Socket = int;
constexpr Socket kNoSocket = -1;
void CloseSocket(Socket s) { ::close(s); }
#endif

Socket Connect(int port) {
#ifdef _WIN32
  static WinsockInit init;
#endif
  Socket fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd == kNoSocket) return kNoSocket;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    CloseSocket(fd);
    return kNoSocket;
  }
  return fd;
}
}  // namespace

ChildProcess::~ChildProcess() { Kill(); }

#ifdef _WIN32
bool ChildProcess::Start(const std::vector<std::string>& argv,
                         const std::vector<std::pair<std::string, std::string>>& env, const std::string& stdin_path,
                         const std::string& stdout_path, const std::string& stderr_path, std::string* error) {
  std::wstring cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? L"" : L" ") + QuoteArg(WidePath(a));
  // The environment: this process's, with `env` replacing or adding entries.
  std::wstring block;
  if (wchar_t* cur = GetEnvironmentStringsW()) {
    for (const wchar_t* e = cur; *e; e += wcslen(e) + 1) {
      const std::string kv = NarrowPath(e);
      bool overridden = false;
      for (const auto& [k, v] : env) overridden |= kv.rfind(k + "=", 0) == 0;
      if (!overridden) block.append(e, wcslen(e) + 1);
    }
    FreeEnvironmentStringsW(cur);
  }
  for (const auto& [k, v] : env) {
    block += WidePath(k + "=" + v);
    block += L'\0';
  }
  block += L'\0';
  HANDLE in = OpenInherited(stdin_path, false);
  HANDLE out = OpenInherited(stdout_path, true);
  HANDLE err = stderr_path == stdout_path ? out : OpenInherited(stderr_path, true);
  STARTUPINFOW si{};
  si.cb = sizeof(si);
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = in;
  si.hStdOutput = out;
  si.hStdError = err;
  PROCESS_INFORMATION pi{};
  // Wine, under load with several tests starting processes at once, now and
  // then fails a CreateProcess with ERROR_INTERNAL_ERROR (1359) that succeeds
  // when tried again (seen once in 400 tests in CI): a few tries.
  BOOL ok = FALSE;
  DWORD why = 0;
  for (int attempt = 0; attempt < 5 && !ok; ++attempt) {
    if (attempt > 0) Sleep(100);
    ok = CreateProcessW(WidePath(argv[0]).c_str(), cmd.data(), nullptr, nullptr, TRUE,
                        CREATE_UNICODE_ENVIRONMENT | CREATE_NEW_PROCESS_GROUP, block.data(), nullptr, &si, &pi);
    why = ok ? 0 : GetLastError();
    if (why != ERROR_INTERNAL_ERROR) break;
  }
  for (HANDLE h : {in, out, err == out ? INVALID_HANDLE_VALUE : err})
    if (h != INVALID_HANDLE_VALUE) CloseHandle(h);
  if (!ok) {
    *error = argv[0] + ": CreateProcess failed (Windows error " + std::to_string(why) + ")";
    return false;
  }
  CloseHandle(pi.hThread);
  process_ = pi.hProcess;
  pid_ = pi.dwProcessId;
  exit_code_ = -1;
  return true;
}

int ChildProcess::Wait(int timeout_ms) {
  if (exit_code_ >= 0 || !process_) return exit_code_;
  if (WaitForSingleObject(static_cast<HANDLE>(process_), static_cast<DWORD>(timeout_ms)) != WAIT_OBJECT_0) return -1;
  DWORD code = 0;
  GetExitCodeProcess(static_cast<HANDLE>(process_), &code);
  exit_code_ = static_cast<int>(code);
  return exit_code_;
}

bool ChildProcess::running() const {
  return process_ && exit_code_ < 0 && WaitForSingleObject(static_cast<HANDLE>(process_), 0) == WAIT_TIMEOUT;
}
// A child in its own process group gets no console events from here (and
// under Wine none at all): the server's stop event is the Windows SIGTERM.
void ChildProcess::Terminate() const {
  if (running()) RequestStop(static_cast<int>(pid_));
}
void ChildProcess::Interrupt() const {
  if (running()) RequestStop(static_cast<int>(pid_));
}
void ChildProcess::Kill() {
  if (!process_) return;
  if (exit_code_ < 0) {
    TerminateProcess(static_cast<HANDLE>(process_), 137);
    WaitForSingleObject(static_cast<HANDLE>(process_), 10000);
  }
  CloseHandle(static_cast<HANDLE>(process_));
  process_ = nullptr;
}
#else
bool ChildProcess::Start(const std::vector<std::string>& argv_in,
                         const std::vector<std::pair<std::string, std::string>>& env, const std::string& stdin_path,
                         const std::string& stdout_path, const std::string& stderr_path, std::string* error) {
  std::vector<std::string> argv_s = argv_in;
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Everything is built here: only async-signal-safe calls after fork.
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
  const std::string in_path = stdin_path.empty() ? "/dev/null" : stdin_path;
  const bool same = stdout_path == stderr_path;
  pid_ = ::fork();
  if (pid_ < 0) {
    *error = "fork failed";
    return false;
  }
  if (pid_ == 0) {
    const int in = ::open(in_path.c_str(), O_RDONLY);
    const int out = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = same ? out : ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in >= 0) ::dup2(in, 0);
    if (out >= 0) ::dup2(out, 1);
    if (err >= 0) ::dup2(err, 2);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  exit_code_ = -1;
  return true;
}

int ChildProcess::Wait(int timeout_ms) {
  if (exit_code_ >= 0 || pid_ <= 0) return exit_code_;
  const auto t0 = Clock::now();
  for (;;) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
      return exit_code_;
    }
    if (Elapsed(t0) >= timeout_ms) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool ChildProcess::running() const { return pid_ > 0 && exit_code_ < 0; }
void ChildProcess::Terminate() const {
  if (running()) ::kill(pid_, SIGTERM);
}
void ChildProcess::Interrupt() const {
  if (running()) ::kill(pid_, SIGINT);
}
void ChildProcess::Kill() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  exit_code_ = 128 + SIGKILL;
}
#endif

#ifndef _WIN32
int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}
#endif

std::string RawHttp(int port, const std::string& request, int read_ms, size_t close_after_bytes) {
  Socket fd = Connect(port);
  if (fd == kNoSocket) return "";
  size_t sent = 0;
  while (sent < request.size()) {
#ifdef _WIN32
    const int n = ::send(fd, request.data() + sent, static_cast<int>(request.size() - sent), 0);
#else
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
#endif
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string out;
  const auto t0 = Clock::now();
  char buf[4096];
  while (Elapsed(t0) < read_ms) {
#ifdef _WIN32
    WSAPOLLFD p{fd, POLLRDNORM, 0};
    if (WSAPoll(&p, 1, 20) <= 0) continue;
    const int n = ::recv(fd, buf, sizeof(buf), 0);
#else
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
#endif
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (close_after_bytes > 0 && out.size() >= close_after_bytes) break;
  }
  CloseSocket(fd);
  return out;
}

namespace {
// Waits for data or EOF; then reads. 0: EOF or error, -1: nothing yet.
int ReadSome(Socket fd, char* buf, size_t size, int wait_ms) {
#ifdef _WIN32
  WSAPOLLFD p{fd, POLLRDNORM, 0};
  if (WSAPoll(&p, 1, wait_ms) <= 0) return -1;
  const int n = ::recv(fd, buf, static_cast<int>(size), 0);
#else
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, wait_ms) <= 0) return -1;
  const ssize_t n = ::recv(fd, buf, size, 0);
#endif
  return n <= 0 ? 0 : static_cast<int>(n);
}
}  // namespace

RawConnection::RawConnection(int port) : fd_(static_cast<intptr_t>(Connect(port))) {}
RawConnection::~RawConnection() {
  if (connected()) CloseSocket(static_cast<Socket>(fd_));
}
bool RawConnection::connected() const { return static_cast<Socket>(fd_) != kNoSocket; }

bool RawConnection::Send(const std::string& bytes) {
  if (!connected()) return false;
  size_t sent = 0;
  while (sent < bytes.size()) {
#ifdef _WIN32
    const int n = ::send(static_cast<Socket>(fd_), bytes.data() + sent, static_cast<int>(bytes.size() - sent), 0);
#else
    const ssize_t n = ::send(static_cast<Socket>(fd_), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
#endif
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string RawConnection::Read(int timeout_ms, const std::string& until) {
  std::string out;
  if (!connected() || closed_) return out;
  const auto t0 = Clock::now();
  char buf[4096];
  while (Elapsed(t0) < timeout_ms) {
    const int n = ReadSome(static_cast<Socket>(fd_), buf, sizeof(buf), 20);
    if (n < 0) continue;
    if (n == 0) {
      closed_ = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
    if (!until.empty() && out.find(until) != std::string::npos) break;
  }
  return out;
}

bool RawConnection::WaitClosed(int timeout_ms, std::string* seen) {
  if (!connected()) return true;
  const auto t0 = Clock::now();
  char buf[4096];
  while (!closed_ && Elapsed(t0) < timeout_ms) {
    const int n = ReadSome(static_cast<Socket>(fd_), buf, sizeof(buf), 20);
    if (n == 0) closed_ = true;
    else if (n > 0 && seen) seen->append(buf, static_cast<size_t>(n));
  }
  return closed_;
}

std::string RawPostJson(int port, const std::string& path, const std::string& body, int read_ms) {
  return RawHttp(port,
                 "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: "
                 "close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
                 read_ms);
}

}  // namespace strata::testing
