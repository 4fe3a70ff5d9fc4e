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
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/sampler.h"
#include "runtime/serve/api_error.h"

namespace strata::serve {

// What the scheduler runs.
struct GenerationRequest {
  std::vector<int32_t> prompt;      // not empty, shorter than the slot context
  SamplingParams sampling;
  int32_t max_tokens = -1;          // -1: until end of generation or a full context
  std::vector<std::string> stop;    // stop strings (the template's included)
  bool ignore_eog = false;          // generate past end-of-generation tokens (tests, benchmarks)
  std::string kind = "chat";        // for the log line
};

enum class FinishReason { kNone, kStop, kLength, kCancelled };
const char* FinishReasonName(FinishReason r);  // "stop", "length", "cancelled"

struct JobStats {
  int64_t prompt_tokens = 0;     // all of the prompt
  int64_t reused_tokens = 0;     // of which came from the slot's cache
  int64_t completion_tokens = 0;
  int slot = -1;
  double queued_ms = 0, prompt_ms = 0, gen_ms = 0;
};

// What a handler takes out of a job in one Wait.
struct JobUpdate {
  std::string text;              // new text (valid UTF-8), may be empty
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
  void Append(const std::string& text);
  void Finish(FinishReason reason, const JobStats& stats);
  void Fail(const ApiError& error, const JobStats& stats);

 private:
  GenerationRequest request_;
  uint64_t id_;
  std::chrono::steady_clock::time_point submitted_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string text_;      // appended, not yet taken
  bool news_ = false;
  bool started_ = false;
  bool done_ = false;
  FinishReason finish_ = FinishReason::kNone;
  std::optional<ApiError> error_;
  JobStats stats_;
};

}  // namespace strata::serve
