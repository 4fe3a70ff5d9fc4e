#include "runtime/grammar/grammar.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "runtime/base/strings.h"
#include "runtime/tokenizer/unicode.h"

namespace strata::grammar {
namespace {

using ByteSet = std::array<uint64_t, 4>;

void AddByteRange(ByteSet& set, uint32_t lo, uint32_t hi) {
  for (uint32_t b = lo; b <= hi; ++b) set[b >> 6] |= uint64_t{1} << (b & 63);
}

// A symbol while parsing: a byte set or a rule.
struct Sym {
  bool is_rule = false;
  uint32_t arg = 0;  // byte set index or rule id
};
using Seq = std::vector<Sym>;
using Alts = std::vector<Seq>;

struct CodeRange {
  uint32_t lo, hi;
};

int Utf8Length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// Splits a range of code points of one encoded length into ranges whose
// UTF-8 encodings are byte-wise ranges: [lo, hi] such that byte i of every
// code point in it lies between byte i of lo and byte i of hi.
void SplitUtf8(uint32_t lo, uint32_t hi, std::vector<CodeRange>* out) {
  const int n = Utf8Length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        SplitUtf8(lo, lo | m, out);
        SplitUtf8((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        SplitUtf8(lo, (hi & ~m) - 1, out);
        SplitUtf8(hi & ~m, hi, out);
        return;
      }
    }
  }
  out->push_back({lo, hi});
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr uint32_t kMaxRepeat = 1000;

}  // namespace

// Parses GBNF into rules of symbols, then lays them out as a Grammar.
class GrammarBuilder {
 public:
  GrammarBuilder(std::string_view text, const GrammarLimits& limits) : s_(text), limits_(limits) {}

  Result<std::shared_ptr<const Grammar>> Run() {
    if (s_.size() > limits_.max_text_bytes)
      return InvalidArgument(StrFormat("the grammar is %zu bytes; at most %zu are accepted", s_.size(),
                                       limits_.max_text_bytes));
    if (!ParseRules() || !error_.empty()) return InvalidArgument(error_);
    return Build();
  }

 private:
  // --- errors -------------------------------------------------------------
  std::string Where(size_t at) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < at && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return StrFormat("grammar line %zu, column %zu", line, col);
  }
  bool Fail(const std::string& what) { return FailAt(i_, what); }
  bool FailAt(size_t at, const std::string& what) {
    if (error_.empty()) {
      std::string found = at < s_.size() ? "'" + Printable(s_.substr(at, 12), 12) + "'" : "the end of the text";
      error_ = Where(at) + ": " + what + " (found " + found + ")";
    }
    return false;
  }

  // --- lexing ---------------------------------------------------------------
  bool AtEnd() const { return i_ >= s_.size(); }
  char Peek(size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  void SkipSpace() {
    while (!AtEnd()) {
      char c = Peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i_;
      } else if (c == '#') {
        while (!AtEnd() && Peek() != '\n') ++i_;
      } else {
        break;
      }
    }
  }
  std::string_view Name() {
    size_t b = i_;
    while (!AtEnd() && IsNameChar(Peek())) ++i_;
    return s_.substr(b, i_ - b);
  }
  // At "name ::=": the start of the next rule.
  bool AtRuleStart() const {
    size_t k = i_;
    while (k < s_.size() && IsNameChar(s_[k])) ++k;
    if (k == i_) return false;
    while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t' || s_[k] == '\n' || s_[k] == '\r')) ++k;
    return s_.substr(k, 3) == "::=";
  }

