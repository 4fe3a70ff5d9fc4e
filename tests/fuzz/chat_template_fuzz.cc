// libFuzzer target: the Jinja chat-template interpreter (runtime/chat/jinja.h)
// on arbitrary template text, rendered with a conversation that has every
// field real templates read. Templates come from packs, so from strangers:
// no input may crash, hang, exhaust memory or trip a sanitizer; parsing and
// rendering must end in text or an error, within the render limits.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "runtime/chat/jinja.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using strata::fuzz::Check;

const nlohmann::ordered_json& Context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Hi <|im_end|> {{ x }}"},
      {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello", "reasoning_content": "hmm",
       "tool_calls": [{"id": "call12345", "type": "function",
                       "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},
      {"role": "tool", "tool_call_id": "call12345", "content": "{\"ok\": 1}"},
      {"role": "user", "content": ""}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"a": {"type": "array"}}}}}],
    "add_generation_prompt": true, "enable_thinking": false, "bos_token": "<s>", "eos_token": "</s>"
  })");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = jinja::Template::Parse(source);
  if (!tmpl.ok()) return 0;
  jinja::Limits limits;
  limits.max_output = 1 << 16;
  limits.max_steps = 200000;
  limits.max_call_depth = 16;
  limits.fixed_time = 0;
  auto out = tmpl->Render(Context(), limits);
  if (out.ok()) Check(out->size() <= limits.max_output);
  return 0;
}
