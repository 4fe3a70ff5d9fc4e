#include "runtime/grammar/token_mask.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <numeric>

#include "runtime/base/strings.h"

namespace strata::grammar {
namespace {

using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr size_t kMaxTokenBytes = 4096;  // longer tokens are never allowed (no vocabulary has them)

}  // namespace

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes)
    : bytes_(token_bytes), n_tokens_(static_cast<int32_t>(token_bytes.size())) {
  std::vector<int32_t> ids;
  for (int32_t t = 0; t < n_tokens_; ++t) {
    const std::string& b = bytes_[static_cast<size_t>(t)];
    if (!b.empty() && b.size() <= kMaxTokenBytes) ids.push_back(t);
  }
  std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    int c = bytes_[static_cast<size_t>(a)].compare(bytes_[static_cast<size_t>(b)]);
    return c != 0 ? c < 0 : a < b;
  });
  std::vector<uint32_t> open;  // open[d - 1]: the node of depth d on the current path
  const std::string* prev = nullptr;
  for (int32_t id : ids) {
    const std::string& b = bytes_[static_cast<size_t>(id)];
    size_t lcp = 0;
    if (prev)
      while (lcp < prev->size() && lcp < b.size() && (*prev)[lcp] == b[lcp]) ++lcp;
    while (open.size() > lcp) {
      nodes_[open.back()].end = static_cast<uint32_t>(nodes_.size());
      open.pop_back();
    }
    for (size_t d = lcp + 1; d <= b.size(); ++d) {
      Node n;
      n.byte = static_cast<uint8_t>(b[d - 1]);
      n.depth = static_cast<uint16_t>(d);
      n.tok_begin = n.tok_end = static_cast<uint32_t>(order_.size());
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(n);
    }
    order_.push_back(id);
    nodes_[open.back()].tok_end = static_cast<uint32_t>(order_.size());
    max_depth_ = std::max(max_depth_, b.size());
    prev = &b;
  }
  for (uint32_t i : open) nodes_[i].end = static_cast<uint32_t>(nodes_.size());
}

TokenMasker::TokenMasker(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> trie)
    : g_(std::move(g)), trie_(std::move(trie)) {}

int32_t TokenMasker::Intern(std::vector<Stack>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  std::string key;
  for (const Stack& st : stacks) {
    key.append(reinterpret_cast<const char*>(st.data()), st.size() * sizeof(uint32_t));
    key.append(4, '\xff');  // no element index is 0xFFFFFFFF
  }
  auto [it, inserted] = set_ids_.emplace(std::move(key), static_cast<int32_t>(sets_.size()));
  if (!inserted) return it->second;
  StackSet set;
  for (const Stack& st : stacks) (st.empty() ? set.finished : set.live) = true;
  set.stacks = stacks;
  set.next.fill(kUnknown);
  sets_.push_back(std::move(set));
  return it->second;
}

int32_t TokenMasker::Next(int32_t set, uint8_t byte) {
  int32_t n = sets_[static_cast<size_t>(set)].next[byte];
  if (n != kUnknown) return n;
  n = AdvanceStacks(*g_, sets_[static_cast<size_t>(set)].stacks, byte, &scratch_, kMaxStacks, &expansion_)
          ? Intern(scratch_)
                                                                                              : kDead;
  sets_[static_cast<size_t>(set)].next[byte] = n;
  if (expansion_.steps - mask_start_steps_ > kMaxMaskSteps) expansion_.overflow = true;
  return n;
}

// Sorts every token into accepted / rejected / uncertain for a stack whose
// top frames are `key` (all of it when `whole`).
void TokenMasker::Walk(const Stack& key, bool whole, Entry* e) {
  const auto t0 = Clock::now();
  const TokenTrie& trie = *trie_;
  const auto& nodes = trie.nodes();
  const auto& order = trie.order();
  e->accepted.assign((static_cast<size_t>(trie.n_tokens()) + 63) / 64, 0);
  e->uncertain.clear();
  levels_.assign(trie.max_depth() + 1, kDead);
  std::vector<uint8_t> popped(trie.max_depth() + 1, 0);  // a path finished the key's frames before this depth
  scratch_.assign(1, key);
  levels_[0] = Intern(scratch_);
  auto accept = [&](int32_t t) { e->accepted[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63); };
  size_t i = 0;
  while (i < nodes.size() && !expansion_.overflow) {
    const TokenTrie::Node& n = nodes[i];
    const size_t d = n.depth;
    const int32_t set = Next(levels_[d - 1], n.byte);
    levels_[d] = set;
    const bool live = set >= 0 && sets_[static_cast<size_t>(set)].live;
    const bool finished = set >= 0 && sets_[static_cast<size_t>(set)].finished;
    const bool before = popped[d - 1] != 0;
    for (uint32_t k = n.tok_begin; k < n.tok_end; ++k) {
      if (live || finished) {
        accept(order[k]);
      } else if (before) {
        e->uncertain.push_back(order[k]);
      }
    }
    // Past a finish, what follows is read by the frames below the key (or,
    // for a whole stack, nothing may follow).
    popped[d] = (before || finished) && !whole;
    if (!live) {
      if (popped[d])
        for (uint32_t k = n.tok_end; k < trie.SubtreeTokensEnd(static_cast<uint32_t>(i)); ++k)
          e->uncertain.push_back(order[k]);
      i = n.end;
      continue;
    }
    ++i;
  }
  ++stats_.keys_computed;
  stats_.walk_ms += MsSince(t0);
}

