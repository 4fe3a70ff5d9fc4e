#pragma once
// Parsing and checking the bodies of /v1/chat/completions and
// /v1/completions. Every way a body can be wrong ends here as an ApiError
// that names the field and what was expected; nothing past this point sees
// an unchecked value.
//
// Fields the server does not implement but that would change the answer if
// ignored (tools, response_format other than text, logprobs, n > 1, ...) are
// refused; other unknown fields are ignored, as OpenAI clients send many.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/chat/chat_template.h"
#include "runtime/model/sampler.h"
#include "runtime/serve/api_error.h"

namespace strata::serve {

// kInfill: llama-server's /infill (code completion for editors).
enum class ApiKind { kChat, kCompletion, kInfill };

struct ApiLimits {
  int64_t n_ctx = 4096;        // the context of one slot: a larger max_tokens is clamped to it
  uint32_t n_vocab = 0;        // token ids in a prompt must be below it
  size_t max_stop = 16;        // stop strings per request
  size_t max_stop_bytes = 1024;
  int max_json_depth = 64;     // deeper bodies are refused before parsing
};

// A completions prompt: text, or token ids.
struct ApiPrompt {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

struct ApiRequest {
  ApiKind kind = ApiKind::kChat;
  std::string model;                  // as sent (the server has one model and answers with its name)
  std::vector<ChatMessage> messages;  // kChat
  std::string prompt_text;            // kCompletion, unless prompt_ids
  std::vector<int32_t> prompt_ids;    // kCompletion with a token array
  bool prompt_is_ids = false;
  std::vector<ApiPrompt> prompts;     // kCompletion: every prompt (the first is also in the fields above)
  bool echo = false;                  // kCompletion: each answer starts with its prompt
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  bool ignore_eos = false;            // llama.cpp's extension: generate past end-of-generation tokens
  SamplingParams sampling;            // the server's defaults, overridden by the request
  bool has_seed = false;
  int32_t max_tokens = -1;            // -1: not given (the server's default applies)
  std::vector<std::string> stop;
  // chat_template_kwargs: variables for the chat template (enable_thinking, ...).
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
  // reasoning_format other than "none": thinking goes to reasoning_content.
  bool split_reasoning = true;
  // tools: OpenAI's [{"type": "function", "function": {name, description, parameters}}], checked.
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  bool tool_choice_none = false;     // tool_choice "none": the template gets no tools, nothing is parsed
  bool parallel_tool_calls = true;   // false: only the first call of an answer is returned
  bool tool_choice_required = false; // "required": the answer is tool calls (constrained)
  std::string tool_choice_name;      // {"type": "function", ...}: a call of this one (constrained)
  // Constrained output: response_format json_object / json_schema, llama-server's grammar / json_schema.
  enum class Constraint { kNone, kJsonObject, kJsonSchema, kGrammar };
  Constraint constraint = Constraint::kNone;
  nlohmann::ordered_json json_schema;  // kJsonSchema
  std::string grammar;                 // kGrammar: GBNF
  int top_logprobs = -1;              // -1: no logprobs; else alternatives per token
  // logit_bias keys that are text: each token of the text gets the bias
  // (the server tokenizes them; ids are in sampling.logit_bias).
  std::vector<std::pair<std::string, float>> logit_bias_text;
  int n = 1;                          // choices
  int id_slot = -1;                   // llama-server's id_slot: -1 any
  // kInfill: the code before and after the cursor, other files for context
  // ({filename, text}), and llama-server's n_indent (a line indented less
  // ends the answer; 0: off). prompt_text, optional, follows the middle token.
  std::string input_prefix, input_suffix;
  std::vector<std::pair<std::string, std::string>> input_extra;
  int n_indent = 0;
};

inline constexpr int kMaxChoices = 8;
inline constexpr size_t kMaxLogitBias = 1024;  // entries of logit_bias
inline constexpr size_t kMaxPrompts = 16;      // prompts of one completions request (each with n choices)

// Parses a body. `defaults` are the server's sampling defaults (from the
// command line). Returns the error to send, or nullopt with *out filled.
std::optional<ApiError> ParseApiRequest(ApiKind kind, std::string_view body, const SamplingParams& defaults,
                                        const ApiLimits& limits, ApiRequest* out);

// Nesting depth of a JSON text (brackets outside strings), stopping early
// once it passes `limit`. Used to refuse bodies that would make a recursive
// parser or destructor run deep.
int JsonDepth(std::string_view text, int limit);

}  // namespace strata::serve
