#include "runtime/chat/jinja.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <stdexcept>

#include "runtime/base/checked_cast.h"
#include "runtime/base/strings.h"

namespace strata::jinja {

// ---------------------------------------------------------------------------
// Values: Python's semantics where templates depend on them (truthiness,
// str(), ==, reference semantics of lists, dicts and namespaces).

struct Value;
using Array = std::vector<Value>;
struct Object;
struct Args;
using Function = std::function<Value(Args&)>;

struct Value {
  enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kFunction };
  Kind kind = Kind::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::shared_ptr<const std::string> s;
  std::shared_ptr<Array> a;
  std::shared_ptr<Object> o;
  std::shared_ptr<Function> fn;

  static Value None() { Value v; v.kind = Kind::kNone; return v; }
  static Value Bool(bool x) { Value v; v.kind = Kind::kBool; v.b = x; return v; }
  static Value Int(int64_t x) { Value v; v.kind = Kind::kInt; v.i = x; return v; }
  static Value Float(double x) { Value v; v.kind = Kind::kFloat; v.f = x; return v; }
  static Value Str(std::string x) {
    Value v;
    v.kind = Kind::kString;
    v.s = std::make_shared<const std::string>(std::move(x));
    return v;
  }
  static Value List(Array x = {}) {
    Value v;
    v.kind = Kind::kArray;
    v.a = std::make_shared<Array>(std::move(x));
    return v;
  }
  static Value Dict();
  static Value Func(Function f) {
    Value v;
    v.kind = Kind::kFunction;
    v.fn = std::make_shared<Function>(std::move(f));
    return v;
  }

  bool undefined() const { return kind == Kind::kUndefined; }
  bool none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kFloat; }
  bool is_array() const { return kind == Kind::kArray; }
  bool is_object() const { return kind == Kind::kObject; }
  const std::string& str() const { return *s; }
  double num() const { return kind == Kind::kInt ? static_cast<double>(i) : kind == Kind::kBool ? (b ? 1 : 0) : f; }
  bool Truthy() const;
};

struct Object {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;
  const Value* Find(std::string_view key) const {
    for (const auto& [k, v] : items)
      if (k == key) return &v;
    return nullptr;
  }
  void Set(const std::string& key, Value v) {
    for (auto& [k, old] : items)
      if (k == key) {
        old = std::move(v);
        return;
      }
    items.emplace_back(key, std::move(v));
  }
};

Value Value::Dict() {
  Value v;
  v.kind = Kind::kObject;
  v.o = std::make_shared<Object>();
  return v;
}

struct Args {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  int line = 0;
  const Value* Kw(std::string_view name) const {
    for (const auto& [k, v] : kw)
      if (k == name) return &v;
    return nullptr;
  }
  // Positional argument n, else keyword `name`, else nullptr.
  const Value* Get(size_t n, std::string_view name) const {
    if (n < pos.size()) return &pos[n];
    return Kw(name);
  }
};

bool Value::Truthy() const {
  switch (kind) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b;
    case Kind::kInt: return i != 0;
    case Kind::kFloat: return f != 0;
    case Kind::kString: return !s->empty();
    case Kind::kArray: return !a->empty();
    case Kind::kObject: return !o->items.empty();
    case Kind::kFunction: return true;
  }
  return false;
}

// A template error: the message, and the line it happened on.
struct Error : std::runtime_error {
  Error(std::string m, int l) : std::runtime_error(std::move(m)), line(l) {}
  int line;
  bool raised = false;  // raise_exception: the message is the template's own
};


Value FromJson(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::None();
    case nlohmann::json::value_t::boolean: return Value::Bool(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::Int(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      return u <= static_cast<uint64_t>(INT64_MAX) ? Value::Int(static_cast<int64_t>(u))
                                                    : Value::Float(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float: return Value::Float(j.get<double>());
    case nlohmann::json::value_t::string: return Value::Str(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      Value v = Value::List();
      for (const auto& e : j) v.a->push_back(FromJson(e));
      return v;
    }
    case nlohmann::json::value_t::object: {
      Value v = Value::Dict();
      for (auto it = j.begin(); it != j.end(); ++it) v.o->items.emplace_back(it.key(), FromJson(it.value()));
      return v;
    }
    default: return Value();
  }
}

// Python's repr of a float: the shortest text that reads back, with ".0"
// for whole numbers.
std::string FloatText(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string t(buf, end);
  if (t.find_first_of(".en") == std::string::npos) t += ".0";
  // Python writes 1e+20 as 1e+20 and 1e20 from to_chars as "1e+20": same.
  return t;
}

// The widest indent tojson(indent=N) and indent(N) take: a template's
// number must not size an allocation.
constexpr int kMaxIndent = 256;

// Integers are exact 64-bit values. Python's do not overflow; here a result
// or an argument past int64 is a template error naming the line, never
// undefined behaviour (a chat template is untrusted input: it comes from a
// GGUF file). Floats become integers by truncation, as Python's int() does.
int64_t IntArg(const Value& v, int line, const std::string& what) {
  if (v.kind == Value::Kind::kInt) return v.i;
  if (v.kind == Value::Kind::kBool) return v.b ? 1 : 0;
  if (v.kind == Value::Kind::kFloat) {
    if (const std::optional<int64_t> x = ExactCast<int64_t>(std::trunc(v.f))) return *x;
    throw Error(what + " " + FloatText(v.f) + " does not fit a 64-bit integer", line);
  }
  throw Error(what + " must be a number", line);
}

[[noreturn]] void Overflow(const std::string& op, int line) {
  throw Error("integer overflow in '" + op + "' (integers are 64-bit here)", line);
}
int64_t CheckedAdd(int64_t p, int64_t q, int line) {
  int64_t r;
  if (__builtin_add_overflow(p, q, &r)) Overflow("+", line);
  return r;
}
int64_t CheckedSub(int64_t p, int64_t q, const std::string& op, int line) {
  int64_t r;
  if (__builtin_sub_overflow(p, q, &r)) Overflow(op, line);
  return r;
}
int64_t CheckedMul(int64_t p, int64_t q, int line) {
  int64_t r;
  if (__builtin_mul_overflow(p, q, &r)) Overflow("*", line);
  return r;
}

// base ** exponent for exponent >= 0, exactly or an overflow error.
int64_t IntPow(int64_t base, int64_t exponent, int line) {
  int64_t r = 1;
  bool overflow = false;
  while (exponent > 0) {
    if (exponent & 1) overflow |= __builtin_mul_overflow(r, base, &r);
    exponent >>= 1;
    if (exponent > 0) overflow |= __builtin_mul_overflow(base, base, &base);
    if (overflow) Overflow("**", line);
  }
  return r;
}

void JsonString(const std::string& s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) *out += StrFormat("\\u%04x", c);
        else *out += static_cast<char>(c);
    }
  }
  *out += '"';
}

// json.dumps(v, ensure_ascii=False[, indent=n]) as Python writes it.
void ToJson(const Value& v, int indent, int depth, std::string* out) {
  auto newline = [&](int d) {
    if (indent < 0) return;
    *out += '\n';
    out->append(static_cast<size_t>(indent * d), ' ');
  };
  switch (v.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: *out += "null"; return;
    case Value::Kind::kBool: *out += v.b ? "true" : "false"; return;
    case Value::Kind::kInt: *out += std::to_string(v.i); return;
    case Value::Kind::kFloat:
      *out += std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f > 0 ? "Infinity" : "-Infinity") : FloatText(v.f);
      return;
    case Value::Kind::kString: JsonString(v.str(), out); return;
    case Value::Kind::kArray: {
      if (v.a->empty()) {
        *out += "[]";
        return;
      }
      *out += '[';
      for (size_t k = 0; k < v.a->size(); ++k) {
        if (k) *out += indent < 0 ? ", " : ",";
        newline(depth + 1);
        ToJson((*v.a)[k], indent, depth + 1, out);
      }
      newline(depth);
      *out += ']';
      return;
    }
    case Value::Kind::kObject: {
      if (v.o->items.empty()) {
        *out += "{}";
        return;
      }
      *out += '{';
      bool first = true;
      for (const auto& [k, e] : v.o->items) {
        if (!first) *out += indent < 0 ? ", " : ",";
        first = false;
        newline(depth + 1);
        JsonString(k, out);
        *out += ": ";
        ToJson(e, indent, depth + 1, out);
      }
      newline(depth);
      *out += '}';
      return;
    }
    case Value::Kind::kFunction: *out += "null"; return;
  }
}

std::string Repr(const Value& v);

// str(v) as Python (and Jinja's output) writes it.
std::string Str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.b ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.i);
    case Value::Kind::kFloat: return FloatText(v.f);
    case Value::Kind::kString: return v.str();
    default: return Repr(v);
  }
}

std::string Repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kString: {
      const std::string& s = v.str();
      const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
      std::string out(1, q);
      for (char c : s) {
        if (c == q || c == '\\') out += '\\';
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else out += c;
      }
      return out + q;
    }
    case Value::Kind::kArray: {
      std::string out = "[";
      for (size_t k = 0; k < v.a->size(); ++k) out += (k ? ", " : "") + Repr((*v.a)[k]);
      return out + "]";
    }
    case Value::Kind::kObject: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, e] : v.o->items) {
        out += (first ? "" : ", ") + Repr(Value::Str(k)) + ": " + Repr(e);
        first = false;
      }
      return out + "}";
    }
    case Value::Kind::kFunction: return "<function>";
    default: return Str(v);
  }
}

