#pragma once
// ReasoningSplitter: separates a thinking model's reasoning from its answer
// as the text streams: what stands between <think> and </think> is
// reasoning (returned as `reasoning_content`), the rest is content. A
// prompt that already opened the block (the template wrote "<think>" at the
// end of the generation prompt) starts inside it; otherwise a <think> at the
// very start of the output opens it. Tags split across pieces are held back
// until they are whole; whitespace around the reasoning and at the start of
// the answer after it is dropped, as llama-server does. Pushing the text in
// any pieces gives the same result as pushing it whole.

#include <string>
#include <string_view>

namespace strata::serve {

class ReasoningSplitter {
 public:
  struct Out {
    std::string reasoning, content;
  };
  // enabled = false: everything is content.
  ReasoningSplitter(bool enabled, bool starts_inside);
  Out Push(std::string_view text);
  // The end of the output: what was held back.
  Out Finish();

 private:
  enum class State { kStart, kReasoning, kAfter, kContent };
  void Run(Out* out, bool final);
  State state_;
  std::string pending_;
  bool reasoning_started_ = false;  // a non-whitespace reasoning byte was emitted
};

}  // namespace strata::serve
