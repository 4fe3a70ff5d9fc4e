#include "runtime/serve/api_request.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/base/checked_cast.h"
#include "runtime/base/strings.h"

namespace strata::serve {
namespace {

// Ordered: schemas, tool parameters and call arguments keep the order clients wrote
// (properties are generated in it; re-rendered history keeps its bytes).
using json = nlohmann::ordered_json;

std::string TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "something else";
  }
}

ApiError WrongType(const std::string& field, const std::string& expected, const json& found) {
  return BadRequest("'" + field + "' must be " + expected + ", not " + TypeName(found), field, "invalid_type");
}

ApiError OutOfRange(const std::string& field, const std::string& range, double found) {
  return BadRequest(StrFormat("'%s' must be %s, not %g", field.c_str(), range.c_str(), found), field,
                    "invalid_value");
}

// A present, non-null field, or nullptr.
const json* Field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<ApiError> GetBool(const json& body, const char* name, bool* out) {
  const json* v = Field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return WrongType(name, "true or false", *v);
  *out = v->get<bool>();
  return std::nullopt;
}

// A number in [lo, hi] (lo_open: the low end excluded).
std::optional<ApiError> GetFloat(const json& body, const char* name, double lo, double hi, bool lo_open,
                                 float* out) {
  const json* v = Field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) return WrongType(name, "a number", *v);
  double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi || (lo_open && d == lo))
    return OutOfRange(name, StrFormat(lo_open ? "in (%g, %g]" : "in [%g, %g]", lo, hi), d);
  *out = static_cast<float>(d);
  return std::nullopt;
}

std::optional<ApiError> GetInt(const json& body, const char* name, int64_t lo, int64_t hi, int64_t* out) {
  const json* v = Field(body, name);
  if (!v) return std::nullopt;
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) return WrongType(name, "an integer", *v);
    // Compared as integers: (double)hi rounds up for hi >= 2^53.
    std::optional<int64_t> i = ExactCast<int64_t>(d);
    if (!i || *i < lo || *i > hi)
      return OutOfRange(name, StrFormat("in [%lld, %lld]", static_cast<long long>(lo), static_cast<long long>(hi)), d);
    *out = *i;
    return std::nullopt;
  }
  if (!v->is_number_integer()) return WrongType(name, "an integer", *v);
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return OutOfRange(name, StrFormat("in [%lld, %lld]", static_cast<long long>(lo), static_cast<long long>(hi)),
                      v->get<double>());
  int64_t i = v->get<int64_t>();
  if (i < lo || i > hi)
    return OutOfRange(name, StrFormat("in [%lld, %lld]", static_cast<long long>(lo), static_cast<long long>(hi)),
                      static_cast<double>(i));
  *out = i;
  return std::nullopt;
}

// llama-server's own parameters that Strata does not implement: accepted at
// the value that asks for what Strata does anyway, refused (400, naming the
// parameter) at any other, never silently ignored. Parameters that only
// qualify another one (mirostat_tau without mirostat, dry_base without
// dry_multiplier) pass with it.
std::optional<ApiError> RefuseLlamaServerExtensions(const json& body, ApiKind kind) {
  auto refuse = [](const std::string& field, const std::string& why) {
    return BadRequest("'" + field + "' is not supported by this server: " + why, field, "unsupported_parameter");
  };
  struct NeutralNumber {
    const char* name;
    double neutral;
    const char* what;
  };
  static constexpr NeutralNumber kNumbers[] = {
      {"mirostat", 0, "no Mirostat sampling (0 is accepted)"},
      {"typical_p", 1, "no locally typical sampling (1 is accepted)"},
      {"tfs_z", 1, "no tail-free sampling (1 is accepted)"},
      {"dynatemp_range", 0, "no dynamic temperature (0 is accepted)"},
      {"xtc_probability", 0, "no XTC sampling (0 is accepted)"},
      {"dry_multiplier", 0, "no DRY repetition penalty (0 is accepted)"},
      {"top_n_sigma", -1, "no top-n-sigma sampling (-1 is accepted)"},
      {"min_keep", 0, "no minimum candidate count (0 is accepted)"},
      {"t_max_predict_ms", 0, "no time limit on generation (0 is accepted)"},
  };
  if (kind != ApiKind::kInfill)
    if (const json* v = Field(body, "n_indent"); v && !(v->is_number() && v->get<double>() == 0))
      return refuse("n_indent", "it belongs to /infill (0 is accepted)");
  for (const NeutralNumber& n : kNumbers)
    if (const json* v = Field(body, n.name); v && !v->is_null() && !(v->is_number() && v->get<double>() == n.neutral))
      return refuse(n.name, n.what);
  for (const char* f : {"n_keep", "n_discard"})
    if (const json* v = Field(body, f); v && !v->is_null() && !(v->is_number_integer() && v->get<int64_t>() <= 0))
      return refuse(f, "the context is never shifted: generation ends when a slot's context is full");
  for (const char* f : {"samplers", "lora", "image_data", "multimodal_data", "response_fields", "grammar_triggers",
                        "preserved_tokens", "input_extra"})
    if (const json* v = Field(body, f); v && !v->is_null() && !((v->is_array() || v->is_object()) && v->empty()) &&
                                          !(kind == ApiKind::kInfill && std::string_view(f) == "input_extra"))
      return refuse(f, std::string_view(f) == "input_extra" ? "it belongs to /infill" : "not implemented");
  for (const char* f : {"return_tokens", "post_sampling_probs", "timings_per_token", "return_progress",
                        "grammar_lazy"})
    if (const json* v = Field(body, f); v && !v->is_null() && !(v->is_boolean() && !v->get<bool>()))
      return refuse(f, "not implemented (false is accepted)");
  for (const char* f : {"input_prefix", "input_suffix", "chat_template"})
    if (const json* v = Field(body, f); v && !v->is_null() && !(v->is_string() && v->get<std::string>().empty()) &&
                                          !(kind == ApiKind::kInfill && std::string_view(f) != "chat_template"))
      return refuse(f, std::string_view(f) == "chat_template" ? "not implemented" : "it belongs to /infill");
  return std::nullopt;
}

