#pragma once
// The execution seam (docs/backends.md).
//
// Backend: what the forward pass (forward.cc) runs on. A backend owns the
// memory a run works in: the weights it was given (Bind), the KV cache and
// recurrent state of every sequence (SequenceState holds a handle), the
// pass's activations and scratch (Workspace). The forward pass never holds a
// pointer into that memory: it names a pass's activations (Act), weights by
// their TensorView and states by handle, and calls ops, each returning a
// Status. Host memory crosses the seam only through Upload and Download (a
// pass's token ids in, its logits rows out, routing for an observer, rows for
// an ExpertExecutor), and the backend counts every byte (TransferCounts).
//
// The ops are a layer's parts, coarse enough that a device backend keeps a
// whole layer on the device: embedding gather (BeginPass), RMSNorm, residual
// add, attention (Q/K/V products, QK-norm, RoPE normal/NeoX, KV-cache append,
// grouped-query attention, plain or gated, output product), the gated
// delta-net (products, convolution, the recurrence step or chunk, gated norm,
// output product), the dense SwiGLU FFN, MoE (router, softmax, top-k,
// renormalization, the selected experts' SwiGLU, weighted sum), the shared
// expert with its gate, and the output head (final norm, logits, download).
//
// A backend also answers the memory plan (docs/memory-plan.md): where its
// buffers live (BufferPlace: host RAM or a device), how much a pass's
// workspace, its scratch and its copy of the weights take, and lines of its
// own (AddPlanLines). And it holds the device tier of the expert pool
// (runtime/experts/expert_slots.h): the slots are its memory (Allocate,
// Upload), and an expert runs from a slot through SlotSwiGlu.
//
// CpuBackend implements every op on host memory, over a matrix engine
// (MatMul, ParallelFor, attention inner loops) that FastBackend and
// ReferenceBackend provide. SimBackend (sim_backend.h) runs the same ops on
// memory the forward pass cannot touch, to prove the seam.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/arch/arch_spec.h"
#include "runtime/kernels/attention.h"
#include "runtime/model/backend_buffer.h"
#include "runtime/model/kernel_coverage.h"
#include "runtime/model/model.h"
#include "runtime/model/pass.h"
#include "runtime/model/plan_line.h"
#include "runtime/model/sequence_state.h"
#include "runtime/model/workspace.h"

namespace strata {

// The activations of the pass in progress, each n_tokens x n_embd floats.
enum class Act : uint8_t {
  kX,  // the residual stream
  kH,  // a normed copy of it, a sublayer's input
  kY,  // a sublayer's output
};

// Zero bytes that must follow a matrix in memory: a SIMD kernel may read up
// to 64 bytes past a row (docs/kernels.md, memory contract), as past a pack blob.
inline constexpr uint64_t kMatrixPadding = 64;

// A matrix in a buffer of a backend: WeightMatrix's shape at a byte offset
// of the buffer instead of a host address, followed by kMatrixPadding zero
// bytes inside the buffer.
struct BufferMatrix {
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;
  uint64_t row_bytes = 0;
  int64_t rows = 0;
  int64_t cols = 0;
};
// An expert's three matrices in one buffer (a device tier's slot).
struct SwiGluMatrices {
  BufferMatrix gate, up, down;
  ExpertExtras extras;  // biases and the clamped SwiGLU (gpt-oss); the biases are the model's tensors
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual int threads() const { return 1; }
  // Nanoseconds the calling thread waited for the backend's other threads so
  // far (0 for a backend without a pool): the synchronization share.
  virtual uint64_t SyncWaitNs() const { return 0; }
  // Things a user should know once at start (e.g. types without a fast kernel).
  virtual std::vector<std::string> Notes() const { return {}; }
  // Ok while the backend can run passes. An error once it never can again:
  // a GPU whose context an illegal address poisoned (every op fails from
  // then on, and only a new process gets a new context). A pass that fails
  // with Health() ok was one failure; the next pass may succeed. The server
  // asks after a failed step: unhealthy, it stops taking work and exits.
  virtual Status Health() const { return Status::Ok(); }
  // A device's memory bandwidth, for --bench: bytes read plus bytes written
  // per second (GB/s) by a copy within device memory, the median of a few;
  // what a decode step that reads every weight once can approach. 0: not
  // measured (the CPU backends).
  virtual Result<double> DeviceCopyGBs() { return 0.0; }

