#include "runtime/serve/api_server.h"
#include "runtime/serve/harmony.h"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "runtime/base/fault_injection.h"
#include "runtime/base/strings.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/serve/chat_prompt.h"
#include "runtime/serve/metrics_text.h"
#include "runtime/serve/reasoning.h"
#include "runtime/serve/tool_calls.h"
#include "runtime/serve/utf8_stream.h"
#include "runtime/serve/web_page.h"
#include "strata/version.h"

namespace strata::serve {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// How often a handler that has nothing to send writes a keep-alive (and so
// finds out whether its client is still there).
constexpr auto kKeepAlive = std::chrono::milliseconds(500);
// A non-streamed answer that is ready within this time gets a normal
// response; a later one is preceded by keep-alive whitespace.
constexpr auto kQuickAnswer = std::chrono::milliseconds(300);

void SendJson(HttpResponse& res, int status, const json& body) { res.Send(status, "application/json", Dump(body)); }

void SendError(HttpResponse& res, const ApiError& e) { res.Send(e.status, "application/json", e.Body()); }


// A literal IPv4 or IPv6 address (what a DNS-rebinding page cannot send as Host).
bool IsIpLiteral(std::string_view h) {
  if (h.find(':') != std::string_view::npos) return true;  // SplitHostHeader only lets ':' through inside [...]
  int dots = 0;
  for (char c : h) {
    if (c == '.') ++dots;
    else if (c < '0' || c > '9') return false;
  }
  return dots == 3;
}

uint64_t RandomU64() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  return rng();
}

std::string RandomId(const char* prefix) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = prefix;
  uint64_t bits = 0;
  for (int i = 0; i < 24; ++i) {
    if (i % 10 == 0) bits = RandomU64();  // 62^10 < 2^64: ten letters per draw
    id += kAlphabet[bits % 62];
    bits /= 62;
  }
  return id;
}

// Request-controlled text for the log: control characters cannot forge lines
// or move the cursor, and the length is bounded.
std::string LogSafe(std::string_view s, size_t max = 160) {
  std::string out;
  for (char c : s.substr(0, max)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7F) ? '?' : c;
  }
  if (s.size() > max) out += "...";
  return out;
}

