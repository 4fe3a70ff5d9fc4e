// Byte-level BPE (llama.cpp's llm_tokenizer_bpe_session::tokenize).
//
// The pre-tokenizer cuts the text into words; each word is mapped to GPT-2's
// byte alphabet and, starting from its characters, the adjacent pair with the
// lowest merge rank is merged first (ties: leftmost) until no adjacent pair has
// a merge. Pairs are looked up by token ids: ValidateVocab guarantees both
// sides of every merge are tokens, so a symbol that is not a token can never
// take part in a merge, as in llama.cpp's lookup by text.

#include <queue>

#include "runtime/tokenizer/pretokenize.h"
#include "runtime/tokenizer/tokenizer_data.h"
#include "runtime/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

struct Symbol {
  int32_t prev, next;
  uint32_t start, len;  // bytes of the word; len 0 once merged into its left neighbour
  int32_t id;           // token of this text, kNoToken if none
};

struct Bigram {
  int32_t rank;
  int32_t left, right;
  int32_t left_id, right_id;  // stale once either symbol changed
  int32_t result;
};

struct BigramOrder {  // top of the queue: lowest rank, then leftmost
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

void MergeWord(const TokenizerData& d, std::string_view word, std::vector<Symbol>* symbols_buf,
               std::vector<int32_t>* out) {
  if (d.pre.ignore_merges) {
    int32_t whole = d.Find(word);
    if (whole != kNoToken) {
      out->push_back(whole);
      return;
    }
  }
  std::vector<Symbol>& symbols = *symbols_buf;
  symbols.clear();
  for (uint32_t pos = 0; pos < word.size();) {
    uint32_t len = static_cast<uint32_t>(
        std::min(Utf8SeqLen(static_cast<uint8_t>(word[pos])), word.size() - pos));
    int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, pos + len == word.size() ? -1 : index + 1, pos, len, d.Find(word.substr(pos, len))});
    pos += len;
  }
  if (symbols.empty()) return;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    if (l.id == kNoToken || r.id == kNoToken) return;
    auto it = d.merges.find(TokenizerData::PairKey(l.id, r.id));
    if (it == d.merges.end()) return;
    queue.push({it->second.rank, left, right, l.id, r.id, it->second.result});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<size_t>(b.left)];
    Symbol& r = symbols[static_cast<size_t>(b.right)];
    if (l.len == 0 || r.len == 0 || l.id != b.left_id || r.id != b.right_id) continue;
    l.len += r.len;
    l.id = b.result;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int32_t i = 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<size_t>(i)];
    if (s.id != kNoToken) {
      out->push_back(s.id);
      continue;
    }
    // Not a token: llama.cpp looks up each byte of the (byte-level) text as a
    // one-byte token and silently drops the bytes that are none.
    for (char c : word.substr(s.start, s.len)) {
      int32_t id = d.Find(std::string_view(&c, 1));
      if (id != kNoToken) out->push_back(id);
    }
  }
}

}  // namespace

void EncodeBpe(const TokenizerData& d, std::string_view text, std::vector<int32_t>* out) {
  std::vector<std::string> words;
  PreTokenize(d.pre.kind, text, &words);
  std::string encoded;
  std::vector<Symbol> symbols;
  for (const std::string& w : words) {
    encoded.clear();
    for (char c : w) encoded += ByteToUnicode(static_cast<uint8_t>(c));
    MergeWord(d, encoded, &symbols, out);
  }
}

}  // namespace strata::tokenizer
