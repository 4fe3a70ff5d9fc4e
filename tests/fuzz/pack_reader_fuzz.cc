// libFuzzer target: the runtime's pack reader, the tokenizer sections and
// the validator's byte checks, the expert profile summary and heat map, on
// arbitrary bytes. Seeded with real packs
// (scripts/fuzz.sh packs the conformance fixtures first). No input may crash,
// hang, leak or trip a sanitizer; if Open accepts, every tensor view must lie
// inside the input.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/pack/pack_reader.h"
#include "runtime/pack/pack_vocab.h"
#include "validate/profile_svg.h"
#include "validate/validator.h"

namespace {

void Check(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  auto pack = strata::Pack::FromBytes("fuzz-input", bytes);
  if (!pack.ok()) return;
  const strata::Pack& p = **pack;
  for (const auto& t : p.tensors()) {
    if (t.data.data() < data || t.data.data() + t.data.size() > data + size) std::abort();
    if (!t.data.empty()) {
      volatile uint8_t first = t.data.front(), last = t.data.back();
      (void)first;
      (void)last;
    }
  }
  (void)p.VerifyChecksums(1);
  // An accepted profile is consistent: summaries and the heat map must not misbehave on it.
  if (const strata::ExpertProfile* prof = p.expert_profile()) {
    (void)strata::OverallTopMassShare(*prof, 0.25);
    (void)strata::ExpertProfileSvg(*prof, "fuzz");
  }
  // An accepted decode copy belongs to its tensor and has its shape.
  for (const auto& t : p.tensors()) {
    if (t.decode_copy < 0) continue;
    const auto& c = p.tensors()[static_cast<size_t>(t.decode_copy)];
    if (!c.is_decode_copy || c.shape != t.shape || c.data.size() != c.row_bytes * c.rows()) std::abort();
  }
  auto vocab = strata::VocabFromManifest(*p.manifest().tokenizer(), "fuzz-input");
  (void)vocab;
  std::vector<std::pair<uint64_t, uint64_t>> used;
  (void)strata::CheckZeroBytes(bytes, strata::pack::kHeaderSize, used);
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Check(data, size);
  // Again with both checksums made right, so mutations reach the manifest's
  // semantic checks instead of stopping at a checksum mismatch.
  namespace off = strata::pack::off;
  if (size < strata::pack::kHeaderSize) return 0;
  std::vector<uint8_t> fixed(data, data + size);
  uint64_t mo = Load<uint64_t>(data + off::kManifestOffset), ms = Load<uint64_t>(data + off::kManifestSize);
  if (mo <= size && ms <= size - mo) {
    uint64_t x = strata::pack::Xxh3({fixed.data() + mo, static_cast<size_t>(ms)});
    std::memcpy(fixed.data() + off::kManifestXxh3, &x, 8);
  }
  uint64_t h = strata::pack::Xxh3({fixed.data(), off::kHeaderXxh3});
  std::memcpy(fixed.data() + off::kHeaderXxh3, &h, 8);
  Check(fixed.data(), fixed.size());
  return 0;
}