// Fields that would change the answer if silently ignored.
std::optional<ApiError> RefuseUnsupported(const json& body, ApiKind kind) {
  auto refuse = [](const std::string& field, const std::string& why) {
    return BadRequest("'" + field + "' is not supported by this server: " + why, field, "unsupported_parameter");
  };
  if (const json* v = Field(body, "functions"); v && !(v->is_array() && v->empty()))
    return refuse("functions", "the deprecated functions API is not served; send 'tools'");
  if (const json* v = Field(body, "function_call"); v && !(v->is_string() && v->get<std::string>() == "none"))
    return refuse("function_call", "the deprecated functions API is not served; send 'tool_choice'");
  for (const char* f : {"audio", "prediction"})
    if (Field(body, f)) return refuse(f, "not implemented");
  if (const json* v = Field(body, "best_of"); v && !v->is_null() && !(v->is_number_integer() && v->get<int64_t>() == 1))
    return refuse("best_of", "choices are not ranked (1 is accepted; 'n' returns several)");
  if (const json* v = Field(body, "modalities")) {
    if (!v->is_array() || v->size() != 1 || !(*v)[0].is_string() || (*v)[0].get<std::string>() != "text")
      return refuse("modalities", "only [\"text\"] is accepted");
  }
  if (auto e = RefuseLlamaServerExtensions(body, kind)) return e;
  if (kind == ApiKind::kCompletion) {
    if (const json* v = Field(body, "suffix"); v && !(v->is_string() && v->get<std::string>().empty()))
      return refuse("suffix", "fill-in-the-middle is /infill's (input_prefix, input_suffix)");
  }
  return std::nullopt;
}

