#pragma once
// Chat templates. Packs carry the model's Jinja template; Strata does not
// interpret Jinja. It recognizes the template families it can render exactly
// (ChatML, which the whole Qwen family uses) and refuses any other template
// when a chat starts, with the reason, rather than rendering garbage. A pack
// with no template falls back to ChatML, and callers say so.

#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"

namespace strata {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
};

enum class ChatFormat { kChatML };

struct ChatTemplate {
  ChatFormat format = ChatFormat::kChatML;
  bool fallback = false;  // the pack had no template; ChatML was chosen
  std::string name() const { return "ChatML"; }

  // Recognizes `jinja` (the pack's tokenizer.chat_template). Errors with
  // kUnsupported naming what was not understood.
  static Result<ChatTemplate> FromPack(std::string_view jinja);
  // The prompt for `messages`, ending with the assistant turn's opening when
  // add_generation_prompt.
  std::string Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
  // Text that ends an assistant turn (a stop string besides the EOG tokens).
  std::vector<std::string> StopStrings() const { return {"<|im_end|>"}; }
};

}  // namespace strata
