#pragma once
// Model: a pack's tensors resolved by role, once, for the forward pass.
// Holds views into the pack (which must outlive it); owns no weights.

#include <array>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/arch/arch_spec.h"
#include "runtime/kernels/cpu_features.h"
#include "runtime/pack/pack_reader.h"

namespace strata {

// A 2-D weight matrix, or one expert of a 3-D expert tensor: `rows` rows of
// `cols` elements, row r at data + r * row_bytes.
struct WeightMatrix {
  GgmlType type = GgmlType::kF32;
  const uint8_t* data = nullptr;
  uint64_t row_bytes = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  const TensorView* tensor = nullptr;
  int32_t expert = -1;
};
WeightMatrix Matrix(const TensorView& t);
WeightMatrix ExpertMatrix(const TensorView& t, uint32_t expert);

// What an expert computes beyond its three products (gpt-oss): biases added
// to its gate, up and down outputs (column `expert` of [rows, n_expert] F32
// tensors; null: none) and the clamped SwiGLU (alpha 0: plain SwiGLU):
//   act = min(g, limit) * sigmoid(alpha * min(g, limit)) * (clamp(u, -limit, limit) + 1)
struct ExpertExtras {
  const TensorView* gate_b = nullptr;
  const TensorView* up_b = nullptr;
  const TensorView* down_b = nullptr;
  uint32_t expert = 0;
  float alpha = 0.0f, limit = 0.0f;
  // The expert's bias vectors in host memory (null: none).
  const float* GateBias() const { return Column(gate_b); }
  const float* UpBias() const { return Column(up_b); }
  const float* DownBias() const { return Column(down_b); }
  bool any() const { return gate_b || up_b || down_b || alpha != 0.0f; }

 private:
  const float* Column(const TensorView* t) const {
    return t ? reinterpret_cast<const float*>(t->data.data()) + static_cast<uint64_t>(expert) * t->shape[0] : nullptr;
  }
};

// Which bytes the forward pass reads for a tensor that has a Q8_0 decode copy
// (docs/experts.md): kAuto the copy when the tensor's own type has no fast
// CPU kernel at the level the backend runs, else the native bytes; kNative
// always the native bytes; kCopies always the copy.
enum class DecodeCopyPolicy : uint8_t { kAuto = 0, kNative = 1, kCopies = 2 };

// Whether the kernels where `t` is placed (Backend::WeightPlacement,
// kernel_coverage.h) have a fast path for its type: the decode-copy choice
// asks the kernels of the tensor's placement, not the CPU's alone.
using FastKernelWherePlaced = std::function<bool(const TensorView& t)>;
std::string_view DecodeCopyPolicyName(DecodeCopyPolicy p);  // "auto", "native", "copies"
Result<DecodeCopyPolicy> ParseDecodeCopyPolicy(std::string_view name);

class Model;
// The extras of (layer, expert) of a model.
ExpertExtras ExpertExtrasOf(const Model& model, int32_t layer, uint32_t expert);

class Model {
 public:
  // Resolves every tensor the forward pass needs. Errors if the pack is
  // vocab-only or a required role is missing (a validated pack never is).
  static Result<Model> Create(const Pack& pack);
  // A model over tensor views that lie elsewhere (e.g. the packer's GGUF
  // mapping, to compute the probe record before the pack exists). The views
  // must have been checked against the architecture spec and must outlive
  // the model.
  static Result<Model> FromTensors(Arch arch, const HParams& hp, std::span<const TensorView> tensors,
                                   const std::string& name);

  const std::string& name() const { return name_; }
  // Every tensor view the model was built from (decode copies included), by
  // manifest index: TensorView::decode_copy indexes this.
  std::span<const TensorView> tensors() const { return tensors_; }
  Arch arch() const { return arch_; }
  const HParams& hp() const { return hp_; }
  const TensorView* Get(TensorRole role) const { return global_[static_cast<size_t>(role)]; }
  const TensorView* Get(int32_t layer, TensorRole role) const {
    return layers_[static_cast<size_t>(layer)][static_cast<size_t>(role)];
  }
  // Points Get() at decode copies as `policy` says: kAuto takes a tensor's
  // copy when `fast` says the kernels where it is placed have no fast path
  // for its own type (so every reader of Get, the forward pass, the
  // backend's notes and DecodeBytesPerToken, sees the bytes that run).
  // Call once, before running. Returns how many tensors now read their copy.
  size_t UseDecodeCopies(DecodeCopyPolicy policy, const FastKernelWherePlaced& fast);
  // Every tensor on the host, multiplied by CPU kernels of level `isa`.
  size_t UseDecodeCopies(DecodeCopyPolicy policy, IsaLevel isa);
  // The output head: output.weight, or the token embedding when tied.
  const TensorView& OutputHead() const { return Get(TensorRole::kOutput) ? *Get(TensorRole::kOutput) : *Get(TensorRole::kTokenEmbd); }
  // Weight bytes one decoded token reads: every dense matrix and vector,
  // n_expert_used/n_expert of every routed-expert tensor, the output head,
  // and one row of the token embedding. Divided by memory bandwidth, this is
  // the decode roofline.
  uint64_t DecodeBytesPerToken() const;
  // --- the MTP block (ArchSpec::mtp, docs/speculative.md) -------------------
  // Why this model cannot run an MTP block ("" when it can): its
  // architecture has none, its pack holds no nextn layer, or a required
  // tensor of the block is missing.
  std::string MtpMissing() const;
  bool HasMtp() const { return MtpMissing().empty(); }
  // Makes the MTP block part of what runs: call before a backend binds the
  // model (MakeBackend), so that it binds the block's layer and sizes
  // workspaces for its passes. Errors: MtpMissing.
  Status EnableMtp();
  bool mtp_enabled() const { return mtp_; }
  // The layers backends bind and the memory plan counts: n_layer, plus the
  // MTP layer once enabled.
  uint32_t run_layers() const { return hp_.n_layer + (mtp_ ? 1u : 0u); }
  // The MTP block's layer index, its embedding, head norm and head (each its
  // own tensor where the pack has it, else the model's).
  int32_t MtpLayer() const { return static_cast<int32_t>(hp_.n_layer); }
  const TensorView& MtpEmbedding() const;
  const TensorView* MtpHeadNorm() const;
  const TensorView& MtpHead() const;
  const TensorView* MtpGet(TensorRole role) const { return hp_.nextn_predict_layers ? Get(MtpLayer(), role) : nullptr; }

  // F32 data of a 1-D F32 tensor (norm weights and the like).
  static const float* F32(const TensorView* t) { return t ? reinterpret_cast<const float*>(t->data.data()) : nullptr; }

 private:
  std::string name_;
  std::span<const TensorView> tensors_;
  Arch arch_ = Arch::kVocabOnly;
  HParams hp_;
  bool mtp_ = false;
  std::array<const TensorView*, static_cast<size_t>(TensorRole::kCount)> global_{};
  std::vector<std::array<const TensorView*, static_cast<size_t>(TensorRole::kCount)>> layers_;
};

}  // namespace strata
