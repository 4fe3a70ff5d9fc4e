#pragma once
// HarmonyStreamer: gpt-oss's output (OpenAI's harmony format) as the text
// streams, into reasoning, content and tool calls:
//
//   <|channel|>analysis<|message|>THINKING<|end|>
//   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>
//   <|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//
// A message's header (up to <|message|>) names its channel and, for a tool
// call, its recipient (`to=functions.NAME`, in the header before or after
// the channel). The analysis channel is reasoning (`reasoning_content`); a
// message to a function is a tool call whose body is its arguments; the
// final channel and commentary without a recipient are content. The
// generation prompt ends with "<|start|>assistant", so the output starts in
// a header. <|return|> and <|call|> end generation (the tokenizer's
// end-of-generation set, so they do not reach the text); <|end|> ends one
// message. Markers split across pieces are held back until whole; text that
// is not harmony at all comes out as content at the end. Pushing the text in
// any pieces gives what pushing it whole gives.

#include <string>
#include <string_view>
#include <vector>

#include "runtime/serve/tool_calls.h"

namespace strata::serve {

// Whether a chat template speaks harmony (gpt-oss's).
bool IsHarmonyTemplate(std::string_view template_source);

class HarmonyStreamer {
 public:
  struct Out {
    std::string reasoning, content;
    std::vector<ToolCall> calls;
  };
  // tools: messages to functions are tool calls (else their text is content).
  explicit HarmonyStreamer(bool tools) : tools_(tools) {}
  Out Push(std::string_view text);
  Out Finish();

 private:
  enum class Where { kHeader, kBody };
  void Run(Out* out, bool final);
  void EndMessage(Out* out);
  bool tools_;
  Where where_ = Where::kHeader;
  std::string pending_;
  std::string header_;       // the current message's header so far
  std::string channel_;      // analysis, commentary, final
  std::string recipient_;    // functions.NAME, or empty
  std::string call_body_;    // a tool call's arguments so far
  bool any_message_ = false; // a <|message|> was seen
};

}  // namespace strata::serve
