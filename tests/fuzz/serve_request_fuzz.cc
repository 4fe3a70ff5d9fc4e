// libFuzzer target: the server's request parsing (chat and completions
// bodies), the JSON depth scan and the UTF-8 stream, on arbitrary bytes;
// and, treating the bytes as model output, the reasoning splitter and the
// tool-call parsers (two pieces give what the whole gives).
// No input may crash, hang, leak or trip a sanitizer, and what the parser
// accepts must hold the promises the rest of the server relies on.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/serve/api_request.h"
#include "runtime/serve/reasoning.h"
#include "runtime/serve/harmony.h"
#include "runtime/serve/tool_calls.h"
#include "runtime/serve/utf8_stream.h"
#include "tests/fuzz/fuzz_check.h"

using strata::fuzz::Check;

namespace {
// What the server puts into a reply's tool_calls: a name, and arguments that
// are a JSON object, both UTF-8.
void CheckCall(const strata::serve::ToolCall& c) {
  using strata::serve::SanitizeUtf8;
  Check(!c.name.empty() && !c.arguments.empty() && c.arguments[0] == '{');
  Check(SanitizeUtf8(c.name) == c.name && SanitizeUtf8(c.arguments) == c.arguments);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::serve;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  ApiLimits limits;
  limits.n_ctx = 4096;
  limits.n_vocab = 1000;
  for (ApiKind kind : {ApiKind::kChat, ApiKind::kCompletion, ApiKind::kInfill}) {
    ApiRequest r;
    auto error = ParseApiRequest(kind, body, strata::SamplingParams{}, limits, &r);
    if (error) {
      Check(error->status == 400);
      Check(!error->message.empty());
      Check(!error->Body().empty());  // always serializable, whatever bytes the message quotes
      continue;
    }
    Check(r.max_tokens == -1 || (r.max_tokens >= 1 && r.max_tokens <= limits.n_ctx));
    Check(r.sampling.logit_bias.size() + r.logit_bias_text.size() <= strata::serve::kMaxLogitBias);
    for (const auto& [id, bias] : r.sampling.logit_bias) Check(id >= 0 && static_cast<uint32_t>(id) < limits.n_vocab);
    Check(r.prompts.size() * static_cast<size_t>(r.n) <= 2 * strata::serve::kMaxPrompts);
    Check(r.sampling.Validate().ok());
    Check(r.stop.size() <= limits.max_stop);
    for (const std::string& s : r.stop) Check(!s.empty() && s.size() <= limits.max_stop_bytes);
    if (kind == ApiKind::kChat) {
      Check(!r.messages.empty());
    } else if (kind == ApiKind::kInfill) {
      Check(r.n == 1 && r.top_logprobs < 0 && r.n_indent >= 0 && r.input_extra.size() <= 1024);
    } else if (r.prompt_is_ids) {
      Check(!r.prompt_ids.empty());
      for (int32_t id : r.prompt_ids) Check(id >= 0 && static_cast<uint32_t>(id) < limits.n_vocab);
    } else {
      Check(!r.prompt_text.empty());
    }
  }
  (void)JsonDepth(body, 64);

  // UTF-8: fed in two pieces equals fed whole, and the result is valid.
  const size_t cut = size ? data[0] % (size + 1) : 0;
  Utf8Stream s;
  std::string pieces = s.Push(body.substr(0, cut));
  pieces += s.Push(body.substr(cut));
  pieces += s.Finish();
  const std::string whole = SanitizeUtf8(body);
  Check(pieces == whole);
  Check(SanitizeUtf8(whole) == whole);

  // Model output: reasoning and tool calls split in two pieces equal split whole.
  for (bool inside : {false, true}) {
    ReasoningSplitter a(true, inside), b(true, inside);
    ReasoningSplitter::Out w = a.Push(body), wt = a.Finish();
    ReasoningSplitter::Out p1 = b.Push(body.substr(0, cut)), p2 = b.Push(body.substr(cut)), pt = b.Finish();
    Check(w.reasoning + wt.reasoning == p1.reasoning + p2.reasoning + pt.reasoning);
    Check(w.content + wt.content == p1.content + p2.content + pt.content);
  }
  for (bool tools : {false, true}) {  // gpt-oss's harmony: the same promise
    HarmonyStreamer a(tools), b(tools);
    HarmonyStreamer::Out w = a.Push(body), wt = a.Finish();
    HarmonyStreamer::Out p1 = b.Push(body.substr(0, cut)), p2 = b.Push(body.substr(cut)), pt = b.Finish();
    Check(w.reasoning + wt.reasoning == p1.reasoning + p2.reasoning + pt.reasoning);
    Check(w.content + wt.content == p1.content + p2.content + pt.content);
    Check(w.calls.size() + wt.calls.size() == p1.calls.size() + p2.calls.size() + pt.calls.size());
    for (const auto* out : {&w, &wt})
      for (const ToolCall& c : out->calls) CheckCall(c);
  }
  for (ToolCallFormat f : {ToolCallFormat::kJson, ToolCallFormat::kXml, ToolCallFormat::kMistral, ToolCallFormat::kLlama3,
                           ToolCallFormat::kGlm, ToolCallFormat::kDeepSeek, ToolCallFormat::kGeneric,
                           ToolCallFormat::kKimi}) {
    ToolCallStreamer a(f), b(f);
    ToolCallStreamer::Out w = a.Push(body), wt = a.Finish();
    ToolCallStreamer::Out p1 = b.Push(body.substr(0, cut)), p2 = b.Push(body.substr(cut)), pt = b.Finish();
    Check(w.content + wt.content == p1.content + p2.content + pt.content);
    Check(w.calls.size() + wt.calls.size() == p1.calls.size() + p2.calls.size() + pt.calls.size());
    for (const auto* out : {&w, &wt})
      for (const ToolCall& c : out->calls) CheckCall(c);
  }
  return 0;
}
