#include "runtime/chat/jinja_render.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "runtime/base/strings.h"
#include "runtime/chat/jinja_filters.h"

namespace strata::jinja {
namespace {

enum class Flow { kNormal, kBreak, kContinue };

class Renderer final : public FilterHost {
 public:
  Renderer(const Limits& limits, Value globals) : limits_(limits) {
    scopes_.push_back(std::move(globals));
  }

  void Run(const Node& n, std::string* out) {
    if (Render(n, out) != Flow::kNormal) throw Error("{% break %} or {% continue %} outside a loop", n.line);
  }
  int line() const { return line_; }

 private:
  void Step(int line) override {
    if (++steps_ > limits_.max_steps)
      throw Error(StrFormat("the template ran more than %llu steps", static_cast<unsigned long long>(limits_.max_steps)),
                  line);
  }
  size_t max_output() const override { return limits_.max_output; }
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

  // The renderer recurses over the tree (statements, expressions, macro
  // calls), so the depth in progress is bounded: it bounds the stack.
  struct Nest {
    Nest(Renderer* r, int line) : r_(r) {
      r->line_ = line;
      if (++r->depth_ > r->limits_.max_depth) {
        --r->depth_;
        throw Error(StrFormat("the template nests deeper than %d levels while rendering", r->limits_.max_depth), line);
      }
    }
    ~Nest() { --r_->depth_; }
    Renderer* r_;
  };

  Flow Render(const Node& n, std::string* out) {
    Nest nest(this, n.line);
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
        Emit(Str(jinja::ApplyFilter(*this, n.names[0], Value::Str(captured), a)), out, n.line);
        return Flow::kNormal;
      }
    }
    return Flow::kNormal;
  }

  // The elements a for loop (or unpacking) walks: a list's items, a dict's
  // keys, a string's characters.
  std::vector<Value> Items(const Value& v, int line) const override {
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
    Nest nest(this, e.line);
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
        return jinja::ApplyFilter(*this, e.name, v, a);
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
      if (n <= 0 || s.empty()) return Value::Str("");  // a count of 4**20 must not loop 4**20 times (a fuzz finding)
      if (static_cast<uint64_t>(n) > limits_.max_output / s.size()) throw Error("string repetition too long", line);
      std::string out;
      out.reserve(s.size() * static_cast<size_t>(n));
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

  bool Compare(const std::string& op, const Value& a, const Value& b, int line) override {
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
    if (v.undefined() || v.none()) return Value();
    // An attribute of digits only is an index (`x.0`, and a part of the
    // attribute paths of selectattr, map, sort, ...), as Jinja2 reads it;
    // one past int64 indexes nothing. (std::stoll threw there: a template's
    // `selectattr('2222...')` ended the process.)
    if (!name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      int64_t index = 0;
      const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), index);
      if (ec != std::errc() || end != name.data() + name.size()) return Value();
      return Item(v, Value::Int(index), line);
    }
    if (v.is_string()) return StringMethod(v, name, line);
    if (v.is_array()) return ListMethod(v, name);
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
      return f([this, s, name](Args& a) { return jinja::ApplyFilter(*this, name, Value::Str(s), a); });
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
      return f([this, s](Args& a) { return jinja::ApplyFilter(*this, "replace", Value::Str(s), a); });
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
        return jinja::ApplyFilter(*this, "join", a.pos.empty() ? Value::List() : a.pos[0], fa);
      });
    (void)line;
    return Value();
  }

  // Attribute or item `path` ("a.b") of v, for map/selectattr/sort.
  Value Path(const Value& v, const std::string& path, int line) override {
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

  bool ApplyTest(const std::string& name, const Value& v, Args& a) override {
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
    if (name == "lower") return v.is_string() && Str(v) == jinja::ApplyFilter(*this, "lower", v, a).str();
    if (name == "upper") return v.is_string() && Str(v) == jinja::ApplyFilter(*this, "upper", v, a).str();
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
  int depth_ = 0;  // Nest
  int line_ = 0;   // the line being rendered, for the value walks' errors (they throw line 0)
};

}  // namespace

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
             // Its length first, in unsigned arithmetic (any int64 bounds):
             // a range past the cap fails before it is built. The cap is
             // Jinja2's sandbox's, which Hugging Face renders templates in.
             constexpr uint64_t kMaxRange = 100'000;
             const bool up = step > 0;
             uint64_t n = 0;
             if (up ? start < stop : start > stop) {
               const uint64_t span = up ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
                                        : static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
               const uint64_t stride = up ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
               n = (span - 1) / stride + 1;
             }
             if (n > kMaxRange)
               throw Error(StrFormat("range() of %llu values: past the %llu that Jinja2's sandbox allows",
                                     static_cast<unsigned long long>(n), static_cast<unsigned long long>(kMaxRange)),
                           a.line);
             Array values;
             values.reserve(static_cast<size_t>(n));
             // start + i * step stays between start and stop: no overflow.
             for (uint64_t i = 0; i < n; ++i)
               values.push_back(Value::Int(static_cast<int64_t>(static_cast<uint64_t>(start) + i * static_cast<uint64_t>(step))));
             return Value::List(std::move(values));
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

void RenderTemplate(const Node& root, const Limits& limits, Value globals, std::string* out) {
  Renderer r(limits, std::move(globals));
  try {
    r.Run(root, out);
  } catch (Error& e) {
    if (e.line == 0) e.line = r.line();
    throw;
  }
}

}  // namespace strata::jinja
