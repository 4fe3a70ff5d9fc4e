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
  // Physical memory only: the commit charge is its own account
  // (AvailableCommitMemory), which the memory plan checks separately,
  // since mapped weights take RAM but no commit and private buffers both.
  MEMORYSTATUSEX s;
  s.dwLength = sizeof(s);
  if (!GlobalMemoryStatusEx(&s)) return 0;
  return s.ullAvailPhys;
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

CommitMemory AvailableCommitMemory() {
  CommitMemory c;
#ifdef _WIN32
  MEMORYSTATUSEX s;
  s.dwLength = sizeof(s);
  if (GlobalMemoryStatusEx(&s)) {
    c.limited = true;
    c.available = s.ullAvailPageFile;  // commit limit minus commit charge, despite the name
  }
#else
  std::FILE* f = std::fopen("/proc/sys/vm/overcommit_memory", "r");
  int mode = 0;
  if (f) {
    if (std::fscanf(f, "%d", &mode) != 1) mode = 0;
    std::fclose(f);
  }
  if (mode != 2) return c;  // heuristic or always: allocations are not charged
  f = std::fopen("/proc/meminfo", "r");
  if (!f) return c;
  unsigned long long limit = 0, committed = 0, kb = 0;
  bool have_limit = false, have_committed = false;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "CommitLimit: %llu kB", &kb) == 1) limit = kb, have_limit = true;
    if (std::sscanf(line, "Committed_AS: %llu kB", &kb) == 1) committed = kb, have_committed = true;
  }
  std::fclose(f);
  if (have_limit && have_committed) {
    c.limited = true;
    c.available = limit > committed ? (limit - committed) * 1024ull : 0;
  }
#endif
  return c;
}

LargePages QueryLargePages() {
  LargePages lp;
#ifdef _WIN32
  const SIZE_T minimum = GetLargePageMinimum();
  if (minimum == 0) {
    lp.why = "this processor or Windows edition has no large pages";
    return lp;
  }
  // The right must be held by the account and then enabled in the process's
  // token; AdjustTokenPrivileges "succeeds" either way and says which in
  // GetLastError.
  HANDLE token = nullptr;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &token)) {
    lp.why = StrFormat("cannot open this process's token (Windows error %lu)", GetLastError());
    return lp;
  }
  TOKEN_PRIVILEGES tp{};
  tp.PrivilegeCount = 1;
  tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
  DWORD err = ERROR_SUCCESS;
  if (!LookupPrivilegeValueW(nullptr, L"SeLockMemoryPrivilege", &tp.Privileges[0].Luid)) err = GetLastError();
  else if (!AdjustTokenPrivileges(token, FALSE, &tp, 0, nullptr, nullptr)) err = GetLastError();
  else err = GetLastError();  // ERROR_NOT_ALL_ASSIGNED when the account lacks the right
  CloseHandle(token);
  if (err == ERROR_NOT_ALL_ASSIGNED) {
    lp.why = "the account lacks the \"Lock pages in memory\" right (SeLockMemoryPrivilege): grant it in "
             "secpol.msc (Local Policies > User Rights Assignment) and sign in again";
    return lp;
  }
  if (err != ERROR_SUCCESS) {
    lp.why = StrFormat("cannot enable SeLockMemoryPrivilege (Windows error %lu)", err);
    return lp;
  }
  lp.page_bytes = minimum;
#elif defined(__linux__)
  std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f) {
    lp.why = "this kernel has no transparent huge pages (/sys/kernel/mm/transparent_hugepage/enabled is absent)";
    return lp;
  }
  char mode[128] = {};
  const bool read = std::fgets(mode, sizeof mode, f) != nullptr;
  std::fclose(f);
  if (!read || std::strstr(mode, "[never]")) {
    lp.why = "transparent huge pages are off (/sys/kernel/mm/transparent_hugepage/enabled: never)";
    return lp;
  }
  uint64_t size = 2ull << 20;
  if ((f = std::fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r"))) {
    unsigned long long v = 0;
    if (std::fscanf(f, "%llu", &v) == 1 && v >= 4096 && (v & (v - 1)) == 0) size = v;
    std::fclose(f);
  }
  lp.page_bytes = size;
#else
  lp.why = "large pages are not supported on this system";
#endif
  return lp;
}

