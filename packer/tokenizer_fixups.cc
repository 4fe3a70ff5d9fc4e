#include "packer/tokenizer_fixups.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "runtime/base/strings.h"
#include "runtime/tokenizer/fim_tokens.h"

namespace strata {
namespace {

using tokenizer::kNoToken;
using tokenizer::TokenType;
using TextList = std::initializer_list<std::string_view>;

// Token texts from llama.cpp's llama_vocab::impl::load. U+FF5C and U+2581 are
// written as escapes: DeepSeek's texts look like ASCII "|" and "_" but are not.
const TextList kEotTexts = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                            "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                            "<\uFF5Cend\u2581of\u2581sentence\uFF5C>", "<end_of_utterance>"};
const TextList kEomTexts = {"<|eom_id|>"};
const TextList kEogTexts = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
                            "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
                            "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
                            "<turn|>", "<|tool_response>", "<\uFF5Cend\u2581of\u2581sentence\uFF5C>", "[e~["};
const TextList kAlwaysUserDefined = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

bool OneOf(std::string_view s, TextList list) { return std::find(list.begin(), list.end(), s) != list.end(); }

bool ContainsAny(std::string_view s, TextList parts) {
  for (std::string_view p : parts)
    if (s.find(p) != std::string_view::npos) return true;
  return false;
}

class Rules {
 public:
  Rules(tokenizer::Vocab* v, std::vector<std::string>* warnings) : v_(*v), warnings_(warnings) {
    for (size_t i = 0; i < v_.tokens.size(); ++i) ids_.emplace(v_.tokens[i], static_cast<int32_t>(i));
  }

  int32_t Id(std::string_view text) const {
    auto it = ids_.find(text);
    return it == ids_.end() ? kNoToken : it->second;
  }
  const std::string& Text(int32_t id) const { return v_.tokens[static_cast<size_t>(id)]; }
  TokenType& Type(int32_t id) { return v_.types[static_cast<size_t>(id)]; }

  void SetType(int32_t id, TokenType t, const char* why) {
    if (Type(id) == t) return;
    Warn(StrFormat("token %d \"%s\": type %s -> %s (%s, as llama.cpp does)", id, Printable(Text(id)).c_str(),
                   std::string(tokenizer::TokenTypeName(Type(id))).c_str(),
                   std::string(tokenizer::TokenTypeName(t)).c_str(), why));
    Type(id) = t;
  }

  // If *id is unset, the lowest-id token whose text is in `texts` becomes it.
  void Detect(int32_t* id, TextList texts, const char* what) {
    Detect(id, std::span<const std::string_view>(texts.begin(), texts.size()), what);
  }
  void Detect(int32_t* id, std::span<const std::string_view> texts, const char* what) {
    if (*id != kNoToken) return;
    *id = tokenizer::FindTokenByTexts(v_, texts);
    if (*id != kNoToken) SetType(*id, TokenType::kControl, what);
  }

  void Warn(std::string w) {
    if (warnings_) warnings_->push_back(std::move(w));
  }

 private:
  tokenizer::Vocab& v_;
  std::vector<std::string>* warnings_;
  std::unordered_map<std::string_view, int32_t> ids_;
};

bool IsSpecialType(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown;
}

void StripRules(tokenizer::Vocab* v, Rules& r, std::string_view general_name, std::string_view arch) {
  std::string name(general_name);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<bool> lstrip(v->tokens.size(), false), rstrip(v->tokens.size(), false);
  auto set = [&](std::vector<bool>& flags, std::string_view text, bool value) {
    int32_t id = r.Id(text);
    if (id != kNoToken) flags[static_cast<size_t>(id)] = value;
  };
  if (ContainsAny(v->pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      ContainsAny(arch, {"nomic-bert-moe", "jina-bert-v3"})) {
    set(lstrip, "<mask>", true);
  } else if (ContainsAny(name, {"phi-3", "phi3"})) {
    for (size_t i = 0; i < v->tokens.size(); ++i)
      if (IsSpecialType(v->types[i])) rstrip[i] = true;
    set(rstrip, "</s>", true);
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) set(rstrip, t, false);
  } else if (ContainsAny(name, {"modern-bert"})) {
    set(lstrip, "[MASK]", true);
  }
  v->lstrip_ids.clear();
  v->rstrip_ids.clear();
  for (size_t i = 0; i < v->tokens.size(); ++i) {
    if (lstrip[i]) v->lstrip_ids.push_back(static_cast<int32_t>(i));
    if (rstrip[i]) v->rstrip_ids.push_back(static_cast<int32_t>(i));
  }
}

}  // namespace

void ApplyTokenTextRules(tokenizer::Vocab* v, const FimTokenIds& fim_in, std::string_view general_name,
                         std::string_view general_architecture, std::vector<std::string>* warnings) {
  Rules r(v, warnings);
  FimTokenIds fim = fim_in;
  r.Detect(&v->special.eot, kEotTexts, "end-of-turn text");
  r.Detect(&v->special.eom, kEomTexts, "end-of-message text");
  r.Detect(&fim.pre, tokenizer::kFimPreTexts, "FIM prefix text");
  r.Detect(&fim.suf, tokenizer::kFimSufTexts, "FIM suffix text");
  r.Detect(&fim.mid, tokenizer::kFimMidTexts, "FIM middle text");
  r.Detect(&fim.pad, tokenizer::kFimPadTexts, "FIM pad text");
  r.Detect(&fim.rep, tokenizer::kFimRepTexts, "FIM repo text");
  r.Detect(&fim.sep, tokenizer::kFimSepTexts, "FIM separator text");

  std::vector<int32_t> eog;
  for (int32_t id : {fim.pad, fim.rep, fim.sep})
    if (id != kNoToken) eog.push_back(id);
  for (int32_t i = 0; i < v->n_tokens(); ++i) {
    if (!OneOf(r.Text(i), kEogTexts)) continue;
    eog.push_back(i);
    r.SetType(i, TokenType::kControl, "end-of-generation text");
  }
  for (int32_t i = 0; i < v->n_tokens(); ++i)
    if (OneOf(r.Text(i), kAlwaysUserDefined)) r.SetType(i, TokenType::kUserDefined, "gpt-oss token always rendered");
  for (int32_t id : {v->special.eos, v->special.eot, v->special.eom}) {
    if (id == kNoToken || std::find(eog.begin(), eog.end(), id) != eog.end()) continue;
    eog.push_back(id);
    r.Warn(StrFormat("token %d \"%s\" added to the end-of-generation set as eos/eot/eom", id,
                     Printable(r.Text(id)).c_str()));
  }
  auto in_eog = [&](std::string_view text) {
    for (int32_t id : eog)
      if (r.Text(id) == text) return id;
    return kNoToken;
  };
  int32_t end_id = in_eog("<|end|>");
  bool has_call = in_eog("<|call|>") != kNoToken || in_eog("<|calls|>") != kNoToken;
  if (end_id != kNoToken && has_call && (in_eog("<|return|>") != kNoToken || in_eog("<|flush|>") != kNoToken)) {
    std::erase(eog, end_id);
    r.SetType(end_id, TokenType::kUserDefined, "<|end|> is not end-of-generation next to <|return|>/<|call|>");
  }
  int32_t s_id = in_eog("</s>");
  if (s_id != kNoToken && in_eog("<|tool_response>") != kNoToken) {
    std::erase(eog, s_id);
    r.SetType(s_id, TokenType::kNormal, "</s> is not end-of-generation next to <|tool_response>");
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  v->eog_ids = std::move(eog);

  StripRules(v, r, general_name, general_architecture);
}

}  // namespace strata