bool Equal(const Value& x, const Value& y) {
  if (x.kind == Value::Kind::kInt && y.kind == Value::Kind::kInt) return x.i == y.i;  // exact past 2^53
  if (x.is_number() && y.is_number()) return x.num() == y.num();
  if (x.kind == Value::Kind::kBool && y.is_number()) return x.num() == y.num();
  if (y.kind == Value::Kind::kBool && x.is_number()) return x.num() == y.num();
  if (x.kind != y.kind) return false;
  switch (x.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kBool: return x.b == y.b;
    case Value::Kind::kString: return x.str() == y.str();
    case Value::Kind::kArray:
      if (x.a->size() != y.a->size()) return false;
      for (size_t k = 0; k < x.a->size(); ++k)
        if (!Equal((*x.a)[k], (*y.a)[k])) return false;
      return true;
    case Value::Kind::kObject:
      if (x.o->items.size() != y.o->items.size()) return false;
      for (const auto& [k, e] : x.o->items) {
        const Value* other = y.o->Find(k);
        if (!other || !Equal(e, *other)) return false;
      }
      return true;
    case Value::Kind::kFunction: return x.fn == y.fn;
    default: return false;
  }
}

// ---------------------------------------------------------------------------
// Expressions.

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Op : uint8_t {
    kLiteral, kName, kList, kDict, kTuple, kAttr, kItem, kSlice, kCall, kFilter, kTest, kNot, kNeg, kPos,
    kAnd, kOr, kBinary, kCompare, kCond,
  };
  Op op;
  int line = 0;
  Value literal;
  std::string name;                 // kName, kAttr, kFilter, kTest, kBinary/kCompare operator
  std::vector<ExprPtr> kids;        // operands, elements, call args, slice parts (null for omitted)
  std::vector<std::string> kwnames; // kCall/kFilter/kTest: names of the trailing keyword arguments
  bool negated = false;             // kTest: `is not`
};

ExprPtr MakeExpr(Expr::Op op, int line) {
  auto e = std::make_unique<Expr>();
  e->op = op;
  e->line = line;
  return e;
}

struct Tok {
  enum Kind { kName, kInt, kFloat, kString, kOp, kEnd } kind;
  std::string text;
  int64_t i = 0;
  double f = 0;
};

// Splits the inside of a tag into tokens.
std::vector<Tok> Tokenize(std::string_view s, int line) {
  std::vector<Tok> out;
  size_t p = 0;
  while (p < s.size()) {
    const char c = s[p];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++p;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t q = p;
      while (q < s.size() && (std::isalnum(static_cast<unsigned char>(s[q])) || s[q] == '_')) ++q;
      out.push_back({Tok::kName, std::string(s.substr(p, q - p))});
      p = q;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t q = p;
      bool is_float = false;
      while (q < s.size() && (std::isdigit(static_cast<unsigned char>(s[q])) || s[q] == '_')) ++q;
      if (q + 1 < s.size() && s[q] == '.' && std::isdigit(static_cast<unsigned char>(s[q + 1]))) {
        is_float = true;
        ++q;
        while (q < s.size() && std::isdigit(static_cast<unsigned char>(s[q]))) ++q;
      }
      if (q < s.size() && (s[q] == 'e' || s[q] == 'E')) {
        size_t r = q + 1;
        if (r < s.size() && (s[r] == '+' || s[r] == '-')) ++r;
        if (r < s.size() && std::isdigit(static_cast<unsigned char>(s[r]))) {
          is_float = true;
          q = r;
          while (q < s.size() && std::isdigit(static_cast<unsigned char>(s[q]))) ++q;
        }
      }
      std::string text;
      for (char d : s.substr(p, q - p))
        if (d != '_') text += d;
      Tok t{is_float ? Tok::kFloat : Tok::kInt, text};
      if (is_float) {
        t.f = std::strtod(text.c_str(), nullptr);
      } else {
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), t.i);
        if (ec != std::errc()) throw Error("integer literal out of range: " + text, line);
      }
      out.push_back(t);
      p = q;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string text;
      size_t q = p + 1;
      while (true) {
        if (q >= s.size()) throw Error("unterminated string literal", line);
        char d = s[q];
        if (d == c) break;
        if (d == '\\' && q + 1 < s.size()) {
          char e = s[++q];
          switch (e) {
            case 'n': text += '\n'; break;
            case 't': text += '\t'; break;
            case 'r': text += '\r'; break;
            case '\\': text += '\\'; break;
            case '\'': text += '\''; break;
            case '"': text += '"'; break;
            case '0': text += '\0'; break;
            default: text += '\\'; text += e;
          }
          ++q;
          continue;
        }
        text += d;
        ++q;
      }
      out.push_back({Tok::kString, text});
      p = q + 1;
      continue;
    }
    static constexpr std::string_view kOps[] = {"==", "!=", "<=", ">=", "//", "**", "+", "-", "*", "/", "%",
                                                "~",  "<",  ">",  "(",  ")",  "[",  "]", "{", "}", ",", ":",
                                                ".",  "|",  "="};
    bool matched = false;
    for (std::string_view op : kOps) {
      if (s.substr(p, op.size()) == op) {
        out.push_back({Tok::kOp, std::string(op)});
        p += op.size();
        matched = true;
        break;
      }
    }
    if (!matched) throw Error(StrFormat("unexpected character '%c' in an expression", c), line);
  }
  out.push_back({Tok::kEnd, ""});
  return out;
}

constexpr int kMaxNesting = 200;

class ExprParser {
 public:
  ExprParser(std::vector<Tok> toks, int line) : t_(std::move(toks)), line_(line) {}

  ExprPtr Parse() { return Ternary(); }
  bool AtEnd() const { return t_[p_].kind == Tok::kEnd; }
  bool IsName(std::string_view n) const { return t_[p_].kind == Tok::kName && t_[p_].text == n; }
  bool IsOp(std::string_view o) const { return t_[p_].kind == Tok::kOp && t_[p_].text == o; }
  void ExpectOp(std::string_view o) {
    if (!IsOp(o)) Fail("expected '" + std::string(o) + "'");
    ++p_;
  }
  void ExpectName(std::string_view n) {
    if (!IsName(n)) Fail("expected '" + std::string(n) + "'");
    ++p_;
  }
  std::string Name() {
    if (t_[p_].kind != Tok::kName) Fail("expected a name");
    return t_[p_++].text;
  }
  void ExpectEnd() {
    if (!AtEnd()) Fail("unexpected '" + t_[p_].text + "'");
  }
  [[noreturn]] void Fail(const std::string& what) const {
    const std::string at = t_[p_].kind == Tok::kEnd ? "the end of the tag" : "'" + t_[p_].text + "'";
    throw Error(what + " at " + at, line_);
  }
  // A `for` target: a name, or names separated by commas.
  std::vector<std::string> Targets() {
    std::vector<std::string> names = {Name()};
    while (IsOp(",")) {
      ++p_;
      names.push_back(Name());
    }
    return names;
  }
  // Without the conditional expression (for `for x in y if cond`).
  ExprPtr OrExpr() { return Or(); }

 private:
  struct Depth {
    explicit Depth(ExprParser* p) : p_(p) {
      if (++p_->depth_ > kMaxNesting) p_->Fail("expression nests too deep");
    }
    ~Depth() { --p_->depth_; }
    ExprParser* p_;
  };

