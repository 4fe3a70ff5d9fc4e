// Speed of Q8_0 decode copies against the native expert weights, per type:
// one MoE layer's routed-expert work at Qwen3-30B-A3B's shapes (8 of the
// experts, each gate 768x2048, up 768x2048, down 2048x768: SwiGLU) through
// FastBackend, reading the native blobs or their Q8_0 copies (made exactly as
// strata-pack makes them, packer/decode_copies.h).
//
// The experts are one layer's 128 (their Q8_0 copies take 640 MB) and each
// step takes the next 8, so weights stream from memory as in decode.
// Prints one Markdown row per (type, columns, threads): expert-layer steps
// per second and GB/s of the bytes read, native and copies, and the speedup.
//
//   ./build/bench/decode_copies_bench [--threads 1,2] [--columns 1,16] [--seconds 1] [TYPE ...]
// STRATA_ISA=avx2 measures the AVX2 kernels on an AVX-512 machine.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "packer/decode_copies.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/kernel_coverage.h"
#include "runtime/model/ops.h"
#include "tests/testing/random_blocks.h"

namespace strata {
namespace {

constexpr int64_t kEmbd = 2048, kFf = 768, kPool = 128, kUsed = 8;

struct Experts {
  GgmlType type;
  // gate, up: kPool x [kFf rows of kEmbd]; down: kPool x [kEmbd rows of kFf].
  std::vector<uint8_t> gate, up, down;
  uint64_t gate_row = 0, down_row = 0;  // row bytes
};

Experts MakeNative(GgmlType type, std::mt19937_64& rng) {
  Experts e;
  e.type = type;
  e.gate_row = *RowBytes(type, kEmbd);
  e.down_row = *RowBytes(type, kFf);
  auto fill = [&](std::vector<uint8_t>& v, uint64_t row_bytes, int64_t rows) {
    v.resize(row_bytes * static_cast<uint64_t>(rows * kPool));
    testing::FillRandomBlocks(type, v.size() / TypeInfo(type).block_bytes, rng, v.data());
  };
  fill(e.gate, e.gate_row, kFf);
  fill(e.up, e.gate_row, kFf);
  fill(e.down, e.down_row, kEmbd);
  return e;
}

Experts MakeCopies(const Experts& n, ThreadPool& pool) {
  Experts c;
  c.type = GgmlType::kQ8_0;
  c.gate_row = *RowBytes(GgmlType::kQ8_0, kEmbd);
  c.down_row = *RowBytes(GgmlType::kQ8_0, kFf);
  auto conv = [&](const std::vector<uint8_t>& src, uint64_t src_row, std::vector<uint8_t>& dst, uint64_t dst_row,
                  int64_t cols) {
    const auto rows = static_cast<int64_t>(src.size() / src_row);
    dst.resize(dst_row * static_cast<uint64_t>(rows));
    pool.ParallelFor(rows, [&](int64_t b, int64_t e) {
      MakeDecodeCopyRows(n.type, src.data() + static_cast<uint64_t>(b) * src_row, src_row, cols, e - b,
                         dst.data() + static_cast<uint64_t>(b) * dst_row);
    }, 64);
  };
  conv(n.gate, n.gate_row, c.gate, c.gate_row, kEmbd);
  conv(n.up, n.gate_row, c.up, c.gate_row, kEmbd);
  conv(n.down, n.down_row, c.down, c.down_row, kFf);
  return c;
}

struct Rate {
  double steps_per_s = 0;
  double gb_per_s = 0;
};

// Runs SwiGLU for kUsed experts per step, `columns` activation rows each,
// for about `seconds`.
Rate Measure(const Experts& ex, FastBackend& be, int64_t columns, double seconds) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(columns * kEmbd)), g(static_cast<size_t>(columns * kFf)),
      u(g.size()), y(x.size());
  for (float& v : x) v = nd(rng);
  auto matrix = [&](const std::vector<uint8_t>& bytes, uint64_t row_bytes, int64_t rows, int64_t cols, int64_t e) {
    WeightMatrix w;
    w.type = ex.type;
    w.row_bytes = row_bytes;
    w.rows = rows;
    w.cols = cols;
    w.data = bytes.data() + static_cast<uint64_t>(e * rows) * row_bytes;
    return w;
  };
  const uint64_t bytes_per_step = kUsed * (2 * ex.gate_row * kFf + ex.down_row * kEmbd);
  int64_t next = 0, steps = 0;
  auto step = [&] {
    for (int64_t k = 0; k < kUsed; ++k) {
      const int64_t e = next;
      next = (next + 1) % kPool;
      be.MatMul(matrix(ex.gate, ex.gate_row, kFf, kEmbd, e), x.data(), columns, g.data());
      be.MatMul(matrix(ex.up, ex.gate_row, kFf, kEmbd, e), x.data(), columns, u.data());
      for (size_t i = 0; i < g.size(); ++i) g[i] = ops::SiluF(g[i]) * u[i];
      be.MatMul(matrix(ex.down, ex.down_row, kEmbd, kFf, e), g.data(), columns, y.data());
    }
  };
  for (int i = 0; i < 2; ++i) step();  // warm up
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds || steps < 3) {
    step();
    ++steps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  Rate r;
  r.steps_per_s = static_cast<double>(steps) / elapsed;
  r.gb_per_s = r.steps_per_s * static_cast<double>(bytes_per_step) / 1e9;
  return r;
}

std::vector<int64_t> ParseList(const char* s) {
  std::vector<int64_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(std::atoll(item.c_str()));
  return v;
}

int Main(int argc, char** argv) {
  std::vector<int64_t> threads = {1, 2}, columns = {1, 16};
  double seconds = 1.0;
  std::vector<GgmlType> types;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = ParseList(argv[++i]);
    else if (a == "--columns" && i + 1 < argc) columns = ParseList(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (const GgmlTypeInfo* t = FindGgmlTypeByName(a)) types.push_back(t->type);
    else {
      std::fprintf(stderr, "decode_copies_bench: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (types.empty())
    types = {GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S, GgmlType::kIQ3_XXS, GgmlType::kIQ1_S,
             GgmlType::kIQ1_M,   GgmlType::kTQ1_0,  GgmlType::kQ2_0,  GgmlType::kQ2_K,    GgmlType::kIQ3_S,
             GgmlType::kQ4_K,    GgmlType::kIQ4_XS, GgmlType::kMXFP4};
  ThreadPool convert_pool(0);
  std::printf("| type | kernel | columns | threads | native steps/s | native GB/s | copies steps/s | copies GB/s | "
              "speedup |\n|---|---|---|---|---|---|---|---|---|\n");
  for (GgmlType type : types) {
    std::mt19937_64 rng(1);
    const Experts native = MakeNative(type, rng);
    const Experts copies = MakeCopies(native, convert_pool);
    for (int64_t t : threads) {
      auto be = FastBackend::Create({static_cast<int>(t), std::nullopt});
      if (!be.ok()) {
        std::fprintf(stderr, "%s\n", be.status().message().c_str());
        return 1;
      }
      for (int64_t n : columns) {
        const Rate a = Measure(native, **be, n, seconds), b = Measure(copies, **be, n, seconds);
        std::printf("| %s | %s | %lld | %lld | %.1f | %.2f | %.1f | %.2f | %.2fx |\n",
                    std::string(TypeName(type)).c_str(), (*be)->Choice(type).kernel.c_str(),
                    static_cast<long long>(n), static_cast<long long>(t), a.steps_per_s, a.gb_per_s,
                    b.steps_per_s, b.gb_per_s, b.steps_per_s / a.steps_per_s);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) { return strata::Main(argc, argv); }
