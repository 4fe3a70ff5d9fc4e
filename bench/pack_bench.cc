// GGUF open-and-index time, pack throughput and checksum verification
// throughput on a multi-GB synthetic model (Qwen3-30B-A3B layer shapes,
// Q4_K_M-like mix), plus this machine's sequential write and read speeds
// for comparison.
//
//   ./build/bench/pack_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//   STRATA_BENCH_DIR=/some/disk  (where the multi-GB files go; default build/bench-data)
//   STRATA_BENCH_LAYERS=N        (default 4: about 2.4 GB)

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "packer/gguf/gguf_file.h"
#include "packer/packer.h"
#include "runtime/base/atomic_file.h"
#include "runtime/base/mapped_file.h"
#include "runtime/pack/pack_reader.h"
#include "tests/gguf_writer/synthetic_model.h"

namespace {

using namespace strata;

std::string BenchDir() {
  const char* d = std::getenv("STRATA_BENCH_DIR");
  std::string dir = d ? d : std::string(STRATA_BINARY_DIR) + "/bench-data";
  std::filesystem::create_directories(dir);
  return dir;
}

// The synthetic GGUF, made once and kept for later runs.
const std::string& BigGguf() {
  static std::string path = [] {
    uint32_t layers = std::getenv("STRATA_BENCH_LAYERS") ? static_cast<uint32_t>(std::atoi(std::getenv("STRATA_BENCH_LAYERS"))) : 4;
    std::string p = BenchDir() + "/qwen3-30b-a3b-shape-" + std::to_string(layers) + "L-q4km.gguf";
    if (!FileExists(p)) {
      std::fprintf(stderr, "pack_bench: writing %s (once)\n", p.c_str());
      testing::SyntheticModelSpec s;
      s.arch = Arch::kQwen3Moe;
      s.hp = testing::Qwen3_30BA3BShape(layers);
      s.matrix_type = GgmlType::kQ4_K;
      s.type_by_role = {{TensorRole::kOutput, GgmlType::kQ6_K}, {TensorRole::kAttnV, GgmlType::kQ6_K}};
      auto b = testing::BuildSyntheticModel(s);
      if (!b.ok() || !b->WriteFile(p).ok()) {
        std::fprintf(stderr, "pack_bench: cannot write %s\n", p.c_str());
        std::exit(1);
      }
    }
    return p;
  }();
  return path;
}

const std::string& BigPack() {
  static std::string path = [] {
    std::string p = BenchDir() + "/big.strata";
    auto m = gguf::GgufModel::Open(BigGguf());
    PackOptions o;
    o.output = p;
    o.probe = false;
    if (!m.ok() || !PackModel(*m, o).ok()) std::exit(1);
    return p;
  }();
  return path;
}

void BM_GgufOpenAndIndex(benchmark::State& state) {
  const std::string& p = BigGguf();
  uint64_t bytes = 0;
  for (auto _ : state) {
    auto m = gguf::GgufModel::Open(p);
    if (!m.ok()) state.SkipWithError(m.status().message().c_str());
    bytes = m->total_file_bytes();
    benchmark::DoNotOptimize(m->tensors().size());
  }
  state.counters["file_GB"] = static_cast<double>(bytes) / 1e9;
}
BENCHMARK(BM_GgufOpenAndIndex)->Unit(benchmark::kMillisecond);

void BM_PackThroughput(benchmark::State& state) {
  auto m = gguf::GgufModel::Open(BigGguf());
  if (!m.ok()) return state.SkipWithError(m.status().message().c_str());
  PackOptions o;
  o.output = BenchDir() + "/bench-out.strata";
  o.probe = false;
  uint64_t bytes = 0;
  for (auto _ : state) {
    auto r = PackModel(*m, o);
    if (!r.ok() || !r->written) return state.SkipWithError("pack failed");
    bytes = r->pack_bytes;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  std::filesystem::remove(o.output);
}
BENCHMARK(BM_PackThroughput)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_VerifyChecksums(benchmark::State& state) {
  auto p = Pack::Open(BigPack());
  if (!p.ok()) return state.SkipWithError(p.status().message().c_str());
  uint64_t bytes = 0;
  for (auto _ : state) {
    ChecksumReport r = (*p)->VerifyChecksums(static_cast<int>(state.range(0)));
    if (!r.failures.empty()) return state.SkipWithError("checksum mismatch");
    bytes = r.bytes;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
}
BENCHMARK(BM_VerifyChecksums)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// This disk's sequential write speed (through the page cache, synced at the
// end, as the packer writes) and read speed of a mapped file: the ceilings.
void BM_DiskWrite(benchmark::State& state) {
  const size_t total = size_t{1} << 30;
  std::vector<uint8_t> chunk(8 << 20, 0x5A);
  std::string p = BenchDir() + "/write-test.bin";
  for (auto _ : state) {
    auto w = AtomicFileWriter::Create(p);
    for (size_t done = 0; done < total; done += chunk.size())
      if (!w->Write(chunk).ok()) return state.SkipWithError("write failed");
    if (!w->Commit().ok()) return state.SkipWithError("commit failed");
  }
  state.SetBytesProcessed(static_cast<int64_t>(total) * state.iterations());
  std::filesystem::remove(p);
}
BENCHMARK(BM_DiskWrite)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_MappedRead(benchmark::State& state) {
  auto f = MappedFile::Open(BigPack());
  if (!f.ok()) return state.SkipWithError("map failed");
  for (auto _ : state) {
    uint64_t sum = 0;
    const uint8_t* d = f->data();
    for (uint64_t i = 0; i + 8 <= f->size(); i += 64) {
      uint64_t v;
      std::memcpy(&v, d + i, 8);
      sum += v;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<int64_t>(f->size()) * state.iterations());
}
BENCHMARK(BM_MappedRead)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
