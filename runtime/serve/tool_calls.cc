#include "runtime/serve/tool_calls.h"

#include <algorithm>

#include "runtime/grammar/json_schema.h"

#include <nlohmann/json.hpp>

#include "runtime/serve/text_scan.h"
#include "runtime/serve/utf8_stream.h"

namespace strata::serve {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
// Formats whose calls are special tokens: the tokens around the list of
// calls, a call's opening and closing, and the separator after its name
// (DeepSeek V3.1: NAME; Kimi K2: an id, functions.NAME:INDEX).
struct CallTokens {
  std::string_view list_open, list_close, open, close, sep;
};
constexpr CallTokens kDeepSeekTokens{"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
                                     "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"};
constexpr CallTokens kKimiTokens{"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
                                 "<|tool_call_end|>", "<|tool_call_argument_begin|>"};
const CallTokens* TokensOf(ToolCallFormat f) {
  return f == ToolCallFormat::kDeepSeek ? &kDeepSeekTokens : f == ToolCallFormat::kKimi ? &kKimiTokens : nullptr;
}

using ojson = nlohmann::ordered_json;

bool ValidName(std::string_view n) {
  if (n.empty() || n.size() > 128) return false;
  for (char c : n)
    if (IsSpace(c) || c == '<' || c == '>' || c == '"') return false;
  return true;
}

Result<ToolCall> ParseJsonCall(std::string_view inner) {
  ojson j = ojson::parse(Trim(inner), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("the tool call is not a JSON object");
  auto name = j.find("name");
  if (name == j.end() || !name->is_string() || !ValidName(name->get<std::string>()))
    return InvalidArgument("the tool call has no function name");
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  ToolCall call;
  call.name = name->get<std::string>();
  if (args == j.end() || args->is_null()) {
    call.arguments = "{}";
  } else if (args->is_string()) {  // arguments already as JSON text
    ojson parsed = ojson::parse(args->get<std::string>(), nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) return InvalidArgument("the tool call's arguments are not an object");
    call.arguments = parsed.dump();
  } else if (args->is_object()) {
    call.arguments = args->dump();
  } else {
    return InvalidArgument("the tool call's arguments are not an object");
  }
  return call;
}

// A value as the XML-like formats write it: text that reads as JSON (a
// number, true, an object, ...) is that value; other text is a string.
nlohmann::ordered_json ArgValue(std::string_view value) {
  ojson parsed = ojson::parse(value, nullptr, false);
  if (!parsed.is_discarded() && !parsed.is_string()) return parsed;
  return std::string(value);
}

// <function=NAME> <parameter=KEY>VALUE</parameter>... </function>
Result<ToolCall> ParseXmlCall(std::string_view inner) {
  std::string_view s = Trim(inner);
  constexpr std::string_view kFn = "<function=";
  if (s.substr(0, kFn.size()) != kFn) return InvalidArgument("the tool call has no <function=...>");
  const size_t name_end = s.find('>');
  if (name_end == std::string_view::npos) return InvalidArgument("unterminated <function=...>");
  ToolCall call;
  call.name = std::string(Trim(s.substr(kFn.size(), name_end - kFn.size())));
  if (!ValidName(call.name)) return InvalidArgument("the tool call's function name is not valid");
  s = s.substr(name_end + 1);
  const size_t fn_close = s.rfind("</function>");
  if (fn_close == std::string_view::npos) return InvalidArgument("the tool call has no </function>");
  if (!Trim(s.substr(fn_close + 11)).empty()) return InvalidArgument("text after </function>");
  s = s.substr(0, fn_close);
  ojson args = ojson::object();
  constexpr std::string_view kParam = "<parameter=";
  constexpr std::string_view kParamClose = "</parameter>";
  while (!Trim(s).empty()) {
    s = Trim(s);
    if (s.substr(0, kParam.size()) != kParam) return InvalidArgument("unexpected text between parameters");
    const size_t key_end = s.find('>');
    if (key_end == std::string_view::npos) return InvalidArgument("unterminated <parameter=...>");
    const std::string key(Trim(s.substr(kParam.size(), key_end - kParam.size())));
    if (key.empty()) return InvalidArgument("a parameter without a name");
    s = s.substr(key_end + 1);
    const size_t value_end = s.find(kParamClose);
    if (value_end == std::string_view::npos) return InvalidArgument("unterminated parameter " + key);
    std::string_view value = s.substr(0, value_end);
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);  // the template writes "\n" around values
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    args[key] = ArgValue(value);
    s = s.substr(value_end + kParamClose.size());
  }
  call.arguments = args.dump();
  return call;
}

// NAME \n <arg_key>KEY</arg_key> \n <arg_value>VALUE</arg_value> ... (GLM-4.5).
Result<ToolCall> ParseGlmCall(std::string_view inner) {
  std::string_view s = Trim(inner);
  const size_t first_key = s.find("<arg_key>");
  ToolCall call;
  call.name = std::string(Trim(s.substr(0, first_key)));
  if (!ValidName(call.name)) return InvalidArgument("the tool call's function name is not valid");
  s = first_key == std::string_view::npos ? std::string_view() : s.substr(first_key);
  ojson args = ojson::object();
  constexpr std::string_view kKey = "<arg_key>", kKeyClose = "</arg_key>", kVal = "<arg_value>",
                             kValClose = "</arg_value>";
  while (!Trim(s).empty()) {
    s = Trim(s);
    if (s.substr(0, kKey.size()) != kKey) return InvalidArgument("unexpected text between arguments");
    const size_t key_end = s.find(kKeyClose);
    if (key_end == std::string_view::npos) return InvalidArgument("unterminated <arg_key>");
    const std::string key(Trim(s.substr(kKey.size(), key_end - kKey.size())));
    if (key.empty()) return InvalidArgument("an argument without a name");
    s = Trim(s.substr(key_end + kKeyClose.size()));
    if (s.substr(0, kVal.size()) != kVal) return InvalidArgument("argument " + key + " has no <arg_value>");
    const size_t value_end = s.find(kValClose);
    if (value_end == std::string_view::npos) return InvalidArgument("unterminated <arg_value> of " + key);
    args[key] = ArgValue(s.substr(kVal.size(), value_end - kVal.size()));
    s = s.substr(value_end + kValClose.size());
  }
  call.arguments = args.dump();
  return call;
}

// NAME<｜tool▁sep｜>{arguments} (DeepSeek V3.1), or
// functions.NAME:INDEX<|tool_call_argument_begin|>{arguments} (Kimi K2);
// the arguments may be a JSON string of an object.
Result<ToolCall> ParseTokenCall(const CallTokens& tokens, std::string_view inner) {
  const size_t sep = inner.find(tokens.sep);
  if (sep == std::string_view::npos) return InvalidArgument("the tool call has no separator after its name");
  ToolCall call;
  std::string_view name = Trim(inner.substr(0, sep));
  if (&tokens == &kKimiTokens) {  // functions.NAME:INDEX
    constexpr std::string_view kPrefix = "functions.";
    if (name.substr(0, kPrefix.size()) == kPrefix) name.remove_prefix(kPrefix.size());
    const size_t colon = name.rfind(':');
    if (colon != std::string_view::npos && colon + 1 < name.size() &&
        name.find_first_not_of("0123456789", colon + 1) == std::string_view::npos)
      name = name.substr(0, colon);
  }
  call.name = std::string(name);
  if (!ValidName(call.name)) return InvalidArgument("the tool call's function name is not valid");
  ojson args = ojson::parse(Trim(inner.substr(sep + tokens.sep.size())), nullptr, false);
  if (!args.is_discarded() && args.is_string()) args = ojson::parse(args.get<std::string>(), nullptr, false);
  if (args.is_discarded() || !args.is_object()) return InvalidArgument("the tool call's arguments are not an object");
  call.arguments = args.dump();
  return call;
}

// [{"name": ..., "arguments": ...}, ...]: every element must be a call.
Result<std::vector<ToolCall>> ParseJsonCallList(std::string_view text) {
  ojson j = ojson::parse(Trim(text), nullptr, false);
  if (j.is_discarded() || !j.is_array() || j.empty()) return InvalidArgument("the tool calls are not a JSON array");
  std::vector<ToolCall> calls;
  for (const ojson& e : j) {
    STRATA_ASSIGN_OR_RETURN(ToolCall c, ParseJsonCall(e.dump()));
    calls.push_back(std::move(c));
  }
  return calls;
}

}  // namespace

