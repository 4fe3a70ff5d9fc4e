// Byte-level BPE (llama.cpp's llm_tokenizer_bpe_session::tokenize).
//
// The pre-tokenizer cuts the text into words; each word is mapped to GPT-2's
// byte alphabet and, starting from its characters, the adjacent pair with the
// lowest merge rank is merged first (ties: leftmost) until no adjacent pair has
// a merge. Pairs are looked up by token ids: ValidateVocab guarantees both
// sides of every merge are tokens, so a symbol that is not a token can never
// take part in a merge, as in llama.cpp's lookup by text.

#include <algorithm>
#include <unordered_map>

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

// Transparent hashing, so the cache can be probed with a string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct BigramOrder {  // top of the heap: lowest rank, then leftmost
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

// Scratch state for one Encode call, shared by its fragments. Words repeat a
// lot in real text, so the ids of each distinct word are computed once per call (a pure function
// of the word, so the output is the same as merging every occurrence).
class BpeSession {
 public:
  explicit BpeSession(const TokenizerData& d) : d_(d) {}

  void Word(std::string_view raw, std::vector<int32_t>* out) {
    if (raw.size() <= kMaxCachedWord) {
      auto it = cache_.find(raw);
      if (it != cache_.end()) {
        out->insert(out->end(), cached_ids_.begin() + it->second.first,
                    cached_ids_.begin() + it->second.first + it->second.second);
        return;
      }
    }
    const size_t before = out->size();
    Merge(raw, out);
    if (raw.size() <= kMaxCachedWord) {
      cache_.emplace(std::string(raw), std::make_pair(static_cast<uint32_t>(cached_ids_.size()),
                                                      static_cast<uint32_t>(out->size() - before)));
      cached_ids_.insert(cached_ids_.end(), out->begin() + static_cast<ptrdiff_t>(before), out->end());
    }
  }

 private:
  static constexpr size_t kMaxCachedWord = 256;

  void Merge(std::string_view raw, std::vector<int32_t>* out) {
    // The word in GPT-2's byte alphabet; one symbol per raw byte.
    encoded_.clear();
    symbols_.clear();
    for (size_t i = 0; i < raw.size(); ++i) {
      const uint8_t b = static_cast<uint8_t>(raw[i]);
      std::string_view sym = ByteToUnicode(b);
      int32_t index = static_cast<int32_t>(i);
      symbols_.push_back({index - 1, i + 1 == raw.size() ? -1 : index + 1, static_cast<uint32_t>(encoded_.size()),
                          static_cast<uint32_t>(sym.size()), d_.byte_symbol_ids[b]});
      encoded_ += sym;
    }
    if (symbols_.empty()) return;
    if (d_.pre.ignore_merges) {
      int32_t whole = d_.Find(encoded_);
      if (whole != kNoToken) {
        out->push_back(whole);
        return;
      }
    }

    heap_.clear();
    for (int32_t i = 1; i < static_cast<int32_t>(symbols_.size()); ++i) TryAdd(i - 1, i);
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), BigramOrder());
      const Bigram b = heap_.back();
      heap_.pop_back();
      Symbol& l = symbols_[static_cast<size_t>(b.left)];
      Symbol& r = symbols_[static_cast<size_t>(b.right)];
      if (l.len == 0 || r.len == 0 || l.id != b.left_id || r.id != b.right_id) continue;  // stale
      l.len += r.len;
      l.id = b.result;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) symbols_[static_cast<size_t>(r.next)].prev = b.left;
      TryAdd(l.prev, b.left);
      TryAdd(b.left, l.next);
    }

    for (int32_t i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) {
      const Symbol& s = symbols_[static_cast<size_t>(i)];
      if (s.id != kNoToken) {
        out->push_back(s.id);
        continue;
      }
      // Not a token: llama.cpp looks up each byte of the (byte-level) text as a
      // one-byte token and silently drops the bytes that are none.
      for (char c : std::string_view(encoded_).substr(s.start, s.len)) {
        int32_t id = d_.Find(std::string_view(&c, 1));
        if (id != kNoToken) out->push_back(id);
      }
    }
  }

  void TryAdd(int32_t left, int32_t right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = symbols_[static_cast<size_t>(left)];
    const Symbol& r = symbols_[static_cast<size_t>(right)];
    if (l.id == kNoToken || r.id == kNoToken) return;
    auto it = d_.merges.find(TokenizerData::PairKey(l.id, r.id));
    if (it == d_.merges.end()) return;
    heap_.push_back({it->second.rank, left, right, l.id, r.id, it->second.result});
    std::push_heap(heap_.begin(), heap_.end(), BigramOrder());
  }

  const TokenizerData& d_;
  std::string encoded_;
  std::vector<Symbol> symbols_;
  std::vector<Bigram> heap_;
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, StringHash, std::equal_to<>> cache_;
  std::vector<int32_t> cached_ids_;
};

}  // namespace

void EncodeBpe(const TokenizerData& d, const std::vector<Fragment>& fragments, std::vector<int32_t>* out) {
  BpeSession session(d);
  std::vector<std::string> words;
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken) {
      out->push_back(f.token);
      continue;
    }
    PreTokenize(d.pre.kind, f.text, &words);
    for (const std::string& w : words) session.Word(w, out);
  }
}

}  // namespace strata::tokenizer
