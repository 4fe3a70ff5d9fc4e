// Split expressions llama.cpp evaluates with std::regex, as linear scanners.
//
// All of them have the shape  prefix? class+  (or a fixed count of a class),
// found leftmost and non-overlapping the way std::regex_iterator finds them;
// the gaps between matches become pieces too (unicode_regex_split_stl).
//
// How llama.cpp's regex sees a code point: ASCII as itself; other code points
// through the "collapsed" text (one byte per class) for expressions using
// \p{..}, or as themselves with non-ASCII whitespace replaced by \v for the
// rest. Hence, for every expression here:
//   \s     = White_Space (ASCII \t\n\v\f\r and space, or any non-ASCII whitespace)
//   \p{L}  = letter, \p{N} = number, \p{P} = punctuation (ASCII included:
//            llama.cpp's ASCII stand-ins for these are exactly the Unicode ones)
//   a literal set never contains a non-ASCII whitespace code point.

#include "runtime/tokenizer/pretokenize_scanners.h"

#include <algorithm>
#include <iterator>

namespace strata::tokenizer {
namespace {

struct CodeRange {
  uint32_t lo, hi;
};

// A code point against a literal set, as std::wregex compares it after
// llama.cpp replaced non-ASCII whitespace by \v.
template <size_t N>
bool InSet(const CodeRange (&set)[N], uint32_t cp, CodepointFlags f) {
  if (cp >= 0x80 && f.whitespace()) return false;
  auto it = std::upper_bound(std::begin(set), std::end(set), cp, [](uint32_t c, const CodeRange& r) { return c < r.lo; });
  return it != std::begin(set) && cp <= std::prev(it)->hi;
}

// Finds matches of  (\s if with_space_prefix)? class+  in [begin, end) and
// emits matches and gaps. `in_class(pos)` tests one code point.
template <typename InClass>
void SplitRuns(size_t begin, size_t end, PieceLengths* out, bool with_space_prefix, const CodepointText& t,
               InClass in_class) {
  size_t gap_start = begin;
  size_t pos = begin;
  while (pos < end) {
    size_t match_end = pos;
    if (with_space_prefix && t.flags[pos].whitespace() && pos + 1 < end && in_class(pos + 1)) {
      match_end = pos + 1;
    } else if (in_class(pos)) {
      match_end = pos;
    } else {
      ++pos;
      continue;
    }
    while (match_end < end && in_class(match_end)) ++match_end;
    if (pos > gap_start) out->push_back(static_cast<uint32_t>(pos - gap_start));
    out->push_back(static_cast<uint32_t>(match_end - pos));
    pos = gap_start = match_end;
  }
  if (end > gap_start) out->push_back(static_cast<uint32_t>(end - gap_start));
}

// Matches of exactly `count` consecutive class members, leftmost first.
template <typename InClass>
void SplitFixed(size_t begin, size_t end, PieceLengths* out, size_t count, InClass in_class) {
  size_t gap_start = begin;
  size_t pos = begin;
  size_t run = 0;  // class members ending at pos (exclusive), since gap_start
  while (pos < end) {
    run = in_class(pos) ? run + 1 : 0;
    ++pos;
    if (run == count) {
      size_t match_begin = pos - count;
      if (match_begin > gap_start) out->push_back(static_cast<uint32_t>(match_begin - gap_start));
      out->push_back(static_cast<uint32_t>(count));
      gap_start = pos;
      run = 0;
    }
  }
  if (end > gap_start) out->push_back(static_cast<uint32_t>(end - gap_start));
}

// How many code points from i (before end) satisfy `in`.
template <typename F>
size_t RunLength(size_t i, size_t end, F in) {
  size_t n = 0;
  while (i + n < end && in(i + n)) ++n;
  return n;
}

// \p{N}{1,3} at pos (before end): the end of its match (pos: none).
size_t MatchNumbersUpTo3(const CodepointText& t, size_t pos, size_t end) {
  size_t e = pos;
  while (e < end && e < pos + 3 && t.flags[e].number()) ++e;
  return e;
}

// Leftmost, non-overlapping matches of an expression whose `MatchAt(pos)`
// gives the end of the match at pos (pos: none), matches and gaps alike.
template <typename Expression>
void SplitMatches(const Expression& re, size_t begin, size_t end, PieceLengths* out) {
  size_t gap_start = begin, pos = begin;
  while (pos < end) {
    const size_t match_end = re.MatchAt(pos);
    if (match_end == pos) {
      ++pos;
      continue;
    }
    if (pos > gap_start) out->push_back(static_cast<uint32_t>(pos - gap_start));
    out->push_back(static_cast<uint32_t>(match_end - pos));
    pos = gap_start = match_end;
  }
  if (end > gap_start) out->push_back(static_cast<uint32_t>(end - gap_start));
}

// The whitespace tail both regex scanners end with, \s*[\r\n]+|\s+(?!\S)|\s+,
// at pos: the end of its match (pos: none).
size_t MatchSpaces(const CodepointText& t, size_t pos, size_t end) {
  const size_t ws = RunLength(pos, end, [&t](size_t i) { return t.flags[i].whitespace(); });
  if (ws == 0) return pos;
  for (size_t j = ws; j-- > 0;)  // \s*[\r\n]+: up to the last newline of the run
    if (t.cps[pos + j] == '\r' || t.cps[pos + j] == '\n') return pos + j + 1;
  if (pos + ws == end) return pos + ws;  // \s+(?!\S) at the end
  if (ws >= 2) return pos + ws - 1;      // \s+(?!\S): leave one before the next non-space
  return pos + ws;                       // \s+
}

// (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])? at i (before end): its length.
size_t ContractionAt(const CodepointText& t, size_t i, size_t end) {
  auto cp = [&](size_t k) -> uint32_t { return k < end ? t.cps[k] : 0; };
  if (cp(i) != '\'') return 0;
  auto lower = [](uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; };
  const uint32_t a = lower(cp(i + 1)), b = lower(cp(i + 2));
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

bool IsAsciiSymbolOf(uint32_t cp, std::string_view set) { return cp < 0x80 && set.find(static_cast<char>(cp)) != std::string_view::npos; }

}  // namespace

void ScanEachNewline(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitFixed(begin, end, out, 1, [&](size_t i) { return t.cps[i] == '\r' || t.cps[i] == '\n'; });
}

void ScanNumberRun(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitRuns(begin, end, out, false, t, [&](size_t i) { return t.flags[i].number(); });
}

void ScanNumberEach(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitFixed(begin, end, out, 1, [&](size_t i) { return t.flags[i].number(); });
}

void ScanThreeDigits(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitFixed(begin, end, out, 3, [&](size_t i) { return t.cps[i] >= '0' && t.cps[i] <= '9'; });
}

void ScanSpaceLetterRun(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitRuns(begin, end, out, true, t, [&](size_t i) { return t.flags[i].letter(); });
}

void ScanSpacePunctRun(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitRuns(begin, end, out, true, t, [&](size_t i) { return t.flags[i].punctuation(); });
}

void ScanFalconPunctRun(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitRuns(begin, end, out, false, t,
            [&](size_t i) { return t.flags[i].punctuation() || IsAsciiSymbolOf(t.cps[i], "$+<=>^~|`"); });
}

void ScanDefaultPunctRun(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitRuns(begin, end, out, false, t,
            [&](size_t i) { return t.flags[i].punctuation() || IsAsciiSymbolOf(t.cps[i], "$+<=>^~|"); });
}

void ScanTrailingSpace(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  size_t start = end;
  while (start > begin && t.flags[start - 1].whitespace()) --start;
  if (start > begin) out->push_back(static_cast<uint32_t>(start - begin));
  if (end > start) out->push_back(static_cast<uint32_t>(end - start));
}

// DeepSeek's sets, copied from the expressions in llama.cpp's llm_tokenizer_bpe
// (which took them from DeepSeek's tokenizer.json). They are literal data of
// those expressions, not Unicode classes: e.g. the letter set stops at U+A78E
// where Unicode's cased letters go on.
namespace {

constexpr CodeRange kDeepseekLetters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA}, {0x1BC, 0x1BF},
    {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F},
    {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481},
    {0x48A, 0x52F}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A},
    {0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57},
    {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4},
    {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102},
    {0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124},
    {0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139},
    {0x213C, 0x213F}, {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B},
    {0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06},
    {0xFB13, 0xFB17}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3},
    {0x104D8, 0x104FB}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。]
