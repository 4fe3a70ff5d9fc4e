#include "runtime/serve/chat_prompt.h"

#include <algorithm>
#include <string>
#include <utility>

#include "runtime/base/strings.h"

namespace strata::serve {
namespace {

// The texts of the CONTROL tokens: those only special-token parsing produces.
std::vector<const std::string*> ControlTexts(const tokenizer::Tokenizer& tok) {
  const tokenizer::Vocab& v = tok.vocab();
  std::vector<const std::string*> out;
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.types[i] == tokenizer::TokenType::kControl && !v.tokens[i].empty()) out.push_back(&v.tokens[i]);
  return out;
}

// The first of `specials` found in `s`, or nullptr.
const std::string* SpecialTextIn(const std::vector<const std::string*>& specials, const std::string& s) {
  for (const std::string* t : specials)
    if (s.find(*t) != std::string::npos) return t;
  return nullptr;
}

}  // namespace

Result<std::vector<int32_t>> EncodeRenderedChat(const tokenizer::Tokenizer& tok, const std::string& text,
                                                const std::vector<ChatMessage>& messages, size_t from) {
  // Spans of the rendered text that are message content holding special-token text.
  std::vector<std::pair<size_t, size_t>> protect;
  const std::vector<const std::string*> specials = ControlTexts(tok);  // one pass over the vocabulary
  size_t cursor = 0;
  for (size_t k = 0; k < messages.size(); ++k) {
    const std::string& content = messages[k].content;
    if (content.empty()) continue;
    const size_t at = text.find(content, cursor);
    const std::string* special = SpecialTextIn(specials, content);
    if (!special) {
      if (at != std::string::npos) cursor = at + content.size();
      continue;
    }
    if (at == std::string::npos)
      return InvalidArgument(StrFormat("messages[%zu].content holds the special-token text '%s', and the chat "
                                       "template does not write that content as it is; remove it",
                                       k, special->c_str()));
    protect.emplace_back(at, at + content.size());
    cursor = at + content.size();
  }
  std::vector<int32_t> ids;
  size_t pos = std::min(from, text.size());
  auto add = [&](size_t b, size_t e, bool parse_special) {
    b = std::max(b, pos);
    if (e <= b) return;
    std::vector<int32_t> part = tok.Encode(std::string_view(text).substr(b, e - b), false, parse_special);
    ids.insert(ids.end(), part.begin(), part.end());
    pos = e;
  };
  for (const auto& [b, e] : protect) {
    add(pos, b, true);
    add(b, e, false);
  }
  add(pos, text.size(), true);
  return ids;
}

Result<std::vector<int32_t>> ChatPromptTokens(const tokenizer::Tokenizer& tok, const ChatTemplate& tmpl,
                                              const std::vector<ChatMessage>& messages,
                                              const nlohmann::ordered_json& extra, std::string* rendered) {
  STRATA_ASSIGN_OR_RETURN(std::string text, tmpl.Render(messages, /*add_generation_prompt=*/true, extra));
  if (rendered) *rendered = text;
  STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> ids, EncodeRenderedChat(tok, text, messages));
  // The vocabulary's BOS, unless the template wrote it.
  const tokenizer::Vocab& v = tok.vocab();
  if (v.add_bos && v.special.bos != tokenizer::kNoToken && (ids.empty() || ids.front() != v.special.bos))
    ids.insert(ids.begin(), v.special.bos);
  return ids;
}

}  // namespace strata::serve
