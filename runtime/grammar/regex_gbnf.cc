#include "runtime/grammar/regex_gbnf.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/base/strings.h"
#include "runtime/grammar/json_schema.h"

namespace strata::grammar {
namespace {

constexpr int kMaxDepth = 64;        // nested groups
constexpr int64_t kMaxCount = 1000;  // {n,m}: what the GBNF parser takes
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

using Range = std::pair<uint32_t, uint32_t>;  // inclusive

// The JSON text of one code point inside a string, as JSON writes it.
std::string JsonChar(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  if (cp < 0x20) return StrFormat("\\u%04x", static_cast<unsigned>(cp));
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

// Sorted, merged ranges.
std::vector<Range> Normalize(std::vector<Range> r) {
  std::sort(r.begin(), r.end());
  std::vector<Range> out;
  for (const Range& x : r) {
    if (!out.empty() && x.first <= out.back().second + 1) out.back().second = std::max(out.back().second, x.second);
    else out.push_back(x);
  }
  return out;
}

// Every code point not in `r` (surrogates are never characters).
std::vector<Range> Complement(const std::vector<Range>& r) {
  std::vector<Range> excluded = r;
  excluded.push_back({0xD800, 0xDFFF});
  std::vector<Range> out;
  uint32_t next = 0;
  for (const Range& x : Normalize(excluded)) {
    if (x.first > next) out.push_back({next, x.first - 1});
    next = x.second + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

bool Contains(const std::vector<Range>& r, uint32_t cp) {
  for (const Range& x : r)
    if (cp >= x.first && cp <= x.second) return true;
  return false;
}

// A set of code points as GBNF: the ones JSON writes as themselves in one
// class, the ones it escapes (quote, backslash, controls) as their escapes.
std::string SetBody(const std::vector<Range>& set) {
  const std::vector<Range> r = Normalize(set);
  std::vector<std::string> alts;
  std::string cls;
  for (const Range& x : r) {
    // What JSON writes as itself: from 0x20 on, less the quote and the backslash.
    if (x.second < 0x20) continue;
    std::vector<Range> parts = {{std::max<uint32_t>(x.first, 0x20), x.second}};
    for (uint32_t cut : {uint32_t{'"'}, uint32_t{'\\'}}) {
      std::vector<Range> kept;
      for (const auto& [a, b] : parts) {
        if (cut < a || cut > b) {
          kept.push_back({a, b});
          continue;
        }
        if (cut > a) kept.push_back({a, cut - 1});
        if (cut < b) kept.push_back({cut + 1, b});
      }
      parts = std::move(kept);
    }
    for (const auto& [a, b] : parts) cls += a == b ? GbnfClassChar(a) : GbnfClassChar(a) + "-" + GbnfClassChar(b);
  }
  if (!cls.empty()) alts.push_back("[" + cls + "]");
  for (uint32_t special = 0; special < 0x20; ++special)
    if (Contains(r, special)) alts.push_back(GbnfLiteral(JsonChar(special)));
  for (uint32_t special : {uint32_t{'"'}, uint32_t{'\\'}})
    if (Contains(r, special)) alts.push_back(GbnfLiteral(JsonChar(special)));
  if (alts.empty()) return "";
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : " ") + alts[i];
  return out + " )";
}

const std::vector<Range>& Digits() {
  static const std::vector<Range> r = {{'0', '9'}};
  return r;
}
const std::vector<Range>& Word() {
  static const std::vector<Range> r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
  return r;
}
const std::vector<Range>& Space() {
  static const std::vector<Range> r = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x2028, 0x2029}, {0xFEFF, 0xFEFF}};
  return r;
}

class Parser {
 public:
  Parser(std::string_view p, std::string char_rule) : p_(p), char_rule_(std::move(char_rule)) {}

  Result<std::string> Run() {
    size_t end = p_.size();
    const bool start_anchor = !p_.empty() && p_[0] == '^';
    if (start_anchor) i_ = 1;
    // A final unescaped '$' anchors the end.
    bool end_anchor = false;
    if (end > i_ && p_[end - 1] == '$') {
      size_t backslashes = 0;
      for (size_t k = end - 1; k > i_ && p_[k - 1] == '\\'; --k) ++backslashes;
      if (backslashes % 2 == 0) end_anchor = true, --end;
    }
    end_ = end;
    STRATA_ASSIGN_OR_RETURN(std::string body, Alternation(0));
    if (i_ != end_) return Error("an unmatched ')'");
    std::string out = R"("\"" )";
    if (!start_anchor) out += char_rule_ + "* ";
    out += "( " + body + " )";
    if (!end_anchor) out += " " + char_rule_ + "*";
    return out + R"( "\"")";
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument(StrFormat("'pattern' at offset %zu: %s", i_, what.c_str()));
  }
  bool AtEnd() const { return i_ >= end_; }

