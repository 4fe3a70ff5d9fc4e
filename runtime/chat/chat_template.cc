#include "runtime/chat/chat_template.h"

namespace strata {

Result<ChatTemplate> ChatTemplate::FromPack(std::string_view jinja) {
  ChatTemplate t;
  if (jinja.empty()) {
    t.fallback = true;
    return t;
  }
  // ChatML: every turn is <|im_start|>ROLE\nCONTENT<|im_end|>\n.
  if (jinja.find("<|im_start|>") != std::string_view::npos && jinja.find("<|im_end|>") != std::string_view::npos)
    return t;
  std::string head(jinja.substr(0, 120));
  for (char& c : head)
    if (c == '\n') c = ' ';
  return Unsupported("the pack's chat template is not one Strata can render (it renders ChatML templates, which use "
                     "<|im_start|> and <|im_end|>); template begins: \"" + head + "...\". Use -p with your own "
                     "prompt text instead of --chat");
}

std::string ChatTemplate::Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::string out;
  for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace strata