// A tool's or a call's function name: OpenAI's ^[a-zA-Z0-9_-]{1,64}$ (dots allowed too, as some clients send them).
bool ValidFunctionName(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

// tool_calls of an assistant message, and tool_call_id/name of a tool
// message, into the message's template fields. Arguments sent as JSON text
// reach the template as objects (templates iterate them).
std::optional<ApiError> ParseToolFields(const json& m, const std::string& role, const std::string& where,
                                        ChatMessage* cm) {
  auto set = [&](const char* key, nlohmann::ordered_json v) {
    if (!cm->extra.is_object()) cm->extra = nlohmann::ordered_json::object();
    cm->extra[key] = std::move(v);
  };
  if (const json* calls = Field(m, "tool_calls"); calls && !calls->is_null()) {
    if (role != "assistant")
      return BadRequest("'" + where + ".tool_calls' belongs to assistant messages", where + ".tool_calls",
                        "invalid_value");
    if (!calls->is_array()) return WrongType(where + ".tool_calls", "an array of tool calls", *calls);
    if (calls->size() > 128) return BadRequest("'" + where + ".tool_calls' has more than 128 calls", where, "invalid_value");
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (size_t k = 0; k < calls->size(); ++k) {
      const json& c = (*calls)[k];
      const std::string cw = StrFormat("%s.tool_calls[%zu]", where.c_str(), k);
      if (!c.is_object()) return WrongType(cw, "a tool call object", c);
      const json* fn = Field(c, "function");
      if (!fn || !fn->is_object()) return BadRequest("'" + cw + ".function' is required: {name, arguments}", cw + ".function", "missing_field");
      const json* name = Field(*fn, "name");
      if (!name || !name->is_string() || !ValidFunctionName(name->get<std::string>()))
        return BadRequest("'" + cw + ".function.name' must be a function name", cw + ".function.name", "invalid_value");
      nlohmann::ordered_json args = nlohmann::ordered_json::object();
      if (const json* a = Field(*fn, "arguments"); a && !a->is_null()) {
        if (a->is_string()) {
          args = nlohmann::ordered_json::parse(a->get<std::string>(), nullptr, false);
          if (args.is_discarded() || !args.is_object())
            return BadRequest("'" + cw + ".function.arguments' must be a JSON object (as text)", cw + ".function.arguments",
                              "invalid_value");
        } else if (a->is_object()) {
          args = *a;
        } else {
          return WrongType(cw + ".function.arguments", "a JSON object as text", *a);
        }
      }
      nlohmann::ordered_json call = {{"type", "function"},
                                     {"function", {{"name", name->get<std::string>()}, {"arguments", args}}}};
      if (const json* id = Field(c, "id"); id && id->is_string()) call["id"] = id->get<std::string>();
      list.push_back(std::move(call));
    }
    set("tool_calls", std::move(list));
  }
  if (role == "tool") {
    if (const json* id = Field(m, "tool_call_id"); id && !id->is_null()) {
      if (!id->is_string()) return WrongType(where + ".tool_call_id", "a string", *id);
      set("tool_call_id", id->get<std::string>());
    }
    if (const json* n = Field(m, "name"); n && n->is_string()) set("name", n->get<std::string>());
  }
  return std::nullopt;
}

// tools, tool_choice and parallel_tool_calls.
std::optional<ApiError> ParseTools(const json& j, ApiRequest* out) {
  if (const json* tools = Field(j, "tools"); tools && !tools->is_null()) {
    if (!tools->is_array()) return WrongType("tools", "an array of tools", *tools);
    if (tools->size() > 128) return BadRequest("'tools' has more than 128 tools", "tools", "invalid_value");
    for (size_t k = 0; k < tools->size(); ++k) {
      const json& t = (*tools)[k];
      const std::string tw = StrFormat("tools[%zu]", k);
      if (!t.is_object()) return WrongType(tw, "a tool object", t);
      const json* type = Field(t, "type");
      if (!type || !type->is_string() || type->get<std::string>() != "function")
        return BadRequest("'" + tw + ".type' must be \"function\"", tw + ".type", "invalid_value");
      const json* fn = Field(t, "function");
      if (!fn || !fn->is_object()) return BadRequest("'" + tw + ".function' is required", tw + ".function", "missing_field");
      const json* name = Field(*fn, "name");
      if (!name || !name->is_string() || !ValidFunctionName(name->get<std::string>()))
        return BadRequest("'" + tw + ".function.name' must be 1-64 letters, digits, '_', '-' or '.'",
                          tw + ".function.name", "invalid_value");
      if (const json* d = Field(*fn, "description"); d && !d->is_null() && !d->is_string())
        return WrongType(tw + ".function.description", "a string", *d);
      if (const json* p = Field(*fn, "parameters"); p && !p->is_null() && !p->is_object())
        return WrongType(tw + ".function.parameters", "a JSON Schema object", *p);
      out->tools.push_back(t);
    }
  }
  if (const json* tc = Field(j, "tool_choice"); tc && !tc->is_null()) {
    const std::string choice = tc->is_string() ? tc->get<std::string>() : "";
    if (choice == "none") {
      out->tool_choice_none = true;
    } else if (choice == "auto") {
      // the default
    } else if (choice == "required") {
      out->tool_choice_required = true;
    } else if (tc->is_object()) {
      const json* type = Field(*tc, "type");
      const json* fn = Field(*tc, "function");
      const json* name = fn && fn->is_object() ? Field(*fn, "name") : nullptr;
      if (!type || !type->is_string() || type->get<std::string>() != "function" || !name || !name->is_string())
        return BadRequest("'tool_choice' naming a function must be {\"type\": \"function\", \"function\": "
                          "{\"name\": ...}}",
                          "tool_choice", "invalid_value");
      out->tool_choice_name = name->get<std::string>();
      bool found = false;
      for (const auto& t : out->tools) found |= t["function"]["name"].get<std::string>() == out->tool_choice_name;
      if (!found)
        return BadRequest("'tool_choice' names '" + out->tool_choice_name + "', which is not among the tools",
                          "tool_choice", "invalid_value");
    } else {
      return BadRequest("'tool_choice' must be \"auto\", \"none\", \"required\" or a function", "tool_choice",
                        "invalid_value");
    }
  }
  if ((out->tool_choice_required || !out->tool_choice_name.empty()) && out->tools.empty())
    return BadRequest("'tool_choice' asks for a tool call but 'tools' is empty", "tool_choice", "invalid_value");
  if (auto e = GetBool(j, "parallel_tool_calls", &out->parallel_tool_calls)) return e;
  return std::nullopt;
}

// response_format, grammar and json_schema: at most one constraint.
std::optional<ApiError> ParseConstraint(const json& j, ApiRequest* out) {
  std::vector<const char*> given;
  if (const json* rf = Field(j, "response_format"); rf && !rf->is_null()) {
    if (!rf->is_object()) return WrongType("response_format", "an object with \"type\"", *rf);
    const json* t = Field(*rf, "type");
    const std::string type = t && t->is_string() ? t->get<std::string>() : "";
    if (type == "json_object") {
      if (const json* schema = Field(*rf, "schema"); schema && !schema->is_null()) {  // llama-server's form
        out->json_schema = *schema;
        out->constraint = ApiRequest::Constraint::kJsonSchema;
      } else {
        out->constraint = ApiRequest::Constraint::kJsonObject;
      }
      given.push_back("response_format");
    } else if (type == "json_schema") {
      const json* js = Field(*rf, "json_schema");
      const json* schema = js && js->is_object() ? Field(*js, "schema") : nullptr;
      if (!schema || !(schema->is_object() || schema->is_boolean()))
        return BadRequest("'response_format.json_schema.schema' is required: the JSON Schema the answer must follow",
                          "response_format", "missing_field");
      out->json_schema = *schema;
      out->constraint = ApiRequest::Constraint::kJsonSchema;
      given.push_back("response_format");
    } else if (type != "text") {
      return BadRequest("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\"",
                        "response_format", "invalid_value");
    }
  }
  if (const json* g = Field(j, "grammar"); g && !g->is_null() && !(g->is_string() && g->get<std::string>().empty())) {
    if (!g->is_string()) return WrongType("grammar", "a GBNF text", *g);
    out->grammar = g->get<std::string>();
    out->constraint = ApiRequest::Constraint::kGrammar;
    given.push_back("grammar");
  }
  if (const json* js = Field(j, "json_schema"); js && !js->is_null()) {  // llama-server's top-level form
    if (!js->is_object() && !js->is_boolean()) return WrongType("json_schema", "a JSON Schema object", *js);
    out->json_schema = *js;
    out->constraint = ApiRequest::Constraint::kJsonSchema;
    given.push_back("json_schema");
  }
  if (given.size() > 1)
    return BadRequest(std::string("give one of 'response_format' (JSON), 'grammar' and 'json_schema', not '") +
                          given[0] + "' and '" + given[1] + "'",
                      given[1], "invalid_value");
  const bool forced_call = out->tool_choice_required || !out->tool_choice_name.empty();
  if (!given.empty() && forced_call)
    return BadRequest(std::string("'") + given[0] + "' and a required tool call cannot both shape the answer",
                      given[0], "invalid_value");
  return std::nullopt;
}

// logit_bias: OpenAI's {"TOKEN_ID": BIAS}, and llama-server's forms: a key
// that is text (each of its tokens gets the bias), [[ID or TEXT, BIAS], ...],
// and false for a ban. BIAS is a number in [-100, 100].
std::optional<ApiError> ParseLogitBias(const json& j, const ApiLimits& limits, ApiRequest* out) {
  const json* lb = Field(j, "logit_bias");
  if (!lb) return std::nullopt;
  if (!lb->is_object() && !lb->is_array())
    return WrongType("logit_bias", "an object of token ids to biases, or an array of [token, bias] pairs", *lb);
  if (lb->size() > kMaxLogitBias)
    return BadRequest(StrFormat("'logit_bias' has %zu entries; at most %zu are taken", lb->size(), kMaxLogitBias),
                      "logit_bias", "invalid_value");
  auto add = [&](const std::string& where, const json& key, const json& value) -> std::optional<ApiError> {
    float bias = 0;
    if (value.is_boolean() && !value.get<bool>()) {
      bias = -std::numeric_limits<float>::infinity();  // llama-server's ban
    } else if (value.is_number()) {
      const double d = value.get<double>();
      if (!std::isfinite(d) || d < -100 || d > 100) return OutOfRange(where, "in [-100, 100] (or false: banned)", d);
      bias = static_cast<float>(d);
    } else {
      return WrongType(where, "a number in [-100, 100], or false (banned)", value);
    }
    std::optional<int64_t> id;
    if (key.is_number_integer() && !key.is_number_unsigned()) id = key.get<int64_t>();
    else if (key.is_number_unsigned()) id = ExactCast<int64_t>(key.get<uint64_t>());
    else if (key.is_string()) {
      const std::string& k = key.get<std::string>();
      int64_t parsed = 0;
      auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), parsed);
      if (!k.empty() && ec == std::errc() && end == k.data() + k.size()) {
        id = parsed;
      } else {
        if (k.empty()) return BadRequest("'" + where + "': an empty text has no tokens", "logit_bias", "invalid_value");
        out->logit_bias_text.emplace_back(k, bias);
        return std::nullopt;
      }
    } else {
      return WrongType(where, "a token id or a text", key);
    }
    if (!id || *id < 0 || static_cast<uint64_t>(*id) >= limits.n_vocab)
      return BadRequest(StrFormat("'%s': token %s is not in the vocabulary (ids 0..%u)", where.c_str(),
                                  key.dump().c_str(), limits.n_vocab - 1),
                        "logit_bias", "invalid_value");
    out->sampling.logit_bias.emplace_back(static_cast<int32_t>(*id), bias);
    return std::nullopt;
  };
  if (lb->is_object()) {
    for (const auto& [k, v] : lb->items())
      if (auto e = add("logit_bias." + k, json(k), v)) return e;
  } else {
    for (size_t i = 0; i < lb->size(); ++i) {
      const json& pair = (*lb)[i];
      const std::string where = StrFormat("logit_bias[%zu]", i);
      if (!pair.is_array() || pair.size() != 2) return WrongType(where, "a [token, bias] pair", pair);
      if (auto e = add(where, pair[0], pair[1])) return e;
    }
  }
  return std::nullopt;
}