const TokenMasker::Entry& TokenMasker::Lookup(const Stack& s) {
  const size_t k = std::min(s.size(), kKeyFrames);
  const bool whole = k == s.size();
  std::string key(reinterpret_cast<const char*>(s.data() + (s.size() - k)), k * sizeof(uint32_t));
  key.push_back(whole ? 'w' : 'p');
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Entry& e = cache_[key];
  Walk(Stack(s.end() - static_cast<std::ptrdiff_t>(k), s.end()), whole, &e);
  return e;
}

void TokenMasker::Compute(const Matcher& m, std::vector<uint64_t>* allowed) {
  const auto t0 = Clock::now();
  mask_start_steps_ = expansion_.steps;
  if (cache_.size() >= kMaxKeys) cache_.clear();
  if (sets_.size() >= kMaxSets) {
    sets_.clear();
    set_ids_.clear();
  }
  allowed->assign((static_cast<size_t>(trie_->n_tokens()) + 63) / 64, 0);
  uint64_t* bits = allowed->data();
  for (const Stack& s : m.stacks()) {
    if (s.empty()) continue;
    const Entry& e = Lookup(s);
    for (size_t w = 0; w < e.accepted.size(); ++w) bits[w] |= e.accepted[w];
    CheckUncertain(s, e.uncertain, bits);
  }
  ++stats_.masks;
  stats_.mask_ms += MsSince(t0);
}

// The uncertain tokens of a key are in trie order, so consecutive tokens
// share prefixes: the stacks after each prefix byte are kept per depth and
// reused, and once a prefix is refused every token after it that starts
// with it is skipped.
void TokenMasker::CheckUncertain(const Stack& s, const std::vector<int32_t>& tokens, uint64_t* bits) {
  if (tokens.empty()) return;
  levels_.assign(trie_->max_depth() + 1, kDead);
  scratch_.assign(1, s);
  levels_[0] = Intern(scratch_);
  std::string_view prev;
  size_t have = 0;          // levels_[0..have] hold the sets after prev's first `have` bytes
  size_t dead = SIZE_MAX;   // prev's first `dead` bytes are refused
  for (int32_t t : tokens) {
    if (expansion_.overflow) return;
    const uint64_t bit = uint64_t{1} << (t & 63);
    if (bits[t >> 6] & bit) continue;
    ++stats_.uncertain_checked;
    const std::string_view b = trie_->bytes(t);
    size_t lcp = 0;
    while (lcp < prev.size() && lcp < b.size() && prev[lcp] == b[lcp]) ++lcp;
    if (dead != SIZE_MAX && dead <= lcp) continue;  // starts with a refused prefix
    size_t d = std::min(lcp, have);
    dead = SIZE_MAX;
    for (; d < b.size(); ++d) {
      const int32_t next = Next(levels_[d], static_cast<uint8_t>(b[d]));
      if (next < 0) {
        dead = d + 1;
        break;
      }
      levels_[d + 1] = next;
    }
    have = d;
    prev = b;
    if (dead == SIZE_MAX) bits[t >> 6] |= bit;
  }
}

bool TokenMasker::Allows(const Matcher& m, int32_t t) const {
  if (t < 0 || t >= trie_->n_tokens()) return false;
  const std::string& b = trie_->bytes(t);
  if (b.empty() || b.size() > kMaxTokenBytes) return false;
  for (const Stack& s : m.stacks()) {  // one stack at a time, as Compute judges them
    std::vector<Stack> one{s};
    if (!s.empty() && ReadBytes(*g_, &one, b, &expansion_)) return true;
  }
  return false;
}

bool TokenMasker::ProbeStart(size_t probes, size_t steps) {
  Matcher m(g_);
  std::vector<uint64_t> mask;
  std::vector<int32_t> allowed;
  for (size_t step = 0; step < steps; ++step) {
    Compute(m, &mask);
    if (m.overflowed() || overflowed()) return false;
    allowed.clear();
    for (size_t w = 0; w < mask.size(); ++w)
      for (uint64_t bits = mask[w]; bits != 0; bits &= bits - 1)
        allowed.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits))));
    if (allowed.empty()) return true;  // only the end can follow
    const size_t n = std::min(std::max<size_t>(probes, 1), allowed.size());
    std::partial_sort(allowed.begin(), allowed.begin() + static_cast<std::ptrdiff_t>(n), allowed.end(),
                      [&](int32_t a, int32_t b) {
                        const size_t la = trie_->bytes(a).size(), lb = trie_->bytes(b).size();
                        return la != lb ? la > lb : a < b;
                      });
    for (size_t i = 0; i < n; ++i) {
      Matcher t = m;
      (void)t.Accept(trie_->bytes(allowed[i]));
      if (t.overflowed()) return false;
    }
    if (!m.Accept(trie_->bytes(allowed[0]))) return true;  // (the mask allowed it: cannot happen)
  }
  return true;
}

std::string TooAmbiguousMessage() {
  return StrFormat("the grammar is too ambiguous to enforce: following it needed more than %zu parse stacks or %zu "
                   "steps for one byte, or %llu for one token; simplify it",
                   kMaxStacks, kMaxExpansionSteps, static_cast<unsigned long long>(TokenMasker::kMaxMaskSteps));
}

}  // namespace strata::grammar
