#include "runtime/model/fast_backend.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"
#include "runtime/kernels/vec_dot.h"

namespace strata {
namespace {

// Products smaller than this (weight bytes x columns) run on the calling
// thread: waking the pool would cost more than it saves.
constexpr uint64_t kMinParallelBytes = 64 * 1024;
// A row chunk's weights stay within this many bytes, so they are read from
// memory once and come from L2 for every column block.
constexpr uint64_t kChunkWeightBytes = 256 * 1024;
// Activation columns per kernel call in a chunk (~150 KB of Q8_K at k=2048).
constexpr int64_t kColumnBlock = 64;
// Convert activations on the pool when there are at least this many elements.
constexpr int64_t kMinParallelConvert = 64 * 1024;
// Row chunks are multiples of this (the kernels' largest row tile).
constexpr int64_t kRowQuantum = 4;

}  // namespace

Result<std::unique_ptr<FastBackend>> FastBackend::Create(const Options& options) {
  Result<IsaLevel> isa = options.isa ? ResolveIsa(options.isa, nullptr, HostCpuFeatures()) : SelectIsa();
  if (!isa.ok()) return isa.status().WithContext("fast backend");
  return std::unique_ptr<FastBackend>(new FastBackend(*isa, options.threads));
}

FastBackend::FastBackend(IsaLevel isa, int threads) : isa_(isa), pool_(threads) {
  for (const GgmlTypeInfo& info : AllGgmlTypes()) {
    if (!HasVecDot(info.type)) continue;
    Plan& plan = plans_[static_cast<uint32_t>(info.type)];
    if (const GemmKernel* k = FindGemmKernel(info.type, isa_)) {
      plan = Plan{k->fn, k->act, k};
    } else {
      plan = Plan{&GemmReference, VecDotFormat(info.type), nullptr};
    }
  }
}

std::string FastBackend::name() const {
  return StrFormat("fast (%s, %d thread%s)", std::string(IsaName(isa_)).c_str(), threads(), threads() == 1 ? "" : "s");
}

void FastBackend::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) { pool_.ParallelFor(n, fn); }

const FastBackend::Plan& FastBackend::KernelPlan(GgmlType type, const char* op) const {
  const uint32_t id = static_cast<uint32_t>(type);
  if (id >= kGgmlTypeIdLimit || plans_[id].fn == nullptr) {
    // MakeBackend refuses a model with such a matrix at load, naming it; a
    // call that gets here is a bug in the caller, and no output is better
    // than a wrong one.
    std::fprintf(stderr, "strata: internal error: FastBackend::%s on type %s, which has no kernel\n", op,
                 std::string(TypeName(type)).c_str());
    std::abort();
  }
  return plans_[id];
}

void FastBackend::MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) {
  if (n <= 0 || w.rows <= 0) return;
  const Plan* plan = &KernelPlan(w.type, "MatMul");

  // 1. Activations in the kernel's format.
  const int64_t k = w.cols;
  const uint8_t* act = reinterpret_cast<const uint8_t*>(x);
  uint64_t act_row_bytes = static_cast<uint64_t>(k) * sizeof(float);
  if (plan->act != ActFormat::kF32) {
    act_row_bytes = ActRowBytes(plan->act, k);
    const size_t need = static_cast<size_t>(act_row_bytes * static_cast<uint64_t>(n));
    if (act_buf_.size() < need) act_buf_.resize(need);
    uint8_t* buf = act_buf_.data();
    const ActFormat format = plan->act;
    const IsaLevel isa = isa_;
    auto convert = [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t)
        QuantizeActivationRow(format, isa, x + t * k, buf + static_cast<uint64_t>(t) * act_row_bytes, k);
    };
    if (n * k >= kMinParallelConvert) {
      pool_.ParallelFor(n, convert);
    } else {
      convert(0, n);
    }
    act = buf;
  }

  // 2. Row chunks x all columns, in column blocks.
  GemmArgs base;
  base.type = w.type;
  base.w = w.data;
  base.w_row_bytes = w.row_bytes;
  base.act = act;
  base.act_row_bytes = act_row_bytes;
  base.k = k;
  base.y = y;
  base.ldy = w.rows;
  const GemmFn fn = plan->fn;
  auto run_rows = [&](int64_t r0, int64_t r1) {
    GemmArgs g = base;
    g.w = base.w + static_cast<uint64_t>(r0) * base.w_row_bytes;
    g.rows = r1 - r0;
    for (int64_t c0 = 0; c0 < n; c0 += kColumnBlock) {
      g.act = base.act + static_cast<uint64_t>(c0) * base.act_row_bytes;
      g.cols = std::min(kColumnBlock, n - c0);
      g.y = base.y + c0 * base.ldy + r0;
      fn(g);
    }
  };

  const int64_t threads = pool_.threads();
  const uint64_t weight_bytes = w.row_bytes * static_cast<uint64_t>(w.rows);
  if (threads == 1 || weight_bytes * static_cast<uint64_t>(n) < kMinParallelBytes) {
    run_rows(0, w.rows);
    return;
  }
  const int64_t rows_per = RowsPerChunk(w, n, threads);
  const int64_t chunks = (w.rows + rows_per - 1) / rows_per;
  pool_.RunTasks(chunks, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) run_rows(c * rows_per, std::min(w.rows, (c + 1) * rows_per));
  });
}

