// Attention inner loops (runtime/kernels/attention.h) at each ISA level this
// CPU runs: one query head against n cached keys of width d, the scores then
// the weighted sum of the values, rows 4 KV heads apart as in a Qwen3 cache.
// The cache buffer is 64-byte aligned like SequenceState's; the "/offset:16"
// runs start it 16 bytes later (malloc's own alignment) to show what the
// alignment is worth. items_per_second counts keys; compare within one run.
// AttentionBlock: the blocked kernel over 8 or 32 rows sharing a KV head, on
// an F32, F16 or Q8_0 cache (--kv-type); kv_bytes: the K and V bytes a call
// reads.
//   ./build/bench/attention_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/base/checked_alloc.h"
#include "runtime/kernels/attention.h"
#include "runtime/quant/quantize.h"

namespace strata::kernels {
namespace {

void BM_AttentionHead(benchmark::State& state, IsaLevel level, int64_t d, int64_t n, int64_t offset_floats) {
  const AttnKernels& k = AttnKernelsFor(level);
  const int64_t stride = 4 * d;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  AlignedVector<float> q(static_cast<size_t>(d)), buf(static_cast<size_t>(n * stride + offset_floats)),
      scores(static_cast<size_t>(n)), o(static_cast<size_t>(d));
  float* kv = buf.data() + offset_floats;
  for (float& x : q) x = u(rng);
  for (float& x : buf) x = u(rng);
  for (auto _ : state) {
    k.scores(q.data(), kv, stride, n, d, 0.088f, scores.data());
    for (float& s : scores) s *= 1.0f / static_cast<float>(n);  // stands in for the softmax
    std::fill(o.begin(), o.end(), 0.0f);
    k.mix(scores.data(), kv + d, stride, n, d, o.data());
    benchmark::DoNotOptimize(o.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// The blocked kernel (AttnBlockFn) on a block of `rows` query rows sharing
// one KV head, each seeing all n keys (the reference is row by row); rows 8:
// one decode step of Qwen3's 32/4 heads; rows 32: 4 prompt tokens x 8.
// items_per_second counts row x key pairs, so levels and row counts compare.
void BM_AttentionBlock(benchmark::State& state, IsaLevel level, int64_t rows, int64_t d, int64_t n, KvType t) {
  const AttnKernels& k = AttnKernelsFor(level);
  // Rows of 4 KV heads (Qwen3's cache) stored as t; K is head 0, V head 1.
  const int64_t head = KvHeadBytes(t, d), stride = 4 * head;
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  AlignedVector<float> q(static_cast<size_t>(rows * d)), o(static_cast<size_t>(rows * d)),
      scratch(static_cast<size_t>(std::max(AttnBlockScratchFloats(rows, d, d), n))), x(static_cast<size_t>(4 * d));
  AlignedVector<uint8_t> buf(static_cast<size_t>(n * stride));
  for (float& v : q) v = u(rng);
  for (int64_t j = 0; j < n; ++j) {
    for (float& v : x) v = u(rng);
    uint8_t* row = buf.data() + j * stride;
    if (t == KvType::kF16) Fp32RowToFp16Unchecked(x.data(), row, 4 * d);
    else if (t == KvType::kQ8_0) QuantizeRowQ8_0Unchecked(Q8_0Rule::kGgmlX86Simd, x.data(), row, 4 * d);
    else std::memcpy(row, x.data(), static_cast<size_t>(stride));
  }
  std::vector<const float*> qp;
  std::vector<float*> op;
  std::vector<int64_t> nk(static_cast<size_t>(rows), n);
  for (int64_t r = 0; r < rows; ++r) {
    qp.push_back(q.data() + r * d);
    op.push_back(o.data() + r * d);
  }
  AttnBlockArgs a;
  a.q = qp.data();
  a.n_keys = nk.data();
  a.o = op.data();
  a.rows = rows;
  a.K = buf.data();
  a.k_stride = stride;
  a.V = buf.data() + head;
  a.v_stride = stride;
  a.kv = t;
  a.dk = d;
  a.dv = d;
  a.scale = 0.088f;
  a.scratch = scratch.data();
  for (auto _ : state) {
    k.block(a);
    benchmark::DoNotOptimize(o.data());
  }
  state.SetItemsProcessed(state.iterations() * rows * n);
  // K and V bytes read per call: the cache traffic a decode step pays.
  state.counters["kv_bytes"] = static_cast<double>(2 * n * head);
}

}  // namespace
}  // namespace strata::kernels

int main(int argc, char** argv) {
  using namespace strata;
  for (IsaLevel level : kAllIsaLevels) {
    if (!CpuSupports(level)) continue;
    for (int64_t d : {128, 256})
      for (int64_t n : {64, 512, 4096}) {
        const std::string name = "AttentionHead/" + std::string(IsaName(level)) + "/d:" + std::to_string(d) +
                                 "/keys:" + std::to_string(n);
        benchmark::RegisterBenchmark(name.c_str(), kernels::BM_AttentionHead, level, d, n, int64_t{0})
            ->Unit(benchmark::kMicrosecond);
        if (level != IsaLevel::kScalar && d == 128 && n <= 512)
          benchmark::RegisterBenchmark((name + "/offset:16").c_str(), kernels::BM_AttentionHead, level, d, n,
                                       int64_t{4})
              ->Unit(benchmark::kMicrosecond);
      }
  }
  for (IsaLevel level : kAllIsaLevels) {
    if (!CpuSupports(level)) continue;
    for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0})
      for (int64_t rows : {8, 32})
        for (int64_t n : {512, 4096, 16384}) {
          if (level == IsaLevel::kScalar && n > 4096) continue;
          const std::string name = "AttentionBlock/" + std::string(IsaName(level)) + "/" +
                                   std::string(KvTypeName(t)) + "/rows:" + std::to_string(rows) +
                                   "/d:128/keys:" + std::to_string(n);
          benchmark::RegisterBenchmark(name.c_str(), kernels::BM_AttentionBlock, level, rows, int64_t{128}, n, t)
              ->Unit(benchmark::kMicrosecond);
        }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
