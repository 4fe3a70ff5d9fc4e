#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/regex_gbnf.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "runtime/base/strings.h"
#include "runtime/tokenizer/unicode.h"

namespace strata::grammar {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int kMaxNesting = 64;
constexpr int64_t kMaxBound = 10000;  // minLength, maxLength, minItems, maxItems: grammar size
constexpr int64_t kMaxRepeat = 1000;  // the largest {n,m} the parser takes
constexpr size_t kMaxNameLength = 48;

constexpr std::string_view kSupported[] = {"type",     "properties",  "required",   "additionalProperties",
                                           "items",    "prefixItems", "minItems",   "maxItems",
                                           "enum",     "const",       "anyOf",      "oneOf",
                                           "allOf",    "$ref",        "minLength",  "maxLength",
                                           "nullable", "$defs",       "definitions", "pattern",
                                           "format",   "minimum",     "maximum",    "exclusiveMinimum",
                                           "exclusiveMaximum", "uniqueItems"};
constexpr std::string_view kAnnotations[] = {"title", "description", "examples",   "default",  "$schema",
                                             "$id",   "$comment",    "deprecated", "readOnly", "writeOnly"};
constexpr std::string_view kTypes[] = {"string", "integer", "number", "boolean", "null", "object", "array"};
// The keywords that, without `type`, say which type a schema is about.
constexpr std::string_view kObjectKeys[] = {"properties", "required", "additionalProperties"};
constexpr std::string_view kArrayKeys[] = {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"};
constexpr std::string_view kStringKeys[] = {"minLength", "maxLength", "pattern", "format"};
constexpr std::string_view kNumberKeys[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
// String formats a grammar writes (as llama.cpp's converter does).
constexpr std::string_view kFormats[] = {"date", "time", "date-time", "uuid", "email"};
// The integer rule's range: at most 16 digits.
constexpr int64_t kIntegerLimit = 9'999'999'999'999'999;

// A \u escape names a code point: a surrogate only in a high-low pair, so
// strict JSON parsers (nlohmann's among them) read every string. kDEscapes:
// those whose first hex digit is d.
constexpr std::string_view kDEscapes =
    R"([dD] ([0-7] [0-9a-fA-F]{2} | [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2}))";
constexpr std::string_view kQuote = R"("\"")";

std::string UnicodeEscape() { return R"("u" ([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | )" + std::string(kDEscapes) + ")"; }
std::string Escape() { return R"("\\" (["\\/bfnrt] | )" + UnicodeEscape() + ")"; }

template <size_t N>
bool IsIn(std::string_view s, const std::string_view (&list)[N]) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

std::string Dump(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

// A value in a message: its JSON text in ASCII, cut to about 60 characters.
std::string Shown(const ojson& j) {
  std::string s = j.dump(-1, ' ', true, ojson::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// The parts joined by spaces, empty ones left out.
std::string Seq(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += ' ';
    out += p;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

bool IsRuleName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
      return false;
  return true;
}

std::string SanitizeName(std::string_view hint) {
  std::string out;
  for (char c : hint) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      out += c;
    else if (!out.empty() && out.back() != '-')
      out += '-';
    if (out.size() >= kMaxNameLength) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "rule" : out;
}

// A path step: ".name", or ["odd name"] for names that are not identifiers.
std::string Step(std::string_view key) {
  bool plain = !key.empty();
  for (char c : key)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$'))
      plain = false;
  return plain ? "." + std::string(key) : "[" + Shown(ojson(std::string(key))) + "]";
}

std::string Index(size_t i) { return "[" + std::to_string(i) + "]"; }

// `item` (one element) exactly n times.
std::string Exactly(const std::string& item, int64_t n) {
  if (n <= 0) return "";
  if (n == 1) return item;
  if (n <= kMaxRepeat) return item + "{" + std::to_string(n) + "}";
  const int64_t q = n / kMaxRepeat;
  const std::string block = item + "{" + std::to_string(kMaxRepeat) + "}";
  return Seq({q == 1 ? block : "( " + block + " ){" + std::to_string(q) + "}", Exactly(item, n % kMaxRepeat)});
}

// `item` 0..k times: ( item{1000} <0..k-1000> | item{0,999} ) above the parser's limit.
std::string UpTo(const std::string& item, int64_t k) {
  if (k <= 0) return "";
  if (k == 1) return item + "?";
  if (k <= kMaxRepeat) return item + "{0," + std::to_string(k) + "}";
  return "( " + Seq({Exactly(item, kMaxRepeat), UpTo(item, k - kMaxRepeat)}) + " | " + item + "{0," +
         std::to_string(kMaxRepeat - 1) + "} )";
}

// `item` (one element) min..max times; max < 0: no upper bound.
std::string Repeat(const std::string& item, int64_t min, int64_t max) {
  if (max < 0) {
    if (min == 0) return item + "*";
    if (min == 1) return item + "+";
    if (min <= kMaxRepeat) return item + "{" + std::to_string(min) + ",}";
    return Seq({Exactly(item, min), item + "*"});
  }
  if (min == max) return Exactly(item, min);
  if (max <= kMaxRepeat)
    return min == 0 && max == 1 ? item + "?" : item + "{" + std::to_string(min) + "," + std::to_string(max) + "}";
  return Seq({Exactly(item, min), UpTo(item, max - min)});
}

// A bound keyword's value: a non-negative integer (5.0 too) up to kMaxBound.
std::optional<int64_t> Bound(const ojson& v) {
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(kMaxBound)) return v.get<int64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= kMaxBound) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 0 && d <= static_cast<double>(kMaxBound) && d == std::floor(d)) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

bool HasType(const ojson& v, std::string_view type) {
  if (type == "string") return v.is_string();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "object") return v.is_object();
  return v.is_array();
}

