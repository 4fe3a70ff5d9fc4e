#include "runtime/base/platform.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"

#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#include <process.h>
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <shellapi.h>
#else
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>
#include <signal.h>
#include <csignal>
#endif

namespace strata {

bool IsTerminal(int fd) {
#ifdef _WIN32
  return _isatty(fd) != 0;
#else
  return isatty(fd) != 0;
#endif
}

uint64_t TotalMemoryBytes() {
#ifdef _WIN32
  MEMORYSTATUSEX s;
  s.dwLength = sizeof(s);
  return GlobalMemoryStatusEx(&s) ? s.ullTotalPhys : 0;
#else
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
#endif
}

uint64_t AvailableMemoryBytes() {
#ifdef _WIN32
  // Windows has no overcommit: every private byte is charged against the
  // commit limit (RAM plus page file) when allocated, so what fits is the
  // smaller of free physical memory and the commit charge still available.
  MEMORYSTATUSEX s;
  s.dwLength = sizeof(s);
  if (!GlobalMemoryStatusEx(&s)) return 0;
  return std::min<uint64_t>(s.ullAvailPhys, s.ullAvailPageFile);
#else
  // MemAvailable counts reclaimable page cache, unlike _SC_AVPHYS_PAGES.
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f) {
    char line[256];
    unsigned long long kb = 0;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    std::fclose(f);
    if (kb) return kb * 1024ull;
  }
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
#endif
}

int CpuCount() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#elif defined(_WIN32)
  // A process in one processor group (the default before Windows 11) may
  // use the CPUs of its affinity mask there; one the OS lets span groups
  // (Windows 11, Server 2022: more than 64 logical CPUs) may use them all.
  USHORT groups[8];
  USHORT n_groups = 8;
  if (GetProcessGroupAffinity(GetCurrentProcess(), &n_groups, groups) && n_groups > 1) {
    const DWORD all = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    if (all > 0) return static_cast<int>(all);
  }
  DWORD_PTR process_mask = 0, system_mask = 0;
  if (GetProcessAffinityMask(GetCurrentProcess(), &process_mask, &system_mask) && process_mask != 0) {
    int count = 0;
    for (DWORD_PTR m = process_mask; m; m &= m - 1) ++count;
    return count;
  }
#endif
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

uint64_t PageBytes() {
#ifdef _WIN32
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  return si.dwPageSize;
#else
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<uint64_t>(p) : 4096;
#endif
}

int ProcessId() {
#ifdef _WIN32
  return static_cast<int>(GetCurrentProcessId());
#else
  return static_cast<int>(getpid());
#endif
}

#ifdef _WIN32
std::wstring WidePath(std::string_view utf8) {
  if (utf8.empty() || utf8.size() > 0x7fffffffu) return {};
  const int n = MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), nullptr, 0);
  std::wstring out(static_cast<size_t>(n > 0 ? n : 0), L'\0');
  if (n > 0) MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), out.data(), n);
  return out;
}

std::string NarrowPath(std::wstring_view wide) {
  if (wide.empty() || wide.size() > 0x7fffffffu) return {};
  const int n = WideCharToMultiByte(CP_UTF8, 0, wide.data(), static_cast<int>(wide.size()), nullptr, 0, nullptr, nullptr);
  std::string out(static_cast<size_t>(n > 0 ? n : 0), '\0');
  if (n > 0)
    WideCharToMultiByte(CP_UTF8, 0, wide.data(), static_cast<int>(wide.size()), out.data(), n, nullptr, nullptr);
  return out;
}
#endif

std::string ExecutablePath() {
#ifdef _WIN32
  std::wstring buf(32768, L'\0');
  const DWORD n = GetModuleFileNameW(nullptr, buf.data(), static_cast<DWORD>(buf.size()));
  if (n == 0 || n >= buf.size()) return {};
  buf.resize(n);
  std::string path = NarrowPath(buf);
  std::replace(path.begin(), path.end(), '\\', '/');
  return path;
#else
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
#endif
}

bool SetEnvVar(const char* name, const char* value) {
#ifdef _WIN32
  return _putenv_s(name, value ? value : "") == 0;
#else
  return value ? setenv(name, value, 1) == 0 : unsetenv(name) == 0;
#endif
}

