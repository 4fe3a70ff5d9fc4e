// SentencePiece-style tokenization (llama.cpp's llm_tokenizer_spm_session).
//
// The input arrives with spaces already escaped to U+2581 (and the space
// prefix added) by Tokenizer::Encode. Starting from single UTF-8 characters
// (cut by lead byte, as llama.cpp does, so invalid bytes form "characters"
// too), the adjacent pair whose concatenation is the highest-scoring token is
// merged first (ties: leftmost), until no adjacent pair forms a token. A
// remaining symbol that is not a token is emitted as its bytes' <0xHH> tokens.
//
// Speed-up that keeps the result exact: when no token has U+2581 right after
// another character (TokenizerData::spm_words_split_at_space, true for every
// Llama-style vocabulary seen), no merge can cross the start of a "\u2581word",
// so each such word merges independently, and a repeated word is merged once
// per Encode call. Merges of different words never compete, so the global
// highest-score-first order restricted to one word is that word's own order.

#include <algorithm>
#include <unordered_map>

#include "runtime/tokenizer/tokenizer_data.h"
#include "runtime/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";

struct Symbol {
  int32_t prev, next;
  uint32_t start, len;  // bytes of the text; len 0 once merged into its left neighbour
};

struct Bigram {
  float score;
  int32_t left, right;
  uint32_t len;  // left.len + right.len when queued; stale if that changed
};

struct BigramOrder {  // top of the heap: highest score, then leftmost
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Scratch state for one Encode call, shared by its fragments.
class SpmSession {
 public:
  explicit SpmSession(const TokenizerData& d) : d_(d) {}

  // `text` is one fragment, spaces already escaped.
  void Run(std::string_view text, std::vector<int32_t>* out) {
    text_ = text;
    // Characters by lead byte over the whole text (a character may swallow
    // bytes of the next U+2581 when the input is not valid UTF-8).
    std::vector<uint32_t> starts;
    for (uint32_t pos = 0; pos < text_.size();) {
      starts.push_back(pos);
      pos += static_cast<uint32_t>(std::min(Utf8SeqLen(static_cast<uint8_t>(text_[pos])), text_.size() - pos));
    }
    starts.push_back(static_cast<uint32_t>(text_.size()));
    const size_t n = starts.size() - 1;
    if (n == 0) return;

    auto is_space = [&](size_t i) { return text_.substr(starts[i], starts[i + 1] - starts[i]) == kEscapedSpace; };
    size_t word_begin = 0;
    for (size_t i = 1; i <= n; ++i) {
      bool cut = i == n || (d_.spm_words_split_at_space && is_space(i) && !is_space(i - 1));
      if (!cut) continue;
      Word(std::span(starts).subspan(word_begin, i - word_begin + 1), out);
      word_begin = i;
    }
  }

 private:
  // `starts`: the character starts of one word, plus its end.
  void Word(std::span<const uint32_t> starts, std::vector<int32_t>* out) {
    const std::string_view word = text_.substr(starts.front(), starts.back() - starts.front());
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
    const size_t before = out->size();
    Merge(starts, out);
    cache_.emplace(std::string(word), std::vector<int32_t>(out->begin() + static_cast<ptrdiff_t>(before), out->end()));
  }

  void Merge(std::span<const uint32_t> starts, std::vector<int32_t>* out) {
    const int32_t n = static_cast<int32_t>(starts.size() - 1);
    symbols_.clear();
    for (int32_t i = 0; i < n; ++i)
      symbols_.push_back({i - 1, i + 1 == n ? -1 : i + 1, starts[static_cast<size_t>(i)],
                          starts[static_cast<size_t>(i) + 1] - starts[static_cast<size_t>(i)]});
    heap_.clear();
    for (int32_t i = 1; i < n; ++i) TryAdd(i - 1, i);
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), BigramOrder());
      const Bigram b = heap_.back();
      heap_.pop_back();
      Symbol& l = symbols_[static_cast<size_t>(b.left)];
      Symbol& r = symbols_[static_cast<size_t>(b.right)];
      if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;  // one side already merged
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) symbols_[static_cast<size_t>(r.next)].prev = b.left;
      TryAdd(l.prev, b.left);
      TryAdd(b.left, l.next);
    }

    for (int32_t i = 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) {
      const Symbol& s = symbols_[static_cast<size_t>(i)];
      std::string_view piece = text_.substr(s.start, s.len);
      int32_t id = d_.Find(piece);
      if (id != kNoToken) {
        out->push_back(id);
        continue;
      }
      // Byte fallback. llama.cpp throws (std::out_of_range) when a byte has no
      // token at all; such bytes are skipped here.
      for (char c : piece) {
        int32_t byte_id = d_.byte_tokens[static_cast<uint8_t>(c)];
        if (byte_id != kNoToken) out->push_back(byte_id);
      }
    }
  }

  void TryAdd(int32_t left, int32_t right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = symbols_[static_cast<size_t>(left)];
    const Symbol& r = symbols_[static_cast<size_t>(right)];
    int32_t id = d_.Find(text_.substr(l.start, l.len + r.len));
    if (id == kNoToken) return;
    float score = d_.vocab.scores.empty() ? 0.0f : d_.vocab.scores[static_cast<size_t>(id)];
    heap_.push_back({score, left, right, l.len + r.len});
    std::push_heap(heap_.begin(), heap_.end(), BigramOrder());
  }

  const TokenizerData& d_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::vector<Bigram> heap_;
  std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace

void EncodeSpm(const TokenizerData& d, const std::vector<Fragment>& fragments, std::vector<int32_t>* out) {
  SpmSession session(d);
  bool prev_special = true;  // the first text fragment gets the space prefix too
  std::string text;
  for (const Fragment& f : fragments) {
    if (f.token != kNoToken) {
      out->push_back(f.token);
      prev_special = true;
      continue;
    }
    // " " before the fragment (after BOS or a special token), then every
    // space escaped to U+2581.
    text.clear();
    if (d.vocab.add_space_prefix && prev_special) text += kEscapedSpace;
    for (char c : f.text) {
      if (c == ' ')
        text += kEscapedSpace;
      else
        text += c;
    }
    session.Run(text, out);
    prev_special = false;
  }
}

}  // namespace strata::tokenizer
