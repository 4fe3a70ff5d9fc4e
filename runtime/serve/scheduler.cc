#include "runtime/serve/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>
#include <cctype>
#include <optional>
#include <stdexcept>

#include "runtime/base/fault_injection.h"
#include "runtime/base/platform.h"
#include "runtime/base/strings.h"
#include "runtime/model/forward.h"
#include "runtime/model/sampler.h"
#include "runtime/serve/stop_matcher.h"
#include "runtime/serve/utf8_stream.h"

namespace strata::serve {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

double Rate(int64_t n, double ms) { return ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0.0; }

}  // namespace

ReusePlan PlanReuse(std::span<const int32_t> cached, std::span<const int32_t> prompt, bool recurrent,
                    int64_t snapshot_pos) {
  const int64_t max_reuse = static_cast<int64_t>(prompt.size()) - 1;  // the last prompt token always runs
  const size_t limit = std::min(cached.size(), prompt.size());
  int64_t lcp = 0;
  while (static_cast<size_t>(lcp) < limit && cached[static_cast<size_t>(lcp)] == prompt[static_cast<size_t>(lcp)])
    ++lcp;
  ReusePlan plan;
  if (!recurrent) {
    plan.tokens = std::min(lcp, max_reuse);
    return plan;
  }
  const int64_t whole = static_cast<int64_t>(cached.size());
  if (lcp == whole && whole <= max_reuse) {
    plan.tokens = whole;  // the state is exactly at the end of what the prompt starts with
    return plan;
  }
  if (snapshot_pos > 0 && snapshot_pos <= lcp && snapshot_pos <= max_reuse) {
    plan.tokens = snapshot_pos;
    plan.restore_snapshot = true;
  }
  return plan;
}

struct Scheduler::Slot {
  // Where prefix reuse can go back to; none when the copy fails.
  void TakeSnapshot() { snapshot_pos = state.backend()->CopyRecurrent(state, snapshot).ok() ? state.n_past : -1; }

  // kFollow: a choice (n > 1) waiting for the slot running its prompt, whose
  // cache it copies when that prompt is read.
  enum class Phase { kIdle, kPrompt, kFollow, kGenerate };
  int id = 0;
  SequenceState state;
  std::vector<int32_t> cached;  // the tokens the state holds, in order (size == state.n_past)
  // Recurrent state at the last prompt but its last token (models with recurrent layers).
  int64_t snapshot_pos = -1;
  SequenceState snapshot;  // recurrent part only (no positions), on the same backend
  uint64_t last_used = 0;

  // The request in the slot.
  Phase phase = Phase::kIdle;
  std::shared_ptr<Job> job;
  size_t prompt_pos = 0;       // next prompt token to run
  int32_t next_token = 0;      // kGenerate: the token to feed
  std::vector<int32_t> generated;
  std::optional<Sampler> sampler;
  StopMatcher stop;
  bool stop_string_hit = false;
  Utf8Stream utf8;
  int follow = -1;  // kFollow: the slot running the prompt
  // Constrained sampling.
  std::optional<grammar::Matcher> matcher;
  bool grammar_on = false;  // false until grammar_after appeared
  std::string gate_tail;     // the answer's last bytes, to find grammar_after
  std::vector<uint64_t> mask;
  std::vector<TokenLogprob> logprobs;  // to go with the next Append
  JobStats stats;
  Clock::time_point t_admit, t_prompt_done;
};

uint64_t Scheduler::PlannedBytes(const HParams& hp, const SchedulerOptions& o) {
  uint64_t per_slot = SequenceState::BytesFor(hp, o.n_ctx, o.kv_type, o.step_tokens);
  // The recurrent snapshot: as large as the recurrent part of a state, which
  // does not depend on the context.
  uint64_t recurrent = SequenceState::BytesFor(hp, 0);
  return static_cast<uint64_t>(o.parallel) * (per_slot + recurrent);
}

