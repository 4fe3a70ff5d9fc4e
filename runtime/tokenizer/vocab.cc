#include "runtime/tokenizer/vocab.h"

#include <algorithm>
#include <unordered_map>

#include "runtime/base/strings.h"
#include "runtime/tokenizer/pretokenize.h"

namespace strata::tokenizer {

std::string_view VocabModelName(VocabModel m) {
  switch (m) {
    case VocabModel::kSpm: return "llama";
    case VocabModel::kBpe: return "gpt2";
    case VocabModel::kWpm: return "bert";
    case VocabModel::kNone: break;
  }
  return "none";
}

std::string_view TokenTypeName(TokenType t) {
  switch (t) {
    case TokenType::kNormal: return "NORMAL";
    case TokenType::kUnknown: return "UNKNOWN";
    case TokenType::kControl: return "CONTROL";
    case TokenType::kUserDefined: return "USER_DEFINED";
    case TokenType::kUnused: return "UNUSED";
    case TokenType::kByte: return "BYTE";
    case TokenType::kUndefined: break;
  }
  return "UNDEFINED";
}

namespace {

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); }

Status Invalid(const std::string& what) { return InvalidArgument("vocab: " + what); }

Status CheckSpecialId(const char* name, int32_t id, int32_t n) {
  if (id == kNoToken || (id >= 0 && id < n)) return Status::Ok();
  return Invalid(StrFormat("special token %s: expected an id in 0..%d or -1 (none), found %d", name, n - 1, id));
}

Status CheckIdList(const char* name, const std::vector<int32_t>& ids, int32_t n) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n)
      return Invalid(StrFormat("%s[%zu]: expected an id in 0..%d, found %d", name, i, n - 1, ids[i]));
    if (i > 0 && ids[i] <= ids[i - 1])
      return Invalid(StrFormat("%s[%zu]: expected ids sorted and unique, found %d after %d", name, i, ids[i],
                               ids[i - 1]));
  }
  return Status::Ok();
}

Status CheckMerges(const Vocab& v, const std::unordered_map<std::string_view, int32_t>& ids) {
  if (v.model != VocabModel::kBpe) {
    if (!v.merges.empty())
      return Invalid(StrFormat("merges: expected none for a %s vocabulary, found %zu",
                               std::string(VocabModelName(v.model)).c_str(), v.merges.size()));
    return Status::Ok();
  }
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string& m = v.merges[i];
    // As llama.cpp splits them: at the first space after the first byte.
    size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos)
      return Invalid(StrFormat("merge %zu \"%s\": expected \"left right\", found no separating space", i,
                               Printable(m).c_str()));
    std::string_view left = std::string_view(m).substr(0, space);
    std::string_view right = std::string_view(m).substr(space + 1);
    for (std::string_view part : {left, right}) {
      if (!ids.contains(part))
        return Invalid(StrFormat("merge %zu \"%s\": expected both sides to be tokens, found \"%s\" is not one", i,
                                 Printable(m).c_str(), Printable(part).c_str()));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateVocab(const Vocab& v) {
  if (v.model == VocabModel::kNone) {
    if (!v.tokens.empty() || !v.types.empty() || !v.scores.empty() || !v.merges.empty())
      return Invalid(StrFormat("a 'none' vocabulary: expected no tokens, types, scores or merges, found %zu, %zu, "
                               "%zu, %zu", v.tokens.size(), v.types.size(), v.scores.size(), v.merges.size()));
    return Status::Ok();
  }
  const size_t n = v.tokens.size();
  if (n == 0) return Invalid("tokens: expected at least one token, found none");
  if (n > static_cast<size_t>(INT32_MAX))
    return Invalid(StrFormat("tokens: expected at most %d tokens, found %zu", INT32_MAX, n));
  const int32_t ni = static_cast<int32_t>(n);
  if (v.types.size() != n)
    return Invalid(StrFormat("types: expected one per token (%zu), found %zu", n, v.types.size()));
  if (!v.scores.empty() && v.scores.size() != n)
    return Invalid(StrFormat("scores: expected none or one per token (%zu), found %zu", n, v.scores.size()));

  std::unordered_map<std::string_view, int32_t> ids;
  ids.reserve(n);
  for (int32_t i = 0; i < ni; ++i) {
    const std::string& t = v.tokens[static_cast<size_t>(i)];
    if (t.empty()) return Invalid(StrFormat("token %d: expected non-empty text, found \"\"", i));
    auto [it, inserted] = ids.emplace(t, i);
    if (!inserted)
      return Invalid(StrFormat("token %d \"%s\": expected unique texts, found the same text at id %d", i,
                               Printable(t).c_str(), it->second));
    const TokenType type = v.types[static_cast<size_t>(i)];
    if (static_cast<uint8_t>(type) > static_cast<uint8_t>(TokenType::kByte))
      return Invalid(StrFormat("token %d: expected a type in 0..6, found %u", i, static_cast<unsigned>(type)));
    if (type == TokenType::kByte) {
      if (v.model == VocabModel::kWpm)
        return Invalid(StrFormat("token %d \"%s\": expected no BYTE tokens in a bert vocabulary", i,
                                 Printable(t).c_str()));
      if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || !IsHex(t[3]) || !IsHex(t[4]) || t[5] != '>')
        return Invalid(StrFormat("token %d: expected a BYTE token to read <0xHH>, found \"%s\"", i,
                                 Printable(t).c_str()));
    }
  }

  const SpecialTokens& s = v.special;
  STRATA_RETURN_IF_ERROR(CheckSpecialId("bos", s.bos, ni));
  STRATA_RETURN_IF_ERROR(CheckSpecialId("eos", s.eos, ni));
  STRATA_RETURN_IF_ERROR(CheckSpecialId("eot", s.eot, ni));
  STRATA_RETURN_IF_ERROR(CheckSpecialId("eom", s.eom, ni));
  STRATA_RETURN_IF_ERROR(CheckSpecialId("unk", s.unk, ni));
  STRATA_RETURN_IF_ERROR(CheckSpecialId("sep", s.sep, ni));
  STRATA_RETURN_IF_ERROR(CheckSpecialId("pad", s.pad, ni));
  STRATA_RETURN_IF_ERROR(CheckSpecialId("cls", s.cls, ni));
  STRATA_RETURN_IF_ERROR(CheckSpecialId("mask", s.mask, ni));
  if (v.add_bos && s.bos == kNoToken) return Invalid("add_bos is true, but there is no bos token");
  if (v.add_eos && s.eos == kNoToken) return Invalid("add_eos is true, but there is no eos token");
  if (v.add_sep && s.sep == kNoToken) return Invalid("add_sep is true, but there is no sep token");
  STRATA_RETURN_IF_ERROR(CheckIdList("eog_ids", v.eog_ids, ni));
  STRATA_RETURN_IF_ERROR(CheckIdList("lstrip_ids", v.lstrip_ids, ni));
  STRATA_RETURN_IF_ERROR(CheckIdList("rstrip_ids", v.rstrip_ids, ni));

  if (v.model == VocabModel::kBpe && FindPreTokenizer(v.pre) == nullptr) {
    std::string known;
    for (const auto& p : AllPreTokenizers()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    return Invalid(StrFormat("pre-tokenizer: expected one of %s, found \"%s\"", known.c_str(),
                             Printable(v.pre).c_str()));
  }
  return CheckMerges(v, ids);
}

}  // namespace strata::tokenizer
