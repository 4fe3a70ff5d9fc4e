#include "packer/pack_writer.h"

#include <xxhash.h>

#include "runtime/base/checked_math.h"
#include "runtime/pack/pack_format.h"

namespace strata {

PackWriter::~PackWriter() {
  if (hash_) XXH3_freeState(static_cast<XXH3_state_t*>(hash_));
}

PackWriter::PackWriter(PackWriter&& o) noexcept
    : writer_(std::move(o.writer_)), hash_(o.hash_), in_blob_(o.in_blob_), current_(o.current_),
      region_offset_(o.region_offset_), alignment_(o.alignment_) {
  o.hash_ = nullptr;
}

Result<PackWriter> PackWriter::Create(const std::string& path, uint32_t alignment) {
  if (!IsPowerOfTwo(alignment) || alignment < pack::kHeaderSize)
    return InvalidArgument("blob alignment " + std::to_string(alignment) + ": expected a power of two >= " +
                           std::to_string(pack::kHeaderSize));
  PackWriter w;
  w.alignment_ = alignment;
  STRATA_ASSIGN_OR_RETURN(w.writer_, AtomicFileWriter::Create(path));
  w.hash_ = XXH3_createState();
  if (!w.hash_) return ResourceExhausted("cannot allocate a checksum state");
  // The header is written last; reserve the first page for it.
  STRATA_RETURN_IF_ERROR(w.writer_.WriteZeros(alignment));
  w.region_offset_ = alignment;
  return w;
}

Status PackWriter::BeginBlob() {
  if (in_blob_) return Internal("PackWriter::BeginBlob inside a blob");
  // Invariant: between blobs the position is a multiple of the alignment.
  current_ = {writer_.position(), 0, 0};
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(hash_));
  in_blob_ = true;
  return Status::Ok();
}

Status PackWriter::Append(std::span<const uint8_t> bytes) {
  if (!in_blob_) return Internal("PackWriter::Append outside a blob");
  XXH3_64bits_update(static_cast<XXH3_state_t*>(hash_), bytes.data(), bytes.size());
  current_.size += bytes.size();
  return writer_.Write(bytes);
}

Result<BlobInfo> PackWriter::EndBlob() {
  if (!in_blob_) return Internal("PackWriter::EndBlob outside a blob");
  in_blob_ = false;
  current_.xxh3 = XXH3_64bits_digest(static_cast<XXH3_state_t*>(hash_));
  // Zero padding: at least kBlobPadding bytes, up to the next aligned offset.
  uint64_t end = writer_.position() + pack::kBlobPadding;
  uint64_t next = (end + alignment_ - 1) / alignment_ * alignment_;
  STRATA_RETURN_IF_ERROR(writer_.WriteZeros(next - writer_.position()));
  return current_;
}

Result<BlobInfo> PackWriter::AddBlob(std::span<const uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(BeginBlob());
  STRATA_RETURN_IF_ERROR(Append(bytes));
  return EndBlob();
}

Status PackWriter::Finish(std::span<const uint8_t> manifest) {
  if (in_blob_) return Internal("PackWriter::Finish inside a blob");
  pack::PackHeader h;
  h.blob_alignment = alignment_;
  h.blob_region_offset = region_offset_;
  h.blob_region_size = writer_.position() - region_offset_;
  h.manifest_offset = writer_.position();  // aligned to the blob alignment (>= 128), hence to kManifestAlignment
  h.manifest_size = manifest.size();
  h.manifest_xxh3 = pack::Xxh3(manifest);
  h.file_size = h.manifest_offset + h.manifest_size;
  STRATA_RETURN_IF_ERROR(writer_.Write(manifest));
  auto header = pack::EncodeHeader(h);
  STRATA_RETURN_IF_ERROR(writer_.WriteAt(0, header));
  return writer_.Commit();
}

}  // namespace strata