// GBNF for the decimal numbers a..b (0 <= a <= b), without leading zeros.
std::string SameLengthDigits(const std::string& a, const std::string& b) {
  if (a.empty()) return "";
  if (a[0] == b[0]) return Seq({GbnfLiteral(a.substr(0, 1)), SameLengthDigits(a.substr(1), b.substr(1))});
  const size_t rest = a.size() - 1;
  const bool a_rest_low = a.find_first_not_of('0', 1) == std::string::npos;
  const bool b_rest_high = b.find_first_not_of('9', 1) == std::string::npos;
  auto digit_class = [](char lo, char hi) {
    return lo == hi ? GbnfLiteral(std::string(1, lo)) : "[" + std::string(1, lo) + "-" + std::string(1, hi) + "]";
  };
  auto any = [&](size_t n) { return n == 0 ? std::string() : n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}"; };
  std::vector<std::string> alts;
  char mid_lo = static_cast<char>(a[0] + 1), mid_hi = static_cast<char>(b[0] - 1);
  if (a_rest_low) mid_lo = a[0];
  else alts.push_back(Seq({GbnfLiteral(a.substr(0, 1)), SameLengthDigits(a.substr(1), std::string(rest, '9'))}));
  if (b_rest_high) mid_hi = b[0];
  if (mid_lo <= mid_hi) alts.push_back(Seq({digit_class(mid_lo, mid_hi), any(rest)}));
  if (!b_rest_high)
    alts.push_back(Seq({GbnfLiteral(b.substr(0, 1)), SameLengthDigits(std::string(rest, '0'), b.substr(1))}));
  return alts.size() == 1 ? alts[0] : "( " + Join(alts, " | ") + " )";
}

std::string NonNegativeRange(int64_t a, int64_t b) {
  std::vector<std::string> alts;
  for (int64_t lo = a; lo <= b;) {
    const std::string lo_s = std::to_string(lo);
    int64_t top = 9;  // the largest number with lo's digit count
    for (size_t d = 1; d < lo_s.size(); ++d) top = top * 10 + 9;
    const int64_t hi = std::min(b, top);
    alts.push_back(SameLengthDigits(lo_s, std::to_string(hi)));
    if (hi == b) break;
    lo = hi + 1;
  }
  return alts.size() == 1 ? alts[0] : "( " + Join(alts, " | ") + " )";
}

// GBNF for the integers lo..hi as JSON writes them ("-0" never).
std::string IntegerRangeBody(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  if (lo < 0) alts.push_back(Seq({R"("-")", NonNegativeRange(hi < 0 ? -hi : 1, -lo)}));
  if (hi >= 0) alts.push_back(NonNegativeRange(std::max<int64_t>(lo, 0), hi));
  return Join(alts, " | ");
}

// JSON string bodies of the formats in kFormats.
std::string FormatBody(std::string_view format) {
  const std::string date = R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] ))";
  const std::string time = R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? )"
                           R"(( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))";
  std::string inner;
  if (format == "date") inner = date;
  else if (format == "time") inner = time;
  else if (format == "date-time") inner = date + R"( "T" )" + time;
  else if (format == "uuid")
    inner = R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})";
  else {  // email: local part, @, dotted domain (a practical subset of RFC 5321)
    std::string atext = "[A-Za-z0-9";
    for (char c : std::string_view("!#$%&'*+/=?^_`{|}~-")) atext += StrFormat("\\x%02X", static_cast<unsigned>(c));
    atext += "]";
    inner = atext + "+ ( \".\" " + atext + "+ )* \"@\" " +
            R"(( [A-Za-z0-9] ( [A-Za-z0-9\x2D]{0,61} [A-Za-z0-9] )? "." )+ [A-Za-z]{2,63})";
  }
  return Seq({kQuote, "( " + inner + " )", kQuote});
}

std::string EscapeRule(GbnfBuilder& b) { return b.AddRule("escape", Escape()); }
std::string CharRule(GbnfBuilder& b) { return b.AddRule("char", R"([^"\\\x00-\x1F] | )" + EscapeRule(b)); }
std::string StringRule(GbnfBuilder& b) { return b.AddRule("string", Seq({kQuote, CharRule(b) + "*", kQuote})); }
std::string IntegerRule(GbnfBuilder& b) { return b.AddRule("integer", R"("-"? ("0" | [1-9] [0-9]{0,15}))"); }
// A positive exponent stops at 289, so that with at most 16 integer digits
// the value fits a double (nlohmann refuses a number that overflows).
constexpr std::string_view kFraction = R"(("." [0-9]{1,16})?)";
constexpr std::string_view kExponent =
    R"(([eE] ("-" [0-9]{1,3} | "+"? ([0-9]{1,2} | [01] [0-9]{2} | "2" [0-8] [0-9])))?)";
std::string NumberRule(GbnfBuilder& b) { return b.AddRule("number", Seq({IntegerRule(b), kFraction, kExponent})); }
std::string BooleanRule(GbnfBuilder& b) { return b.AddRule("boolean", R"("true" | "false")"); }
std::string NullRule(GbnfBuilder& b) { return b.AddRule("null", R"("null")"); }

// The JSON-encoded property names of an object, as a trie of code points,
// for the keys that additionalProperties may add (any string but these).
struct KeyTrie {
  struct Node {
    std::map<uint32_t, size_t> next;
    bool end = false;
  };
  std::vector<Node> nodes = std::vector<Node>(1);
  void Add(std::string_view encoded) {
    size_t n = 0;
    for (uint32_t cp : tokenizer::DecodeUtf8(encoded)) {  // valid: nlohmann writes it
      auto it = nodes[n].next.find(cp);
      if (it == nodes[n].next.end()) {
        nodes.emplace_back();
        it = nodes[n].next.emplace(cp, nodes.size() - 1).first;
      }
      n = it->second;
    }
    nodes[n].end = true;
  }
};