void FastBackend::MatMulBatch(std::span<const MatMulJob> jobs) {
  // In slices of kMaxBatchJobs: the job table is part of the backend.
  while (jobs.size() > static_cast<size_t>(kMaxBatchJobs)) {
    RunBatch(jobs.first(static_cast<size_t>(kMaxBatchJobs)));
    jobs = jobs.subspan(static_cast<size_t>(kMaxBatchJobs));
  }
  RunBatch(jobs);
}

void FastBackend::RunBatch(std::span<const MatMulJob> jobs) {
  const auto count = static_cast<int64_t>(jobs.size());
  if (count == 0) return;
  if (count == 1 && !jobs[0].rows) {
    MatMul(jobs[0].w, jobs[0].x, jobs[0].n, jobs[0].y);
    return;
  }
  // 1. Where each job's activations go in the kernel's format. A job with the
  // same rows of the same x in the same format as the job before it (an
  // expert's up after its gate) shares that job's.
  uint64_t act_total = 0;
  int64_t convert_rows = 0, convert_elems = 0, tasks = 0;
  const int64_t threads = pool_.threads();
  for (int64_t i = 0; i < count; ++i) {
    const MatMulJob& j = jobs[static_cast<size_t>(i)];
    BatchItem& b = batch_[static_cast<size_t>(i)];
    b = BatchItem{};
    const Plan* plan = &KernelPlan(j.w.type, "MatMulBatch");
    b.plan = plan;
    b.task_begin = b.task_end = tasks;
    if (j.n <= 0 || j.w.rows <= 0) continue;
    b.act_row_bytes = plan->act == ActFormat::kF32 ? static_cast<uint64_t>(j.w.cols) * sizeof(float)
                                                   : ActRowBytes(plan->act, j.w.cols);
    const MatMulJob* prev = i > 0 ? &jobs[static_cast<size_t>(i - 1)] : nullptr;
    if (plan->act == ActFormat::kF32 && !j.rows) {
      b.in_x = true;  // read in place
    } else if (prev && prev->n == j.n && prev->x == j.x && prev->rows == j.rows && prev->w.cols == j.w.cols &&
               batch_[static_cast<size_t>(i - 1)].plan->act == plan->act && !batch_[static_cast<size_t>(i - 1)].in_x) {
      b.act_offset = batch_[static_cast<size_t>(i - 1)].act_offset;
    } else {
      b.act_offset = act_total;
      b.convert_begin = convert_rows;
      b.converts = true;
      act_total += b.act_row_bytes * static_cast<uint64_t>(j.n);
      convert_rows += j.n;
      convert_elems += j.n * j.w.cols;
    }
    b.rows_per = threads == 1 ? j.w.rows : RowsPerChunk(j.w, j.n, threads);
    tasks += (j.w.rows + b.rows_per - 1) / b.rows_per;
    b.task_end = tasks;
  }
  if (act_buf_.size() < act_total) act_buf_.resize(static_cast<size_t>(act_total));
  uint8_t* const buf = act_buf_.data();
  const IsaLevel isa = isa_;

  // 2. Convert: tasks over all rows that need it, each finding its job.
  if (convert_rows > 0) {
    auto convert = [&](int64_t begin, int64_t end) {
      int64_t i = 0;
      for (int64_t r = begin; r < end; ++r) {
        while (!batch_[static_cast<size_t>(i)].converts ||
               r >= batch_[static_cast<size_t>(i)].convert_begin + jobs[static_cast<size_t>(i)].n)
          ++i;
        const MatMulJob& j = jobs[static_cast<size_t>(i)];
        const BatchItem& b = batch_[static_cast<size_t>(i)];
        const int64_t t = r - b.convert_begin;
        const float* src = j.x + (j.rows ? j.rows[t] : t) * j.w.cols;
        uint8_t* dst = buf + b.act_offset + static_cast<uint64_t>(t) * b.act_row_bytes;
        if (b.plan->act == ActFormat::kF32) {
          std::memcpy(dst, src, static_cast<size_t>(j.w.cols) * sizeof(float));
        } else {
          QuantizeActivationRow(b.plan->act, isa, src, dst, j.w.cols);
        }
      }
    };
    if (threads > 1 && convert_rows > 1 && convert_elems >= kMinParallelConvert) {
      pool_.ParallelFor(convert_rows, convert);
    } else {
      convert(0, convert_rows);
    }
  }

  // 3. The row chunks of every job as one set of tasks, in job order.
  auto run_task = [&](int64_t task, int64_t& i) {
    while (task >= batch_[static_cast<size_t>(i)].task_end) ++i;
    const MatMulJob& j = jobs[static_cast<size_t>(i)];
    const BatchItem& b = batch_[static_cast<size_t>(i)];
    const int64_t r0 = (task - b.task_begin) * b.rows_per, r1 = std::min(j.w.rows, r0 + b.rows_per);
    GemmArgs g;
    g.type = j.w.type;
    g.w = j.w.data + static_cast<uint64_t>(r0) * j.w.row_bytes;
    g.w_row_bytes = j.w.row_bytes;
    g.act_row_bytes = b.act_row_bytes;
    g.k = j.w.cols;
    g.ldy = j.w.rows;
    g.rows = r1 - r0;
    const uint8_t* act = b.in_x ? reinterpret_cast<const uint8_t*>(j.x) : buf + b.act_offset;
    for (int64_t c0 = 0; c0 < j.n; c0 += kColumnBlock) {
      g.act = act + static_cast<uint64_t>(c0) * b.act_row_bytes;
      g.cols = std::min(kColumnBlock, j.n - c0);
      g.y = j.y + c0 * j.w.rows + r0;
      b.plan->fn(g);
    }
  };
  if (threads == 1) {
    int64_t i = 0;
    for (int64_t t = 0; t < tasks; ++t) run_task(t, i);
    return;
  }
  pool_.RunTasks(tasks, [&](int64_t begin, int64_t end) {
    int64_t i = 0;
    for (int64_t t = begin; t < end; ++t) run_task(t, i);
  });
}

