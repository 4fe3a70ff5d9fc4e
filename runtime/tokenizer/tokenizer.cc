#include "runtime/tokenizer/tokenizer.h"

#include <algorithm>

#include "runtime/base/strings.h"
#include "runtime/tokenizer/tokenizer_data.h"
#include "runtime/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

bool Contains(const std::vector<int32_t>& sorted, int32_t id) {
  return std::binary_search(sorted.begin(), sorted.end(), id);
}

// True if `token` has U+2581 right after a character that is not U+2581.
bool HasSpaceAfterOtherChar(const std::string& token) {
  constexpr std::string_view kSpace = "\xE2\x96\x81";
  for (size_t at = token.find(kSpace, 1); at != std::string::npos; at = token.find(kSpace, at + 1)) {
    if (at < kSpace.size() || std::string_view(token).substr(at - kSpace.size(), kSpace.size()) != kSpace) return true;
  }
  return false;
}

}  // namespace

std::shared_ptr<const TokenizerData> BuildTokenizerData(const Vocab& vocab) {
  auto d = std::make_shared<TokenizerData>();
  d->vocab = vocab;
  const Vocab& v = d->vocab;
  const size_t n = v.tokens.size();

  d->text_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    d->text_to_id.emplace(v.tokens[i], static_cast<int32_t>(i));
    d->max_token_bytes = std::max(d->max_token_bytes, v.tokens[i].size());
  }

  for (size_t i = 0; i < n; ++i) {
    TokenType t = v.types[i];
    if (t != TokenType::kControl && t != TokenType::kUserDefined && t != TokenType::kUnknown) continue;
    int32_t id = static_cast<int32_t>(i);
    d->special_texts.push_back({id, t != TokenType::kUserDefined, Contains(v.lstrip_ids, id),
                                Contains(v.rstrip_ids, id)});
  }
  std::stable_sort(d->special_texts.begin(), d->special_texts.end(), [&](const auto& a, const auto& b) {
    return v.tokens[static_cast<size_t>(a.id)].size() > v.tokens[static_cast<size_t>(b.id)].size();
  });

  if (v.model == VocabModel::kBpe) {
    d->pre = *FindPreTokenizer(v.pre);
    d->merges.reserve(v.merges.size());
    for (size_t rank = 0; rank < v.merges.size(); ++rank) {
      const std::string& m = v.merges[rank];
      size_t space = m.find(' ', 1);
      int32_t left = d->Find(std::string_view(m).substr(0, space));
      int32_t right = d->Find(std::string_view(m).substr(space + 1));
      int32_t result = d->Find(v.tokens[static_cast<size_t>(left)] + v.tokens[static_cast<size_t>(right)]);
      // A repeated pair keeps its first (lowest) rank, as llama.cpp's emplace does.
      d->merges.emplace(TokenizerData::PairKey(left, right), TokenizerData::Merge{static_cast<int32_t>(rank), result});
    }
  }

  d->byte_symbol_ids.fill(kNoToken);
  if (v.model == VocabModel::kBpe)
    for (int b = 0; b < 256; ++b) d->byte_symbol_ids[static_cast<size_t>(b)] = d->Find(ByteToUnicode(static_cast<uint8_t>(b)));
  d->byte_tokens.fill(kNoToken);
  if (v.model == VocabModel::kSpm) {
    d->spm_words_split_at_space = std::none_of(v.tokens.begin(), v.tokens.end(), HasSpaceAfterOtherChar);
    // llama.cpp's byte_to_token: <0xHH> (upper-case hex), else the byte itself.
    for (int b = 0; b < 256; ++b) {
      int32_t id = d->Find(StrFormat("<0x%02X>", b));
      if (id == kNoToken) id = d->Find(std::string(1, static_cast<char>(b)));
      d->byte_tokens[static_cast<size_t>(b)] = id;
    }
  }

  d->pieces.resize(n);
  for (size_t i = 0; i < n; ++i) d->pieces[i] = BuildPiece(*d, static_cast<int32_t>(i));
  d->is_eog.assign(n, false);
  for (int32_t id : v.eog_ids) d->is_eog[static_cast<size_t>(id)] = true;
  return d;
}

