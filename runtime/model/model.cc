#include "runtime/model/model.h"

#include <cctype>

#include "runtime/base/strings.h"
#include "runtime/model/kernel_coverage.h"

namespace strata {

WeightMatrix Matrix(const TensorView& t) {
  WeightMatrix m;
  m.type = t.type;
  m.data = t.data.data();
  m.row_bytes = t.row_bytes;
  m.rows = static_cast<int64_t>(t.shape[1]);
  m.cols = static_cast<int64_t>(t.shape[0]);
  m.tensor = &t;
  return m;
}

WeightMatrix ExpertMatrix(const TensorView& t, uint32_t expert) {
  WeightMatrix m = Matrix(t);
  m.data = t.data.data() + expert * t.expert_stride;
  m.expert = static_cast<int32_t>(expert);
  return m;
}

std::string_view DecodeCopyPolicyName(DecodeCopyPolicy p) {
  switch (p) {
    case DecodeCopyPolicy::kAuto: return "auto";
    case DecodeCopyPolicy::kNative: return "native";
    case DecodeCopyPolicy::kCopies: return "copies";
  }
  return "unknown";
}

Result<DecodeCopyPolicy> ParseDecodeCopyPolicy(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (DecodeCopyPolicy p : {DecodeCopyPolicy::kAuto, DecodeCopyPolicy::kNative, DecodeCopyPolicy::kCopies})
    if (lower == DecodeCopyPolicyName(p)) return p;
  return InvalidArgument("decode copies '" + std::string(name) + "': expected auto, native or copies");
}

Result<Model> Model::Create(const Pack& pack) {
  if (pack.arch() == Arch::kVocabOnly)
    return Unsupported(pack.path() + ": a vocab-only pack has no weights to run (it can only tokenize)");
  return FromTensors(pack.arch(), pack.hparams(), pack.tensors(), pack.path());
}

Result<Model> Model::FromTensors(Arch arch, const HParams& hp, std::span<const TensorView> tensors,
                                 const std::string& name) {
  Model m;
  m.name_ = name;
  m.tensors_ = tensors;
  m.arch_ = arch;
  m.hp_ = hp;
  m.layers_.resize(m.hp_.n_layer_all);
  for (const TensorView& t : tensors) {
    if (t.role >= TensorRole::kCount || t.is_decode_copy) continue;
    if (t.layer < 0) m.global_[static_cast<size_t>(t.role)] = &t;
    else if (static_cast<uint32_t>(t.layer) < m.hp_.n_layer_all)
      m.layers_[static_cast<size_t>(t.layer)][static_cast<size_t>(t.role)] = &t;
  }
  // Every role the forward pass reads must be there (a checked pack always has them).
  auto need = [&](TensorRole r, int32_t il) -> Status {
    const TensorView* t = il < 0 ? m.Get(r) : m.Get(il, r);
    if (t) return Status::Ok();
    return Internal(name + ": tensor " + std::string(TensorRoleName(r)) +
                    (il < 0 ? "" : " of layer " + std::to_string(il)) + " is missing after validation");
  };
  STRATA_RETURN_IF_ERROR(need(TensorRole::kTokenEmbd, -1));
  STRATA_RETURN_IF_ERROR(need(TensorRole::kOutputNorm, -1));
  return m;
}

size_t Model::UseDecodeCopies(DecodeCopyPolicy policy, IsaLevel isa) {
  return UseDecodeCopies(policy,
                         [isa](const TensorView& t) { return CpuKernelSupport(t.type, isa) == KernelSupport::kFast; });
}

size_t Model::UseDecodeCopies(DecodeCopyPolicy policy, const FastKernelWherePlaced& fast) {
  if (policy == DecodeCopyPolicy::kNative) return 0;
  size_t switched = 0;
  auto choose = [&](const TensorView*& slot) {
    if (!slot || slot->decode_copy < 0 || static_cast<size_t>(slot->decode_copy) >= tensors_.size()) return;
    if (policy == DecodeCopyPolicy::kAuto && fast(*slot)) return;
    slot = &tensors_[static_cast<size_t>(slot->decode_copy)];
    ++switched;
  };
  for (const TensorView*& t : global_) choose(t);
  for (auto& layer : layers_)
    for (const TensorView*& t : layer) choose(t);
  return switched;
}

std::string Model::MtpMissing() const {
  const ArchSpec& spec = GetArchSpec(arch_);
  if (!spec.mtp) return std::string(ArchName(arch_)) + " has no MTP block Strata runs";
  if (hp_.nextn_predict_layers == 0) return "the pack has no MTP layer (nextn_predict_layers is 0)";
  for (TensorRole r : {spec.mtp->enorm, spec.mtp->hnorm, spec.mtp->eh_proj, TensorRole::kAttnNorm})
    if (!MtpGet(r))
      return StrFormat("the MTP layer (blk.%u) has no %s tensor", hp_.n_layer, std::string(TensorRoleName(r)).c_str());
  return "";
}

Status Model::EnableMtp() {
  const std::string missing = MtpMissing();
  if (!missing.empty()) return FailedPrecondition(name_ + ": no MTP block to run: " + missing);
  mtp_ = true;
  return Status::Ok();
}

// The block's own tensor of a role, where the architecture has a block.
namespace {
const TensorView* OwnMtp(const Model& m, TensorRole MtpBlock::*role) {
  const MtpBlock* b = GetArchSpec(m.arch()).mtp;
  return b ? m.MtpGet(b->*role) : nullptr;
}
}  // namespace

const TensorView& Model::MtpEmbedding() const {
  const TensorView* t = OwnMtp(*this, &MtpBlock::embed);
  return t ? *t : *Get(TensorRole::kTokenEmbd);
}

const TensorView* Model::MtpHeadNorm() const {
  const TensorView* t = OwnMtp(*this, &MtpBlock::head_norm);
  return t ? t : Get(TensorRole::kOutputNorm);
}

const TensorView& Model::MtpHead() const {
  const TensorView* t = OwnMtp(*this, &MtpBlock::head);
  return t ? *t : OutputHead();
}

ExpertExtras ExpertExtrasOf(const Model& model, int32_t layer, uint32_t expert) {
  ExpertExtras x;
  x.gate_b = model.Get(layer, TensorRole::kFfnGateExpsBias);
  x.up_b = model.Get(layer, TensorRole::kFfnUpExpsBias);
  x.down_b = model.Get(layer, TensorRole::kFfnDownExpsBias);
  x.expert = expert;
  x.alpha = model.hp().swiglu_alpha;
  x.limit = model.hp().swiglu_limit;
  return x;
}

uint64_t Model::DecodeBytesPerToken() const {
  uint64_t bytes = 0;
  auto add = [&](const TensorView* t) {
    if (!t) return;
    if (IsRoutedExpert(*t)) bytes += t->data.size() / t->expert_count * hp_.n_expert_used;
    else bytes += t->data.size();
  };
  for (size_t r = 0; r < static_cast<size_t>(TensorRole::kCount); ++r) {
    const TensorRole role = static_cast<TensorRole>(r);
    if (role != TensorRole::kTokenEmbd) add(Get(role));
    for (uint32_t il = 0; il < hp_.n_layer; ++il) add(Get(static_cast<int32_t>(il), role));
  }
  const TensorView& emb = *Get(TensorRole::kTokenEmbd);
  bytes += Get(TensorRole::kOutput) ? emb.row_bytes : emb.data.size();  // tied: the embedding is the head
  return bytes;
}

}  // namespace strata
