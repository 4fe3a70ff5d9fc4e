#pragma once
// The token ids of a chat, rendered with the pack's chat template.
//
// Message content is user input: special-token text in it (such as
// "<|im_end|>" typed into a message) stays text and cannot close a turn or
// forge a system message. The rendered prompt is tokenized with special
// tokens parsed, except inside the spans where the template wrote a
// message's content verbatim; a content that holds special-token text and
// that the template does not write verbatim (it transformed it) is refused.
// For content without special-token text the ids are exactly those of
// Encode(Render(...), add_special, parse_special = true).

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/status.h"
#include "runtime/chat/chat_template.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::serve {

// `extra`: template variables beyond the messages (tools, chat_template_kwargs).
// Errors: the template's refusal, or forged special-token text (kInvalidArgument).
// *rendered, when given, receives the prompt text.
Result<std::vector<int32_t>> ChatPromptTokens(const tokenizer::Tokenizer& tok, const ChatTemplate& tmpl,
                                              const std::vector<ChatMessage>& messages,
                                              const nlohmann::ordered_json& extra = nullptr,
                                              std::string* rendered = nullptr);

// The ids of text[from:], where `text` is `messages` as the template
// rendered them: the same protection of message content, for a caller that
// runs a conversation turn by turn and has the text before `from` in its
// state already (strata-run --chat). No BOS is added.
Result<std::vector<int32_t>> EncodeRenderedChat(const tokenizer::Tokenizer& tok, const std::string& text,
                                                const std::vector<ChatMessage>& messages, size_t from = 0);

}  // namespace strata::serve
