#pragma once
// Code points, their classes and UTF-8, as llama.cpp's tokenizers see them.
//
// Classes come from utf8proc (Unicode 15.0 in utf8proc 2.8), never from
// hand-written tables. The mapping to llama.cpp's flags (src/unicode.h and
// scripts/gen-unicode-data.py) is:
//   Lu Ll Lt Lm Lo -> letter       Mn Mc Me -> mark       Nd Nl No -> number
//   Pc Pd Ps Pe Pi Pf Po -> punct  Sm Sc Sk So -> symbol  Zs Zl Zp -> separator
//   Cc Cf Cs Co -> control         Cn (unassigned) -> undefined
// and "whitespace" is the Unicode White_Space property, which is exactly
// Zs + Zl + Zp + U+0009..U+000D + U+0085 (llama.cpp lists the same 25 code
// points by hand). llama.cpp generates its tables from whatever UCD was current
// when the file was regenerated; code points assigned after Unicode 15.0 are
// "undefined" here and may be classified there. No test string uses one.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::tokenizer {

struct CodepointFlags {
  enum : uint16_t {
    kUndefined = 1 << 0,
    kNumber = 1 << 1,       // \p{N}
    kLetter = 1 << 2,       // \p{L}
    kSeparator = 1 << 3,    // \p{Z}
    kMark = 1 << 4,         // \p{M}
    kPunctuation = 1 << 5,  // \p{P}
    kSymbol = 1 << 6,       // \p{S}
    kControl = 1 << 7,      // \p{C}
    kWhitespace = 1 << 8,   // \s
  };
  // 0 means "no code point" (a position outside the text being scanned):
  // every real code point has exactly one category bit.
  uint16_t bits = 0;

  bool any() const { return bits != 0; }
  bool letter() const { return bits & kLetter; }
  bool number() const { return bits & kNumber; }
  bool mark() const { return bits & kMark; }
  bool punctuation() const { return bits & kPunctuation; }
  bool symbol() const { return bits & kSymbol; }
  bool control() const { return bits & kControl; }
  bool whitespace() const { return bits & kWhitespace; }
};

inline constexpr uint32_t kReplacementChar = 0xFFFD;

CodepointFlags FlagsOf(uint32_t cp);
// Simple (one-to-one) lowercase mapping; cp itself when there is none.
uint32_t ToLower(uint32_t cp);
// First code point of cp's canonical decomposition (NFD), cp itself if it has
// none. This is what llama.cpp's unicode_cpts_normalize_nfd computes: one code
// point in, one out, the combining marks of the decomposition dropped.
uint32_t NfdFirst(uint32_t cp);

// Length of the UTF-8 sequence a lead byte announces, without validation
// (llama.cpp's unicode_len_utf8: continuation bytes count as 1, F8..FF as 4).
size_t Utf8SeqLen(uint8_t lead);

// Decodes UTF-8 the way llama.cpp's unicode_cpts_from_utf8 does: a sequence
// is accepted if its lead byte and continuation bytes are well formed (overlong
// forms and surrogates included); anything else yields U+FFFD and resumes at
// the next byte. One deliberate difference: a 4-byte sequence decoding above
// U+10FFFF is invalid here too (llama.cpp accepts it and then throws when it
// re-encodes it, failing the whole llama_tokenize call).
std::vector<uint32_t> DecodeUtf8(std::string_view text);
// As DecodeUtf8, also recording the byte offset where each code point starts.
void DecodeUtf8(std::string_view text, std::vector<uint32_t>* cps, std::vector<uint32_t>* byte_offsets);

// REQUIRES: cp <= 0x10FFFF.
void AppendUtf8(uint32_t cp, std::string* out);

// GPT-2's byte-level alphabet: every byte as a printable code point
// (bytes 0x21..0x7E, 0xA1..0xAC, 0xAE..0xFF map to themselves, the other 68
// to U+0100.. in byte order). Returned as its UTF-8 encoding.
std::string_view ByteToUnicode(uint8_t byte);
// Inverse of ByteToUnicode; -1 when cp is not in the alphabet.
int UnicodeToByte(uint32_t cp);

// The Unicode version the classes come from ("15.0.0").
std::string_view UnicodeVersion();

}  // namespace strata::tokenizer
