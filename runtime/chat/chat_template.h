#pragma once
// Chat templates. A pack carries the model's Jinja template
// (tokenizer.chat_template); Strata renders it with its own Jinja
// interpreter (jinja.h), the way Hugging Face's apply_chat_template does.
// A template that does not parse, or that cannot render a one-message chat,
// is refused when the model loads, with the reason, never mid-request. A
// pack without a template falls back to ChatML (the Qwen family's format),
// and callers say so.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/status.h"
#include "runtime/tokenizer/vocab.h"

namespace strata {

namespace jinja {
class Template;
}

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  // Further fields the template sees on this message (tool_calls,
  // tool_call_id, name, reasoning_content); null or an object.
  nlohmann::ordered_json extra = nullptr;
};

struct ChatTemplate {
  bool fallback = false;  // the pack had no template; ChatML was chosen
  std::shared_ptr<const jinja::Template> jinja;  // the pack's template; null: ChatML
  std::string bos_token, eos_token;              // the texts the template sees
  bool chatml_markers = false;                   // the template writes <|im_end|>
  bool thinking = false;                         // the template knows <think> blocks
  std::string source;                            // the Jinja text; empty: ChatML

  std::string name() const { return jinja ? "the pack's (Jinja)" : "ChatML"; }

  // Parses `source` (the pack's tokenizer.chat_template; empty: ChatML) and
  // renders a one-message chat with it. kUnsupported naming the problem
  // when either fails.
  static Result<ChatTemplate> FromPack(std::string_view source, std::string bos_token = "",
                                       std::string eos_token = "");
  // FromPack with the vocabulary's template (or `source` instead, when
  // given: --chat-template-file) and its BOS and EOS texts.
  static Result<ChatTemplate> FromVocab(const tokenizer::Vocab& vocab,
                                        std::optional<std::string_view> source = std::nullopt);
  // The prompt for `messages`, ending with the assistant turn's opening when
  // add_generation_prompt. `extra` (an object or null) adds variables: tools,
  // enable_thinking and other chat_template_kwargs. Fails with the
  // template's own message when it refuses the conversation
  // (raise_exception), kInvalidArgument.
  Result<std::string> Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                             const nlohmann::ordered_json& extra = nullptr) const;
  // Text that ends an assistant turn (a stop string besides the EOG tokens).
  std::vector<std::string> StopStrings() const {
    if (!jinja || chatml_markers) return {"<|im_end|>"};
    return {};
  }
};

}  // namespace strata