Result<std::unique_ptr<Scheduler>> Scheduler::Create(const Model& model, Backend& backend,
                                                     const tokenizer::Tokenizer& tok, const SchedulerOptions& o) {
  if (o.parallel < 1) return InvalidArgument("--parallel must be at least 1");
  if (o.n_ctx < 2) return InvalidArgument("the context must hold at least 2 tokens");
  if (o.step_tokens < o.parallel)
    return InvalidArgument(StrFormat("-b %d is smaller than --parallel %d: every generating slot needs one token "
                                     "per step",
                                     o.step_tokens, o.parallel));
  const HParams& hp = model.hp();
  const uint64_t bytes = PlannedBytes(hp, o);
  const uint64_t available = AvailableMemoryBytes();
  if (o.memory && o.memory->states.size() != static_cast<size_t>(o.parallel))
    return Internal(StrFormat("the memory plan allocated %zu sequence states for %d slots", o.memory->states.size(),
                              o.parallel));
  if (!o.memory && available > 0 && bytes > available)
    return ResourceExhausted(StrFormat("the slots need %s (%d x %lld positions) but only %s of memory is available; "
                                       "lower --parallel or -c",
                                       HumanBytes(bytes).c_str(), o.parallel, static_cast<long long>(o.n_ctx),
                                       HumanBytes(available).c_str()));
  std::unique_ptr<Scheduler> s(new Scheduler(model, backend, tok, o));
  for (uint32_t il = 0; il < hp.n_layer; ++il) s->recurrent_ |= hp.IsRecurrentLayer(il);
  for (int i = 0; i < o.parallel; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->id = i;
    if (o.memory) {
      slot->state = std::move(o.memory->states[static_cast<size_t>(i)]);
    } else {
      auto st = SequenceState::Create(backend, hp, o.n_ctx, o.kv_type, o.step_tokens);
      if (!st.ok()) return st.status().WithContext(StrFormat("slot %d of %d", i, o.parallel));
      slot->state = std::move(*st);
    }
    if (s->recurrent_) {
      auto snap = SequenceState::Create(backend, hp, 0, o.kv_type);
      if (!snap.ok()) return snap.status().WithContext(StrFormat("the recurrent snapshot of slot %d", i));
      slot->snapshot = std::move(*snap);
    }
    s->slots_.push_back(std::move(slot));
  }
  for (int32_t id = 0; id < tok.n_tokens(); ++id)
    if (tok.IsEog(id)) s->eog_ids_.push_back(id);
  s->metrics_.n_slots = o.parallel;
  s->metrics_.n_ctx = o.n_ctx;
  s->metrics_.state_bytes = bytes;
  s->SnapshotSlotsLocked();  // before the thread starts: nothing else runs
  return s;
}

Scheduler::Scheduler(const Model& model, Backend& backend, const tokenizer::Tokenizer& tok,
                     const SchedulerOptions& options)
    : model_(model), backend_(backend), tok_(tok), options_(options) {}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cancel_all_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::Start() { thread_ = std::thread([this] { Loop(); }); }

Result<std::shared_ptr<Job>> Scheduler::Submit(GenerationRequest request, ApiError* rejection) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  auto jobs = SubmitAll(std::move(one), rejection);
  if (!jobs.ok()) return jobs.status();
  return std::move(jobs->front());
}

