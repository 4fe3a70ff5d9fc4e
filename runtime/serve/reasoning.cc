#include "runtime/serve/reasoning.h"

#include "runtime/serve/text_scan.h"

namespace strata::serve {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

}  // namespace

ReasoningSplitter::ReasoningSplitter(bool enabled, bool starts_inside)
    : state_(!enabled ? State::kContent : starts_inside ? State::kReasoning : State::kStart) {}

ReasoningSplitter::Out ReasoningSplitter::Push(std::string_view text) {
  Out out;
  if (state_ == State::kContent) {
    out.content.assign(text);
    return out;
  }
  pending_.append(text);
  Run(&out, false);
  return out;
}

ReasoningSplitter::Out ReasoningSplitter::Finish() {
  Out out;
  Run(&out, true);
  return out;
}

void ReasoningSplitter::Run(Out* out, bool final) {
  while (true) {
    switch (state_) {
      case State::kStart: {
        size_t k = 0;
        while (k < pending_.size() && IsSpace(pending_[k])) ++k;
        const std::string_view rest = std::string_view(pending_).substr(k);
        if (rest.substr(0, kOpen.size()) == kOpen) {
          pending_.erase(0, k + kOpen.size());
          state_ = State::kReasoning;
          continue;
        }
        if (!final && kOpen.substr(0, rest.size()) == rest) return;  // maybe the tag, not whole yet
        out->content += pending_;
        pending_.clear();
        state_ = State::kContent;
        return;
      }
      case State::kReasoning: {
        if (!reasoning_started_) {  // drop whitespace before the reasoning
          size_t k = 0;
          while (k < pending_.size() && IsSpace(pending_[k])) ++k;
          pending_.erase(0, k);
        }
        const size_t close = pending_.find(kClose);
        if (close != std::string::npos) {
          std::string_view r = std::string_view(pending_).substr(0, close);
          while (!r.empty() && IsSpace(r.back())) r.remove_suffix(1);
          out->reasoning.append(r);
          pending_.erase(0, close + kClose.size());
          state_ = State::kAfter;
          continue;
        }
        // Emit up to trailing whitespace and a partial </think>, which may still end the block.
        const size_t keep = final ? 0 : PartialTagAtEnd(pending_, kClose);
        size_t end = pending_.size() - keep;
        while (end > 0 && IsSpace(pending_[end - 1])) --end;
        if (end > 0) reasoning_started_ = true;
        out->reasoning.append(pending_, 0, end);
        if (final) pending_.clear();
        else pending_.erase(0, end);
        return;
      }
      case State::kAfter: {  // drop whitespace between </think> and the answer
        size_t k = 0;
        while (k < pending_.size() && IsSpace(pending_[k])) ++k;
        if (k == pending_.size()) {
          pending_.clear();
          return;  // maybe more whitespace to come
        }
        out->content += pending_.substr(k);
        pending_.clear();
        state_ = State::kContent;
        return;
      }
      case State::kContent:
        out->content += pending_;
        pending_.clear();
        return;
    }
  }
}

}  // namespace strata::serve
