#include "runtime/chat/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>

#include "runtime/base/checked_cast.h"
#include "runtime/base/strings.h"

namespace strata::jinja {

// ---------------------------------------------------------------------------
// Containers: freed without recursion, listed by the open arena.

namespace {

enum class Held : uint8_t { kArray, kObject, kFunction };

// A container's header: its place in the open arena's list, a ring through
// the arena's sentinel. prev == nullptr: in no list. An unlinked header
// keeps its `next` (the arena's last walk follows it; see ~ValueArena).
struct Link {
  Link* prev = nullptr;
  Link* next = nullptr;
  Held kind = Held::kArray;
};

template <class T>
struct Box : Link {
  template <class... A>
  explicit Box(Held k, A&&... a) : value(std::forward<A>(a)...) {
    kind = k;
  }
  T value;
};

// A free put off while others run.
struct Pending {
  Link* link = nullptr;
  void (*del)(Link*) = nullptr;
};

// Per thread: the frees put off while others run, the open arena's list,
// and the limits of the walks over values. Trivially destructible on
// purpose: a thread_local with a destructor runs it at thread exit, and
// under MinGW's emulated TLS (the Windows build) that ran after the
// runtime had torn down what it needed (an access violation at a server's
// exit under Wine). The queue lives in an inline array and spills to a
// malloc'd buffer only while a deep chain drains; Drain frees the spill.
struct Heap {
  static constexpr size_t kInline = 64;
  bool draining = false;
  Pending inline_pending[kInline] = {};
  Pending* spill = nullptr;  // nullptr: the queue is inline_pending
  size_t pending_n = 0;
  size_t pending_cap = kInline;
  Link* live = nullptr;
  size_t max_text = size_t{8} << 20;
  uint64_t work_left = UINT64_MAX;
  int walk_depth = 0;