ToolCallFormat ToolCallFormatOf(std::string_view source) {
  if (source.find("<|channel|>") != std::string_view::npos &&
      source.find("<|start|>assistant to=") != std::string_view::npos)
    return ToolCallFormat::kHarmony;
  if (source.find("<tool_call>") != std::string_view::npos) {
    if (source.find("<arg_key>") != std::string_view::npos) return ToolCallFormat::kGlm;
    return source.find("<function=") != std::string_view::npos ? ToolCallFormat::kXml : ToolCallFormat::kJson;
  }
  // DeepSeek V3.1 writes NAME<｜tool▁sep｜>{args}; R1's TYPE<｜tool▁sep｜>NAME and a ```json block is not read.
  if (source.find(kDeepSeekTokens.open) != std::string_view::npos && source.find("```json") == std::string_view::npos)
    return ToolCallFormat::kDeepSeek;
  if (source.find(kKimiTokens.list_open) != std::string_view::npos) return ToolCallFormat::kKimi;
  if (source.find("[TOOL_CALLS]") != std::string_view::npos) return ToolCallFormat::kMistral;
  if (source.find("\"parameters\": dictionary of argument name") != std::string_view::npos)
    return ToolCallFormat::kLlama3;
  return ToolCallFormat::kNone;
}

std::optional<std::string> TemplateCallId(ToolCallFormat format, const std::string& name, size_t index) {
  if (format != ToolCallFormat::kKimi) return std::nullopt;
  return "functions." + name + ":" + std::to_string(index);
}

