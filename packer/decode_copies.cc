#include "packer/decode_copies.h"

#include <algorithm>
#include <map>

#include "runtime/base/strings.h"
#include "runtime/model/kernel_coverage.h"
#include "runtime/quant/dequantize.h"
#include "runtime/quant/quantize.h"

namespace strata {
namespace {

constexpr uint64_t kCopyChunkBytes = 8u << 20;  // Q8_0 bytes converted per chunk

std::string TensorList(const std::vector<std::string>& names) {
  std::string s = "'" + names.front() + "'";
  if (names.size() > 1) s += StrFormat(" and %zu more", names.size() - 1);
  return s;
}

}  // namespace

DecodeCopyPlan PlanDecodeCopies(const std::vector<PlannedTensor>& plan, const HParams& hp,
                                const PackOptions& options, FixLog* log) {
  DecodeCopyPlan out;
  out.copy.assign(plan.size(), false);
  const bool want = options.decode_copies == DecodeCopyType::kQ8_0;
  std::map<GgmlType, std::vector<std::string>> kernel_less, slow;
  for (size_t i = 0; i < plan.size(); ++i) {
    const PlannedTensor& p = plan[i];
    const auto rank = static_cast<uint32_t>(p.shape.size());
    if (!IsMultipliedOnCpu(p.role, rank, hp.tied_output)) continue;
    const KernelSupport support = CpuKernelSupport(p.type, kBaselineServingIsa);
    const bool convertible = HasDequantizer(p.type) && p.type != GgmlType::kQ8_0 && p.shape[0] % 32 == 0 &&
                             (p.transform == TensorTransform::kCopy || IsGathered(p.transform));
    bool copy = false;
    if (support == KernelSupport::kNone) {
      if (want && convertible) copy = true;
      else kernel_less[p.type].push_back(p.name);
    } else if (want && convertible && (IsRoutedExpertRole(p.role) || support == KernelSupport::kSlow)) {
      copy = true;
    } else if (support == KernelSupport::kSlow) {
      slow[p.type].push_back(p.name);
    }
    if (copy) {
      out.copy[i] = true;
      ++out.count;
      out.bytes += p.bytes / TypeInfo(p.type).block_bytes * TypeInfo(p.type).block_elems / 32 * 34;
    }
  }
  for (const auto& [type, names] : kernel_less) {
    const bool convertible = HasDequantizer(type) && type != GgmlType::kQ8_0;
    log->Refuse(TensorList(names),
                StrFormat("type %s has no CPU kernel in this build: %zu tensor(s) the CPU multiplies (routed experts "
                          "reaching the CPU expert pool among them) could not be computed%s",
                          std::string(TypeName(type)).c_str(), names.size(),
                          convertible ? "; Q8_0 decode copies would run instead" : " and cannot be converted"),
                convertible ? "--decode-copies q8_0" : "");
  }
  for (const auto& [type, names] : slow)
    log->warnings.push_back(StrFormat(
        "%s has no fast CPU kernel at %s (the baseline serving level): %zu tensor(s) (%s) run the scalar reference "
        "vec_dot, %s a SIMD kernel on a Q8_0 copy (docs/experts.md); --decode-copies q8_0 writes Q8_0 copies that "
        "strata-run reads instead",
        std::string(TypeName(type)).c_str(), std::string(IsaName(kBaselineServingIsa)).c_str(), names.size(),
        TensorList(names).c_str(), kScalarKernelSlowdown));
  return out;
}

void MakeDecodeCopyRows(GgmlType type, const uint8_t* src, uint64_t src_row_bytes, int64_t cols, int64_t rows,
                        uint8_t* dst) {
  std::vector<float> f(static_cast<size_t>(cols));
  const uint64_t dst_row_bytes = static_cast<uint64_t>(cols) / 32 * 34;
  for (int64_t r = 0; r < rows; ++r) {
    DequantizeRowUnchecked(type, src + static_cast<uint64_t>(r) * src_row_bytes, f.data(), cols);
    QuantizeRowQ8_0Unchecked(Q8_0Rule::kGgmlReference, f.data(), dst + static_cast<uint64_t>(r) * dst_row_bytes,
                             cols);
  }
}

Result<BlobInfo> WriteDecodeCopy(PackWriter& w, GgmlType type, std::span<const uint8_t> src, uint64_t row_bytes,
                                 int64_t cols, ThreadPool& pool) {
  if (cols <= 0 || cols % 32 != 0 || row_bytes == 0 || src.size() % row_bytes != 0)
    return Internal("WriteDecodeCopy: rows that are not whole Q8_0 blocks");
  const uint64_t dst_row_bytes = static_cast<uint64_t>(cols) / 32 * 34;
  const int64_t rows = static_cast<int64_t>(src.size() / row_bytes);
  const int64_t chunk_rows = std::max<int64_t>(1, static_cast<int64_t>(kCopyChunkBytes / dst_row_bytes));
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(rows, chunk_rows)) * dst_row_bytes);
  STRATA_RETURN_IF_ERROR(w.BeginBlob());
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - r0);
    pool.ParallelFor(n, [&](int64_t begin, int64_t end) {
      MakeDecodeCopyRows(type, src.data() + static_cast<uint64_t>(r0 + begin) * row_bytes, row_bytes, cols,
                         end - begin, buf.data() + static_cast<uint64_t>(begin) * dst_row_bytes);
    }, 16);
    STRATA_RETURN_IF_ERROR(w.Append({buf.data(), static_cast<size_t>(n) * dst_row_bytes}));
  }
  return w.EndBlob();
}

}  // namespace strata
