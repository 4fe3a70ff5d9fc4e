#pragma once
// Options of strata-pack that change what is written.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata {

// --decode-copies: which decode copies to write (docs/experts.md).
enum class DecodeCopyType : uint8_t { kNone = 0, kQ8_0 = 1 };

struct PackOptions {
  std::string output;
  bool dry_run = false;               // report fixes and refusals, write nothing
  bool allow_unsafe_fixes = false;    // --allow-unsafe-fixes: apply fixes that are not provably safe
  bool drop_unknown_tensors = false;  // --drop-unknown-tensors: leave out tensors the spec does not know
  // --set KEY=VALUE: metadata overrides, applied before any check (recorded as fixes).
  std::vector<std::pair<std::string, std::string>> overrides;
  // --mtp-from FILE: the MTP block's tensors come from this GGUF (AttachMtpFrom).
  std::string mtp_from;
  bool compress_tokenizer = true;     // zstd-compress large tokenizer sections
  bool probe = true;                  // record a probe (reference-path logits) for strata-validate to replay
  bool profile = true;                // --no-profile: do not measure an expert profile (MoE models)
  std::string calibration;            // --calibration FILE: the profile's corpus (empty: the built-in one)
  uint64_t profile_tokens = 4096;     // --profile-tokens: at most this many corpus tokens are run
  DecodeCopyType decode_copies = DecodeCopyType::kNone;  // --decode-copies q8_0
  int threads = 0;                    // 0: all cores
  // Blob alignment, a power of two >= 128 (the header must fit before the
  // first blob). 4096 lets a serving machine read blobs with direct I/O and
  // map them page by page; smaller values make the small packs that fuzz
  // seeds and tests want. Not a strata-pack flag.
  uint32_t blob_alignment = 4096;

  // The options that change the pack's bytes, as recorded in its provenance.
  std::vector<std::string> Recorded() const;
};

}  // namespace strata
