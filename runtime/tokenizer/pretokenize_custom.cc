// The GPT-2 and Llama-3 family splitters. They follow llama.cpp's hand-written
// state machines branch for branch (src/unicode.cpp, unicode_regex_split_custom_
// gpt2 / llama3 / qwen2 / qwen35), including where those differ from a regex
// engine, e.g. the punctuation branch of the Llama-3 family testing the flags
// of the current code point rather than of the one after an optional space.

#include "runtime/tokenizer/pretokenize_scanners.h"

namespace strata::tokenizer {
namespace {

constexpr uint32_t kOutOfRange = 0xFFFFFFFF;

// The view a splitter has of one piece: code points and flags inside
// [begin, end), "nothing" (kOutOfRange, flags 0) outside.
class Window {
 public:
  Window(const CodepointText& t, size_t begin, size_t end, PieceLengths* out)
      : t_(t), begin_(begin), end_(end), prev_end_(begin), out_(out) {}

  size_t end() const { return end_; }
  uint32_t cp(size_t pos) const { return pos >= begin_ && pos < end_ ? t_.cps[pos] : kOutOfRange; }
  CodepointFlags flags(size_t pos) const { return pos >= begin_ && pos < end_ ? t_.flags[pos] : CodepointFlags{}; }
  // Ends the current piece at `at` (nothing if empty); returns its length.
  size_t Emit(size_t at) {
    size_t len = at - prev_end_;
    if (len > 0) out_->push_back(static_cast<uint32_t>(len));
    prev_end_ = at;
    return len;
  }

 private:
  const CodepointText& t_;
  size_t begin_, end_, prev_end_;
  PieceLengths* out_;
};

bool IsCrLf(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// Length of a contraction ('s 't 'm 'd 're 've 'll) starting at pos, else 0.
size_t Contraction(const Window& w, size_t pos, bool case_insensitive) {
  if (w.cp(pos) != '\'' || pos + 1 >= w.end()) return 0;
  auto fold = [&](uint32_t c) { return case_insensitive ? ToLower(c) : c; };
  uint32_t c1 = fold(w.cp(pos + 1));
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= w.end()) return 0;
  uint32_t c2 = fold(w.cp(pos + 2));
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// \s+(?!\S) then \s+ (and, when cut_at_newline, \s*[\r\n]+ first) at pos.
// Returns the end of the whitespace piece, or pos if there is no whitespace.
size_t WhitespacePiece(const Window& w, size_t pos, bool cut_at_newline) {
  size_t n = 0;
  size_t last_newline_end = 0;
  while (w.flags(pos + n).whitespace()) {
    if (IsCrLf(w.cp(pos + n))) last_newline_end = pos + n + 1;
    ++n;
  }
  if (cut_at_newline && last_newline_end > 0) return last_newline_end;
  if (n > 1 && w.cp(pos + n) != kOutOfRange) return pos + n - 1;  // leave one for the next word
  return pos + n;
}

struct Llama3Options {
  size_t max_digits;   // \p{N}{1,3} -> 3, \p{N} -> 1
  bool marks_in_words;  // Qwen3.5: [\p{L}\p{M}]+ and [^\s\p{L}\p{M}\p{N}]
};

void ScanLlama3Family(const CodepointText& t, size_t begin, size_t end, PieceLengths* out,
                      Llama3Options opt) {
  Window w(t, begin, end, out);
  const auto word = [&](CodepointFlags f) { return f.letter() || (opt.marks_in_words && f.mark()); };
  const auto not_punct = [&](CodepointFlags f) {
    return f.whitespace() || f.letter() || f.number() || (opt.marks_in_words && f.mark());
  };
  for (size_t pos = begin; pos < end;) {
    const uint32_t cp = w.cp(pos);
    const CodepointFlags f = w.flags(pos);

    if (size_t n = Contraction(w, pos, /*case_insensitive=*/true)) {
      pos += w.Emit(pos + n);
      continue;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+  (Qwen3.5: [\p{L}\p{M}]+)
    if (!(IsCrLf(cp) || f.number()) && (word(f) || word(w.flags(pos + 1)))) {
      ++pos;
      while (word(w.flags(pos))) ++pos;
      w.Emit(pos);
      continue;
    }
    // \p{N}{1,max_digits}
    if (f.number()) {
      size_t group_start = pos;
      while (w.flags(pos).number()) {
        if (++pos - group_start >= opt.max_digits) {
          w.Emit(pos);
          group_start = pos;
        }
      }
      w.Emit(pos);
      continue;
    }
    // " ?[^\s\p{L}\p{N}]+[\r\n]*" - llama.cpp requires the *current* code point to exist.
    CodepointFlags f2 = cp == ' ' ? w.flags(pos + 1) : f;
    if (!not_punct(f2) && f.any()) {
      pos += (cp == ' ');
      while (!not_punct(f2) && f2.any()) f2 = w.flags(++pos);
      while (IsCrLf(w.cp(pos))) ++pos;
      w.Emit(pos);
      continue;
    }
    size_t ws_end = WhitespacePiece(w, pos, /*cut_at_newline=*/true);
    if (ws_end > pos) {
      pos = ws_end;
      w.Emit(pos);
      continue;
    }
    w.Emit(++pos);  // nothing matched: one code point
  }
}

}  // namespace

void ScanGpt2(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  Window w(t, begin, end, out);
  for (size_t pos = begin; pos < end;) {
    const uint32_t cp = w.cp(pos);
    if (size_t n = Contraction(w, pos, /*case_insensitive=*/false)) {
      pos += w.Emit(pos + n);
      continue;
    }
    CodepointFlags f2 = cp == ' ' ? w.flags(pos + 1) : w.flags(pos);
    if (f2.letter()) {  // " ?\p{L}+"
      pos += (cp == ' ');
      while (f2.letter()) f2 = w.flags(++pos);
      w.Emit(pos);
      continue;
    }
    if (f2.number()) {  // " ?\p{N}+"
      pos += (cp == ' ');
      while (f2.number()) f2 = w.flags(++pos);
      w.Emit(pos);
      continue;
    }
    const auto punct = [](CodepointFlags f) { return !(f.whitespace() || f.letter() || f.number()) && f.any(); };
    if (punct(f2)) {  // " ?[^\s\p{L}\p{N}]+"
      pos += (cp == ' ');
      while (punct(f2)) f2 = w.flags(++pos);
      w.Emit(pos);
      continue;
    }
    size_t ws_end = WhitespacePiece(w, pos, /*cut_at_newline=*/false);
    if (ws_end > pos) {
      pos = ws_end;
      w.Emit(pos);
      continue;
    }
    w.Emit(++pos);
  }
}

void ScanLlama3(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  ScanLlama3Family(t, begin, end, out, {.max_digits = 3, .marks_in_words = false});
}

void ScanQwen2(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  ScanLlama3Family(t, begin, end, out, {.max_digits = 1, .marks_in_words = false});
}

void ScanQwen35(const CodepointText& t, size_t begin, size_t end, PieceLengths* out) {
  ScanLlama3Family(t, begin, end, out, {.max_digits = 1, .marks_in_words = true});
}

}  // namespace strata::tokenizer
