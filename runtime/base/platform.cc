#include "runtime/base/platform.h"

#include <cstdio>
#include <cstring>
#include <thread>

#ifdef _WIN32
#include <io.h>
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <sched.h>
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

}  // namespace strata