constexpr CodeRange kDeepseekPunct[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0x2018, 0x201F}, {0x3000, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
};
// [一-龥ࠀ-一가-퟿]: U+4E00..U+9FA5, U+0800..U+4E00, U+AC00..U+D7FF
constexpr CodeRange kDeepseekCjk[] = {
    {0x0800, 0x9FA5}, {0xAC00, 0xD7FF},
};

}  // namespace

void ScanDeepseekLetters(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitRuns(begin, end, out, true, t, [&](size_t i) { return InSet(kDeepseekLetters, t.cps[i], t.flags[i]); });
}

void ScanDeepseekPunct(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitRuns(begin, end, out, true, t, [&](size_t i) { return InSet(kDeepseekPunct, t.cps[i], t.flags[i]); });
}

void ScanDeepseekCjk(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitRuns(begin, end, out, false, t, [&](size_t i) { return InSet(kDeepseekCjk, t.cps[i], t.flags[i]); });
}

}  // namespace strata::tokenizer

namespace strata::tokenizer {
namespace {

// gpt-4o (o200k: gpt-oss, Llama 4), as llama.cpp writes it for std::regex:
//   [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?
//  |[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:...)?
//  |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// "Upper" is a letter outside a-z and "lower" a letter outside A-Z: on the
// collapsed text a non-ASCII letter is one stand-in byte, so it is both.
// The alternatives are tried in order at each position, each with
// ECMAScript's backtracking, which MatchGpt4o reproduces in closed form.
class Gpt4o {
 public:
  Gpt4o(const CodepointText& t, size_t end) : t_(t), end_(end) {}