Result<ToolCall> ParseToolCall(ToolCallFormat format, std::string_view inner) {
  // A call's name and arguments go into JSON replies: bytes that are not
  // UTF-8 make the text content, never a call (nor an exception in dump()).
  if (SanitizeUtf8(inner) != inner) return InvalidArgument("the tool call is not valid UTF-8");
  switch (format) {
    case ToolCallFormat::kXml: return ParseXmlCall(inner);
    case ToolCallFormat::kGlm: return ParseGlmCall(inner);
    case ToolCallFormat::kDeepSeek:
    case ToolCallFormat::kKimi: return ParseTokenCall(*TokensOf(format), inner);
    case ToolCallFormat::kJson:
    case ToolCallFormat::kLlama3: return ParseJsonCall(inner);
    case ToolCallFormat::kMistral: {
      STRATA_ASSIGN_OR_RETURN(auto calls, ParseJsonCallList(inner));
      if (calls.size() != 1) return InvalidArgument("more than one call");
      return calls[0];
    }
    case ToolCallFormat::kHarmony: return InvalidArgument("harmony's calls are read by HarmonyStreamer");
    case ToolCallFormat::kGeneric: return InvalidArgument("generic answers are read whole by ToolCallStreamer");
    case ToolCallFormat::kNone: break;
  }
  return InvalidArgument("this template has no tool-call format");
}

ToolCallStreamer::Out ToolCallStreamer::Push(std::string_view text) {
  Out out;
  pending_.append(text);
  Run(&out, false);
  return out;
}

ToolCallStreamer::Out ToolCallStreamer::Finish() {
  Out out;
  Run(&out, true);
  return out;
}