  ExprPtr Ternary() {
    Depth d(this);
    ExprPtr a = Or();
    if (IsName("if")) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kCond, line_);
      ExprPtr cond = Or();
      ExprPtr other;
      if (IsName("else")) {
        ++p_;
        other = Ternary();
      } else {
        other = MakeExpr(Expr::Op::kLiteral, line_);  // undefined
      }
      e->kids.push_back(std::move(cond));
      e->kids.push_back(std::move(a));
      e->kids.push_back(std::move(other));
      return e;
    }
    return a;
  }
  ExprPtr Or() {
    ExprPtr a = And();
    while (IsName("or")) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kOr, line_);
      e->kids.push_back(std::move(a));
      e->kids.push_back(And());
      a = std::move(e);
    }
    return a;
  }
  ExprPtr And() {
    ExprPtr a = Not();
    while (IsName("and")) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kAnd, line_);
      e->kids.push_back(std::move(a));
      e->kids.push_back(Not());
      a = std::move(e);
    }
    return a;
  }
  ExprPtr Not() {
    if (IsName("not")) {
      Depth d(this);
      ++p_;
      auto e = MakeExpr(Expr::Op::kNot, line_);
      e->kids.push_back(Not());
      return e;
    }
    return Compare();
  }
  ExprPtr Compare() {
    ExprPtr a = Concat();
    while (true) {
      std::string op;
      if (IsOp("==") || IsOp("!=") || IsOp("<") || IsOp(">") || IsOp("<=") || IsOp(">=")) {
        op = t_[p_++].text;
      } else if (IsName("in")) {
        ++p_;
        op = "in";
      } else if (IsName("not") && t_[p_ + 1].kind == Tok::kName && t_[p_ + 1].text == "in") {
        p_ += 2;
        op = "not in";
      } else if (IsName("is")) {
        ++p_;
        auto e = MakeExpr(Expr::Op::kTest, line_);
        if (IsName("not")) {
          ++p_;
          e->negated = true;
        }
        e->name = Name();
        e->kids.push_back(std::move(a));
        if (IsOp("(")) {
          CallArgs(e.get());
        } else if (!AtEnd() && (t_[p_].kind == Tok::kString || t_[p_].kind == Tok::kInt ||
                                t_[p_].kind == Tok::kFloat ||
                                (t_[p_].kind == Tok::kName && !IsName("and") && !IsName("or") && !IsName("else") &&
                                 !IsName("if") && !IsName("is") && !IsName("in") && !IsName("not")))) {
          e->kids.push_back(Primary());  // `x is divisibleby 3`, `x is sameas y`
        }
        a = std::move(e);
        continue;
      } else {
        return a;
      }
      auto e = MakeExpr(Expr::Op::kCompare, line_);
      e->name = op;
      e->kids.push_back(std::move(a));
      e->kids.push_back(Concat());
      a = std::move(e);
    }
  }
  ExprPtr Concat() {
    ExprPtr a = Additive();
    while (IsOp("~")) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kBinary, line_);
      e->name = "~";
      e->kids.push_back(std::move(a));
      e->kids.push_back(Additive());
      a = std::move(e);
    }
    return a;
  }
  ExprPtr Additive() {
    ExprPtr a = Multiplicative();
    while (IsOp("+") || IsOp("-")) {
      auto e = MakeExpr(Expr::Op::kBinary, line_);
      e->name = t_[p_++].text;
      e->kids.push_back(std::move(a));
      e->kids.push_back(Multiplicative());
      a = std::move(e);
    }
    return a;
  }
  ExprPtr Multiplicative() {
    ExprPtr a = Unary();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      auto e = MakeExpr(Expr::Op::kBinary, line_);
      e->name = t_[p_++].text;
      e->kids.push_back(std::move(a));
      e->kids.push_back(Unary());
      a = std::move(e);
    }
    return a;
  }
  ExprPtr Unary() {
    if (IsOp("-") || IsOp("+")) {
      Depth d(this);
      auto e = MakeExpr(IsOp("-") ? Expr::Op::kNeg : Expr::Op::kPos, line_);
      ++p_;
      e->kids.push_back(Unary());
      return e;
    }
    return Power();
  }
  ExprPtr Power() {
    ExprPtr a = Postfix();
    if (IsOp("**")) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kBinary, line_);
      e->name = "**";
      e->kids.push_back(std::move(a));
      e->kids.push_back(Unary());
      return e;
    }
    return a;
  }
  // Primary, then .attr, [item], [slice], (call), |filter.
  ExprPtr Postfix() {
    ExprPtr a = Primary();
    while (true) {
      if (IsOp(".")) {
        ++p_;
        auto e = MakeExpr(Expr::Op::kAttr, line_);
        if (t_[p_].kind == Tok::kInt) e->name = t_[p_++].text;
        else e->name = Name();
        e->kids.push_back(std::move(a));
        a = std::move(e);
      } else if (IsOp("[")) {
        Depth d(this);
        ++p_;
        ExprPtr parts[3];
        bool slice = false;
        for (int k = 0; k < 3; ++k) {
          if (!IsOp(":") && !IsOp("]")) parts[k] = Ternary();
          if (k < 2 && IsOp(":")) {
            slice = true;
            ++p_;
          } else {
            break;
          }
        }
        ExpectOp("]");
        auto e = MakeExpr(slice ? Expr::Op::kSlice : Expr::Op::kItem, line_);
        e->kids.push_back(std::move(a));
        if (slice) {
          for (auto& part : parts) e->kids.push_back(std::move(part));
        } else {
          if (!parts[0]) Fail("expected an index");
          e->kids.push_back(std::move(parts[0]));
        }
        a = std::move(e);
      } else if (IsOp("(")) {
        auto e = MakeExpr(Expr::Op::kCall, line_);
        e->kids.push_back(std::move(a));
        CallArgs(e.get());
        a = std::move(e);
      } else if (IsOp("|")) {
        ++p_;
        auto e = MakeExpr(Expr::Op::kFilter, line_);
        e->name = Name();
        while (IsOp(".")) {  // dotted filter names are not Jinja's, but fail clearly
          ++p_;
          e->name += "." + Name();
        }
        e->kids.push_back(std::move(a));
        if (IsOp("(")) CallArgs(e.get());
        a = std::move(e);
      } else {
        return a;
      }
    }
  }
  // (a, b, k=v): positional arguments into kids, keyword ones after them.
  void CallArgs(Expr* e) {
    Depth d(this);
    ExpectOp("(");
    while (!IsOp(")")) {
      if (t_[p_].kind == Tok::kName && t_[p_ + 1].kind == Tok::kOp && t_[p_ + 1].text == "=") {
        e->kwnames.push_back(t_[p_].text);
        p_ += 2;
        e->kids.push_back(Ternary());
      } else {
        if (!e->kwnames.empty()) Fail("a positional argument after a keyword argument");
        e->kids.push_back(Ternary());
      }
      if (!IsOp(",")) break;
      ++p_;
    }
    ExpectOp(")");
  }
  ExprPtr Primary() {
    Depth d(this);
    const Tok& t = t_[p_];
    if (t.kind == Tok::kString) {
      std::string text = t.text;
      ++p_;
      while (t_[p_].kind == Tok::kString) text += t_[p_++].text;  // adjacent literals join
      auto e = MakeExpr(Expr::Op::kLiteral, line_);
      e->literal = Value::Str(text);
      return e;
    }
    if (t.kind == Tok::kInt || t.kind == Tok::kFloat) {
      auto e = MakeExpr(Expr::Op::kLiteral, line_);
      e->literal = t.kind == Tok::kInt ? Value::Int(t.i) : Value::Float(t.f);
      ++p_;
      return e;
    }
    if (t.kind == Tok::kName) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kLiteral, line_);
      if (t.text == "true" || t.text == "True") e->literal = Value::Bool(true);
      else if (t.text == "false" || t.text == "False") e->literal = Value::Bool(false);
      else if (t.text == "none" || t.text == "None") e->literal = Value::None();
      else {
        e->op = Expr::Op::kName;
        e->name = t.text;
      }
      return e;
    }
    if (IsOp("(")) {
      ++p_;
      if (IsOp(")")) {
        ++p_;
        return MakeExpr(Expr::Op::kTuple, line_);
      }
      ExprPtr first = Ternary();
      if (IsOp(",")) {
        auto e = MakeExpr(Expr::Op::kTuple, line_);
        e->kids.push_back(std::move(first));
        while (IsOp(",")) {
          ++p_;
          if (IsOp(")")) break;
          e->kids.push_back(Ternary());
        }
        ExpectOp(")");
        return e;
      }
      ExpectOp(")");
      return first;
    }
    if (IsOp("[")) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kList, line_);
      while (!IsOp("]")) {
        e->kids.push_back(Ternary());
        if (!IsOp(",")) break;
        ++p_;
      }
      ExpectOp("]");
      return e;
    }
    if (IsOp("{")) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kDict, line_);
      while (!IsOp("}")) {
        e->kids.push_back(Ternary());
        ExpectOp(":");
        e->kids.push_back(Ternary());
        if (!IsOp(",")) break;
        ++p_;
      }
      ExpectOp("}");
      return e;
    }
    Fail("expected a value");
  }

  std::vector<Tok> t_;
  size_t p_ = 0;
  int line_;
  int depth_ = 0;
};


// ---------------------------------------------------------------------------
// Statements.

struct Node {
  enum class Kind : uint8_t { kBlock, kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kBreak, kContinue, kFilterBlock };
  Kind kind = Kind::kBlock;
  int line = 0;
  std::string text;                     // kText
  std::vector<ExprPtr> exprs;           // kOutput: [e]; kIf: conditions; kFor: [iterable, filter?]; kSet: [value]
  std::vector<std::unique_ptr<Node>> children;  // kBlock: statements; kIf: one block per branch (+ else); kFor: body, else
  std::vector<std::string> names;       // kFor: targets; kSet: [name] or [ns, attr]; kMacro: [name, params...]
  std::vector<ExprPtr> defaults;        // kMacro: a default (or null) per parameter
  bool has_else = false;
  bool has_filter = false;              // kFor: `if` clause
};


using NodePtr = std::unique_ptr<Node>;

// A piece of the template: text, {{ expr }} or {% stmt %}.
struct Piece {
  enum Kind { kText, kExpr, kStmt } kind;
  std::string body;
  int line;
};

// Splits the source into pieces, applying whitespace control: `-` on a tag
// strips whitespace on that side, lstrip_blocks removes the indentation
// before a block or comment tag, trim_blocks the newline after one.
std::vector<Piece> Split(std::string_view src) {
  std::vector<Piece> out;
  size_t p = 0;
  int line = 1;
  bool trim_next_newline = false;  // trim_blocks after %} and #}
  bool strip_next_ws = false;      // `-` on the previous closing delimiter
  auto count_lines = [&](std::string_view s) {
    for (char c : s)
      if (c == '\n') ++line;
  };
  auto add_text = [&](std::string text) {
    if (strip_next_ws) {
      size_t k = 0;
      while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
      text.erase(0, k);
    } else if (trim_next_newline) {
      if (text.rfind("\r\n", 0) == 0) text.erase(0, 2);
      else if (!text.empty() && text[0] == '\n') text.erase(0, 1);
    }
    strip_next_ws = trim_next_newline = false;
    if (!text.empty()) out.push_back({Piece::kText, std::move(text), line});
  };
  while (p < src.size()) {
    size_t open = src.find('{', p);
    while (open != std::string_view::npos && open + 1 < src.size() && src[open + 1] != '{' && src[open + 1] != '%' &&
           src[open + 1] != '#')
      open = src.find('{', open + 1);
    if (open == std::string_view::npos || open + 1 >= src.size()) {
      add_text(std::string(src.substr(p)));
      count_lines(src.substr(p));
      break;
    }
    const char kind = src[open + 1];
    std::string text(src.substr(p, open - p));
    size_t inner = open + 2;
    bool strip_before = false, keep_indent = false;
    if (inner < src.size() && src[inner] == '-') {
      strip_before = true;
      ++inner;
    } else if (inner < src.size() && src[inner] == '+') {
      keep_indent = true;
      ++inner;
    }
    if (strip_before) {
      size_t k = text.size();
      while (k > 0 && std::isspace(static_cast<unsigned char>(text[k - 1]))) --k;
      text.resize(k);
    } else if ((kind == '%' || kind == '#') && !keep_indent) {
      // lstrip_blocks: spaces and tabs between the start of the line and the tag go.
      size_t k = text.size();
      while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) --k;
      const bool line_start = k > 0 ? text[k - 1] == '\n' : p == 0;
      if (line_start) text.resize(k);
    }
    add_text(text);
    count_lines(src.substr(p, open - p));
    const int tag_line = line;
    const std::string_view close = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
    // The closing delimiter, outside string literals ({{ "}}" }} is a tag printing "}}").
    size_t end = std::string_view::npos;
    if (kind == '#') {
      end = src.find(close, inner);
    } else {
      char quote = 0;
      for (size_t q = inner; q + 1 < src.size(); ++q) {
        const char c = src[q];
        if (quote) {
          if (c == '\\') ++q;
          else if (c == quote) quote = 0;
        } else if (c == '"' || c == '\'') {
          quote = c;
        } else if (c == close[0] && src[q + 1] == close[1]) {
          end = q;
          break;
        }
      }
    }
    if (end == std::string_view::npos)
      throw Error(StrFormat("a tag opened with '{%c' is never closed", kind), tag_line);
    size_t body_end = end;
    bool strip_after = false;
    if (body_end > inner && src[body_end - 1] == '-') {
      strip_after = true;
      --body_end;
    } else if (body_end > inner && src[body_end - 1] == '+') {
      --body_end;  // `+%}`: no trim_blocks for this tag
    }
    std::string body(src.substr(inner, body_end - inner));
    count_lines(src.substr(inner, end + 2 - inner));
    p = end + 2;
    if (kind == '%') {
      // {% raw %} ... {% endraw %}: the text between, as is.
      std::string trimmed = body;
      trimmed.erase(0, trimmed.find_first_not_of(" \t\r\n"));
      trimmed.erase(trimmed.find_last_not_of(" \t\r\n") + 1);
      if (trimmed == "raw") {
        size_t search = p;
        size_t raw_end = std::string_view::npos, after = 0;
        while ((search = src.find("{%", search)) != std::string_view::npos) {
          size_t q = search + 2;
          if (q < src.size() && (src[q] == '-' || src[q] == '+')) ++q;
          while (q < src.size() && std::isspace(static_cast<unsigned char>(src[q]))) ++q;
          if (src.substr(q, 6) == "endraw") {
            size_t c = src.find("%}", q);
            if (c == std::string_view::npos) break;
            raw_end = search;
            after = c + 2;
            break;
          }
          search += 2;
        }
        if (raw_end == std::string_view::npos) throw Error("{% raw %} without {% endraw %}", tag_line);
        std::string raw(src.substr(p, raw_end - p));
        if (strip_after) {
          size_t k = 0;
          while (k < raw.size() && std::isspace(static_cast<unsigned char>(raw[k]))) ++k;
          raw.erase(0, k);
        }
        count_lines(src.substr(p, after - p));
        if (!raw.empty()) out.push_back({Piece::kText, raw, tag_line});
        p = after;
        trim_next_newline = true;
        continue;
      }
      out.push_back({Piece::kStmt, body, tag_line});
      trim_next_newline = !strip_after;
      strip_next_ws = strip_after;
    } else if (kind == '{') {
      out.push_back({Piece::kExpr, body, tag_line});
      strip_next_ws = strip_after;
    } else {  // comment
      trim_next_newline = !strip_after;
      strip_next_ws = strip_after;
    }
  }
  return out;
}