  // --- memory ---------------------------------------------------------------
  // `bytes` of backend memory, zeroed. Errors: kResourceExhausted naming `what`.
  virtual Result<BackendBuffer> Allocate(uint64_t bytes, std::string_view what) = 0;
  // Copies between host memory and a buffer; counted in transfers().
  // Errors: a range outside the buffer, a buffer of another backend.
  virtual Status Upload(const BackendBuffer& dst, uint64_t offset, const void* src, uint64_t bytes) = 0;
  virtual Status Download(const BackendBuffer& src, uint64_t offset, void* dst, uint64_t bytes) = 0;
  const TransferCounts& transfers() const { return transfers_; }
  // Makes a model's weights resident (a copy in backend memory, counted as
  // weight_bytes, where the backend cannot read host memory). Call once, at
  // load, before the first pass of that model.
  virtual Status Bind(const Model& model) = 0;
  // Where this backend keeps the weights it multiplies (the memory plan and
  // the decode-copy choice read it), and the bytes of its own copy of a
  // model's weights (0 when it reads the host mapping).
  virtual Placement WeightPlacement() const { return Placement::kCpu; }
  virtual uint64_t ResidentWeightBytes(const Model& /*model*/) const { return 0; }
  // The split of experts between a device and host RAM (docs/experts-split.md):
  // Bind without the routed experts (gate, up and down of every layer's
  // experts), which then run from the device tier's slots or on the host
  // tier; RoutedExpertBytes is the part of ResidentWeightBytes they are.
  // Default: a backend that reads the host mapping has nothing to leave out.
  virtual Status BindWithoutRoutedExperts(const Model& model) { return Bind(model); }
  virtual uint64_t RoutedExpertBytes(const Model& /*model*/) const { return 0; }
  // Whether it has a kernel for matrices of this type: MakeBackend refuses a
  // model with a matrix it cannot multiply, and the device tier an expert.
  virtual bool CanMultiply(GgmlType type) const = 0;

  // --- where its memory is, for the memory plan -------------------------------
  // Where every buffer this backend makes lives: Allocate, CreateState,
  // CreateWorkspace, its own copy of the weights (ResidentWeightBytes), its
  // scratch. The plan places those lines there and counts them against that
  // place's budget. Default: the host heap (the CPU backends, sim).
  virtual MemoryPlace BufferPlace() const { return MemoryPlace::Heap(); }
  // Bytes free now on the device BufferPlace names, as the device reports
  // them: the plan's budget for it (less --reserve) when --vram-budget does
  // not give one. 0: unknown (a backend made for planning only, or memory
  // that is host RAM).
  virtual uint64_t DeviceFreeBytes() const { return 0; }
  // Appends, placed, the lines of memory only this backend takes (a device's
  // module image, its driver context: PlanItem::kModuleImage,
  // kDriverContext) for a run whose largest pass is `largest`. Default: none.
  virtual void AddPlanLines(const Model& /*model*/, const PassShape& /*largest*/,
                            std::vector<PlanLine>* /*lines*/) const {}
  // Host memory its uploads pass through (pinned staging buffers for
  // asynchronous copies) for uploads of up to `largest_upload` bytes: the
  // plan's "staging buffers" line. Default 0: it copies from the caller's memory.
  virtual uint64_t StagingBytes(uint64_t /*largest_upload*/) const { return 0; }

  // --- scratch of its matrix products -----------------------------------------
  // Bytes a product of n activation rows with a matrix of this type and
  // width takes beyond its inputs and outputs (FastBackend: its converted
  // activations, kept between calls). The memory plan counts the largest
  // ("backend scratch"), for matrices of experts the MoE op's batches
  // (BatchScratchBytes: a job of n rows named by index, whose F32 rows are
  // gathered too). Default 0.
  virtual uint64_t ScratchBytes(GgmlType /*type*/, int64_t /*cols*/, int64_t /*n*/) const { return 0; }
  virtual uint64_t BatchScratchBytes(GgmlType /*type*/, int64_t /*cols*/, int64_t /*n*/) const { return 0; }
  // Makes that scratch at least `bytes` now, so no product allocates during
  // a run. Errors: kResourceExhausted with the size.
  virtual Status ReserveScratch(uint64_t /*bytes*/) { return Status::Ok(); }