// Chat: logprobs (bool) and top_logprobs (0-20). Completions: logprobs (0-5 alternatives).
std::optional<ApiError> ParseLogprobs(const json& j, ApiKind kind, ApiRequest* out) {
  const json* lp = Field(j, "logprobs");
  const json* top = Field(j, "top_logprobs");
  if (kind == ApiKind::kCompletion) {
    if (top && !top->is_null()) return BadRequest("'top_logprobs' belongs to chat; completions take 'logprobs': N",
                                                  "top_logprobs", "unsupported_parameter");
    if (!lp || lp->is_null()) return std::nullopt;
    int64_t k = 0;
    if (auto e = GetInt(j, "logprobs", 0, 5, &k)) return e;
    out->top_logprobs = static_cast<int>(k);
    return std::nullopt;
  }
  bool on = false;
  if (auto e = GetBool(j, "logprobs", &on)) return e;
  if (top && !top->is_null()) {
    int64_t k = 0;
    if (auto e = GetInt(j, "top_logprobs", 0, 20, &k)) return e;
    if (!on && k > 0)
      return BadRequest("'top_logprobs' needs \"logprobs\": true", "top_logprobs", "invalid_value");
    if (on) out->top_logprobs = static_cast<int>(k);
  }
  if (on && out->top_logprobs < 0) out->top_logprobs = 0;
  return std::nullopt;
}