Result<Tokenizer> Tokenizer::Create(const Vocab& vocab) {
  STRATA_RETURN_IF_ERROR(ValidateVocab(vocab));
  return Tokenizer(BuildTokenizerData(vocab));
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special, bool parse_special) const {
  const TokenizerData& d = *data_;
  const Vocab& v = d.vocab;
  std::vector<int32_t> out;
  if (v.model == VocabModel::kNone) return out;
  const std::vector<Fragment> fragments = PartitionSpecial(d, text, parse_special);
  const auto push_if = [&](bool cond, int32_t id) {
    if (cond && id != kNoToken) out.push_back(id);
  };

  switch (v.model) {
    case VocabModel::kSpm:
      push_if(add_special && v.add_bos, v.special.bos);
      EncodeSpm(d, fragments, &out);
      push_if(add_special && v.add_eos, v.special.eos);
      break;
    case VocabModel::kBpe:
      push_if(add_special && v.add_bos, v.special.bos);
      EncodeBpe(d, fragments, &out);
      push_if(add_special && v.add_eos, v.special.eos);
      break;
    case VocabModel::kWpm:
      // llama.cpp adds [CLS] (bos) and [SEP] for BERT regardless of add_bos/add_sep.
      push_if(add_special, v.special.bos);
      EncodeWpm(d, fragments, &out);
      push_if(add_special, v.special.sep);
      break;
    case VocabModel::kNone:
      break;
  }
  return out;
}

std::string Tokenizer::TokenToPiece(int32_t id, bool special) const {
  const TokenizerData& d = *data_;
  if (id < 0 || id >= n_tokens() || d.vocab.model == VocabModel::kNone) return "";
  TokenType t = d.type(id);
  if (!special && (t == TokenType::kControl || t == TokenType::kUnknown)) return "";
  return d.pieces[static_cast<size_t>(id)];
}

std::vector<std::string> Tokenizer::TextPieces() const {
  std::vector<std::string> out(static_cast<size_t>(n_tokens()));
  for (int32_t id = 0; id < n_tokens(); ++id) out[static_cast<size_t>(id)] = TokenToPiece(id, false);
  return out;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  const TokenizerData& d = *data_;
  const Vocab& v = d.vocab;
  std::string out;
  if (v.model == VocabModel::kNone) return out;
  bool remove_space = v.add_space_prefix;
  if (options.remove_special && v.add_bos && !ids.empty() && ids.front() == v.special.bos) {
    remove_space = false;
    ids = ids.subspan(1);
  }
  if (options.remove_special && v.add_eos && !ids.empty() && ids.back() == v.special.eos) ids = ids.first(ids.size() - 1);

  for (int32_t id : ids) {
    std::string piece = TokenToPiece(id, options.unparse_special);
    std::string_view p = piece;
    if (remove_space && !p.empty() && p.front() == ' ') p.remove_prefix(1);
    remove_space = false;
    out += p;
  }
  bool clean = v.model == VocabModel::kWpm || (v.model == VocabModel::kBpe && d.pre.clean_spaces);
  if (clean && !options.keep_spaces) CleanUpSpaces(&out);
  return out;
}

const Vocab& Tokenizer::vocab() const { return data_->vocab; }
int32_t Tokenizer::n_tokens() const { return data_->vocab.n_tokens(); }
int32_t Tokenizer::Find(std::string_view text) const { return data_->Find(text); }
bool Tokenizer::IsEog(int32_t id) const {
  return id >= 0 && id < n_tokens() && data_->is_eog[static_cast<size_t>(id)];
}

}  // namespace strata::tokenizer