class StmtParser {
 public:
  explicit StmtParser(std::vector<Piece> pieces) : pieces_(std::move(pieces)) {}

  NodePtr ParseAll() {
    auto root = std::make_unique<Node>();
    std::string end = ParseBlock(root.get(), {});
    if (!end.empty()) throw Error("unexpected {% " + end + " %}", pieces_[p_ - 1].line);
    return root;
  }

 private:
  // Parses statements into `block` until one of `ends` (returned; "" at the end of input).
  std::string ParseBlock(Node* block, const std::vector<std::string>& ends) {
    if (++depth_ > kMaxNesting) throw Error("blocks nest too deep", p_ < pieces_.size() ? pieces_[p_].line : 0);
    while (p_ < pieces_.size()) {
      const Piece& pc = pieces_[p_++];
      if (pc.kind == Piece::kText) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kText;
        n->text = pc.body;
        n->line = pc.line;
        block->children.push_back(std::move(n));
        continue;
      }
      ExprParser ep(Tokenize(pc.body, pc.line), pc.line);
      if (pc.kind == Piece::kExpr) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kOutput;
        n->line = pc.line;
        n->exprs.push_back(ep.Parse());
        ep.ExpectEnd();
        block->children.push_back(std::move(n));
        continue;
      }
      const std::string kw = ep.Name();
      if (std::find(ends.begin(), ends.end(), kw) != ends.end()) {
        --depth_;
        current_ = std::move(ep);
        return kw;
      }
      block->children.push_back(Statement(kw, ep, pc.line));
    }
    --depth_;
    if (!ends.empty()) throw Error("missing {% " + ends.back() + " %}", pieces_.empty() ? 0 : pieces_.back().line);
    return "";
  }

  NodePtr Statement(const std::string& kw, ExprParser& ep, int line) {
    auto n = std::make_unique<Node>();
    n->line = line;
    if (kw == "if") {
      n->kind = Node::Kind::kIf;
      n->exprs.push_back(ep.Parse());
      ep.ExpectEnd();
      while (true) {
        auto body = std::make_unique<Node>();
        std::string end = ParseBlock(body.get(), {"elif", "else", "endif"});
        n->children.push_back(std::move(body));
        if (end == "elif") {
          n->exprs.push_back(current_->Parse());
          current_->ExpectEnd();
          continue;
        }
        current_->ExpectEnd();
        if (end == "else") {
          auto other = std::make_unique<Node>();
          std::string e2 = ParseBlock(other.get(), {"endif"});
          current_->ExpectEnd();
          n->children.push_back(std::move(other));
          n->has_else = true;
        }
        break;
      }
      return n;
    }
    if (kw == "for") {
      n->kind = Node::Kind::kFor;
      n->names = ep.Targets();
      ep.ExpectName("in");
      n->exprs.push_back(ep.OrExpr());
      if (ep.IsName("if")) {
        ep.ExpectName("if");
        n->exprs.push_back(ep.OrExpr());
        n->has_filter = true;
      }
      if (ep.IsName("recursive")) ep.Fail("recursive loops are not supported");
      ep.ExpectEnd();
      auto body = std::make_unique<Node>();
      std::string end = ParseBlock(body.get(), {"else", "endfor"});
      current_->ExpectEnd();
      n->children.push_back(std::move(body));
      if (end == "else") {
        auto other = std::make_unique<Node>();
        ParseBlock(other.get(), {"endfor"});
        current_->ExpectEnd();
        n->children.push_back(std::move(other));
        n->has_else = true;
      }
      return n;
    }
    if (kw == "set") {
      n->names.push_back(ep.Name());
      if (ep.IsOp(".")) {
        ep.ExpectOp(".");
        n->names.push_back(ep.Name());
      } else {
        while (ep.IsOp(",")) {  // set a, b = pair
          ep.ExpectOp(",");
          n->names.push_back(ep.Name());
          n->has_filter = true;  // marks tuple unpacking
        }
      }
      if (ep.AtEnd()) {
        n->kind = Node::Kind::kSetBlock;
        auto body = std::make_unique<Node>();
        ParseBlock(body.get(), {"endset"});
        current_->ExpectEnd();
        n->children.push_back(std::move(body));
        return n;
      }
      n->kind = Node::Kind::kSet;
      ep.ExpectOp("=");
      n->exprs.push_back(ep.Parse());
      ep.ExpectEnd();
      return n;
    }
    if (kw == "macro") {
      n->kind = Node::Kind::kMacro;
      n->names.push_back(ep.Name());
      ep.ExpectOp("(");
      while (!ep.IsOp(")")) {
        n->names.push_back(ep.Name());
        if (ep.IsOp("=")) {
          ep.ExpectOp("=");
          n->defaults.push_back(ep.Parse());
        } else {
          n->defaults.push_back(nullptr);
        }
        if (!ep.IsOp(",")) break;
        ep.ExpectOp(",");
      }
      ep.ExpectOp(")");
      ep.ExpectEnd();
      auto body = std::make_unique<Node>();
      ParseBlock(body.get(), {"endmacro"});
      current_->ExpectEnd();
      n->children.push_back(std::move(body));
      return n;
    }
    if (kw == "filter") {
      n->kind = Node::Kind::kFilterBlock;
      n->names.push_back(ep.Name());
      ep.ExpectEnd();
      auto body = std::make_unique<Node>();
      ParseBlock(body.get(), {"endfilter"});
      current_->ExpectEnd();
      n->children.push_back(std::move(body));
      return n;
    }
    if (kw == "generation") {  // Hugging Face's marker for assistant masks: renders its body
      auto body = std::make_unique<Node>();
      ep.ExpectEnd();
      ParseBlock(body.get(), {"endgeneration"});
      current_->ExpectEnd();
      return body;
    }
    if (kw == "break" || kw == "continue") {
      n->kind = kw == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
      ep.ExpectEnd();
      return n;
    }
    throw Error("unknown statement '" + kw + "'", line);
  }

  std::vector<Piece> pieces_;
  size_t p_ = 0;
  int depth_ = 0;
  std::optional<ExprParser> current_;  // the parser of the tag that ended the last block
};

// ---------------------------------------------------------------------------
// Rendering.


enum class Flow { kNormal, kBreak, kContinue };

class Renderer {
 public:
  Renderer(const Limits& limits, Value globals) : limits_(limits) {
    scopes_.push_back(std::move(globals));
  }

  void Run(const Node& n, std::string* out) {
    if (Render(n, out) != Flow::kNormal) throw Error("{% break %} or {% continue %} outside a loop", n.line);
  }

 private:
  void Step(int line) {
    if (++steps_ > limits_.max_steps)
      throw Error(StrFormat("the template ran more than %llu steps", static_cast<unsigned long long>(limits_.max_steps)),
                  line);
  }
  void Emit(std::string_view s, std::string* out, int line) {
    if (out->size() + s.size() > limits_.max_output)
      throw Error(StrFormat("the template's output passed %zu bytes", limits_.max_output), line);
    out->append(s);
  }

