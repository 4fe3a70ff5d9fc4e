#pragma once
// A Jinja2 interpreter for chat templates: the subset that real GGUF chat
// templates use, with the settings Hugging Face's apply_chat_template runs
// them under (trim_blocks, lstrip_blocks, loop controls; `tojson` as
// json.dumps(ensure_ascii=False); `raise_exception`, `strftime_now`).
//
// Statements: if/elif/else, for (tuple targets, `if` filter, else, loop.*,
// break/continue), set (names, namespace attributes, block set), macro
// (defaults, keyword arguments), call-free filter blocks, raw, comments,
// whitespace control (`-`, `+`). Expressions: literals, lists, dicts,
// tuples, attribute/item access, slicing, calls, filters, tests, `a if c
// else b`, and/or/not, comparisons, `in`, `~`, arithmetic.
//
// Templates come from packs, so from strangers: parsing and rendering are
// bounded (nesting depth, loop iterations, output size, macro recursion) and
// every failure is an error with the line, never a crash.
//
// The parts: jinja_value.h (the value model and its conversions),
// jinja_parse.h (the template's tree), jinja_render.h (statements and
// expressions), jinja_filters.h (the filters, a table by name).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/status.h"

namespace strata::jinja {

struct Node;  // jinja_parse.h

// Bounds on one render.
struct Limits {
  size_t max_output = 8u << 20;       // bytes rendered
  uint64_t max_steps = 20'000'000;    // statements, loop iterations and calls
  int max_call_depth = 64;            // macro calls in progress
  int max_depth = 512;                // statements, expressions and calls in progress (bounds the stack)
  int64_t fixed_time = -1;            // tests: strftime_now formats this Unix time (UTC), not the clock
};

class Template {
 public:
  // Parses `source`. Errors (kInvalidArgument) name the line and what was expected.
  static Result<Template> Parse(std::string_view source);
  // Renders with `context` (a JSON object: messages, tools, bos_token, ...).
  // Errors name the line; raise_exception's message is passed through as is.
  Result<std::string> Render(const nlohmann::ordered_json& context, const Limits& limits = {}) const;

 private:
  std::shared_ptr<const Node> root_;
};

}  // namespace strata::jinja
