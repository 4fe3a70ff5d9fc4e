#include "packer/tokenizer_import.h"

#include <cctype>
#include <cinttypes>
#include <optional>
#include <unordered_map>

#include "packer/tokenizer_fixups.h"
#include "runtime/base/strings.h"
#include "runtime/tokenizer/pretokenize.h"

namespace strata {
namespace {

using gguf::KeyValue;
using gguf::Value;
using gguf::ValueType;
using tokenizer::kNoToken;
using tokenizer::TokenType;
using tokenizer::Vocab;
using tokenizer::VocabModel;

constexpr const char* kModelKey = "tokenizer.ggml.model";
constexpr const char* kPreKey = "tokenizer.ggml.pre";
constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
constexpr const char* kScoresKey = "tokenizer.ggml.scores";
constexpr const char* kTypesKey = "tokenizer.ggml.token_type";
constexpr const char* kMergesKey = "tokenizer.ggml.merges";

// Typed access to the metadata of one GGUF, with errors in CorruptAt form.
class Metadata {
 public:
  explicit Metadata(const gguf::GgufModel& m)
      : m_(m), file_(m.shard(0).path), base_(m.shard(0).file.data()), size_(m.shard(0).file.size()) {}

  const std::string& file() const { return file_; }
  const KeyValue* Find(std::string_view key) const { return m_.Find(key); }

  Status WrongType(const KeyValue& kv, std::string_view expected) const {
    return CorruptAt(file_, kv.value.offset, kv.key, expected, kv.value.TypeString());
  }
  Status Bad(const KeyValue& kv, uint64_t offset, std::string_view field, std::string_view expected,
             std::string_view found) const {
    return CorruptAt(file_, offset, std::string(kv.key) + std::string(field), expected, found);
  }

  Result<std::optional<std::string_view>> String(std::string_view key) const {
    const KeyValue* kv = Find(key);
    if (!kv) return std::optional<std::string_view>();
    if (kv->value.type != ValueType::kString) return WrongType(*kv, "string");
    return std::optional<std::string_view>(kv->value.str);
  }

  // Overwrites *out only when the key is present.
  Status Bool(std::string_view key, bool* out) const {
    const KeyValue* kv = Find(key);
    if (!kv) return Status::Ok();
    if (kv->value.type != ValueType::kBool) return WrongType(*kv, "bool");
    *out = kv->value.u64 != 0;
    return Status::Ok();
  }

  // An array whose elements are one of `elems`; nullptr when absent.
  Result<const KeyValue*> Array(std::string_view key, std::initializer_list<ValueType> elems,
                                std::string_view expected) const {
    const KeyValue* kv = Find(key);
    if (!kv) return static_cast<const KeyValue*>(nullptr);
    if (!kv->value.is_array()) return WrongType(*kv, expected);
    for (ValueType t : elems)
      if (kv->value.elem_type == t) return kv;
    return WrongType(*kv, expected);
  }

  // Byte offset of element i of an array value (its length field for strings).
  uint64_t ElementOffset(const Value& v, uint64_t i) const {
    const uint8_t* p = nullptr;
    if (v.elem_type == ValueType::kString) {
      if (i < v.strings.size()) p = reinterpret_cast<const uint8_t*>(v.strings[i].data()) - 8;
    } else if (v.elems) {
      p = v.elems + i * gguf::ScalarSize(v.elem_type);
    }
    if (p && p >= base_ && p < base_ + size_) return static_cast<uint64_t>(p - base_);
    return v.offset;
  }