  // --- large pages (platform.h QueryLargePages) -------------------------------
  struct LargePageCounts {
    uint64_t buffers = 0;  // buffers on large pages now
    uint64_t bytes = 0;    // their bytes, rounded up to whole large pages
    uint64_t refused = 0;  // buffers that asked and fell back to ordinary pages
  };
  // Large pages of `page_bytes` for every buffer of at least one large page
  // this backend allocates from now on (the states with their KV cache, the
  // workspace); 0: ordinary pages. The plan counts the rounding when the
  // backend's buffers are on the heap. Default: ignored (device memory has
  // no large pages), and large_page_bytes() stays 0.
  virtual void SetLargePages(uint64_t /*page_bytes*/) {}
  virtual uint64_t large_page_bytes() const { return 0; }
  virtual LargePageCounts large_pages() const { return {}; }

  // --- run state ------------------------------------------------------------
  // A sequence's KV cache and recurrent state for n_ctx positions, zeroed.
  // Errors: kResourceExhausted with the size.
  // Errors also: a KV type this model's head dimensions do not fit.
  Result<SequenceState> CreateState(const HParams& hp, int64_t n_ctx, KvType kv = KvType::kF32,
                                    int64_t pass_tokens = 0, StateLayers which = StateLayers::kMain);
  // The most workspace a pass of this shape takes on this backend (exact for
  // the largest pass; the memory plan and ForwardBatch size workspaces with it).
  virtual uint64_t WorkspaceBytes(const Model& model, const PassShape& shape) const = 0;
  // The pass scratch of `bytes` (WorkspaceBytes of the largest pass).
  virtual Result<Workspace> CreateWorkspace(uint64_t bytes, std::string_view what) = 0;
  // Zeroes a state's recurrent part (convolution windows, delta-rule matrices).
  virtual Status ClearRecurrent(SequenceState& state) = 0;
  // Copies the recurrent part of `from` into `to` (same hyperparameters; the
  // context sizes may differ: a snapshot has none).
  virtual Status CopyRecurrent(const SequenceState& from, SequenceState& to) = 0;

  // --- the ops of a pass, in the order forward.cc calls them -----------------
  // A backend runs one pass at a time (a second BeginPass before EndPass is
  // refused), and is used from one thread at a time: its memory calls and
  // the ops of a pass must not overlap with calls from another thread (the
  // scheduler makes every state before its thread starts running passes).
  // Starts a pass: takes the activations from the pass's workspace, uploads
  // the token ids and gathers their embeddings into kX. After it succeeds,
  // the caller ends the pass with EndPass.
  virtual Status BeginPass(const PassDesc& pass) = 0;
  // dst = RMSNorm(src) * weight, row by row (weight: a 1-D F32 tensor).
  virtual Status RmsNorm(Act src, const TensorView* weight, Act dst) = 0;
  // dst += src.
  virtual Status Add(Act dst, Act src) = 0;
  // Layer il's attention (plain or gated) on `in`, appending the pass's keys
  // and values to each sequence's cache; the output projection into `out`.
  virtual Status Attention(int32_t il, Mixer mixer, Act in, Act out) = 0;
  // Layer il's gated delta-net on `in`, advancing each sequence's recurrent state.
  virtual Status GatedDeltaNet(int32_t il, Act in, Act out) = 0;
  // out = down(silu(gate in) * up in) with layer il's dense FFN.
  virtual Status DenseFfn(int32_t il, Act in, Act out) = 0;
  // out = w . [a | b] row by row: w has 2 x n_embd columns, the row's a
  // values then its b values (the MTP block's eh_proj). out may be a or b.
  virtual Status ConcatProject(const TensorView& w, Act a, Act b, Act out) = 0;
  // out = the routed experts' weighted sum for each row of `in`.
  virtual Status MoeFfn(int32_t il, Act in, Act out) = 0;
  // out += sigmoid(gate . in) * shared_expert(in).
  virtual Status SharedExpert(int32_t il, Act in, Act out) = 0;
  // The output head on the rows asked for: RMSNorm(kX row) * norm, times
  // `head`; downloads pass.n_rows rows of n_vocab floats into `logits`
  // (host memory the caller sized). With `argmax` set (greedy sampling), it
  // writes each row's argmax there instead (pass.n_rows ids: the first of
  // equal maxima, 0 for a row that starts with NaN, as Sampler::Argmax) and
  // `logits` may be left unwritten: a device backend then downloads 4 bytes
  // a row.
  virtual Status Logits(const TensorView* norm, const TensorView& head, float* logits, int32_t* argmax) = 0;
  // Ends the pass BeginPass started (releases what it took), whether its ops succeeded or not.
  virtual void EndPass() = 0;

