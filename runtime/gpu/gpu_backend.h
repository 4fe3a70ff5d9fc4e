#pragma once
// GpuBackend: the execution seam (runtime/model/backend.h) on a GPU, through
// the device interface (device.h): CUDA, HIP, or the software GPU. It keeps
// the whole model on the device: the weights (uploaded at Bind), every
// sequence's KV cache (F32, F16, Q8_0) and recurrent state, and the pass's
// activations and scratch (the workspace). Between ops nothing comes back to
// the host: a pass uploads its token tables and downloads the logits rows
// asked for.
//
// The ops are the CPU backend's, as kernels (runtime/gpu/kernels/); docs/gpu.md
// says which kernel runs what, and tests/gpu_backend_test.cc compares every op
// with the CPU backend on the software GPU.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/gpu/device.h"
#include "runtime/gpu/gpu_matmul.h"
#include "runtime/gpu/kernel_table.h"
#include "runtime/model/backend.h"

namespace strata {
namespace gpu {
struct AttnBlocking;  // gpu_pass.h
struct AttentionShape;  // gpu_workspace.h
struct AttnArgs;  // kernels/kernel_args.h
}  // namespace gpu

class GpuBackend : public Backend {
 public:
  // A backend over an open device (OpenCudaDevice, OpenHipDevice,
  // OpenSoftwareGpu). Errors: the device's module lacks a kernel; a stream
  // cannot be made.
  static Result<std::unique_ptr<GpuBackend>> Create(std::unique_ptr<gpu::Device> device);
  // A backend of `kind` with no device, which only answers the memory plan
  // (BackendOptions::plan_only: `strata-run PACK --plan --backend cuda` on a
  // machine without a GPU). Every memory call and op fails.
  static std::unique_ptr<GpuBackend> ForPlanning(gpu::DeviceKind kind);
  // The model's shapes against this device's kernels (attention's head
  // widths and heads per cached row, the delta-net's heads, the router's
  // experts): the attention blocking they run with, or why they cannot run.
  // MakeGpuBackend asks before binding, so --backend auto falls back to the
  // CPU with the reason.
  Result<gpu::AttnBlocking> KernelShapes(const HParams& hp) const;
  ~GpuBackend() override;

  std::string name() const override;
  std::vector<std::string> Notes() const override;
  Status Health() const override;  // the device's context: poisoned or not
  Result<double> DeviceCopyGBs() override;
  // REQUIRES: not a planning backend.
  gpu::Device& device() { return *device_; }
  gpu::DeviceKind kind() const { return kind_; }

  // --- the memory plan --------------------------------------------------------
  bool CanMultiply(GgmlType type) const override;
  MemoryPlace BufferPlace() const override { return MemoryPlace::Device(ordinal_); }
  uint64_t DeviceFreeBytes() const override;
  // The module image and the driver's context (a stated estimate: the
  // driver does not say what its context takes before it has one).
  void AddPlanLines(const Model& model, const PassShape& largest, std::vector<PlanLine>* lines) const override;
  uint64_t StagingBytes(uint64_t largest_upload) const override;
  // The device tier's scratch: gate and up outputs, and the rows in, the
  // rows out and their int8 form, staged on the device.
  uint64_t SlotScratchBytes(int64_t ff, int64_t embd, int64_t m) const override;
  // What the driver's context takes on a device of this kind (planning).
  static uint64_t DriverContextBytes(gpu::DeviceKind kind);