Result<std::vector<std::shared_ptr<Job>>> Scheduler::SubmitAll(std::vector<GenerationRequest> requests,
                                                               ApiError* rejection) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!lost_.ok()) {
    ++metrics_.requests_rejected_total;
    *rejection = Busy("the server's device is lost (" + lost_.message() + "): it takes no more work and is stopping");
    return FailedPrecondition(rejection->message);
  }
  if (draining_ || stop_) {
    ++metrics_.requests_rejected_total;
    *rejection = Busy("the server is shutting down");
    return FailedPrecondition(rejection->message);
  }
  const int idle = options_.parallel - active_;
  if (static_cast<int64_t>(queue_.size() + requests.size()) >
      static_cast<int64_t>(idle) + options_.queue_limit) {
    ++metrics_.requests_rejected_total;
    *rejection = Busy(StrFormat("all %d slots are busy and %zu requests are waiting (--queue %d); try again later",
                                options_.parallel, queue_.size(), options_.queue_limit));
    return ResourceExhausted(rejection->message);
  }
  std::vector<std::shared_ptr<Job>> jobs;
  // Consecutive requests with one prompt (the choices of one prompt) form a
  // group: the first reads the prompt, the others copy its cache.
  for (size_t i = 0; i < requests.size();) {
    size_t end = i + 1;
    while (end < requests.size() && requests[end].prompt == requests[i].prompt) ++end;
    const uint64_t group = end - i > 1 ? next_id_ : 0;
    for (size_t k = i; k < end; ++k) {
      requests[k].group = group;
      requests[k].group_index = static_cast<int>(k - i);
      jobs.push_back(std::make_shared<Job>(std::move(requests[k]), next_id_++));
      queue_.push_back(jobs.back());
    }
    i = end;
  }
  metrics_.requests_deferred = static_cast<int>(queue_.size());
  cv_.notify_all();
  return jobs;
}

void Scheduler::Cancel(const std::shared_ptr<Job>& job) {
  job->Cancel();
  {
    std::lock_guard<std::mutex> lock(mu_);
    purge_ = true;
  }
  cv_.notify_all();
}

void Scheduler::CancelAll() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_all_ = true;
  }
  cv_.notify_all();
}

void Scheduler::StopAccepting() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
}

void Scheduler::Drain(int grace_ms) {
  std::deque<std::shared_ptr<Job>> refused;
  {
    std::unique_lock<std::mutex> lock(mu_);
    draining_ = true;
    refused.swap(queue_);
    metrics_.requests_deferred = 0;
    metrics_.requests_rejected_total += refused.size();
  }
  for (auto& job : refused) job->Fail(Busy("the server is shutting down"), {});
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait_for(lock, std::chrono::milliseconds(grace_ms), [&] { return active_ == 0; });
    cancel_all_ = true;
    cv_.notify_all();
    idle_cv_.wait(lock, [&] { return active_ == 0; });
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

SchedulerMetrics Scheduler::Metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_;
}

Status Scheduler::Health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_;
}

void Scheduler::CheckBackendHealth() {
  Status health = backend_.Health();
  if (health.ok()) return;
  std::deque<std::shared_ptr<Job>> refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!lost_.ok()) return;
    lost_ = health;
    draining_ = true;
    refused.swap(queue_);
    metrics_.requests_deferred = 0;
    metrics_.requests_rejected_total += refused.size();
  }
  std::fprintf(stderr, "strata serve: error: the backend is lost (%s): its requests end with 500, %zu queued with "
               "503; no more work is taken\n", health.message().c_str(), refused.size());
  for (auto& job : refused)
    job->Fail(Busy("the server's device is lost (" + health.message() + "): it takes no more work and is stopping"),
              {});
}

bool Scheduler::HasWorkLocked() const {
  return active_ > 0 || purge_ || (!queue_.empty() && active_ < options_.parallel);
}

void Scheduler::Loop() {
  while (true) {
    // The exception barrier: whatever a step throws ends the requests it was
    // running (500) and the loop goes on with the rest.
    try {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || HasWorkLocked(); });
        if (stop_ && active_ == 0) break;
        AdmitLocked();
      }
      if (options_.step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options_.step_delay_ms));
      if (ShouldInjectFault(FaultSite::kServeStep)) throw std::runtime_error("injected fault: server step");
      Step();
    } catch (const std::exception& e) {
      FailRunning(std::string("internal error: ") + e.what());
    } catch (...) {
      FailRunning("internal error");
    }
  }
}

void Scheduler::FailRunning(const std::string& what) noexcept {
  std::fprintf(stderr, "strata serve: error: a step failed: %s; its requests end with 500\n", what.c_str());
  try {
    CheckBackendHealth();
    ApiError e = ServerError(what);
    for (auto& s : slots_) {
      if (s->phase == Slot::Phase::kIdle || !s->job) continue;
      FinishSlot(*s, FinishReason::kNone, &e);
      s->cached.clear();  // the slot starts afresh: its state is unknown
      s->snapshot_pos = -1;
    }
  } catch (...) {
    std::fprintf(stderr, "strata serve: error: failing the step's requests failed too\n");
  }
}

