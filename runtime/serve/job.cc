#include "runtime/serve/job.h"

namespace strata::serve {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "none";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
  }
  return "?";
}

bool Job::Wait(std::chrono::milliseconds timeout, JobUpdate* out) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return news_; })) return false;
  news_ = false;
  out->text = std::move(text_);
  text_.clear();
  out->logprobs = std::move(logprobs_);
  logprobs_.clear();
  out->started = started_;
  out->done = done_;
  out->finish = finish_;
  out->error = error_;
  out->stats = stats_;
  return true;
}

void Job::Started(int slot) {
  std::lock_guard<std::mutex> lock(mu_);
  started_ = true;
  stats_.slot = slot;
  news_ = true;
  cv_.notify_all();
  Notify();
}

void Job::Append(const std::string& text, std::vector<TokenLogprob>* logprobs) {
  const bool more = logprobs && !logprobs->empty();
  if (text.empty() && !more) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    text_ += text;
    if (more) {
      for (TokenLogprob& lp : *logprobs) logprobs_.push_back(std::move(lp));
      logprobs->clear();
    }
    news_ = true;
    cv_.notify_all();
    Notify();
  }
}

void Job::Finish(FinishReason reason, const JobStats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  finish_ = reason;
  stats_ = stats;
  news_ = true;
  cv_.notify_all();
  Notify();
}

void Job::Fail(const ApiError& error, const JobStats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  error_ = error;
  stats_ = stats;
  news_ = true;
  cv_.notify_all();
  Notify();
}

}  // namespace strata::serve
