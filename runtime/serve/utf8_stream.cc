#include "runtime/serve/utf8_stream.h"

#include <cstdint>

namespace strata::serve {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Bytes a sequence starting with `lead` has, and the range its second byte
// must be in (Unicode Table 3-7). 0: `lead` cannot start a sequence.
int SequenceLength(uint8_t lead, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead == 0xE0) { *lo = 0xA0; return 3; }
  if (lead >= 0xE1 && lead <= 0xEC) return 3;
  if (lead == 0xED) { *hi = 0x9F; return 3; }
  if (lead >= 0xEE && lead <= 0xEF) return 3;
  if (lead == 0xF0) { *lo = 0x90; return 4; }
  if (lead >= 0xF1 && lead <= 0xF3) return 4;
  if (lead == 0xF4) { *hi = 0x8F; return 4; }
  return 0;
}

// Decodes `in` into `out`. Returns how many bytes at the end form an
// incomplete but so far well-formed sequence (left unconsumed) when !final.
size_t Decode(std::string_view in, bool final, std::string* out) {
  size_t i = 0;
  const size_t n = in.size();
  while (i < n) {
    const uint8_t lead = static_cast<uint8_t>(in[i]);
    uint8_t lo, hi;
    const int len = SequenceLength(lead, &lo, &hi);
    if (len == 1) {
      out->push_back(static_cast<char>(lead));
      ++i;
      continue;
    }
    if (len == 0) {
      out->append(kReplacement);
      ++i;
      continue;
    }
    // Walk the continuation bytes while they are valid.
    size_t j = i + 1;
    bool ok = true;
    for (int k = 1; k < len; ++k, ++j) {
      if (j >= n) break;  // ran out: incomplete
      const uint8_t b = static_cast<uint8_t>(in[j]);
      const uint8_t min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
      if (b < min || b > max) {
        ok = false;
        break;
      }
    }
    if (!ok) {
      out->append(kReplacement);  // the maximal subpart [i, j); byte j is looked at again
      i = j;
      continue;
    }
    if (j - i < static_cast<size_t>(len)) {  // incomplete at the end of the input
      if (!final) return n - i;
      out->append(kReplacement);
      return 0;
    }
    out->append(in.substr(i, static_cast<size_t>(len)));
    i = j;
  }
  return 0;
}

}  // namespace

std::string Utf8Stream::Push(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  size_t keep = Decode(pending_, /*final=*/false, &out);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string Utf8Stream::Finish() {
  std::string out;
  Decode(pending_, /*final=*/true, &out);
  pending_.clear();
  return out;
}

std::string SanitizeUtf8(std::string_view bytes) {
  Utf8Stream s;
  std::string out = s.Push(bytes);
  return out + s.Finish();
}

}  // namespace strata::serve
