#pragma once
// Q8_0 decode copies and kernel coverage at pack time (docs/experts.md).
//
// Coverage: every tensor the CPU multiplies must have a kernel
// (runtime/model/kernel_coverage.h). A type with no kernel at all is
// converted (a decode copy, with --decode-copies q8_0) or refused with the
// flag that converts it. A type with only the scalar kernel (no fast kernel at
// AVX2, the baseline serving level) is a warning unless it gets a copy.
//
// With --decode-copies q8_0 a copy is written for every routed expert tensor
// (ffn_{gate,up,down}_exps) and every other multiplied matrix whose type has
// no fast kernel at AVX2; not for tensors that already are Q8_0, nor for rows
// that are not a whole number of 32-element blocks (F32/F16/BF16 only; those
// have fast kernels anyway).
//
// A copy is made row by row with the reference dequantizer and the
// reference Q8_0 quantizer (ggml's quantize_row_q8_0_ref, the rule
// llama-quantize uses for Q8_0 weights), so it is deterministic and any row
// can be recomputed to check it (strata-validate does).

#include <cstdint>
#include <string>
#include <vector>

#include "packer/fixes.h"
#include "packer/pack_options.h"
#include "packer/pack_writer.h"
#include "packer/tensor_plan.h"
#include "runtime/arch/arch_spec.h"
#include "runtime/kernels/thread_pool.h"

namespace strata {

// The suffix of a copy's tensor name: "blk.0.ffn_up_exps.weight.decode_q8_0".
inline constexpr const char* kDecodeCopySuffix = ".decode_q8_0";

struct DecodeCopyPlan {
  std::vector<bool> copy;  // per planned tensor: write a Q8_0 copy after it
  size_t count = 0;
  uint64_t bytes = 0;      // bytes of all copies
};

// Decides the copies and checks coverage. Refusals and warnings go to `log`.
DecodeCopyPlan PlanDecodeCopies(const std::vector<PlannedTensor>& plan, const HParams& hp,
                                const PackOptions& options, FixLog* log);

// Q8_0 copy of `rows` rows of `cols` elements of `type` (row stride
// src_row_bytes) into dst (rows * RowBytes(Q8_0, cols) bytes).
// REQUIRES: HasDequantizer(type); cols a multiple of 32 and of type's block.
void MakeDecodeCopyRows(GgmlType type, const uint8_t* src, uint64_t src_row_bytes, int64_t cols, int64_t rows,
                        uint8_t* dst);

// Writes the copy of a whole tensor (`src`: its bytes, rows of shape[0]) as
// one blob, converting row chunks on `pool`.
Result<BlobInfo> WriteDecodeCopy(PackWriter& w, GgmlType type, std::span<const uint8_t> src, uint64_t row_bytes,
                                 int64_t cols, ThreadPool& pool);

}  // namespace strata
