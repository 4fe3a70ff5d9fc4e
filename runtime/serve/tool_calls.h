#pragma once
// Tool calls in a model's output, in the formats the pack's chat template
// teaches the model (it is told the format in its prompt by the template):
//   kJson: <tool_call>{"name": ..., "arguments": {...}}</tool_call>
//          (Qwen2.5, Qwen3, Hermes; "parameters" is read as "arguments")
//   kXml:  <tool_call><function=NAME><parameter=KEY>VALUE</parameter>...
//          </function></tool_call> (Qwen3.5, Qwen3-Coder)
//   kMistral: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...] to the
//          end of the answer (Mistral Nemo, Small)
//   kLlama3: the whole answer is {"name": ..., "parameters": {...}}
//          (Llama 3.1-3.3's JSON tool calling; an optional <|python_tag|>)
//   kGlm:  <tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>
//          ...</tool_call> (GLM-4.5, GLM-4.6)
//   kDeepSeek: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}
//          <｜tool▁call▁end｜>...<｜tool▁calls▁end｜> (DeepSeek V3.1)
//   kKimi: <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:INDEX
//          <|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|> (Kimi K2)
// ToolCallStreamer separates calls from content as the text streams: text
// from <tool_call> on is held back until its </tool_call>, then parsed; a
// block that does not parse is given back as content, so nothing is lost.
// (kDeepSeek, kKimi: the same with their call tokens; the tokens around the
// list of calls are not content.)

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/status.h"
#include "runtime/chat/chat_template.h"

namespace strata::serve {

// kHarmony: gpt-oss's messages to functions.NAME (runtime/serve/harmony.h
// parses them, with its channels).
// kGeneric: for a template without tool calls (llama-server's generic
// format): the tools are described in the system message and the whole
// answer is one JSON object, {"tool_calls": [{"name", "arguments"}, ...]} or
// {"response": "..."}, always constrained by GenericToolGrammar.
enum class ToolCallFormat { kNone, kJson, kXml, kMistral, kLlama3, kGlm, kDeepSeek, kHarmony, kGeneric, kKimi };

// The format a chat template teaches (kNone: it has no tool calls Strata reads).
ToolCallFormat ToolCallFormatOf(std::string_view template_source);

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, as text (OpenAI's function.arguments)
};

// The GBNF (runtime/grammar) of an answer that is only tool calls in
// `format`, for tool_choice "required" (any of `tools`) or a named function
// (`only`): names from the tools, arguments constrained to each tool's
// parameter schema. `parallel`: one or more calls, else exactly one.
// kGeneric's whole answer: tool calls (of `only`, when named; at most one
// unless `parallel`), or, when `allow_response` (tool_choice "auto"), a
// {"response": TEXT} answer.
Result<std::string> GenericToolGrammar(const nlohmann::ordered_json& tools, const std::string& only, bool parallel,
                                       bool allow_response);

// kGeneric's conversation: `messages` with the tools and the answer format
// described in the system message (the first one, or a new one), assistant
// tool calls written as the JSON answer that made them, and tool results as
// user messages ({"tool_response": {"name", "tool_call_id", "content"}}, one
// user message for consecutive results), for templates that know neither.
// `system_role` false: the description goes at the start of the first user
// message instead (for templates that refuse a system message: Gemma's).
std::vector<ChatMessage> GenericToolMessages(const std::vector<ChatMessage>& messages,
                                             const nlohmann::ordered_json& tools, bool system_role = true);

Result<std::string> ToolCallGrammar(ToolCallFormat format, const nlohmann::ordered_json& tools,
                                    const std::string& only, bool parallel);

// The id the API gives the index-th call of an answer when the template
// needs one of its own: Kimi K2's writes a call as functions.NAME:INDEX and
// a tool result's tool_call_id as it is ("## Return of ID"), so a result
// names its call only with that id. Others: none (a random call_ id).
std::optional<std::string> TemplateCallId(ToolCallFormat format, const std::string& name, size_t index);

// One call from the text between <tool_call> and </tool_call> (kDeepSeek,
// kKimi: between the call-begin and call-end tokens).
Result<ToolCall> ParseToolCall(ToolCallFormat format, std::string_view inner);

class ToolCallStreamer {
 public:
  struct Out {
    std::string content;
    std::vector<ToolCall> calls;
  };
  explicit ToolCallStreamer(ToolCallFormat format) : format_(format) {}
  Out Push(std::string_view text);
  Out Finish();
  bool any_call() const { return calls_ > 0; }
  ToolCallFormat format() const { return format_; }

 private:
  void Run(Out* out, bool final);
  void RunToEnd(Out* out, bool final);
  void RunGeneric(Out* out, bool final);
  ToolCallFormat format_;
  std::string pending_;
  bool in_call_ = false;
  size_t calls_ = 0;
  bool decided_ = false;  // kLlama3: whether the answer starts with '{' is known
};

}  // namespace strata::serve
