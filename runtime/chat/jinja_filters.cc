#include "runtime/chat/jinja_filters.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "runtime/base/strings.h"

namespace strata::jinja {
namespace {

// length, count
Value FilterLength(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  if (v.is_string()) {
    int64_t n = 0;
    for (unsigned char c : v.str()) n += (c & 0xC0) != 0x80;
    return Value::Int(n);
  }
  if (v.is_array()) return Value::Int(static_cast<int64_t>(v.a->size()));
  if (v.is_object()) return Value::Int(static_cast<int64_t>(v.o->items.size()));
  if (v.undefined()) return Value::Int(0);
  throw Error("object of this type has no length: " + Repr(v).substr(0, 60), line);
}

// string
Value FilterString(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& /*a*/) {
  return v.is_string() ? v : Value::Str(Str(v));
}

// tojson
Value FilterTojson(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  const Value* ind = a.Get(0, "indent");
  std::string out;
  int indent = -1;
  if (ind && ind->kind == Value::Kind::kInt) {
    if (ind->i < 0 || ind->i > kMaxIndent)
      throw Error(StrFormat("tojson indent %lld is outside [0, %d]", static_cast<long long>(ind->i), kMaxIndent), line);
    indent = static_cast<int>(ind->i);
  }
  ToJson(v, indent, 0, &out);
  return Value::Str(out);
}

// trim
Value FilterTrim(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& a) {
  return Value::Str(StripChars(Str(v), a.Get(0, "chars"), true, true));
}

// upper, lower
Value FilterCase(FilterHost& /*h*/, const std::string& name, const Value& v, Args& /*a*/) {
  std::string out = Str(v);
  for (char& c : out) c = static_cast<char>(name == "upper" ? std::toupper(static_cast<unsigned char>(c))
                                                            : std::tolower(static_cast<unsigned char>(c)));
  return Value::Str(out);
}

// capitalize
Value FilterCapitalize(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& /*a*/) {
  std::string out = Str(v);
  for (size_t k = 0; k < out.size(); ++k)
    out[k] = static_cast<char>(k == 0 ? std::toupper(static_cast<unsigned char>(out[k]))
                                      : std::tolower(static_cast<unsigned char>(out[k])));
  return Value::Str(out);
}

// title
Value FilterTitle(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& /*a*/) {
  std::string out = Str(v);
  bool start = true;
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
    start = !std::isalnum(u);
  }
  return Value::Str(out);
}

// replace
Value FilterReplace(FilterHost& h, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  const Value* from = a.Get(0, "old");
  const Value* to = a.Get(1, "new");
  if (!from || !to || !from->is_string() || !to->is_string()) throw Error("replace needs two strings", line);
  const Value* countv = a.Get(2, "count");
  int64_t count = countv && countv->kind == Value::Kind::kInt ? countv->i : -1;
  std::string s = Str(v), out;
  const std::string& f = from->str();
  if (f.empty()) return Value::Str(s);
  size_t k = 0;
  while (count != 0) {
    size_t at = s.find(f, k);
    if (at == std::string::npos) break;
    out += s.substr(k, at - k) + to->str();
    if (out.size() > h.max_output()) throw Error("replace result too long", line);
    k = at + f.size();
    if (count > 0) --count;
  }
  return Value::Str(out + s.substr(k));
}

// default, d
Value FilterDefault(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& a) {
  const Value* dflt = a.Get(0, "default_value");
  const Value* boolean = a.Get(1, "boolean");
  const bool use = v.undefined() || (boolean && boolean->Truthy() && !v.Truthy());
  return use ? (dflt ? *dflt : Value::Str("")) : v;
}

// first, last
Value FilterFirstOrLast(FilterHost& h, const std::string& name, const Value& v, Args& a) {
  const int line = a.line;
  std::vector<Value> items = h.Items(v, line);
  if (items.empty()) return Value();
  return name == "first" ? items.front() : items.back();
}

// join
Value FilterJoin(FilterHost& h, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  const Value* sep = a.Get(0, "d");
  const Value* attr = a.Get(1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& x : h.Items(v, line)) {
    if (!first) out += sep ? Str(*sep) : "";
    first = false;
    out += Str(attr ? h.Path(x, Str(*attr), line) : x);
    if (out.size() > h.max_output()) throw Error("join result too long", line);
  }
  return Value::Str(out);
}

// list
Value FilterList(FilterHost& h, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  return Value::List(h.Items(v, line));
}

// reverse
Value FilterReverse(FilterHost& h, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  if (v.is_string()) return Value::Str(std::string(v.str().rbegin(), v.str().rend()));
  std::vector<Value> items = h.Items(v, line);
  std::reverse(items.begin(), items.end());
  return Value::List(std::move(items));
}

// items
Value FilterItems(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  if (!v.is_object()) {
    if (v.undefined() || v.none()) return Value::List();
    throw Error("items needs a mapping", line);
  }
  Value out = Value::List();
  for (const auto& [k, e] : v.o->items) out.a->push_back(Value::List({Value::Str(k), e}));
  return out;
}

// dictsort
Value FilterDictsort(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  if (!v.is_object()) throw Error("dictsort needs a mapping", line);
  std::vector<std::pair<std::string, Value>> items = v.o->items;
  std::stable_sort(items.begin(), items.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  Value out = Value::List();
  for (auto& [k, e] : items) out.a->push_back(Value::List({Value::Str(k), e}));
  return out;
}

// int
Value FilterInt(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  if (v.kind == Value::Kind::kInt) return v;
  if (v.is_number() || v.kind == Value::Kind::kBool) return Value::Int(IntArg(v, line, "int()"));
  if (v.is_string()) {
    int64_t x = 0;
    auto [p, ec] = std::from_chars(v.str().data(), v.str().data() + v.str().size(), x);
    return Value::Int(ec == std::errc() ? x : 0);
  }
  return Value::Int(0);
}

// float
Value FilterFloat(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& /*a*/) {
  if (v.is_number() || v.kind == Value::Kind::kBool) return Value::Float(v.num());
  if (v.is_string()) return Value::Float(std::strtod(v.str().c_str(), nullptr));
  return Value::Float(0);
}

// abs
Value FilterAbs(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  if (v.kind == Value::Kind::kInt) {
    int64_t r = v.i;
    if (v.i < 0 && __builtin_sub_overflow(int64_t{0}, v.i, &r)) throw Error("integer overflow in abs", line);
    return Value::Int(r);
  }
  return Value::Float(std::fabs(v.num()));
}

// round
Value FilterRound(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& a) {
  const Value* prec = a.Get(0, "precision");
  const double scale = std::pow(10.0, prec ? prec->num() : 0);
  return Value::Float(std::round(v.num() * scale) / scale);
}

// unique
Value FilterUnique(FilterHost& h, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  Value out = Value::List();
  for (const Value& x : h.Items(v, line)) {
    bool seen = false;
    for (const Value& y : *out.a) seen = seen || Equal(x, y);
    if (!seen) out.a->push_back(x);
  }
  return out;
}

// sort
Value FilterSort(FilterHost& h, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  std::vector<Value> items = h.Items(v, line);
  const Value* rev = a.Get(0, "reverse");
  const Value* attr = a.Kw("attribute");
  auto key = [&](const Value& x) { return attr ? h.Path(x, Str(*attr), line) : x; };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return h.Compare("<", key(x), key(y), line);
  });
  if (rev && rev->Truthy()) std::reverse(items.begin(), items.end());
  return Value::List(std::move(items));
}