void Scheduler::AdmitLocked() {
  if (purge_) {
    purge_ = false;
    metrics_.requests_cancelled_total +=
        std::erase_if(queue_, [](const std::shared_ptr<Job>& j) { return j->cancelled(); });
  }
  // In order; a job that asks for a busy slot (id_slot) waits for it
  // without holding up the jobs behind it.
  for (size_t q = 0; q < queue_.size() && active_ < options_.parallel;) {
    const int wanted = queue_[q]->request().id_slot;
    if (wanted >= 0 && !queue_[q]->cancelled() &&
        (wanted >= static_cast<int>(slots_.size()) || slots_[static_cast<size_t>(wanted)]->phase != Slot::Phase::kIdle)) {
      ++q;
      continue;
    }
    std::shared_ptr<Job> job = std::move(queue_[q]);
    queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(q));
    if (job->cancelled()) {
      ++metrics_.requests_cancelled_total;
      continue;
    }
    // A choice whose prompt another slot is reading now copies that slot's cache.
    const GenerationRequest& r = job->request();
    Slot* leader = nullptr;
    if (r.group != 0 && r.group_index > 0)
      for (auto& s : slots_)
        if (s->phase == Slot::Phase::kPrompt && s->job->request().group == r.group &&
            s->job->request().group_index == 0)
          leader = s.get();
    // The idle slot that reuses the most; among equals the least recently used.
    Slot* best = nullptr;
    ReusePlan best_plan;
    for (auto& s : slots_) {
      if (s->phase != Slot::Phase::kIdle || (wanted >= 0 && s->id != wanted)) continue;
      ReusePlan plan = PlanReuse(s->cached, job->request().prompt, recurrent_, s->snapshot_pos);
      if (!best || plan.tokens > best_plan.tokens ||
          (plan.tokens == best_plan.tokens && s->last_used < best->last_used)) {
        best = s.get();
        best_plan = plan;
      }
    }
    if (!best) break;  // cannot happen: active_ < parallel means a slot is idle
    ++active_;
    Admit(*best, std::move(job), leader);
  }
  metrics_.requests_deferred = static_cast<int>(queue_.size());
  metrics_.requests_processing = active_;
  SnapshotSlotsLocked();
}

void Scheduler::SnapshotSlotsLocked() {
  metrics_.slots.resize(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = *slots_[i];
    SlotSnapshot& out = metrics_.slots[i];
    out.id = s.id;
    out.is_processing = s.phase != Slot::Phase::kIdle;
    out.n_cached = s.state.n_past;
    out.n_prompt = out.is_processing && s.job ? static_cast<int64_t>(s.job->request().prompt.size()) : 0;
    out.n_decoded = out.is_processing ? static_cast<int64_t>(s.generated.size()) : 0;
  }
}

