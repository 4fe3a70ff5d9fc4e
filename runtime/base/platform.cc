#include "runtime/base/platform.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"

#ifdef _WIN32
#include <io.h>
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>
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
  MEMORYSTATUSEX s;
  s.dwLength = sizeof(s);
  return GlobalMemoryStatusEx(&s) ? s.ullAvailPhys : 0;
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
#endif
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

namespace {
uint64_t PageSize() {
#ifdef _WIN32
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  return si.dwPageSize;
#else
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<uint64_t>(p) : 4096;
#endif
}
}  // namespace

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
  const uint64_t page = PageSize();
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

Status GuardedMemory::SetAccess(Access access) {
  if (!data_) return Status::Ok();
#ifdef _WIN32
  const DWORD prot = access == Access::kNone ? PAGE_NOACCESS : access == Access::kRead ? PAGE_READONLY : PAGE_READWRITE;
  DWORD old = 0;
  if (!VirtualProtect(data_, static_cast<size_t>(size_), prot, &old))
    return Internal(StrFormat("VirtualProtect of %s failed (error %lu)", HumanBytes(size_).c_str(), GetLastError()));
#else
  const int prot = access == Access::kNone ? PROT_NONE : access == Access::kRead ? PROT_READ : PROT_READ | PROT_WRITE;
  if (mprotect(data_, static_cast<size_t>(size_), prot) != 0)
    return Internal(StrFormat("mprotect of %s failed: %s", HumanBytes(size_).c_str(), std::strerror(errno)));
#endif
  return Status::Ok();
}

}  // namespace strata