struct RefTarget {
  const ojson* schema;
  std::string path;
  std::string hint;
};

}  // namespace

// Walks a schema and adds its rules to a GbnfBuilder. Body() returns a rule
// body (alternatives allowed at the top level), Visit() a rule name.
class SchemaVisitor {
 public:
  explicit SchemaVisitor(GbnfBuilder* b) : b_(b) {}

  Result<std::string> Visit(const ojson& schema, const std::string& path, std::string_view hint, int depth) {
    STRATA_ASSIGN_OR_RETURN(std::string body, Body(schema, path, hint, depth));
    if (IsRuleName(body)) return body;
    return b_->AddRule(hint, body);
  }

 private:
  // Objects and arrays entered: a $ref cycle must enter one (else it is left recursion).
  struct Enter {
    explicit Enter(int* c) : c_(c) { ++*c_; }
    ~Enter() { --*c_; }
    Enter(const Enter&) = delete;
    Enter& operator=(const Enter&) = delete;
    int* c_;
  };

  Result<std::string> Body(const ojson& schema, const std::string& path, std::string_view hint, int depth) {
    if (depth > kMaxNesting) return InvalidArgument(path + ": the schema nests deeper than 64 levels");
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return b_->AnyValue();
      return InvalidArgument(path + ": the schema 'false' accepts no value");
    }
    if (!schema.is_object())
      return InvalidArgument(path + ": a schema must be an object or a boolean, found " +
                             std::string(schema.type_name()));
    STRATA_RETURN_IF_ERROR(CheckKeywords(schema, path));
    const bool nullable = schema.contains("nullable") && schema["nullable"].get<bool>();
    std::vector<std::string> constraints;  // what limits the value, beside nullable
    for (auto it = schema.begin(); it != schema.end(); ++it)
      if (IsIn(it.key(), kSupported) && it.key() != "nullable" && it.key() != "$defs" && it.key() != "definitions")
        constraints.push_back(it.key());
    auto only = [&](std::string_view key, std::initializer_list<std::string_view> allowed) -> Status {
      for (const std::string& c : constraints)
        if (c != key && std::find(allowed.begin(), allowed.end(), c) == allowed.end())
          return InvalidArgument(path + ": '" + std::string(key) + "' beside '" + c +
                                 "' is not supported by constrained sampling");
      return Status::Ok();
    };

