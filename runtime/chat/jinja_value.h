#pragma once
// The Jinja interpreter's values (internal to runtime/chat/jinja*.cc): the
// value model with Python's semantics where templates depend on them, the
// error type, and the conversions every part shares (JSON in and out, str(),
// repr(), ==, exact 64-bit integer arithmetic).

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::jinja {

// ---------------------------------------------------------------------------
// Values: Python's semantics where templates depend on them (truthiness,
// str(), ==, reference semantics of lists, dicts and namespaces).

struct Value;
using Array = std::vector<Value>;
struct Object;
struct Args;
using Function = std::function<Value(Args&)>;

// Lists, dicts and functions (closures) are shared and mutable, so a
// template can nest them without bound, and can make one contain itself
// (`x.append(x)`, `ns.self = ns`). Three rules keep that from crashing or
// leaking (jinja_value.cc):
// - a container is freed without recursion: a chain of any depth is freed
//   in a loop;
// - the walks over values (str, repr, tojson, ==) stop with an error past
//   kMaxValueDepth levels, past the render's output size, and == past its
//   steps;
// - a ValueArena, open for one render, records the containers made in it,
//   and on closing empties every one still alive, which breaks all cycles.
std::shared_ptr<Array> NewArray(Array x);
std::shared_ptr<Object> NewObject();
std::shared_ptr<Function> NewFunction(Function f);
constexpr int kMaxValueDepth = 256;

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
    v.a = NewArray(std::move(x));
    return v;
  }
  static Value Dict();
  static Value Func(Function f) {
    Value v;
    v.kind = Kind::kFunction;
    v.fn = NewFunction(std::move(f));
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

inline Value Value::Dict() {
  Value v;
  v.kind = Kind::kObject;
  v.o = NewObject();
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

inline bool Value::Truthy() const {
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

// One render's containers (see NewArray above). Not copyable; one per thread
// at a time (they nest: the inner one's containers are its own).
class ValueArena {
 public:
  // max_text: the longest text a walk may build (the render's output limit);
  // max_work: the most element comparisons == may make in the render.
  ValueArena(size_t max_text, uint64_t max_work);
  ~ValueArena();
  ValueArena(const ValueArena&) = delete;
  ValueArena& operator=(const ValueArena&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

Value FromJson(const nlohmann::ordered_json& j);
// Python's repr of a float: the shortest text that reads back, with ".0" for whole numbers.
std::string FloatText(double d);

// The widest indent tojson(indent=N) and indent(N) take: a template's
// number must not size an allocation.
constexpr int kMaxIndent = 256;

// Integers are exact 64-bit values. Python's do not overflow; here a result
// or an argument past int64 is a template error naming the line, never
// undefined behaviour (a chat template is untrusted input: it comes from a
// GGUF file). Floats become integers by truncation, as Python's int() does.
int64_t IntArg(const Value& v, int line, const std::string& what);
[[noreturn]] void Overflow(const std::string& op, int line);
int64_t CheckedAdd(int64_t p, int64_t q, int line);
int64_t CheckedSub(int64_t p, int64_t q, const std::string& op, int line);
int64_t CheckedMul(int64_t p, int64_t q, int line);
int64_t IntPow(int64_t base, int64_t exponent, int line);

// JSON text (json.dumps(ensure_ascii=False)); indent < 0: one line.
void JsonString(const std::string& s, std::string* out);
void ToJson(const Value& v, int indent, int depth, std::string* out);
std::string Str(const Value& v);   // str()
std::string Repr(const Value& v);  // repr()
bool Equal(const Value& x, const Value& y);
// s without the characters of `chars` (default: whitespace) at the chosen ends.
std::string StripChars(const std::string& s, const Value* chars, bool left, bool right);

}  // namespace strata::jinja