void ToolCallStreamer::Run(Out* out, bool final) {
  if (format_ == ToolCallFormat::kMistral || format_ == ToolCallFormat::kLlama3) return RunToEnd(out, final);
  if (format_ == ToolCallFormat::kGeneric) return RunGeneric(out, final);
  const CallTokens* ds = TokensOf(format_);
  const std::string_view open_tag = ds ? ds->open : kOpen, close_tag = ds ? ds->close : kClose;
  while (true) {
    if (!in_call_) {
      // The next tag, in order: a call's opening, or (call tokens) a token
      // around the list of calls, which is not content. Only what comes
      // before the first tag is read here, so where the text was cut into
      // pieces cannot change what is content.
      size_t open = pending_.find(open_tag), tag_size = open_tag.size();
      bool list_token = false;
      if (ds)
        for (std::string_view w : {ds->list_open, ds->list_close})
          if (const size_t at = pending_.find(w); at < open) open = at, tag_size = w.size(), list_token = true;
      if (open != std::string::npos) {
        // Whitespace between two calls is not content.
        if (calls_ == 0 || !Trim(std::string_view(pending_).substr(0, open)).empty())
          out->content.append(pending_, 0, open);
        pending_.erase(0, open + tag_size);
        in_call_ = !list_token;
        continue;
      }
      // Content, but not a partial "<tool_call" at the end; after a call,
      // whitespace waits to see whether text or another call follows.
      size_t keep = final ? 0 : PartialTagAtEnd(pending_, open_tag);
      if (ds && !final)  // and not a partial token around the list
        keep = std::max({keep, PartialTagAtEnd(pending_, ds->list_open), PartialTagAtEnd(pending_, ds->list_close)});
      size_t end = pending_.size() - keep;
      if (calls_ > 0 && Trim(std::string_view(pending_).substr(0, end)).empty()) {
        if (final) pending_.clear();
        return;
      }
      out->content.append(pending_, 0, end);
      pending_.erase(0, end);
      return;
    }
    const size_t close = pending_.find(close_tag);
    if (close == std::string::npos && !final) return;
    const std::string inner = pending_.substr(0, close == std::string::npos ? pending_.size() : close);
    auto call = ParseToolCall(format_, inner);
    if (call.ok()) {
      out->calls.push_back(std::move(*call));
      ++calls_;
    } else {  // not a call after all: the text stays content
      out->content += std::string(open_tag) + inner + (close == std::string::npos ? "" : std::string(close_tag));
    }
    pending_.erase(0, close == std::string::npos ? pending_.size() : close + close_tag.size());
    in_call_ = false;
    if (final && pending_.empty()) return;
  }
}

// Formats whose calls run to the end of the answer: Mistral's from
// [TOOL_CALLS] on; Llama 3's when the whole answer is one JSON object. What
// does not parse at the end is content.
// The generic format's answer is one JSON object, read when it ends:
// {"tool_calls": [...]} (or one "tool_call") become calls, {"response": TEXT}
// becomes content; anything else (an answer cut by max_tokens) stays text.
void ToolCallStreamer::RunGeneric(Out* out, bool final) {
  if (!final) return;
  const ojson j = ojson::parse(Trim(pending_), nullptr, false);
  std::vector<ToolCall> calls;
  bool read = false;
  if (j.is_object() && j.size() == 1) {
    if (auto r = j.find("response"); r != j.end() && r->is_string()) {
      out->content += r->get<std::string>();
      read = true;
    } else if (auto list = j.find("tool_calls"); list != j.end() && list->is_array() && !list->empty()) {
      read = true;
      for (const ojson& c : *list) {
        auto call = ParseJsonCall(c.dump());
        if (!call.ok()) {
          read = false;
          break;
        }
        calls.push_back(std::move(*call));
      }
    } else if (auto one = j.find("tool_call"); one != j.end() && one->is_object()) {
      auto call = ParseJsonCall(one->dump());
      if (call.ok()) calls.push_back(std::move(*call)), read = true;
    }
  }
  if (!read) {
    out->content += pending_;
    calls.clear();
  }
  for (ToolCall& c : calls) out->calls.push_back(std::move(c));
  calls_ += calls.size();
  pending_.clear();
}

