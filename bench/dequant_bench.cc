// Throughput of the scalar reference dequantizer, per ggml type: 4096 rows of
// 256 elements (random valid blocks), dequantized row by row. Bytes processed
// are bytes of quantized input, so "bytes_per_second" is GB/s read.
//
//   ./build/bench/dequant_bench --benchmark_min_time=0.2

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "runtime/quant/dequantize.h"
#include "tests/testing/random_blocks.h"

namespace strata {
namespace {

constexpr int64_t kRows = 4096;
constexpr int64_t kRowElems = 256;

void BM_DequantizeRow(benchmark::State& state, GgmlType type) {
  const GgmlTypeInfo& info = TypeInfo(type);
  const uint64_t blocks_per_row = kRowElems / info.block_elems;
  const size_t row_bytes = blocks_per_row * info.block_bytes;
  std::vector<uint8_t> src(row_bytes * kRows);
  std::mt19937_64 rng(1);
  testing::FillRandomBlocks(type, blocks_per_row * kRows, rng, src.data());
  std::vector<float> dst(kRowElems * kRows);
  for (auto _ : state) {
    for (int64_t r = 0; r < kRows; ++r)
      DequantizeRowUnchecked(type, src.data() + r * row_bytes, dst.data() + r * kRowElems, kRowElems);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(src.size()));
  state.counters["Melem/s"] = benchmark::Counter(static_cast<double>(state.iterations() * kRows * kRowElems) / 1e6,
                                                 benchmark::Counter::kIsRate);
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  for (const strata::GgmlTypeInfo& info : strata::AllGgmlTypes()) {
    if (!strata::HasDequantizer(info.type) || strata::kRowElems % info.block_elems != 0) continue;
    benchmark::RegisterBenchmark(("Dequantize/" + std::string(info.name)).c_str(), strata::BM_DequantizeRow,
                                 info.type)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