  // The end of the match at pos, or pos when nothing matches there.
  size_t MatchAt(size_t pos) const {
    for (int alt = 0; alt < 2; ++alt)
      for (int with_prefix = 1; with_prefix >= 0; --with_prefix) {
        if (with_prefix && !Prefix(pos)) continue;
        const size_t p = pos + with_prefix;
        const size_t upper = Run(p, [this](size_t i) { return Upper(i); });
        if (alt == 0) {  // upper* lower+: the longest upper run that leaves a lower letter after it
          for (size_t k = upper + 1; k-- > 0;) {
            const size_t q = p + k;
            if (!Lower(q)) continue;
            const size_t w = q + Run(q, [this](size_t i) { return Lower(i); });
            return w + Contraction(w);
          }
        } else if (upper > 0) {  // upper+ lower*
          const size_t q = p + upper;
          const size_t w = q + Run(q, [this](size_t i) { return Lower(i); });
          return w + Contraction(w);
        }
      }
    if (Flags(pos).number()) return MatchNumbersUpTo3(t_, pos, end_);  // \p{N}{1,3}
    {  // " ?[^\s\p{L}\p{N}]+[\r\n/]*"
      const size_t p = pos + (Cp(pos) == ' ' && Punct(pos + 1) ? 1 : 0);
      if (Punct(p)) {
        size_t e = p + Run(p, [this](size_t i) { return Punct(i); });
        while (e < end_ && (Cp(e) == '\r' || Cp(e) == '\n' || Cp(e) == '/')) ++e;
        return e;
      }
    }
    return MatchSpaces(t_, pos, end_);
  }