void ToolCallStreamer::RunToEnd(Out* out, bool final) {
  if (format_ == ToolCallFormat::kLlama3 && !decided_) {
    std::string_view head = Trim(pending_);
    constexpr std::string_view kPythonTag = "<|python_tag|>";
    if (head.substr(0, kPythonTag.size()) == kPythonTag) head = Trim(head.substr(kPythonTag.size()));
    if (head.empty() || (kPythonTag.substr(0, head.size()) == head && !final)) {
      if (!final) return;  // not known yet
    }
    decided_ = true;
    in_call_ = !head.empty() && head.front() == '{';
  }
  if (format_ == ToolCallFormat::kMistral && !in_call_) {
    constexpr std::string_view kMarker = "[TOOL_CALLS]";
    const size_t at = pending_.find(kMarker);
    if (at != std::string::npos) {
      out->content.append(pending_, 0, at);
      pending_.erase(0, at);
      in_call_ = true;
    } else {
      const size_t keep = final ? 0 : PartialTagAtEnd(pending_, kMarker);
      out->content.append(pending_, 0, pending_.size() - keep);
      pending_.erase(0, pending_.size() - keep);
      return;
    }
  }
  if (!in_call_) {
    out->content += pending_;
    pending_.clear();
    return;
  }
  if (!final) return;  // the calls end with the answer
  std::string_view body = Trim(pending_);
  constexpr std::string_view kMarker = "[TOOL_CALLS]", kPythonTag = "<|python_tag|>";
  if (format_ == ToolCallFormat::kMistral) body = body.substr(kMarker.size());
  else if (body.substr(0, kPythonTag.size()) == kPythonTag) body = body.substr(kPythonTag.size());
  Result<std::vector<ToolCall>> calls = format_ == ToolCallFormat::kMistral
                                            ? ParseJsonCallList(body)
                                            : [&]() -> Result<std::vector<ToolCall>> {
                                                STRATA_ASSIGN_OR_RETURN(ToolCall c, ParseJsonCall(body));
                                                return std::vector<ToolCall>{std::move(c)};
                                              }();
  if (calls.ok()) {
    for (ToolCall& c : *calls) out->calls.push_back(std::move(c));
    calls_ += out->calls.size();
  } else {
    out->content += pending_;
  }
  pending_.clear();
  in_call_ = false;
}

namespace {

// The argument items of a call written key by key (Qwen3.5's
// <parameter=KEY>, GLM's <arg_key>): for each property of `params`, in order,
// OPEN KEY AFTER_KEY VALUE CLOSE, optional unless required; string values as
// raw text (`text_rule`: no '<'), other values as their schema's JSON.
Result<std::string> ArgumentItems(grammar::GbnfBuilder& b, const std::string& name, const nlohmann::ordered_json& params,
                                  const char* text_rule, const std::string& open, const std::string& after_key,
                                  const std::string& close) {
  using grammar::GbnfLiteral;
  std::string seq;
  const auto props = params.find("properties");
  std::vector<std::string> required;
  if (auto r = params.find("required"); r != params.end() && r->is_array())
    for (const auto& k : *r)
      if (k.is_string()) required.push_back(k.get<std::string>());
  if (props == params.end() || !props->is_object()) return seq;
  for (const auto& [key, schema] : props->items()) {
    std::string value;
    if (schema.is_object() && schema.value("type", "") == "string" && !schema.contains("enum") &&
        !schema.contains("const")) {
      value = b.AddRule(text_rule, "[^<]*");
    } else {
      auto v = b.AddSchema(schema, name + "-" + key);
      if (!v.ok()) return v.status().WithContext("tools: " + name + ": parameters." + key);
      value = *v;
    }
    const std::string item = "(" + GbnfLiteral(open + key + after_key) + " " + value + " " + GbnfLiteral(close) + ")";
    const bool req = std::find(required.begin(), required.end(), key) != required.end();
    seq += " " + item + (req ? "" : "?");
  }
  return seq;
}

}  // namespace