std::vector<std::string> Utf8Arguments(int argc, char** argv) {
  std::vector<std::string> out;
#ifdef _WIN32
  int n = 0;
  LPWSTR* wide = CommandLineToArgvW(GetCommandLineW(), &n);
  if (wide && n == argc) {
    for (int i = 0; i < n; ++i) out.push_back(NarrowPath(wide[i]));
    LocalFree(wide);
    return out;
  }
  if (wide) LocalFree(wide);
#endif
  for (int i = 0; i < argc; ++i) out.emplace_back(argv[i]);
  return out;
}

void SetUpConsole() {
#ifdef _WIN32
  SetConsoleOutputCP(CP_UTF8);
  // Binary stdout: the programs write UTF-8 bytes and '\n' as they are.
  _setmode(_fileno(stdout), _O_BINARY);
#endif
}

namespace {
void (*g_on_stop)(int) = nullptr;
#ifdef _WIN32
BOOL WINAPI OnConsoleEvent(DWORD event) {
  switch (event) {
    case CTRL_C_EVENT:
    case CTRL_BREAK_EVENT:
    case CTRL_CLOSE_EVENT:
    case CTRL_LOGOFF_EVENT:
    case CTRL_SHUTDOWN_EVENT:
      if (g_on_stop) g_on_stop(static_cast<int>(event));
      // After a close event Windows ends the process once this returns (or
      // after about 5 s): give the drain its chance first.
      if (event == CTRL_CLOSE_EVENT || event == CTRL_LOGOFF_EVENT || event == CTRL_SHUTDOWN_EVENT) Sleep(4500);
      return TRUE;
    default:
      return FALSE;
  }
}
#endif
}  // namespace

#ifdef _WIN32
std::wstring StopEventName(int pid) { return L"Local\\strata-stop-" + std::to_wstring(pid); }
#endif

void InstallStopHandler(void (*on_stop)(int)) {
  g_on_stop = on_stop;
#ifdef _WIN32
  SetConsoleCtrlHandler(OnConsoleEvent, TRUE);
  static HANDLE event = nullptr;
  if (!event) {
    event = CreateEventW(nullptr, FALSE, FALSE, StopEventName(ProcessId()).c_str());
    if (event)
      std::thread([] {
        while (WaitForSingleObject(event, INFINITE) == WAIT_OBJECT_0)
          if (g_on_stop) g_on_stop(0);
      }).detach();
  }
#else
  std::signal(SIGINT, on_stop);
  std::signal(SIGTERM, on_stop);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not end the server
#endif
}

bool RequestStop(int pid) {
#ifdef _WIN32
  HANDLE event = OpenEventW(EVENT_MODIFY_STATE, FALSE, StopEventName(pid).c_str());
  if (!event) return false;
  const bool ok = SetEvent(event) != 0;
  CloseHandle(event);
  return ok;
#else
  return ::kill(pid, SIGTERM) == 0;
#endif
}

std::FILE* OpenFile(const std::string& path, const char* mode) {
#ifdef _WIN32
  return _wfopen(WidePath(path).c_str(), WidePath(mode).c_str());
#else
  return std::fopen(path.c_str(), mode);
#endif
}

