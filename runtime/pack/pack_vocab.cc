#include "runtime/pack/pack_vocab.h"

#include <xxhash.h>
#include <zstd.h>

#include <cinttypes>
#include <cstring>

#include "runtime/arch/arch_spec.h"
#include "runtime/base/checked_cast.h"
#include "runtime/base/strings.h"

namespace strata {
namespace {

using tokenizer::TokenType;
using tokenizer::Vocab;
using tokenizer::VocabModel;

// Sections smaller than this stay raw: compressing them saves nothing worth a
// decompression call.
constexpr size_t kCompressMin = 4096;
constexpr int kZstdLevel = 9;
constexpr uint64_t kMaxSectionBytes = 1ull << 30;

flatbuffers::Offset<fb::Section> MakeSection(flatbuffers::FlatBufferBuilder& b, const std::vector<uint8_t>& bytes,
                                             bool compress, Status* status) {
  uint64_t xx = XXH3_64bits(bytes.data(), bytes.size());
  if (compress && bytes.size() >= kCompressMin) {
    std::vector<uint8_t> z(ZSTD_compressBound(bytes.size()));
    size_t n = ZSTD_compress(z.data(), z.size(), bytes.data(), bytes.size(), kZstdLevel);
    if (ZSTD_isError(n)) {
      *status = Internal(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
    } else if (n < bytes.size()) {
      auto data = b.CreateVector(z.data(), n);
      return fb::CreateSection(b, fb::SectionEncoding::Zstd, bytes.size(), xx, data);
    }
  }
  auto data = b.CreateVector(bytes);
  return fb::CreateSection(b, fb::SectionEncoding::Raw, bytes.size(), xx, data);
}

template <typename T>
std::vector<uint8_t> AsBytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Strings as one concatenation plus uint32 end offsets. Refuses a total the
// reader would refuse (kMaxSectionBytes), before any offset could wrap.
Status Concat(const std::vector<std::string>& strs, std::string_view what, std::vector<uint8_t>* bytes,
              std::vector<uint8_t>* ends) {
  uint64_t total = 0;
  for (const auto& s : strs) total += s.size();
  if (total > kMaxSectionBytes)
    return InvalidArgument(StrFormat("tokenizer %s: %" PRIu64 " bytes in all; a pack holds at most %" PRIu64,
                                     std::string(what).c_str(), total, kMaxSectionBytes));
  std::vector<uint32_t> e;
  e.reserve(strs.size());
  bytes->reserve(static_cast<size_t>(total));
  for (const auto& s : strs) {
    bytes->insert(bytes->end(), s.begin(), s.end());
    STRATA_ASSIGN_OR_RETURN(uint32_t end, CheckedCast<uint32_t>(uint64_t{bytes->size()}, what, StatusCode::kInternal));
    e.push_back(end);
  }
  *ends = AsBytes(e);
  return Status::Ok();
}

Status SplitStrings(const std::vector<uint8_t>& bytes, const std::vector<uint8_t>& ends_raw, uint32_t count,
                    std::string_view what, std::vector<std::string>* out) {
  if (ends_raw.size() != uint64_t{count} * 4)
    return DataLoss(StrFormat("%s end offsets: expected %u entries, found %zu bytes", std::string(what).c_str(), count,
                              ends_raw.size()));
  out->clear();
  out->reserve(count);
  uint32_t prev = 0;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t end;
    std::memcpy(&end, ends_raw.data() + 4 * i, 4);
    if (end < prev || end > bytes.size())
      return DataLoss(StrFormat("%s %u: end offset %u is before %u or past the %zu bytes", std::string(what).c_str(),
                                i, end, prev, bytes.size()));
    out->emplace_back(reinterpret_cast<const char*>(bytes.data()) + prev, end - prev);
    prev = end;
  }
  if (prev != bytes.size())
    return DataLoss(StrFormat("%s: %zu bytes, but the last entry ends at %u", std::string(what).c_str(), bytes.size(),
                              prev));
  return Status::Ok();
}

std::vector<int32_t> IdList(const flatbuffers::Vector<int32_t>* v) {
  return v ? std::vector<int32_t>(v->begin(), v->end()) : std::vector<int32_t>{};
}

}  // namespace

Result<flatbuffers::Offset<fb::Tokenizer>> BuildTokenizer(flatbuffers::FlatBufferBuilder& b, const Vocab& v,
                                                          bool compress) {
  Status st;
  std::vector<uint8_t> tok_bytes, tok_ends, merge_bytes, merge_ends;
  STRATA_RETURN_IF_ERROR(Concat(v.tokens, "token text", &tok_bytes, &tok_ends));
  STRATA_RETURN_IF_ERROR(Concat(v.merges, "merges", &merge_bytes, &merge_ends));
  std::vector<uint8_t> types(v.types.size());
  for (size_t i = 0; i < v.types.size(); ++i) types[i] = static_cast<uint8_t>(v.types[i]);
  auto s_tok = MakeSection(b, tok_bytes, compress, &st);
  auto s_ends = MakeSection(b, tok_ends, compress, &st);
  auto s_scores = MakeSection(b, AsBytes(v.scores), compress, &st);
  auto s_types = MakeSection(b, types, compress, &st);
  auto s_merges = MakeSection(b, merge_bytes, compress, &st);
  auto s_mends = MakeSection(b, merge_ends, compress, &st);
  STRATA_RETURN_IF_ERROR(st);
  auto model_name = b.CreateString(std::string(tokenizer::VocabModelName(v.model)));
  auto pre = b.CreateString(v.pre);
  auto tmpl = b.CreateString(v.chat_template);
  auto eog = b.CreateVector(v.eog_ids);
  auto lstrip = b.CreateVector(v.lstrip_ids);
  auto rstrip = b.CreateVector(v.rstrip_ids);
  fb::TokenizerBuilder tb(b);
  tb.add_model(static_cast<fb::TokenizerModel>(v.model));
  tb.add_model_name(model_name);
  tb.add_pre(pre);
  tb.add_n_tokens(static_cast<uint32_t>(v.tokens.size()));
  tb.add_token_bytes(s_tok);
  tb.add_token_ends(s_ends);
  tb.add_scores(s_scores);
  tb.add_token_types(s_types);
  tb.add_merge_bytes(s_merges);
  tb.add_merge_ends(s_mends);
  tb.add_n_merges(static_cast<uint32_t>(v.merges.size()));
  tb.add_bos_id(v.special.bos);
  tb.add_eos_id(v.special.eos);
  tb.add_eot_id(v.special.eot);
  tb.add_eom_id(v.special.eom);
  tb.add_unk_id(v.special.unk);
  tb.add_sep_id(v.special.sep);
  tb.add_pad_id(v.special.pad);
  tb.add_cls_id(v.special.cls);
  tb.add_mask_id(v.special.mask);
  tb.add_add_bos(v.add_bos);
  tb.add_add_eos(v.add_eos);
  tb.add_add_sep(v.add_sep);
  tb.add_add_space_prefix(v.add_space_prefix);
  tb.add_remove_extra_whitespaces(v.remove_extra_whitespaces);
  tb.add_chat_template(tmpl);
  tb.add_eog_ids(eog);
  tb.add_lstrip_ids(lstrip);
  tb.add_rstrip_ids(rstrip);
  tb.add_lowercase(v.lowercase);
  tb.add_strip_accents(v.strip_accents);
  return tb.Finish();
}

Result<std::vector<uint8_t>> DecodeSection(const fb::Section* s, std::string_view what, uint64_t max_size) {
  std::string w(what);
  if (!s) return DataLoss("tokenizer section " + w + ": missing");
  if (s->size() > max_size)
    return DataLoss(StrFormat("tokenizer section %s: expected at most %" PRIu64 " bytes, found %" PRIu64, w.c_str(),
                              max_size, s->size()));
  const uint8_t* data = s->data() ? s->data()->data() : nullptr;
  const size_t n = s->data() ? s->data()->size() : 0;
  std::vector<uint8_t> out;
  if (s->encoding() == fb::SectionEncoding::Raw) {
    if (n != s->size())
      return DataLoss(StrFormat("tokenizer section %s: expected %" PRIu64 " raw bytes, found %zu", w.c_str(), s->size(), n));
    out.assign(data, data + n);
  } else if (s->encoding() == fb::SectionEncoding::Zstd) {
    unsigned long long declared = ZSTD_getFrameContentSize(data, n);
    if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN || declared != s->size())
      return DataLoss(StrFormat("tokenizer section %s: expected a zstd frame of %" PRIu64 " bytes, found %s", w.c_str(),
                                s->size(), declared == ZSTD_CONTENTSIZE_ERROR ? "no valid frame" : "another size"));
    out.resize(static_cast<size_t>(s->size()));
    size_t got = ZSTD_decompress(out.data(), out.size(), data, n);
    if (ZSTD_isError(got) || got != s->size())
      return DataLoss(StrFormat("tokenizer section %s: zstd: %s", w.c_str(),
                                ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame"));
  } else {
    return Unsupported(StrFormat("tokenizer section %s: unknown encoding %u", w.c_str(),
                                 static_cast<unsigned>(s->encoding())));
  }
  uint64_t xx = XXH3_64bits(out.data(), out.size());
  if (xx != s->xxh3())
    return DataLoss(StrFormat("tokenizer section %s: checksum: expected XXH3 %016" PRIx64 ", found %016" PRIx64,
                              w.c_str(), s->xxh3(), xx));
  return out;
}

Result<Vocab> VocabFromManifest(const fb::Tokenizer& t, std::string_view name) {
  auto ctx = [&](const Status& s) { return s.WithContext(std::string(name) + ": tokenizer"); };
  Vocab v;
  if (static_cast<uint8_t>(t.model()) > static_cast<uint8_t>(fb::TokenizerModel::Wpm))
    return ctx(Unsupported(StrFormat("tokenizer model id %u is not known to this build", static_cast<unsigned>(t.model()))));
  v.model = static_cast<VocabModel>(t.model());
  v.pre = t.pre() ? t.pre()->str() : "default";
  const uint32_t n = t.n_tokens();
  // The counts bound what the sections below may decompress to, so they are
  // checked first: a tiny zstd frame must not make the reader allocate
  // gigabytes. A vocabulary has at most kMaxVocab tokens (as the packer
  // enforces), and every merge is at least 2 bytes of merge_bytes (a
  // non-empty left side, then the separating space).
  if (n > kMaxVocab) return ctx(DataLoss(StrFormat("n_tokens: expected at most %u, found %u", kMaxVocab, n)));
  auto tok_bytes = DecodeSection(t.token_bytes(), "token_bytes", kMaxSectionBytes);
  if (!tok_bytes.ok()) return ctx(tok_bytes.status());
  auto tok_ends = DecodeSection(t.token_ends(), "token_ends", uint64_t{n} * 4);
  if (!tok_ends.ok()) return ctx(tok_ends.status());
  Status s = SplitStrings(*tok_bytes, *tok_ends, n, "token", &v.tokens);
  if (!s.ok()) return ctx(s);
  auto scores = DecodeSection(t.scores(), "scores", uint64_t{n} * 4);
  if (!scores.ok()) return ctx(scores.status());
  if (!scores->empty()) {
    if (scores->size() != uint64_t{n} * 4)
      return ctx(DataLoss(StrFormat("scores: expected %u floats, found %zu bytes", n, scores->size())));
    v.scores.resize(n);
    std::memcpy(v.scores.data(), scores->data(), scores->size());
  }
  auto types = DecodeSection(t.token_types(), "token_types", n);
  if (!types.ok()) return ctx(types.status());
  if (types->size() != n) return ctx(DataLoss(StrFormat("token_types: expected %u, found %zu", n, types->size())));
  v.types.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint8_t x = (*types)[i];
    if (x > static_cast<uint8_t>(TokenType::kByte))
      return ctx(DataLoss(StrFormat("token_types[%u]: expected 0..6, found %u", i, x)));
    v.types[i] = static_cast<TokenType>(x);
  }
  auto merge_bytes = DecodeSection(t.merge_bytes(), "merge_bytes", kMaxSectionBytes);
  if (!merge_bytes.ok()) return ctx(merge_bytes.status());
  if (uint64_t{t.n_merges()} * 2 > merge_bytes->size())
    return ctx(DataLoss(StrFormat("n_merges: expected at most %zu (2 bytes or more each in %zu bytes of merges), "
                                  "found %u", merge_bytes->size() / 2, merge_bytes->size(), t.n_merges())));
  auto merge_ends = DecodeSection(t.merge_ends(), "merge_ends", uint64_t{t.n_merges()} * 4);
  if (!merge_ends.ok()) return ctx(merge_ends.status());
  s = SplitStrings(*merge_bytes, *merge_ends, t.n_merges(), "merge", &v.merges);
  if (!s.ok()) return ctx(s);
  v.special.bos = t.bos_id();
  v.special.eos = t.eos_id();
  v.special.eot = t.eot_id();
  v.special.eom = t.eom_id();
  v.special.unk = t.unk_id();
  v.special.sep = t.sep_id();
  v.special.pad = t.pad_id();
  v.special.cls = t.cls_id();
  v.special.mask = t.mask_id();
  v.eog_ids = IdList(t.eog_ids());
  v.lstrip_ids = IdList(t.lstrip_ids());
  v.rstrip_ids = IdList(t.rstrip_ids());
  v.add_bos = t.add_bos();
  v.add_eos = t.add_eos();
  v.add_sep = t.add_sep();
  v.add_space_prefix = t.add_space_prefix();
  v.remove_extra_whitespaces = t.remove_extra_whitespaces();
  v.lowercase = t.lowercase();
  v.strip_accents = t.strip_accents();
  v.chat_template = t.chat_template() ? t.chat_template()->str() : "";
  s = tokenizer::ValidateVocab(v);
  if (!s.ok()) return ctx(s);
  return v;
}

}  // namespace strata
