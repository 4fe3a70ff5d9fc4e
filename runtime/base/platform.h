#pragma once
// Small platform queries (the platform layer: no OS calls elsewhere).

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"

namespace strata {

// True if file descriptor `fd` (1 = stdout, 2 = stderr) is a terminal.
bool IsTerminal(int fd);
// Physical memory of the machine and physical memory available now, in
// bytes (0 if unknown).
uint64_t TotalMemoryBytes();
uint64_t AvailableMemoryBytes();
// Private bytes the OS will still let this process commit, where it keeps
// such an account: Windows always (the commit limit is RAM plus the page
// file, and an allocation past it fails however much RAM is free); Linux
// with strict accounting (vm.overcommit_memory = 2: CommitLimit minus
// Committed_AS). `limited` is false where allocations are not charged
// (Linux's default overcommit): then only physical memory bounds a run.
struct CommitMemory {
  bool limited = false;
  uint64_t available = 0;
};
CommitMemory AvailableCommitMemory();

// Large pages for big private buffers (the KV cache, the forward workspace):
// one TLB entry per 2 MiB instead of per 4 KiB. `page_bytes` 0: not usable
// here, and `why` says what to change. Windows: needs the "Lock pages in
// memory" right (SeLockMemoryPrivilege), which this enables for the process
// when the account holds it; such pages are never paged out and are charged
// to the commit limit. Linux: transparent huge pages, asked for with
// madvise (unless /sys/kernel/mm/transparent_hugepage/enabled is "never").
struct LargePages {
  uint64_t page_bytes = 0;
  std::string why;  // when page_bytes is 0
};
LargePages QueryLargePages();
// What AllocateLargePages maps for `bytes`: whole large pages (the memory
// plan counts this, the backend's counters too).
inline uint64_t LargePageSpan(uint64_t bytes, uint64_t page_bytes) {
  return (bytes + page_bytes - 1) / page_bytes * page_bytes;
}
// `bytes` rounded up to whole large pages of `page_bytes`, zeroed, aligned to
// the large page; nullptr when the OS refuses (fragmented memory, no
// privilege): the caller falls back to ordinary pages.
void* AllocateLargePages(uint64_t bytes, uint64_t page_bytes);
// Frees what AllocateLargePages gave for the same `bytes` and `page_bytes`.
void FreeLargePages(void* p, uint64_t bytes, uint64_t page_bytes);

// Logical CPUs this process may use: its affinity mask; on Windows with more
// than one processor group, every active processor of every group unless the
// process was restricted to fewer (start /affinity, a job object).
int CpuCount();
// The processor group for worker `index` of `workers`, spreading workers over
// groups in proportion to their sizes (`group_sizes`: active processors per
// group). Pure: the rule PlaceThreadInProcessorGroup applies.
int ProcessorGroupForWorker(int index, int workers, std::span<const int> group_sizes);
// Windows on a machine with more than one processor group and an
// unrestricted process: moves the calling thread to the group
// ProcessorGroupForWorker gives (before Windows 11 a process's threads stay
// in one group, 64 processors at most, unless placed). Elsewhere: nothing.
void PlaceThreadInProcessorGroup(int index, int workers);
// The OS's memory page, in bytes.
uint64_t PageBytes();
// This process's id.
int ProcessId();
// The running program's own path (UTF-8); empty if the OS does not say.
std::string ExecutablePath();
// Sets (value != nullptr) or removes an environment variable of this process.
bool SetEnvVar(const char* name, const char* value);

// The command line as UTF-8 strings. POSIX: argv as given. Windows: the
// process's UTF-16 command line, converted (argv there is in the ANSI code
// page, which cannot hold most non-English paths).
std::vector<std::string> Utf8Arguments(int argc, char** argv);
// Console set-up at program start: on Windows, UTF-8 console output.
void SetUpConsole();
// Calls `on_stop` (async-signal-safe work only) on SIGINT/SIGTERM, or on
// Windows on Ctrl+C, Ctrl+Break and the console window closing, and each
// time another process calls RequestStop(this pid) (Windows has no SIGTERM:
// that is how a service wrapper or a test stops a server without a console).
// A client that hangs up (SIGPIPE) no longer ends the process.
void InstallStopHandler(void (*on_stop)(int));
// Asks process `pid` to stop as SIGTERM would (POSIX: sends SIGTERM;
// Windows: sets its stop event, named Local\strata-stop-PID). False if there
// is no such process or it installed no stop handler.
bool RequestStop(int pid);

// Files by UTF-8 path: the UTF-16 APIs on Windows, so any path works.
std::FILE* OpenFile(const std::string& path, const char* mode);
// Renames `from` to `to`, replacing `to`. On failure returns false and says why.
bool RenameReplacing(const std::string& from, const std::string& to, std::string* why);
// Removes a file; false if it was not there or could not go.
bool RemoveFile(const std::string& path);
// Flushes a file's data to the disk (fsync / _commit). False on failure.
bool SyncFile(std::FILE* f);
// Seeks within a file past 2 GiB.
bool SeekFile(std::FILE* f, uint64_t offset, bool from_end);

// A file holding given bytes that the file APIs open by path, gone with the
// object: on Linux an anonymous memory file (/proc/self/fd/N, no disk I/O),
// elsewhere a file in the temporary folder. For fuzz targets and tests.
class ScratchFile {
 public:
  ScratchFile() = default;
  ~ScratchFile();
  ScratchFile(ScratchFile&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_) { o.fd_ = -1; o.path_.clear(); }
  ScratchFile& operator=(ScratchFile&&) = delete;
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  // Errors: kIoError with the OS's reason.
  static Result<ScratchFile> Create(std::span<const uint8_t> bytes);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

#ifdef _WIN32
// UTF-8 <-> UTF-16 for the Windows APIs (invalid input converts to U+FFFD).
std::wstring WidePath(std::string_view utf8);
std::string NarrowPath(std::wstring_view wide);
#endif

// Anonymous pages whose access the owner switches off and on (the sim
// backend's memory: a touch while it is off faults). Zeroed when made,
// readable and writable. Move-only; unmapped when it goes.
class GuardedMemory {
 public:
  enum class Access { kNone, kRead, kReadWrite };
  GuardedMemory() = default;
  ~GuardedMemory();
  GuardedMemory(GuardedMemory&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr; o.size_ = 0; }
  GuardedMemory& operator=(GuardedMemory&& o) noexcept;
  GuardedMemory(const GuardedMemory&) = delete;
  GuardedMemory& operator=(const GuardedMemory&) = delete;

  // At least `bytes` (rounded up to whole pages; at least one page).
  // Errors: kResourceExhausted naming `what`.
  static Result<GuardedMemory> Allocate(uint64_t bytes, std::string_view what);
  // Errors: kInternal with the OS's reason.
  Status SetAccess(Access access);
  // The same for whole pages [offset, offset + bytes) (page-aligned offset).
  Status SetAccess(Access access, uint64_t offset, uint64_t bytes);
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace strata
