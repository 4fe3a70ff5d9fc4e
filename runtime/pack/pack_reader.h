#pragma once
// The runtime's pack reader. Pack::Open maps a pack and proves it sound
// before anything else touches it: header (magic, version, checksum, bounds),
// manifest (checksum, FlatBuffers verifier, then every field's meaning),
// every blob (inside the blob region, aligned, padded, not overlapping) and
// every tensor (known type, shape that matches its blob's size exactly,
// overflow-checked; the architecture spec's names, shapes and types). After
// Open succeeds, every TensorView it hands out has bounds already proven, so
// kernels may index rows without further checks.
//
// Blob checksums are not read by Open (that would touch every byte of a
// many-GB file); VerifyChecksums does it on demand, on all cores.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/arch/arch_spec.h"
#include "runtime/base/mapped_file.h"
#include "runtime/base/status.h"
#include "runtime/pack/expert_profile.h"
#include "runtime/pack/pack_format.h"
#include "runtime/quant/ggml_type.h"
#include "schema/strata_pack_generated.h"

namespace strata {

struct TensorView {
  std::string_view name;
  TensorRole role = TensorRole::kCount;
  int32_t layer = -1;
  GgmlType type = GgmlType::kF32;
  uint32_t rank = 0;
  std::array<uint64_t, 4> shape = {1, 1, 1, 1};  // ggml order; unused dims are 1
  uint64_t row_bytes = 0;
  uint32_t expert_count = 0;    // > 0 for expert tensors
  uint64_t expert_stride = 0;   // bytes per expert
  std::span<const uint8_t> data;
  int32_t decode_copy = -1;     // index of a Q8_0 decode copy, or -1
  bool is_decode_copy = false;  // this tensor is a decode copy of another
  uint32_t index = 0;           // index in the manifest's tensor table

  uint64_t rows() const { return shape[1] * shape[2] * shape[3]; }
  // Rows of one expert (shape[1]) and its bytes. REQUIRES: expert_count > 0, e < expert_count.
  std::span<const uint8_t> Expert(uint32_t e) const { return data.subspan(e * expert_stride, expert_stride); }
  const uint8_t* Row(uint64_t r) const { return data.data() + r * row_bytes; }
};

struct PackOpenOptions {
  // Also verify every blob's checksum at open (slow on big packs).
  bool verify_checksums = false;
  int threads = 0;  // 0: all cores
};

struct ChecksumReport {
  uint64_t bytes = 0;
  double seconds = 0;
  double gb_per_s = 0;
  int threads = 0;
  std::vector<std::string> failures;  // one message per bad blob
};

class Pack {
 public:
  static Result<std::unique_ptr<Pack>> Open(const std::string& path, const PackOpenOptions& options = {});
  // The same checks on bytes already in memory (tests, fuzzing). The caller
  // keeps `bytes` alive as long as the Pack.
  static Result<std::unique_ptr<Pack>> FromBytes(const std::string& name, std::span<const uint8_t> bytes);

  const std::string& path() const { return name_; }
  uint64_t file_size() const { return bytes_.size(); }
  const pack::PackHeader& header() const { return header_; }
  const fb::Manifest& manifest() const { return *manifest_; }
  std::span<const uint8_t> file_bytes() const { return bytes_; }
  std::span<const uint8_t> manifest_bytes() const;

  Arch arch() const { return arch_; }
  const HParams& hparams() const { return hparams_; }

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* Find(std::string_view name) const;
  // The tensor with this role in this layer (-1: global), or nullptr.
  // Never a decode copy: a tensor's copy is tensors()[t->decode_copy].
  const TensorView* Find(TensorRole role, int32_t layer = -1) const;
  // The expert profile (checked at open), or nullptr when the pack has none.
  const ExpertProfile* expert_profile() const { return profile_ ? &*profile_ : nullptr; }

  // Verifies every blob's XXH3-64 on `threads` threads (0: all cores).
  ChecksumReport VerifyChecksums(int threads = 0) const;

 private:
  Pack() = default;
  Status Load();
  // The parts of Load, in order.
  Status VerifyManifest();
  Status LoadHParams();
  Status CheckBlobs();
  Status LoadTensors();
  Status CheckDecodeCopies();
  Status CheckAgainstSpec();
  MappedFile file_;                 // empty for FromBytes
  std::string name_;
  std::span<const uint8_t> bytes_;  // the whole pack
  pack::PackHeader header_;
  const fb::Manifest* manifest_ = nullptr;
  Arch arch_ = Arch::kVocabOnly;
  HParams hparams_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string_view, size_t> by_name_;
  std::unordered_map<uint64_t, size_t> by_role_;
  std::optional<ExpertProfile> profile_;
};

// Conversions between the manifest and the runtime's types.
HParams HParamsFromManifest(const fb::HyperParams& fb);

}  // namespace strata