void* AllocateLargePages(uint64_t bytes, uint64_t page_bytes) {
  if (bytes == 0 || page_bytes == 0 || bytes > UINT64_MAX / 2) return nullptr;
  const uint64_t size = LargePageSpan(bytes, page_bytes);
  if (size > static_cast<uint64_t>(SIZE_MAX) - page_bytes) return nullptr;
#ifdef _WIN32
  return VirtualAlloc(nullptr, static_cast<SIZE_T>(size), MEM_RESERVE | MEM_COMMIT | MEM_LARGE_PAGES, PAGE_READWRITE);
#elif defined(__linux__)
  // Over-map by one large page, then trim both ends to an aligned block.
  const size_t span = static_cast<size_t>(size + page_bytes);
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = static_cast<uintptr_t>(LargePageSpan(begin, page_bytes));
  if (aligned > begin) munmap(raw, aligned - begin);
  const uintptr_t tail = aligned + static_cast<uintptr_t>(size);
  if (begin + span > tail) munmap(reinterpret_cast<void*>(tail), begin + span - tail);
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, static_cast<size_t>(size), MADV_HUGEPAGE);  // advice: a failure leaves ordinary pages
  return p;
#else
  return nullptr;
#endif
}

void FreeLargePages(void* p, uint64_t bytes, uint64_t page_bytes) {
  if (!p) return;
#ifdef _WIN32
  (void)bytes;
  (void)page_bytes;
  VirtualFree(p, 0, MEM_RELEASE);
#elif defined(__linux__)
  munmap(p, static_cast<size_t>(LargePageSpan(bytes, page_bytes)));
#else
  (void)bytes;
  (void)page_bytes;
#endif
}

int ProcessorGroupForWorker(int index, int workers, std::span<const int> group_sizes) {
  int64_t total = 0;
  for (int s : group_sizes) total += std::max(s, 0);
  if (total <= 0 || workers <= 0 || index < 0) return 0;
  // Worker i takes the processor at position i * total / workers of the
  // groups laid end to end, so each group gets workers in proportion to its size.
  const int64_t position = static_cast<int64_t>(std::min(index, workers - 1)) * total / workers;
  int64_t end = 0;
  for (size_t g = 0; g < group_sizes.size(); ++g) {
    end += std::max(group_sizes[g], 0);
    if (position < end) return static_cast<int>(g);
  }
  return static_cast<int>(group_sizes.size()) - 1;
}

#ifdef _WIN32
namespace {
// Active processors per group (their masks), and whether this process may
// use them all: more than one group, and no affinity narrower than the
// system's (GetProcessAffinityMask reports 0 for a process whose threads
// already run in several groups, as on Windows 11).
struct ProcessorGroups {
  std::vector<KAFFINITY> masks;
  bool spans = false;
};
ProcessorGroups ReadProcessorGroups() {
  ProcessorGroups out;
  const WORD n = GetActiveProcessorGroupCount();
  if (n <= 1) return out;
  DWORD len = 0;
  GetLogicalProcessorInformationEx(RelationGroup, nullptr, &len);
  std::vector<uint8_t> buf(len);
  auto* info = reinterpret_cast<SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX*>(buf.data());
  if (len == 0 || !GetLogicalProcessorInformationEx(RelationGroup, info, &len)) return out;
  for (WORD g = 0; g < info->Group.ActiveGroupCount; ++g) out.masks.push_back(info->Group.GroupInfo[g].ActiveProcessorMask);
  DWORD_PTR process_mask = 0, system_mask = 0;
  if (!GetProcessAffinityMask(GetCurrentProcess(), &process_mask, &system_mask)) return out;
  out.spans = out.masks.size() > 1 && (process_mask == 0 || process_mask == system_mask);
  return out;
}
int CountBits(uint64_t m) {
  int c = 0;
  for (; m; m &= m - 1) ++c;
  return c;
}
}  // namespace
#endif

void PlaceThreadInProcessorGroup(int index, int workers) {
#ifdef _WIN32
  const ProcessorGroups groups = ReadProcessorGroups();
  if (!groups.spans) return;
  std::vector<int> sizes;
  for (KAFFINITY m : groups.masks) sizes.push_back(CountBits(m));
  const int g = ProcessorGroupForWorker(index, workers, sizes);
  GROUP_AFFINITY ga{};
  ga.Group = static_cast<WORD>(g);
  ga.Mask = groups.masks[static_cast<size_t>(g)];
  SetThreadGroupAffinity(GetCurrentThread(), &ga, nullptr);
#else
  (void)index;
  (void)workers;
#endif
}

int CpuCount() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#elif defined(_WIN32)
  // More than 64 logical processors come in several groups. A process the
  // user did not restrict gets all of them (the pool places its threads,
  // PlaceThreadInProcessorGroup); a restricted one keeps its mask.
  const ProcessorGroups groups = ReadProcessorGroups();
  if (groups.spans) {
    int count = 0;
    for (KAFFINITY m : groups.masks) count += CountBits(m);
    if (count > 0) return count;
  }
  DWORD_PTR process_mask = 0, system_mask = 0;
  if (GetProcessAffinityMask(GetCurrentProcess(), &process_mask, &system_mask) && process_mask != 0)
    return CountBits(process_mask);
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