std::vector<ChatMessage> GenericToolMessages(const std::vector<ChatMessage>& messages,
                                             const nlohmann::ordered_json& tools, bool system_role) {
  ojson described = ojson::array();
  for (const auto& t : tools) {
    const auto& fn = t.at("function");
    ojson d = {{"name", fn.at("name")}};
    if (auto x = fn.find("description"); x != fn.end()) d["description"] = *x;
    if (auto x = fn.find("parameters"); x != fn.end()) d["parameters"] = *x;
    described.push_back(std::move(d));
  }
  const std::string guide =
      "You can call these tools:\n" + described.dump(-1, ' ', false, ojson::error_handler_t::replace) +
      "\n\nAnswer with one JSON object and nothing else: {\"tool_calls\": [{\"name\": ..., \"arguments\": "
      "{...}}]} to call tools (their results come back in the next message), or {\"response\": \"...\"} to answer "
      "the user.";
  std::vector<ChatMessage> out;
  bool guided = false;
  if (system_role && (messages.empty() || messages[0].role != "system")) {
    out.push_back({"system", guide, nullptr});
    guided = true;
  }
  bool after_tool = false;  // the last message out holds tool results
  for (size_t i = 0; i < messages.size(); ++i) {
    ChatMessage m = messages[i];
    if (!guided && system_role && i == 0 && m.role == "system") {
      m.content += (m.content.empty() ? "" : "\n\n") + guide;
      guided = true;
    } else if (!guided && !system_role && m.role == "user") {
      m.content = guide + "\n\n" + m.content;
      guided = true;
    }
    if (m.role == "assistant" && m.extra.is_object() && m.extra.contains("tool_calls")) {
      ojson calls = ojson::array();
      for (const ojson& c : m.extra["tool_calls"])
        calls.push_back({{"name", c["function"]["name"]}, {"arguments", c["function"]["arguments"]}});
      m.content = ojson{{"tool_calls", calls}}.dump();
      m.extra.erase("tool_calls");
    } else if (m.role == "assistant" && !m.content.empty()) {
      m.content = ojson{{"response", m.content}}.dump(-1, ' ', false, ojson::error_handler_t::replace);
    } else if (m.role == "tool") {
      ojson r = {{"content", m.content}};
      if (m.extra.is_object()) {
        if (m.extra.contains("name")) r["name"] = m.extra["name"];
        if (m.extra.contains("tool_call_id")) r["tool_call_id"] = m.extra["tool_call_id"];
      }
      const std::string text = ojson{{"tool_response", r}}.dump(-1, ' ', false, ojson::error_handler_t::replace);
      if (after_tool) {  // one user turn for consecutive results (templates that want turns to alternate)
        out.back().content += "\n" + text;
        continue;
      }
      m = {"user", text, nullptr};
      out.push_back(std::move(m));
      after_tool = true;
      continue;
    }
    after_tool = false;
    out.push_back(std::move(m));
  }
  if (!guided) out.insert(out.begin(), ChatMessage{"user", guide, nullptr});
  return out;
}