  // --- Backend --------------------------------------------------------------
  Result<BackendBuffer> Allocate(uint64_t bytes, std::string_view what) override;
  Status Upload(const BackendBuffer& dst, uint64_t offset, const void* src, uint64_t bytes) override;
  Status Download(const BackendBuffer& src, uint64_t offset, void* dst, uint64_t bytes) override;
  // Uploads every tensor the forward pass reads (the bytes that run: a
  // decode copy where the model reads one), counted as weight_bytes.
  // Errors: a type without a kernel (naming the tensor), device memory.
  Status Bind(const Model& model) override;
  Status BindWithoutRoutedExperts(const Model& model) override;
  uint64_t RoutedExpertBytes(const Model& model) const override;
  // Bound without the routed experts (the VRAM/RAM split): MoeFfn then needs
  // an expert executor.
  bool routed_experts_on_host() const { return routed_on_host_; }
  // Host-to-device bytes per second, measured on the last Bind's upload (0:
  // it moved too little to measure): the split's offload decision reads it.
  double link_bytes_per_s() const { return link_bytes_per_s_; }
  void SetLinkRateForTesting(double bytes_per_s) { link_bytes_per_s_ = bytes_per_s; }
  // Bytes the split's host buffers hold now (the plan counts them:
  // SplitHostBufferBytes).
  uint64_t HostMoeBytes() const;
  Placement WeightPlacement() const override;
  uint64_t ResidentWeightBytes(const Model& model) const override;
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
  Status SlotSwiGlu(const BackendBuffer& weights, const SwiGluMatrices& w, const BackendBuffer& scratch,
                    const float* x, int64_t m, float* y) override;

  struct PassState;  // gpu_backend.cc

  // Decode graphs (on by default where the device has graphs; env
  // STRATA_GPU_GRAPHS=0 turns them off): a decode pass (one token per
  // sequence) whose shape repeats that of the pass before it is captured as
  // a graph, and later passes of that shape replay it. The shape: the
  // workspace and its mark, the tokens, sequences, their states and KV
  // types, the rows and whether the argmax is asked for, attention's decode
  // splits (a new one every 256 keys). Passes with a routing observer or a
  // host expert tier are never captured.
  void SetGraphs(bool on) { graphs_on_ = on; }
  struct GraphCounts {
    uint64_t captures = 0, replays = 0;
  };
  GraphCounts graph_counts() const { return graph_counts_; }

 protected:
  void Free(uint32_t id) override;

 private:
  GpuBackend(std::unique_ptr<gpu::Device> device, gpu::DeviceKind kind);
  // Errors unless a device is open (a planning backend runs nothing).
  Status NeedDevice() const;