  Result<std::string> Alternation(int depth) {
    if (depth > kMaxDepth) return Error("groups nest deeper than 64");
    std::vector<std::string> alts;
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::string seq, Sequence(depth));
      alts.push_back(seq.empty() ? "\"\"" : seq);
      if (AtEnd() || p_[i_] != '|') break;
      ++i_;
    }
    std::string out;
    for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : "") + alts[k];
    return out;
  }

  Result<std::string> Sequence(int depth) {
    std::string out;
    while (!AtEnd() && p_[i_] != '|' && p_[i_] != ')') {
      STRATA_ASSIGN_OR_RETURN(std::string atom, Atom(depth));
      STRATA_ASSIGN_OR_RETURN(atom, Quantified(std::move(atom)));
      if (!out.empty()) out += ' ';
      out += atom;
    }
    return out;
  }

  // A quantifier after an atom, if any.
  Result<std::string> Quantified(std::string atom) {
    if (AtEnd()) return atom;
    const char c = p_[i_];
    std::string q;
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++i_;
    } else if (c == '{') {
      const size_t save = i_;
      int64_t n = 0, m = -1;
      bool has_comma = false;
      if (!Count(&n, &m, &has_comma)) {
        i_ = save;  // not a quantifier: '{' is a literal (ECMAScript's Annex B)
        return atom;
      }
      if (n > kMaxCount || m > kMaxCount) return Error(StrFormat("a count past %lld", static_cast<long long>(kMaxCount)));
      if (m >= 0 && m < n) return Error("a count {n,m} with m < n");
      q = !has_comma ? "{" + std::to_string(n) + "}"
                     : "{" + std::to_string(n) + "," + (m < 0 ? std::string() : std::to_string(m)) + "}";
    } else {
      return atom;
    }
    if (!AtEnd() && p_[i_] == '?') ++i_;  // lazy: the same strings
    const bool count_follows = !AtEnd() && p_[i_] == '{' && i_ + 1 < end_ && p_[i_ + 1] >= '0' && p_[i_ + 1] <= '9';
    if (!AtEnd() && (p_[i_] == '*' || p_[i_] == '+' || p_[i_] == '?' || count_follows))
      return Error("a quantifier after a quantifier");
    return "( " + atom + " )" + q;
  }

  // {n}, {n,}, {n,m} at i_ (on '{'); false when it is not one.
  bool Count(int64_t* n, int64_t* m, bool* has_comma) {
    ++i_;
    auto number = [&](int64_t* out) {
      const size_t start = i_;
      int64_t v = 0;
      while (!AtEnd() && p_[i_] >= '0' && p_[i_] <= '9') {
        v = std::min<int64_t>(v * 10 + (p_[i_] - '0'), kMaxCount + 1);
        ++i_;
      }
      *out = v;
      return i_ > start;
    };
    if (!number(n)) return false;
    if (!AtEnd() && p_[i_] == ',') {
      *has_comma = true;
      ++i_;
      if (!AtEnd() && p_[i_] != '}' && !number(m)) return false;
    }
    if (AtEnd() || p_[i_] != '}') return false;
    ++i_;
    return true;
  }

  Result<std::string> Atom(int depth) {
    const char c = p_[i_];
    switch (c) {
      case '(': {
        ++i_;
        if (!AtEnd() && p_[i_] == '?') {
          if (i_ + 1 < end_ && p_[i_ + 1] == ':') {
            i_ += 2;
          } else {
            return Error("lookarounds and named groups ('(?') cannot be written as a grammar");
          }
        }
        STRATA_ASSIGN_OR_RETURN(std::string inner, Alternation(depth + 1));
        if (AtEnd() || p_[i_] != ')') return Error("a '(' without its ')'");
        ++i_;
        return "( " + inner + " )";
      }
      case '[': return Class();
      case '.':
        ++i_;
        return SetBody(Complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
      case '\\': return Escape();
      case '^': return Error("'^' inside the pattern (only a leading one, the anchor, is supported)");
      case '$': return Error("'$' inside the pattern (only a final one, the anchor, is supported)");
      case '*':
      case '+':
      case '?': return Error(std::string("'") + c + "' with nothing before it to repeat");
      default: break;
    }
    uint32_t cp = 0;
    STRATA_RETURN_IF_ERROR(NextCodePoint(&cp));
    return GbnfLiteral(JsonChar(cp));
  }

  // One UTF-8 code point of the pattern at i_.
  Status NextCodePoint(uint32_t* cp) {
    const auto b = static_cast<unsigned char>(p_[i_]);
    int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (len == 0 || i_ + static_cast<size_t>(len) > end_) return Error("bytes that are not UTF-8");
    uint32_t v = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < len; ++k) {
      const auto cont = static_cast<unsigned char>(p_[i_ + static_cast<size_t>(k)]);
      if ((cont & 0xC0) != 0x80) return Error("bytes that are not UTF-8");
      v = (v << 6) | (cont & 0x3F);
    }
    if (v > kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) return Error("bytes that are not UTF-8");
    i_ += static_cast<size_t>(len);
    *cp = v;
    return Status::Ok();
  }

  // \xHH or \uHHHH after the letter (i_ on the first hex digit).
  Status Hex(int digits, uint32_t* cp) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k, ++i_) {
      if (AtEnd()) return Error("a short \\x or \\u escape");
      const char h = p_[i_];
      const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) return Error("a \\x or \\u escape that is not hexadecimal");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    if (v >= 0xD800 && v <= 0xDFFF) return Error("a \\u escape of a lone surrogate");
    *cp = v;
    return Status::Ok();
  }

  // An escape at i_ (on '\\'), as a set of code points; in_class: inside [...].
  Status EscapeSet(bool in_class, std::vector<Range>* set) {
    ++i_;
    if (AtEnd()) return Error("a '\\' at the end");
    const char e = p_[i_];
    auto one = [&](uint32_t cp) { set->push_back({cp, cp}); };
    auto add = [&](const std::vector<Range>& r) { set->insert(set->end(), r.begin(), r.end()); };
    switch (e) {
      case 'd': ++i_; add(Digits()); return Status::Ok();
      case 'D': ++i_; add(Complement(Digits())); return Status::Ok();
      case 'w': ++i_; add(Word()); return Status::Ok();
      case 'W': ++i_; add(Complement(Word())); return Status::Ok();
      case 's': ++i_; add(Space()); return Status::Ok();
      case 'S': ++i_; add(Complement(Space())); return Status::Ok();
      case 'n': ++i_; one('\n'); return Status::Ok();
      case 'r': ++i_; one('\r'); return Status::Ok();
      case 't': ++i_; one('\t'); return Status::Ok();
      case 'f': ++i_; one('\f'); return Status::Ok();
      case 'v': ++i_; one('\v'); return Status::Ok();
      case '0': ++i_; one(0); return Status::Ok();
      case 'x':
      case 'u': {
        ++i_;
        uint32_t cp = 0;
        STRATA_RETURN_IF_ERROR(Hex(e == 'x' ? 2 : 4, &cp));
        one(cp);
        return Status::Ok();
      }
      case 'b':
        if (in_class) {
          ++i_;
          one('\b');
          return Status::Ok();
        }
        return Error("'\\b' (a word boundary) cannot be written as a grammar");
      case 'B': return Error("'\\B' (not a word boundary) cannot be written as a grammar");
      case 'k': return Error("'\\k' (a named backreference) cannot be written as a grammar");
      case 'p':
      case 'P': return Error("Unicode property classes ('\\p{...}') are not supported");
      case 'c': return Error("control escapes ('\\c') are not supported");
      default: break;
    }
    if (e >= '1' && e <= '9') return Error("backreferences cannot be written as a grammar");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'))
      return Error(std::string("the escape '\\") + e + "' is not one ECMAScript defines");
    uint32_t cp = 0;  // an escaped symbol: itself
    STRATA_RETURN_IF_ERROR(NextCodePoint(&cp));
    one(cp);
    return Status::Ok();
  }

  Result<std::string> Escape() {
    std::vector<Range> set;
    STRATA_RETURN_IF_ERROR(EscapeSet(false, &set));
    if (set.size() == 1 && set[0].first == set[0].second) return GbnfLiteral(JsonChar(set[0].first));
    return SetBody(set);
  }

  // Inside [...]: an escape's set, or one code point, at i_.
  Status ClassMember(std::vector<Range>* out) {
    if (p_[i_] == '\\') return EscapeSet(true, out);
    uint32_t cp = 0;
    STRATA_RETURN_IF_ERROR(NextCodePoint(&cp));
    out->push_back({cp, cp});
    return Status::Ok();
  }

  Result<std::string> Class() {
    ++i_;  // '['
    bool negated = false;
    if (!AtEnd() && p_[i_] == '^') negated = true, ++i_;
    std::vector<Range> set;
    bool first = true;
    while (true) {
      if (AtEnd()) return Error("a '[' without its ']'");
      if (p_[i_] == ']' && !first) break;
      first = false;
      // One member: a code point (maybe the start of a range) or an escape's set.
      std::vector<Range> member;
      STRATA_RETURN_IF_ERROR(ClassMember(&member));
      const bool single = member.size() == 1 && member[0].first == member[0].second;
      if (single && i_ + 1 < end_ && p_[i_] == '-' && p_[i_ + 1] != ']') {
        ++i_;  // a range
        std::vector<Range> to;
        STRATA_RETURN_IF_ERROR(ClassMember(&to));
        if (to.size() != 1 || to[0].first != to[0].second) return Error("a range to a class escape");
        if (to[0].first < member[0].first) return Error("a range out of order");
        member[0].second = to[0].first;
      }
      set.insert(set.end(), member.begin(), member.end());
    }
    ++i_;  // ']'
    if (negated) set = Complement(set);
    std::string body = SetBody(set);
    if (body.empty()) return Error("a class that matches no character");
    return body;
  }

  std::string_view p_;
  std::string char_rule_;
  size_t i_ = 0;
  size_t end_ = 0;
};

}  // namespace

Result<std::string> RegexToGbnf(std::string_view pattern, const std::string& char_rule) {
  return Parser(pattern, char_rule).Run();
}

}  // namespace strata::grammar