// map
Value FilterMap(FilterHost& h, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  Value out = Value::List();
  const Value* attr = a.Kw("attribute");
  for (const Value& x : h.Items(v, line)) {
    if (attr) {
      Value y = h.Path(x, Str(*attr), line);
      if (y.undefined())
        if (const Value* dflt = a.Kw("default")) y = *dflt;
      out.a->push_back(y);
    } else if (!a.pos.empty() && a.pos[0].is_string()) {
      Args rest;
      rest.line = line;
      rest.pos.assign(a.pos.begin() + 1, a.pos.end());
      rest.kw = a.kw;
      out.a->push_back(ApplyFilter(h, a.pos[0].str(), x, rest));
    } else {
      throw Error("map needs attribute= or a filter name", line);
    }
  }
  return out;
}

// selectattr, rejectattr, select, reject
Value FilterSelect(FilterHost& h, const std::string& name, const Value& v, Args& a) {
  const int line = a.line;
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  const bool keep_when = name == "selectattr" || name == "select";
  size_t k = 0;
  std::string attr;
  if (by_attr) {
    if (a.pos.empty()) throw Error(name + " needs an attribute name", line);
    attr = Str(a.pos[k++]);
  }
  Value out = Value::List();
  for (const Value& x : h.Items(v, line)) {
    Value subject = by_attr ? h.Path(x, attr, line) : x;
    bool r;
    if (k < a.pos.size()) {
      Args targs;
      targs.line = line;
      targs.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(k) + 1, a.pos.end());
      r = h.ApplyTest(Str(a.pos[k]), subject, targs);
    } else {
      r = subject.Truthy();
    }
    if (r == keep_when) out.a->push_back(x);
  }
  return out;
}

