#include "runtime/model/generator.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_map>

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

// Adaptive drafting: each step drafts the n that maximizes the expected
// speed-up, from the acceptance measured so far and the measured costs, or
// none when no n is expected to pay. A step of n drafts yields
// E(n) = 1 + a + ... + a^n tokens (a: the chance a draft is accepted, the
// ratio of accepted drafts to accepted drafts plus rejections, decayed per
// step), at n draft passes and a verification pass of n + 1 tokens, against
// E(n) plain steps. Not drafting, it probes with one draft after 16 steps,
// then 32, ... up to 256 (a model that accepts almost nothing pays that
// alone), and drafts again when a probe is accepted.
struct DraftAdapt {
  double acc = 0, rej = 0;        // decayed counts: accepted drafts, rejections
  double t1 = 0, td = 0, tx = 0;  // seconds: a plain step, a draft pass, a verification pass's extra per draft
  bool plain_seen = false, draft_seen = false;
  int64_t skipped = 0, probe_every = 16;
  static void Ema(double& v, double x) { v = v == 0 ? x : 0.8 * v + 0.2 * x; }
  int64_t Choose(int64_t max) {
    if (!plain_seen) return 0;  // measure a plain step first
    if (!draft_seen) return 1;  // then one draft
    const double a = std::min(acc + rej > 0 ? acc / (acc + rej) : 0.0, 0.999);
    int64_t best = 0;
    double best_gain = 1.0, e = 1, an = 1;
    for (int64_t n = 1; n <= max; ++n) {
      an *= a;
      e += an;
      const double gain = e * t1 / (t1 + static_cast<double>(n) * (td + tx));
      if (gain > best_gain) best_gain = gain, best = n;
    }
    if (best > 0) {
      skipped = 0;
      return best;
    }
    if (++skipped < probe_every) return 0;
    skipped = 0;
    probed_after = probe_every;
    probe_every = std::min<int64_t>(probe_every * 2, 256);
    return 1;
  }
  void Step(int64_t n, int64_t k) {
    acc = 0.9 * acc + static_cast<double>(k);
    rej = 0.9 * rej + (k < n ? 1.0 : 0.0);
    if (k > 0) probe_every = 16;
    // A probe refused at the longest interval: the draft has not paid for
    // about 500 steps. Stop it (it would go on reading every token).
    else if (probed_after >= 256 && n == 1) gave_up = true;
  }
  int64_t probed_after = 0;  // the interval the last probe came after
  bool gave_up = false;
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

  // Speculation: checked before anything runs.
  const DraftModel* draft = o.draft;
  const uint32_t n_embd = model_.hp().n_embd;
  std::vector<float> dlogits;    // the draft's logits (its last row)
  std::vector<int32_t> dargmax;  // its argmax, where only that is read
  // An MTP block reads each token with the target's hidden state of the
  // position before it: the target's passes return theirs (hidden), and the
  // rows of tokens it has not read wait beside them (pending_hidden), with
  // the last position's row (pending_h; zeros before the first token).
  std::vector<float> hidden, draft_hidden, pending_hidden, pending_h(n_embd, 0.0f);
  auto draft_pass = [&](std::span<const int32_t> tokens, std::span<const float> h_prev, const ForwardOptions& opt) {
    if (draft->mtp)
      return ForwardMtp(*draft->model, *draft->backend, *draft->state, tokens, h_prev, opt, &dlogits)
          .WithContext("the MTP block");
    return Forward(*draft->model, *draft->backend, *draft->state, tokens, opt, &dlogits).WithContext("the draft model");
  };
  auto hrow = [n_embd](const std::vector<float>& rows, int64_t i) {
    return std::span<const float>(rows.data() + i * n_embd, n_embd);
  };
  if (draft) {
    if (!draft->model || !draft->backend || !draft->state)
      return Internal("speculative decoding: a draft without its model, backend or state");
    if (draft->max_draft < 1 || draft->max_draft > 16)
      return InvalidArgument(StrFormat("--spec-max %d: expected 1..16", draft->max_draft));
    if (draft->model->hp().n_vocab != n_vocab)
      return InvalidArgument(StrFormat("the draft model's vocabulary has %u tokens, the target's %u: a draft must "
                                       "share the target's tokenizer",
                                       draft->model->hp().n_vocab, n_vocab));
    if (draft->mtp && (draft->model != &model_ || draft->backend != &backend_ || !model_.mtp_enabled()))
      return Internal("speculative decoding: an MTP draft that is not the target's enabled block on its backend");
    if (draft->state->n_past != state_.n_past)
      return Internal("speculative decoding: the draft's state does not hold what the target's holds");
    if (cb.on_logits)
      r.spec_off = "every row's logits are written: speculation runs without them";
    else if (o.feed_last)
      r.spec_off = "the last token is fed back: speculation runs without it";
    if (!r.spec_off.empty()) draft = nullptr;
  }
  const bool mtp = draft && draft->mtp;
  if (mtp && draft->hidden && state_.n_past > 0 && draft->hidden->size() == n_embd) pending_h = *draft->hidden;
  ForwardOptions dpo;  // the draft's passes over the prompt
  if (draft) {
    dpo.workspace = draft->workspace;
    dpo.delta_net = o.delta_net;
    dpo.argmax = &dargmax;
    dpo.logits = false;  // an MTP block only fills its cache (a draft model computes them regardless)
  }
  if (mtp) fo.hidden = &hidden;