void Scheduler::Admit(Slot& slot, std::shared_ptr<Job> job, Slot* leader) {
  const auto now = Clock::now();
  const std::vector<int32_t>& prompt = job->request().prompt;
  ReusePlan plan = leader ? ReusePlan{} : PlanReuse(slot.cached, prompt, recurrent_, slot.snapshot_pos);
  Status restored = Status::Ok();
  if (plan.restore_snapshot) restored = backend_.CopyRecurrent(slot.snapshot, slot.state);
  if (!restored.ok()) {
    plan.tokens = 0;  // start the slot afresh
    restored = slot.state.Clear();
  } else if (plan.tokens == 0) {
    restored = slot.state.Clear();
  } else if (!slot.state.TruncateKv(plan.tokens)) {
    // A sliding window's ring no longer holds what the reused prefix's end
    // sees (sequence_state.h): the prompt runs from its start.
    plan.tokens = 0;
    restored = slot.state.Clear();
    ++metrics_.swa_reuse_refused;
  }
  slot.cached.resize(static_cast<size_t>(plan.tokens));
  if (slot.snapshot_pos > plan.tokens) slot.snapshot_pos = -1;  // its tokens are gone

  slot.phase = leader ? Slot::Phase::kFollow : Slot::Phase::kPrompt;
  slot.follow = leader ? leader->id : -1;
  slot.job = std::move(job);
  slot.prompt_pos = static_cast<size_t>(plan.tokens);
  if (!leader && recurrent_ && slot.prompt_pos + 1 == prompt.size() && slot.snapshot_pos != plan.tokens)
    slot.TakeSnapshot();
  slot.generated.clear();
  slot.sampler.emplace(slot.job->request().sampling);
  slot.stop = StopMatcher(slot.job->request().stop);
  slot.stop_string_hit = false;
  slot.utf8 = Utf8Stream();
  const GenerationRequest& req = slot.job->request();
  slot.matcher.reset();
  if (req.grammar) slot.matcher.emplace(req.grammar->shared_grammar());
  slot.grammar_on = req.grammar && req.grammar_after.empty();
  slot.gate_tail.clear();
  slot.logprobs.clear();
  slot.stats = JobStats{};
  slot.stats.slot = slot.id;
  slot.stats.prompt_tokens = static_cast<int64_t>(prompt.size());
  slot.stats.reused_tokens = plan.tokens;
  slot.stats.queued_ms = MsSince(slot.job->submitted(), now);
  slot.t_admit = now;
  slot.last_used = ++use_clock_;
  slot.job->Started(slot.id);
  if (!restored.ok()) {  // the backend could not reset the slot's state: fail this request, not the server
    ApiError e = ServerError("cannot prepare the sequence state: " + restored.message());
    FinishSlot(slot, FinishReason::kNone, &e);
    slot.cached.clear();
    slot.snapshot_pos = -1;
  }
}

