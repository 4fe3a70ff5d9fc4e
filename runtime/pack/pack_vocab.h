#pragma once
// The tokenizer in a pack: tokenizer::Vocab <-> the manifest's Tokenizer
// table (docs/pack-format.md 4.3). Large vectors are Sections, zstd-compressed
// when that makes them smaller; every section carries the XXH3 of its
// decoded bytes and its decoded size, both checked on load.

#include <flatbuffers/flatbuffers.h>

#include "runtime/base/status.h"
#include "runtime/tokenizer/vocab.h"
#include "schema/strata_pack_generated.h"

namespace strata {

// Packer side.
Result<flatbuffers::Offset<fb::Tokenizer>> BuildTokenizer(flatbuffers::FlatBufferBuilder& b,
                                                          const tokenizer::Vocab& vocab, bool compress);

// Runtime side: decodes and checks every section (size, checksum, offsets),
// then runs tokenizer::ValidateVocab. `name` appears in errors.
Result<tokenizer::Vocab> VocabFromManifest(const fb::Tokenizer& t, std::string_view name);

// Decodes one section (Raw or Zstd), checking size and checksum.
Result<std::vector<uint8_t>> DecodeSection(const fb::Section* s, std::string_view what, uint64_t max_size);

}  // namespace strata