    std::string body;
    if (schema.contains("$ref")) {
      STRATA_RETURN_IF_ERROR(only("$ref", {}));
      STRATA_ASSIGN_OR_RETURN(body, Ref(schema["$ref"].get<std::string>(), path, depth));
    } else if (schema.contains("allOf")) {
      STRATA_RETURN_IF_ERROR(only("allOf", {"type", "properties", "required", "additionalProperties"}));
      ojson merged = {{"type", "object"}};
      std::optional<ojson> additional;
      STRATA_RETURN_IF_ERROR(Merge(schema, path, depth, /*top=*/true, &merged, &additional));
      if (additional) merged["additionalProperties"] = *additional;
      STRATA_ASSIGN_OR_RETURN(body, Body(merged, path + ".allOf", hint, depth + 1));
    } else if (schema.contains("anyOf") || schema.contains("oneOf")) {
      const char* key = schema.contains("anyOf") ? "anyOf" : "oneOf";
      STRATA_RETURN_IF_ERROR(only(key, {}));
      std::vector<std::string> alts;
      const ojson& list = schema[key];
      for (size_t i = 0; i < list.size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(std::string alt, Visit(list[i], path + "." + key + Index(i), hint, depth + 1));
        if (std::find(alts.begin(), alts.end(), alt) == alts.end()) alts.push_back(alt);
      }
      body = Join(alts, " | ");
    } else if (schema.contains("enum") || schema.contains("const")) {
      STRATA_RETURN_IF_ERROR(only(schema.contains("enum") ? "enum" : "const", {"enum", "const", "type"}));
      return EnumBody(schema, path, nullable);
    } else {
      return TypesBody(schema, path, hint, depth, nullable);
    }
    if (nullable) body += " | " + NullRule(*b_);
    return body;
  }

  // Unknown keywords are refused by name; known ones must have the right JSON type.
  static Status CheckKeywords(const ojson& s, const std::string& path) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& key = it.key();
      const ojson& v = it.value();
      if (IsIn(key, kAnnotations)) continue;
      if (!IsIn(key, kSupported))
        return InvalidArgument(path + ": '" + Printable(key, 60) + "' is not supported by constrained sampling");
      auto bad = [&](std::string_view expected) {
        return InvalidArgument(path + ": '" + key + "' must be " + std::string(expected) + ", found " + Shown(v));
      };
      if (key == "type") {
        if (v.is_array() && v.empty()) return bad("a type name or a non-empty list of them");
        for (const ojson& t : v.is_array() ? v : ojson::array({v})) {
          if (!t.is_string()) return bad("a type name or a non-empty list of them");
          if (!IsIn(t.get<std::string>(), kTypes))
            return InvalidArgument(path + ": unknown type " + Shown(t) +
                                   " (expected string, integer, number, boolean, null, object or array)");
        }
      } else if (key == "properties" || key == "$defs" || key == "definitions") {
        if (!v.is_object()) return bad("an object");
      } else if (key == "required") {
        if (!v.is_array()) return bad("an array of property names");
        for (const ojson& r : v)
          if (!r.is_string()) return bad("an array of property names");
      } else if (key == "additionalProperties") {
        if (!v.is_boolean() && !v.is_object()) return bad("a boolean or a schema");
      } else if (key == "items") {
        if (v.is_array())
          return InvalidArgument(
              path + ": 'items' as a list (a tuple before draft 2020-12) is not supported; use 'prefixItems'");
        if (!v.is_boolean() && !v.is_object()) return bad("a schema");
      } else if (key == "prefixItems") {
        if (!v.is_array()) return bad("an array of schemas");
      } else if (key == "minItems" || key == "maxItems" || key == "minLength" || key == "maxLength") {
        if (!Bound(v)) {
          if (v.is_number() && v.get<double>() > static_cast<double>(kMaxBound))
            return InvalidArgument(path + ": '" + key + "' is " + Dump(v) + "; constrained sampling supports at most " +
                                   std::to_string(kMaxBound));
          return bad("a non-negative integer");
        }
      } else if (key == "enum" || key == "anyOf" || key == "oneOf" || key == "allOf") {
        if (!v.is_array() || v.empty()) return bad("a non-empty array");
      } else if (key == "$ref") {
        if (!v.is_string()) return bad("a string");
      } else if (key == "nullable") {
        if (!v.is_boolean()) return bad("a boolean");
      } else if (key == "pattern") {
        if (!v.is_string()) return bad("a regular expression (a string)");
      } else if (key == "format") {
        if (!v.is_string()) return bad("a string");
        if (!IsIn(v.get<std::string>(), kFormats))
          return InvalidArgument(path + ": 'format' " + Shown(v) +
                                 " is not one constrained sampling writes (date, time, date-time, uuid, email)");
      } else if (key == "minimum" || key == "maximum") {
        if (!v.is_number()) return bad("a number");
      } else if (key == "exclusiveMinimum" || key == "exclusiveMaximum") {
        if (!v.is_number() && !v.is_boolean()) return bad("a number (or, draft 4, a boolean)");
      } else if (key == "uniqueItems") {
        if (!v.is_boolean()) return bad("a boolean");
        if (v.get<bool>())
          return InvalidArgument(path + ": 'uniqueItems': true cannot be enforced by a grammar (it would have to "
                                        "remember every item); drop it, or list the values with 'enum' items");
      }
    }
    for (const auto& [lo, hi] : {std::pair{"minLength", "maxLength"}, std::pair{"minItems", "maxItems"}})
      if (s.contains(lo) && s.contains(hi) && *Bound(s[hi]) < *Bound(s[lo]))
        return InvalidArgument(path + ": '" + hi + "' (" + Dump(s[hi]) + ") is less than '" + lo + "' (" + Dump(s[lo]) +
                               ")");
    return Status::Ok();
  }

  Result<RefTarget> Resolve(const std::string& ref, const std::string& path) {
    const ojson& root = b_->root_schema_;
    if (ref == "#") return RefTarget{&root, "$", "schema"};
    for (std::string_view section : {"$defs", "definitions"}) {
      const std::string prefix = "#/" + std::string(section) + "/";
      if (!StartsWith(ref, prefix)) continue;
      std::string name = ref.substr(prefix.size());
      if (name.find('/') != std::string::npos) break;
      for (size_t p = 0; (p = name.find("~1", p)) != std::string::npos; ++p) name.replace(p, 2, "/");
      for (size_t p = 0; (p = name.find("~0", p)) != std::string::npos; ++p) name.replace(p, 2, "~");
      const std::string key(section);
      if (!root.is_object() || !root.contains(key) || !root[key].is_object() || !root[key].contains(name))
        return InvalidArgument(path + ": '$ref' " + Shown(ojson(ref)) + " names no definition of the root schema");
      return RefTarget{&root[key][name], "$" + Step(key) + Step(name), name};
    }
    return InvalidArgument(
        path + ": '$ref' " + Shown(ojson(ref)) +
        " is not supported by constrained sampling (only \"#\", \"#/$defs/NAME\" and \"#/definitions/NAME\")");
  }

  // A $ref's rule is named before its body is made, so recursive schemas end.
  Result<std::string> Ref(const std::string& ref, const std::string& path, int depth) {
    STRATA_ASSIGN_OR_RETURN(RefTarget t, Resolve(ref, path));
    auto it = b_->refs_.find(t.path);
    if (it != b_->refs_.end()) {
      if (it->second.in_progress && it->second.containers == b_->containers_)
        return InvalidArgument(path + ": '$ref' " + Shown(ojson(ref)) + " refers to itself before any object or array");
      return it->second.name;
    }
    const std::string name = b_->Reserve(t.hint);
    b_->refs_[t.path] = {name, true, b_->containers_};
    STRATA_ASSIGN_OR_RETURN(std::string body, Body(*t.schema, t.path, t.hint, depth + 1));
    b_->SetBody(name, body);
    b_->refs_[t.path].in_progress = false;
    return name;
  }

  // allOf: the members' properties (in order of appearance), required names
  // and additionalProperties, merged into one object schema. A property in
  // two members gets the allOf of both schemas.
  Status Merge(const ojson& member, const std::string& path, int depth, bool top, ojson* merged,
               std::optional<ojson>* additional) {
    if (depth > kMaxNesting) return InvalidArgument(path + ": the schema nests deeper than 64 levels");
    if (member.is_boolean()) {
      if (member.get<bool>()) return Status::Ok();
      return InvalidArgument(path + ": the schema 'false' accepts no value");
    }
    if (!member.is_object())
      return InvalidArgument(path + ": a schema must be an object or a boolean, found " +
                             std::string(member.type_name()));
    STRATA_RETURN_IF_ERROR(CheckKeywords(member, path));
    for (auto it = member.begin(); it != member.end(); ++it) {
      const std::string& key = it.key();
      const ojson& v = it.value();
      if (IsIn(key, kAnnotations) || key == "$defs" || key == "definitions" || (top && key == "nullable")) continue;
      if (key == "$ref") {
        STRATA_ASSIGN_OR_RETURN(RefTarget t, Resolve(v.get<std::string>(), path));
        STRATA_RETURN_IF_ERROR(Merge(*t.schema, t.path, depth + 1, false, merged, additional));
      } else if (key == "type") {
        if (v != "object" && v != ojson::array({"object"}))
          return InvalidArgument(path +
                                 ": 'allOf' of non-object schemas is not supported by constrained sampling (type " +
                                 Shown(v) + ")");
      } else if (key == "properties") {
        ojson& props = (*merged)["properties"];
        if (props.is_null()) props = ojson::object();
        for (auto p = v.begin(); p != v.end(); ++p) {
          if (!props.contains(p.key()))
            props[p.key()] = p.value();
          else if (props[p.key()] != p.value())
            props[p.key()] = {{"allOf", {props[p.key()], p.value()}}};
        }
      } else if (key == "required") {
        ojson& req = (*merged)["required"];
        if (req.is_null()) req = ojson::array();
        for (const ojson& r : v)
          if (std::find(req.begin(), req.end(), r) == req.end()) req.push_back(r);
      } else if (key == "additionalProperties") {
        if (*additional && **additional != v)
          return InvalidArgument(path + ": the members of 'allOf' have different 'additionalProperties'");
        *additional = v;
      } else if (key == "allOf") {
        for (size_t i = 0; i < v.size(); ++i)
          STRATA_RETURN_IF_ERROR(Merge(v[i], path + ".allOf" + Index(i), depth + 1, false, merged, additional));
      } else {
        return InvalidArgument(path + ": 'allOf' of non-object schemas is not supported by constrained sampling ('" +
                               key + "')");
      }
    }
    return Status::Ok();
  }

  Result<std::string> EnumBody(const ojson& schema, const std::string& path, bool nullable) {
    std::vector<ojson> values;
    if (schema.contains("const")) {
      if (schema.contains("enum") &&
          std::find(schema["enum"].begin(), schema["enum"].end(), schema["const"]) == schema["enum"].end())
        return InvalidArgument(path + ": 'const' is not one of 'enum': no value matches");
      values.push_back(schema["const"]);
    } else {
      values.assign(schema["enum"].begin(), schema["enum"].end());
    }
    if (schema.contains("type")) {
      const ojson& type = schema["type"];
      const ojson types = type.is_array() ? type : ojson::array({type});
      std::erase_if(values, [&](const ojson& v) {
        if (nullable && v.is_null()) return false;
        for (const ojson& t : types)
          if (HasType(v, t.get<std::string>())) return false;
        return true;
      });
    }
    if (nullable) values.push_back(nullptr);
    if (values.empty()) return InvalidArgument(path + ": no value of 'enum' or 'const' has the schema's 'type'");
    std::vector<std::string> alts;
    for (const ojson& v : values) {
      std::string lit = GbnfLiteral(Dump(v));
      if (std::find(alts.begin(), alts.end(), lit) == alts.end()) alts.push_back(std::move(lit));
    }
    return Join(alts, " | ");
  }

  Result<std::string> TypesBody(const ojson& schema, const std::string& path, std::string_view hint, int depth,
                                bool nullable) {
    std::vector<std::string> types;
    auto add = [&](const std::string& t) {
      if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
    };
    if (schema.contains("type")) {
      const ojson& type = schema["type"];
      for (const ojson& t : type.is_array() ? type : ojson::array({type})) add(t.get<std::string>());
    } else {
      // Without `type`, the keywords say which type is meant ({"properties": ...} is an object).
      for (auto it = schema.begin(); it != schema.end(); ++it) {
        if (IsIn(it.key(), kObjectKeys)) add("object");
        if (IsIn(it.key(), kArrayKeys)) add("array");
        if (IsIn(it.key(), kStringKeys)) add("string");
        if (IsIn(it.key(), kNumberKeys)) add("number");
      }
      if (types.empty()) return b_->AnyValue();
    }
    if (nullable) add("null");
    const bool any_number = std::find(types.begin(), types.end(), "number") != types.end();
    std::vector<std::string> alts;
    for (const std::string& t : types) {
      if (t == "string") {
        STRATA_ASSIGN_OR_RETURN(std::string str, StringBody(schema, path));
        alts.push_back(std::move(str));
      } else if (t == "integer") {
        if (any_number) continue;
        STRATA_ASSIGN_OR_RETURN(std::string integer, IntegerBody(schema, path));
        alts.push_back(std::move(integer));
      } else if (t == "number") {
        for (std::string_view key : kNumberKeys)
          if (schema.contains(key))
            return InvalidArgument(path + ": '" + std::string(key) +
                                   "' on a number cannot be enforced by a grammar (it can for \"type\": "
                                   "\"integer\"); drop it, or make the value an integer");
        alts.push_back(NumberRule(*b_));
      } else if (t == "boolean") {
        alts.push_back(BooleanRule(*b_));
      } else if (t == "null") {
        alts.push_back(NullRule(*b_));
      } else if (t == "object") {
        STRATA_ASSIGN_OR_RETURN(std::string s, ObjectBody(schema, path, hint, depth));
        alts.push_back(std::move(s));
      } else {
        STRATA_ASSIGN_OR_RETURN(std::string s, ArrayBody(schema, path, hint, depth));
        alts.push_back(std::move(s));
      }
    }
    return Join(alts, " | ");
  }

  Result<std::string> StringBody(const ojson& schema, const std::string& path) {
    const int64_t min = schema.contains("minLength") ? *Bound(schema["minLength"]) : 0;
    const int64_t max = schema.contains("maxLength") ? *Bound(schema["maxLength"]) : -1;
    const bool lengths = schema.contains("minLength") || schema.contains("maxLength");
    for (const char* key : {"pattern", "format"}) {
      if (!schema.contains(key)) continue;
      if (lengths || (schema.contains("pattern") && schema.contains("format")))
        return InvalidArgument(path + ": '" + key + "' beside '" +
                               (lengths ? (schema.contains("minLength") ? "minLength" : "maxLength")
                                        : std::string(key) == "pattern" ? "format" : "pattern") +
                               "' is not supported by constrained sampling");
      if (std::string(key) == "format") return FormatBody(schema["format"].get<std::string>());
      auto body = RegexToGbnf(schema["pattern"].get<std::string>(), CharRule(*b_));
      if (!body.ok()) return InvalidArgument(path + ": " + body.status().message());
      return *body;
    }
    if (min == 0 && max < 0) return StringRule(*b_);
    return Seq({kQuote, Repeat(CharRule(*b_), min, max), kQuote});
  }

  // An integer, within minimum/maximum (and their exclusive forms) when given.
  Result<std::string> IntegerBody(const ojson& schema, const std::string& path) {
    bool bounded = false;
    for (std::string_view key : kNumberKeys) bounded = bounded || schema.contains(key);
    if (!bounded) return IntegerRule(*b_);
    int64_t lo = -kIntegerLimit, hi = kIntegerLimit;
    // A bound as an integer: the smallest integer >= x (low) or the largest <= x (high).
    auto tighten = [&](const char* key, bool low, bool exclusive) -> Status {
      const ojson& v = schema[key];
      const double x = v.get<double>();
      double bound = low ? std::ceil(x) : std::floor(x);
      if (exclusive && bound == x) bound += low ? 1 : -1;
      if (bound > static_cast<double>(kIntegerLimit) || bound < -static_cast<double>(kIntegerLimit)) {
        if ((low && bound > 0) || (!low && bound < 0))
          return InvalidArgument(path + ": '" + key + "' " + Dump(v) + " is past the 16 digits an integer may have here");
        return Status::Ok();  // no tighter than the integer rule itself
      }
      const auto b = static_cast<int64_t>(bound);  // within +-10^16: exact
      if (low) lo = std::max(lo, b);
      else hi = std::min(hi, b);
      return Status::Ok();
    };
    auto draft4 = [&](const char* key) { return schema.contains(key) && schema[key].is_boolean() && schema[key].get<bool>(); };
    if (schema.contains("minimum")) STRATA_RETURN_IF_ERROR(tighten("minimum", true, draft4("exclusiveMinimum")));
    if (schema.contains("maximum")) STRATA_RETURN_IF_ERROR(tighten("maximum", false, draft4("exclusiveMaximum")));
    if (schema.contains("exclusiveMinimum") && schema["exclusiveMinimum"].is_number())
      STRATA_RETURN_IF_ERROR(tighten("exclusiveMinimum", true, true));
    if (schema.contains("exclusiveMaximum") && schema["exclusiveMaximum"].is_number())
      STRATA_RETURN_IF_ERROR(tighten("exclusiveMaximum", false, true));
    if (lo > hi) return InvalidArgument(path + ": no integer is within its minimum and maximum");
    return "( " + IntegerRangeBody(lo, hi) + " )";
  }

  // Properties in the schema's order, then the additional ones. A comma goes
  // before every member but the first present, so the body is: the first
  // present member, then the rest with commas (`after` below). Optional
  // members before the first required one make that choice an alternative.
  Result<std::string> ObjectBody(const ojson& schema, const std::string& path, std::string_view hint, int depth) {
    const bool has_props = schema.contains("properties");
    // A bare {"type": "object"} (no `properties`) is any object: that is what
    // it means to users; with `properties`, absent additionalProperties is false.
    const ojson additional =
        schema.contains("additionalProperties") ? schema["additionalProperties"] : ojson(!has_props);
    const ojson none_object = ojson::object(), none_array = ojson::array();
    const ojson& props = has_props ? schema["properties"] : none_object;
    const ojson& required = schema.contains("required") ? schema["required"] : none_array;
    if (props.empty() && required.empty() && additional == true) {
      b_->AnyValue();
      return b_->any_object_;
    }
    const std::string ws = b_->Ws();
    const std::string comma = Seq({ws, R"(",")", ws});
    auto is_required = [&](const std::string& k) {
      return std::find(required.begin(), required.end(), ojson(k)) != required.end();
    };

    Enter enter(&b_->containers_);
    std::vector<std::string> members;
    std::vector<bool> req;
    KeyTrie names;
    auto member = [&](const std::string& key, const std::string& value) {
      const std::string encoded = Dump(ojson(key));
      names.Add(std::string_view(encoded).substr(1, encoded.size() - 2));
      members.push_back(Seq({GbnfLiteral(encoded), ws, R"(":")", ws, value}));
      req.push_back(is_required(key));
    };
    for (auto it = props.begin(); it != props.end(); ++it) {
      STRATA_ASSIGN_OR_RETURN(std::string value,
                              Visit(it.value(), path + ".properties" + Step(it.key()), it.key(), depth + 1));
      member(it.key(), value);
    }
    std::string extra_value;  // of an additional member
    if (additional == true) {
      extra_value = b_->AnyValue();
    } else if (additional != false) {
      STRATA_ASSIGN_OR_RETURN(
          extra_value, Visit(additional, path + ".additionalProperties", std::string(hint) + "-value", depth + 1));
    }
    // Required names that `properties` does not declare: values of additionalProperties.
    std::vector<std::string> undeclared;
    for (const ojson& r : required) {
      const std::string& name = r.get_ref<const std::string&>();
      if (props.contains(name) || std::find(undeclared.begin(), undeclared.end(), name) != undeclared.end()) continue;
      if (extra_value.empty())
        return InvalidArgument(path + ": required property " + Shown(r) +
                               " is not in 'properties' and additionalProperties is false: no object matches");
      undeclared.push_back(name);
      member(name, extra_value);
    }
    std::string extra;  // one additional member
    if (!extra_value.empty()) {
      const std::string key =
          members.empty() ? StringRule(*b_) : Seq({kQuote, NotKey(names, 0, 0, 0, std::string(hint) + "-key")});
      extra = b_->AddRule(std::string(hint) + "-extra", Seq({key, ws, R"(":")", ws, extra_value}));
    }
    const std::string extra_tail = extra.empty() ? "" : "( " + Seq({comma, extra}) + " )*";

    const size_t n = members.size();
    const size_t first_required = static_cast<size_t>(std::find(req.begin(), req.end(), true) - req.begin());
    auto part = [&](size_t k) { return req[k] ? Seq({comma, members[k]}) : "( " + Seq({comma, members[k]}) + " )?"; };
    // The first member present is one of members[0..last]: an optional one
    // before the first required, or that one. Each goes on with `after`: the
    // members after it, every one with its comma (named when shared).
    const size_t last = std::min(first_required, n == 0 ? 0 : n - 1);
    std::string after = extra_tail;
    for (size_t k = n; k > last + 1; --k) after = Seq({part(k - 1), after});
    std::vector<std::string> alts;
    if (n > 0) {
      for (size_t i = last + 1; i-- > 0;) {
        const std::string rest =
            (i > 0 && !after.empty() && !IsRuleName(after)) ? b_->AddRule(std::string(hint) + "-rest", after) : after;
        alts.push_back(Seq({members[i], rest}));
        after = Seq({part(i), rest});
      }
      std::reverse(alts.begin(), alts.end());
    }
    const bool may_be_empty = first_required >= n;
    if (may_be_empty && !extra.empty()) alts.push_back(Seq({extra, extra_tail}));
    if (alts.empty()) return Seq({R"("{")", ws, R"("}")"});
    const std::string first = alts.size() == 1 ? alts[0] : "( " + Join(alts, " | ") + " )";
    if (may_be_empty) return Seq({R"("{")", ws, "( " + Seq({first, ws}) + " )?", R"("}")"});
    return Seq({R"("{")", ws, first, ws, R"("}")"});
  }

  // An additional property's key: any JSON string but the declared keys
  // (compared as encoded). At each trie node: a child's code point and on, or
  // another character then anything, or the end if no key ends here. `ctx`:
  // 0 reading characters, -1 after a backslash, k > 0 k hex digits left.
  std::string NotKey(const KeyTrie& t, size_t node, int ctx, int depth, const std::string& hint) {
    const KeyTrie::Node& nd = t.nodes[node];
    const std::string tail = Seq({CharRule(*b_) + "*", kQuote});
    std::vector<std::string> alts;
    std::string taken;
    for (const auto& [cp, child] : nd.next) {
      const int child_ctx = ctx == 0 ? (cp == '\\' ? -1 : 0) : ctx == -1 ? (cp == 'u' ? 4 : 0) : ctx - 1;
      std::string bytes;
      tokenizer::AppendUtf8(cp, &bytes);
      alts.push_back(Seq({GbnfLiteral(bytes), NotKey(t, child, child_ctx, depth + 1, hint)}));
      if (cp != '\\') taken += GbnfClassChar(cp);
    }
    auto untaken = [&](std::string_view set) {
      std::string out;
      for (char c : set)
        if (!nd.next.contains(static_cast<uint8_t>(c))) out += GbnfClassChar(static_cast<uint8_t>(c));
      return out;
    };
    std::vector<std::string> off;  // a character (or the rest of an escape) that leaves every key
    if (ctx == 0) {
      off.push_back(R"([^"\\\x00-\x1F)" + taken + "]");
      if (!nd.next.contains('\\')) off.push_back(EscapeRule(*b_));
    } else if (ctx == -1) {
      const std::string letters = untaken("\"\\/bfnrt");
      if (!letters.empty()) off.push_back("[" + letters + "]");
      if (!nd.next.contains('u')) off.push_back(UnicodeEscape());
    } else if (ctx == 4) {
      const std::string digits = untaken("0123456789abcABCefEF");
      if (!digits.empty()) off.push_back("[" + digits + "] [0-9a-fA-F]{3}");
      if (!nd.next.contains('d') && !nd.next.contains('D')) off.push_back(std::string(kDEscapes));
    } else {
      // Past the first digit, which is never d: nlohmann writes \u00XX only.
      const std::string digits = untaken("0123456789abcdefABCDEF");
      if (!digits.empty()) off.push_back(Seq({"[" + digits + "]", Repeat("[0-9a-fA-F]", ctx - 1, ctx - 1)}));
    }
    if (!off.empty()) alts.push_back(Seq({off.size() == 1 ? off[0] : "( " + Join(off, " | ") + " )", tail}));
    if (ctx == 0 && !nd.end) alts.push_back(std::string(kQuote));
    if (depth % 16 == 15) return b_->AddRule(hint, Join(alts, " | "));  // bounded parenthesis nesting
    return alts.size() == 1 ? alts[0] : "( " + Join(alts, " | ") + " )";
  }

  // prefixItems are a tuple (all required); `items` then says what may follow
  // (absent or false: nothing); minItems and maxItems count them all.
  Result<std::string> ArrayBody(const ojson& schema, const std::string& path, std::string_view hint, int depth) {
    const int64_t min = schema.contains("minItems") ? *Bound(schema["minItems"]) : 0;
    const int64_t max = schema.contains("maxItems") ? *Bound(schema["maxItems"]) : -1;
    const bool has_prefix = schema.contains("prefixItems");
    const ojson items = schema.contains("items") ? schema["items"] : ojson(!has_prefix);
    if (!has_prefix && min == 0 && max < 0 && (items == true || items == ojson::object())) {
      b_->AnyValue();
      return b_->any_array_;
    }
    const std::string ws = b_->Ws();
    const std::string comma = Seq({ws, R"(",")", ws});
    Enter enter(&b_->containers_);
    std::vector<std::string> elems;
    if (has_prefix) {
      const ojson& prefix = schema["prefixItems"];
      for (size_t i = 0; i < prefix.size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(std::string e, Visit(prefix[i], path + ".prefixItems" + Index(i),
                                                     std::string(hint) + "-" + std::to_string(i), depth + 1));
        elems.push_back(std::move(e));
      }
    }
    const auto n_prefix = static_cast<int64_t>(elems.size());
    if (max >= 0 && max < n_prefix)
      return InvalidArgument(path + ": 'maxItems' is less than the number of 'prefixItems' (every one is required)");
    std::string item;
    if (items != false) {
      STRATA_ASSIGN_OR_RETURN(item, Visit(items, path + ".items", std::string(hint) + "-item", depth + 1));
    } else if (min > n_prefix) {
      return InvalidArgument(path +
                             ": 'minItems' asks for more items than 'prefixItems' lists, and 'items' allows no more");
    }
    const int64_t lo = std::max<int64_t>(0, min - n_prefix);
    const int64_t hi = item.empty() ? 0 : max < 0 ? -1 : max - n_prefix;
    const std::string open = Seq({R"("[")", ws});
    const std::string close = R"("]")";
    if (elems.empty()) {
      if (hi == 0) return Seq({open, close});
      const std::string more =
          Repeat("( " + Seq({comma, item}) + " )", std::max<int64_t>(0, lo - 1), hi < 0 ? -1 : hi - 1);
      if (lo == 0) return Seq({open, "( " + Seq({item, more, ws}) + " )?", close});
      return Seq({open, item, more, ws, close});
    }
    std::string body = elems[0];
    for (size_t i = 1; i < elems.size(); ++i) body = Seq({body, comma, elems[i]});
    if (hi != 0) body = Seq({body, Repeat("( " + Seq({comma, item}) + " )", lo, hi)});
    return Seq({open, body, ws, close});
  }

  GbnfBuilder* b_;
};