// About 4 chunks per thread (a descheduled thread then holds back little), in
// multiples of kRowQuantum rows; with several columns each at most
// kChunkWeightBytes (reused from L2 per column block). One column reads each
// weight once: its chunks stay long, streams the prefetch keeps ahead of.
int64_t FastBackend::RowsPerChunk(const WeightMatrix& w, int64_t n, int64_t threads) {
  int64_t rows_per = (w.rows + 4 * threads - 1) / (4 * threads);
  const auto cache_rows = static_cast<int64_t>(kChunkWeightBytes / std::max<uint64_t>(w.row_bytes, 1));
  if (n > 1) rows_per = std::min(rows_per, cache_rows);
  rows_per = std::max<int64_t>(rows_per, 1);
  return (rows_per + kRowQuantum - 1) / kRowQuantum * kRowQuantum;
}

bool FastBackend::CanMultiply(GgmlType type) const {
  const uint32_t id = static_cast<uint32_t>(type);
  return id < kGgmlTypeIdLimit && plans_[id].fn != nullptr;
}

uint64_t FastBackend::ScratchBytes(GgmlType type, int64_t cols, int64_t n) const {
  const uint32_t id = static_cast<uint32_t>(type);
  if (id >= kGgmlTypeIdLimit || plans_[id].fn == nullptr || plans_[id].act == ActFormat::kF32 || n <= 0) return 0;
  return ActRowBytes(plans_[id].act, cols) * static_cast<uint64_t>(n);
}

uint64_t FastBackend::BatchScratchBytes(GgmlType type, int64_t cols, int64_t n) const {
  const uint32_t id = static_cast<uint32_t>(type);
  if (id >= kGgmlTypeIdLimit || plans_[id].fn == nullptr || n <= 0) return 0;
  const ActFormat act = plans_[id].act;
  return (act == ActFormat::kF32 ? static_cast<uint64_t>(cols) * sizeof(float) : ActRowBytes(act, cols)) *
         static_cast<uint64_t>(n);
}

Status FastBackend::ReserveScratch(uint64_t bytes) {
  if (bytes <= act_buf_.size()) return Status::Ok();
  return CheckedResize(act_buf_, static_cast<size_t>(bytes), "the fast backend's activation buffer");
}

FastBackend::KernelChoice FastBackend::Choice(GgmlType type) const {
  KernelChoice choice;
  choice.type = type;
  const uint32_t id = static_cast<uint32_t>(type);
  if (id >= kGgmlTypeIdLimit || plans_[id].fn == nullptr) {
    choice.kernel = "none (no vec_dot for this type)";
    return choice;
  }
  const Plan& plan = plans_[id];
  choice.supported = true;
  choice.act = plan.act;
  if (plan.kernel != nullptr) {
    choice.fast = true;
    choice.isa = plan.kernel->isa;
    choice.kernel = plan.kernel->name;
  } else {
    choice.kernel = "scalar reference vec_dot";
  }
  return choice;
}

std::vector<FastBackend::KernelChoice> FastBackend::Report() const {
  std::vector<KernelChoice> out;
  for (const GgmlTypeInfo& info : AllGgmlTypes())
    if (info.weight) out.push_back(Choice(info.type));
  return out;
}

std::vector<GgmlType> FastBackend::SlowTypes(std::span<const GgmlType> types) const {
  std::vector<GgmlType> slow;
  for (GgmlType t : types)
    if (!Choice(t).fast && std::find(slow.begin(), slow.end(), t) == slow.end()) slow.push_back(t);
  return slow;
}

std::string FastBackend::Describe(std::span<const GgmlType> types) const {
  std::string out;
  for (GgmlType t : types) {
    const KernelChoice c = Choice(t);
    out += StrFormat("%-8s %-26s (activations %s)%s\n", std::string(TypeName(t)).c_str(), c.kernel.c_str(),
                     std::string(ActFormatName(c.act)).c_str(), c.supported && !c.fast ? "  SLOW" : "");
  }
  return out;
}

}  // namespace strata