  // --- a pass's activations, for tests and checks --------------------------------
  // Copies activation `a` of the pass in progress (n tokens x n_embd floats)
  // out to, or in from, host memory; counted in transfers(). The op-by-op
  // tests (tests/gpu_ops_test.cc) give two backends the same inputs this way.
  virtual Status ReadAct(Act a, float* host) = 0;
  virtual Status WriteAct(Act a, const float* host) = 0;

  // --- the device tier's op (runtime/experts/expert_slots.h) -------------------
  // y = down(silu(gate x) * up x) for m rows, the three matrices of `w` in
  // `weights` and the gate and up outputs in `scratch` (both buffers of this
  // backend; scratch of at least 2 x m x w.gate.rows floats). x (m x
  // w.gate.cols floats) and y (m x w.down.rows floats) are host memory: they
  // cross the seam and are counted in transfers(). It may run while a pass
  // of this backend is in progress (its MoE op calls the expert executor,
  // which runs hits from the slots), so it must not touch the pass's
  // workspace. REQUIRES: ReserveScratch covered ScratchBytes of the three
  // matrices for m rows, so it allocates nothing. Errors: a buffer of
  // another backend, a matrix or the scratch outside its buffer, a type it
  // cannot multiply.
  virtual Status SlotSwiGlu(const BackendBuffer& weights, const SwiGluMatrices& w, const BackendBuffer& scratch,
                            const float* x, int64_t m, float* y) = 0;
  // Bytes of the `scratch` SlotSwiGlu takes for m rows of experts of width
  // `ff` over n_embd `embd`: the gate and up outputs (2 x m x ff floats) by
  // default; a device backend adds the rows it stages on the device.
  virtual uint64_t SlotScratchBytes(int64_t ff, int64_t /*embd*/, int64_t m) const {
    return 2 * static_cast<uint64_t>(m) * static_cast<uint64_t>(ff) * sizeof(float);
  }

 protected:
  // Frees buffer `id` (called when its handle goes).
  virtual void Free(uint32_t id) = 0;
  BackendBuffer MakeHandle(uint32_t id, uint64_t bytes) { return BackendBuffer(this, id, bytes); }
  TransferCounts transfers_;

 private:
  friend class BackendBuffer;
};

// The CPU backend: every op on host memory, over a matrix engine that
// FastBackend (SIMD kernels, threads) and ReferenceBackend (dequantized rows,
// plain loops) provide. The code of the ops is cpu_backend.cc and delta_net.cc.
class CpuBackend : public Backend {
 public:
  CpuBackend();
  ~CpuBackend() override;

