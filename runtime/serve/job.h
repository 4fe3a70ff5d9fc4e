#pragma once
// Job: one generation request as it passes between an HTTP handler thread
// (which submitted it and writes its answer to the client) and the
// scheduler thread (which runs it in a slot). The handler waits for text,
// the scheduler appends it; either side may end the job: the scheduler when
// generation stops, the handler by Cancel() when its client went away.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/grammar/token_mask.h"
#include "runtime/model/sampler.h"
#include "runtime/serve/api_error.h"

namespace strata::serve {

// Wakes a handler that waits for any of several jobs (n > 1 choices).
struct JobSignal {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t seq = 0;
  void Notify() {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++seq;
    }
    cv.notify_all();
  }
};

// One generated token's log probability (logprobs / top_logprobs).
struct TokenLogprob {
  std::string piece;  // the token's bytes (may be part of a UTF-8 character)
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;  // most likely first
};

// What the scheduler runs.
struct GenerationRequest {
  std::vector<int32_t> prompt;      // not empty, shorter than the slot context
  SamplingParams sampling;
  int32_t max_tokens = -1;          // -1: until end of generation or a full context
  std::vector<std::string> stop;    // stop strings (the template's included)
  bool ignore_eog = false;          // generate past end-of-generation tokens (tests, benchmarks)
  std::string kind = "chat";        // for the log line
  // Constrained sampling: every token must continue the grammar, and the
  // answer ends when the grammar does. The masker may be shared by requests
  // with the same grammar; only the scheduler thread uses it.
  std::shared_ptr<grammar::TokenMasker> grammar;
  // The grammar applies once the answer contains this text (the end of a
  // thinking block the prompt opened); empty: from the first token.
  std::string grammar_after;
  int top_logprobs = -1;            // -1: no log probabilities; else the alternatives per token (<= 20)
  // Choices of one request (n > 1): the same group id; index 0 runs the
  // prompt and the others copy its cache when they run beside it.
  uint64_t group = 0;
  int group_index = 0;
  // llama-server's id_slot: run in this slot (waiting for it); -1 any.
  int id_slot = -1;
  std::shared_ptr<JobSignal> signal;  // notified on every update, if set
};

enum class FinishReason { kNone, kStop, kLength, kCancelled };
const char* FinishReasonName(FinishReason r);  // "stop", "length", "cancelled"

struct JobStats {
  int64_t prompt_tokens = 0;     // all of the prompt
  int64_t reused_tokens = 0;     // of which came from the slot's cache
  int64_t completion_tokens = 0;
  int slot = -1;
  double queued_ms = 0, prompt_ms = 0, gen_ms = 0;
  double grammar_ms = 0;         // constrained sampling: checking tokens and computing masks
};

// What a handler takes out of a job in one Wait.
struct JobUpdate {
  std::string text;              // new text (valid UTF-8), may be empty
  std::vector<TokenLogprob> logprobs;  // of the tokens generated since the last update
  bool started = false;          // the job has a slot
  bool done = false;
  FinishReason finish = FinishReason::kNone;
  std::optional<ApiError> error;  // done with an error instead of an answer
  JobStats stats;                 // final when done
};

class Job {
 public:
  explicit Job(GenerationRequest request, uint64_t id)
      : request_(std::move(request)), id_(id), submitted_(std::chrono::steady_clock::now()) {}

  const GenerationRequest& request() const { return request_; }
  uint64_t id() const { return id_; }
  std::chrono::steady_clock::time_point submitted() const { return submitted_; }

  // Handler side. Waits up to `timeout` for news; moves the new text out.
  // Returns false on timeout with nothing new.
  bool Wait(std::chrono::milliseconds timeout, JobUpdate* out);
  // The client is gone: the scheduler frees the slot at its next step.
  void Cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // Scheduler side.
  void Started(int slot);
  void Append(const std::string& text, std::vector<TokenLogprob>* logprobs = nullptr);
  void Finish(FinishReason reason, const JobStats& stats);
  void Fail(const ApiError& error, const JobStats& stats);

 private:
  // Called with mu_ held; the signal's own lock is taken after ours, never before.
  void Notify() {
    if (request_.signal) request_.signal->Notify();
  }
  GenerationRequest request_;
  uint64_t id_;
  std::chrono::steady_clock::time_point submitted_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string text_;      // appended, not yet taken
  std::vector<TokenLogprob> logprobs_;
  bool news_ = false;
  bool started_ = false;
  bool done_ = false;
  FinishReason finish_ = FinishReason::kNone;
  std::optional<ApiError> error_;
  JobStats stats_;
};

}  // namespace strata::serve