bool RenameReplacing(const std::string& from, const std::string& to, std::string* why) {
#ifdef _WIN32
  if (MoveFileExW(WidePath(from).c_str(), WidePath(to).c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
    return true;
  if (why) *why = StrFormat("Windows error %lu", GetLastError());
#else
  if (std::rename(from.c_str(), to.c_str()) == 0) return true;
  if (why) *why = std::strerror(errno);
#endif
  return false;
}

bool RemoveFile(const std::string& path) {
#ifdef _WIN32
  return DeleteFileW(WidePath(path).c_str()) != 0;
#else
  return std::remove(path.c_str()) == 0;
#endif
}

bool SyncFile(std::FILE* f) {
#ifdef _WIN32
  return _commit(_fileno(f)) == 0;
#else
  return fsync(fileno(f)) == 0;
#endif
}

bool SeekFile(std::FILE* f, uint64_t offset, bool from_end) {
  if (offset > static_cast<uint64_t>(INT64_MAX)) return false;
#ifdef _WIN32
  return _fseeki64(f, static_cast<long long>(offset), from_end ? SEEK_END : SEEK_SET) == 0;
#else
  return fseeko(f, static_cast<off_t>(offset), from_end ? SEEK_END : SEEK_SET) == 0;
#endif
}

ScratchFile::~ScratchFile() {
#if defined(__linux__)
  if (fd_ >= 0) close(fd_);
#else
  if (!path_.empty()) RemoveFile(path_);
#endif
}

Result<ScratchFile> ScratchFile::Create(std::span<const uint8_t> bytes) {
  ScratchFile f;
#if defined(__linux__)
  f.fd_ = memfd_create("strata-scratch", MFD_CLOEXEC);
  if (f.fd_ < 0) return IoError(StrFormat("memfd_create failed: %s", std::strerror(errno)));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(f.fd_, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return IoError(StrFormat("writing a memory file failed: %s", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  f.path_ = "/proc/self/fd/" + std::to_string(f.fd_);
#else
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) return IoError("no temporary folder: " + ec.message());
  const std::string path =
      (dir / StrFormat("strata-scratch-%d-%u", ProcessId(), counter.fetch_add(1))).string();
  std::FILE* out = OpenFile(path, "wb");
  if (!out) return IoError(StrFormat("%s: cannot create: %s", path.c_str(), std::strerror(errno)));
  f.path_ = path;
  const bool ok = (bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size());
  if (std::fclose(out) != 0 || !ok) return IoError(path + ": write failed");
#endif
  return f;
}

GuardedMemory::~GuardedMemory() {
  if (!data_) return;
#ifdef _WIN32
  VirtualFree(data_, 0, MEM_RELEASE);
#else
  munmap(data_, static_cast<size_t>(size_));
#endif
}

GuardedMemory& GuardedMemory::operator=(GuardedMemory&& o) noexcept {
  if (this != &o) {
    GuardedMemory gone(std::move(*this));
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

Result<GuardedMemory> GuardedMemory::Allocate(uint64_t bytes, std::string_view what) {
  const uint64_t page = PageBytes();
  if (bytes > UINT64_MAX - page) return AllocationFailed(what, bytes);
  const uint64_t size = std::max<uint64_t>(1, (bytes + page - 1) / page) * page;
  if (size > static_cast<uint64_t>(SIZE_MAX)) return AllocationFailed(what, bytes);
  GuardedMemory m;
#ifdef _WIN32
  void* p = VirtualAlloc(nullptr, static_cast<size_t>(size), MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
  if (!p) return AllocationFailed(what, bytes);
#else
  void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return AllocationFailed(what, bytes);
#endif
  m.data_ = static_cast<uint8_t*>(p);
  m.size_ = size;
  return m;
}

Status GuardedMemory::SetAccess(Access access) { return SetAccess(access, 0, size_); }

Status GuardedMemory::SetAccess(Access access, uint64_t offset, uint64_t bytes) {
  if (!data_ || bytes == 0) return Status::Ok();
  if (offset > size_ || bytes > size_ - offset || offset % PageBytes() != 0)
    return Internal(StrFormat("GuardedMemory::SetAccess: pages [%llu, +%llu) outside the %llu bytes held",
                              static_cast<unsigned long long>(offset), static_cast<unsigned long long>(bytes),
                              static_cast<unsigned long long>(size_)));
  uint8_t* at = data_ + offset;
#ifdef _WIN32
  const DWORD prot = access == Access::kNone ? PAGE_NOACCESS : access == Access::kRead ? PAGE_READONLY : PAGE_READWRITE;
  DWORD old = 0;
  if (!VirtualProtect(at, static_cast<size_t>(bytes), prot, &old))
    return Internal(StrFormat("VirtualProtect of %s failed (error %lu)", HumanBytes(bytes).c_str(), GetLastError()));
#else
  const int prot = access == Access::kNone ? PROT_NONE : access == Access::kRead ? PROT_READ : PROT_READ | PROT_WRITE;
  if (mprotect(at, static_cast<size_t>(bytes), prot) != 0)
    return Internal(StrFormat("mprotect of %s failed: %s", HumanBytes(bytes).c_str(), std::strerror(errno)));
#endif
  return Status::Ok();
}

}  // namespace strata
