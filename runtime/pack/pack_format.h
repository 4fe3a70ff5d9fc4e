#pragma once
// The fixed parts of the Strata pack format (docs/pack-format.md): the
// 128-byte header, layout constants and the version rules. Shared by the
// packer (writes) and the runtime (reads).

#include <array>
#include <cstdint>
#include <span>

#include "runtime/base/status.h"

namespace strata::pack {

inline constexpr std::array<uint8_t, 8> kMagic = {'S', 'T', 'R', 'A', 'T', 'A', 'P', 'K'};
inline constexpr uint16_t kFormatMajor = 1;
inline constexpr uint16_t kFormatMinor = 1;
inline constexpr uint32_t kHeaderSize = 128;
// Every blob starts at a multiple of this: a page, so a blob can be mapped,
// read with direct I/O or copied to a device without realignment.
inline constexpr uint32_t kBlobAlignment = 4096;
// At least this many zero bytes follow every blob inside the file, so a SIMD
// kernel may read up to 64 bytes past a row's end without leaving the mapping
// (seeds/004). 64 = one cache line = one AVX-512 register.
inline constexpr uint32_t kBlobPadding = 64;
// The manifest starts at a multiple of this (FlatBuffers needs 8).
inline constexpr uint32_t kManifestAlignment = 64;
// Refuse manifests larger than this (FlatBuffers' own limit is 2 GiB).
inline constexpr uint64_t kMaxManifestBytes = 1ull << 31;

// Header byte offsets.
namespace off {
inline constexpr uint32_t kMagic = 0;
inline constexpr uint32_t kFormatMajor = 8;
inline constexpr uint32_t kFormatMinor = 10;
inline constexpr uint32_t kHeaderSize = 12;
inline constexpr uint32_t kFlags = 16;
inline constexpr uint32_t kManifestOffset = 24;
inline constexpr uint32_t kManifestSize = 32;
inline constexpr uint32_t kManifestXxh3 = 40;
inline constexpr uint32_t kBlobRegionOffset = 48;
inline constexpr uint32_t kBlobRegionSize = 56;
inline constexpr uint32_t kFileSize = 64;
inline constexpr uint32_t kBlobAlignment = 72;
inline constexpr uint32_t kBlobPadding = 76;
inline constexpr uint32_t kReserved = 80;  // 40 bytes, zero
inline constexpr uint32_t kHeaderXxh3 = 120;
}  // namespace off

struct PackHeader {
  uint16_t format_major = kFormatMajor;
  uint16_t format_minor = kFormatMinor;
  uint32_t header_size = kHeaderSize;
  uint64_t flags = 0;
  uint64_t manifest_offset = 0;
  uint64_t manifest_size = 0;
  uint64_t manifest_xxh3 = 0;
  uint64_t blob_region_offset = 0;
  uint64_t blob_region_size = 0;
  uint64_t file_size = 0;
  uint32_t blob_alignment = kBlobAlignment;
  uint32_t blob_padding = kBlobPadding;
};

// Serializes a header, computing header_xxh3.
std::array<uint8_t, kHeaderSize> EncodeHeader(const PackHeader& h);
// Decodes and checks a header against the file it came from: magic, version,
// header checksum, reserved bytes, flags, and that the manifest and blob
// region lie inside the file, aligned, in order, and that file_size equals
// the real size. `name` appears in errors.
Result<PackHeader> DecodeHeader(std::string_view name, std::span<const uint8_t> file);

uint64_t Xxh3(std::span<const uint8_t> bytes);

}  // namespace strata::pack