 private:
  const gguf::GgufModel& m_;
  std::string file_;
  const uint8_t* base_;
  uint64_t size_;
};

void Warn(std::vector<std::string>* w, std::string msg) {
  if (w) w->push_back(std::move(msg));
}

// Model kind and llama.cpp's per-model defaults.
Status ReadModel(const Metadata& md, Vocab* v, bool* is_none) {
  STRATA_ASSIGN_OR_RETURN(auto model, md.String(kModelKey));
  if (!model) return NotFound(md.file() + ": " + kModelKey + ": expected the tokenizer model, found no such key");
  *is_none = false;
  auto& s = v->special;
  if (*model == "llama") {
    v->model = VocabModel::kSpm;
    s.bos = 1, s.eos = 2, s.unk = 0;
    v->add_space_prefix = true;
    v->add_bos = true;
  } else if (*model == "gpt2") {
    v->model = VocabModel::kBpe;
    s.bos = 11, s.eos = 11;
  } else if (*model == "bert") {
    v->model = VocabModel::kWpm;
    s.bos = 101, s.unk = 100, s.sep = 102, s.pad = 0, s.mask = 103;
    v->add_bos = true;
    v->add_sep = true;
  } else if (*model == "no_vocab" || *model == "none") {
    v->model = VocabModel::kNone;
    *is_none = true;
  } else {
    const KeyValue* kv = md.Find(kModelKey);
    return Status(StatusCode::kUnsupported,
                  CorruptAt(md.file(), kv->value.offset, kModelKey, "one of llama, gpt2, bert, no_vocab, none",
                            "\"" + Printable(*model) + "\" (a tokenizer Strata does not implement)")
                      .message());
  }
  return Status::Ok();
}

Status ReadPre(const Metadata& md, Vocab* v, std::vector<std::string>* warnings) {
  STRATA_ASSIGN_OR_RETURN(auto pre, md.String(kPreKey));
  if (v->model != VocabModel::kBpe) {
    // Only BPE vocabularies have pre-tokenizers; the name is kept for reference.
    v->pre = pre ? std::string(*pre) : "default";
    return Status::Ok();
  }
  if (!pre) {
    Warn(warnings, std::string(kPreKey) +
                       " is missing: using the 'default' pre-tokenizer, as llama.cpp does (it warns that "
                       "generation quality will be degraded; consider re-converting the model)");
    v->pre = "default";
  } else {
    v->pre = std::string(*pre);
  }
  const auto* info = tokenizer::FindPreTokenizer(v->pre);
  if (!info) {
    const KeyValue* kv = md.Find(kPreKey);
    std::string known;
    for (const auto& p : tokenizer::AllPreTokenizers()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    return Status(StatusCode::kUnsupported,
                  CorruptAt(md.file(), kv->value.offset, kPreKey, "a known pre-tokenizer (" + known + ")",
                            "\"" + Printable(v->pre) + "\"")
                      .message());
  }
  v->add_bos = info->add_bos;
  v->add_sep = info->add_sep;
  if (info->drop_default_bos) v->special.bos = kNoToken;
  return Status::Ok();
}

Status ReadTokens(const Metadata& md, Vocab* v, std::vector<std::string>* warnings) {
  STRATA_ASSIGN_OR_RETURN(const KeyValue* kv, md.Array(kTokensKey, {ValueType::kString}, "array[string]"));
  if (!kv) return NotFound(md.file() + ": " + kTokensKey + ": expected the token list, found no such key");
  const Value& val = kv->value;
  if (val.count == 0) return md.Bad(*kv, val.offset, "", "at least one token", "an empty array");
  if (val.count > static_cast<uint64_t>(INT32_MAX))
    return md.Bad(*kv, val.offset, "", StrFormat("at most %d tokens", INT32_MAX), StrFormat("%" PRIu64, val.count));
  v->tokens.reserve(val.strings.size());
  std::unordered_map<std::string_view, int32_t> seen;
  seen.reserve(val.strings.size());
  for (size_t i = 0; i < val.strings.size(); ++i) {
    std::string text(val.strings[i]);
    if (text.empty()) {
      text = "[EMPTY_" + std::to_string(i) + "]";
      Warn(warnings, StrFormat("%s[%zu] is empty: named \"%s\", as llama.cpp does", kTokensKey, i, text.c_str()));
    }
    v->tokens.push_back(std::move(text));
  }
  for (size_t i = 0; i < v->tokens.size(); ++i) {
    auto [it, inserted] = seen.emplace(v->tokens[i], static_cast<int32_t>(i));
    if (!inserted)
      return md.Bad(*kv, md.ElementOffset(val, i), StrFormat("[%zu]", i), "unique token texts",
                    StrFormat("\"%s\", the text of token %d too", Printable(v->tokens[i]).c_str(), it->second));
  }
  return Status::Ok();
}

// A BYTE token must read <0xHH> (llama.cpp parses the two hex digits blindly).
Status CheckByteToken(const Metadata& md, const KeyValue& types, const Vocab& v, uint64_t i) {
  const std::string& t = v.tokens[i];
  const auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  const std::string field = StrFormat("[%" PRIu64 "]", i);
  if (v.model == VocabModel::kWpm)
    return md.Bad(types, md.ElementOffset(types.value, i), field, "no BYTE tokens in a bert vocabulary",
                  "BYTE for \"" + Printable(t) + "\"");
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || !hex(t[3]) || !hex(t[4]) || t[5] != '>')
    return md.Bad(types, md.ElementOffset(types.value, i), field, "BYTE only for a token reading <0xHH>",
                  "BYTE for \"" + Printable(t) + "\"");
  return Status::Ok();
}

Status ReadScoresAndTypes(const Metadata& md, Vocab* v, std::vector<std::string>* warnings) {
  const uint64_t n = v->tokens.size();
  STRATA_ASSIGN_OR_RETURN(const KeyValue* sc,
                          md.Array(kScoresKey, {ValueType::kF32, ValueType::kI32}, "array[f32] (or array[i32])"));
  if (sc) {
    if (sc->value.count < n)
      return md.Bad(*sc, sc->value.offset, "", StrFormat("at least one score per token (%" PRIu64 ")", n),
                    StrFormat("%" PRIu64 " scores", sc->value.count));
    v->scores.resize(n);
    for (uint64_t i = 0; i < n; ++i) v->scores[i] = static_cast<float>(sc->value.FloatAt(i));
  }
  STRATA_ASSIGN_OR_RETURN(const KeyValue* ty, md.Array(kTypesKey, {ValueType::kI32}, "array[i32]"));
  v->types.assign(n, TokenType::kNormal);
  if (ty) {
    if (ty->value.count < n)
      return md.Bad(*ty, ty->value.offset, "", StrFormat("at least one type per token (%" PRIu64 ")", n),
                    StrFormat("%" PRIu64 " types", ty->value.count));
    uint64_t undefined = 0;
    for (uint64_t i = 0; i < n; ++i) {
      int64_t t = ty->value.IntAt(i).value_or(0);  // array[i32]: always a whole int64
      if (t == static_cast<int64_t>(TokenType::kByte)) STRATA_RETURN_IF_ERROR(CheckByteToken(md, *ty, *v, i));
      if (t >= 1 && t <= 6) {
        v->types[i] = static_cast<TokenType>(t);
      } else {
        v->types[i] = TokenType::kUndefined;
        if (t != 0) ++undefined;
      }
    }
    if (undefined)
      Warn(warnings, StrFormat("%s: %" PRIu64 " values outside 1..6 read as UNDEFINED, as llama.cpp does",
                               kTypesKey, undefined));
  }
  return Status::Ok();
}

Status ReadMerges(const Metadata& md, Vocab* v) {
  STRATA_ASSIGN_OR_RETURN(const KeyValue* kv, md.Array(kMergesKey, {ValueType::kString}, "array[string]"));
  if (v->model != VocabModel::kBpe) return Status::Ok();
  if (!kv) return NotFound(md.file() + ": " + kMergesKey + ": expected BPE merges (gpt2 model), found no such key");
  std::unordered_map<std::string_view, int32_t> ids;
  ids.reserve(v->tokens.size());
  for (size_t i = 0; i < v->tokens.size(); ++i) ids.emplace(v->tokens[i], static_cast<int32_t>(i));
  const Value& val = kv->value;
  v->merges.reserve(val.strings.size());
  for (size_t i = 0; i < val.strings.size(); ++i) {
    std::string_view m = val.strings[i];
    size_t space = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
    const std::string field = StrFormat("[%zu]", i);
    if (space == std::string_view::npos)
      return md.Bad(*kv, md.ElementOffset(val, i), field, "\"left right\"",
                    "\"" + Printable(m) + "\" (no separating space)");
    for (std::string_view part : {m.substr(0, space), m.substr(space + 1)}) {
      if (!ids.contains(part))
        return md.Bad(*kv, md.ElementOffset(val, i), field, "a merge of two known tokens",
                      "\"" + Printable(m) + "\", whose \"" + Printable(part) + "\" is not a token");
    }
    v->merges.emplace_back(m);
  }
  return Status::Ok();
}

// A token id key: any integer type. Returns nullopt when absent; an id out of
// range is reported and also nullopt.
Result<std::optional<int32_t>> ReadId(const Metadata& md, std::string_view key, int32_t n_tokens,
                                      std::vector<std::string>* warnings, int32_t fallback) {
  const KeyValue* kv = md.Find(key);
  if (!kv) return std::optional<int32_t>();
  if (!kv->value.is_integer()) return md.WrongType(*kv, "an integer token id");
  bool negative = kv->value.is_signed_integer() && kv->value.i64 < 0;
  if (negative || kv->value.u64 >= static_cast<uint64_t>(n_tokens)) {
    Warn(warnings, StrFormat("%s = %s is outside the vocabulary (0..%d): ignored, keeping %d, as llama.cpp does",
                             std::string(key).c_str(), kv->value.Describe().c_str(), n_tokens - 1, fallback));
    return std::optional<int32_t>();
  }
  return std::optional<int32_t>(static_cast<int32_t>(kv->value.u64));
}

Status ReadSpecialIds(const Metadata& md, Vocab* v, FimTokenIds* fim, std::vector<std::string>* warnings) {
  const int32_t n = v->n_tokens();
  struct IdKey {
    const char* key;
    int32_t* id;
  };
  auto& s = v->special;
  const IdKey keys[] = {
      {"tokenizer.ggml.bos_token_id", &s.bos},          {"tokenizer.ggml.eos_token_id", &s.eos},
      {"tokenizer.ggml.eot_token_id", &s.eot},          {"tokenizer.ggml.eom_token_id", &s.eom},
      {"tokenizer.ggml.unknown_token_id", &s.unk},      {"tokenizer.ggml.seperator_token_id", &s.sep},
      {"tokenizer.ggml.padding_token_id", &s.pad},      {"tokenizer.ggml.cls_token_id", &s.cls},
      {"tokenizer.ggml.mask_token_id", &s.mask},        {"tokenizer.ggml.fim_pre_token_id", &fim->pre},
      {"tokenizer.ggml.fim_suf_token_id", &fim->suf},   {"tokenizer.ggml.fim_mid_token_id", &fim->mid},
      {"tokenizer.ggml.fim_pad_token_id", &fim->pad},   {"tokenizer.ggml.fim_rep_token_id", &fim->rep},
      {"tokenizer.ggml.fim_sep_token_id", &fim->sep},   {"tokenizer.ggml.prefix_token_id", &fim->pre},
      {"tokenizer.ggml.suffix_token_id", &fim->suf},    {"tokenizer.ggml.middle_token_id", &fim->mid},
  };
  for (const IdKey& k : keys) {
    if (*k.id != kNoToken && *k.id >= n) {
      Warn(warnings, StrFormat("default %s = %d is outside the vocabulary (0..%d): disabled, as llama.cpp does",
                               k.key, *k.id, n - 1));
      *k.id = kNoToken;
    }
    STRATA_ASSIGN_OR_RETURN(auto id, ReadId(md, k.key, n, warnings, *k.id));
    if (id) *k.id = *id;
  }
  return Status::Ok();
}

Status ReadFlags(const Metadata& md, Vocab* v) {
  STRATA_RETURN_IF_ERROR(md.Bool("tokenizer.ggml.add_space_prefix", &v->add_space_prefix));
  STRATA_RETURN_IF_ERROR(md.Bool("tokenizer.ggml.remove_extra_whitespaces", &v->remove_extra_whitespaces));
  STRATA_RETURN_IF_ERROR(md.Bool("tokenizer.ggml.add_bos_token", &v->add_bos));
  STRATA_RETURN_IF_ERROR(md.Bool("tokenizer.ggml.add_eos_token", &v->add_eos));
  STRATA_RETURN_IF_ERROR(md.Bool("tokenizer.ggml.add_sep_token", &v->add_sep));
  const struct {
    bool flag;
    int32_t id;
    const char *flag_key, *id_key;
  } needs[] = {
      {v->add_bos, v->special.bos, "tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id"},
      {v->add_eos, v->special.eos, "tokenizer.ggml.add_eos_token", "tokenizer.ggml.eos_token_id"},
      {v->add_sep, v->special.sep, "tokenizer.ggml.add_sep_token", "tokenizer.ggml.seperator_token_id"},
  };
  for (const auto& nd : needs)
    if (nd.flag && nd.id == kNoToken)
      return DataLoss(md.file() + ": " + nd.flag_key + " is true, but " + nd.id_key +
                      " names no token in the vocabulary");
  v->lowercase = true;
  STRATA_RETURN_IF_ERROR(md.Bool("tokenizer.ggml.normalizer.lowercase", &v->lowercase));
  v->strip_accents = v->lowercase;
  STRATA_RETURN_IF_ERROR(md.Bool("tokenizer.ggml.normalizer.strip_accents", &v->strip_accents));
  STRATA_ASSIGN_OR_RETURN(auto tmpl, md.String("tokenizer.chat_template"));
  if (tmpl) v->chat_template = std::string(*tmpl);
  return Status::Ok();
}

}  // namespace

Result<Vocab> ImportVocab(const gguf::GgufModel& model, std::vector<std::string>* warnings) {
  Metadata md(model);
  Vocab v;
  bool is_none = false;
  STRATA_RETURN_IF_ERROR(ReadModel(md, &v, &is_none));
  if (is_none) return v;  // ids only: no texts to tokenize with
  STRATA_RETURN_IF_ERROR(ReadPre(md, &v, warnings));
  STRATA_RETURN_IF_ERROR(ReadTokens(md, &v, warnings));
  STRATA_RETURN_IF_ERROR(ReadScoresAndTypes(md, &v, warnings));
  STRATA_RETURN_IF_ERROR(ReadMerges(md, &v));
  FimTokenIds fim;
  STRATA_RETURN_IF_ERROR(ReadSpecialIds(md, &v, &fim, warnings));
  STRATA_RETURN_IF_ERROR(ReadFlags(md, &v));

  STRATA_ASSIGN_OR_RETURN(auto name, md.String("general.name"));
  STRATA_ASSIGN_OR_RETURN(auto arch, md.String("general.architecture"));
  ApplyTokenTextRules(&v, fim, name.value_or(""), arch.value_or(""), warnings);

  Status st = tokenizer::ValidateVocab(v);
  if (!st.ok()) return DataLoss(md.file() + ": the tokenizer metadata is inconsistent: " + st.message());
  return v;
}

}  // namespace strata