  // --- the matrix engine ----------------------------------------------------
  // y[t * w.rows + r] = dot(row r of w, x[t * w.cols ...]) for t < n.
  virtual void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) = 0;
  // One product of a batch: y[t * w.rows + r] = dot(row r of w, row t of x)
  // for t < n, where row t of x is x + (rows ? rows[t] : t) * w.cols.
  struct MatMulJob {
    WeightMatrix w;
    const float* x = nullptr;
    const int64_t* rows = nullptr;  // null: x's rows 0..n-1
    int64_t n = 0;
    float* y = nullptr;
  };
  // Every job of the batch, with results bit-identical to MatMul on each in
  // turn (jobs' outputs must not overlap their own or each other's inputs).
  // FastBackend converts every job's activations, then runs the row chunks of
  // all jobs as one set of tasks: the threads meet twice per batch instead of
  // twice per product (the MoE op hands it all selected experts' gate and up,
  // then all their downs). The default runs MatMul on each job in turn.
  virtual void MatMulBatch(std::span<const MatMulJob> jobs);
  // Runs fn(begin, end) over [0, n) split across the backend's threads.
  virtual void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn);
  // The attention inner loops (kernels/attention.h): the scalar reference
  // here; FastBackend gives its ISA level's SIMD versions.
  virtual const kernels::AttnKernels& attention() const { return kernels::AttnKernelsFor(IsaLevel::kScalar); }
  // The level of the float kernels beside attention (SwiGLU's gate and SiLU,
  // kernels/swiglu.h; the delta rule, kernels/delta_rule.h): the attention
  // kernels' level, so the reference runs their scalar loops and FastBackend
  // its own ISA's.
  IsaLevel float_isa() const { return attention().isa; }

  // --- Backend --------------------------------------------------------------
  // Whether MatMul has a kernel for the type (a vec_dot: kernels/vec_dot.h).
  bool CanMultiply(GgmlType type) const override;
  Result<BackendBuffer> Allocate(uint64_t bytes, std::string_view what) override;
  Status Upload(const BackendBuffer& dst, uint64_t offset, const void* src, uint64_t bytes) override;
  Status Download(const BackendBuffer& src, uint64_t offset, void* dst, uint64_t bytes) override;
  Status Bind(const Model& model) override;
  // ForwardWorkspaceBytes (forward.h): the sum of the CPU ops' takes.
  uint64_t WorkspaceBytes(const Model& model, const PassShape& shape) const override;
  Result<Workspace> CreateWorkspace(uint64_t bytes, std::string_view what) override;
  Status ClearRecurrent(SequenceState& state) override;
  Status CopyRecurrent(const SequenceState& from, SequenceState& to) override;
  Status BeginPass(const PassDesc& pass) override;
  Status RmsNorm(Act src, const TensorView* weight, Act dst) override;
  Status Add(Act dst, Act src) override;
  Status Attention(int32_t il, Mixer mixer, Act in, Act out) override;
  Status GatedDeltaNet(int32_t il, Act in, Act out) override;
  Status DenseFfn(int32_t il, Act in, Act out) override;
  Status MoeFfn(int32_t il, Act in, Act out) override;
  Status SharedExpert(int32_t il, Act in, Act out) override;
  Status ConcatProject(const TensorView& w, Act a, Act b, Act out) override;
  Status Logits(const TensorView* norm, const TensorView& head, float* logits, int32_t* argmax) override;
  void EndPass() override;
  Status ReadAct(Act a, float* host) override;
  Status WriteAct(Act a, const float* host) override;
  // RunSwiGlu on the matrices' host memory, with this backend's MatMul.
  Status SlotSwiGlu(const BackendBuffer& weights, const SwiGluMatrices& w, const BackendBuffer& scratch,
                    const float* x, int64_t m, float* y) override;

  // For the ops (cpu_backend.cc, delta_net.cc): host addresses of backend
  // memory, and the weights as this backend holds them.
  uint8_t* HostData(const BackendBuffer& b) const;
  uint8_t* StateK(const SequenceState& s, int32_t il) const;  // rows of s.kv_type
  uint8_t* StateV(const SequenceState& s, int32_t il) const;
  float* StateConv(const SequenceState& s, int32_t il) const;
  float* StateSsm(const SequenceState& s, int32_t il) const;
  // The resident copy of a tensor of the bound model (the tensor itself when
  // the backend reads host weights, or for tensors of another model).
  const TensorView* W(const TensorView* t) const;
  const TensorView* W(const Model& m, int32_t il, TensorRole role) const { return W(m.Get(il, role)); }

  struct PassState;  // cpu_backend.cc

  // Large pages for the buffers AllocateHost makes. A buffer the OS refuses
  // large pages (fragmented memory) gets ordinary ones and is counted.
  void SetLargePages(uint64_t page_bytes) override { large_page_bytes_ = page_bytes; }
  uint64_t large_page_bytes() const override { return large_page_bytes_; }
  LargePageCounts large_pages() const override { return large_counts_; }

 protected:
  void Free(uint32_t id) override;
  // Where buffers live. The default: 64-byte aligned heap memory.
  virtual Result<uint8_t*> AllocateHost(uint64_t bytes, std::string_view what);
  virtual void FreeHost(uint8_t* p, uint64_t bytes);
  // Called around every op and transfer (SimBackend opens and closes its memory).
  virtual void EnterOp() {}
  virtual void LeaveOp() {}
  // SimBackend: the bound model's tensors, remapped to its own copies.
  void SetResidentTensors(const Model& model, std::vector<TensorView> resident);

  class OpScope {
   public:
    explicit OpScope(CpuBackend& b) : b_(b) { if (b_.op_depth_++ == 0) b_.EnterOp(); }
    ~OpScope() { if (--b_.op_depth_ == 0) b_.LeaveOp(); }
    OpScope(const OpScope&) = delete;
    OpScope& operator=(const OpScope&) = delete;

   private:
    CpuBackend& b_;
  };

 private:
  struct Block {
    uint8_t* data = nullptr;
    uint64_t bytes = 0;
  };
  Status CheckRange(const BackendBuffer& b, uint64_t offset, uint64_t bytes, std::string_view what) const;
  float* ActPtr(Act a) const;
  // The attention ops' shared core (cpu_backend.cc): the queries of the
  // pass's tokens against their sequences' cached keys and values.
  struct CachedAttention {
    const float* q = nullptr;  // token t's head h: q + t * q_width + h * q_head_stride (Dk floats)
    int64_t q_width = 0, q_head_stride = 0;
    bool gated = false;        // the head's Dv gate values follow its Dk query values
    bool v_in_k = false;       // values: each cached key row's first Dv (latent attention; no V cache)
    float scale = 1.0f;
    float* attn = nullptr;     // n x n_head x Dv
    float* scores_all = nullptr;  // tasks x task_floats (AttnTaskFloats)
    int64_t tasks = 0, task_floats = 0;
    int64_t* block_start = nullptr;  // n + 1
    const float* q_at(int64_t t, int64_t h) const { return q + t * q_width + h * q_head_stride; }
  };
  void AttendCached(int32_t il, const CachedAttention& c);
  Status LatentAttention(int32_t il, Act in, Act out);
  Status StartPass(const PassDesc& pass);

  std::vector<Block> blocks_;  // by buffer id; freed ids are reused
  std::vector<uint32_t> free_ids_;
  int op_depth_ = 0;
  // The bound model's tensors (their span) and the resident copies (empty: host).
  const TensorView* bound_begin_ = nullptr;
  size_t bound_count_ = 0;
  std::vector<TensorView> resident_;
  std::unique_ptr<PassState> pass_;
  std::atomic<bool> in_pass_{false};
  uint64_t large_page_bytes_ = 0;
  std::vector<std::pair<uint8_t*, uint64_t>> large_blocks_;  // AllocateHost's blocks on large pages, their page size
  LargePageCounts large_counts_;
};