Result<std::string> GbnfBuilder::AddSchema(const nlohmann::ordered_json& schema, std::string_view name_hint) {
  GbnfBuilder before = *this;  // a refused schema leaves no rule behind
  if (!have_root_) {
    root_schema_ = schema;
    have_root_ = true;
  }
  Result<std::string> name = SchemaVisitor(this).Visit(schema, "$", name_hint, 0);
  if (!name.ok()) *this = std::move(before);
  return name;
}

std::string GbnfBuilder::Reserve(std::string_view name_hint) {
  const std::string base = SanitizeName(name_hint);
  std::string name = base;
  for (int k = 2; name == "root" || rule_index_.contains(name); ++k) name = base + "-" + std::to_string(k);
  rule_index_[name] = rules_.size();
  rules_.emplace_back(name, "");
  return name;
}

void GbnfBuilder::SetBody(const std::string& name, const std::string& body) {
  rules_[rule_index_.at(name)].second = body;
  by_body_.emplace(body, name);
}

std::string GbnfBuilder::AddRule(std::string_view name_hint, const std::string& body) {
  auto same = by_body_.find(body);
  if (same != by_body_.end()) return same->second;
  const std::string name = Reserve(name_hint);
  SetBody(name, body);
  return name;
}

std::string GbnfBuilder::Text(const std::string& root_body) const {
  std::string out = "root ::= " + root_body + "\n";
  for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
  return out;
}