  // The device address of a buffer (0 when it is not this backend's).
  gpu::DevicePtr Address(const BackendBuffer& b) const;
  // The device copy of a tensor the forward pass reads (Bind), or an error
  // naming it.
  Result<gpu::DeviceMatrix> Weight(const TensorView* t) const;
  Result<gpu::DevicePtr> WeightVector(const TensorView* t) const;  // 1-D F32; 0 when t is null
  gpu::DevicePtr ActAddr(Act a) const;
  gpu::Launcher L() const { return {device_.get(), stream_, &kernels_}; }
  // Checks the device after an op: a poisoned context fails the op.
  Status Check(Status s) const;
  Status BindWeights(const Model& model, bool routed_experts);  // Bind's work; Bind undoes it on failure
  void ReleaseWeights();
  // y = W x for the pass's n rows (or `n` given), taking quantized
  // activations from the workspace.
  Status Product(const TensorView* w, gpu::DevicePtr x, int64_t n, gpu::DevicePtr y);
  // In place: each of n rows of `cols` floats RMS-normed and times `weight`.
  Status RowNorm(gpu::DevicePtr x, const TensorView* weight, int64_t n, int64_t cols);
  Status CopyRows(gpu::DevicePtr src, int64_t src_i, int64_t src_j, gpu::DevicePtr dst, int64_t dst_i, int64_t dst_j,
                  int64_t n_i, int64_t n_j, int64_t width);
  Status LatentAttention(int32_t il, strata::Act in, strata::Act out);
  // Both attention mixers' core: fills the pass's part of `a` (the queries
  // `q`, the tables, the tiling and the splits of `shape`, the outputs) and
  // launches the attention kernel over `n_kv_heads` key heads, then, with
  // more than one split, the combine. The caller has set the heads, the
  // cache's row layout, the scale and the mixer's options.
  Status LaunchAttention(gpu::AttnArgs& a, const gpu::AttentionShape& shape, int32_t il, gpu::DevicePtr q,
                         int64_t n_kv_heads, gpu::DevicePtr attn, gpu::DevicePtr partial);
  Status AddBias(const TensorView* bias, gpu::DevicePtr y, int64_t n, int64_t width);
  Status AddBiasPlaces(const TensorView* bias, gpu::DevicePtr y, gpu::DevicePtr place_expert, int64_t n_places,
                       int64_t width);
  Status SwiGlu(const TensorView* gate, const TensorView* up, const TensorView* down, gpu::DevicePtr x, int64_t n,
                gpu::DevicePtr out);
  Status MoeOnHost(int32_t il, gpu::DevicePtr h, gpu::DevicePtr sel, gpu::DevicePtr wts, gpu::DevicePtr out);
  Status MoeSplit(int32_t il, ExpertSplit& split, gpu::DevicePtr h, gpu::DevicePtr sel, gpu::DevicePtr wts,
                  gpu::DevicePtr out);
  // MoeOnHost's and MoeSplit's host buffers: grown to the largest pass seen,
  // kept for the next (a pass's layers reuse them once the routing of the
  // next layer has come down, which orders them after the last copy).
  struct HostMoe {
    std::vector<float> x, y, xe;
    std::vector<int32_t> sel, count, first, fill, slot_of, table;
    std::vector<uint32_t> experts;
    std::vector<int64_t> rows;
    std::vector<int32_t> slots;
  };
  HostMoe host_moe_;
  // The split's slot uploads at the end of a layer (ExpertSplit::EndLayer)
  // go on a stream of their own, after an event that marks the layer's
  // products, so the next layers' work is enqueued while they copy; the
  // next split layer (and any other upload) waits for them first. Made at
  // the first split layer.
  struct SlotUploads {
    gpu::Stream stream = nullptr;
    gpu::Event layer_done = nullptr, uploaded = nullptr;
    bool open = false;     // inside EndLayer: Upload goes on `stream`
    bool pending = false;  // uploads enqueued that the compute stream has not waited for
  };
  SlotUploads slot_uploads_;
  Status OpenSlotUploads();   // before EndLayer
  Status CloseSlotUploads();  // after it
  Status WaitSlotUploads();   // the compute stream waits for the uploads enqueued

  std::unique_ptr<gpu::Device> device_;  // null: planning only
  gpu::DeviceKind kind_;
  int ordinal_ = 0;
  gpu::Stream stream_ = nullptr;
  gpu::KernelTable kernels_;
  struct Block {
    gpu::DevicePtr ptr = 0;
    uint64_t bytes = 0;
  };
  std::vector<Block> blocks_;  // by buffer id; freed ids are reused
  std::vector<uint32_t> free_ids_;
  // The bound model's tensors and their device copies (by index; 0: not uploaded).
  const TensorView* bound_begin_ = nullptr;
  size_t bound_count_ = 0;
  std::vector<gpu::DevicePtr> weights_;
  bool routed_on_host_ = false;  // bound without the routed experts
  double link_bytes_per_s_ = 0;   // host-to-device rate measured on Bind's upload (0: too little to measure)
  std::unique_ptr<PassState> pass_;
  bool in_pass_ = false;

  // Decode graphs (above).
  enum class GraphMode : uint8_t { kOff, kCapture, kReplay };
  struct GraphKey {
    uintptr_t workspace = 0;
    uint64_t capacity = 0, mark = 0;
    const Model* model = nullptr;
    int64_t n = 0, n_rows = 0, splits = 0;
    bool argmax = false;
    int32_t delta_net = 0;
    std::vector<uintptr_t> states;  // each sequence's storage and KV type
    bool operator==(const GraphKey&) const = default;
  };
  // The key of a pass that may be recorded, or nullopt.
  std::optional<GraphKey> GraphKeyOf(const PassDesc& d) const;
  void DropGraph();
  bool graphs_on_ = true;
  GraphMode graph_mode_ = GraphMode::kOff;
  std::optional<GraphKey> last_key_;  // the previous pass's
  GraphKey graph_key_;
  gpu::Graph graph_ = nullptr;
  GraphCounts graph_counts_;
};

}  // namespace strata