// /infill's fields (llama-server's): input_prefix and input_suffix (strings,
// required), input_extra ([{filename, text}]), n_indent, and an optional
// prompt string that follows the middle token.
std::optional<ApiError> ParseInfill(const json& j, ApiRequest* out) {
  if (Field(j, "messages"))
    return BadRequest("'messages' belongs to /v1/chat/completions; /infill takes 'input_prefix' and 'input_suffix'",
                      "messages", "unsupported_parameter");
  for (auto [name, dest] : {std::pair{"input_prefix", &out->input_prefix}, std::pair{"input_suffix", &out->input_suffix}}) {
    const json* v = Field(j, name);
    if (!v) return BadRequest(std::string("'") + name + "' is required: a string of code", name, "missing_field");
    if (!v->is_string()) return WrongType(name, "a string", *v);
    *dest = v->get<std::string>();
  }
  if (const json* p = Field(j, "prompt")) {
    if (!p->is_string()) return WrongType("prompt", "a string (it follows the middle token)", *p);
    out->prompt_text = p->get<std::string>();
  }
  if (const json* extra = Field(j, "input_extra")) {
    if (!extra->is_array()) return WrongType("input_extra", "an array of {\"filename\", \"text\"}", *extra);
    if (extra->size() > 1024) return BadRequest("'input_extra' has more than 1024 chunks", "input_extra", "invalid_value");
    for (size_t i = 0; i < extra->size(); ++i) {
      const json& c = (*extra)[i];
      const std::string where = StrFormat("input_extra[%zu]", i);
      if (!c.is_object()) return WrongType(where, "an object {\"filename\", \"text\"}", c);
      const json* text = Field(c, "text");
      if (!text || !text->is_string()) return BadRequest("'" + where + ".text' is required: a string", where + ".text", "missing_field");
      std::string filename = "tmp";  // llama-server's default
      if (const json* f = Field(c, "filename")) {
        if (!f->is_string()) return WrongType(where + ".filename", "a string", *f);
        filename = f->get<std::string>();
      }
      out->input_extra.emplace_back(std::move(filename), text->get<std::string>());
    }
  }
  if (Field(j, "n_indent")) {
    int64_t v = 0;
    if (auto e = GetInt(j, "n_indent", 0, 1024, &v)) return e;
    out->n_indent = static_cast<int>(v);
  }
  for (const char* f : {"logprobs", "top_logprobs", "n_probs"})
    if (const json* v = Field(j, f); v && !(v->is_boolean() && !v->get<bool>()) && !(v->is_number() && v->get<double>() == 0))
      return BadRequest(std::string("'") + f + "' is not reported by /infill", f, "unsupported_parameter");
  if (const json* n = Field(j, "n"); n && !(n->is_number() && n->get<double>() == 1))
    return BadRequest("/infill writes one answer: 'n' must be 1", "n", "unsupported_parameter");
  return std::nullopt;
}

// llama-server's n_probs: the N most likely tokens at each step, reported as
// the OpenAI logprobs of either endpoint (logprobs turned on).
std::optional<ApiError> ParseNProbs(const json& j, ApiRequest* out) {
  if (!Field(j, "n_probs")) return std::nullopt;
  int64_t k = 0;
  if (auto e = GetInt(j, "n_probs", 0, 20, &k)) return e;
  if (k > 0) out->top_logprobs = std::max(out->top_logprobs, static_cast<int>(k));
  return std::nullopt;
}

// llama-server's penalty_last_n (repeat_last_n, its older name): the
// penalties count the last N generated tokens; -1 all of them, 0 none.
std::optional<ApiError> ParsePenaltyWindow(const json& j, SamplingParams* s) {
  const char* name = nullptr;
  for (const char* f : {"penalty_last_n", "repeat_last_n"}) {
    if (!Field(j, f)) continue;
    if (name)
      return BadRequest("give 'penalty_last_n' or 'repeat_last_n' (its older name), not both", f, "invalid_value");
    name = f;
  }
  if (!name) return std::nullopt;
  int64_t v = 0;
  if (auto e = GetInt(j, name, -1, INT32_MAX, &v)) return e;
  s->penalty_last_n = static_cast<int32_t>(v);
  return std::nullopt;
}