std::string GbnfBuilder::Ws() {
  if (ws_.empty()) ws_ = AddRule("ws", R"(( " " | "\n" [ \t]{0,20} )?)");
  return ws_;
}

std::string GbnfBuilder::AnyValue() {
  if (!any_value_.empty()) return any_value_;
  const std::string ws = Ws();
  any_value_ = Reserve("value");
  const std::string str = StringRule(*this);
  const std::string comma = Seq({ws, R"(",")", ws});
  const std::string kv = Seq({str, ws, R"(":")", ws, any_value_});
  any_object_ =
      AddRule("object", Seq({R"("{")", ws, "( " + Seq({kv, "( " + Seq({comma, kv}) + " )*", ws}) + " )?", R"("}")"}));
  any_array_ = AddRule(
      "array",
      Seq({R"("[")", ws, "( " + Seq({any_value_, "( " + Seq({comma, any_value_}) + " )*", ws}) + " )?", R"("]")"}));
  SetBody(any_value_,
          Join({any_object_, any_array_, str, NumberRule(*this), BooleanRule(*this), NullRule(*this)}, " | "));
  return any_value_;
}

Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema) {
  GbnfBuilder b;
  STRATA_ASSIGN_OR_RETURN(std::string name, b.AddSchema(schema, "root-value"));
  return b.Text(name);
}

std::string JsonObjectGbnf() {
  GbnfBuilder b;
  return b.Text(*b.AddSchema(nlohmann::ordered_json{{"type", "object"}}, "object"));
}

std::string GbnfClassChar(uint32_t cp) {
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9'))
    return std::string(1, static_cast<char>(cp));
  if (cp < 0x80) return StrFormat("\\x%02X", static_cast<unsigned>(cp));
  if (cp < 0x10000) return StrFormat("\\u%04X", static_cast<unsigned>(cp));
  return StrFormat("\\U%08X", static_cast<unsigned>(cp));
}

std::string GbnfLiteral(std::string_view bytes) {
  std::string out = "\"";
  for (char ch : bytes) {
    const auto c = static_cast<uint8_t>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7F) {
      out += StrFormat("\\x%02X", static_cast<unsigned>(c));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace strata::grammar
