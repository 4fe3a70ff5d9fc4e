#pragma once
// The token ids of a chat, rendered with the pack's chat template.
//
// Message content is user input: it is tokenized with special-token parsing
// OFF, so text such as "<|im_end|>" typed into a message stays text and
// cannot close a turn or forge a system message. Only the template's own
// markers become special tokens (when the vocabulary has them; otherwise
// they are text like the rest). For content without special-token text the
// ids are exactly those of Encode(template.Render(...), add_special, true),
// which is what `strata-run --chat` runs.
//
// Prompts built this way extend each other token for token: the ids of a
// conversation are a prefix of the ids of the same conversation with more
// turns, which is what prefix reuse needs.

#include <cstdint>
#include <vector>

#include "runtime/chat/chat_template.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::serve {

std::vector<int32_t> ChatPromptTokens(const tokenizer::Tokenizer& tok, const ChatTemplate& tmpl,
                                      const std::vector<ChatMessage>& messages);

}  // namespace strata::serve