std::optional<ApiError> ParseMessages(const json& body, std::vector<ChatMessage>* out) {
  const json* msgs = Field(body, "messages");
  if (!msgs) return BadRequest("'messages' is required: an array of {\"role\", \"content\"} objects", "messages",
                               "missing_field");
  if (!msgs->is_array()) return WrongType("messages", "an array of messages", *msgs);
  if (msgs->empty()) return BadRequest("'messages' is empty: give at least one message", "messages", "invalid_value");
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& m = (*msgs)[i];
    const std::string where = StrFormat("messages[%zu]", i);
    if (!m.is_object()) return WrongType(where, "an object with \"role\" and \"content\"", m);
    const json* role = Field(m, "role");
    if (!role) return BadRequest("'" + where + ".role' is required", where + ".role", "missing_field");
    if (!role->is_string()) return WrongType(where + ".role", "a string", *role);
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    if (r == "function")
      return BadRequest("'" + where + ".role' is \"function\": the deprecated functions API is not served; use "
                        "\"tool\" messages", where + ".role", "unsupported_parameter");
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      return BadRequest("'" + where + ".role' must be \"system\", \"developer\", \"user\", \"assistant\" or "
                        "\"tool\", not \"" + r + "\"",
                        where + ".role", "invalid_value");
    if (Field(m, "function_call"))
      return BadRequest("'" + where + ".function_call': the deprecated functions API is not served; use tool_calls",
                        where, "unsupported_parameter");
    ChatMessage cm;
    cm.role = r;
    if (auto e = ParseToolFields(m, r, where, &cm)) return e;
    if (const json* rc = Field(m, "reasoning_content"); rc && !rc->is_null()) {
      if (!rc->is_string()) return WrongType(where + ".reasoning_content", "a string", *rc);
      if (r != "assistant")
        return BadRequest("'" + where + ".reasoning_content' belongs to assistant messages", where + ".reasoning_content",
                          "invalid_value");
      if (!cm.extra.is_object()) cm.extra = nlohmann::ordered_json::object();
      cm.extra["reasoning_content"] = rc->get<std::string>();
    }
    const json* content = Field(m, "content");
    if (!content || (content->is_null() && r == "assistant")) {
      if (r != "assistant")
        return BadRequest("'" + where + ".content' is required", where + ".content", "missing_field");
    } else if (content->is_string()) {
      cm.content = content->get<std::string>();
    } else if (content->is_array()) {
      // Content parts: only text ones, joined in order.
      for (size_t k = 0; k < content->size(); ++k) {
        const json& part = (*content)[k];
        const std::string pw = StrFormat("%s.content[%zu]", where.c_str(), k);
        if (!part.is_object()) return WrongType(pw, "a content part object", part);
        const json* type = Field(part, "type");
        if (!type || !type->is_string())
          return BadRequest("'" + pw + ".type' is required and must be a string", pw + ".type", "missing_field");
        if (type->get<std::string>() != "text")
          return BadRequest("'" + pw + ".type' is \"" + type->get<std::string>() +
                                "\": only text content parts are supported",
                            pw + ".type", "unsupported_parameter");
        const json* text = Field(part, "text");
        if (!text || !text->is_string())
          return BadRequest("'" + pw + ".text' is required and must be a string", pw + ".text", "missing_field");
        cm.content += text->get<std::string>();
      }
    } else {
      return WrongType(where + ".content", "a string or an array of content parts", *content);
    }
    out->push_back(std::move(cm));
  }
  return std::nullopt;
}

// One prompt: a string or an array of token ids; `where` names it ("prompt", "prompt[2]").
std::optional<ApiError> ParseOnePrompt(const json& one, const std::string& where, const ApiLimits& limits,
                                       ApiPrompt* out) {
  if (one.is_string()) {
    out->text = one.get<std::string>();
    if (out->text.empty()) return BadRequest("'" + where + "' is empty", "prompt", "invalid_value");
    return std::nullopt;
  }
  if (!one.is_array()) return WrongType(where, "a string or an array of token ids", one);
  if (one.empty()) return BadRequest("'" + where + "' is empty", "prompt", "invalid_value");
  out->is_ids = true;
  for (size_t i = 0; i < one.size(); ++i) {
    const json& id = one[i];
    if (!id.is_number_integer())
      return BadRequest(StrFormat("'%s[%zu]' must be a token id (an integer), not %s", where.c_str(), i,
                                  TypeName(id).c_str()),
                        "prompt", "invalid_type");
    int64_t v = id.is_number_unsigned() && id.get<uint64_t>() > INT64_MAX ? -1 : id.get<int64_t>();
    if (v < 0 || v >= static_cast<int64_t>(limits.n_vocab))
      return BadRequest(StrFormat("'%s[%zu]' is token id %lld, out of range: the vocabulary has %u tokens",
                                  where.c_str(), i, static_cast<long long>(v), limits.n_vocab),
                        "prompt", "invalid_value");
    out->ids.push_back(static_cast<int32_t>(v));
  }
  return std::nullopt;
}

// A prompt, or a list of them (strings, or arrays of token ids): OpenAI's
// completions answer each one, `n` choices apiece.
std::optional<ApiError> ParsePrompt(const json& body, const ApiLimits& limits, ApiRequest* out) {
  const json* p = Field(body, "prompt");
  if (!p) return BadRequest("'prompt' is required: a string or an array of token ids", "prompt", "missing_field");
  out->prompts.clear();
  if (p->is_array() && !p->empty() && !(*p)[0].is_number()) {
    if (p->size() > kMaxPrompts)
      return BadRequest(StrFormat("'prompt' has %zu prompts; at most %zu are taken", p->size(), kMaxPrompts), "prompt",
                        "invalid_value");
    for (size_t i = 0; i < p->size(); ++i) {
      ApiPrompt one;
      if (auto e = ParseOnePrompt((*p)[i], StrFormat("prompt[%zu]", i), limits, &one)) return e;
      out->prompts.push_back(std::move(one));
    }
  } else {
    ApiPrompt one;
    if (auto e = ParseOnePrompt(*p, "prompt", limits, &one)) return e;
    out->prompts.push_back(std::move(one));
  }
  // The first, where the single-prompt code reads it.
  out->prompt_text = out->prompts[0].text;
  out->prompt_ids = out->prompts[0].ids;
  out->prompt_is_ids = out->prompts[0].is_ids;
  return std::nullopt;
}

