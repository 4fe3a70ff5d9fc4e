#pragma once
// MappedFile: a read-only memory mapping of a whole file (platform layer).
// The mapping lives exactly as long as the MappedFile; views into it must not
// outlive it. An empty file maps to (nullptr, 0).

#include <cstdint>
#include <span>
#include <string>

#include "runtime/base/status.h"

namespace strata {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Errors: kNotFound (no such file), kIoError (open/stat failed, a
  // directory), kResourceExhausted (the map failed; message says how much).
  static Result<MappedFile> Open(const std::string& path);

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, static_cast<size_t>(size_)}; }
  const std::string& path() const { return path_; }

  // Hint that the whole file will be read sequentially soon (best effort).
  void AdviseSequential() const;

 private:
  void Reset();
  std::string path_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
#ifdef _WIN32
  void* file_handle_ = nullptr;
  void* map_handle_ = nullptr;
#endif
};

// True if `path` names an existing regular file.
bool FileExists(const std::string& path);
// Size of a regular file, or an error.
Result<uint64_t> FileSize(const std::string& path);

}  // namespace strata