  // Prompt, in batches.
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < prompt.size(); i += static_cast<size_t>(batch)) {
    size_t n = std::min(prompt.size() - i, static_cast<size_t>(batch));
    fo.all_logits = o.prompt_logits;
    fo.argmax = argmax_only && !o.prompt_logits && i + n == prompt.size() ? &argmax : nullptr;
    STRATA_RETURN_IF_ERROR(Forward(model_, backend_, state_, prompt.subspan(i, n), fo, &logits));
    if (o.prompt_logits && cb.on_logits)
      for (size_t row = 0; row < n; ++row) cb.on_logits({logits.data() + row * n_vocab, n_vocab});
    if (mtp) {  // the block reads the batch: token j with the hidden state of j - 1
      pending_hidden.assign(pending_h.begin(), pending_h.end());
      pending_hidden.insert(pending_hidden.end(), hidden.begin(), hidden.end() - n_embd);
      STRATA_RETURN_IF_ERROR(draft_pass(prompt.subspan(i, n), pending_hidden, dpo));
      auto last_row = hrow(hidden, static_cast<int64_t>(n) - 1);
      pending_h.assign(last_row.begin(), last_row.end());
    }
  }
  pending_hidden.clear();
  if (draft && !mtp)  // the draft model reads the prompt too
    for (size_t i = 0; i < prompt.size(); i += static_cast<size_t>(batch)) {
      const size_t n = std::min(prompt.size() - i, static_cast<size_t>(batch));
      STRATA_RETURN_IF_ERROR(draft_pass(prompt.subspan(i, n), {}, dpo));
    }
  r.prompt_seconds = Since(t0);
  const int64_t prompt_end = state_.n_past;
  std::span<const float> last(logits.data() + logits.size() - n_vocab, n_vocab);

  Sampler sampler(o.sampling);
  StopMatcher stop(o.stop_strings);
  fo.all_logits = false;
  fo.op_times = o.decode_op_times;
  fo.argmax = argmax_only ? &argmax : nullptr;
  // The first id comes from the prompt's last pass: its argmax when that pass
  // computed one, else the logits.
  bool have_argmax = argmax_only && !o.prompt_logits;
  // Speculation's state: tokens decided and not yet emitted (accepted drafts,
  // whose positions the target's cache already holds, then the target's own
  // next token, which it does not), and tokens the draft has not yet read.
  std::vector<int32_t> queued, draft_pending, drafted, verify_argmax;
  size_t queued_at = 0;
  ForwardOptions dfo;
  if (draft) {
    dfo.workspace = draft->workspace;
    // Greedy: the draft's argmax (its logits are not read); sampling: its
    // logits, for the distribution its token is drawn from.
    dfo.argmax = argmax_only ? &argmax : nullptr;
    if (mtp) dfo.hidden = &draft_hidden;  // its own hidden states, which its next draft reads
  }
  // Speculative sampling (temperature, penalties): the draft draws from its
  // own distribution with a generator of its own; the model accepts a draft
  // with probability min(1, p/q) and on a rejection draws from the residual
  // max(0, p - q), so its tokens follow the model's distribution.
  SamplingParams draft_params = draft && draft->sampling ? *draft->sampling : o.sampling;
  draft_params.seed = o.sampling.seed ^ 0x9E3779B97F4A7C15ull;
  Sampler draft_sampler(draft_params);
  std::vector<Sampler::Weighted> qs;  // each draft's distribution, normalized
  Sampler::Weighted pdist, residual;
  std::vector<int32_t> history;
  std::unordered_map<int32_t, double> q_of;
  DraftAdapt adapt;
  // Gated delta-net layers cannot drop positions: each side keeps a copy of
  // its recurrent state from before a step's passes, and after a rejection
  // goes back to it and runs the kept tokens again (one pass, sequential
  // delta rule: the bits of having run them one at a time). One copy each
  // for the run, made here.
  auto recurrent = [](const HParams& hp) {
    for (uint32_t il = 0; il < hp.n_layer; ++il)
      if (hp.IsRecurrentLayer(il)) return true;
    return false;
  };
  std::optional<SequenceState> target_snap, draft_snap;
  if (draft && recurrent(model_.hp())) {
    auto st = SequenceState::Create(backend_, model_.hp(), 0, state_.kv_type);
    if (!st.ok()) return st.status().WithContext("speculative decoding's copy of the recurrent state");
    target_snap.emplace(std::move(*st));
  }
  if (draft && !mtp && recurrent(draft->model->hp())) {
    auto st = SequenceState::Create(*draft->backend, draft->model->hp(), 0, draft->state->kv_type);
    if (!st.ok()) return st.status().WithContext("speculative decoding's copy of the draft's recurrent state");
    draft_snap.emplace(std::move(*st));
  }
  if (draft) {
    fo.delta_net = DeltaNetMode::kSequential;  // decode steps and verification passes: batch-invariant
    dfo.delta_net = DeltaNetMode::kSequential;
  }
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
    const bool from_queue = queued_at < queued.size();
    const int32_t id = from_queue ? queued[queued_at++] : have_argmax ? argmax.back() : sampler.Sample(last, r.tokens);
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
    // An accepted draft: the target's cache already holds its position.
    if (from_queue && queued_at < queued.size()) {
      ++r.n_decoded;
      continue;
    }
    if (state_.n_past >= state_.n_ctx) {
      r.stop = StopReason::kContextFull;
      break;
    }
    if (draft && r.spec_stopped_at >= 0) {  // the adaptive rule gave up on it
      draft = nullptr;
      fo.hidden = nullptr;
    }
    if (draft) {
      // Draft up to n tokens after `id`, verify [id, drafts] in one pass of
      // the target, keep the longest agreeing prefix and the target's next.
      const HParams& hp = model_.hp();
      int64_t n = draft->max_draft;
      n = std::min<int64_t>(n, state_.n_ctx - state_.n_past - 1);
      n = std::min<int64_t>(n, batch - 1);  // a verification pass of n + 1 tokens within the planned passes
      n = std::min<int64_t>(n, state_.MaxPassTokens(hp) - 1);
      n = std::min<int64_t>(n, draft->state->MaxPassTokens(draft->model->hp()) - 1);
      if (o.n_predict >= 0) n = std::min<int64_t>(n, o.n_predict - static_cast<int64_t>(r.tokens.size()) - 1);
      if (n > 0 && draft->adaptive) {
        n = std::min(n, adapt.Choose(n));
        if (n == 0) ++r.n_undrafted;
      }
      queued.clear();
      queued_at = 0;
      draft_pending.push_back(id);
      if (mtp) pending_hidden.insert(pending_hidden.end(), pending_h.begin(), pending_h.end());
      // Steps without drafts leave tokens the draft has not read: it reads
      // them in one pass before they outgrow a pass.
      const int64_t catch_up =
          std::min<int64_t>(batch, draft->state->MaxPassTokens(draft->model->hp()) - 1 - draft->max_draft);
      if (n == 0 && static_cast<int64_t>(draft_pending.size()) >= std::max<int64_t>(catch_up, 1)) {
        ForwardOptions cfo = dfo;
        cfo.argmax = &dargmax;
        cfo.logits = false;  // (an MTP block: no head; a draft model's pass computes them regardless)
        cfo.hidden = nullptr;
        STRATA_RETURN_IF_ERROR(draft_pass(draft_pending, pending_hidden, cfo));
        draft_pending.clear();
        pending_hidden.clear();
      }
      if (n > 0) {
        const int64_t target_base = state_.n_past;
        const int64_t draft_base = draft->state->n_past + static_cast<int64_t>(draft_pending.size()) - 1;  // id's
        drafted.clear();
        if (draft_snap) STRATA_RETURN_IF_ERROR(draft->backend->CopyRecurrent(*draft->state, *draft_snap));
        const int64_t draft_snap_at = draft->state->n_past;
        const std::vector<int32_t> draft_read = draft_pending;  // what the draft reads before its drafts
        std::span<const int32_t> feed(draft_pending);
        std::span<const float> feed_h(pending_hidden);  // MTP: the rows it reads them with
        std::vector<float> own_h;                       // MTP: its own hidden state after a draft
        history.assign(r.tokens.begin(), r.tokens.end());  // the penalties' history at each position
        qs.resize(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          const auto td0 = std::chrono::steady_clock::now();
          STRATA_RETURN_IF_ERROR(draft_pass(feed, feed_h, dfo));
          if (mtp) {  // the next draft reads this one with the block's own hidden state
            const auto g = hrow(draft_hidden, static_cast<int64_t>(feed.size()) - 1);
            own_h.assign(g.begin(), g.end());
            feed_h = own_h;
          }
          if (feed.size() == 1) DraftAdapt::Ema(adapt.td, Since(td0));
          int32_t d;
          if (argmax_only) {
            d = argmax.back();
          } else {
            Sampler::Weighted& q = qs[static_cast<size_t>(i)];
            const double total = draft_sampler.Distribution(dlogits, history, nullptr, &q);
            d = draft_sampler.Draw(q, total);
            if (d < 0) return InvalidArgument("the logit bias bans every token of the vocabulary");
            for (auto& e : q) e.second /= total;
          }
          drafted.push_back(d);
          history.push_back(d);
          feed = std::span<const int32_t>(&drafted.back(), 1);
        }
        draft_pending.clear();
        pending_hidden.clear();
        std::vector<int32_t>& verify = queued;  // [id, drafts]; the queue again below
        verify.push_back(id);
        verify.insert(verify.end(), drafted.begin(), drafted.end());
        ForwardOptions vfo = fo;
        vfo.all_logits = true;
        vfo.argmax = argmax_only ? &verify_argmax : nullptr;
        vfo.op_times = nullptr;
        if (target_snap) STRATA_RETURN_IF_ERROR(backend_.CopyRecurrent(state_, *target_snap));
        const auto tv0 = std::chrono::steady_clock::now();
        STRATA_RETURN_IF_ERROR(Forward(model_, backend_, state_, verify, vfo, &logits));
        if (adapt.t1 > 0) DraftAdapt::Ema(adapt.tx, std::max(0.0, (Since(tv0) - adapt.t1) / static_cast<double>(n)));
        int64_t k = 0;
        int32_t next = -1;  // the model's own token after the accepted drafts
        if (argmax_only) {
          while (k < n && verify_argmax[static_cast<size_t>(k)] == drafted[static_cast<size_t>(k)]) ++k;
          next = verify_argmax[static_cast<size_t>(k)];
        } else {
          history.assign(r.tokens.begin(), r.tokens.end());
          auto row = [&](int64_t i) { return std::span<const float>(logits.data() + i * n_vocab, n_vocab); };
          for (; k < n; ++k) {
            const int32_t d = drafted[static_cast<size_t>(k)];
            const double ptotal = sampler.Distribution(row(k), history, nullptr, &pdist);
            if (ptotal <= 0) return InvalidArgument("the logit bias bans every token of the vocabulary");
            q_of.clear();
            for (const auto& [qid, qp] : qs[static_cast<size_t>(k)]) q_of[qid] = qp;
            double p_d = 0;
            for (const auto& [pid, w] : pdist)
              if (pid == d) p_d = w / ptotal;
            const double q_d = q_of[d];  // > 0: d was drawn from q
            if (sampler.Uniform() < std::min(1.0, p_d / q_d)) {
              history.push_back(d);
              continue;
            }
            // Rejected: a draw from max(0, p - q), normalized.
            residual.clear();
            double rtotal = 0;
            for (const auto& [pid, w] : pdist) {
              auto it = q_of.find(pid);
              const double v = w / ptotal - (it == q_of.end() ? 0.0 : it->second);
              if (v > 0) {
                residual.emplace_back(pid, v);
                rtotal += v;
              }
            }
            next = rtotal > 0 ? sampler.Draw(residual, rtotal) : sampler.Draw(pdist, ptotal);
            break;
          }
          if (k == n) {  // every draft accepted: the model's own draw after them
            const double ptotal = sampler.Distribution(row(n), history, nullptr, &pdist);
            next = sampler.Draw(pdist, ptotal);
            if (next < 0) return InvalidArgument("the logit bias bans every token of the vocabulary");
          }
        }
        // Rejected positions leave both caches (a rewind of at most n: a
        // sliding window's ring holds it, sequence_state.h).
        // An MTP block keeps only what it read with the target's hidden
        // states (through id); it reads the kept drafts again with theirs.
        const int64_t draft_keep = mtp ? draft_base + 1 : draft_base + 1 + k;
        if (!state_.TruncateKv(target_base + 1 + k) ||
            !draft->state->TruncateKv(std::min<int64_t>(draft->state->n_past, draft_keep)))
          return Internal("speculative decoding: a rewind the caches could not take");
        if (target_snap && k < n) {  // back to before the pass, then [id, d1 .. dk] again
          STRATA_RETURN_IF_ERROR(backend_.CopyRecurrent(*target_snap, state_));
          if (!state_.TruncateKv(target_base)) return Internal("speculative decoding: a rewind the cache could not take");
          ForwardOptions rfo = fo;
          rfo.argmax = &verify_argmax;  // (its rows are the ones already read)
          rfo.op_times = nullptr;
          rfo.hidden = nullptr;  // the verification pass's (a pass's rows do not depend on its size)
          STRATA_RETURN_IF_ERROR(Forward(model_, backend_, state_,
                                         std::span<const int32_t>(verify).first(static_cast<size_t>(k) + 1), rfo,
                                         &logits));
          verify_argmax.assign(1, 0);  // not read again
          ++r.n_replayed;
        }
        if (draft_snap && k + 1 < n) {  // the draft read d1 .. d(n-1): back, then what it keeps
          STRATA_RETURN_IF_ERROR(draft->backend->CopyRecurrent(*draft_snap, *draft->state));
          if (!draft->state->TruncateKv(draft_snap_at))
            return Internal("speculative decoding: a rewind the draft's cache could not take");
          std::vector<int32_t> keep = draft_read;
          keep.insert(keep.end(), drafted.begin(), drafted.begin() + k);
          STRATA_RETURN_IF_ERROR(draft_pass(keep, {}, dfo));
        }
        if (mtp) {  // d1 .. dk with the verification pass's rows of id .. d(k-1); dk's row waits
          draft_pending.assign(drafted.begin(), drafted.begin() + k);
          pending_hidden.assign(hidden.begin(), hidden.begin() + k * n_embd);
          const auto hk = hrow(hidden, k);
          pending_h.assign(hk.begin(), hk.end());
        } else if (k == n) {
          draft_pending.push_back(drafted.back());  // accepted, and the draft has not read it
        }
        r.n_drafted += n;
        r.n_accepted += k;
        adapt.Step(n, k);
        adapt.draft_seen = true;
        if (draft->adaptive && adapt.gave_up) r.spec_stopped_at = static_cast<int64_t>(r.tokens.size());
        ++r.n_verify;
        ++r.n_decoded;  // id
        queued.assign(drafted.begin(), drafted.begin() + k);
        queued.push_back(next);
        queued_at = 0;
        continue;
      }
    }
    // Feed the token back.
    const auto t_step = std::chrono::steady_clock::now();
    STRATA_RETURN_IF_ERROR(Forward(model_, backend_, state_, std::span<const int32_t>(&id, 1), fo, &logits));
    if (draft) {
      DraftAdapt::Ema(adapt.t1, Since(t_step));
      adapt.plain_seen = true;
    }
    ++r.n_decoded;
    if (mtp && fo.hidden) pending_h = hidden;  // one row
    last = std::span<const float>(logits.data(), n_vocab);
    if (draft) {  // no room to draft: the target's next token, as a queue of one
      queued.assign(1, argmax_only ? argmax.back() : sampler.Sample(last, r.tokens));
      queued_at = 0;
    }
    if (cb.on_logits) cb.on_logits(last);
    if (stopping) {
      r.stop = eog ? StopReason::kEndOfGeneration : hit ? StopReason::kStopString : StopReason::kTokenLimit;
      break;
    }
  }
  r.gen_seconds = Since(t1);
  if (mtp && o.draft->hidden) *o.draft->hidden = pending_h;  // its last position's, for a next run
  // A stop on an accepted draft leaves the later ones in the cache: trim it
  // to what plain decoding leaves (the prompt and every fed token). Gated
  // delta-net state cannot be trimmed (docs/speculative.md).
  if (o.draft && r.spec_off.empty() && !target_snap) {
    if (!state_.TruncateKv(prompt_end + r.n_decoded))
      return Internal("speculative decoding: a rewind the cache could not take at the end");
  }
  if (tok_ && r.stop != StopReason::kStopString) {
    std::string rest = stop.Flush();
    r.text += rest;
    if (cb.on_text && !rest.empty()) cb.on_text(rest);
  }
  return r;
}

}  // namespace strata
