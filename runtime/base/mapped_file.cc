#include "runtime/base/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "runtime/base/fault_injection.h"
#include "runtime/base/platform.h"
#include "runtime/base/strings.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace strata {

MappedFile::~MappedFile() { Reset(); }

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), data_(o.data_), size_(o.size_) {
#ifdef _WIN32
  file_handle_ = o.file_handle_;
  map_handle_ = o.map_handle_;
  o.file_handle_ = o.map_handle_ = nullptr;
#endif
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    Reset();
    path_ = std::move(o.path_);
    data_ = o.data_;
    size_ = o.size_;
#ifdef _WIN32
    file_handle_ = o.file_handle_;
    map_handle_ = o.map_handle_;
    o.file_handle_ = o.map_handle_ = nullptr;
#endif
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

#ifdef _WIN32

void MappedFile::Reset() {
  if (data_) UnmapViewOfFile(data_);
  if (map_handle_) CloseHandle(map_handle_);
  if (file_handle_) CloseHandle(file_handle_);
  data_ = nullptr;
  size_ = 0;
  map_handle_ = file_handle_ = nullptr;
}

Result<MappedFile> MappedFile::Open(const std::string& path) {
  MappedFile f;
  f.path_ = path;
  if (ShouldInjectFault(FaultSite::kFileOpen)) return IoError(path + ": cannot open (injected fault)");
  // UTF-16 path: any folder name works. Others may read and rename the
  // file while it is mapped, as on POSIX.
  HANDLE h = CreateFileW(WidePath(path).c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr,
                         OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) {
    DWORD e = GetLastError();
    if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND) return NotFound(path + ": no such file");
    return IoError(StrFormat("%s: cannot open (Windows error %lu)", path.c_str(), e));
  }
  f.file_handle_ = h;
  // (A directory does not open without FILE_FLAG_BACKUP_SEMANTICS.)
  if (GetFileType(h) != FILE_TYPE_DISK) return IoError(path + ": not a regular file");
  LARGE_INTEGER sz;
  if (!GetFileSizeEx(h, &sz)) return IoError(path + ": cannot read the file size");
  f.size_ = static_cast<uint64_t>(sz.QuadPart);
  if (f.size_ == 0) return f;
  if (ShouldInjectFault(FaultSite::kFileMap))
    return ResourceExhausted(StrFormat("%s: cannot map %s (injected fault)", path.c_str(), HumanBytes(f.size_).c_str()));
  // Sizes 0, 0: the whole file, however large (64-bit sizes, files past 4 GiB).
  f.map_handle_ = CreateFileMappingW(h, nullptr, PAGE_READONLY, 0, 0, nullptr);
  if (!f.map_handle_)
    return ResourceExhausted(StrFormat("%s: CreateFileMapping of %s failed (Windows error %lu)", path.c_str(),
                                       HumanBytes(f.size_).c_str(), GetLastError()));
  void* p = MapViewOfFile(f.map_handle_, FILE_MAP_READ, 0, 0, 0);
  if (!p)
    return ResourceExhausted(StrFormat("%s: MapViewOfFile of %s failed (Windows error %lu)", path.c_str(),
                                       HumanBytes(f.size_).c_str(), GetLastError()));
  f.data_ = static_cast<const uint8_t*>(p);
  return f;
}

void MappedFile::AdviseSequential() const {}

bool FileExists(const std::string& path) {
  DWORD a = GetFileAttributesW(WidePath(path).c_str());
  return a != INVALID_FILE_ATTRIBUTES && !(a & FILE_ATTRIBUTE_DIRECTORY);
}

Result<uint64_t> FileSize(const std::string& path) {
  WIN32_FILE_ATTRIBUTE_DATA d;
  if (!GetFileAttributesExW(WidePath(path).c_str(), GetFileExInfoStandard, &d)) return NotFound(path + ": no such file");
  return (static_cast<uint64_t>(d.nFileSizeHigh) << 32) | d.nFileSizeLow;
}

#else  // POSIX

void MappedFile::Reset() {
  if (data_) munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
  data_ = nullptr;
  size_ = 0;
}

Result<MappedFile> MappedFile::Open(const std::string& path) {
  MappedFile f;
  f.path_ = path;
  if (ShouldInjectFault(FaultSite::kFileOpen)) return IoError(path + ": cannot open (injected fault)");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) return NotFound(path + ": no such file");
    return IoError(StrFormat("%s: cannot open: %s", path.c_str(), std::strerror(e)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return IoError(StrFormat("%s: cannot stat: %s", path.c_str(), std::strerror(e)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError(path + ": not a regular file");
  }
  f.size_ = static_cast<uint64_t>(st.st_size);
  if (f.size_ == 0) {
    ::close(fd);
    return f;
  }
  if (ShouldInjectFault(FaultSite::kFileMap)) {
    ::close(fd);
    return ResourceExhausted(
        StrFormat("%s: cannot map %s (injected fault)", path.c_str(), HumanBytes(f.size_).c_str()));
  }
  void* p = mmap(nullptr, static_cast<size_t>(f.size_), PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    uint64_t want = f.size_;
    f.size_ = 0;
    return ResourceExhausted(StrFormat("%s: mmap of %s failed: %s", path.c_str(), HumanBytes(want).c_str(),
                                       std::strerror(e)));
  }
  f.data_ = static_cast<const uint8_t*>(p);
  return f;
}

void MappedFile::AdviseSequential() const {
  if (!data_) return;
  madvise(const_cast<uint8_t*>(data_), static_cast<size_t>(size_), MADV_SEQUENTIAL);
  madvise(const_cast<uint8_t*>(data_), static_cast<size_t>(size_), MADV_WILLNEED);
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<uint64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOENT) return NotFound(path + ": no such file");
    return IoError(StrFormat("%s: cannot stat: %s", path.c_str(), std::strerror(e)));
  }
  return static_cast<uint64_t>(st.st_size);
}

#endif

}  // namespace strata
