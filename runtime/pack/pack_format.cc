#include "runtime/pack/pack_format.h"

#include <xxhash.h>

#include <cinttypes>
#include <cstring>

#include "runtime/base/checked_math.h"
#include "runtime/base/strings.h"

namespace strata::pack {
namespace {

template <typename T>
void Put(uint8_t* p, uint32_t at, T v) {
  std::memcpy(p + at, &v, sizeof(T));
}
template <typename T>
T Get(const uint8_t* p, uint32_t at) {
  T v;
  std::memcpy(&v, p + at, sizeof(T));
  return v;
}
std::string U64(uint64_t v) { return StrFormat("%" PRIu64, v); }

}  // namespace

uint64_t Xxh3(std::span<const uint8_t> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

std::array<uint8_t, kHeaderSize> EncodeHeader(const PackHeader& h) {
  std::array<uint8_t, kHeaderSize> b{};
  std::memcpy(b.data(), kMagic.data(), kMagic.size());
  Put<uint16_t>(b.data(), off::kFormatMajor, h.format_major);
  Put<uint16_t>(b.data(), off::kFormatMinor, h.format_minor);
  Put<uint32_t>(b.data(), off::kHeaderSize, h.header_size);
  Put<uint64_t>(b.data(), off::kFlags, h.flags);
  Put<uint64_t>(b.data(), off::kManifestOffset, h.manifest_offset);
  Put<uint64_t>(b.data(), off::kManifestSize, h.manifest_size);
  Put<uint64_t>(b.data(), off::kManifestXxh3, h.manifest_xxh3);
  Put<uint64_t>(b.data(), off::kBlobRegionOffset, h.blob_region_offset);
  Put<uint64_t>(b.data(), off::kBlobRegionSize, h.blob_region_size);
  Put<uint64_t>(b.data(), off::kFileSize, h.file_size);
  Put<uint32_t>(b.data(), off::kBlobAlignment, h.blob_alignment);
  Put<uint32_t>(b.data(), off::kBlobPadding, h.blob_padding);
  Put<uint64_t>(b.data(), off::kHeaderXxh3, XXH3_64bits(b.data(), off::kHeaderXxh3));
  return b;
}

Result<PackHeader> DecodeHeader(std::string_view name, std::span<const uint8_t> file) {
  if (file.size() < kHeaderSize)
    return CorruptAt(name, file.size(), "pack header", StrFormat("a %u-byte header", kHeaderSize),
                     StrFormat("a file of %zu bytes (truncated, or not a Strata pack)", file.size()));
  const uint8_t* p = file.data();
  if (std::memcmp(p, kMagic.data(), kMagic.size()) != 0) {
    std::string found = Printable(std::string_view(reinterpret_cast<const char*>(p), 8));
    std::string hint = std::memcmp(p, "GGUF", 4) == 0 ? " (this is a GGUF file: pack it with strata-pack first)" : "";
    return CorruptAt(name, 0, "pack magic", "\"STRATAPK\"", "\"" + found + "\"" + hint);
  }
  PackHeader h;
  h.format_major = Get<uint16_t>(p, off::kFormatMajor);
  h.format_minor = Get<uint16_t>(p, off::kFormatMinor);
  // The version is checked before the checksum so a pack from a newer major
  // version gets the right message even if the header layout changed.
  if (h.format_major != kFormatMajor) {
    if (h.format_major > kFormatMajor)
      return Status(StatusCode::kUnsupported,
                    StrFormat("%s: pack format %u.%u is newer than this build reads (%u.x): use a newer Strata, or "
                              "re-pack the model with this version's strata-pack",
                              std::string(name).c_str(), h.format_major, h.format_minor, kFormatMajor));
    return CorruptAt(name, off::kFormatMajor, "pack format major version", StrFormat("%u", kFormatMajor),
                     StrFormat("%u", h.format_major));
  }
  uint64_t want = Get<uint64_t>(p, off::kHeaderXxh3);
  uint64_t got = XXH3_64bits(p, off::kHeaderXxh3);
  if (want != got)
    return CorruptAt(name, off::kHeaderXxh3, "pack header checksum", StrFormat("XXH3 %016" PRIx64 " of bytes 0..119", got),
                     StrFormat("%016" PRIx64 " (the header is corrupt)", want));
  h.header_size = Get<uint32_t>(p, off::kHeaderSize);
  h.flags = Get<uint64_t>(p, off::kFlags);
  h.manifest_offset = Get<uint64_t>(p, off::kManifestOffset);
  h.manifest_size = Get<uint64_t>(p, off::kManifestSize);
  h.manifest_xxh3 = Get<uint64_t>(p, off::kManifestXxh3);
  h.blob_region_offset = Get<uint64_t>(p, off::kBlobRegionOffset);
  h.blob_region_size = Get<uint64_t>(p, off::kBlobRegionSize);
  h.file_size = Get<uint64_t>(p, off::kFileSize);
  h.blob_alignment = Get<uint32_t>(p, off::kBlobAlignment);
  h.blob_padding = Get<uint32_t>(p, off::kBlobPadding);

  if (h.header_size != kHeaderSize)
    return CorruptAt(name, off::kHeaderSize, "header size", StrFormat("%u", kHeaderSize), StrFormat("%u", h.header_size));
  for (uint32_t i = off::kReserved; i < off::kHeaderXxh3; ++i)
    if (p[i] != 0) return CorruptAt(name, i, "reserved header byte", "0", StrFormat("%u", p[i]));
  if (h.flags != 0)
    return Status(StatusCode::kUnsupported,
                  StrFormat("%s: pack flags 0x%" PRIx64 " are not defined in format %u.%u", std::string(name).c_str(),
                            h.flags, h.format_major, h.format_minor));
  if (h.file_size != file.size())
    return CorruptAt(name, off::kFileSize, "file size", U64(h.file_size) + " bytes as the header records",
                     U64(file.size()) + " bytes" + (file.size() < h.file_size ? " (truncated)" : " (bytes appended)"));
  if (!IsPowerOfTwo(h.blob_alignment) || h.blob_alignment < 64)
    return CorruptAt(name, off::kBlobAlignment, "blob alignment", "a power of two >= 64", U64(h.blob_alignment));
  if (h.blob_padding < 64)
    return CorruptAt(name, off::kBlobPadding, "blob padding", "at least 64", U64(h.blob_padding));
  uint64_t region_end;
  if (h.blob_region_offset < kHeaderSize || h.blob_region_offset % h.blob_alignment != 0 ||
      !CheckedAdd(h.blob_region_offset, h.blob_region_size, &region_end) || region_end > h.manifest_offset)
    return CorruptAt(name, off::kBlobRegionOffset, "blob region",
                     "an aligned range after the header and before the manifest",
                     StrFormat("offset %" PRIu64 ", size %" PRIu64 ", manifest at %" PRIu64, h.blob_region_offset,
                               h.blob_region_size, h.manifest_offset));
  uint64_t manifest_end;
  if (h.manifest_offset % kManifestAlignment != 0 || h.manifest_size == 0 || h.manifest_size > kMaxManifestBytes ||
      !CheckedAdd(h.manifest_offset, h.manifest_size, &manifest_end) || manifest_end != h.file_size)
    return CorruptAt(name, off::kManifestOffset, "manifest",
                     StrFormat("a %u-aligned range of 1..2^31 bytes ending at the end of the file (%" PRIu64 ")",
                               kManifestAlignment, h.file_size),
                     StrFormat("offset %" PRIu64 ", size %" PRIu64, h.manifest_offset, h.manifest_size));
  return h;
}

}  // namespace strata::pack
