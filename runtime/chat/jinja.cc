#include "runtime/chat/jinja.h"

// The interpreter's parts: jinja_value (values and conversions), jinja_parse
// (the template's tree), jinja_render (statements and expressions),
// jinja_filters (the filter table).
#include "runtime/base/strings.h"
#include "runtime/chat/jinja_parse.h"
#include "runtime/chat/jinja_render.h"
#include "runtime/chat/jinja_value.h"

namespace strata::jinja {

Result<Template> Template::Parse(std::string_view source) {
  try {
    Template t;
    t.root_ = ParseTemplate(source);
    return t;
  } catch (const Error& e) {
    return InvalidArgument(StrFormat("chat template, line %d: %s", e.line, e.what()));
  }
}

Result<std::string> Template::Render(const nlohmann::ordered_json& context, const Limits& limits) const {
  std::string out;
  try {
    const ValueArena arena(limits.max_output, limits.max_steps);
    RenderTemplate(*root_, limits, Globals(context, limits.fixed_time), &out);
  } catch (const Error& e) {
    if (e.raised) return InvalidArgument(e.what());
    return InvalidArgument(StrFormat("chat template, line %d: %s", e.line, e.what()));
  } catch (const std::bad_alloc&) {
    return InvalidArgument("chat template: out of memory while rendering");
  }
  return out;
}

}  // namespace strata::jinja
