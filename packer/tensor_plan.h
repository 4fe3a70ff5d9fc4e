#pragma once
// Matches a GGUF's tensors against the architecture spec and decides, for
// each tensor the pack will hold, where its bytes come from and what (if
// anything) changes on the way: squeezed trailing size-1 dims, F16/BF16 1-D
// tensors widened to F32. Missing, misshapen, mistyped and unknown tensors are
// refusals with the expected and found shape or type.

#include <cstdint>
#include <string>
#include <vector>

#include "packer/fixes.h"
#include "packer/gguf/gguf_file.h"
#include "packer/pack_options.h"
#include "runtime/arch/arch_spec.h"

namespace strata {

enum class TensorTransform : uint8_t {
  kCopy,        // bytes copied as they are
  kWidenToF32,  // F16 or BF16 converted to F32 (exact)
  kRowGather,   // rows of a fused source tensor (ArchSpec::row_splits), in PlannedTensor::rows' order
  // F32 per-head transposes of source rows (ArchSpec::fused_kv_b's attn_k_b):
  // head h's shape[1] x shape[0] block is the transpose of source rows
  // rows[h * shape[0] ...], dequantized.
  kTransposeHeads,
};
// Whether the tensor's bytes are made from its source's (GatherRows), not read as they are.
inline bool IsGathered(TensorTransform t) {
  return t == TensorTransform::kRowGather || t == TensorTransform::kTransposeHeads;
}

struct PlannedTensor {
  std::string name;
  TensorRole role = TensorRole::kCount;
  int32_t layer = -1;
  const gguf::TensorInfo* source = nullptr;
  GgmlType type = GgmlType::kF32;  // type in the pack
  std::vector<uint64_t> shape;     // logical shape (the spec's rank)
  TensorTransform transform = TensorTransform::kCopy;
  uint64_t bytes = 0;              // size in the pack
  uint64_t row_bytes = 0;
  uint32_t expert_count = 0;
  uint64_t expert_stride = 0;
  std::vector<uint64_t> rows;      // kRowGather: the source's rows this tensor's rows are
};

// The pattern of the spec tensor with this role ("?" if none).
const char* GetTensorPattern(const ArchSpec& spec, TensorRole role);

// The bytes of a kRowGather tensor (its rows copied out of the source) or of
// a kTransposeHeads one.
std::vector<uint8_t> GatherRows(const gguf::GgufModel& model, const PlannedTensor& p);

// Sets hp->tied_output. Problems go to `log`.
std::vector<PlannedTensor> PlanTensors(const gguf::GgufModel& model, Arch arch, HParams* hp,
                                       const PackOptions& options, FixLog* log);

std::string ShapeString(const std::vector<uint64_t>& shape);

}  // namespace strata
