#include "runtime/model/generator.h"

#include <algorithm>
#include <chrono>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"

namespace strata {
namespace {

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Holds back the tail of the text that could still grow into a stop string.
class StopMatcher {
 public:
  explicit StopMatcher(const std::vector<std::string>& stops) : stops_(stops) {}
  // Appends text; returns what may be shown now. Sets *hit when a stop string
  // appeared (the text before it is returned; the rest is dropped).
  std::string Push(std::string_view piece, bool* hit) {
    pending_ += piece;
    for (const std::string& s : stops_) {
      if (s.empty()) continue;
      size_t at = pending_.find(s);
      if (at != std::string::npos) {
        *hit = true;
        std::string out = pending_.substr(0, at);
        pending_.clear();
        return out;
      }
    }
    size_t keep = 0;  // longest suffix of pending_ that is a prefix of a stop string
    for (const std::string& s : stops_)
      for (size_t k = std::min(s.size() - 1, pending_.size()); k > keep; --k)
        if (pending_.compare(pending_.size() - k, k, s, 0, k) == 0) {
          keep = k;
          break;
        }
    std::string out = pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return out;
  }
  std::string Flush() {
    std::string out;
    out.swap(pending_);
    return out;
  }

 private:
  const std::vector<std::string>& stops_;
  std::string pending_;
};

}  // namespace

std::string_view StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kNone: return "none";
    case StopReason::kEndOfGeneration: return "end-of-generation token";
    case StopReason::kStopString: return "stop string";
    case StopReason::kTokenLimit: return "token limit (-n)";
    case StopReason::kContextFull: return "context full";
    case StopReason::kCancelled: return "cancelled";
  }
  return "?";
}

bool Generator::IsEndOfGeneration(int32_t id) const {
  if (!tok_) return false;
  const auto& eog = tok_->vocab().eog_ids;
  return std::binary_search(eog.begin(), eog.end(), id);
}

Result<GenerateResult> Generator::Generate(std::span<const int32_t> prompt, const GenerateOptions& o,
                                           const GenerateCallbacks& cb) {
  STRATA_RETURN_IF_ERROR(o.sampling.Validate());
  if (prompt.empty()) return InvalidArgument("the prompt is empty");
  const int64_t room = state_.n_ctx - state_.n_past;
  if (static_cast<int64_t>(prompt.size()) > room)
    return InvalidArgument(StrFormat("the prompt has %zu tokens but the context has room for %lld (-c %lld)",
                                     prompt.size(), static_cast<long long>(room), static_cast<long long>(state_.n_ctx)));
  const uint32_t n_vocab = model_.hp().n_vocab;
  GenerateResult r;
  r.n_prompt = static_cast<int64_t>(prompt.size());
  std::vector<float> logits;
  // Greedy sampling with nobody reading the logits: the passes return each
  // row's argmax alone (a device backend then downloads 4 bytes a step).
  std::vector<int32_t> argmax;
  const bool argmax_only = o.sampling.IsPlainArgmax() && !cb.on_logits;
  ForwardOptions fo;
  fo.observer = o.observer;
  fo.experts = o.experts;
  fo.workspace = o.workspace;
  fo.delta_net = o.delta_net;
  // The largest logits buffer the run needs, before anything runs.
  const int64_t batch = std::max<int32_t>(1, o.batch);
  const size_t max_rows = o.prompt_logits ? static_cast<size_t>(std::min<int64_t>(batch, r.n_prompt)) : 1;
  STRATA_RETURN_IF_ERROR(CheckedResize(logits, max_rows * n_vocab, "the logits buffer", /*reserve_only=*/true));

  // Prompt, in batches.
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < prompt.size(); i += static_cast<size_t>(batch)) {
    size_t n = std::min(prompt.size() - i, static_cast<size_t>(batch));
    fo.all_logits = o.prompt_logits;
    fo.argmax = argmax_only && !o.prompt_logits && i + n == prompt.size() ? &argmax : nullptr;
    STRATA_RETURN_IF_ERROR(Forward(model_, backend_, state_, prompt.subspan(i, n), fo, &logits));
    if (o.prompt_logits && cb.on_logits)
      for (size_t row = 0; row < n; ++row) cb.on_logits({logits.data() + row * n_vocab, n_vocab});
  }
  r.prompt_seconds = Since(t0);
  std::span<const float> last(logits.data() + logits.size() - n_vocab, n_vocab);

  Sampler sampler(o.sampling);
  StopMatcher stop(o.stop_strings);
  fo.all_logits = false;
  fo.op_times = o.decode_op_times;
  fo.argmax = argmax_only ? &argmax : nullptr;
  // The first id comes from the prompt's last pass: its argmax when that pass
  // computed one, else the logits.
  bool have_argmax = argmax_only && !o.prompt_logits;
  auto t1 = std::chrono::steady_clock::now();
  while (true) {
    if (o.n_predict >= 0 && static_cast<int64_t>(r.tokens.size()) >= o.n_predict) {
      r.stop = StopReason::kTokenLimit;
      break;
    }
    if (cb.keep_going && !cb.keep_going()) {
      r.stop = StopReason::kCancelled;
      break;
    }
    const int32_t id = have_argmax ? argmax.back() : sampler.Sample(last, r.tokens);
    if (id < 0) return InvalidArgument("the logit bias bans every token of the vocabulary");
    have_argmax = argmax_only;
    r.tokens.push_back(id);
    bool eog = !o.ignore_eog && IsEndOfGeneration(id);
    bool hit = false;
    if (tok_ && !eog) {
      std::string shown = stop.Push(tok_->TokenToPiece(id, false), &hit);
      r.text += shown;
      if (cb.on_text && !shown.empty()) cb.on_text(shown);
    }
    bool limit = o.n_predict >= 0 && static_cast<int64_t>(r.tokens.size()) >= o.n_predict;
    bool stopping = eog || hit || limit;
    if (stopping && !o.feed_last) {
      r.stop = eog ? StopReason::kEndOfGeneration : hit ? StopReason::kStopString : StopReason::kTokenLimit;
      break;
    }
    if (state_.n_past >= state_.n_ctx) {
      r.stop = StopReason::kContextFull;
      break;
    }
    // Feed the token back.
    STRATA_RETURN_IF_ERROR(Forward(model_, backend_, state_, std::span<const int32_t>(&id, 1), fo, &logits));
    ++r.n_decoded;
    last = std::span<const float>(logits.data(), n_vocab);
    if (cb.on_logits) cb.on_logits(last);
    if (stopping) {
      r.stop = eog ? StopReason::kEndOfGeneration : hit ? StopReason::kStopString : StopReason::kTokenLimit;
      break;
    }
  }
  r.gen_seconds = Since(t1);
  if (tok_ && r.stop != StopReason::kStopString) {
    std::string rest = stop.Flush();
    r.text += rest;
    if (cb.on_text && !rest.empty()) cb.on_text(rest);
  }
  return r;
}

}  // namespace strata