std::optional<ApiError> ParseStop(const json& body, const ApiLimits& limits, std::vector<std::string>* out) {
  const json* s = Field(body, "stop");
  if (!s) return std::nullopt;
  std::vector<const json*> items;
  if (s->is_string()) {
    items.push_back(s);
  } else if (s->is_array()) {
    if (s->size() > limits.max_stop)
      return BadRequest(StrFormat("'stop' has %zu strings; at most %zu are accepted", s->size(), limits.max_stop),
                        "stop", "invalid_value");
    for (const json& e : *s) items.push_back(&e);
  } else {
    return WrongType("stop", "a string or an array of strings", *s);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i]->is_string())
      return BadRequest(StrFormat("'stop[%zu]' must be a string, not %s", i, TypeName(*items[i]).c_str()), "stop",
                        "invalid_type");
    std::string v = items[i]->get<std::string>();
    if (v.empty()) return BadRequest(StrFormat("'stop[%zu]' is an empty string", i), "stop", "invalid_value");
    if (v.size() > limits.max_stop_bytes)
      return BadRequest(StrFormat("'stop[%zu]' is %zu bytes long; at most %zu are accepted", i, v.size(),
                                  limits.max_stop_bytes),
                        "stop", "invalid_value");
    out->push_back(std::move(v));
  }
  return std::nullopt;
}

}  // namespace

