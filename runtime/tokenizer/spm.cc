// SentencePiece-style tokenization (llama.cpp's llm_tokenizer_spm_session).
//
// The input arrives with spaces already escaped to U+2581 (and the space
// prefix added) by Tokenizer::Encode. Starting from single UTF-8 characters,
// the adjacent pair whose concatenation is the highest-scoring token is merged
// first (ties: leftmost), until no adjacent pair forms a token. A remaining
// symbol that is not a token is emitted as its bytes' <0xHH> tokens.

#include <queue>

#include "runtime/tokenizer/tokenizer_data.h"
#include "runtime/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

struct Symbol {
  int32_t prev, next;
  uint32_t start, len;  // bytes of the text; len 0 once merged into its left neighbour
};

struct Bigram {
  float score;
  int32_t left, right;
  uint32_t len;  // left.len + right.len when queued; stale if that changed
};

struct BigramOrder {  // top of the queue: highest score, then leftmost
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void EncodeSpm(const TokenizerData& d, std::string_view text, std::vector<int32_t>* out) {
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (uint32_t pos = 0; pos < text.size();) {
    uint32_t len = static_cast<uint32_t>(
        std::min(Utf8SeqLen(static_cast<uint8_t>(text[pos])), text.size() - pos));
    int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + len == text.size() ? -1 : index + 1, pos, len});
    pos += len;
  }
  if (symbols.empty()) return;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    int32_t id = d.Find(text.substr(l.start, l.len + r.len));
    if (id == kNoToken) return;
    float score = d.vocab.scores.empty() ? 0.0f : d.vocab.scores[static_cast<size_t>(id)];
    queue.push({score, left, right, l.len + r.len});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<size_t>(b.left)];
    Symbol& r = symbols[static_cast<size_t>(b.right)];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;  // one side already merged
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int32_t i = 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<size_t>(i)];
    std::string_view piece = text.substr(s.start, s.len);
    int32_t id = d.Find(piece);
    if (id != kNoToken) {
      out->push_back(id);
      continue;
    }
    // Byte fallback. llama.cpp throws (std::out_of_range) when a byte has no
    // token at all; such bytes are skipped here.
    for (char c : piece) {
      int32_t byte_id = d.byte_tokens[static_cast<uint8_t>(c)];
      if (byte_id != kNoToken) out->push_back(byte_id);
    }
  }
}

}  // namespace strata::tokenizer
