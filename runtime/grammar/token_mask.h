#pragma once
// Constrained sampling: which tokens a grammar allows next.
//
// TokenTrie lays the vocabulary's byte strings out as a trie in pre-order,
// so a walk can skip a whole subtree (every token starting with a prefix the
// grammar refuses) by jumping to its end. TokenMasker answers "which tokens
// can the Matcher read next" in two parts:
//  - per parse-stack top (the top kKeyFrames frames of a stack: the key), a
//    cached walk of the trie that sorts every token into accepted (read
//    whole within those frames), rejected, or uncertain (it finishes the
//    frames and goes on, so what follows decides): computed once per key
//    and grammar, kept across tokens and requests with the same grammar;
//  - per step, the union of the cached accepted sets of the matcher's
//    stacks, plus the uncertain tokens checked against the whole stack.
// End-of-generation tokens are not the trie's business: the caller allows
// them when Matcher::CanEnd().

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/grammar/grammar.h"

namespace strata::grammar {

class TokenTrie {
 public:
  // token_bytes[t]: what token t reads as text; empty: never allowed as text
  // (control tokens).
  explicit TokenTrie(const std::vector<std::string>& token_bytes);

  struct Node {
    uint32_t end = 0;        // the index after this node's subtree
    uint32_t tok_begin = 0;  // tokens ending here: order_[tok_begin, tok_end)
    uint32_t tok_end = 0;
    uint16_t depth = 0;      // 1 for a token's first byte
    uint8_t byte = 0;
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  // Tokens in pre-order: a subtree's tokens are order_[node.tok_begin, nodes_[node.end].tok_begin).
  const std::vector<int32_t>& order() const { return order_; }
  // The first token of the subtree starting at node index i (or the total).
  uint32_t SubtreeTokensEnd(uint32_t i) const {
    const Node& n = nodes_[i];
    return n.end < nodes_.size() ? nodes_[n.end].tok_begin : static_cast<uint32_t>(order_.size());
  }
  int32_t n_tokens() const { return n_tokens_; }
  const std::string& bytes(int32_t t) const { return bytes_[static_cast<size_t>(t)]; }
  size_t max_depth() const { return max_depth_; }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> order_;
  std::vector<std::string> bytes_;
  int32_t n_tokens_ = 0;
  size_t max_depth_ = 0;
};

struct MaskStats {
  uint64_t masks = 0;             // Compute calls
  uint64_t keys_computed = 0;     // trie walks (cache misses)
  uint64_t uncertain_checked = 0; // tokens checked against a whole stack
  double walk_ms = 0;             // time in trie walks
  double mask_ms = 0;             // time in Compute, walks included
};

// What a client is told when a grammar proves too ambiguous to enforce
// (Matcher or TokenMasker overflowed()): the limits, and what to do.
std::string TooAmbiguousMessage();

class TokenMasker {
 public:
  static constexpr size_t kKeyFrames = 3;
  static constexpr size_t kMaxKeys = 256;   // cached walks per grammar; the cache restarts beyond

  TokenMasker(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> trie);

  // Sets `allowed` (n_tokens bits, 64 per word) to the tokens the matcher
  // can read whole next. Not thread-safe (one caller at a time).
  void Compute(const Matcher& m, std::vector<uint64_t>* allowed);
  // Whether token t can be read next (without computing a mask).
  bool Allows(const Matcher& m, int32_t t) const;
  // A check before the grammar is used: a walk of `steps` tokens from the
  // start, each the longest the mask allows (ties: the lowest id), where at
  // every step the mask is computed and the `probes` longest allowed tokens
  // are read through a matcher (the mask's walks look at the top frames of
  // a stack only, so a grammar whose parse stacks multiply shows it in the
  // matcher). False when anything overflowed: the grammar is too ambiguous.
  // Deterministic, and it warms the caches the first tokens need. Not a
  // proof: an overflow deeper into some other text is still possible.
  bool ProbeStart(size_t probes = 32, size_t steps = 8);

  const MaskStats& stats() const { return stats_; }
  // The grammar proved too ambiguous to enforce: an expansion hit a limit
  // (grammar.h), or one mask took more than kMaxMaskSteps expansion steps.
  // Sticky: masks computed since are incomplete; the caller must stop.
  bool overflowed() const { return expansion_.overflow; }
  // Set by the one thread that uses the masker once it saw overflowed();
  // read by any thread (a server's grammar cache): a grammar proven too
  // ambiguous is refused on arrival from then on, instead of passing the
  // check walk again and failing mid-answer. Sticky.
  void MarkTooAmbiguous() { too_ambiguous_.store(true, std::memory_order_release); }
  bool proven_too_ambiguous() const { return too_ambiguous_.load(std::memory_order_acquire); }
  static constexpr uint64_t kMaxMaskSteps = uint64_t{1} << 24;
  const Grammar& grammar() const { return *g_; }
  const std::shared_ptr<const Grammar>& shared_grammar() const { return g_; }
  const TokenTrie& trie() const { return *trie_; }

 private:
  struct Entry {
    std::vector<uint64_t> accepted;  // bits
    std::vector<int32_t> uncertain;
  };
  // Sets of stacks, interned, with their transitions on each byte filled in
  // as they are needed: walks then follow a table instead of re-expanding
  // the same stacks at every trie node (inside a string, every character
  // leads back to the same set).
  struct StackSet {
    std::vector<Stack> stacks;
    bool live = false;      // a stack can read more
    bool finished = false;  // an empty stack: everything the set stands for is read
    std::array<int32_t, 256> next;  // kUnknown, kDead, or a set
  };
  static constexpr int32_t kUnknown = -1, kDead = -2;
  static constexpr size_t kMaxSets = 4096;  // ~5 MB; the table restarts beyond (between masks)
  int32_t Intern(std::vector<Stack>& stacks);
  int32_t Next(int32_t set, uint8_t byte);

  const Entry& Lookup(const Stack& s);
  void Walk(const Stack& key, bool whole, Entry* e);
  void CheckUncertain(const Stack& s, const std::vector<int32_t>& tokens, uint64_t* bits);

  std::shared_ptr<const Grammar> g_;
  std::atomic<bool> too_ambiguous_{false};
  std::shared_ptr<const TokenTrie> trie_;
  std::unordered_map<std::string, Entry> cache_;
  MaskStats stats_;
  mutable ExpansionStats expansion_;  // Allows (const) counts too
  uint64_t mask_start_steps_ = 0;
  std::vector<StackSet> sets_;
  std::unordered_map<std::string, int32_t> set_ids_;
  std::vector<Stack> scratch_;
  std::vector<int32_t> levels_;  // walks: the set after each depth's prefix
};

}  // namespace strata::grammar
