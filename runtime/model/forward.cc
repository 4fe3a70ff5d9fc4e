#include "runtime/model/forward.h"

#include <algorithm>
#include <chrono>
#include <new>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"

namespace strata {
namespace {

using R = TensorRole;

// Times one op into `times` when it is set.
class OpTimer {
 public:
  OpTimer(OpTimes* times, int kind) : times_(times), kind_(kind) {
    if (times_) start_ = std::chrono::steady_clock::now();
  }
  ~OpTimer() {
    if (times_)
      times_->seconds[kind_] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  OpTimes* times_;
  int kind_;
  std::chrono::steady_clock::time_point start_;
};

// Layer il, as the architecture's plan describes it, on the backend's ops:
// kX in, kX out.
Status RunLayer(const Model& model, Backend& be, int32_t il, OpTimes* times) {
  const ArchSpec& spec = GetArchSpec(model.arch());
  const LayerPlan layer = spec.Layer(model.hp(), static_cast<uint32_t>(il));
  auto timed = [times](int kind, auto&& op) {
    OpTimer t(times, kind);
    return op();
  };
  // Mixer.
  STRATA_RETURN_IF_ERROR(
      timed(OpTimes::kNormAdd, [&] { return be.RmsNorm(Act::kX, model.Get(il, R::kAttnNorm), Act::kH); }));
  if (layer.mixer == Mixer::kGatedDeltaNet) {
    STRATA_RETURN_IF_ERROR(timed(OpTimes::kDeltaNet, [&] { return be.GatedDeltaNet(il, Act::kH, Act::kY); }));
  } else {
    STRATA_RETURN_IF_ERROR(
        timed(OpTimes::kAttention, [&] { return be.Attention(il, layer.mixer, Act::kH, Act::kY); }));
  }
  STRATA_RETURN_IF_ERROR(timed(OpTimes::kNormAdd, [&] { return be.Add(Act::kX, Act::kY); }));
  // Feed-forward.
  STRATA_RETURN_IF_ERROR(
      timed(OpTimes::kNormAdd, [&] { return be.RmsNorm(Act::kX, model.Get(il, layer.ffn_norm), Act::kH); }));
  switch (layer.ffn) {
    case FfnKind::kDense:
      STRATA_RETURN_IF_ERROR(timed(OpTimes::kDenseFfn, [&] { return be.DenseFfn(il, Act::kH, Act::kY); }));
      break;
    case FfnKind::kMoe:
      STRATA_RETURN_IF_ERROR(timed(OpTimes::kMoe, [&] { return be.MoeFfn(il, Act::kH, Act::kY); }));
      break;
    case FfnKind::kMoeSharedExpert:
      STRATA_RETURN_IF_ERROR(timed(OpTimes::kMoe, [&] { return be.MoeFfn(il, Act::kH, Act::kY); }));
      STRATA_RETURN_IF_ERROR(timed(OpTimes::kSharedExpert, [&] { return be.SharedExpert(il, Act::kH, Act::kY); }));
      break;
  }
  return timed(OpTimes::kNormAdd, [&] { return be.Add(Act::kX, Act::kY); });
}

// The head: the hidden states when asked for (every token's kX after the
// norm), then the logits of the rows asked for (none: logits null).
Status RunHead(Backend& be, const TensorView* norm, const TensorView& head, float* logits, int32_t* argmax,
               float* hidden, OpTimes* times) {
  OpTimer t(times, OpTimes::kOutput);
  if (hidden) {
    STRATA_RETURN_IF_ERROR(be.RmsNorm(Act::kX, norm, Act::kH));
    STRATA_RETURN_IF_ERROR(be.ReadAct(Act::kH, hidden));
  }
  return logits ? be.Logits(norm, head, logits, argmax) : Status::Ok();
}

// A pass of the main layers, after BeginPass (token ids in, embeddings in kX).
Status RunLayers(const Model& model, Backend& be, float* logits, int32_t* argmax, float* hidden, OpTimes* times) {
  for (uint32_t il = 0; il < model.hp().n_layer; ++il)
    STRATA_RETURN_IF_ERROR(RunLayer(model, be, static_cast<int32_t>(il), times));
  return RunHead(be, model.Get(R::kOutputNorm), model.OutputHead(), logits, argmax, hidden, times);
}

// A pass of the MTP block (arch_spec.h, MtpBlock), after BeginPass gathered
// its embeddings into kX; h_prev rows come from the host.
Status RunMtp(const Model& model, Backend& be, const float* h_prev, float* logits, int32_t* argmax, float* hidden,
              OpTimes* times) {
  const MtpBlock& b = *GetArchSpec(model.arch()).mtp;
  const int32_t il = model.MtpLayer();
  {
    OpTimer t(times, OpTimes::kNormAdd);
    STRATA_RETURN_IF_ERROR(be.RmsNorm(Act::kX, model.Get(il, b.enorm), Act::kH));  // e
    STRATA_RETURN_IF_ERROR(be.WriteAct(Act::kY, h_prev));
    STRATA_RETURN_IF_ERROR(be.RmsNorm(Act::kY, model.Get(il, b.hnorm), Act::kX));  // h
    STRATA_RETURN_IF_ERROR(be.ConcatProject(*model.Get(il, b.eh_proj), Act::kH, Act::kX, Act::kX));
  }
  STRATA_RETURN_IF_ERROR(RunLayer(model, be, il, times));
  return RunHead(be, model.MtpHeadNorm(), model.MtpHead(), logits, argmax, hidden, times);
}

// Checks a batch before anything runs: states, token counts and ids, the
// context. Sets the pass's token count, rows and keys.
Status CheckBatch(const Model& model, const Backend& backend, std::span<const SequenceBatch> batch, PassDesc& d) {
  const HParams& hp = model.hp();
  int64_t n = 0, max_keys = 1, n_rows = 0;
  for (size_t s = 0; s < batch.size(); ++s) {
    const SequenceBatch& sb = batch[s];
    const int64_t m = static_cast<int64_t>(sb.tokens.size());
    if (!sb.state) return Internal("ForwardBatch: a sequence without a state");
    if (sb.state->backend() != &backend)
      return Internal(StrFormat("ForwardBatch: sequence %zu's state was made by another backend than %s", s,
                                backend.name().c_str()));
    for (size_t o = 0; o < s; ++o)
      if (batch[o].state == sb.state) return Internal("ForwardBatch: the same state twice in one batch");
    if (m == 0) return InvalidArgument("no tokens to run");
    if (sb.state->n_past + m > sb.state->n_ctx)
      return InvalidArgument(StrFormat("%lld tokens at position %lld do not fit the context of %lld positions",
                                       static_cast<long long>(m), static_cast<long long>(sb.state->n_past),
                                       static_cast<long long>(sb.state->n_ctx)));
    if (m > sb.state->MaxPassTokens(hp))
      return InvalidArgument(StrFormat("%lld tokens of one sequence in one pass: its sliding-window cache (a ring of "
                                       "%lld positions for a window of %u) was made for passes of at most %lld",
                                       static_cast<long long>(m), static_cast<long long>(sb.state->swa_ring), hp.n_swa,
                                       static_cast<long long>(sb.state->MaxPassTokens(hp))));
    for (int64_t t = 0; t < m; ++t)
      if (sb.tokens[t] < 0 || static_cast<uint32_t>(sb.tokens[t]) >= hp.n_vocab)
        return InvalidArgument(StrFormat("token id %d at index %lld is out of range (the vocabulary has %u tokens)",
                                         sb.tokens[t], static_cast<long long>(t), hp.n_vocab));
    n += m;
    n_rows += sb.all_logits ? m : 1;
    max_keys = std::max(max_keys, sb.state->n_past + m);
  }
  if (n == 0) return InvalidArgument("no tokens to run");
  d.n = n;
  d.n_rows = n_rows;
  d.max_keys = max_keys;
  return Status::Ok();
}

}  // namespace

const char* OpTimes::Name(int kind) {
  switch (kind) {
    case kNormAdd: return "norms and residual adds";
    case kAttention: return "attention (projections, kernel, output)";
    case kDeltaNet: return "gated delta-net";
    case kDenseFfn: return "dense FFN";
    case kMoe: return "MoE (router, routing, experts)";
    case kSharedExpert: return "shared expert";
    case kOutput: return "output norm and head";
    default: return "?";
  }
}

Status Forward(const Model& model, Backend& backend, SequenceState& state, std::span<const int32_t> tokens,
               const ForwardOptions& options, std::vector<float>* logits) {
  SequenceBatch b{&state, tokens, options.all_logits};
  return ForwardBatch(model, backend, {&b, 1}, options, logits);
}

namespace {

// One pass of the main layers (h_prev null) or of the MTP block.
Status RunPass(const Model& model, Backend& backend, std::span<const SequenceBatch> batch,
               const ForwardOptions& options, std::vector<float>* logits, const float* h_prev) {
  PassDesc d;
  d.model = &model;
  d.batch = batch;
  d.options = &options;
  d.mtp = h_prev != nullptr;
  if (d.mtp) d.embedding = &model.MtpEmbedding();
  STRATA_RETURN_IF_ERROR(CheckBatch(model, backend, batch, d));

  // Scratch: the caller's workspace, or one for this pass alone.
  const PassShape shape{d.n, d.max_keys, backend.threads()};
  const uint64_t need = backend.WorkspaceBytes(model, shape);
  Workspace own;
  Workspace* ws = options.workspace;
  if (!ws) {
    STRATA_ASSIGN_OR_RETURN(own, backend.CreateWorkspace(need, "the forward-pass workspace"));
    ws = &own;
  } else if (ws->backend() != &backend) {
    return Internal("ForwardBatch: the workspace was made by another backend");
  } else if (need > ws->capacity() - ws->mark()) {
    return Internal(StrFormat("a forward pass of %lld tokens with %lld keys needs %s of workspace; the run planned %s",
                              static_cast<long long>(d.n), static_cast<long long>(d.max_keys),
                              HumanBytes(need).c_str(), HumanBytes(ws->capacity() - ws->mark()).c_str()));
  }
  d.workspace = ws;
  d.whole = true;
  // The outputs are sized before any state changes.
  const HParams& hp = model.hp();
  const bool want_logits = !d.mtp || options.logits;
  if (want_logits) {
    STRATA_RETURN_IF_ERROR(CheckedResize(*logits, static_cast<size_t>(d.n_rows) * hp.n_vocab, "the logits buffer"));
    if (options.argmax)
      STRATA_RETURN_IF_ERROR(CheckedResize(*options.argmax, static_cast<size_t>(d.n_rows), "the argmax ids"));
  }
  if (options.hidden)
    STRATA_RETURN_IF_ERROR(CheckedResize(*options.hidden, static_cast<size_t>(d.n) * hp.n_embd, "the hidden states"));
  Status st = backend.BeginPass(d);
  if (!st.ok()) return st;
  int32_t* argmax = options.argmax && want_logits ? options.argmax->data() : nullptr;
  float* hidden = options.hidden ? options.hidden->data() : nullptr;
  try {
    st = d.mtp ? RunMtp(model, backend, h_prev, want_logits ? logits->data() : nullptr, argmax, hidden,
                        options.op_times)
               : RunLayers(model, backend, logits->data(), argmax, hidden, options.op_times);
  } catch (const std::bad_alloc&) {
    // Only an allocation outside the workspace gets here: a backend that
    // allocates on its own (the reference backend's row buffer, a FastBackend
    // whose scratch was not reserved) or an observer.
    st = ResourceExhausted(StrFormat("out of memory in a forward pass of %lld tokens (an allocation outside the "
                                     "planned workspace)",
                                     static_cast<long long>(d.n)));
  }
  backend.EndPass();
  if (!st.ok()) return st;
  for (const SequenceBatch& sb : batch) sb.state->n_past += static_cast<int64_t>(sb.tokens.size());
  return Status::Ok();
}

}  // namespace

Status ForwardBatch(const Model& model, Backend& backend, std::span<const SequenceBatch> batch,
                    const ForwardOptions& options, std::vector<float>* logits) {
  for (const SequenceBatch& sb : batch)
    if (sb.state && sb.state->layers.size() != model.hp().n_layer)
      return Internal("ForwardBatch: a state that is not the model's (an MTP block's state: ForwardMtp)");
  return RunPass(model, backend, batch, options, logits, nullptr);
}

Status ForwardMtp(const Model& model, Backend& backend, SequenceState& state, std::span<const int32_t> tokens,
                  std::span<const float> h_prev, const ForwardOptions& options, std::vector<float>* logits) {
  if (!model.mtp_enabled()) return FailedPrecondition(model.name() + ": the MTP block was not enabled (Model::EnableMtp)");
  if (state.layers.size() != model.hp().n_layer + 1u)
    return Internal("ForwardMtp: the state is not an MTP state (StateLayers::kMtp)");
  if (h_prev.size() != tokens.size() * model.hp().n_embd)
    return Internal(StrFormat("ForwardMtp: %zu hidden values for %zu tokens (expected %u a token, n_embd)",
                              h_prev.size(), tokens.size(), model.hp().n_embd));
  if (tokens.empty()) return InvalidArgument("no tokens to run");
  SequenceBatch b{&state, tokens, options.all_logits};
  return RunPass(model, backend, {&b, 1}, options, logits, h_prev.data());
}

}  // namespace strata