void Scheduler::Step() {
  bool cancel_all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_all = cancel_all_;
  }
  // Leaving: cancelled by the client or by shutdown.
  for (auto& s : slots_) {
    if (s->phase == Slot::Phase::kIdle) continue;
    if (s->job->cancelled()) {
      FinishSlot(*s, FinishReason::kCancelled, nullptr);
    } else if (cancel_all) {
      ApiError e = Busy("the server is shutting down; generation was stopped");
      FinishSlot(*s, FinishReason::kCancelled, &e);
    }
  }

  // Gather: one token per generating slot, then prompt chunks in admission order.
  struct Entry {
    Slot* slot;
    bool prompt;
  };
  std::vector<Entry> entries;
  std::vector<SequenceBatch> batch;
  int64_t budget = options_.step_tokens;
  int64_t n_prompt_tokens = 0, n_gen_tokens = 0;
  for (auto& s : slots_) {
    if (s->phase != Slot::Phase::kGenerate) continue;
    entries.push_back({s.get(), false});
    batch.push_back({&s->state, std::span<const int32_t>(&s->next_token, 1), false});
    --budget;
    ++n_gen_tokens;
  }
  std::vector<Slot*> prompting;
  for (auto& s : slots_)
    if (s->phase == Slot::Phase::kPrompt) prompting.push_back(s.get());
  std::sort(prompting.begin(), prompting.end(), [](Slot* a, Slot* b) { return a->last_used < b->last_used; });
  for (Slot* s : prompting) {
    if (budget <= 0) break;
    const std::vector<int32_t>& prompt = s->job->request().prompt;
    const int64_t remaining = static_cast<int64_t>(prompt.size() - s->prompt_pos);
    int64_t n = std::min<int64_t>(budget, remaining);
    if (recurrent_ && n == remaining && remaining > 1) --n;  // the last token alone: snapshot before it
    entries.push_back({s, true});
    batch.push_back({&s->state, std::span<const int32_t>(prompt).subspan(s->prompt_pos, static_cast<size_t>(n)),
                     false});
    budget -= n;
    n_prompt_tokens += n;
  }
  if (batch.empty()) return;

  std::vector<float> logits;
  const auto t0 = Clock::now();
  ForwardOptions fo;
  fo.delta_net = options_.delta_net;
  if (options_.memory) {
    fo.workspace = &options_.memory->workspace;
    fo.experts = options_.memory->experts.get();
  }
  Status st = ForwardBatch(model_, backend_, batch, fo, &logits);
  const auto t1 = Clock::now();
  if (!st.ok()) {
    std::fprintf(stderr, "strata serve: error: forward pass over %zu sequences failed: %s\n", batch.size(),
                 st.message().c_str());
    CheckBackendHealth();  // before the 500s: a client that got one sees /health say so
    ApiError e = ServerError("the forward pass failed: " + st.message());
    for (Entry& en : entries) {
      Slot& s = *en.slot;
      FinishSlot(s, FinishReason::kNone, &e);
      s.cached.clear();  // the slot starts afresh: Admit clears its state (plan.tokens == 0)
      s.snapshot_pos = -1;
    }
    return;
  }
  {
    // Step time is shared between prompt and generated tokens in proportion.
    const double secs = MsSince(t0, t1) / 1000.0;
    const double total = static_cast<double>(n_prompt_tokens + n_gen_tokens);
    std::lock_guard<std::mutex> lock(mu_);
    metrics_.prompt_seconds_total += secs * static_cast<double>(n_prompt_tokens) / total;
    metrics_.predicted_seconds_total += secs * static_cast<double>(n_gen_tokens) / total;
    metrics_.prompt_tokens_total += static_cast<uint64_t>(n_prompt_tokens);
    metrics_.n_decode_total += 1;
    metrics_.n_busy_slots_total += batch.size();
    if (options_.memory && options_.memory->experts) {
      const CacheStats& cs = options_.memory->experts->stats();
      metrics_.expert_tiers = true;
      metrics_.expert_hits_total = cs.hits;
      metrics_.expert_pinned_hits_total = cs.pinned_hits;
      metrics_.expert_misses_total = cs.misses;
      metrics_.expert_uploads_total = cs.uploads;
      metrics_.expert_evictions_total = cs.evictions;
    }
  }

  const size_t V = model_.hp().n_vocab;
  for (size_t i = 0; i < entries.size(); ++i) {
    Slot& s = *entries[i].slot;
    s.cached.insert(s.cached.end(), batch[i].tokens.begin(), batch[i].tokens.end());
    if (entries[i].prompt) {
      s.prompt_pos += batch[i].tokens.size();
      const size_t prompt_size = s.job->request().prompt.size();
      if (recurrent_ && s.prompt_pos + 1 == prompt_size) s.TakeSnapshot();  // where prefix reuse can go back to
      if (s.prompt_pos < prompt_size) continue;  // more prompt next step
      s.t_prompt_done = t1;
      s.stats.prompt_ms = MsSince(s.t_admit, t1);
      s.phase = Slot::Phase::kGenerate;
      StartFollowers(s, std::span<const float>(logits.data() + i * V, V), t1);
    }
    Emit(s, std::span<const float>(logits.data() + i * V, V));
  }

  std::lock_guard<std::mutex> lock(mu_);
  uint64_t kv = 0;
  for (auto& s : slots_) kv += static_cast<uint64_t>(s->state.n_past);
  metrics_.kv_cache_tokens = kv;
  SnapshotSlotsLocked();
}

// The choices waiting for `leader`'s prompt take a copy of its cache and
// sample their first token from the same logits.
void Scheduler::StartFollowers(Slot& leader, std::span<const float> logits, Clock::time_point t1) {
  for (auto& f : slots_) {
    if (f->phase != Slot::Phase::kFollow || f->follow != leader.id) continue;
    f->follow = -1;
    Status st = CopySequence(leader.state, f->state);
    if (!st.ok()) {  // it reads the prompt itself
      std::fprintf(stderr, "strata serve: note: copying slot %d's cache to slot %d failed (%s); it reads the prompt\n",
                   leader.id, f->id, st.message().c_str());
      f->phase = Slot::Phase::kPrompt;
      f->prompt_pos = 0;
      f->cached.clear();
      if (!f->state.Clear().ok()) f->state.n_past = 0;
      continue;
    }
    f->cached = leader.cached;
    f->snapshot_pos = -1;
    f->prompt_pos = f->job->request().prompt.size();
    f->stats.reused_tokens = static_cast<int64_t>(f->prompt_pos);
    f->t_prompt_done = t1;
    f->stats.prompt_ms = MsSince(f->t_admit, t1);
    f->phase = Slot::Phase::kGenerate;
    Emit(*f, logits);
  }
}

