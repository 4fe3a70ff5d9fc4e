#pragma once
// JSON Schema's `pattern` (an ECMA-262 regular expression) as a GBNF rule
// body for a JSON string: the quotes, and between them the JSON text of the
// strings the expression matches. A JSON Schema pattern is not anchored: an
// expression without ^ (or $) matches anywhere, so any characters may come
// before (or after) it. Characters are written as JSON writes them (a quote
// as \", a newline as \n; other code points as themselves).
//
// The subset a grammar expresses: literals, `.`, classes (`[a-z]`, `[^...]`,
// `\d \w \s` and their negations), groups (`(...)`, `(?:...)`), alternation,
// the quantifiers `* + ? {n} {n,} {n,m}` (a lazy `?` after one changes
// nothing here), and `^`/`$` at the ends. Refused with a message that names
// the construct and its offset: backreferences, lookarounds, named groups,
// `\b`, anchors inside the expression, and counts past 1000.

#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace strata::grammar {

// `char_rule`: the name of the rule for any one JSON string character (an
// unescaped character or an escape), for the unanchored ends. Errors are
// kInvalidArgument, naming the offset in the pattern.
Result<std::string> RegexToGbnf(std::string_view pattern, const std::string& char_rule);

}  // namespace strata::grammar