// indent
Value FilterIndent(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& a) {
  const int line = a.line;
  const Value* w = a.Get(0, "width");
  const Value* first = a.Get(1, "first");
  const Value* blank = a.Get(2, "blank");
  std::string pad = w && w->is_string() ? w->str() : std::string(4, ' ');
  if (w && !w->is_string()) {
    const int64_t width = IntArg(*w, line, "indent width");
    if (width > kMaxIndent)
      throw Error(StrFormat("indent width %lld is past %d", static_cast<long long>(width), kMaxIndent), line);
    pad.assign(static_cast<size_t>(std::max<int64_t>(0, width)), ' ');
  }
  std::string s = Str(v), out;
  size_t k = 0;
  bool first_line = true;
  while (k <= s.size()) {
    size_t nl = s.find('\n', k);
    std::string l = s.substr(k, nl == std::string::npos ? std::string::npos : nl - k);
    if ((!first_line || (first && first->Truthy())) && (!l.empty() || (blank && blank->Truthy()))) out += pad;
    out += l;
    if (nl == std::string::npos) break;
    out += '\n';
    k = nl + 1;
    first_line = false;
  }
  return Value::Str(out);
}

// safe, e, escape, forceescape
Value FilterEscape(FilterHost& /*h*/, const std::string& name, const Value& v, Args& /*a*/) {
  if (name == "safe") return v;
  std::string out;
  for (char c : Str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::Str(out);
}

// wordcount
Value FilterWordcount(FilterHost& /*h*/, const std::string& /*name*/, const Value& v, Args& /*a*/) {
  int64_t n = 0;
  bool in = false;
  for (char c : Str(v)) {
    const bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    n += w && !in;
    in = w;
  }
  return Value::Int(n);
}

// batch, slice: not supported
Value FilterUnsupported(FilterHost& /*h*/, const std::string& name, const Value& /*v*/, Args& a) {
  const int line = a.line;
  throw Error("filter '" + name + "' is not supported", line);
}

using FilterFn = Value (*)(FilterHost&, const std::string&, const Value&, Args&);
struct Filter {
  std::string_view name;
  FilterFn fn;
};
// Every name a filter answers to, aliases included.
constexpr Filter kFilters[] = {
    {"length", FilterLength}, {"count", FilterLength}, {"string", FilterString}, {"tojson", FilterTojson},
    {"trim", FilterTrim}, {"upper", FilterCase}, {"lower", FilterCase}, {"capitalize", FilterCapitalize},
    {"title", FilterTitle}, {"replace", FilterReplace}, {"default", FilterDefault}, {"d", FilterDefault},
    {"first", FilterFirstOrLast}, {"last", FilterFirstOrLast}, {"join", FilterJoin}, {"list", FilterList},
    {"reverse", FilterReverse}, {"items", FilterItems}, {"dictsort", FilterDictsort}, {"int", FilterInt},
    {"float", FilterFloat}, {"abs", FilterAbs}, {"round", FilterRound}, {"unique", FilterUnique},
    {"sort", FilterSort}, {"map", FilterMap}, {"selectattr", FilterSelect}, {"rejectattr", FilterSelect},
    {"select", FilterSelect}, {"reject", FilterSelect}, {"indent", FilterIndent}, {"safe", FilterEscape},
    {"e", FilterEscape}, {"escape", FilterEscape}, {"forceescape", FilterEscape}, {"wordcount", FilterWordcount},
    {"batch", FilterUnsupported}, {"slice", FilterUnsupported},
};

}  // namespace

Value ApplyFilter(FilterHost& host, const std::string& name, const Value& v, Args& a) {
  host.Step(a.line);
  for (const Filter& f : kFilters)
    if (f.name == name) return f.fn(host, name, v, a);
  throw Error("unknown filter '" + name + "'", a.line);
}

}  // namespace strata::jinja