  // One code point of a literal or class, with escapes.
  bool ParseChar(uint32_t* cp) {
    if (AtEnd()) return Fail("unexpected end of the text");
    const unsigned char c = static_cast<unsigned char>(Peek());
    if (c == '\\') {
      ++i_;
      char e = Peek();
      ++i_;
      int hex_digits = 0;
      switch (e) {
        case 'n': *cp = '\n'; return true;
        case 'r': *cp = '\r'; return true;
        case 't': *cp = '\t'; return true;
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/': *cp = e; return true;
        case 'x': hex_digits = 2; break;
        case 'u': hex_digits = 4; break;
        case 'U': hex_digits = 8; break;
        default: --i_; return Fail("unknown escape: expected one of \\n \\r \\t \\\\ \\\" \\' \\[ \\] \\- \\^ \\x \\u \\U");
      }
      uint32_t v = 0;
      for (int k = 0; k < hex_digits; ++k) {
        int h = HexValue(Peek());
        if (h < 0) return Fail(StrFormat("expected %d hexadecimal digits after \\%c", hex_digits, e));
        v = v * 16 + static_cast<uint32_t>(h);
        ++i_;
      }
      if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return Fail("the escape is not a Unicode scalar value");
      *cp = v;
      return true;
    }
    // A UTF-8 sequence of the text.
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i_ + static_cast<size_t>(n) > s_.size()) return Fail("invalid UTF-8 in the grammar");
    uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) {
      unsigned char cc = static_cast<unsigned char>(s_[i_ + static_cast<size_t>(k)]);
      if ((cc & 0xC0) != 0x80) return Fail("invalid UTF-8 in the grammar");
      v = (v << 6) | (cc & 0x3F);
    }
    if (Utf8Length(v) != n || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
      return Fail("invalid UTF-8 in the grammar");
    i_ += static_cast<size_t>(n);
    *cp = v;
    return true;
  }

  // --- symbols ------------------------------------------------------------
  uint32_t SetId(const ByteSet& set) {
    auto [it, inserted] = set_ids_.emplace(set, static_cast<uint32_t>(sets_.size()));
    if (inserted) sets_.push_back(set);
    return it->second;
  }
  Sym ByteSym(uint8_t b) {
    ByteSet set{};
    AddByteRange(set, b, b);
    return {false, SetId(set)};
  }
  uint32_t NewRule(std::string name) {
    rules_.emplace_back();
    names_.push_back(std::move(name));
    defined_.push_back(true);
    first_use_.push_back(0);
    return static_cast<uint32_t>(rules_.size() - 1);
  }
  uint32_t AuxRule(const char* kind, Alts alts) {
    uint32_t id = NewRule(StrFormat("%s_%zu", kind, rules_.size()));
    rules_[id] = std::move(alts);
    return id;
  }
  uint32_t RuleId(std::string_view name, size_t at) {
    auto it = ids_.find(std::string(name));
    if (it != ids_.end()) return it->second;
    uint32_t id = NewRule(std::string(name));
    defined_[id] = false;
    first_use_[id] = at;
    ids_.emplace(std::string(name), id);
    return id;
  }
  bool Count(size_t n) {
    n_elements_ += n;
    if (n_elements_ > limits_.max_elements)
      return Fail(StrFormat("the grammar expands to more than %zu elements", limits_.max_elements));
    return true;
  }

  // A set of code points as symbols: one byte set when all are ASCII, else
  // a rule of UTF-8 byte-range sequences.
  Sym CodePoints(std::vector<CodeRange> ranges) {
    std::sort(ranges.begin(), ranges.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
    ByteSet ascii{};
    bool any_ascii = false;
    std::vector<CodeRange> split;
    static constexpr uint32_t kBounds[][2] = {{0x80, 0x7FF}, {0x800, 0xD7FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
    for (CodeRange r : ranges) {
      if (r.lo < 0x80) {
        AddByteRange(ascii, r.lo, std::min<uint32_t>(r.hi, 0x7F));
        any_ascii = true;
      }
      for (const auto& b : kBounds) {
        uint32_t lo = std::max(r.lo, b[0]), hi = std::min(r.hi, b[1]);
        if (lo <= hi) SplitUtf8(lo, hi, &split);
      }
    }
    if (split.empty()) return {false, SetId(ascii)};
    Alts alts;
    if (any_ascii) alts.push_back({{false, SetId(ascii)}});
    for (CodeRange r : split) {
      std::string lo, hi;  // of one length: SplitUtf8 keeps a range within one
      tokenizer::AppendUtf8(r.lo, &lo);
      tokenizer::AppendUtf8(r.hi, &hi);
      Seq seq;
      for (size_t k = 0; k < lo.size(); ++k) {
        ByteSet set{};
        AddByteRange(set, static_cast<uint8_t>(lo[k]), static_cast<uint8_t>(hi[k]));
        seq.push_back({false, SetId(set)});
      }
      alts.push_back(std::move(seq));
    }
    (void)Count(alts.size() * 5);  // past the budget: error_ is set, and the parse ends with it
    return {true, AuxRule("chars", std::move(alts))};
  }

  // [...] after the '['.
  bool ParseClass(Sym* out) {
    bool negate = false;
    if (Peek() == '^') {
      negate = true;
      ++i_;
    }
    std::vector<CodeRange> ranges;
    while (Peek() != ']') {
      if (AtEnd()) return Fail("unterminated character class: expected ']'");
      uint32_t lo, hi;
      if (!ParseChar(&lo)) return false;
      hi = lo;
      if (Peek() == '-' && Peek(1) != ']' && i_ + 1 < s_.size()) {
        ++i_;
        if (!ParseChar(&hi)) return false;
        if (hi < lo) return Fail("a character range ends before it starts");
      }
      ranges.push_back({lo, hi});
    }
    ++i_;  // ']'
    if (negate) {
      std::sort(ranges.begin(), ranges.end(), [](CodeRange a, CodeRange b) { return a.lo < b.lo; });
      std::vector<CodeRange> inv;
      uint32_t next = 0;
      for (CodeRange r : ranges) {
        if (r.lo > next) inv.push_back({next, r.lo - 1});
        next = std::max(next, r.hi + 1);
      }
      if (next <= 0x10FFFF) inv.push_back({next, 0x10FFFF});
      ranges = std::move(inv);
    }
    // Surrogates are not characters.
    std::vector<CodeRange> clean;
    for (CodeRange r : ranges) {
      if (r.hi < 0xD800 || r.lo > 0xDFFF) {
        clean.push_back(r);
        continue;
      }
      if (r.lo < 0xD800) clean.push_back({r.lo, 0xD7FF});
      if (r.hi > 0xDFFF) clean.push_back({0xE000, r.hi});
    }
    if (clean.empty()) return Fail("the character class matches nothing");
    *out = CodePoints(std::move(clean));
    return error_.empty();
  }

  // x{n,m} and friends over one symbol; m = UINT32_MAX: unbounded.
  bool Repeat(Seq* seq, size_t item_begin, uint32_t n, uint32_t m) {
    Sym x;
    if (seq->size() - item_begin == 1) {
      x = (*seq)[item_begin];
    } else {
      x = {true, AuxRule("group", Alts{Seq(seq->begin() + static_cast<std::ptrdiff_t>(item_begin), seq->end())})};
    }
    seq->resize(item_begin);
    if (!Count(static_cast<size_t>(n) + (m == UINT32_MAX ? 3 : 3 * static_cast<size_t>(m - n)))) return false;
    for (uint32_t k = 0; k < n; ++k) seq->push_back(x);
    if (m == UINT32_MAX) {
      uint32_t star = NewRule(StrFormat("star_%zu", rules_.size()));
      rules_[star] = Alts{Seq{x, Sym{true, star}}, Seq{}};
      seq->push_back({true, star});
    } else if (m > n) {
      uint32_t tail = NewRule(StrFormat("opt_%zu", rules_.size()));
      rules_[tail] = Alts{Seq{x}, Seq{}};
      for (uint32_t k = 1; k < m - n; ++k) {
        uint32_t r = NewRule(StrFormat("opt_%zu", rules_.size()));
        rules_[r] = Alts{Seq{x, Sym{true, tail}}, Seq{}};
        tail = r;
      }
      seq->push_back({true, tail});
    }
    return true;
  }

  bool ParseNumber(uint32_t* v) {
    size_t b = i_;
    uint64_t x = 0;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
      x = x * 10 + static_cast<uint64_t>(Peek() - '0');
      if (x > kMaxRepeat) return Fail(StrFormat("a repetition count above %u", kMaxRepeat));
      ++i_;
    }
    if (i_ == b) return Fail("expected a number");
    *v = static_cast<uint32_t>(x);
    return true;
  }

  bool ParseSequence(Seq* seq, int depth) {
    while (true) {
      SkipSpace();
      if (AtEnd()) return true;
      const char c = Peek();
      const size_t item_begin = seq->size();
      if (c == '"') {
        ++i_;
        while (Peek() != '"') {
          if (AtEnd()) return Fail("unterminated literal: expected '\"'");
          uint32_t cp;  // an escape, or a character of the text (its UTF-8 checked)
          if (!ParseChar(&cp)) return false;
          std::string bytes;
          tokenizer::AppendUtf8(cp, &bytes);
          for (char b : bytes) seq->push_back(ByteSym(static_cast<uint8_t>(b)));
        }
        ++i_;
        if (!Count(seq->size() - item_begin)) return false;
        if (seq->size() == item_begin) continue;  // "" is nothing
      } else if (c == '[') {
        ++i_;
        Sym sym;
        if (!ParseClass(&sym)) return false;
        seq->push_back(sym);
      } else if (c == '.') {
        ++i_;
        if (!any_) any_ = CodePoints({{0, 0xD7FF}, {0xE000, 0x10FFFF}});
        if (!error_.empty()) return false;
        seq->push_back(*any_);
      } else if (c == '(') {
        if (depth >= limits_.max_nesting) return Fail(StrFormat("groups nest deeper than %d", limits_.max_nesting));
        ++i_;
        Alts alts;
        if (!ParseAlternatives(&alts, depth + 1)) return false;
        SkipSpace();
        if (Peek() != ')') return Fail("expected ')'");
        ++i_;
        seq->push_back({true, AuxRule("group", std::move(alts))});
      } else if (IsNameChar(c)) {
        if (AtRuleStart()) return true;  // the next rule
        size_t at = i_;
        std::string_view name = Name();
        seq->push_back({true, RuleId(name, at)});
      } else {
        return true;  // '|', ')', or something the caller judges
      }
      if (!Count(1)) return false;
      // Postfix operators.
      while (true) {
        SkipSpace();
        char p = Peek();
        uint32_t n = 0, m = 0;
        if (p == '*') {
          m = UINT32_MAX;
        } else if (p == '+') {
          n = 1;
          m = UINT32_MAX;
        } else if (p == '?') {
          m = 1;
        } else if (p == '{') {
          ++i_;
          SkipSpace();
          if (!ParseNumber(&n)) return false;
          SkipSpace();
          m = n;
          if (Peek() == ',') {
            ++i_;
            SkipSpace();
            if (Peek() == '}') {
              m = UINT32_MAX;
            } else {
              if (!ParseNumber(&m)) return false;
              if (m < n) return Fail("in x{n,m}, m is smaller than n");
            }
            SkipSpace();
          }
          if (Peek() != '}') return Fail("expected '}'");
        } else {
          break;
        }
        ++i_;
        if (!Repeat(seq, item_begin, n, m)) return false;
      }
    }
  }

  bool ParseAlternatives(Alts* alts, int depth) {
    while (true) {
      Seq seq;
      if (!ParseSequence(&seq, depth)) return false;
      alts->push_back(std::move(seq));
      SkipSpace();
      if (Peek() != '|') return true;
      ++i_;
    }
  }

  bool ParseRules() {
    SkipSpace();
    if (AtEnd()) return Fail("the grammar is empty: expected 'root ::= ...'");
    while (true) {
      SkipSpace();
      if (AtEnd()) break;
      size_t at = i_;
      std::string_view name = Name();
      if (name.empty()) return Fail("expected a rule name");
      SkipSpace();
      if (s_.substr(i_, 3) != "::=") return Fail("expected '::=' after the rule name");
      i_ += 3;
      uint32_t id = RuleId(name, at);
      if (defined_[id] && !rules_[id].empty())
        return FailAt(at, "rule '" + std::string(name) + "' is defined twice");
      Alts alts;
      if (!ParseAlternatives(&alts, 0)) return false;
      SkipSpace();
      if (!AtEnd() && !AtRuleStart()) return Fail("expected a rule element, '|', or the next 'name ::='");
      rules_[id] = std::move(alts);
      defined_[id] = true;
    }
    for (uint32_t r = 0; r < rules_.size(); ++r)
      if (!defined_[r]) return FailAt(first_use_[r], "rule '" + names_[r] + "' is used but never defined");
    auto root = ids_.find("root");
    if (root == ids_.end()) return FailAt(0, "the grammar has no 'root' rule (where text starts)");
    root_ = root->second;
    return true;
  }

  // --- checks and layout -------------------------------------------------------
  Result<std::shared_ptr<const Grammar>> Build() {
    const size_t n = rules_.size();
    // Nullable rules (can match nothing), to a fixed point.
    std::vector<bool> nullable(n, false), productive(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (!nullable[r]) {
          for (const Seq& seq : rules_[r]) {
            if (std::all_of(seq.begin(), seq.end(), [&](Sym s) { return s.is_rule && nullable[s.arg]; })) {
              nullable[r] = changed = true;
              break;
            }
          }
        }
        if (!productive[r]) {
          for (const Seq& seq : rules_[r]) {
            if (std::all_of(seq.begin(), seq.end(), [&](Sym s) { return !s.is_rule || productive[s.arg]; })) {
              productive[r] = changed = true;
              break;
            }
          }
        }
      }
    }
    // Rules reachable from root.
    std::vector<bool> reach(n, false);
    std::vector<uint32_t> todo{root_};
    reach[root_] = true;
    while (!todo.empty()) {
      uint32_t r = todo.back();
      todo.pop_back();
      for (const Seq& seq : rules_[r])
        for (Sym s : seq)
          if (s.is_rule && !reach[s.arg]) reach[s.arg] = true, todo.push_back(s.arg);
    }
    for (size_t r = 0; r < n; ++r)
      if (reach[r] && !productive[r])
        return InvalidArgument("grammar: rule '" + names_[r] +
                               "' can never finish (every alternative needs itself again)");
    // Left recursion: a rule reaching itself through rules that can match nothing.
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r)
      for (const Seq& seq : rules_[r])
        for (Sym s : seq) {
          if (!s.is_rule) break;
          left[r].push_back(s.arg);
          if (!nullable[s.arg]) break;
        }
    std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
    for (size_t start = 0; start < n; ++start) {
      if (color[start] || !reach[start]) continue;
      std::vector<std::pair<uint32_t, size_t>> path{{static_cast<uint32_t>(start), 0}};
      color[start] = 1;
      while (!path.empty()) {
        auto& [r, k] = path.back();
        if (k == left[r].size()) {
          color[r] = 2;
          path.pop_back();
          continue;
        }
        uint32_t next = left[r][k++];
        if (color[next] == 1)
          return InvalidArgument("grammar: rule '" + names_[next] +
                                 "' is left-recursive (it can reach itself before reading any text); rewrite it "
                                 "with repetition, e.g. x ::= y (\",\" y)*");
        if (color[next] == 0) {
          color[next] = 1;
          path.push_back({next, 0});
        }
      }
    }
    auto g = std::make_shared<Grammar>();
    g->rules_.resize(n);
    for (size_t r = 0; r < n; ++r) {
      for (const Seq& seq : rules_[r]) {
        g->rules_[r].push_back(static_cast<uint32_t>(g->elements_.size()));
        for (Sym s : seq) g->elements_.push_back({s.is_rule ? Element::kRule : Element::kBytes, s.arg});
        g->elements_.push_back({Element::kEnd, 0});
      }
    }
    g->byte_sets_ = std::move(sets_);
    g->names_ = std::move(names_);
    g->root_ = root_;
    return std::shared_ptr<const Grammar>(std::move(g));
  }

  std::string_view s_;
  GrammarLimits limits_;
  size_t i_ = 0;
  std::string error_;
  std::vector<Alts> rules_;
  std::vector<std::string> names_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<ByteSet> sets_;
  std::map<ByteSet, uint32_t> set_ids_;
  std::optional<Sym> any_;
  size_t n_elements_ = 0;
  uint32_t root_ = 0;
};

