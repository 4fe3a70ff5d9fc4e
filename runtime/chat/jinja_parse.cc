#include "runtime/chat/jinja_parse.h"

#include <charconv>
#include <cmath>
#include <optional>

#include "runtime/base/strings.h"

namespace strata::jinja {
namespace {

// ---------------------------------------------------------------------------
// Expressions.

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

  // Every child joins its parent here. Depth bounds the parser's recursion,
  // but the left-leaning chains (`a - b - c ...`, `x.y.z ...`, `v|f|g ...`)
  // are built in loops, and the renderer walks (and the tree frees) them by
  // recursion: so the tree's height is bounded too, as it grows.
  void Adopt(Expr& e, ExprPtr kid) {
    if (kid && kid->height >= e.height) {
      e.height = kid->height + 1;
      if (e.height > kMaxNesting) Fail(StrFormat("expression nests deeper than %d levels", kMaxNesting));
    }
    e.kids.push_back(std::move(kid));
  }

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
      Adopt(*e, std::move(cond));
      Adopt(*e, std::move(a));
      Adopt(*e, std::move(other));
      return e;
    }
    return a;
  }
  ExprPtr Or() {
    ExprPtr a = And();
    while (IsName("or")) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kOr, line_);
      Adopt(*e, std::move(a));
      Adopt(*e, And());
      a = std::move(e);
    }
    return a;
  }
  ExprPtr And() {
    ExprPtr a = Not();
    while (IsName("and")) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kAnd, line_);
      Adopt(*e, std::move(a));
      Adopt(*e, Not());
      a = std::move(e);
    }
    return a;
  }
  ExprPtr Not() {
    if (IsName("not")) {
      Depth d(this);
      ++p_;
      auto e = MakeExpr(Expr::Op::kNot, line_);
      Adopt(*e, Not());
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
        Adopt(*e, std::move(a));
        if (IsOp("(")) {
          CallArgs(e.get());
        } else if (!AtEnd() && (t_[p_].kind == Tok::kString || t_[p_].kind == Tok::kInt ||
                                t_[p_].kind == Tok::kFloat ||
                                (t_[p_].kind == Tok::kName && !IsName("and") && !IsName("or") && !IsName("else") &&
                                 !IsName("if") && !IsName("is") && !IsName("in") && !IsName("not")))) {
          Adopt(*e, Primary());  // `x is divisibleby 3`, `x is sameas y`
        }
        a = std::move(e);
        continue;
      } else {
        return a;
      }
      auto e = MakeExpr(Expr::Op::kCompare, line_);
      e->name = op;
      Adopt(*e, std::move(a));
      Adopt(*e, Concat());
      a = std::move(e);
    }
  }
  ExprPtr Concat() {
    ExprPtr a = Additive();
    while (IsOp("~")) {
      ++p_;
      auto e = MakeExpr(Expr::Op::kBinary, line_);
      e->name = "~";
      Adopt(*e, std::move(a));
      Adopt(*e, Additive());
      a = std::move(e);
    }
    return a;
  }
  ExprPtr Additive() {
    ExprPtr a = Multiplicative();
    while (IsOp("+") || IsOp("-")) {
      auto e = MakeExpr(Expr::Op::kBinary, line_);
      e->name = t_[p_++].text;
      Adopt(*e, std::move(a));
      Adopt(*e, Multiplicative());
      a = std::move(e);
    }
    return a;
  }
  ExprPtr Multiplicative() {
    ExprPtr a = Unary();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      auto e = MakeExpr(Expr::Op::kBinary, line_);
      e->name = t_[p_++].text;
      Adopt(*e, std::move(a));
      Adopt(*e, Unary());
      a = std::move(e);
    }
    return a;
  }
  ExprPtr Unary() {
    if (IsOp("-") || IsOp("+")) {
      Depth d(this);
      auto e = MakeExpr(IsOp("-") ? Expr::Op::kNeg : Expr::Op::kPos, line_);
      ++p_;
      Adopt(*e, Unary());
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
      Adopt(*e, std::move(a));
      Adopt(*e, Unary());
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
        Adopt(*e, std::move(a));
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
        Adopt(*e, std::move(a));
        if (slice) {
          for (auto& part : parts) Adopt(*e, std::move(part));
        } else {
          if (!parts[0]) Fail("expected an index");
          Adopt(*e, std::move(parts[0]));
        }
        a = std::move(e);
      } else if (IsOp("(")) {
        auto e = MakeExpr(Expr::Op::kCall, line_);
        Adopt(*e, std::move(a));
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
        Adopt(*e, std::move(a));
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
        Adopt(*e, Ternary());
      } else {
        if (!e->kwnames.empty()) Fail("a positional argument after a keyword argument");
        Adopt(*e, Ternary());
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
        Adopt(*e, std::move(first));
        while (IsOp(",")) {
          ++p_;
          if (IsOp(")")) break;
          Adopt(*e, Ternary());
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
        Adopt(*e, Ternary());
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
        Adopt(*e, Ternary());
        ExpectOp(":");
        Adopt(*e, Ternary());
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

}  // namespace

NodePtr ParseTemplate(std::string_view source) { return StmtParser(Split(source)).ParseAll(); }

}  // namespace strata::jinja
