// Matrix kernel throughput through FastBackend::MatMul (activation conversion,
// kernel, threads), in GB/s of weights, and a plain memory read for the
// roofline.
//
// Weights stream from memory as in decode: each iteration multiplies the next
// of several copies of the matrix, about 1 GiB in all (more than this host's
// last-level cache), so nothing is reused from cache between iterations.
// "bytes_per_second" is weight bytes of one matrix per MatMul, whatever n is:
// at n = 1 it is the decode rate, at n = 8 / 32 the weights are reused for
// every column inside the kernel and the figure says how far prefill-style
// products get above the memory roofline.
//
// Names: MatMul/<type>/<rows>x<k>/n:<columns>/threads:<t>, MemoryRead/threads:<t>;
// MatMulL3/...: the same with 96 MiB of copies, which this host's L3 holds.
//   ./build/bench/kernels_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// STRATA_ISA=avx2|scalar selects a lower kernel level (the default is the best).

#include <benchmark/benchmark.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/kernels/thread_pool.h"
#include "runtime/model/fast_backend.h"
#include "tests/testing/kernel_check.h"

namespace strata {
namespace {

constexpr uint64_t kStreamBytes = uint64_t{1} << 30;  // 1 GiB of weight copies: from DRAM
constexpr uint64_t kCacheBytes = uint64_t{96} << 20;  // 96 MiB: stays in this host's 480 MiB L3

// Copies of one random matrix filling ~`total` bytes; the last one built is
// kept, since consecutive benchmarks share a matrix.
struct WeightStream {
  GgmlType type;
  int64_t rows, k;
  uint64_t total;
  uint64_t matrix_bytes = 0;
  int copies = 0;
  std::vector<uint8_t> bytes;
};

const WeightStream& Stream(GgmlType type, int64_t rows, int64_t k, uint64_t total) {
  static std::unique_ptr<WeightStream> cached;
  if (cached && cached->type == type && cached->rows == rows && cached->k == k && cached->total == total)
    return *cached;
  cached.reset();  // free the previous one first
  auto s = std::make_unique<WeightStream>();
  s->type = type;
  s->rows = rows;
  s->k = k;
  s->total = total;
  std::mt19937_64 rng(1);
  const std::vector<uint8_t> one = testing::RandomMatrix(type, rows, k, rng);
  s->matrix_bytes = one.size();
  s->copies = static_cast<int>(std::max<uint64_t>(2, total / one.size()));
  s->bytes.resize(one.size() * static_cast<uint64_t>(s->copies));
  for (int c = 0; c < s->copies; ++c) std::memcpy(s->bytes.data() + c * one.size(), one.data(), one.size());
  cached = std::move(s);
  return *cached;
}

FastBackend& Backend(int threads) {
  static std::map<int, std::unique_ptr<FastBackend>> backends;
  auto& b = backends[threads];
  if (!b) {
    Result<std::unique_ptr<FastBackend>> r = FastBackend::Create({threads, std::nullopt});
    if (!r.ok()) {
      fprintf(stderr, "%s\n", r.status().ToString().c_str());
      std::exit(1);
    }
    b = std::move(r.value());
  }
  return *b;
}

void BM_MatMul(benchmark::State& state, GgmlType type, int64_t rows, int64_t k, int64_t n, int threads,
               uint64_t total) {
  const WeightStream& s = Stream(type, rows, k, total);
  FastBackend& backend = Backend(threads);
  std::mt19937_64 rng(2);
  const std::vector<float> x = testing::RandomActivations(n, k, rng);
  std::vector<float> y(static_cast<size_t>(n * rows));
  WeightMatrix w;
  w.type = type;
  w.rows = rows;
  w.cols = k;
  w.row_bytes = s.matrix_bytes / static_cast<uint64_t>(rows);
  int copy = 0;
  for (auto _ : state) {
    w.data = s.bytes.data() + static_cast<uint64_t>(copy) * s.matrix_bytes;
    copy = copy + 1 == s.copies ? 0 : copy + 1;
    backend.MatMul(w, x.data(), n, y.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(s.matrix_bytes));
  state.SetLabel(backend.Choice(type).kernel);
}

// Sum of 1 GiB of 64-bit words split over `threads` threads: the memory read
// rate that bounds decode (the roofline).
void BM_MemoryRead(benchmark::State& state, int threads) {
  static std::vector<uint64_t> buffer;
  if (buffer.empty()) {
    buffer.resize(kStreamBytes / sizeof(uint64_t));
    for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = i;
  }
  ThreadPool pool(threads);
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
  const auto words = static_cast<int64_t>(buffer.size());
  for (auto _ : state) {
    pool.RunTasks(threads, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t lo = words * t / threads, hi = words * (t + 1) / threads;
        const uint64_t* p = buffer.data();
        uint64_t a = 0, b = 0, c = 0, d = 0;  // four chains keep several loads in flight
        for (int64_t i = lo; i + 8 <= hi; i += 8) {  // one cache line per step
          // Prefetched 4 KiB ahead, as the kernels do: this is the read rate
          // a kernel could reach at best.
          _mm_prefetch(reinterpret_cast<const char*>(p + i + 512), _MM_HINT_T0);
          a += p[i] + p[i + 4];
          b += p[i + 1] + p[i + 5];
          c += p[i + 2] + p[i + 6];
          d += p[i + 3] + p[i + 7];
        }
        sums[static_cast<size_t>(t) * 8] = a + b + c + d;
      }
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kStreamBytes));
}

struct ShapeSpec {
  const char* name;
  int64_t rows, k;
  std::vector<int64_t> columns;
};

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  using strata::GgmlType;
  const GgmlType types[] = {GgmlType::kF32,  GgmlType::kF16,   GgmlType::kBF16,  GgmlType::kQ8_0,
                            GgmlType::kQ4_0, GgmlType::kQ5_0,  GgmlType::kQ4_K,  GgmlType::kQ5_K,  GgmlType::kQ6_K,
                            GgmlType::kQ2_K, GgmlType::kQ3_K,  GgmlType::kIQ4_XS, GgmlType::kIQ3_S,
                            GgmlType::kMXFP4, GgmlType::kQ2_0, GgmlType::kIQ4_NL, GgmlType::kNVFP4};
  // rows x k: an expert's gate/up (768 x 2048), its down (2048 x 768), and a
  // slice of the output head (16384 x 2048; the real one has 151936 rows).
  const std::vector<strata::ShapeSpec> shapes = {
      {"768x2048", 768, 2048, {1, 8, 32}},
      {"2048x768", 2048, 768, {1, 8}},
      {"16384x2048", 16384, 2048, {1}},
  };
  for (int threads : {1, 2})
    benchmark::RegisterBenchmark(("MemoryRead/threads:" + std::to_string(threads)).c_str(), strata::BM_MemoryRead,
                                 threads)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  for (GgmlType type : types)
    for (const strata::ShapeSpec& s : shapes)
      for (int64_t n : s.columns)
        for (int threads : {1, 2}) {
          const std::string name = "MatMul/" + std::string(strata::TypeName(type)) + "/" + s.name +
                                   "/n:" + std::to_string(n) + "/threads:" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), strata::BM_MatMul, type, s.rows, s.k, n, threads,
                                       strata::kStreamBytes)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
  // Decode with the weights in L3: the kernels' own rate when memory is not
  // the limit (llama.cpp's 2-core decode is compute-bound, peer-bench.md).
  for (GgmlType type : types)
    for (int threads : {1, 2}) {
      const std::string name =
          "MatMulL3/" + std::string(strata::TypeName(type)) + "/768x2048/n:1/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), strata::BM_MatMul, type, 768, 2048, 1, threads, strata::kCacheBytes)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
