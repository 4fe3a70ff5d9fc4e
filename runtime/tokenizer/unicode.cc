#include "runtime/tokenizer/unicode.h"

#include <utf8proc.h>

#include <array>

namespace strata::tokenizer {
namespace {

uint16_t CategoryBit(utf8proc_category_t c) {
  switch (c) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return CodepointFlags::kLetter;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return CodepointFlags::kMark;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return CodepointFlags::kNumber;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return CodepointFlags::kPunctuation;
    case UTF8PROC_CATEGORY_SM:
    case UTF8PROC_CATEGORY_SC:
    case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      return CodepointFlags::kSymbol;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return CodepointFlags::kSeparator;
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
      return CodepointFlags::kControl;
    case UTF8PROC_CATEGORY_CN:
      break;
  }
  return CodepointFlags::kUndefined;
}

CodepointFlags ComputeFlags(uint32_t cp) {
  if (cp > 0x10FFFF) return CodepointFlags{CodepointFlags::kUndefined};
  auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  uint16_t bits = CategoryBit(cat);
  // White_Space = the Z categories plus these six C0/C1 controls.
  if ((bits & CodepointFlags::kSeparator) || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85)
    bits |= CodepointFlags::kWhitespace;
  return CodepointFlags{bits};
}

struct AsciiFlags {
  std::array<CodepointFlags, 128> table;
  AsciiFlags() {
    for (uint32_t c = 0; c < 128; ++c) table[c] = ComputeFlags(c);
  }
};

struct ByteAlphabet {
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 324> from_cp;  // code points used are < 0x144
  ByteAlphabet() {
    from_cp.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
      AppendUtf8(cp, &to_utf8[b]);
      from_cp[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& Alphabet() {
  static const ByteAlphabet kAlphabet;
  return kAlphabet;
}

}  // namespace

CodepointFlags FlagsOf(uint32_t cp) {
  static const AsciiFlags kAscii;
  if (cp < 128) return kAscii.table[cp];
  return ComputeFlags(cp);
}

uint32_t ToLower(uint32_t cp) {
  if (cp > 0x10FFFF) return cp;
  if (cp < 128) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

uint32_t NfdFirst(uint32_t cp) {
  if (cp < 0x80 || cp > 0x10FFFF) return cp;  // ASCII never decomposes
  // Canonical decompositions are at most 4 code points long; utf8proc writes
  // what fits and returns the full length, so buf[0] is valid whenever n >= 1.
  utf8proc_int32_t buf[16];
  int last_boundclass = 0;
  utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 16,
                                               UTF8PROC_DECOMPOSE, &last_boundclass);
  if (n <= 0) return cp;
  return static_cast<uint32_t>(buf[0]);
}

size_t Utf8SeqLen(uint8_t lead) {
  static constexpr uint8_t kLookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLookup[lead >> 4];
}

namespace {

// One code point at text[*pos], advancing *pos; U+FFFD and one byte on error.
uint32_t DecodeOne(std::string_view text, size_t* pos) {
  const size_t i = *pos;
  const size_t n = text.size();
  const auto b = [&](size_t k) { return static_cast<uint8_t>(text[i + k]); };
  const auto cont = [&](size_t k) { return i + k < n && (b(k) & 0xC0) == 0x80; };
  const uint8_t c0 = b(0);
  if (c0 < 0x80) {
    *pos = i + 1;
    return c0;
  }
  uint32_t cp = kReplacementChar;
  size_t len = 1;
  if ((c0 & 0xE0) == 0xC0) {
    if (cont(1)) cp = ((c0 & 0x1Fu) << 6) | (b(1) & 0x3Fu), len = 2;
  } else if ((c0 & 0xF0) == 0xE0) {
    if (cont(1) && cont(2)) cp = ((c0 & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu), len = 3;
  } else if ((c0 & 0xF8) == 0xF0) {
    if (cont(1) && cont(2) && cont(3)) {
      uint32_t v = ((c0 & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) | (b(3) & 0x3Fu);
      if (v <= 0x10FFFF) cp = v, len = 4;
    }
  }
  *pos = i + len;
  return cp;
}

}  // namespace

std::vector<uint32_t> DecodeUtf8(std::string_view text) {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) cps.push_back(DecodeOne(text, &pos));
  return cps;
}

void DecodeUtf8(std::string_view text, std::vector<uint32_t>* cps, std::vector<uint32_t>* byte_offsets) {
  cps->clear();
  byte_offsets->clear();
  cps->reserve(text.size());
  byte_offsets->reserve(text.size() + 1);
  size_t pos = 0;
  while (pos < text.size()) {
    byte_offsets->push_back(static_cast<uint32_t>(pos));
    cps->push_back(DecodeOne(text, &pos));
  }
  byte_offsets->push_back(static_cast<uint32_t>(pos));
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string_view ByteToUnicode(uint8_t byte) { return Alphabet().to_utf8[byte]; }

int UnicodeToByte(uint32_t cp) {
  const auto& a = Alphabet();
  return cp < a.from_cp.size() ? a.from_cp[cp] : -1;
}

std::string_view UnicodeVersion() { return utf8proc_unicode_version(); }

}  // namespace strata::tokenizer