// The next token: sampled freely, then read by the grammar (if any); only a
// token the grammar refuses makes it compute the whole mask and sample
// again among what it allows. *piece: the token's text. Returns -1 after
// finishing the slot.
int32_t Scheduler::SampleToken(Slot& s, std::span<const float> logits, std::string* piece) {
  const GenerationRequest& r = s.job->request();
  const bool constrained = s.matcher && s.grammar_on;
  if (constrained && s.matcher->MustEnd()) {  // the grammar is complete: the answer is
    FinishSlot(s, FinishReason::kStop, nullptr);
    return -1;
  }
  const auto t0 = Clock::now();
  int32_t id = s.sampler->Sample(logits, s.generated);
  if (id < 0 && !constrained) {  // logit_bias banned every token
    ApiError e = BadRequest("'logit_bias' bans every token of the vocabulary", "logit_bias", "invalid_value");
    FinishSlot(s, FinishReason::kNone, &e);
    return -1;
  }
  *piece = id >= 0 ? tok_.TokenToPiece(id, false) : std::string();
  if (!constrained) return id;
  // Accept reads the token (and leaves the matcher as it was when it cannot);
  // a token without text (a control token) is never grammar text.
  const bool ok = tok_.IsEog(id) ? s.matcher->CanEnd() : !piece->empty() && s.matcher->Accept(*piece);
  if (!ok) {
    r.grammar->Compute(*s.matcher, &s.mask);
    s.mask.resize((logits.size() + 63) / 64, 0);  // ids past the tokenizer's are never allowed
    if (s.matcher->CanEnd())
      for (int32_t e : eog_ids_) s.mask[static_cast<size_t>(e) >> 6] |= uint64_t{1} << (e & 63);
    id = s.sampler->Sample(logits, s.generated, s.mask.data());
    if (id >= 0) {
      *piece = tok_.TokenToPiece(id, false);
      if (!tok_.IsEog(id)) (void)s.matcher->Accept(*piece);  // in the mask: it reads
    }
  }
  s.stats.grammar_ms += MsSince(t0, Clock::now());
  if (s.matcher->overflowed() || r.grammar->overflowed()) {  // masks would be incomplete
    r.grammar->MarkTooAmbiguous();  // the server's cache keeps it: later requests with it get a 400
    ApiError e = BadRequest(grammar::TooAmbiguousMessage(), "grammar", "invalid_grammar");
    FinishSlot(s, FinishReason::kNone, &e);
    return -1;
  }
  if (id < 0) {
    ApiError e = ServerError("the grammar allows no token of this vocabulary here, and the text so far cannot end");
    FinishSlot(s, FinishReason::kNone, &e);
  }
  return id;
}

