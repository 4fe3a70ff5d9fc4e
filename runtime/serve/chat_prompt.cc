#include "runtime/serve/chat_prompt.h"

namespace strata::serve {

std::vector<int32_t> ChatPromptTokens(const tokenizer::Tokenizer& tok, const ChatTemplate& tmpl,
                                      const std::vector<ChatMessage>& messages) {
  // ChatML, the only format ChatTemplate renders: <|im_start|>ROLE\nCONTENT<|im_end|>\n per
  // turn, then <|im_start|>assistant\n. Checked against Render() in serve_test.cc.
  (void)tmpl;
  auto append = [](std::vector<int32_t>& to, const std::vector<int32_t>& ids) {
    to.insert(to.end(), ids.begin(), ids.end());
  };
  const std::vector<int32_t> start = tok.Encode("<|im_start|>", false, /*parse_special=*/true);
  const std::vector<int32_t> end = tok.Encode("<|im_end|>", false, /*parse_special=*/true);
  const std::vector<int32_t> newline = tok.Encode("\n", false, false);
  std::vector<int32_t> ids;
  const tokenizer::Vocab& v = tok.vocab();
  if (v.add_bos && v.special.bos != tokenizer::kNoToken) ids.push_back(v.special.bos);
  for (const ChatMessage& m : messages) {
    append(ids, start);
    append(ids, tok.Encode(m.role + "\n" + m.content, false, /*parse_special=*/false));
    append(ids, end);
    append(ids, newline);
  }
  append(ids, start);
  append(ids, tok.Encode("assistant\n", false, false));
  return ids;
}

}  // namespace strata::serve
