#pragma once
// The Jinja interpreter's renderer (internal to runtime/chat/jinja*.cc):
// statements, expressions, attribute and method calls, tests, bounded by
// Limits; the filters are a table of their own (jinja_filters.cc).

#include <cstdint>
#include <string>

#include "runtime/chat/jinja.h"
#include "runtime/chat/jinja_parse.h"

namespace strata::jinja {

// The globals a render sees: range, raise_exception, namespace, dict,
// strftime_now (fixed_time >= 0: that Unix time, UTC), then the context's keys.
Value Globals(const nlohmann::ordered_json& context, int64_t fixed_time);
// Renders `root` into *out. Throws Error (with the line) on a template error.
void RenderTemplate(const Node& root, const Limits& limits, Value globals, std::string* out);

}  // namespace strata::jinja
