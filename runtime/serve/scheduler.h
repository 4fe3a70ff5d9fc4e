#pragma once
// Scheduler: continuous batching over a fixed set of slots.
//
// Each slot owns one SequenceState of the full context, allocated when the
// scheduler is created, so the memory of serving is planned (and refused if
// it does not fit) before the first request. One thread runs steps; each
// step gathers every active slot into ONE ForwardBatch call: one token for
// each slot that is generating, and a chunk of the prompt for each slot that
// is still reading one (at most `step_tokens` tokens in a step). Requests
// join and leave the batch between steps. Requests beyond the slots wait in
// a bounded FIFO queue; beyond that, Submit refuses them (503).
//
// Prefix reuse. A slot keeps what it computed after its request ends. A new
// request goes to the idle slot that can reuse the most of its prompt:
//  - attention-only models: the longest common prefix of the slot's tokens
//    and the prompt (the KV cache is cut back to it);
//  - models with recurrent layers (qwen35moe): recurrent state cannot be cut
//    back, so only two points are reusable: the slot's whole sequence (when
//    the prompt starts with all of it: the usual next turn of a chat or an
//    agent), and the slot's last prompt but its last token, where the slot
//    keeps a snapshot of the recurrent state (a regenerated answer, or a next
//    turn whose re-sent answer tokenizes differently from what was generated).
//    To take that snapshot, a prompt's last token runs in a step of its own.
// At least the prompt's last token always runs (its logits start the answer).

#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/memory/run_memory.h"
#include "runtime/model/backend.h"
#include "runtime/model/model.h"
#include "runtime/model/sequence_state.h"
#include "runtime/serve/job.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::serve {

struct SchedulerOptions {
  int parallel = 1;            // slots
  int64_t n_ctx = 4096;        // positions per slot
  KvType kv_type = KvType::kF32;  // how the slots' KV caches store rows (--kv-type)
  int queue_limit = 64;        // requests waiting beyond the slots
  int32_t step_tokens = 512;   // tokens per forward pass, all slots together (>= parallel)
  bool log_requests = true;    // one line per finished request on stderr
  int step_delay_ms = 0;       // tests only: a pause before each step, so timing-dependent tests hold
  DeltaNetMode delta_net = DeltaNetMode::kSequential;  // how gated delta-net layers run prompts
  // What the memory plan allocated (runtime/memory/run_memory.h): the slots
  // take its `parallel` states (moved out), every step runs in its workspace
  // and through its expert tiers. Null: the scheduler allocates its own
  // states and each step its own scratch. Must outlive the scheduler.
  RunMemory* memory = nullptr;
};

// How much of a slot's cache a prompt reuses (see the header comment).
struct ReusePlan {
  int64_t tokens = 0;             // positions kept
  bool restore_snapshot = false;  // recurrent state comes from the snapshot
};
// cached: the slot's tokens; snapshot_pos: where its recurrent snapshot was
// taken (-1: none). REQUIRES: !prompt.empty().
ReusePlan PlanReuse(std::span<const int32_t> cached, std::span<const int32_t> prompt, bool recurrent,
                    int64_t snapshot_pos);

// One slot as GET /slots shows it.
struct SlotSnapshot {
  int id = 0;
  bool is_processing = false;
  int64_t n_cached = 0;       // positions its state holds
  int64_t n_prompt = 0;       // the running request's prompt tokens
  int64_t n_decoded = 0;      // ... and tokens generated so far
};

struct SchedulerMetrics {
  int n_slots = 0;
  std::vector<SlotSnapshot> slots;
  int64_t n_ctx = 0;
  uint64_t prompt_tokens_total = 0;         // prompt tokens run
  uint64_t prompt_tokens_reused_total = 0;  // prompt tokens taken from a slot's cache
  uint64_t swa_reuse_refused = 0;           // prefixes a sliding window's ring no longer held (run afresh)
  uint64_t tokens_predicted_total = 0;
  double prompt_seconds_total = 0;          // step time spent on prompt tokens
  double predicted_seconds_total = 0;       // step time spent on generated tokens
  uint64_t requests_finished_total = 0;
  uint64_t requests_cancelled_total = 0;
  uint64_t requests_rejected_total = 0;     // queue full or shutting down
  uint64_t requests_failed_total = 0;
  // Expert tiers (--expert-device): copied from the executor after each step.
  bool expert_tiers = false;
  uint64_t expert_hits_total = 0;         // routed token-expert pairs served from a device slot
  uint64_t expert_pinned_hits_total = 0;  // of which from a pinned slot
  uint64_t expert_misses_total = 0;       // computed on the host tier
  uint64_t expert_uploads_total = 0;
  uint64_t expert_evictions_total = 0;
  int requests_processing = 0;              // in a slot
  int requests_deferred = 0;                // in the queue
  uint64_t kv_cache_tokens = 0;             // positions held by all slots
  uint64_t n_decode_total = 0;              // forward passes
  uint64_t n_busy_slots_total = 0;          // sequences over all forward passes
  uint64_t state_bytes = 0;                 // memory of all slots
};