// Plain reference: each weight row dequantized to F32 (the reference
// dequantizers), dotted with F32 activations in order, one thread.
class ReferenceBackend : public CpuBackend {
 public:
  void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) override;
  std::string name() const override { return "reference"; }
  // Every type it can dequantize (quant/dequantize.h).
  bool CanMultiply(GgmlType type) const override;
  // One dequantized row per call (allocated by the call: the reference path
  // is plain code, not the serving path).
  uint64_t ScratchBytes(GgmlType, int64_t cols, int64_t) const override {
    return static_cast<uint64_t>(cols) * sizeof(float);
  }
};

// The expert computations the CPU backend's MoE op and the tiered expert
// pool (runtime/experts/) share: SwiGLU with the expert's slices of
// ffn_{gate,up,down}_exps on `backend` (or of their decode copies, when
// use_decode_copies and the pack has them). `scratch` holds 2 * m * n_ff_exp
// floats; null: allocated for the call.
Status RunExpertOnBackend(const Model& model, CpuBackend& backend, int32_t layer, uint32_t expert, const float* x,
                          int64_t m, float* y, bool use_decode_copies = false, float* scratch = nullptr);
// y = down(silu(gate x) * up x) for m rows; scratch as above (2 * m * gate.rows floats, or null).
// With `extras` (gpt-oss): its biases and clamped SwiGLU (null: plain SwiGLU).
Status RunSwiGlu(CpuBackend& backend, const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
                 const float* x, int64_t m, float* y, float* scratch = nullptr, const ExpertExtras* extras = nullptr);

}  // namespace strata