 private:
  uint32_t Cp(size_t i) const { return i < end_ ? t_.cps[i] : 0; }
  CodepointFlags Flags(size_t i) const { return i < end_ ? t_.flags[i] : CodepointFlags{}; }
  bool Upper(size_t i) const { return Flags(i).letter() && !(Cp(i) >= 'a' && Cp(i) <= 'z'); }
  bool Lower(size_t i) const { return Flags(i).letter() && !(Cp(i) >= 'A' && Cp(i) <= 'Z'); }
  bool Punct(size_t i) const {
    const CodepointFlags f = Flags(i);
    return i < end_ && !f.whitespace() && !f.letter() && !f.number();
  }
  bool Prefix(size_t i) const {  // [^\r\n\p{L}\p{N}]
    const CodepointFlags f = Flags(i);
    return i < end_ && Cp(i) != '\r' && Cp(i) != '\n' && !f.letter() && !f.number();
  }
  template <typename F>
  size_t Run(size_t i, F in) const { return RunLength(i, end_, in); }
  size_t Contraction(size_t i) const { return ContractionAt(t_, i, end_); }

  const CodepointText& t_;
  size_t end_;
};

}  // namespace

void ScanGpt4o(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitMatches(Gpt4o(t, end), begin, end, out);
}

}  // namespace strata::tokenizer

namespace strata::tokenizer {
namespace {

// deepseek-v3's kana and CJK set: U+4E00..U+9FA5, U+3040..U+309F, U+30A0..U+30FF.
constexpr CodeRange kDeepseekV3Cjk[] = {{0x3040, 0x30FF}, {0x4E00, 0x9FA5}};

// deepseek-v3's third expression, as llama.cpp writes it for std::regex (on
// the collapsed text: it uses \p{..}):
//   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
//  |[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
//  | ?[\p{P}\p{S}]+[\r\n]*
//  |\s*[\r\n]+|\s+(?!\S)|\s+
// The alternatives in order at each position, with ECMAScript's backtracking
// in closed form. [A-Za-z] is ASCII only (a non-ASCII letter is one stand-in
// byte on the collapsed text), and so is the first set (all of ASCII's
// punctuation and symbols).
class DeepseekV3 {
 public:
  DeepseekV3(const CodepointText& t, size_t end) : t_(t), end_(end) {}

  size_t MatchAt(size_t pos) const {
    if (AsciiPunct(pos) && AsciiLetter(pos + 1)) return pos + 1 + Run(pos + 1, [this](size_t i) { return AsciiLetter(i); });
    {  // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+: with the prefix if a letter or mark follows it
      const CodepointFlags f = Flags(pos);
      const bool prefix = pos < end_ && Cp(pos) != '\r' && Cp(pos) != '\n' && !f.letter() && !f.punctuation() &&
                          !f.symbol();
      const size_t p = prefix && LetterOrMark(pos + 1) ? pos + 1 : pos;
      if (LetterOrMark(p)) return p + Run(p, [this](size_t i) { return LetterOrMark(i); });
    }
    {  // " ?[\p{P}\p{S}]+[\r\n]*"
      const size_t p = pos + (Cp(pos) == ' ' && PunctOrSymbol(pos + 1) ? 1 : 0);
      if (PunctOrSymbol(p)) {
        size_t e = p + Run(p, [this](size_t i) { return PunctOrSymbol(i); });
        while (e < end_ && (Cp(e) == '\r' || Cp(e) == '\n')) ++e;
        return e;
      }
    }
    return MatchSpaces(t_, pos, end_);
  }