class Scheduler {
 public:
  // Allocates every slot; errors (kResourceExhausted) with the plan when the
  // memory is not there. The model, backend and tokenizer must outlive it.
  static Result<std::unique_ptr<Scheduler>> Create(const Model& model, Backend& backend,
                                                   const tokenizer::Tokenizer& tok, const SchedulerOptions& options);
  ~Scheduler();

  // Bytes all slots take (what Create allocates).
  static uint64_t PlannedBytes(const HParams& hp, const SchedulerOptions& options);

  void Start();
  // Queues a request. Errors: 503 when the queue is full or the server is
  // shutting down.
  Result<std::shared_ptr<Job>> Submit(GenerationRequest request, ApiError* rejection);
  // Queues the requests of one API call (its prompts, each with n choices)
  // together, or none of them. Consecutive requests with the same prompt form
  // a group (group ids set here): a choice that is admitted while the first
  // one reads the prompt copies its cache instead.
  Result<std::vector<std::shared_ptr<Job>>> SubmitAll(std::vector<GenerationRequest> requests, ApiError* rejection);
  // Cancels a job (its client went away) and wakes the scheduler.
  void Cancel(const std::shared_ptr<Job>& job);
  // From now on Submit refuses (503): the first thing shutdown does.
  void StopAccepting();
  // Shutdown: refuse new requests, fail queued ones (503), let running ones
  // finish for up to `grace_ms`, then cancel them, and stop the thread.
  void Drain(int grace_ms);
  // Cancels everything running now (a second SIGINT).
  void CancelAll();

  SchedulerMetrics Metrics() const;
  // Ok while the backend can run passes. After a step failed and the backend
  // reported itself lost (Backend::Health: a poisoned GPU context), that
  // error: the scheduler has refused every queued request (503) and refuses
  // new ones; the server reports it on /health and exits.
  Status Health() const;
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Slot;
  Scheduler(const Model& model, Backend& backend, const tokenizer::Tokenizer& tok,
            const SchedulerOptions& options);
  void Loop();
  bool HasWorkLocked() const;
  void AdmitLocked();
  void Admit(Slot& slot, std::shared_ptr<Job> job, Slot* leader);
  void StartFollowers(Slot& leader, std::span<const float> logits, std::chrono::steady_clock::time_point t1);
  int32_t SampleToken(Slot& slot, std::span<const float> logits, std::string* piece);
  void Step();
  // Ends every running request with a 500 (the exception barrier of Loop).
  void FailRunning(const std::string& what) noexcept;
  // After a failed step: when the backend is lost, stop taking work.
  void CheckBackendHealth();
  void Emit(Slot& slot, std::span<const float> logits);
  void FinishSlot(Slot& slot, FinishReason reason, const ApiError* error);
  void SnapshotSlotsLocked();  // metrics_.slots from slots_ (mu_ held, on the scheduler thread)

  const Model& model_;
  Backend& backend_;
  const tokenizer::Tokenizer& tok_;
  SchedulerOptions options_;
  bool recurrent_ = false;
  std::vector<int32_t> eog_ids_;  // allowed by a grammar that can end
  std::vector<std::unique_ptr<Slot>> slots_;  // touched by the scheduler thread only
  uint64_t use_clock_ = 0;                    // for least-recently-used slot choice

  mutable std::mutex mu_;
  std::condition_variable cv_;       // work for the scheduler thread
  std::condition_variable idle_cv_;  // a slot was freed (for Drain)
  std::deque<std::shared_ptr<Job>> queue_;
  int active_ = 0;
  bool draining_ = false;
  bool cancel_all_ = false;
  bool stop_ = false;
  bool purge_ = false;               // a queued job was cancelled
  Status lost_ = Status::Ok();       // the backend's Health() after a failed step
  uint64_t next_id_ = 1;
  SchedulerMetrics metrics_;
  std::thread thread_;
};

}  // namespace strata::serve
