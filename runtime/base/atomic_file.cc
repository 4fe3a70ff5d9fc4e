#include "runtime/base/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "runtime/base/fault_injection.h"
#include "runtime/base/strings.h"

#include "runtime/base/platform.h"

namespace strata {

AtomicFileWriter::~AtomicFileWriter() { Abandon(); }

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& o) noexcept
    : final_path_(std::move(o.final_path_)),
      temp_path_(std::move(o.temp_path_)),
      file_(o.file_),
      position_(o.position_) {
  o.file_ = nullptr;
  o.temp_path_.clear();
}

AtomicFileWriter& AtomicFileWriter::operator=(AtomicFileWriter&& o) noexcept {
  if (this != &o) {
    Abandon();
    final_path_ = std::move(o.final_path_);
    temp_path_ = std::move(o.temp_path_);
    file_ = o.file_;
    position_ = o.position_;
    o.file_ = nullptr;
    o.temp_path_.clear();
  }
  return *this;
}

void AtomicFileWriter::Abandon() {
  if (file_) {
    std::fclose(file_);
    file_ = nullptr;
  }
  if (!temp_path_.empty()) {
    RemoveFile(temp_path_);
    temp_path_.clear();
  }
}

Result<AtomicFileWriter> AtomicFileWriter::Create(const std::string& final_path) {
  AtomicFileWriter w;
  w.final_path_ = final_path;
  w.temp_path_ = StrFormat("%s.tmp-%d", final_path.c_str(), ProcessId());
  if (ShouldInjectFault(FaultSite::kFileOpen)) {
    w.temp_path_.clear();
    return IoError(final_path + ": cannot create the output file (injected fault)");
  }
  w.file_ = OpenFile(w.temp_path_, "wb");
  if (!w.file_) {
    int e = errno;
    std::string tmp = w.temp_path_;
    w.temp_path_.clear();
    return IoError(StrFormat("%s: cannot create: %s", tmp.c_str(), std::strerror(e)));
  }
  return w;
}

Status AtomicFileWriter::Write(std::span<const uint8_t> bytes) {
  if (!file_) return Internal("AtomicFileWriter::Write on a closed writer");
  if (ShouldInjectFault(FaultSite::kFileWrite))
    return IoError(StrFormat("%s: write of %zu bytes failed (injected fault)", temp_path_.c_str(), bytes.size()));
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    int e = errno;
    return IoError(StrFormat("%s: write of %zu bytes at offset %llu failed: %s", temp_path_.c_str(), bytes.size(),
                             static_cast<unsigned long long>(position_), std::strerror(e)));
  }
  position_ += bytes.size();
  return Status::Ok();
}

Status AtomicFileWriter::WriteAt(uint64_t offset, std::span<const uint8_t> bytes) {
  if (!file_) return Internal("AtomicFileWriter::WriteAt on a closed writer");
  if (offset + bytes.size() > position_) return Internal("AtomicFileWriter::WriteAt past the end written so far");
  if (ShouldInjectFault(FaultSite::kFileWrite))
    return IoError(StrFormat("%s: write of %zu bytes failed (injected fault)", temp_path_.c_str(), bytes.size()));
  bool ok = SeekFile(file_, offset, false) && std::fwrite(bytes.data(), 1, bytes.size(), file_) == bytes.size();
  int e = errno;
  ok = SeekFile(file_, 0, true) && ok;
  if (!ok)
    return IoError(StrFormat("%s: write of %zu bytes at offset %llu failed: %s", temp_path_.c_str(), bytes.size(),
                             static_cast<unsigned long long>(offset), std::strerror(e)));
  return Status::Ok();
}

Status AtomicFileWriter::WriteZeros(uint64_t n) {
  static const std::vector<uint8_t> kZeros(1 << 16, 0);
  while (n > 0) {
    size_t chunk = n < kZeros.size() ? static_cast<size_t>(n) : kZeros.size();
    STRATA_RETURN_IF_ERROR(Write({kZeros.data(), chunk}));
    n -= chunk;
  }
  return Status::Ok();
}

Status AtomicFileWriter::Commit() {
  if (!file_) return Internal("AtomicFileWriter::Commit on a closed writer");
  if (std::fflush(file_) != 0) {
    int e = errno;
    return IoError(StrFormat("%s: flush failed: %s", temp_path_.c_str(), std::strerror(e)));
  }
  if (!SyncFile(file_)) {
    int e = errno;
    return IoError(StrFormat("%s: flushing to disk failed: %s", temp_path_.c_str(), std::strerror(e)));
  }
  std::fclose(file_);
  file_ = nullptr;
  if (ShouldInjectFault(FaultSite::kFileRename))
    return IoError(StrFormat("cannot rename %s to %s (injected fault)", temp_path_.c_str(), final_path_.c_str()));
  std::string why;
  if (!RenameReplacing(temp_path_, final_path_, &why))
    return IoError(StrFormat("cannot rename %s to %s: %s", temp_path_.c_str(), final_path_.c_str(), why.c_str()));
  temp_path_.clear();
  return Status::Ok();
}

}  // namespace strata
