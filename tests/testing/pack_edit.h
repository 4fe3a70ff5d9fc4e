#pragma once
// Test helpers that make packs and edit them: rewrite a pack's manifest
// through the FlatBuffers object API (keeping the header's checksums right,
// so the reader's semantic checks are what catches the edit).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "packer/packer.h"
#include "runtime/base/status.h"
#include "schema/strata_pack_generated.h"

namespace strata::testing {

// Packs a GGUF (one path or a split's first shard) to `out`. Fails the
// status on an error or a refusal. Options that leave --profile-tokens at its
// default get kTestProfileTokens instead: every test pack still carries a
// profile, at an eighth of the cost (which matters under ASan); tests of the
// profile set their own budget.
inline constexpr uint64_t kTestProfileTokens = 512;
Result<PackResult> PackFile(const std::string& gguf, const std::string& out, PackOptions options = {});

std::vector<uint8_t> ReadBytes(const std::string& path);
// A file of little-endian F32 values (strata-run --logits-out).
std::vector<float> ReadF32(const std::string& path);
Status WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes);

// Reads `in`, applies `edit` to its manifest, writes `out` with a correct
// header (manifest size and both checksums recomputed).
Status RewriteManifest(const std::string& in, const std::string& out, const std::function<void(fb::ManifestT&)>& edit);

// Recomputes the header checksum of pack bytes after a header field was changed on purpose.
void FixHeaderChecksum(std::vector<uint8_t>& bytes);

}  // namespace strata::testing
