#pragma once
// PackWriter: lays out a pack file (docs/pack-format.md) through a temporary
// file that is renamed into place only by Finish(). Blobs are streamed:
// written and hashed in one pass, each at a kBlobAlignment boundary and
// followed by at least kBlobPadding zero bytes. The manifest goes after the
// blob region; the header, which points at both, is written last.

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "runtime/base/atomic_file.h"
#include "runtime/base/status.h"


namespace strata {

struct BlobInfo {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t xxh3 = 0;
};

class PackWriter {
 public:
  ~PackWriter();
  PackWriter(PackWriter&&) noexcept;
  PackWriter& operator=(PackWriter&&) = delete;

  // `alignment`: a power of two >= pack::kHeaderSize (pack::kBlobAlignment by default).
  static Result<PackWriter> Create(const std::string& path, uint32_t alignment = 4096);

  // A blob written in one piece.
  Result<BlobInfo> AddBlob(std::span<const uint8_t> bytes);
  // A blob written in pieces: BeginBlob, Append..., EndBlob.
  Status BeginBlob();
  Status Append(std::span<const uint8_t> bytes);
  Result<BlobInfo> EndBlob();

  uint64_t bytes_written() const { return writer_.position(); }

  // Writes the manifest (a finished FlatBuffer) and the header, syncs, and
  // renames the file into place.
  Status Finish(std::span<const uint8_t> manifest);

 private:
  PackWriter() = default;
  AtomicFileWriter writer_;
  // An XXH3_state_t (opaque here: xxhash.h may rename it, as XXH_INLINE_ALL does).
  void* hash_ = nullptr;
  bool in_blob_ = false;
  BlobInfo current_;
  uint64_t region_offset_ = 0;
  uint32_t alignment_ = 4096;
};

}  // namespace strata