Result<std::shared_ptr<const Grammar>> Grammar::Parse(std::string_view gbnf, const GrammarLimits& limits) {
  return GrammarBuilder(gbnf, limits).Run();
}

// --- stacks -------------------------------------------------------------------

namespace {

// One expansion (of the start, or after one byte): the stacks found, and the
// intermediate stacks already followed. An ambiguous grammar ((x+)+, many
// nullable alternatives in a row) reaches the same stack by many paths;
// following each once keeps the work polynomial. The step budget bounds it
// further: past it the remaining paths are dropped, which can only refuse text.
struct Expansion {
  Expansion(std::vector<Stack>* o, size_t l) : out(o), limit(l) {}
  std::vector<Stack>* out;
  size_t limit;
  size_t budget = kMaxExpansionSteps;
  bool overflow = false;
  std::unordered_set<std::string> followed, found;
};

std::string KeyOf(const Stack& s) {
  return std::string(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(uint32_t));
}

// Follows `s` through rule references and finished alternatives until its
// top is a terminal (or it is empty), adding each resulting stack once.
void Expand(const Grammar& g, Stack s, Expansion& x) {
  const auto& el = g.elements();
  while (true) {
    if (x.budget == 0) {
      x.overflow = true;
      return;
    }
    --x.budget;
    if (s.empty()) break;
    const uint32_t p = s.back();
    const Element e = el[p];
    if (e.kind == Element::kBytes) break;
    if (e.kind == Element::kEnd) {
      s.pop_back();
      continue;
    }
    // A rule: return to p + 1 (unless that ends the alternative: a tail call).
    if (el[p + 1].kind == Element::kEnd) {
      s.pop_back();
    } else {
      s.back() = p + 1;
    }
    s.push_back(e.arg);  // the key: this stack, about to enter rule e.arg
    const bool first = x.followed.insert(KeyOf(s)).second;
    s.pop_back();
    if (!first) return;
    const auto& alts = g.rules()[e.arg];
    for (size_t k = 0; k + 1 < alts.size(); ++k) {
      Stack copy = s;
      copy.push_back(alts[k]);
      Expand(g, std::move(copy), x);
    }
    s.push_back(alts.back());
  }
  if (!x.found.insert(KeyOf(s)).second) return;
  if (x.out->size() >= x.limit) {
    x.overflow = true;
    return;
  }
  x.out->push_back(std::move(s));
}

}  // namespace