void Scheduler::Emit(Slot& s, std::span<const float> logits) {
  const GenerationRequest& r = s.job->request();
  std::string piece;
  const int32_t id = SampleToken(s, logits, &piece);
  if (id < 0) return;
  s.generated.push_back(id);
  const bool eog = !r.ignore_eog && tok_.IsEog(id);
  bool hit = false;
  if (!eog) {
    if (r.top_logprobs >= 0) {
      const float lse = Sampler::LogSumExp(logits);
      TokenLogprob lp;
      lp.piece = piece;
      lp.logprob = logits[static_cast<size_t>(id)] - lse;
      for (const Sampler::Logprob& t : Sampler::TopLogprobs(logits, lse, static_cast<size_t>(r.top_logprobs)))
        lp.top.emplace_back(tok_.TokenToPiece(t.id, true), t.logprob);
      s.logprobs.push_back(std::move(lp));
    }
    if (r.grammar && !s.grammar_on) {  // the grammar starts after grammar_after
      s.gate_tail += piece;
      const size_t at = s.gate_tail.find(r.grammar_after);
      if (at != std::string::npos) {
        s.grammar_on = true;
        std::string_view rest = std::string_view(s.gate_tail).substr(at + r.grammar_after.size());
        while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) rest.remove_prefix(1);
        if (!rest.empty()) (void)s.matcher->Accept(rest);
      } else if (s.gate_tail.size() > 4 * r.grammar_after.size() + 64) {
        s.gate_tail.erase(0, s.gate_tail.size() - r.grammar_after.size());
      }
    }
    s.job->Append(s.utf8.Push(s.stop.Push(piece, &hit)), &s.logprobs);
  }
  const bool limit = r.max_tokens >= 0 && static_cast<int64_t>(s.generated.size()) >= r.max_tokens;
  s.stop_string_hit = hit;
  if (eog || hit) {
    FinishSlot(s, FinishReason::kStop, nullptr);
  } else if (limit || s.state.n_past >= s.state.n_ctx) {
    FinishSlot(s, FinishReason::kLength, nullptr);
  } else {
    s.next_token = id;
  }
}

void Scheduler::FinishSlot(Slot& s, FinishReason reason, const ApiError* error) {
  const auto now = Clock::now();
  for (auto& f : slots_) {  // choices waiting for this prompt read it themselves
    if (f->phase != Slot::Phase::kFollow || f->follow != s.id) continue;
    f->follow = -1;
    f->phase = Slot::Phase::kPrompt;
  }
  JobStats& st = s.stats;
  st.completion_tokens = static_cast<int64_t>(s.generated.size());
  if (s.phase == Slot::Phase::kGenerate) {
    st.gen_ms = MsSince(s.t_prompt_done, now);
  } else {
    st.prompt_ms = MsSince(s.t_admit, now);
  }
  if (options_.log_requests) {
    const int64_t read = st.prompt_tokens - st.reused_tokens;
    std::fprintf(stderr,
                 "strata serve: request %llu (%s, slot %d): prompt %lld tokens = %lld reused + %lld read in %.0f ms "
                 "(%.1f tok/s), %lld generated in %.0f ms (%.1f tok/s), waited %.0f ms, %s\n",
                 static_cast<unsigned long long>(s.job->id()), s.job->request().kind.c_str(), s.id,
                 static_cast<long long>(st.prompt_tokens), static_cast<long long>(st.reused_tokens),
                 static_cast<long long>(read), st.prompt_ms, Rate(read, st.prompt_ms),
                 static_cast<long long>(st.completion_tokens), st.gen_ms, Rate(st.completion_tokens, st.gen_ms),
                 st.queued_ms, error ? ("failed: " + error->message).c_str() : FinishReasonName(reason));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    --active_;
    metrics_.requests_processing = active_;
    metrics_.prompt_tokens_reused_total += static_cast<uint64_t>(st.reused_tokens);
    metrics_.tokens_predicted_total += static_cast<uint64_t>(st.completion_tokens);
    if (error && reason != FinishReason::kCancelled) ++metrics_.requests_failed_total;
    else if (reason == FinishReason::kCancelled) ++metrics_.requests_cancelled_total;
    else ++metrics_.requests_finished_total;
  }
  idle_cv_.notify_all();
  // The job hears last, so whoever it answers sees the counters already updated.
  if (error) {
    s.job->Fail(*error, st);
  } else {
    // Held-back text that did not become a stop string is shown (as the CLI does).
    std::string tail = s.stop.Flush();
    s.job->Append(s.utf8.Push(s.stop_string_hit ? std::string() : tail) + s.utf8.Finish());
    s.job->Finish(reason, st);
  }
  s.phase = Slot::Phase::kIdle;
  s.follow = -1;
  s.job.reset();
  s.sampler.reset();
  s.matcher.reset();
}

}  // namespace strata::serve