  Value Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (const Value* v = it->o->Find(name)) return *v;
    return Value();
  }
  void Assign(const std::string& name, Value v) { scopes_.back().o->Set(name, std::move(v)); }

  Flow Render(const Node& n, std::string* out) {
    Step(n.line);
    switch (n.kind) {
      case Node::Kind::kBlock:
        for (const auto& c : n.children) {
          Flow f = Render(*c, out);
          if (f != Flow::kNormal) return f;
        }
        return Flow::kNormal;
      case Node::Kind::kText: Emit(n.text, out, n.line); return Flow::kNormal;
      case Node::Kind::kOutput: {
        Value v = Eval(*n.exprs[0]);
        Emit(Str(v), out, n.line);
        return Flow::kNormal;
      }
      case Node::Kind::kIf:
        for (size_t k = 0; k < n.exprs.size(); ++k)
          if (Eval(*n.exprs[k]).Truthy()) return Render(*n.children[k], out);
        if (n.has_else) return Render(*n.children.back(), out);
        return Flow::kNormal;
      case Node::Kind::kFor: return For(n, out);
      case Node::Kind::kSet: {
        Value v = Eval(*n.exprs[0]);
        if (n.names.size() == 2 && !n.has_filter) {
          Value ns = Lookup(n.names[0]);
          if (!ns.is_object() || !ns.o->is_namespace)
            throw Error("'" + n.names[0] + "' is not a namespace: only namespace attributes can be set", n.line);
          ns.o->Set(n.names[1], std::move(v));
        } else if (n.has_filter) {
          std::vector<Value> items = Items(v, n.line);
          if (items.size() != n.names.size()) throw Error("cannot unpack: wrong number of values", n.line);
          for (size_t k = 0; k < items.size(); ++k) Assign(n.names[k], items[k]);
        } else {
          Assign(n.names[0], std::move(v));
        }
        return Flow::kNormal;
      }
      case Node::Kind::kSetBlock: {
        std::string captured;
        Render(*n.children[0], &captured);
        if (n.names.size() == 2) {
          Value ns = Lookup(n.names[0]);
          if (!ns.is_object() || !ns.o->is_namespace) throw Error("'" + n.names[0] + "' is not a namespace", n.line);
          ns.o->Set(n.names[1], Value::Str(captured));
        } else {
          Assign(n.names[0], Value::Str(captured));
        }
        return Flow::kNormal;
      }
      case Node::Kind::kMacro: Assign(n.names[0], MakeMacro(n)); return Flow::kNormal;
      case Node::Kind::kBreak: return Flow::kBreak;
      case Node::Kind::kContinue: return Flow::kContinue;
      case Node::Kind::kFilterBlock: {
        std::string captured;
        Render(*n.children[0], &captured);
        Args a;
        a.line = n.line;
        Emit(Str(ApplyFilter(n.names[0], Value::Str(captured), a)), out, n.line);
        return Flow::kNormal;
      }
    }
    return Flow::kNormal;
  }

  // The elements a for loop (or unpacking) walks: a list's items, a dict's
  // keys, a string's characters.
  std::vector<Value> Items(const Value& v, int line) const {
    switch (v.kind) {
      case Value::Kind::kArray: return *v.a;
      case Value::Kind::kObject: {
        std::vector<Value> keys;
        for (const auto& [k, e] : v.o->items) keys.push_back(Value::Str(k));
        return keys;
      }
      case Value::Kind::kString: {
        std::vector<Value> chars;
        const std::string& s = v.str();
        for (size_t k = 0; k < s.size();) {  // one UTF-8 character each
          size_t len = 1;
          const auto c = static_cast<unsigned char>(s[k]);
          if (c >= 0xF0) len = 4;
          else if (c >= 0xE0) len = 3;
          else if (c >= 0xC0) len = 2;
          len = std::min(len, s.size() - k);
          chars.push_back(Value::Str(s.substr(k, len)));
          k += len;
        }
        return chars;
      }
      case Value::Kind::kUndefined:
      case Value::Kind::kNone: return {};
      default: throw Error("cannot iterate over " + Repr(v), line);
    }
  }

  Flow For(const Node& n, std::string* out) {
    std::vector<Value> items = Items(Eval(*n.exprs[0]), n.line);
    // The `if` clause filters before loop.* is computed (loop.length counts the kept ones).
    scopes_.push_back(Value::Dict());
    if (n.has_filter) {
      std::vector<Value> kept;
      for (const Value& it : items) {
        Step(n.line);
        BindTargets(n, it);
        if (Eval(*n.exprs[1]).Truthy()) kept.push_back(it);
      }
      items = std::move(kept);
    }
    const size_t count = items.size();
    for (size_t k = 0; k < count; ++k) {
      Step(n.line);
      Value loop = Value::Dict();
      Object& l = *loop.o;
      l.Set("index", Value::Int(static_cast<int64_t>(k + 1)));
      l.Set("index0", Value::Int(static_cast<int64_t>(k)));
      l.Set("revindex", Value::Int(static_cast<int64_t>(count - k)));
      l.Set("revindex0", Value::Int(static_cast<int64_t>(count - k - 1)));
      l.Set("first", Value::Bool(k == 0));
      l.Set("last", Value::Bool(k + 1 == count));
      l.Set("length", Value::Int(static_cast<int64_t>(count)));
      l.Set("previtem", k > 0 ? items[k - 1] : Value());
      l.Set("nextitem", k + 1 < count ? items[k + 1] : Value());
      const size_t index = k;
      l.Set("cycle", Value::Func([index](Args& a) {
              if (a.pos.empty()) return Value();
              return a.pos[index % a.pos.size()];
            }));
      scopes_.back().o->Set("loop", loop);
      BindTargets(n, items[k]);
      Flow f = Render(*n.children[0], out);
      if (f == Flow::kBreak) break;
    }
    scopes_.pop_back();
    if (count == 0 && n.has_else) return Render(*n.children[1], out);
    return Flow::kNormal;
  }

  void BindTargets(const Node& n, const Value& item) {
    if (n.names.size() == 1) {
      scopes_.back().o->Set(n.names[0], item);
      return;
    }
    std::vector<Value> parts = Items(item, n.line);
    if (parts.size() != n.names.size())
      throw Error(StrFormat("cannot unpack %zu values into %zu names", parts.size(), n.names.size()), n.line);
    for (size_t k = 0; k < parts.size(); ++k) scopes_.back().o->Set(n.names[k], parts[k]);
  }

  Value MakeMacro(const Node& n) {
    const Node* node = &n;
    return Value::Func([this, node](Args& a) {
      if (++call_depth_ > limits_.max_call_depth) throw Error("macros call each other too deep", node->line);
      Value scope = Value::Dict();
      const size_t params = node->names.size() - 1;
      for (size_t k = 0; k < params; ++k) {
        const std::string& name = node->names[k + 1];
        if (const Value* v = a.Get(k, name)) scope.o->Set(name, *v);
        else if (node->defaults[k]) scope.o->Set(name, Eval(*node->defaults[k]));
        else scope.o->Set(name, Value());
      }
      // A macro sees the template's globals and its arguments (not the caller's locals).
      std::vector<Value> saved;
      saved.swap(scopes_);
      scopes_.push_back(saved.front());
      scopes_.push_back(scope);
      std::string out;
      try {
        Render(*node->children[0], &out);
      } catch (...) {
        scopes_.swap(saved);
        --call_depth_;
        throw;
      }
      scopes_.swap(saved);
      --call_depth_;
      return Value::Str(out);
    });
  }

  Value Eval(const Expr& e) {
    switch (e.op) {
      case Expr::Op::kLiteral: return e.literal;
      case Expr::Op::kName: return Lookup(e.name);
      case Expr::Op::kList:
      case Expr::Op::kTuple: {
        Value v = Value::List();
        for (const auto& k : e.kids) v.a->push_back(Eval(*k));
        return v;
      }
      case Expr::Op::kDict: {
        Value v = Value::Dict();
        for (size_t k = 0; k + 1 < e.kids.size(); k += 2) {
          Value key = Eval(*e.kids[k]);
          v.o->Set(Str(key), Eval(*e.kids[k + 1]));
        }
        return v;
      }
      case Expr::Op::kAttr: return Attr(Eval(*e.kids[0]), e.name, e.line);
      case Expr::Op::kItem: return Item(Eval(*e.kids[0]), Eval(*e.kids[1]), e.line);
      case Expr::Op::kSlice: return Slice(e);
      case Expr::Op::kCall: {
        Value f = Eval(*e.kids[0]);
        Args a = EvalArgs(e, 1);
        if (f.kind != Value::Kind::kFunction) {
          if (e.kids[0]->op == Expr::Op::kName) throw Error("'" + e.kids[0]->name + "' is undefined or not callable", e.line);
          throw Error("calling something that is not a function", e.line);
        }
        Step(e.line);
        return (*f.fn)(a);
      }
      case Expr::Op::kFilter: {
        Value v = Eval(*e.kids[0]);
        Args a = EvalArgs(e, 1);
        return ApplyFilter(e.name, v, a);
      }
      case Expr::Op::kTest: {
        Value v = Eval(*e.kids[0]);
        Args a = EvalArgs(e, 1);
        const bool r = ApplyTest(e.name, v, a);
        return Value::Bool(e.negated ? !r : r);
      }
      case Expr::Op::kNot: return Value::Bool(!Eval(*e.kids[0]).Truthy());
      case Expr::Op::kNeg:
      case Expr::Op::kPos: {
        Value v = Eval(*e.kids[0]);
        if (!v.is_number() && v.kind != Value::Kind::kBool) throw Error("unary minus on " + Repr(v), e.line);
        if (e.op == Expr::Op::kPos) return v;
        if (v.kind == Value::Kind::kFloat) return Value::Float(-v.f);
        return Value::Int(CheckedSub(0, IntArg(v, e.line, "operand"), "-", e.line));
      }
      case Expr::Op::kAnd: {
        Value a = Eval(*e.kids[0]);
        return a.Truthy() ? Eval(*e.kids[1]) : a;
      }
      case Expr::Op::kOr: {
        Value a = Eval(*e.kids[0]);
        return a.Truthy() ? a : Eval(*e.kids[1]);
      }
      case Expr::Op::kCond: return Eval(*e.kids[0]).Truthy() ? Eval(*e.kids[1]) : Eval(*e.kids[2]);
      case Expr::Op::kBinary: return Binary(e.name, Eval(*e.kids[0]), Eval(*e.kids[1]), e.line);
      case Expr::Op::kCompare: return Value::Bool(Compare(e.name, Eval(*e.kids[0]), Eval(*e.kids[1]), e.line));
    }
    return Value();
  }

  Args EvalArgs(const Expr& e, size_t first) {
    Args a;
    a.line = e.line;
    const size_t n_kw = e.kwnames.size();
    const size_t n_pos = e.kids.size() - first - n_kw;
    for (size_t k = 0; k < n_pos; ++k) a.pos.push_back(Eval(*e.kids[first + k]));
    for (size_t k = 0; k < n_kw; ++k) a.kw.emplace_back(e.kwnames[k], Eval(*e.kids[first + n_pos + k]));
    return a;
  }

  static int64_t Index(int64_t i, size_t size) { return i < 0 ? i + static_cast<int64_t>(size) : i; }

  Value Item(const Value& v, const Value& key, int line) {
    if (v.is_object()) {
      if (const Value* x = v.o->Find(Str(key))) return *x;
      return Value();
    }
    if ((v.is_array() || v.is_string()) && (key.kind == Value::Kind::kInt || key.kind == Value::Kind::kBool)) {
      const size_t size = v.is_array() ? v.a->size() : v.str().size();
      const int64_t i = Index(IntArg(key, line, "index"), size);
      if (i < 0 || static_cast<size_t>(i) >= size) return Value();
      if (v.is_array()) return (*v.a)[static_cast<size_t>(i)];
      return Value::Str(v.str().substr(static_cast<size_t>(i), 1));
    }
    if (v.is_string() && key.is_string()) return Attr(v, key.str(), line);
    if (v.undefined() || v.none()) return Value();
    return Value();
  }

  Value Slice(const Expr& e) {
    Value v = Eval(*e.kids[0]);
    auto part = [&](int k) -> std::optional<int64_t> {
      if (!e.kids[k]) return std::nullopt;
      Value x = Eval(*e.kids[k]);
      if (x.none()) return std::nullopt;
      if (x.kind != Value::Kind::kInt) throw Error("slice indices must be integers", e.line);
      return x.i;
    };
    const auto start = part(1), stop = part(2), step_opt = part(3);
    const int64_t step = step_opt.value_or(1);
    if (step == 0) throw Error("slice step cannot be zero", e.line);
    const int64_t size = v.is_array() ? static_cast<int64_t>(v.a->size())
                         : v.is_string() ? static_cast<int64_t>(v.str().size()) : -1;
    if (size < 0) {
      if (v.undefined() || v.none()) return Value();
      throw Error("cannot slice " + Repr(v), e.line);
    }
    auto clamp = [&](std::optional<int64_t> x, int64_t dflt) {
      if (!x) return dflt;
      int64_t i = *x < 0 ? *x + size : *x;
      if (step > 0) return std::clamp<int64_t>(i, 0, size);
      return std::clamp<int64_t>(i, -1, size - 1);
    };
    const int64_t b = clamp(start, step > 0 ? 0 : size - 1);
    const int64_t en = clamp(stop, step > 0 ? size : -1);
    std::vector<int64_t> idx;
    for (int64_t i = b; step > 0 ? i < en : i > en;) {
      idx.push_back(i);
      Step(e.line);
      if (__builtin_add_overflow(i, step, &i)) break;  // a step past int64 ends the slice
    }
    if (v.is_array()) {
      Value out = Value::List();
      for (int64_t i : idx) out.a->push_back((*v.a)[static_cast<size_t>(i)]);
      return out;
    }
    std::string out;
    for (int64_t i : idx) out += v.str()[static_cast<size_t>(i)];
    return Value::Str(out);
  }

  Value Binary(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "~") return Value::Str(Str(a) + Str(b));
    if (op == "+") {
      if (a.is_string() && b.is_string()) return Value::Str(a.str() + b.str());
      if (a.is_array() && b.is_array()) {
        Value out = Value::List(*a.a);
        out.a->insert(out.a->end(), b.a->begin(), b.a->end());
        return out;
      }
    }
    if (op == "*" && ((a.is_string() && b.kind == Value::Kind::kInt) || (b.is_string() && a.kind == Value::Kind::kInt))) {
      const std::string& s = a.is_string() ? a.str() : b.str();
      const int64_t n = a.is_string() ? b.i : a.i;
      if (n > 0 && !s.empty() && static_cast<uint64_t>(n) > limits_.max_output / s.size())
        throw Error("string repetition too long", line);
      std::string out;
      for (int64_t k = 0; k < n; ++k) out += s;
      return Value::Str(out);
    }
    const bool numeric = (a.is_number() || a.kind == Value::Kind::kBool) && (b.is_number() || b.kind == Value::Kind::kBool);
    if (!numeric)
      throw Error("cannot apply '" + op + "' to " + Repr(a).substr(0, 60) + " and " + Repr(b).substr(0, 60), line);
    const bool ints = a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat;
    const double x = a.num(), y = b.num();
    // Integer operands stay integers, never through a double (2^53 and up).
    const int64_t p = ints ? IntArg(a, line, "operand") : 0, q = ints ? IntArg(b, line, "operand") : 0;
    if (op == "+") return ints ? Value::Int(CheckedAdd(p, q, line)) : Value::Float(x + y);
    if (op == "-") return ints ? Value::Int(CheckedSub(p, q, op, line)) : Value::Float(x - y);
    if (op == "*") return ints ? Value::Int(CheckedMul(p, q, line)) : Value::Float(x * y);
    if (op == "/") {
      if (y == 0) throw Error("division by zero", line);
      return Value::Float(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0) throw Error("division by zero", line);
      if (ints) {
        if (q == -1) {  // p // -1 is -p (the one quotient that can overflow); p % -1 is 0
          if (op == "%") return Value::Int(0);
          return Value::Int(CheckedSub(0, p, op, line));
        }
        int64_t d = p / q, m = p % q;
        if (m != 0 && ((m < 0) != (q < 0))) {
          --d;
          m += q;
        }
        return Value::Int(op == "//" ? d : m);
      }
      const double d = std::floor(x / y);
      return Value::Float(op == "//" ? d : x - d * y);
    }
    if (op == "**") return ints && q >= 0 ? Value::Int(IntPow(p, q, line)) : Value::Float(std::pow(x, y));
    throw Error("unknown operator " + op, line);
  }

  bool Contains(const Value& container, const Value& item, int line) {
    if (container.is_string()) {
      if (!item.is_string()) throw Error("'in <string>' needs a string on the left", line);
      return container.str().find(item.str()) != std::string::npos;
    }
    if (container.is_array()) {
      for (const Value& v : *container.a)
        if (Equal(v, item)) return true;
      return false;
    }
    if (container.is_object()) return container.o->Find(Str(item)) != nullptr;
    if (container.undefined()) return false;
    throw Error("'in' needs a string, list or mapping on the right", line);
  }

  bool Compare(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "==") return Equal(a, b);
    if (op == "!=") return !Equal(a, b);
    if (op == "in") return Contains(b, a, line);
    if (op == "not in") return !Contains(b, a, line);
    int c = 0;
    if ((a.is_number() || a.kind == Value::Kind::kBool) && (b.is_number() || b.kind == Value::Kind::kBool)) {
      if (a.kind == Value::Kind::kInt && b.kind == Value::Kind::kInt)  // exact past 2^53
        c = a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
      else
        c = a.num() < b.num() ? -1 : a.num() > b.num() ? 1 : 0;
    } else if (a.is_string() && b.is_string()) {
      c = a.str().compare(b.str());
    } else {
      throw Error("cannot compare " + Repr(a).substr(0, 60) + " and " + Repr(b).substr(0, 60) + " with " + op, line);
    }
    if (op == "<") return c < 0;
    if (op == ">") return c > 0;
    if (op == "<=") return c <= 0;
    return c >= 0;
  }

  // x.name: a dict's key, a namespace's attribute, a string's, list's or
  // dict's method, loop attributes.
  Value Attr(const Value& v, const std::string& name, int line) {
    if (v.is_object()) {
      if (const Value* x = v.o->Find(name)) return *x;
      if (!v.o->is_namespace) {
        Value m = DictMethod(v, name);
        if (!m.undefined()) return m;
      }
      return Value();
    }
    if (v.is_string()) return StringMethod(v, name, line);
    if (v.is_array()) return ListMethod(v, name);
    if (v.is_array() || v.undefined() || v.none()) return Value();
    if (std::isdigit(static_cast<unsigned char>(name[0]))) return Item(v, Value::Int(std::stoll(name)), line);
    return Value();
  }

  Value DictMethod(const Value& v, const std::string& name) {
    auto obj = v.o;
    if (name == "items")
      return Value::Func([obj](Args&) {
        Value out = Value::List();
        for (const auto& [k, e] : obj->items) out.a->push_back(Value::List({Value::Str(k), e}));
        return out;
      });
    if (name == "keys")
      return Value::Func([obj](Args&) {
        Value out = Value::List();
        for (const auto& [k, e] : obj->items) out.a->push_back(Value::Str(k));
        return out;
      });
    if (name == "values")
      return Value::Func([obj](Args&) {
        Value out = Value::List();
        for (const auto& [k, e] : obj->items) out.a->push_back(e);
        return out;
      });
    if (name == "get")
      return Value::Func([obj](Args& a) {
        if (a.pos.empty()) return Value();
        if (const Value* x = obj->Find(Str(a.pos[0]))) return *x;
        return a.pos.size() > 1 ? a.pos[1] : Value::None();
      });
    return Value();
  }

  Value ListMethod(const Value& v, const std::string& name) {
    auto arr = v.a;
    if (name == "append")
      return Value::Func([arr](Args& a) {
        if (!a.pos.empty()) arr->push_back(a.pos[0]);
        return Value::None();
      });
    if (name == "pop")
      return Value::Func([arr](Args& a) {
        if (arr->empty()) throw Error("pop from an empty list", a.line);
        int64_t i = a.pos.empty() ? -1 : IntArg(a.pos[0], a.line, "pop index");
        i = Index(i, arr->size());
        if (i < 0 || static_cast<size_t>(i) >= arr->size()) throw Error("pop index out of range", a.line);
        Value out = (*arr)[static_cast<size_t>(i)];
        arr->erase(arr->begin() + i);
        return out;
      });
    if (name == "index")
      return Value::Func([arr](Args& a) {
        for (size_t k = 0; k < arr->size(); ++k)
          if (!a.pos.empty() && Equal((*arr)[k], a.pos[0])) return Value::Int(static_cast<int64_t>(k));
        throw Error("value not in list", a.line);
      });
    return Value();
  }

  static std::string StripChars(const std::string& s, const Value* chars, bool left, bool right) {
    const std::string set = chars && chars->is_string() ? chars->str() : std::string(" \t\n\r\f\v");
    size_t b = 0, e = s.size();
    if (left)
      while (b < e && set.find(s[b]) != std::string::npos) ++b;
    if (right)
      while (e > b && set.find(s[e - 1]) != std::string::npos) --e;
    return s.substr(b, e - b);
  }

  Value StringMethod(const Value& v, const std::string& name, int line) {
    const std::string s = v.str();
    auto f = [](auto&& body) { return Value::Func(std::forward<decltype(body)>(body)); };
    if (name == "strip") return f([s](Args& a) { return Value::Str(StripChars(s, a.Get(0, "chars"), true, true)); });
    if (name == "lstrip") return f([s](Args& a) { return Value::Str(StripChars(s, a.Get(0, "chars"), true, false)); });
    if (name == "rstrip") return f([s](Args& a) { return Value::Str(StripChars(s, a.Get(0, "chars"), false, true)); });
    if (name == "upper" || name == "lower")
      return f([s, up = name == "upper"](Args&) {
        std::string out = s;
        for (char& c : out) c = static_cast<char>(up ? std::toupper(static_cast<unsigned char>(c))
                                                      : std::tolower(static_cast<unsigned char>(c)));
        return Value::Str(out);
      });
    if (name == "title" || name == "capitalize")
      return f([this, s, name](Args& a) { return ApplyFilter(name, Value::Str(s), a); });
    if (name == "startswith" || name == "endswith")
      return f([s, start = name == "startswith"](Args& a) {
        auto check = [&](const Value& p) {
          if (!p.is_string()) return false;
          const std::string& x = p.str();
          if (x.size() > s.size()) return false;
          return start ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
        };
        if (a.pos.empty()) return Value::Bool(false);
        if (a.pos[0].is_array()) {
          for (const Value& p : *a.pos[0].a)
            if (check(p)) return Value::Bool(true);
          return Value::Bool(false);
        }
        return Value::Bool(check(a.pos[0]));
      });
    if (name == "split")
      return f([s](Args& a) {
        Value out = Value::List();
        const Value* sep = a.Get(0, "sep");
        const Value* maxv = a.Get(1, "maxsplit");
        int64_t max = maxv && maxv->kind == Value::Kind::kInt ? maxv->i : -1;
        if (!sep || sep->none()) {  // whitespace runs
          size_t k = 0;
          while (k < s.size()) {
            while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
            if (k >= s.size()) break;
            if (max == 0) {
              out.a->push_back(Value::Str(StripChars(s.substr(k), nullptr, false, true)));
              break;
            }
            size_t e = k;
            while (e < s.size() && !std::isspace(static_cast<unsigned char>(s[e]))) ++e;
            out.a->push_back(Value::Str(s.substr(k, e - k)));
            if (max > 0) --max;
            k = e;
          }
          return out;
        }
        if (!sep->is_string() || sep->str().empty()) throw Error("split needs a non-empty separator", a.line);
        const std::string& d = sep->str();
        size_t k = 0;
        while (true) {
          size_t at = max == 0 ? std::string::npos : s.find(d, k);
          if (at == std::string::npos) {
            out.a->push_back(Value::Str(s.substr(k)));
            break;
          }
          out.a->push_back(Value::Str(s.substr(k, at - k)));
          k = at + d.size();
          if (max > 0) --max;
        }
        return out;
      });
    if (name == "replace")
      return f([this, s](Args& a) { return ApplyFilter("replace", Value::Str(s), a); });
    if (name == "find")
      return f([s](Args& a) {
        if (a.pos.empty() || !a.pos[0].is_string()) return Value::Int(-1);
        size_t at = s.find(a.pos[0].str());
        return Value::Int(at == std::string::npos ? -1 : static_cast<int64_t>(at));
      });
    if (name == "count")
      return f([s](Args& a) {
        if (a.pos.empty() || !a.pos[0].is_string() || a.pos[0].str().empty()) return Value::Int(0);
        int64_t n = 0;
        for (size_t at = s.find(a.pos[0].str()); at != std::string::npos; at = s.find(a.pos[0].str(), at + a.pos[0].str().size())) ++n;
        return Value::Int(n);
      });
    if (name == "join")
      return f([this, s](Args& a) {
        Args fa;
        fa.line = a.line;
        fa.pos.push_back(Value::Str(s));
        return ApplyFilter("join", a.pos.empty() ? Value::List() : a.pos[0], fa);
      });
    (void)line;
    return Value();
  }

  std::vector<Value> Sequence(const Value& v, int line) const { return Items(v, line); }

  // Attribute or item `path` ("a.b") of v, for map/selectattr/sort.
  Value Path(const Value& v, const std::string& path, int line) {
    Value cur = v;
    size_t k = 0;
    while (k <= path.size()) {
      size_t dot = path.find('.', k);
      std::string part = path.substr(k, dot == std::string::npos ? std::string::npos : dot - k);
      cur = Attr(cur, part, line);
      if (dot == std::string::npos) break;
      k = dot + 1;
    }
    return cur;
  }

  Value ApplyFilter(const std::string& name, const Value& v, Args& a) {
    const int line = a.line;
    Step(line);
    if (name == "length" || name == "count") {
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
    if (name == "string") return v.is_string() ? v : Value::Str(Str(v));
    if (name == "tojson") {
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
    if (name == "trim") return Value::Str(StripChars(Str(v), a.Get(0, "chars"), true, true));
    if (name == "upper" || name == "lower") {
      std::string out = Str(v);
      for (char& c : out) c = static_cast<char>(name == "upper" ? std::toupper(static_cast<unsigned char>(c))
                                                                : std::tolower(static_cast<unsigned char>(c)));
      return Value::Str(out);
    }
    if (name == "capitalize") {
      std::string out = Str(v);
      for (size_t k = 0; k < out.size(); ++k)
        out[k] = static_cast<char>(k == 0 ? std::toupper(static_cast<unsigned char>(out[k]))
                                          : std::tolower(static_cast<unsigned char>(out[k])));
      return Value::Str(out);
    }
    if (name == "title") {
      std::string out = Str(v);
      bool start = true;
      for (char& c : out) {
        const auto u = static_cast<unsigned char>(c);
        c = static_cast<char>(start ? std::toupper(u) : std::tolower(u));
        start = !std::isalnum(u);
      }
      return Value::Str(out);
    }
    if (name == "replace") {
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
        if (out.size() > limits_.max_output) throw Error("replace result too long", line);
        k = at + f.size();
        if (count > 0) --count;
      }
      return Value::Str(out + s.substr(k));
    }
    if (name == "default" || name == "d") {
      const Value* dflt = a.Get(0, "default_value");
      const Value* boolean = a.Get(1, "boolean");
      const bool use = v.undefined() || (boolean && boolean->Truthy() && !v.Truthy());
      return use ? (dflt ? *dflt : Value::Str("")) : v;
    }
    if (name == "first" || name == "last") {
      std::vector<Value> items = Sequence(v, line);
      if (items.empty()) return Value();
      return name == "first" ? items.front() : items.back();
    }
    if (name == "join") {
      const Value* sep = a.Get(0, "d");
      const Value* attr = a.Get(1, "attribute");
      std::string out;
      bool first = true;
      for (const Value& x : Sequence(v, line)) {
        if (!first) out += sep ? Str(*sep) : "";
        first = false;
        out += Str(attr ? Path(x, Str(*attr), line) : x);
        if (out.size() > limits_.max_output) throw Error("join result too long", line);
      }
      return Value::Str(out);
    }
    if (name == "list") return Value::List(Sequence(v, line));
    if (name == "reverse") {
      if (v.is_string()) return Value::Str(std::string(v.str().rbegin(), v.str().rend()));
      std::vector<Value> items = Sequence(v, line);
      std::reverse(items.begin(), items.end());
      return Value::List(std::move(items));
    }
    if (name == "items") {
      if (!v.is_object()) {
        if (v.undefined() || v.none()) return Value::List();
        throw Error("items needs a mapping", line);
      }
      Value out = Value::List();
      for (const auto& [k, e] : v.o->items) out.a->push_back(Value::List({Value::Str(k), e}));
      return out;
    }
    if (name == "dictsort") {
      if (!v.is_object()) throw Error("dictsort needs a mapping", line);
      std::vector<std::pair<std::string, Value>> items = v.o->items;
      std::stable_sort(items.begin(), items.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      Value out = Value::List();
      for (auto& [k, e] : items) out.a->push_back(Value::List({Value::Str(k), e}));
      return out;
    }
    if (name == "int") {
      if (v.kind == Value::Kind::kInt) return v;
      if (v.is_number() || v.kind == Value::Kind::kBool) return Value::Int(IntArg(v, line, "int()"));
      if (v.is_string()) {
        int64_t x = 0;
        auto [p, ec] = std::from_chars(v.str().data(), v.str().data() + v.str().size(), x);
        return Value::Int(ec == std::errc() ? x : 0);
      }
      return Value::Int(0);
    }
    if (name == "float") {
      if (v.is_number() || v.kind == Value::Kind::kBool) return Value::Float(v.num());
      if (v.is_string()) return Value::Float(std::strtod(v.str().c_str(), nullptr));
      return Value::Float(0);
    }
    if (name == "abs") {
      if (v.kind == Value::Kind::kInt) {
        int64_t r = v.i;
        if (v.i < 0 && __builtin_sub_overflow(int64_t{0}, v.i, &r)) throw Error("integer overflow in abs", line);
        return Value::Int(r);
      }
      return Value::Float(std::fabs(v.num()));
    }
    if (name == "round") {
      const Value* prec = a.Get(0, "precision");
      const double scale = std::pow(10.0, prec ? prec->num() : 0);
      return Value::Float(std::round(v.num() * scale) / scale);
    }
    if (name == "unique") {
      Value out = Value::List();
      for (const Value& x : Sequence(v, line)) {
        bool seen = false;
        for (const Value& y : *out.a) seen = seen || Equal(x, y);
        if (!seen) out.a->push_back(x);
      }
      return out;
    }
    if (name == "sort") {
      std::vector<Value> items = Sequence(v, line);
      const Value* rev = a.Get(0, "reverse");
      const Value* attr = a.Kw("attribute");
      auto key = [&](const Value& x) { return attr ? Path(x, Str(*attr), line) : x; };
      std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
        return Compare("<", key(x), key(y), line);
      });
      if (rev && rev->Truthy()) std::reverse(items.begin(), items.end());
      return Value::List(std::move(items));
    }
    if (name == "map") {
      Value out = Value::List();
      const Value* attr = a.Kw("attribute");
      for (const Value& x : Sequence(v, line)) {
        if (attr) {
          Value y = Path(x, Str(*attr), line);
          if (y.undefined())
            if (const Value* dflt = a.Kw("default")) y = *dflt;
          out.a->push_back(y);
        } else if (!a.pos.empty() && a.pos[0].is_string()) {
          Args rest;
          rest.line = line;
          rest.pos.assign(a.pos.begin() + 1, a.pos.end());
          rest.kw = a.kw;
          out.a->push_back(ApplyFilter(a.pos[0].str(), x, rest));
        } else {
          throw Error("map needs attribute= or a filter name", line);
        }
      }
      return out;
    }
    if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
      const bool by_attr = name == "selectattr" || name == "rejectattr";
      const bool keep_when = name == "selectattr" || name == "select";
      size_t k = 0;
      std::string attr;
      if (by_attr) {
        if (a.pos.empty()) throw Error(name + " needs an attribute name", line);
        attr = Str(a.pos[k++]);
      }
      Value out = Value::List();
      for (const Value& x : Sequence(v, line)) {
        Value subject = by_attr ? Path(x, attr, line) : x;
        bool r;
        if (k < a.pos.size()) {
          Args targs;
          targs.line = line;
          targs.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(k) + 1, a.pos.end());
          r = ApplyTest(Str(a.pos[k]), subject, targs);
        } else {
          r = subject.Truthy();
        }
        if (r == keep_when) out.a->push_back(x);
      }
      return out;
    }
    if (name == "indent") {
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
    if (name == "safe" || name == "e" || name == "escape" || name == "forceescape") {
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
    if (name == "wordcount") {
      int64_t n = 0;
      bool in = false;
      for (char c : Str(v)) {
        const bool w = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        n += w && !in;
        in = w;
      }
      return Value::Int(n);
    }
    if (name == "batch" || name == "slice") throw Error("filter '" + name + "' is not supported", line);
    throw Error("unknown filter '" + name + "'", line);
  }

  bool ApplyTest(const std::string& name, const Value& v, Args& a) {
    const int line = a.line;
    if (name == "defined") return !v.undefined();
    if (name == "undefined") return v.undefined();
    if (name == "none") return v.none();
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number();
    if (name == "integer") return v.kind == Value::Kind::kInt;
    if (name == "float") return v.kind == Value::Kind::kFloat;
    if (name == "boolean") return v.kind == Value::Kind::kBool;
    if (name == "true") return v.kind == Value::Kind::kBool && v.b;
    if (name == "false") return v.kind == Value::Kind::kBool && !v.b;
    if (name == "mapping") return v.is_object();
    if (name == "sequence") return v.is_array() || v.is_string() || v.is_object();
    if (name == "iterable") return v.is_array() || v.is_string() || v.is_object();
    if (name == "callable") return v.kind == Value::Kind::kFunction;
    if (name == "odd" || name == "even") {
      if (v.kind != Value::Kind::kInt) return false;
      return (v.i % 2 != 0) == (name == "odd");
    }
    if (name == "divisibleby") {
      if (a.pos.empty() || v.kind != Value::Kind::kInt || a.pos[0].kind != Value::Kind::kInt || a.pos[0].i == 0)
        return false;
      return a.pos[0].i == -1 || v.i % a.pos[0].i == 0;  // INT64_MIN % -1 overflows
    }
    if (name == "lower") return v.is_string() && Str(v) == ApplyFilter("lower", v, a).str();
    if (name == "upper") return v.is_string() && Str(v) == ApplyFilter("upper", v, a).str();
    auto other = [&]() -> const Value& {
      if (a.pos.empty()) throw Error("test '" + name + "' needs an argument", line);
      return a.pos[0];
    };
    if (name == "equalto" || name == "eq" || name == "==") return Equal(v, other());
    if (name == "ne" || name == "!=") return !Equal(v, other());
    if (name == "sameas") return Equal(v, other());
    if (name == "in") return Contains(other(), v, line);
    if (name == "lt" || name == "lessthan" || name == "<") return Compare("<", v, other(), line);
    if (name == "le" || name == "<=") return Compare("<=", v, other(), line);
    if (name == "gt" || name == "greaterthan" || name == ">") return Compare(">", v, other(), line);
    if (name == "ge" || name == ">=") return Compare(">=", v, other(), line);
    throw Error("unknown test '" + name + "'", line);
  }

  const Limits& limits_;
  std::vector<Value> scopes_;  // [0]: globals and the context; then set/for/macro scopes
  uint64_t steps_ = 0;
  int call_depth_ = 0;
};