bool AdvanceStacks(const Grammar& g, const std::vector<Stack>& in, uint8_t byte, std::vector<Stack>* out,
                   size_t limit, ExpansionStats* stats) {
  out->clear();
  Expansion x{out, limit};
  for (const Stack& s : in) {
    if (s.empty()) continue;
    const uint32_t p = s.back();
    if (!g.InSet(g.elements()[p].arg, byte)) continue;
    Stack next = s;
    next.back() = p + 1;
    Expand(g, std::move(next), x);
  }
  if (stats) {
    stats->overflow |= x.overflow;
    stats->steps += kMaxExpansionSteps - x.budget;
  }
  return !out->empty();
}

bool ReadBytes(const Grammar& g, std::vector<Stack>* stacks, std::string_view bytes, ExpansionStats* stats) {
  std::vector<Stack> next;
  for (char c : bytes) {
    if (!AdvanceStacks(g, *stacks, static_cast<uint8_t>(c), &next, kMaxStacks, stats)) return false;
    stacks->swap(next);
  }
  return true;
}

// --- Matcher --------------------------------------------------------------------

Matcher::Matcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)) {
  Expansion x{&stacks_, kMaxStacks};
  for (uint32_t a : g_->rules()[g_->root()]) Expand(*g_, Stack{a}, x);
  stats_.overflow = x.overflow;
}

bool Matcher::Accept(std::string_view bytes) {
  std::vector<Stack> cur = stacks_;
  if (!ReadBytes(*g_, &cur, bytes, &stats_)) return false;
  stacks_ = std::move(cur);
  return true;
}

bool Matcher::CanEnd() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

bool Matcher::MustEnd() const {
  return std::all_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

}  // namespace strata::grammar