namespace {

// The calls of `tools` (or of `only`) in `format`; kGeneric's answer may
// also be a {"response": TEXT} when `allow_response`.
Result<std::string> CallsGrammar(ToolCallFormat format, const nlohmann::ordered_json& tools, const std::string& only,
                                 bool parallel, bool allow_response) {
  using grammar::GbnfLiteral;
  grammar::GbnfBuilder b;
  std::vector<std::string> calls;
  for (const auto& t : tools) {
    const auto& fn = t.at("function");
    const std::string name = fn.at("name").get<std::string>();
    if (!only.empty() && name != only) continue;
    nlohmann::ordered_json params = nlohmann::ordered_json{{"type", "object"}};
    if (auto p = fn.find("parameters"); p != fn.end() && p->is_object() && !p->empty()) params = *p;
    std::string body;
    if (format == ToolCallFormat::kGlm) {
      // NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>\n: strings as raw text, others as JSON.
      auto items = ArgumentItems(b, name, params, "glm-text", "<arg_key>", "</arg_key>\n<arg_value>", "</arg_value>\n");
      if (!items.ok()) return items.status();
      std::string seq = GbnfLiteral("<tool_call>" + name + "\n") + *items;
      body = seq + " " + GbnfLiteral("</tool_call>");
    } else if (format == ToolCallFormat::kHarmony) {
      auto args = b.AddSchema(params, name + "-args");
      if (!args.ok()) return args.status().WithContext("tools: " + name + ": parameters");
      // As the template writes a call after "<|start|>assistant" (where the generation prompt ends).
      body = GbnfLiteral(" to=functions." + name + "<|channel|>commentary json<|message|>") + " " + *args;
    } else if (const CallTokens* tok = TokensOf(format)) {
      auto args = b.AddSchema(params, name + "-args");
      if (!args.ok()) return args.status().WithContext("tools: " + name + ": parameters");
      // DeepSeek: NAME; Kimi K2: the id functions.NAME:INDEX.
      const std::string head = format == ToolCallFormat::kKimi
                                   ? GbnfLiteral(std::string(tok->open) + "functions." + name + ":") + " [0-9]+ " +
                                         GbnfLiteral(std::string(tok->sep))
                                   : GbnfLiteral(std::string(tok->open) + name + std::string(tok->sep));
      body = head + " " + *args + " " + GbnfLiteral(std::string(tok->close));
    } else if (format == ToolCallFormat::kXml) {
      // <parameter=KEY>\nVALUE\n</parameter>: strings as raw text, other values as JSON.
      auto items = ArgumentItems(b, name, params, "xml-text", "<parameter=", ">\n", "\n</parameter>\n");
      if (!items.ok()) return items.status();
      std::string seq = GbnfLiteral("<function=" + name + ">\n") + *items;
      seq += " " + GbnfLiteral("</function>");
      body = GbnfLiteral("<tool_call>\n") + " " + seq + " " + GbnfLiteral("\n</tool_call>");
    } else {
      auto args = b.AddSchema(params, name + "-args");
      if (!args.ok()) return args.status().WithContext("tools: " + name + ": parameters");
      const char* key = format == ToolCallFormat::kLlama3 ? "parameters" : "arguments";
      std::string obj = GbnfLiteral("{\"name\": " + nlohmann::json(name).dump() + ", \"" + key + "\": ") + " " +
                        *args + " " + GbnfLiteral("}");
      body = format == ToolCallFormat::kJson ? GbnfLiteral("<tool_call>\n") + " " + obj + " " +
                                                   GbnfLiteral("\n</tool_call>")
                                             : obj;
    }
    calls.push_back(b.AddRule("call-" + name, body));
  }
  if (calls.empty()) return InvalidArgument("tool_choice names '" + only + "', which is not among the tools");
  std::string any = calls.size() == 1 ? calls[0] : b.AddRule("call", [&] {
    std::string alts;
    for (const auto& c : calls) alts += (alts.empty() ? "" : " | ") + c;
    return alts;
  }());
  switch (format) {
    case ToolCallFormat::kJson:
    case ToolCallFormat::kXml:
    case ToolCallFormat::kGlm:
      return b.Text(parallel ? any + " (\"\\n\" " + any + ")*" : any);
    case ToolCallFormat::kDeepSeek:
    case ToolCallFormat::kKimi: {
      const CallTokens& tok = *TokensOf(format);
      return b.Text(GbnfLiteral(std::string(tok.list_open)) + " " + (parallel ? any + " " + any + "*" : any) + " " +
                    GbnfLiteral(std::string(tok.list_close)));
    }
    case ToolCallFormat::kHarmony:
      return b.Text(any);  // one call; <|call|> ends the generation
    case ToolCallFormat::kMistral:
      return b.Text("\"[TOOL_CALLS][\" " + any + (parallel ? " (\", \" " + any + ")*" : "") + " \"]\"");
    case ToolCallFormat::kLlama3:
      return b.Text(any);  // one call: the whole answer
    case ToolCallFormat::kGeneric: {  // one JSON object: the calls, or a response
      std::string answer = GbnfLiteral("{\"tool_calls\": [") + " " + any +
                           (parallel ? " (" + GbnfLiteral(", ") + " " + any + ")*" : "") + " " + GbnfLiteral("]}");
      if (allow_response) {
        auto text = b.AddSchema(nlohmann::ordered_json{{"type", "string"}}, "response-text");
        if (!text.ok()) return text.status();
        answer = "( " + answer + " ) | " + GbnfLiteral("{\"response\": ") + " " + *text + " " + GbnfLiteral("}");
      }
      return b.Text(answer);
    }
    case ToolCallFormat::kNone:
      break;
  }
  return InvalidArgument("this chat template has no tool-call format");
}

}  // namespace

Result<std::string> ToolCallGrammar(ToolCallFormat format, const nlohmann::ordered_json& tools,
                                    const std::string& only, bool parallel) {
  return CallsGrammar(format, tools, only, parallel, /*allow_response=*/false);
}

Result<std::string> GenericToolGrammar(const nlohmann::ordered_json& tools, const std::string& only, bool parallel,
                                       bool allow_response) {
  return CallsGrammar(ToolCallFormat::kGeneric, tools, only, parallel, allow_response);
}

}  // namespace strata::serve