  Pending* Queue() { return spill ? spill : inline_pending; }
  // False when out of memory for the queue.
  bool Push(Pending p) {
    if (pending_n == pending_cap) {
      if (pending_cap > SIZE_MAX / (2 * sizeof(Pending))) return false;
      const size_t cap = pending_cap * 2;
      auto* grown = static_cast<Pending*>(std::malloc(cap * sizeof(Pending)));
      if (!grown) return false;
      std::memcpy(grown, Queue(), pending_n * sizeof(Pending));
      std::free(spill);
      spill = grown;
      pending_cap = cap;
    }
    Queue()[pending_n++] = p;
    return true;
  }
  void ReleaseSpill() {
    std::free(spill);
    spill = nullptr;
    pending_cap = kInline;
  }
};
static_assert(std::is_trivially_destructible_v<Heap>, "no TLS destructor: see Heap");
thread_local Heap heap;

void Unlink(Link* l) {
  if (!l->prev) return;
  l->prev->next = l->next;
  l->next->prev = l->prev;
  l->prev = nullptr;
}

template <class T>
void Delete(Link* l) {
  delete static_cast<Box<T>*>(l);
}

// Frees what was queued. A container's elements drop their last references
// while it is deleted; those come back to Reap, which queues them: the loop
// frees a chain of any depth one link at a time.
void Drain(Heap& h) {
  h.draining = true;
  while (h.pending_n > 0) {
    const Pending p = h.Queue()[--h.pending_n];
    p.del(p.link);
  }
  h.ReleaseSpill();
  h.draining = false;
}

// Every container's deleter.
template <class T>
void Reap(Box<T>* b) {
  Heap& h = heap;
  Unlink(b);
  if (!h.Push({b, &Delete<T>})) {  // out of memory for the queue: free it here, by recursion
    delete b;
    return;
  }
  if (!h.draining) Drain(h);
}

template <class T, class... A>
std::shared_ptr<T> Make(Held kind, A&&... a) {
  auto* b = new Box<T>(kind, std::forward<A>(a)...);
  if (Link* head = heap.live) {
    b->prev = head;
    b->next = head->next;
    head->next->prev = b;
    head->next = b;
  }
  return std::shared_ptr<T>(&b->value, [b](T*) { Reap(b); });
}

// The walks' depth: str, repr, tojson and == recurse into containers.
struct WalkNest {
  WalkNest() {
    if (++heap.walk_depth > kMaxValueDepth) {
      --heap.walk_depth;
      throw Error(StrFormat("a value nests deeper than %d levels (a list or dict that contains itself?)",
                            kMaxValueDepth),
                  0);
    }
  }
  ~WalkNest() { --heap.walk_depth; }
  WalkNest(const WalkNest&) = delete;
  WalkNest& operator=(const WalkNest&) = delete;
};

void CheckText(const std::string& out) {
  if (out.size() > heap.max_text) throw Error(StrFormat("the template's output passed %zu bytes", heap.max_text), 0);
}

}  // namespace

std::shared_ptr<Array> NewArray(Array x) { return Make<Array>(Held::kArray, std::move(x)); }
std::shared_ptr<Object> NewObject() { return Make<Object>(Held::kObject); }
std::shared_ptr<Function> NewFunction(Function f) { return Make<Function>(Held::kFunction, std::move(f)); }

struct ValueArena::Saved {
  Link head;  // the sentinel
  Link* outer_live;
  size_t outer_max_text;
  uint64_t outer_work_left;
};

ValueArena::ValueArena(size_t max_text, uint64_t max_work) : saved_(std::make_unique<Saved>()) {
  saved_->head.prev = saved_->head.next = &saved_->head;
  saved_->outer_live = heap.live;
  saved_->outer_max_text = heap.max_text;
  saved_->outer_work_left = heap.work_left;
  heap.live = &saved_->head;
  heap.max_text = max_text;
  heap.work_left = max_work;
}

// Empties every container of the render still alive: that breaks the cycles
// a template made, and frees what they held. Nothing is freed while they are
// emptied (the frees are queued), so each one is still there to empty, and
// the walk can follow the `next` of one that emptying an earlier one
// unlinked: it leads on through the list's order, past nothing still in it.
// Each is taken out of the list as it is passed, so none points at the
// sentinel when it goes.
ValueArena::~ValueArena() {
  Heap& h = heap;
  Link* const head = &saved_->head;
  h.live = saved_->outer_live;
  h.max_text = saved_->outer_max_text;
  h.work_left = saved_->outer_work_left;
  const bool draining = h.draining;
  h.draining = true;
  for (Link* l = head->next; l != head;) {
    Link* const next = l->next;
    l->prev = l->next = nullptr;
    switch (l->kind) {
      case Held::kArray: static_cast<Box<Array>*>(l)->value.clear(); break;
      case Held::kObject: static_cast<Box<Object>*>(l)->value.items.clear(); break;
      case Held::kFunction: static_cast<Box<Function>*>(l)->value = nullptr; break;
    }
    l = next;
  }
  if (draining) return;
  Drain(h);
}

// ---------------------------------------------------------------------------
// Conversions.

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
  // Escaping never shortens: a string that cannot fit is an error before
  // anything is appended, and what escaping added is checked after (a
  // template that wraps tojson's output in tojson again doubles it a time).
  if (s.size() > heap.max_text || out->size() > heap.max_text - s.size())
    throw Error(StrFormat("the template's output passed %zu bytes", heap.max_text), 0);
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
  CheckText(*out);
}

// json.dumps(v, ensure_ascii=False[, indent=n]) as Python writes it.
void ToJson(const Value& v, int indent, int depth, std::string* out) {
  const WalkNest nest;
  CheckText(*out);
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
  const WalkNest nest;
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
      for (size_t k = 0; k < v.a->size(); ++k) {
        out += (k ? ", " : "") + Repr((*v.a)[k]);
        CheckText(out);
      }
      return out + "]";
    }
    case Value::Kind::kObject: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, e] : v.o->items) {
        out += (first ? "" : ", ") + Repr(Value::Str(k)) + ": " + Repr(e);
        CheckText(out);
        first = false;
      }
      return out + "}";
    }
    case Value::Kind::kFunction: return "<function>";
    default: return Str(v);
  }
}

bool Equal(const Value& x, const Value& y) {
  const WalkNest nest;
  if (heap.work_left == 0) throw Error("comparing values took more steps than the template may run", 0);
  --heap.work_left;
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
      if (x.a == y.a) return true;  // Python's identity shortcut: x == x holds for a list that contains itself
      if (x.a->size() != y.a->size()) return false;
      for (size_t k = 0; k < x.a->size(); ++k)
        if (!Equal((*x.a)[k], (*y.a)[k])) return false;
      return true;
    case Value::Kind::kObject:
      if (x.o == y.o) return true;
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

std::string StripChars(const std::string& s, const Value* chars, bool left, bool right) {
  const std::string set = chars && chars->is_string() ? chars->str() : std::string(" \t\n\r\f\v");
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && set.find(s[b]) != std::string::npos) ++b;
  if (right)
    while (e > b && set.find(s[e - 1]) != std::string::npos) --e;
  return s.substr(b, e - b);
}

}  // namespace strata::jinja