 private:
  uint32_t Cp(size_t i) const { return i < end_ ? t_.cps[i] : 0; }
  CodepointFlags Flags(size_t i) const { return i < end_ ? t_.flags[i] : CodepointFlags{}; }
  bool AsciiLetter(size_t i) const {
    const uint32_t c = Cp(i);
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  }
  bool AsciiPunct(size_t i) const {
    const uint32_t c = Cp(i);
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
  }
  bool LetterOrMark(size_t i) const { return Flags(i).letter() || Flags(i).mark(); }
  bool PunctOrSymbol(size_t i) const { return Flags(i).punctuation() || Flags(i).symbol(); }
  template <typename F>
  size_t Run(size_t i, F in) const { return RunLength(i, end_, in); }

  const CodepointText& t_;
  size_t end_;
};

}  // namespace

void ScanNumbersUpTo3(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  struct UpTo3 {
    const CodepointText& t;
    size_t end;
    size_t MatchAt(size_t pos) const { return MatchNumbersUpTo3(t, pos, end); }
  };
  SplitMatches(UpTo3{t, end}, begin, end, out);
}

void ScanDeepseekV3Cjk(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitRuns(begin, end, out, false, t, [&](size_t i) { return InSet(kDeepseekV3Cjk, t.cps[i], t.flags[i]); });
}

void ScanDeepseekV3(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitMatches(DeepseekV3(t, end), begin, end, out);
}

}  // namespace strata::tokenizer

namespace strata::tokenizer {
namespace {

// Han as llama.cpp's kimi-k2 splitter tests it: the CJK ideograph blocks and
// their extensions A-F and compatibility blocks, by code point.
bool IsHan(uint32_t c) {
  return (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2EBEF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// kimi-k2 (Kimi K2): llama.cpp replaces its tokenizer's expression
//   [\p{Han}]+|[^\r\n\p{L}\p{N}]?[L&&[^Han]]*[..]+C?|...|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// by a hand-written splitter, which is what a kimi-k2 GGUF means to it: Han
// runs; an optional leading character that is not \r, \n, a letter or a
// number, then a run of non-Han letters (no case split, marks not included)
// and a contraction; 1-3 numbers; an optional space, then characters that
// are not whitespace, letters or numbers, then newlines; the whitespace
// rules; any other single character.
class KimiK2 {
 public:
  KimiK2(const CodepointText& t, size_t end) : t_(t), end_(end) {}

  size_t MatchAt(size_t pos) const {
    if (IsHan(t_.cps[pos])) return pos + Run(pos, [this](size_t i) { return IsHan(t_.cps[i]); });
    const CodepointFlags f = t_.flags[pos];
    const bool lead = t_.cps[pos] != '\r' && t_.cps[pos] != '\n' && !f.letter() && !f.number();
    if (Word(pos) || (lead && Word(pos + 1))) {
      const size_t p = pos + (lead ? 1 : 0);
      const size_t w = p + Run(p, [this](size_t i) { return Word(i); });
      return w + ContractionAt(t_, w, end_);
    }
    if (f.number()) return MatchNumbersUpTo3(t_, pos, end_);
    const size_t p = pos + (t_.cps[pos] == ' ' && Other(pos + 1) ? 1 : 0);
    if (Other(p)) {
      size_t e = p + Run(p, [this](size_t i) { return Other(i); });
      while (e < end_ && (t_.cps[e] == '\r' || t_.cps[e] == '\n')) ++e;
      return e;
    }
    const size_t spaces = MatchSpaces(t_, pos, end_);
    return spaces > pos ? spaces : pos + 1;
  }

 private:
  bool Word(size_t i) const { return i < end_ && t_.flags[i].letter() && !IsHan(t_.cps[i]); }
  bool Other(size_t i) const {
    if (i >= end_) return false;
    const CodepointFlags f = t_.flags[i];
    return f.any() && !f.whitespace() && !f.letter() && !f.number();
  }
  template <typename F>
  size_t Run(size_t i, F in) const { return RunLength(i, end_, in); }

  const CodepointText& t_;
  size_t end_;
};

}  // namespace

void ScanKimiK2(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  SplitMatches(KimiK2(t, end), begin, end, out);
}

}  // namespace strata::tokenizer