Value Globals(const nlohmann::ordered_json& context, int64_t fixed_time) {
  Value g = Value::Dict();
  g.o->Set("range", Value::Func([](Args& a) {
             int64_t start = 0, stop = 0, step = 1;
             if (a.pos.size() == 1) stop = IntArg(a.pos[0], a.line, "range() stop");
             else if (a.pos.size() >= 2) {
               start = IntArg(a.pos[0], a.line, "range() start");
               stop = IntArg(a.pos[1], a.line, "range() stop");
               if (a.pos.size() >= 3) step = IntArg(a.pos[2], a.line, "range() step");
             }
             if (step == 0) throw Error("range() step must not be zero", a.line);
             Value out = Value::List();
             for (int64_t k = start; step > 0 ? k < stop : k > stop;) {
               if (out.a->size() >= 1'000'000) throw Error("range() longer than 1,000,000", a.line);
               out.a->push_back(Value::Int(k));
               if (__builtin_add_overflow(k, step, &k)) break;  // the next value is past int64: past stop too
             }
             return out;
           }));
  g.o->Set("raise_exception", Value::Func([](Args& a) -> Value {
             Error e(a.pos.empty() ? "raise_exception" : Str(a.pos[0]), a.line);
             e.raised = true;
             throw e;
           }));
  g.o->Set("namespace", Value::Func([](Args& a) {
             Value ns = Value::Dict();
             ns.o->is_namespace = true;
             if (!a.pos.empty() && a.pos[0].is_object())
               for (const auto& [k, v] : a.pos[0].o->items) ns.o->Set(k, v);
             for (const auto& [k, v] : a.kw) ns.o->Set(k, v);
             return ns;
           }));
  g.o->Set("dict", Value::Func([](Args& a) {
             Value d = Value::Dict();
             for (const auto& [k, v] : a.kw) d.o->Set(k, v);
             return d;
           }));
  g.o->Set("strftime_now", Value::Func([fixed_time](Args& a) {
             const std::time_t now = fixed_time >= 0 ? static_cast<std::time_t>(fixed_time) : std::time(nullptr);
             std::tm tm{};
#ifdef _WIN32
             if (fixed_time >= 0) gmtime_s(&tm, &now);
             else localtime_s(&tm, &now);
#else
             if (fixed_time >= 0) gmtime_r(&now, &tm);
             else localtime_r(&now, &tm);
#endif
             // Conversions every C library knows (MSVCRT aborts on others); any other '%' is text.
             const std::string given = a.pos.empty() ? "%Y-%m-%d" : Str(a.pos[0]);
             std::string out;
             for (size_t k = 0; k < given.size() && out.size() < 4096; ++k) {
               if (given[k] != '%' || k + 1 >= given.size()) {
                 out += given[k];
                 continue;
               }
               const char c = given[++k];
               if (std::string_view("aAbBdHIjmMpSUwWyYZ").find(c) == std::string_view::npos) {
                 out += c == '%' ? "%" : std::string("%") + c;
                 continue;
               }
               char buf[128];
               const char conv[3] = {'%', c, '\0'};
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
               const size_t n = std::strftime(buf, sizeof(buf), conv, &tm);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
               out.append(buf, n);
             }
             return Value::Str(out);
           }));
  if (context.is_object())
    for (auto it = context.begin(); it != context.end(); ++it) g.o->Set(it.key(), FromJson(it.value()));
  return g;
}


Result<Template> Template::Parse(std::string_view source) {
  try {
    Template t;
    t.root_ = StmtParser(Split(source)).ParseAll();
    return t;
  } catch (const Error& e) {
    return InvalidArgument(StrFormat("chat template, line %d: %s", e.line, e.what()));
  }
}

Result<std::string> Template::Render(const nlohmann::ordered_json& context, const Limits& limits) const {
  std::string out;
  try {
    Renderer r(limits, Globals(context, limits.fixed_time));
    r.Run(*root_, &out);
  } catch (const Error& e) {
    if (e.raised) return InvalidArgument(e.what());
    return InvalidArgument(StrFormat("chat template, line %d: %s", e.line, e.what()));
  } catch (const std::bad_alloc&) {
    return InvalidArgument("chat template: out of memory while rendering");
  }
  return out;
}

}  // namespace strata::jinja
