#include "runtime/serve/chat_prompt.h"

namespace strata::serve {
namespace {

// A rendered chat as a list of pieces: a template marker that is one special
// token of the vocabulary, or text (template text and message content).
class PromptBuilder {
 public:
  explicit PromptBuilder(const tokenizer::Tokenizer& tok) : tok_(tok) {}

  void Marker(const std::string& text) {
    std::vector<int32_t> ids = tok_.Encode(text, false, /*parse_special=*/true);
    if (ids.size() != 1) {  // not a token of this vocabulary: plain text, like the rest
      text_ += text;
      return;
    }
    Flush();
    ids_.push_back(ids[0]);
  }
  void Text(const std::string& text) { text_ += text; }
  std::vector<int32_t> Finish() {
    Flush();
    return std::move(ids_);
  }

 private:
  // Text between special tokens is one fragment, as special-token parsing of
  // the whole rendered string would make it, but tokenized without parsing
  // special tokens: content cannot produce them.
  void Flush() {
    if (text_.empty()) return;
    std::vector<int32_t> ids = tok_.Encode(text_, false, /*parse_special=*/false);
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    text_.clear();
  }

  const tokenizer::Tokenizer& tok_;
  std::vector<int32_t> ids_;
  std::string text_;
};

}  // namespace

std::vector<int32_t> ChatPromptTokens(const tokenizer::Tokenizer& tok, const ChatTemplate& tmpl,
                                      const std::vector<ChatMessage>& messages) {
  // ChatML, the only format ChatTemplate renders: <|im_start|>ROLE\nCONTENT<|im_end|>\n per
  // turn, then <|im_start|>assistant\n. Checked against Render() in serve_test.cc.
  (void)tmpl;
  PromptBuilder b(tok);
  const tokenizer::Vocab& v = tok.vocab();
  for (const ChatMessage& m : messages) {
    b.Marker("<|im_start|>");
    b.Text(m.role + "\n" + m.content);
    b.Marker("<|im_end|>");
    b.Text("\n");
  }
  b.Marker("<|im_start|>");
  b.Text("assistant\n");
  std::vector<int32_t> ids = b.Finish();
  if (v.add_bos && v.special.bos != tokenizer::kNoToken) ids.insert(ids.begin(), v.special.bos);
  return ids;
}

}  // namespace strata::serve
