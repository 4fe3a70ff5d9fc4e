#pragma once
// The scanners behind each split expression (internal to pretokenize.cc).
//
// A scanner looks at code points [begin, end) of a CodepointText and appends
// the lengths (in code points) of the consecutive pieces that cover the range
// exactly, matches and the gaps between them alike. Code points outside
// [begin, end) are invisible to it, as they are to llama.cpp's splitters.
// Every scanner is O(end - begin) time and uses no recursion.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/tokenizer/unicode.h"

namespace strata::tokenizer {

struct CodepointText {
  std::vector<uint32_t> cps;
  std::vector<CodepointFlags> flags;
};

using PieceLengths = std::vector<uint32_t>;
using Scanner = void (*)(const CodepointText& text, size_t begin, size_t end, PieceLengths* out);

// llama.cpp's hand-written splitters (src/unicode.cpp unicode_regex_split_custom_*):
//   GPT-2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   Llama-3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//            ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   Qwen2:   as Llama-3 with \p{N} (one digit per piece)
//   Qwen3.5: as Qwen2 with [\p{L}\p{M}]+ letter runs and [^\s\p{L}\p{M}\p{N}] punctuation
void ScanGpt2(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);
void ScanLlama3(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);
void ScanQwen2(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);
void ScanQwen35(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);

// Expressions llama.cpp runs through std::regex. Their exact ECMAScript
// semantics on llama.cpp's "collapsed" text (each non-ASCII code point stood
// in for by one byte per class; non-ASCII whitespace by \v) are reproduced:
// \s is White_Space, \p{L}/\p{N}/\p{P} are the Unicode classes, and literal
// character sets are compared after non-ASCII whitespace became \v.
void ScanEachNewline(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);     // [\r\n]
void ScanNumberRun(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);       // \p{N}+
void ScanNumberEach(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);      // \p{N}
void ScanThreeDigits(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);     // [0-9][0-9][0-9]
void ScanSpaceLetterRun(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);  // \s?\p{L}+
void ScanSpacePunctRun(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);   // \s?\p{P}+
void ScanFalconPunctRun(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);  // [\p{P}\$\+<=>\^~\|`]+
void ScanDefaultPunctRun(const CodepointText& t, size_t begin, size_t end, PieceLengths* out); // [\p{P}\$\+<=>\^~\|]+
void ScanTrailingSpace(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);   // \s+$
// gpt-4o's (o200k) expression, case-split words with contractions (pretokenize_classes.cc).
void ScanGpt4o(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);
// DeepSeek's literal character sets (see pretokenize_sets.cc).
void ScanDeepseekLetters(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);  // \s?[A-Za-zµÀ-Ö...]+
void ScanDeepseekPunct(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);    // \s?[!-/:-~！-／...]+
void ScanDeepseekCjk(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);      // [一-龥ࠀ-一가-퟿]+
// deepseek-v3's three expressions (pretokenize_classes.cc).
void ScanNumbersUpTo3(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);     // \p{N}{1,3}
void ScanDeepseekV3Cjk(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);    // [一-龥぀-ゟ゠-ヿ]+
void ScanDeepseekV3(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);       // see there
// kimi-k2's hand-written splitter in llama.cpp (pretokenize_classes.cc).
void ScanKimiK2(const CodepointText& t, size_t begin, size_t end, PieceLengths* out);

}  // namespace strata::tokenizer
