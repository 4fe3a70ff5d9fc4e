#pragma once
// AtomicFileWriter: writes an output file through a temporary name in the same
// directory and renames it into place only on Commit(). A writer destroyed
// without Commit() (an error, an exception, an early return) removes the
// temporary file, so no half-written output ever carries the final name.

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "runtime/base/status.h"

namespace strata {

class AtomicFileWriter {
 public:
  AtomicFileWriter() = default;
  ~AtomicFileWriter();
  AtomicFileWriter(AtomicFileWriter&& o) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&& o) noexcept;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  static Result<AtomicFileWriter> Create(const std::string& final_path);

  Status Write(std::span<const uint8_t> bytes);
  Status Write(const void* p, size_t n) { return Write({static_cast<const uint8_t*>(p), n}); }
  Status WriteZeros(uint64_t n);
  // Overwrites bytes already written at `offset` (e.g. a header patched last),
  // then continues appending at the end.
  Status WriteAt(uint64_t offset, std::span<const uint8_t> bytes);
  uint64_t position() const { return position_; }
  // Flushes, syncs to disk and renames the temporary file to the final path.
  Status Commit();
  const std::string& temp_path() const { return temp_path_; }
  const std::string& final_path() const { return final_path_; }

 private:
  void Abandon();
  std::string final_path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  uint64_t position_ = 0;
};

}  // namespace strata