int JsonDepth(std::string_view text, int limit) {
  int depth = 0, max = 0;
  bool in_string = false, escape = false;
  for (char c : text) {
    if (in_string) {
      if (escape) escape = false;
      else if (c == '\\') escape = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max) max = depth;
      if (max > limit) return max;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return max;
}

namespace {

std::optional<ApiError> ParseChecked(ApiKind kind, std::string_view body, const SamplingParams& defaults,
                                     const ApiLimits& limits, ApiRequest* out) {
  *out = ApiRequest{};
  out->kind = kind;
  out->sampling = defaults;
  if (body.empty()) return BadRequest("the request body is empty: send a JSON object", "", "invalid_json");
  if (JsonDepth(body, limits.max_json_depth) > limits.max_json_depth)
    return BadRequest(StrFormat("the request body nests deeper than %d levels", limits.max_json_depth), "",
                      "invalid_json");
  json j;
  try {
    j = json::parse(body);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers too large for a double
    return BadRequest(std::string("the request body is not valid JSON: ") + e.what(), "", "invalid_json");
  }
  if (!j.is_object()) return BadRequest("the request body must be a JSON object, not " + TypeName(j), "",
                                        "invalid_json");

  if (auto e = RefuseUnsupported(j, kind)) return e;
  if (const json* m = Field(j, "model")) {
    if (!m->is_string()) return WrongType("model", "a string", *m);
    out->model = m->get<std::string>();
  }
  if (kind == ApiKind::kChat) {
    if (Field(j, "prompt")) return BadRequest("'prompt' belongs to /v1/completions; chat takes 'messages'", "prompt",
                                              "unsupported_parameter");
    if (auto e = ParseMessages(j, &out->messages)) return e;
  } else if (kind == ApiKind::kInfill) {
    if (auto e = ParseInfill(j, out)) return e;
  } else {
    if (Field(j, "messages"))
      return BadRequest("'messages' belongs to /v1/chat/completions; completions take 'prompt'", "messages",
                        "unsupported_parameter");
    if (auto e = ParsePrompt(j, limits, out)) return e;
    if (auto e = GetBool(j, "echo", &out->echo)) return e;
  }
  if (kind == ApiKind::kChat) {
    if (auto e = ParseTools(j, out)) return e;
    if (const json* kw = Field(j, "chat_template_kwargs"); kw && !kw->is_null()) {
      if (!kw->is_object()) return WrongType("chat_template_kwargs", "an object", *kw);
      for (auto it = kw->begin(); it != kw->end(); ++it) {
        if (it.key() == "messages" || it.key() == "tools" || it.key() == "add_generation_prompt" ||
            it.key() == "bos_token" || it.key() == "eos_token")
          return BadRequest("'chat_template_kwargs." + it.key() + "' is set by the server", "chat_template_kwargs",
                            "invalid_value");
        out->template_kwargs[it.key()] = it.value();
      }
    }
    // OpenAI's reasoning_effort reaches the template (gpt-oss's reads it).
    if (const json* re = Field(j, "reasoning_effort"); re && !re->is_null()) {
      const std::string e = re->is_string() ? re->get<std::string>() : "";
      if (e != "low" && e != "medium" && e != "high")
        return BadRequest("'reasoning_effort' must be \"low\", \"medium\" or \"high\"", "reasoning_effort",
                          "invalid_value");
      out->template_kwargs["reasoning_effort"] = e;
    }
    if (const json* rf = Field(j, "reasoning_format"); rf && !rf->is_null()) {
      const std::string f = rf->is_string() ? rf->get<std::string>() : "";
      if (f != "none" && f != "auto" && f != "deepseek" && f != "deepseek-legacy")
        return BadRequest("'reasoning_format' must be \"auto\", \"deepseek\", \"deepseek-legacy\" or \"none\"",
                          "reasoning_format", "invalid_value");
      out->split_reasoning = f != "none";
    }
  }
  if (auto e = GetBool(j, "stream", &out->stream)) return e;
  if (auto e = GetBool(j, "ignore_eos", &out->ignore_eos)) return e;
  if (const json* so = Field(j, "stream_options")) {
    if (!so->is_object()) return WrongType("stream_options", "an object", *so);
    if (!out->stream) return BadRequest("'stream_options' is only allowed with \"stream\": true", "stream_options",
                                        "invalid_value");
    if (const json* iu = Field(*so, "include_usage")) {
      if (!iu->is_boolean()) return WrongType("stream_options.include_usage", "true or false", *iu);
      out->include_usage = iu->get<bool>();
    }
  }

  if (auto e = ParseConstraint(j, out)) return e;
  if (auto e = ParseLogprobs(j, kind, out)) return e;
  if (auto e = ParseNProbs(j, out)) return e;
  // llama-server's id_slot (slot_id, its older name): the slot to run in;
  // the server checks it against its slot count.
  for (const char* f : {"id_slot", "slot_id"}) {
    if (!Field(j, f)) continue;
    int64_t v = 0;
    if (auto e = GetInt(j, f, -1, INT32_MAX, &v)) return e;
    out->id_slot = static_cast<int>(v);
  }
  if (auto e = ParseLogitBias(j, limits, out)) return e;
  if (const json* n = Field(j, "n"); n && !n->is_null()) {
    int64_t k = 0;
    if (auto e = GetInt(j, "n", 1, kMaxChoices, &k)) return e;
    out->n = static_cast<int>(k);
  }
  if (out->prompts.size() * static_cast<size_t>(out->n) > kMaxPrompts * 2)
    return BadRequest(StrFormat("%zu prompts with n %d make %zu answers; at most %zu are taken", out->prompts.size(),
                                out->n, out->prompts.size() * static_cast<size_t>(out->n), kMaxPrompts * 2),
                      "n", "invalid_value");
  if (out->echo && out->top_logprobs >= 0)
    return BadRequest("'echo' with 'logprobs': the prompt's log probabilities are not computed; drop one", "echo",
                      "unsupported_parameter");

  SamplingParams& s = out->sampling;
  if (auto e = GetFloat(j, "temperature", 0, 100, false, &s.temperature)) return e;
  if (auto e = GetFloat(j, "top_p", 0, 1, true, &s.top_p)) return e;
  if (auto e = GetFloat(j, "min_p", 0, 1, false, &s.min_p)) return e;
  if (auto e = GetFloat(j, "presence_penalty", -2, 2, false, &s.presence_penalty)) return e;
  if (auto e = GetFloat(j, "frequency_penalty", -2, 2, false, &s.frequency_penalty)) return e;
  if (auto e = GetFloat(j, "repeat_penalty", 0, 10, true, &s.repeat_penalty)) return e;
  if (auto e = ParsePenaltyWindow(j, &s)) return e;
  int64_t v = 0;
  if (Field(j, "top_k")) {
    if (auto e = GetInt(j, "top_k", 0, INT32_MAX, &v)) return e;
    s.top_k = static_cast<int32_t>(v);
  }
  if (const json* seed = Field(j, "seed")) {
    if (seed->is_number_unsigned()) {
      s.seed = seed->get<uint64_t>();
    } else if (seed->is_number_integer()) {
      s.seed = static_cast<uint64_t>(seed->get<int64_t>());  // negative seeds wrap, as in two's complement
    } else if (!seed->is_null()) {
      return WrongType("seed", "an integer", *seed);
    }
    // -1 (llama-server's "random") and null: the server draws a seed.
    out->has_seed = !seed->is_null() && !(seed->is_number_integer() && seed->get<int64_t>() == -1);
  }
  // max_completion_tokens is OpenAI's newer name; both are accepted, not both at once.
  const char* max_name = "max_tokens";
  if (Field(j, "max_completion_tokens")) {
    if (Field(j, "max_tokens"))
      return BadRequest("give 'max_tokens' or 'max_completion_tokens', not both", "max_completion_tokens",
                        "invalid_value");
    max_name = "max_completion_tokens";
  }
  if (Field(j, "n_predict")) {  // llama-server's name; -1: no limit
    if (Field(j, max_name))
      return BadRequest(std::string("give '") + max_name + "' or 'n_predict', not both", "n_predict", "invalid_value");
    if (auto e = GetInt(j, "n_predict", -1, INT64_MAX, &v)) return e;
    if (v == 0) return BadRequest("'n_predict' must be -1 (no limit) or at least 1", "n_predict", "invalid_value");
    if (v > 0) out->max_tokens = static_cast<int32_t>(std::min<int64_t>(v, INT32_MAX));
  } else if (Field(j, max_name)) {
    // More than the context can hold is clamped to what is left of it: the
    // answer ends with finish_reason "length" when the slot is full.
    if (auto e = GetInt(j, max_name, 1, INT64_MAX, &v)) return e;
    out->max_tokens = static_cast<int32_t>(std::min<int64_t>(v, limits.n_ctx));
  }
  if (auto e = ParseStop(j, limits, &out->stop)) return e;
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseApiRequest(ApiKind kind, std::string_view body, const SamplingParams& defaults,
                                        const ApiLimits& limits, ApiRequest* out) {
  // Every access above checks the type first; this is the net under it.
  try {
    return ParseChecked(kind, body, defaults, limits, out);
  } catch (const nlohmann::json::exception& e) {
    return BadRequest(std::string("the request body could not be read: ") + e.what(), "", "invalid_request");
  }
}

}  // namespace strata::serve