// Compares a key without stopping at the first difference.
bool ConstantTimeEquals(std::string_view given, std::string_view expected) {
  if (expected.empty()) return false;
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  return diff == 0;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json UsageJson(const JobStats& s) {
  return {{"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", s.completion_tokens},
          {"total_tokens", s.prompt_tokens + s.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", s.reused_tokens}}}};
}

// llama-server's "timings" extension (the chat page shows its speeds).
json TimingsJson(const JobStats& s) {
  const int64_t read = s.prompt_tokens - s.reused_tokens;
  auto rate = [](int64_t n, double ms) { return ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0.0; };
  return {{"cache_n", s.reused_tokens},        {"prompt_n", read},
          {"prompt_ms", s.prompt_ms},          {"prompt_per_second", rate(read, s.prompt_ms)},
          {"predicted_n", s.completion_tokens}, {"predicted_ms", s.gen_ms},
          {"predicted_per_second", rate(s.completion_tokens, s.gen_ms)}, {"queued_ms", s.queued_ms},
          {"slot", s.slot}};
}

// Log probabilities as OpenAI's chat API writes them.
json LogprobEntry(const std::string& piece, float logprob) {
  json bytes = json::array();
  for (char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  return {{"token", SanitizeUtf8(piece)}, {"logprob", logprob}, {"bytes", bytes}};
}
json ChatLogprobs(const std::vector<TokenLogprob>& lps) {
  json content = json::array();
  for (const TokenLogprob& lp : lps) {
    json e = LogprobEntry(lp.piece, lp.logprob);
    json top = json::array();
    for (const auto& [piece, l] : lp.top) top.push_back(LogprobEntry(piece, l));
    e["top_logprobs"] = top;
    content.push_back(e);
  }
  return {{"content", content}, {"refusal", nullptr}};
}
// ... and as its legacy completions API does; `offset`: bytes of text before these tokens.
json CompletionLogprobs(const std::vector<TokenLogprob>& lps, size_t offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const TokenLogprob& lp : lps) {
    tokens.push_back(SanitizeUtf8(lp.piece));
    token_logprobs.push_back(lp.logprob);
    json alts = json::object();
    // Keyed by text, as OpenAI's legacy form is: tokens whose texts are the
    // same (byte pieces of one character) share a key, which keeps the most
    // likely one's logprob (lp.top is most likely first).
    for (const auto& [piece, l] : lp.top) alts.emplace(SanitizeUtf8(piece), l);
    top.push_back(alts);
    offsets.push_back(offset);
    offset += lp.piece.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

// One choice of a generation request: its job and what its text became.
struct Choice {
  std::shared_ptr<Job> job;
  // Thinking models: reasoning and answer, separated as the text comes.
  ReasoningSplitter splitter{false, false};
  // Non-streamed answers accumulate here.
  std::string text, reasoning;
  std::vector<TokenLogprob> logprobs;  // non-streamed: all; streamed: not yet sent
  size_t logprob_bytes = 0;            // streamed completions: text_offset so far
  bool done = false;
  FinishReason finish = FinishReason::kNone;
  std::optional<ApiError> error;
  JobStats stats;
  // Tool calls in the answer (when the request has tools and the template a format).
  std::optional<ToolCallStreamer> tool_streamer;
  // gpt-oss's harmony: channels (reasoning, content) and calls in one parser.
  std::optional<HarmonyStreamer> harmony;
  std::vector<std::pair<std::string, ToolCall>> calls;  // id, call
  std::string echo;  // completions with echo: the prompt, before the answer
  // /infill's n_indent (llama-server's rule): after a newline, a line whose
  // indentation (spaces and tabs) is less than n_indent ends the answer; the
  // answer keeps that line's newline and indentation. The indentation of the
  // line being written is held back until it is known.
  int n_indent = 0;
  bool line_start = false;  // after a newline: reading the line's indentation
  std::string indent;       // held back
  bool indent_stop = false;
  std::string GateIndent(const std::string& piece, bool last) {
    if (n_indent <= 0) return piece;
    std::string out;
    for (char ch : piece) {
      if (indent_stop) break;
      if (line_start) {
        if (ch == ' ' || ch == '\t') {
          indent += ch;
          continue;
        }
        out += indent;
        const bool shallow = indent.size() < static_cast<size_t>(n_indent);
        indent.clear();
        line_start = false;
        if (shallow) {
          indent_stop = true;
          break;
        }
      }
      out += ch;
      if (ch == '\n') line_start = true;
    }
    if (last && !indent_stop) out += std::exchange(indent, std::string());
    return out;
  }
};

// One generation request between its handler and the scheduler.
struct Exchange {
  ApiKind kind = ApiKind::kChat;
  bool include_usage = false;
  bool logprobs = false;
  std::string id, model, fingerprint;
  int64_t created = 0;
  Scheduler* scheduler = nullptr;
  bool parallel_tool_calls = true;
  std::vector<Choice> choices;
  std::shared_ptr<JobSignal> signal = std::make_shared<JobSignal>();

  struct Delta {
    std::string reasoning, content;
    size_t first_new_call = 0, new_calls = 0;  // calls[first_new_call ...]
  };
  // Splits one update's text into reasoning, content and tool calls; at the
  // end, also what was held back.
  Delta Split(Choice& c, JobUpdate& u) {
    for (TokenLogprob& lp : u.logprobs) c.logprobs.push_back(std::move(lp));
    if (c.harmony) {
      HarmonyStreamer::Out h = c.harmony->Push(u.text);
      if (u.done) {
        HarmonyStreamer::Out tail = c.harmony->Finish();
        h.reasoning += tail.reasoning;
        h.content += tail.content;
        for (ToolCall& call : tail.calls) h.calls.push_back(std::move(call));
      }
      Delta d;
      d.reasoning = std::move(h.reasoning);
      d.content = std::move(h.content);
      d.first_new_call = c.calls.size();
      for (ToolCall& call : h.calls) {
        if (!parallel_tool_calls && !c.calls.empty()) continue;
        c.calls.emplace_back(RandomId("call_"), std::move(call));
      }
      d.new_calls = c.calls.size() - d.first_new_call;
      return d;
    }
    if (kind == ApiKind::kInfill) {
      Delta d;
      if (!c.indent_stop) d.content = c.GateIndent(u.text, u.done);
      if (c.indent_stop && !u.done) scheduler->Cancel(c.job);  // ends with a last update; the answer is complete
      return d;
    }
    ReasoningSplitter::Out out = c.splitter.Push(u.text);
    if (u.done) {
      ReasoningSplitter::Out tail = c.splitter.Finish();
      out.reasoning += tail.reasoning;
      out.content += tail.content;
    }
    Delta d;
    d.reasoning = std::move(out.reasoning);
    d.first_new_call = c.calls.size();
    if (!c.tool_streamer) {
      d.content = std::move(out.content);
      return d;
    }
    ToolCallStreamer::Out t = c.tool_streamer->Push(out.content);
    if (u.done) {
      ToolCallStreamer::Out tail = c.tool_streamer->Finish();
      t.content += tail.content;
      for (ToolCall& call : tail.calls) t.calls.push_back(std::move(call));
    }
    d.content = std::move(t.content);
    for (ToolCall& call : t.calls) {
      if (!parallel_tool_calls && !c.calls.empty()) continue;  // one call per answer
      std::string call_id =
          TemplateCallId(c.tool_streamer->format(), call.name, c.calls.size()).value_or(RandomId("call_"));
      c.calls.emplace_back(std::move(call_id), std::move(call));
    }
    d.new_calls = c.calls.size() - d.first_new_call;
    return d;
  }
  static json ToolCallJson(const Choice& c, size_t index, bool with_index) {
    json j = json::object();
    if (with_index) j["index"] = index;
    j["id"] = c.calls[index].first;
    j["type"] = "function";
    j["function"] = {{"name", c.calls[index].second.name}, {"arguments", c.calls[index].second.arguments}};
    return j;
  }
  // The last update: how the job ended.
  static void Finish(Choice& c, const JobUpdate& u) {
    c.done = true;
    c.finish = u.finish;
    c.error = u.error;
    c.stats = u.stats;
  }
  void Absorb(Choice& c, JobUpdate& u) {
    Delta out = Split(c, u);
    c.text += out.content;
    c.reasoning += out.reasoning;
    if (u.done) Finish(c, u);
  }
  bool AllDone() const {
    for (const Choice& c : choices)
      if (!c.done) return false;
    return true;
  }
  const std::optional<ApiError>* FirstError() const {
    for (const Choice& c : choices)
      if (c.error) return &c.error;
    return nullptr;
  }
  void CancelAll() const {
    for (const Choice& c : choices)
      if (!c.done) scheduler->Cancel(c.job);
  }
  // The prompt once, the answers of every choice.
  JobStats Stats() const {
    JobStats st = choices.front().stats;
    for (size_t i = 1; i < choices.size(); ++i) st.completion_tokens += choices[i].stats.completion_tokens;
    return st;
  }
  // Finish reasons a client sees ("cancelled" never reaches a connected one).
  static const char* Reason(const Choice& c) {
    if (!c.calls.empty()) return "tool_calls";
    return c.finish == FinishReason::kStop ? "stop" : "length";
  }

  // /infill answers in llama-server's own form (not OpenAI's): content, stop,
  // and at the end the counts and timings.
  json InfillJson(const Choice& c, const std::string& content, bool final) const {
    json j = {{"index", 0}, {"content", content}, {"stop", final}, {"model", model}};
    if (!final) return j;
    j["stop_type"] = c.indent_stop || c.finish == FinishReason::kLength ? "limit"
                     : c.finish == FinishReason::kStop                  ? "eos"
                                                                        : "none";
    j["tokens_predicted"] = c.stats.completion_tokens;
    j["tokens_evaluated"] = c.stats.prompt_tokens;
    j["tokens_cached"] = c.stats.prompt_tokens + c.stats.completion_tokens;
    j["truncated"] = false;
    j["id_slot"] = c.stats.slot;
    j["timings"] = TimingsJson(c.stats);
    return j;
  }
  json Base(bool chunk) const {
    const char* object = kind == ApiKind::kChat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                                : "text_completion";
    return {{"id", id}, {"object", object}, {"created", created}, {"model", model}, {"system_fingerprint", fingerprint}};
  }
  // Streamed log probabilities not sent yet (moved out).
  json TakeLogprobs(Choice& c) {
    if (!logprobs || c.logprobs.empty()) return nullptr;
    json j = kind == ApiKind::kChat ? ChatLogprobs(c.logprobs) : CompletionLogprobs(c.logprobs, c.logprob_bytes);
    for (const TokenLogprob& lp : c.logprobs) c.logprob_bytes += lp.piece.size();
    c.logprobs.clear();
    return j;
  }
  // A chunk: chat with `delta` (role, content or reasoning_content), completions with text.
  json Chunk(size_t index, const json& delta, const std::string& completion_text, const char* finish_reason,
             json logprob_json = nullptr) const {
    if (kind == ApiKind::kInfill) return InfillJson(choices[index], completion_text, finish_reason != nullptr);
    json j = Base(true);
    json choice = {{"index", index}, {"logprobs", std::move(logprob_json)}, {"finish_reason", nullptr}};
    if (finish_reason) choice["finish_reason"] = finish_reason;
    if (kind == ApiKind::kChat) {
      choice["delta"] = delta;
    } else {
      choice["text"] = completion_text;
    }
    j["choices"] = json::array({choice});
    if (include_usage) j["usage"] = nullptr;
    return j;
  }
  json UsageChunk() const {
    json j = Base(true);
    j["choices"] = json::array();
    j["usage"] = UsageJson(Stats());
    j["timings"] = TimingsJson(Stats());
    return j;
  }
  json Answer() const {
    if (kind == ApiKind::kInfill) return InfillJson(choices.front(), choices.front().text, true);
    json j = Base(false);
    json list = json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
      const Choice& c = choices[i];
      json lp = nullptr;
      if (logprobs) lp = kind == ApiKind::kChat ? ChatLogprobs(c.logprobs) : CompletionLogprobs(c.logprobs, 0);
      json choice = {{"index", i}, {"logprobs", lp}, {"finish_reason", Reason(c)}};
      if (kind == ApiKind::kChat) {
        choice["message"] = {{"role", "assistant"}, {"content", c.text}};
        if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
        if (!c.calls.empty()) {
          std::string_view content = c.text;  // around calls, only real text is content
          while (!content.empty() && std::isspace(static_cast<unsigned char>(content.back()))) content.remove_suffix(1);
          while (!content.empty() && std::isspace(static_cast<unsigned char>(content.front())))
            content.remove_prefix(1);
          choice["message"]["content"] = content.empty() ? json(nullptr) : json(std::string(content));
          json calls = json::array();
          for (size_t k = 0; k < c.calls.size(); ++k) calls.push_back(ToolCallJson(c, k, false));
          choice["message"]["tool_calls"] = calls;
        }
      } else {
        choice["text"] = c.echo + c.text;
      }
      list.push_back(choice);
    }
    j["choices"] = list;
    j["usage"] = UsageJson(Stats());
    j["timings"] = TimingsJson(Stats());
    return j;
  }
  // Waits until a job has news or `timeout` passes; `seen` is the signal's
  // count when the caller last looked. Returns false on timeout.
  bool WaitAny(uint64_t* seen, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(signal->mu);
    const bool news = signal->cv.wait_for(lock, timeout, [&] { return signal->seq != *seen; });
    *seen = signal->seq;
    return news;
  }
  uint64_t Seen() {
    std::lock_guard<std::mutex> lock(signal->mu);
    return signal->seq;
  }
};

std::string Event(const json& j) { return "data: " + Dump(j) + "\n\n"; }

// Parses a small JSON object body (tokenize, detokenize).
std::optional<ApiError> ParseObject(const std::string& body, json* out) {
  if (body.empty()) return BadRequest("the request body is empty: send a JSON object", "", "invalid_json");
  if (JsonDepth(body, 64) > 64) return BadRequest("the request body nests too deep", "", "invalid_json");
  try {
    *out = json::parse(body);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers too large for a double
    return BadRequest(std::string("the request body is not valid JSON: ") + e.what(), "", "invalid_json");
  }
  if (!out->is_object()) return BadRequest("the request body must be a JSON object", "", "invalid_json");
  return std::nullopt;
}

std::optional<ApiError> OptionalBool(const json& j, const char* name, bool* out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return BadRequest(std::string("'") + name + "' must be true or false", name, "invalid_type");
  *out = it->get<bool>();
  return std::nullopt;
}

// A streamed answer: server-sent events as the tokens come, keep-alive
// comments while none do; the jobs are cancelled if the client goes.
void StreamAnswer(HttpResponse& res, const std::shared_ptr<Exchange>& x) {
  res.AddHeader("Cache-Control", "no-cache");
  res.AddHeader("X-Accel-Buffering", "no");
  auto gone = [&] { x->CancelAll(); };
  if (!res.Begin(200, "text/event-stream")) return gone();
  auto write = [&](const std::string& text) { return res.Write(text); };
  if (x->kind == ApiKind::kChat)
    for (size_t i = 0; i < x->choices.size(); ++i)
      if (!write(Event(x->Chunk(i, {{"role", "assistant"}, {"content", nullptr}}, "", nullptr)))) return gone();
  for (size_t i = 0; i < x->choices.size(); ++i)  // completions with echo: the prompt first
    if (!x->choices[i].echo.empty() && !write(Event(x->Chunk(i, json::object(), x->choices[i].echo, nullptr))))
      return gone();
  uint64_t seen = x->Seen();
  while (true) {
    bool any = false;
    for (size_t i = 0; i < x->choices.size(); ++i) {
      Choice& c = x->choices[i];
      JobUpdate u;
      if (c.done || !c.job->Wait(std::chrono::milliseconds(0), &u)) continue;
      any = true;
      const Exchange::Delta out = x->Split(c, u);
      if (!out.reasoning.empty() &&
          !write(Event(x->Chunk(i, {{"reasoning_content", out.reasoning}}, "", nullptr))))
        return gone();
      if (!out.content.empty() &&
          !write(Event(x->Chunk(i, {{"content", out.content}}, out.content, nullptr, x->TakeLogprobs(c)))))
        return gone();
      for (size_t k = out.first_new_call; k < out.first_new_call + out.new_calls; ++k)  // OpenAI's tool_calls deltas
        if (!write(Event(x->Chunk(i, {{"tool_calls", json::array({Exchange::ToolCallJson(c, k, true)})}}, "",
                                  nullptr))))
          return gone();
      if (!u.done) continue;
      Exchange::Finish(c, u);
      if (c.error) {
        x->CancelAll();
        write(Event(c.error->ToJson()));
        res.End();
        return;
      }
      json lp = x->TakeLogprobs(c);  // what no content chunk carried
      if (!lp.is_null() && !write(Event(x->Chunk(i, x->kind == ApiKind::kChat ? json{{"content", ""}} : json::object(),
                                                 "", nullptr, lp))))
        return gone();
      if (!write(Event(x->Chunk(i, json::object(), "", Exchange::Reason(c))))) return gone();
    }
    if (x->AllDone()) break;
    if (!any && !x->WaitAny(&seen, kKeepAlive) && !write(": keep-alive\n\n")) return gone();
  }
  if (x->include_usage && !write(Event(x->UsageChunk()))) return gone();
  if (x->kind != ApiKind::kInfill && !write("data: [DONE]\n\n")) return gone();  // llama-server's own form has none
  res.End();
}

// Takes every choice's news; true when all are done.
bool AbsorbAll(const std::shared_ptr<Exchange>& x) {
  for (Choice& c : x->choices) {
    JobUpdate u;
    if (!c.done && c.job->Wait(std::chrono::milliseconds(0), &u)) x->Absorb(c, u);
  }
  return x->AllDone();
}

// An answer at once when it is quick (with the right status on error);
// otherwise a 200 whose body begins with keep-alive whitespace (valid before
// a JSON value) until the answer is ready.
void AnswerWhenDone(HttpResponse& res, const std::shared_ptr<Exchange>& x) {
  const auto deadline = Clock::now() + kQuickAnswer;
  uint64_t seen = x->Seen();
  while (!AbsorbAll(x) && !x->FirstError()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    x->WaitAny(&seen, left);
  }
  if (const auto* e = x->FirstError()) {
    x->CancelAll();
    return SendError(res, **e);
  }
  if (x->AllDone()) return SendJson(res, 200, x->Answer());
  // A slow one: keep-alive whitespace until the answer is ready.
  if (!res.Begin(200, "application/json")) return x->CancelAll();
  auto last_write = Clock::now();
  while (!AbsorbAll(x) && !x->FirstError()) {
    x->WaitAny(&seen, kKeepAlive);
    if (Clock::now() - last_write < kKeepAlive) continue;
    if (!res.Write(" ")) return x->CancelAll();
    last_write = Clock::now();
  }
  if (const auto* e = x->FirstError()) {
    x->CancelAll();
    if (res.Write((*e)->Body())) res.End();
    return;
  }
  if (res.Write(Dump(x->Answer()))) res.End();
}

// /infill's prompt, as llama-server writes it (the repo-level pattern of
// Qwen2.5-Coder's paper, arXiv 2409.12186):
//   [FIM_REP]myproject\n [FIM_SEP]file\n text ... [FIM_SEP]filename\n
//   BOS [FIM_PRE]prefix prompt [FIM_SUF]suffix [FIM_MID]
// (without a separator token each extra chunk follows a "--- snippet ---"
// line; without a repo token there is no project line). The prefix keeps its
// last 3/4 of a batch (2048 tokens, or half the context when that is less),
// the suffix its first 1/4 less the prompt; the extra context fills what the
// context has left past the batch and twice max_tokens, the latest first.
std::vector<int32_t> InfillPrompt(const tokenizer::Tokenizer& tok, const tokenizer::FimTokens& fim, const ApiRequest& ar,
                                  int64_t n_ctx, int64_t n_predict) {
  auto encode = [&](const std::string& text) { return tok.Encode(text, false, /*parse_special=*/false); };
  std::vector<int32_t> extra;
  auto append = [&](std::vector<int32_t>* to, const std::vector<int32_t>& ids) { to->insert(to->end(), ids.begin(), ids.end()); };
  if (fim.rep != tokenizer::kNoToken) {
    extra.push_back(fim.rep);
    append(&extra, encode("myproject\n"));
  }
  for (const auto& [filename, text] : ar.input_extra) {
    if (fim.sep != tokenizer::kNoToken) {
      extra.push_back(fim.sep);
      append(&extra, encode(filename + "\n"));
    } else {
      append(&extra, encode("\n\n--- snippet ---\n\n"));
    }
    append(&extra, encode(text));
  }
  if (fim.sep != tokenizer::kNoToken) {
    extra.push_back(fim.sep);
    append(&extra, encode("filename\n"));
  }
  // llama-server sizes prefix and suffix by its batch (2048 by default); here
  // by at most half the context, so a small context keeps room for the rest.
  const int64_t n_batch = std::min<int64_t>(2048, n_ctx / 2);
  std::vector<int32_t> prefix = encode(ar.input_prefix), suffix = encode(ar.input_suffix), prompt = encode(ar.prompt_text);
  const int64_t prefix_take = std::min<int64_t>(static_cast<int64_t>(prefix.size()), 3 * (n_batch / 4));
  const int64_t suffix_take = std::min<int64_t>(static_cast<int64_t>(suffix.size()),
                                                std::max<int64_t>(0, n_batch / 4 - (2 + static_cast<int64_t>(prompt.size()))));
  const int64_t extra_take = std::min<int64_t>(std::max<int64_t>(0, n_ctx - n_batch - 2 * std::max<int64_t>(n_predict, 0)),
                                               static_cast<int64_t>(extra.size()));
  std::vector<int32_t> out;
  append(&out, std::vector<int32_t>(extra.end() - extra_take, extra.end()));
  const tokenizer::Vocab& v = tok.vocab();
  if (v.add_bos && v.special.bos != tokenizer::kNoToken) out.push_back(v.special.bos);
  out.push_back(fim.pre);
  append(&out, std::vector<int32_t>(prefix.end() - prefix_take, prefix.end()));
  append(&out, prompt);  // where llama-server puts it: after the prefix
  out.push_back(fim.suf);
  append(&out, std::vector<int32_t>(suffix.begin(), suffix.begin() + suffix_take));
  out.push_back(fim.mid);
  return out;
}

// The messages a chat request renders: as sent, or, with the generic tool
// format, rewritten by GenericToolMessages (the tools described in a system
// message, or in the first user message when the template refuses one).
std::vector<ChatMessage> ChatMessagesFor(const ChatTemplate& t, const ApiRequest& ar, bool generic_tools,
                                         const json& extra) {
  if (!generic_tools) return ar.messages;
  std::vector<ChatMessage> with_system = GenericToolMessages(ar.messages, ar.tools, /*system_role=*/true);
  if (t.Render(with_system, true, extra).ok()) return with_system;
  return GenericToolMessages(ar.messages, ar.tools, /*system_role=*/false);
}

}  // namespace

ApiServer::ApiServer(const ServeOptions& options) : options_(options) {
  HttpLimits limits;
  limits.max_body = options_.max_body;
  limits.max_connections = options_.max_connections;
  // Every running or queued generation holds a worker while it waits; the
  // rest serve everything else.
  limits.handler_threads = options_.parallel + options_.queue + 8;
  using Ms = std::chrono::milliseconds;
  if (options_.test_head_deadline_ms > 0) limits.head_deadline = Ms(options_.test_head_deadline_ms);
  if (options_.test_body_deadline_ms > 0) limits.body_deadline = Ms(options_.test_body_deadline_ms);
  if (options_.test_idle_ms > 0) limits.keep_alive_idle = Ms(options_.test_idle_ms);
  http_ = std::make_unique<HttpServer>(
      limits, [this](const HttpRequest& head) { return CheckHead(head); },
      [this](const HttpRequest& req, HttpResponse& res) { Handle(req, res); });
}

ApiServer::~ApiServer() = default;

void ApiServer::SetReady(const ServingModel* m) { ready_.store(m, std::memory_order_release); }

Result<int> ApiServer::Bind() {
  STRATA_ASSIGN_OR_RETURN(port_, http_->Bind(options_.host, options_.port));
  return port_;
}

void ApiServer::Listen() { http_->Run(); }
void ApiServer::BeginShutdown() { http_->BeginShutdown(); }
void ApiServer::Stop() { http_->Stop(); }
HttpCounters ApiServer::Counters() const { return http_->Counters(); }

const ApiServer::Route* ApiServer::FindRoute(std::string_view path) {
  static const std::pair<std::string_view, Route> kRoutes[] = {
      {"/", {&ApiServer::HandlePage, false, true}},
      {"/index.html", {&ApiServer::HandlePage, false, true}},
      {"/health", {&ApiServer::HandleHealth, false, true}},
      {"/v1/health", {&ApiServer::HandleHealth, false, true}},
      {"/v1/models", {&ApiServer::HandleModels, false, false}},
      {"/models", {&ApiServer::HandleModels, false, false}},
      {"/metrics", {&ApiServer::HandleMetrics, false, false}},
      {"/tokenize", {&ApiServer::HandleTokenize, true, false}},
      {"/detokenize", {&ApiServer::HandleDetokenize, true, false}},
      {"/v1/chat/completions", {&ApiServer::HandleChat, true, false}},
      {"/chat/completions", {&ApiServer::HandleChat, true, false}},
      {"/v1/completions", {&ApiServer::HandleCompletion, true, false}},
      {"/completions", {&ApiServer::HandleCompletion, true, false}},
      {"/props", {&ApiServer::HandleProps, false, false}},
      {"/slots", {&ApiServer::HandleSlots, false, false}},
      {"/apply-template", {&ApiServer::HandleApplyTemplate, true, false}},
      {"/infill", {&ApiServer::HandleInfill, true, false}},
  };
  for (const auto& [p, r] : kRoutes)
    if (p == path) return &r;
  return nullptr;
}

std::vector<HttpHeader> ApiServer::CorsHeaders() const {
  if (options_.cors_origin.empty()) return {};
  std::vector<HttpHeader> h = {{"Access-Control-Allow-Origin", options_.cors_origin}};
  if (options_.cors_origin != "*") h.push_back({"Vary", "Origin"});
  return h;
}

// The Host header must name this server: the listening address, or (on
// loopback) localhost and the loopback addresses, or (on every interface)
// any address literal; other names only with --allowed-host. A page on
// another site that rebinds its name to 127.0.0.1 sends its own name.
std::optional<HttpRefusal> ApiServer::CheckHost(const HttpRequest& head) const {
  const auto value = head.Header("Host");
  if (!value) return RefusalFrom(BadRequest("the request has no Host header", "", "missing_host"));
  std::string host;
  int port = -1;
  if (!SplitHostHeader(*value, &host, &port))
    return RefusalFrom(BadRequest("the Host header '" + LogSafe(*value) + "' is not a host[:port]", "", "invalid_host"));
  for (const std::string& allowed : options_.allowed_hosts)
    if (allowed == "*" || EqualsIgnoringAsciiCase(allowed, host)) return std::nullopt;
  std::string listen = options_.host;
  for (char& c : listen) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool wildcard = listen == "0.0.0.0" || listen == "::";
  bool ok = host == listen || (IsLoopbackHost(listen) && IsLoopbackHost(host)) ||
            (wildcard && (IsIpLiteral(host) || IsLoopbackHost(host)));
  if (ok && port >= 0 && port != port_) ok = false;
  if (ok) return std::nullopt;
  return RefusalFrom(ApiError{403, "permission_error", "host_not_allowed",
                         "the Host header '" + LogSafe(*value) + "' does not name this server (" + options_.host +
                             ":" + std::to_string(port_) + "); start it with --allowed-host NAME to accept that name",
                         ""});
}

// A browser names the page's origin; one that is not this server's own
// (http://HOST as the Host header says) needs --cors-origin.
std::optional<HttpRefusal> ApiServer::CheckOrigin(const HttpRequest& head) const {
  const auto origin = head.Header("Origin");
  if (!origin) return std::nullopt;
  const auto host = head.Header("Host");
  if (host && EqualsIgnoringAsciiCase(*origin, "http://" + std::string(*host))) return std::nullopt;
  if (options_.cors_origin == "*" || (!options_.cors_origin.empty() && EqualsIgnoringAsciiCase(*origin, options_.cors_origin)))
    return std::nullopt;
  return RefusalFrom(ApiError{403, "permission_error", "origin_not_allowed",
                         "cross-origin request from '" + LogSafe(*origin) +
                             "' refused; start the server with --cors-origin ORIGIN to allow it",
                         ""});
}

// Before any body is read: Host, Origin (and CORS preflight), the API key,
// "loading", the route and method, and the body's type.
std::optional<HttpRefusal> ApiServer::CheckHead(const HttpRequest& head) const {
  auto with_cors = [&](HttpRefusal r) {
    for (HttpHeader& h : CorsHeaders()) r.headers.push_back(std::move(h));
    return r;
  };
  if (auto r = CheckHost(head)) return with_cors(*r);
  if (auto r = CheckOrigin(head)) return with_cors(*r);
  if (head.method == "OPTIONS") {  // CORS preflight (the origin passed): never needs the key
    HttpRefusal r{204, "", CorsHeaders()};
    if (!options_.cors_origin.empty()) {
      r.headers.push_back({"Access-Control-Allow-Methods", "GET, POST, OPTIONS"});
      r.headers.push_back({"Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key"});
      r.headers.push_back({"Access-Control-Max-Age", "600"});
    }
    return r;
  }
  const Route* route = FindRoute(head.path);
  const bool is_public = route && route->is_public;
  if (!is_public && !options_.api_key.empty()) {
    std::string_view key;
    const auto auth = head.Header("Authorization");
    if (auth && auth->rfind("Bearer ", 0) == 0) key = auth->substr(7);
    else if (auto k = head.Header("X-Api-Key")) key = *k;
    if (!ConstantTimeEquals(key, options_.api_key)) return with_cors(RefusalFrom(Unauthorized()));
  }
  if (!route)
    return with_cors(RefusalFrom(NotFoundError(StrFormat("no endpoint %s %s", LogSafe(head.method, 16).c_str(),
                                                    LogSafe(head.path).c_str()))));
  const char* want = route->post ? "POST" : "GET";
  if (head.method != want) {
    HttpRefusal r = RefusalFrom(ApiError{405, "invalid_request_error", "method_not_allowed",
                                    StrFormat("%s takes %s, not %s", LogSafe(head.path).c_str(), want,
                                              LogSafe(head.method, 16).c_str()),
                                    ""});
    r.headers.push_back({"Allow", want});
    return with_cors(r);
  }
  if (!ready() && !is_public) return with_cors(RefusalFrom(Loading()));
  const auto length = head.Header("Content-Length");
  const bool has_body = head.Header("Transfer-Encoding").has_value() || (length && *length != "0");
  if (has_body) {
    const auto type = head.Header("Content-Type");
    const std::string_view media = type ? type->substr(0, type->find(';')) : std::string_view();
    if (!EqualsIgnoringAsciiCase(media, "application/json"))
      return with_cors(RefusalFrom(ApiError{415, "invalid_request_error", "unsupported_media_type",
                                       "the request body must be JSON sent as Content-Type: application/json (got " +
                                           (type ? "'" + LogSafe(*type, 80) + "'" : std::string("none")) + ")",
                                       ""}));
  }
  return std::nullopt;
}

// On a worker: the route's handler, with CORS headers on the response.
void ApiServer::Handle(const HttpRequest& req, HttpResponse& res) {
  for (HttpHeader& h : CorsHeaders()) res.AddHeader(std::move(h.name), std::move(h.value));
  const Route* route = FindRoute(req.path);
  if (!route) return SendError(res, NotFoundError("no endpoint " + LogSafe(req.path)));  // CheckHead let it by
  if (route->post && ShouldInjectFault(FaultSite::kServeHandler)) throw std::runtime_error("injected fault: handler");
  (this->*route->handler)(req, res);
}

// GET / and /index.html: the chat page.
void ApiServer::HandlePage(const HttpRequest&, HttpResponse& res) {
  res.AddHeader("Content-Security-Policy",
                 "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
                 "img-src data:; base-uri 'none'; form-action 'none'");
  res.AddHeader("X-Content-Type-Options", "nosniff");
  res.AddHeader("Cache-Control", "no-cache");
  res.Send(200, "text/html; charset=utf-8", kChatPageHtml);
}

// GET /health, /v1/health.
void ApiServer::HandleHealth(const HttpRequest&, HttpResponse& res) {
  if (!ready()) return SendError(res, Loading());
  if (Status h = ready()->scheduler->Health(); !h.ok())
    return SendError(res, DeviceLost("the server's device is lost (" + h.message() + "); it is stopping"));
  SendJson(res, 200, {{"status", "ok"}});
}

// GET /v1/models, /models.
void ApiServer::HandleModels(const HttpRequest&, HttpResponse& res) {
  const ServingModel& m = *ready();
  const HParams& hp = m.model->hp();
  json meta = {{"arch", std::string(ArchName(m.model->arch()))},
               {"n_vocab", hp.n_vocab},
               {"n_ctx_train", hp.n_ctx_train},
               {"n_ctx", m.scheduler->options().n_ctx},
               {"n_embd", hp.n_embd},
               {"n_layer", hp.n_layer},
               {"n_expert", hp.n_expert},
               {"n_expert_used", hp.n_expert_used},
               {"size", m.pack_bytes},
               {"parallel", m.scheduler->options().parallel},
               {"backend", m.backend},
               {"chat_template", m.chat_template.fallback ? "ChatML (fallback: the pack has none)" : m.chat_template.name()}};
  json model = {{"id", m.id}, {"object", "model"}, {"created", m.created}, {"owned_by", "strata"}, {"meta", meta}};
  SendJson(res, 200, {{"object", "list"}, {"data", json::array({model})}});
}

// GET /metrics (Prometheus text).
void ApiServer::HandleMetrics(const HttpRequest&, HttpResponse& res) {
  std::string text = PrometheusText(ready()->scheduler->Metrics());
  const HttpCounters c = http_->Counters();
  text += StrFormat("# HELP strata:http_connections_open Open HTTP connections.\n# TYPE strata:http_connections_open gauge\n"
                    "strata:http_connections_open %llu\n"
                    "# HELP strata:http_connections_refused_total Connections refused with 503: --max-connections reached.\n"
                    "# TYPE strata:http_connections_refused_total counter\nstrata:http_connections_refused_total %llu\n"
                    "# HELP strata:http_requests_malformed_total Requests refused for their head (400, 431).\n"
                    "# TYPE strata:http_requests_malformed_total counter\nstrata:http_requests_malformed_total %llu\n"
                    "# HELP strata:http_deadlines_total Connections ended by a deadline (slow head or body, idle, stalled write).\n"
                    "# TYPE strata:http_deadlines_total counter\nstrata:http_deadlines_total %llu\n",
                    static_cast<unsigned long long>(c.connections_open), static_cast<unsigned long long>(c.refused_full),
                    static_cast<unsigned long long>(c.refused_head), static_cast<unsigned long long>(c.timed_out));
  res.Send(200, "text/plain; version=0.0.4; charset=utf-8", text);
}

// GET /props: llama-server's server properties (read-only here: POST is 405).
void ApiServer::HandleProps(const HttpRequest&, HttpResponse& res) {
  const ServingModel& m = *ready();
  const SchedulerOptions& so = m.scheduler->options();
  const SamplingParams& s = options_.sampling;
  json params = {{"temperature", s.temperature},        {"top_k", s.top_k},
                 {"top_p", s.top_p},                    {"min_p", s.min_p},
                 {"repeat_penalty", s.repeat_penalty},  {"presence_penalty", s.presence_penalty},
                 {"frequency_penalty", s.frequency_penalty}, {"penalty_last_n", s.penalty_last_n},
                 {"n_predict", options_.max_tokens > 0 ? options_.max_tokens : -1}};
  SendJson(res, 200,
           {{"default_generation_settings", {{"n_ctx", so.n_ctx}, {"params", params}}},
            {"total_slots", so.parallel},
            {"model_path", m.id},
            {"chat_template", m.chat_template.source},
            {"chat_template_name", m.chat_template.fallback ? "ChatML (fallback: the pack has none)" : m.chat_template.name()},
            {"modalities", {{"vision", false}, {"audio", false}}},
            {"build_info", std::string("strata ") + kVersion}});
}

// GET /slots: each slot, as the scheduler last saw it.
void ApiServer::HandleSlots(const HttpRequest&, HttpResponse& res) {
  const ServingModel& m = *ready();
  const SchedulerMetrics metrics = m.scheduler->Metrics();
  json slots = json::array();
  for (const SlotSnapshot& s : metrics.slots)
    slots.push_back({{"id", s.id},
                     {"n_ctx", metrics.n_ctx},
                     {"is_processing", s.is_processing},
                     {"n_cached_tokens", s.n_cached},
                     {"n_prompt_tokens", s.n_prompt},
                     {"n_decoded", s.n_decoded}});
  SendJson(res, 200, slots);
}

// POST /apply-template: the prompt text a chat request would run (its
// messages, tools and chat_template_kwargs, checked as /v1/chat/completions
// checks them), without running it.
void ApiServer::HandleApplyTemplate(const HttpRequest& req, HttpResponse& res) {
  const ServingModel& m = *ready();
  ApiLimits limits;
  limits.n_ctx = m.scheduler->options().n_ctx;
  limits.n_vocab = m.model->hp().n_vocab;
  ApiRequest ar;
  if (auto e = ParseApiRequest(ApiKind::kChat, req.body, options_.sampling, limits, &ar)) return SendError(res, *e);
  json extra = ar.template_kwargs;
  const bool tools_active = !ar.tools.empty() && !ar.tool_choice_none;
  const bool generic_tools = tools_active && m.tool_format == ToolCallFormat::kNone;
  if (tools_active && !generic_tools) extra["tools"] = ar.tools;
  auto text = m.chat_template.Render(ChatMessagesFor(m.chat_template, ar, generic_tools, extra),
                                     /*add_generation_prompt=*/true, extra);
  if (!text.ok())
    return SendError(res, BadRequest("the chat template refused the conversation: " + text.status().message(),
                                     "messages", "template_error"));
  SendJson(res, 200, {{"prompt", SanitizeUtf8(*text)}});
}

// POST /tokenize.
void ApiServer::HandleTokenize(const HttpRequest& req, HttpResponse& res) {
  json body;
  if (auto e = ParseObject(req.body, &body)) return SendError(res, *e);
  auto it = body.find("content");
  if (it == body.end() || !it->is_string())
    return SendError(res, BadRequest("'content' is required and must be a string", "content", "missing_field"));
  bool add_special = false, parse_special = true, with_pieces = false;
  for (auto [name, out] : {std::pair{"add_special", &add_special}, std::pair{"parse_special", &parse_special},
                           std::pair{"with_pieces", &with_pieces}})
    if (auto e = OptionalBool(body, name, out)) return SendError(res, *e);
  if (it->get_ref<const std::string&>().size() > kMaxTokenizeBytes)
    return SendError(res, BadRequest(StrFormat("'content' is %zu bytes; /tokenize takes at most %zu",
                                               it->get_ref<const std::string&>().size(), kMaxTokenizeBytes),
                                     "content", "too_long"));
  const tokenizer::Tokenizer& tok = *ready()->tok;
  std::vector<int32_t> ids = tok.Encode(it->get<std::string>(), add_special, parse_special);
  json tokens = json::array();
  for (int32_t id : ids) {
    if (with_pieces) tokens.push_back({{"id", id}, {"piece", SanitizeUtf8(tok.TokenToPiece(id, true))}});
    else tokens.push_back(id);
  }
  SendJson(res, 200, {{"tokens", tokens}});
}

// POST /detokenize.
void ApiServer::HandleDetokenize(const HttpRequest& req, HttpResponse& res) {
  json body;
  if (auto e = ParseObject(req.body, &body)) return SendError(res, *e);
  auto it = body.find("tokens");
  if (it == body.end() || !it->is_array())
    return SendError(res, BadRequest("'tokens' is required and must be an array of token ids", "tokens",
                                     "missing_field"));
  const tokenizer::Tokenizer& tok = *ready()->tok;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& v = (*it)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= tok.n_tokens())
      return SendError(res, BadRequest(StrFormat("'tokens[%zu]' is not a token id (integers 0..%d)", i,
                                                 tok.n_tokens() - 1),
                                       "tokens", "invalid_value"));
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  SendJson(res, 200, {{"content", SanitizeUtf8(tok.Decode(ids))}});
}

void ApiServer::HandleChat(const HttpRequest& req, HttpResponse& res) { HandleGenerate(ApiKind::kChat, req, res); }
void ApiServer::HandleInfill(const HttpRequest& req, HttpResponse& res) { HandleGenerate(ApiKind::kInfill, req, res); }
void ApiServer::HandleCompletion(const HttpRequest& req, HttpResponse& res) {
  HandleGenerate(ApiKind::kCompletion, req, res);
}

// POST /v1/chat/completions and /v1/completions: parse, build the prompt,
// submit to the scheduler, then answer (streamed, or at once, or after
// keep-alive whitespace).
void ApiServer::HandleGenerate(ApiKind kind, const HttpRequest& req, HttpResponse& res) {
  const ServingModel& m = *ready();
  Scheduler& sched = *m.scheduler;
  const int64_t n_ctx = sched.options().n_ctx;
  const char* endpoint = kind == ApiKind::kChat         ? "/v1/chat/completions"
                         : kind == ApiKind::kCompletion ? "/v1/completions"
                                                        : "/infill";
  auto reject = [&](const ApiError& e) {
    std::fprintf(stderr, "strata serve: %d %s: %s\n", e.status, endpoint, LogSafe(e.message, 300).c_str());
    SendError(res, e);
  };
  ApiLimits limits;
  limits.n_ctx = n_ctx;
  limits.n_vocab = m.model->hp().n_vocab;
  ApiRequest ar;
  if (auto e = ParseApiRequest(kind, req.body, options_.sampling, limits, &ar)) return reject(*e);
  const char* prompt_param = kind == ApiKind::kChat ? "messages" : kind == ApiKind::kInfill ? "input_prefix" : "prompt";
  auto too_long = [&](const std::string& size) {
    return BadRequest(StrFormat("the prompt is %s but a slot's context holds %lld (-c %lld), and at least one "
                                "position must stay free for the answer",
                                size.c_str(), static_cast<long long>(n_ctx), static_cast<long long>(n_ctx)),
                      prompt_param, "context_length_exceeded");
  };
  // Before tokenizing: a text of n_ctx * max_token_bytes bytes or more has
  // at least n_ctx tokens, so a prompt that cannot fit costs no tokenizer time.
  size_t text_bytes = ar.prompt_text.size();
  for (const ChatMessage& msg : ar.messages) text_bytes += msg.content.size();
  if (text_bytes / m.max_token_bytes >= static_cast<size_t>(n_ctx))
    return reject(too_long(StrFormat("%zu bytes (at least %zu tokens)", text_bytes, text_bytes / m.max_token_bytes)));

  GenerationRequest g;
  bool opens_thinking = false;
  const bool tools_active = kind == ApiKind::kChat && !ar.tools.empty() && !ar.tool_choice_none;
  // A template without a tool-call format Strata reads gets llama-server's
  // generic one: the tools described in the system message, the answer one
  // JSON object, always constrained.
  const ToolCallFormat tool_format =
      tools_active && m.tool_format == ToolCallFormat::kNone ? ToolCallFormat::kGeneric : m.tool_format;
  const bool generic_tools = tools_active && tool_format == ToolCallFormat::kGeneric;
  g.stop = ar.stop;
  g.ignore_eog = ar.ignore_eos;
  std::vector<std::vector<int32_t>> prompts;  // completions: one per prompt
  std::vector<std::string> echoes;             // ... and its text, with echo
  if (kind == ApiKind::kChat) {
    g.kind = "chat";
    std::string rendered;
    json extra = ar.template_kwargs;
    if (generic_tools && ar.constraint != ApiRequest::Constraint::kNone)
      return reject(BadRequest("this model's chat template has no tool-call format of its own, so its tool calls are "
                               "a constrained JSON answer, which cannot also follow 'response_format' or 'grammar'; "
                               "send one or the other",
                               "response_format", "invalid_value"));
    if (tools_active && !generic_tools) extra["tools"] = ar.tools;
    const std::vector<ChatMessage> messages = ChatMessagesFor(m.chat_template, ar, generic_tools, extra);
    auto ids = ChatPromptTokens(*m.tok, m.chat_template, messages, extra, &rendered);
    if (!ids.ok())
      return reject(BadRequest("the chat template refused the conversation: " + ids.status().message(), "messages",
                               "template_error"));
    g.prompt = std::move(*ids);
    // A generation prompt that ends inside an opened <think> block starts the answer there.
    std::string_view r = rendered;
    while (!r.empty() && (r.back() == '\n' || r.back() == ' ')) r.remove_suffix(1);
    opens_thinking = r.ends_with("<think>");
    for (const std::string& stop : m.chat_template.StopStrings()) g.stop.push_back(stop);
  } else if (kind == ApiKind::kInfill) {
    g.kind = "infill";
    if (!m.fim.CanInfill())
      return reject(BadRequest("this model has no fill-in-the-middle tokens (a prefix, a suffix and a middle token "
                               "such as <|fim_prefix|>, <|fim_suffix|>, <|fim_middle|>): /infill needs a code model's",
                               "input_prefix", "unsupported_model"));
    g.prompt = InfillPrompt(*m.tok, m.fim, ar, n_ctx, ar.max_tokens > 0 ? ar.max_tokens : options_.max_tokens);
  } else {
    g.kind = "completion";
    // Raw prompts are the caller's own template: special-token text is parsed (as llama-server does).
    for (const ApiPrompt& p : ar.prompts) {
      prompts.push_back(p.is_ids ? p.ids : m.tok->Encode(p.text, true, /*parse_special=*/true));
      if (ar.echo) echoes.push_back(SanitizeUtf8(p.is_ids ? m.tok->Decode(p.ids) : p.text));
    }
    g.prompt = prompts[0];
  }
  if (prompts.empty()) prompts.push_back(g.prompt);
  for (size_t p = 0; p < prompts.size(); ++p) {
    const std::string which = prompts.size() > 1 ? StrFormat(" (prompt[%zu])", p) : std::string();
    if (prompts[p].empty()) return reject(BadRequest("the prompt has no tokens" + which, prompt_param, "invalid_value"));
    if (static_cast<int64_t>(prompts[p].size()) >= n_ctx)
      return reject(too_long(StrFormat("%zu tokens%s", prompts[p].size(), which.c_str())));
  }
  g.sampling = ar.sampling;
  if (!ar.has_seed) g.sampling.seed = RandomU64();
  for (const auto& [text, bias] : ar.logit_bias_text)  // llama-server's text keys: each of the text's tokens
    for (int32_t id : m.tok->Encode(text, false, /*parse_special=*/false)) g.sampling.logit_bias.emplace_back(id, bias);
  g.max_tokens = ar.max_tokens;
  if (g.max_tokens < 0) g.max_tokens = options_.max_tokens > 0 ? options_.max_tokens
                                       : kind == ApiKind::kCompletion ? 16 : -1;  // OpenAI's defaults
  g.top_logprobs = ar.top_logprobs;
  if (ar.id_slot >= 0) {
    const int slots = m.scheduler->options().parallel;
    if (ar.id_slot >= slots)
      return reject(BadRequest(StrFormat("'id_slot' is %d; this server has %d slot%s (0..%d)", ar.id_slot, slots,
                                         slots == 1 ? "" : "s", slots - 1),
                               "id_slot", "invalid_value"));
    if (ar.n > 1) return reject(BadRequest("'id_slot' names one slot; 'n' > 1 needs several", "id_slot", "invalid_value"));
    g.id_slot = ar.id_slot;
  }

  // Constrained sampling: the grammar of the answer (or of its tool calls).
  std::string gbnf;
  const char* constraint_param = "grammar";
  if (ar.constraint == ApiRequest::Constraint::kGrammar) {
    gbnf = ar.grammar;
  } else if (ar.constraint == ApiRequest::Constraint::kJsonObject) {
    gbnf = grammar::JsonObjectGbnf();
    constraint_param = "response_format";
  } else if (ar.constraint == ApiRequest::Constraint::kJsonSchema) {
    constraint_param = "response_format";
    auto text = grammar::JsonSchemaToGbnf(ar.json_schema);
    if (!text.ok())
      return reject(BadRequest("the JSON Schema cannot be enforced: " + text.status().message(), constraint_param,
                               "invalid_schema"));
    gbnf = *text;
  } else if (generic_tools) {
    constraint_param = "tools";
    auto text = GenericToolGrammar(ar.tools, ar.tool_choice_name, ar.parallel_tool_calls,
                                   /*allow_response=*/!ar.tool_choice_required && ar.tool_choice_name.empty());
    if (!text.ok())
      return reject(BadRequest("the tools' parameter schemas cannot be enforced: " + text.status().message(), "tools",
                               "invalid_schema"));
    gbnf = *text;
  } else if (tools_active && (ar.tool_choice_required || !ar.tool_choice_name.empty())) {
    constraint_param = "tools";
    auto text = ToolCallGrammar(tool_format, ar.tools, ar.tool_choice_name, ar.parallel_tool_calls);
    if (!text.ok())
      return reject(BadRequest("the tools' parameter schemas cannot be enforced: " + text.status().message(), "tools",
                               "invalid_schema"));
    gbnf = *text;
  }
  if (!gbnf.empty()) {
    auto masker = MaskerFor(gbnf, m.trie);
    if (!masker.ok())
      return reject(BadRequest(masker.status().message(), constraint_param, "invalid_grammar"));
    g.grammar = *masker;
    if (opens_thinking && m.chat_template.thinking) g.grammar_after = "</think>";
  }

  // Choices in OpenAI's order: prompt by prompt, n of each (index = prompt * n + choice).
  std::vector<GenerationRequest> requests;
  for (size_t p = 0; p < prompts.size(); ++p)
    for (int i = 0; i < ar.n; ++i) {
      requests.push_back(g);
      requests.back().prompt = prompts[p];
      // each choice its own draw
      requests.back().sampling.seed = g.sampling.seed + p * static_cast<uint64_t>(ar.n) + static_cast<uint64_t>(i);
    }
  auto x = std::make_shared<Exchange>();
  for (GenerationRequest& r : requests) r.signal = x->signal;
  ApiError rejection;
  auto jobs = sched.SubmitAll(std::move(requests), &rejection);
  if (!jobs.ok()) return reject(rejection);

  x->kind = kind;
  x->include_usage = ar.include_usage;
  x->logprobs = ar.top_logprobs >= 0;
  x->id = RandomId(kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-");
  x->model = m.id;
  x->fingerprint = std::string("strata-") + kVersion;
  x->created = UnixNow();
  x->scheduler = &sched;
  x->parallel_tool_calls = ar.parallel_tool_calls;
  for (auto& job : *jobs) {
    Choice c;
    c.job = job;
    if (kind == ApiKind::kChat && ar.split_reasoning && m.chat_template.thinking)
      c.splitter = ReasoningSplitter(true, opens_thinking);
    if (kind == ApiKind::kChat && m.harmony && ar.split_reasoning) c.harmony.emplace(tools_active);
    else if (tools_active) c.tool_streamer.emplace(tool_format);
    c.n_indent = ar.n_indent;
    if (!echoes.empty()) c.echo = echoes[x->choices.size() / static_cast<size_t>(ar.n)];
    x->choices.push_back(std::move(c));
  }
  if (ar.stream) return StreamAnswer(res, x);
  AnswerWhenDone(res, x);
}

// Compiled grammars are kept by text (agents send the same schema with every
// request): their token-mask caches then carry over.
Result<std::shared_ptr<grammar::TokenMasker>> ApiServer::MaskerFor(const std::string& gbnf,
                                                                   const std::shared_ptr<const grammar::TokenTrie>& trie) {
  {
    std::lock_guard<std::mutex> lock(maskers_mu_);
    for (auto it = maskers_.begin(); it != maskers_.end(); ++it) {
      if (it->first != gbnf) continue;
      auto found = it->second;
      maskers_.splice(maskers_.begin(), maskers_, it);
      // An earlier answer found it too ambiguous (deeper than the check
      // walk reaches): refused on arrival, before any prompt is read.
      if (found->proven_too_ambiguous()) return InvalidArgument(grammar::TooAmbiguousMessage());
      return found;
    }
  }
  auto g = grammar::Grammar::Parse(gbnf);
  if (!g.ok()) return g.status();
  auto masker = std::make_shared<grammar::TokenMasker>(*g, trie);
  // The check walk now (ProbeStart), on this handler's thread and before the
  // masker is shared: it warms the caches the scheduler would fill, and a
  // grammar too ambiguous to follow is refused before any prompt is read
  // (found later, mid-answer, it can only end a response already begun).
  if (!masker->ProbeStart()) return InvalidArgument(grammar::TooAmbiguousMessage());
  std::lock_guard<std::mutex> lock(maskers_mu_);
  maskers_.emplace_front(gbnf, masker);
  if (maskers_.size() > kMaxMaskers) maskers_.pop_back();
  return masker;
}

}  // namespace strata::serve
