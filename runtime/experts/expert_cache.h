#pragma once
// ExpertCache: which experts the device tier holds, slot by slot. Pure
// bookkeeping (no memory, no device): the tiered executor asks it on every
// routed expert, and bench/expert_cache_bench.cc replays routing traces
// through the same code to measure hit rates.
//
// Slots [0, pinned) are filled once from the expert profile (the hottest
// (layer, expert) pairs over all layers) and never change. Slots [pinned,
// slots) are the run-time tier, shared by all layers:
//  * kLru: a miss takes the least recently used slot.
//  * kLfru (frequency-weighted LRU): every expert, cached or not, has a use
//    count that halves every `half_life` accesses; a miss takes the slot
//    whose expert has the lowest decayed count, and only if the newcomer's
//    decayed count is at least that high (one-off experts do not push out
//    recurring ones). Ordering by log(count) + t * ln2 / half_life keeps the
//    order fixed between uses, so eviction is a set lookup.
// A miss is computed on the host tier; the executor then uploads the expert
// into the slot the cache chose, for the next token.

#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/experts/expert_hotness.h"

namespace strata {

enum class CachePolicy : uint8_t { kLru = 0, kLfru = 1 };
std::string_view CachePolicyName(CachePolicy p);  // "lru", "lfru"
Result<CachePolicy> ParseCachePolicy(std::string_view s);

struct ExpertCacheConfig {
  int32_t slots = 0;   // device slots in all
  int32_t pinned = 0;  // of which filled from the profile and never evicted (<= slots)
  CachePolicy policy = CachePolicy::kLru;
  double half_life = 0;  // kLfru: in accesses (routed experts); 0: 64 tokens' worth (64 * n_layer * k)
  uint32_t k = 1;        // experts per token per layer (for the default half-life)
};

struct CacheAccess {
  int32_t slot = -1;    // a hit: the slot that holds the expert
  int32_t upload = -1;  // a miss that was admitted: upload the expert into this slot
  std::optional<ExpertKey> evicted;  // the expert that slot held before
};

struct CacheStats {
  uint64_t hits = 0;         // routed token-expert pairs served from a slot
  uint64_t pinned_hits = 0;  // of which from a pinned slot
  uint64_t misses = 0;       // computed on the host
  uint64_t uploads = 0;
  uint64_t evictions = 0;
  std::vector<uint64_t> layer_hits, layer_misses;
  double HitRate() const { return hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0; }
};

class ExpertCache {
 public:
  // REQUIRES: 0 <= pinned <= slots.
  ExpertCache(uint32_t n_layer, uint32_t n_expert, const ExpertCacheConfig& config);

  // Places `keys` (hottest first) in the pinned slots, as many as there are;
  // returns (key, slot) for each placed. Call once, before any Access.
  std::vector<std::pair<ExpertKey, int32_t>> Pin(const std::vector<ExpertKey>& keys);
  // Places `keys` in free run-time slots (a warm start; the first is the most
  // recent); returns (key, slot) for each placed. Experts already cached are skipped.
  std::vector<std::pair<ExpertKey, int32_t>> Warm(const std::vector<ExpertKey>& keys);
  // One use of `key` by `rows` tokens.
  CacheAccess Access(ExpertKey key, uint64_t rows = 1);
  // The slot's upload failed or was abandoned: the slot holds nothing now.
  void Drop(int32_t slot);

  int32_t SlotOf(ExpertKey key) const { return slot_of_[Index(key)]; }
  std::optional<ExpertKey> KeyOf(int32_t slot) const;
  const ExpertCacheConfig& config() const { return config_; }
  const CacheStats& stats() const { return stats_; }
  void ResetStats();

 private:
  size_t Index(ExpertKey k) const { return static_cast<size_t>(k.layer) * n_expert_ + k.expert; }
  void Place(ExpertKey key, int32_t slot);
  void Unlink(int32_t slot);
  void PushMru(int32_t slot);
  double Touch(size_t index, uint64_t rows);  // LFRU: the key's new score

  uint32_t n_layer_, n_expert_;
  ExpertCacheConfig config_;
  double lambda_ = 0;  // LFRU decay per access (ln 2 / half-life)
  uint64_t clock_ = 0;
  std::vector<int32_t> slot_of_;   // [layer][expert] -> slot, -1
  std::vector<int64_t> key_of_;    // [slot] -> key index, -1
  std::vector<int32_t> free_;      // free run-time slots (a stack)
  std::vector<int32_t> prev_, next_;  // LRU list of occupied run-time slots
  int32_t lru_ = -1, mru_ = -1;
  std::vector<double> score_;      // LFRU: [layer][expert] log(decayed count) + clock * lambda; -inf never used
  std::set<std::pair<double, int32_t>> by_score_;  // LFRU: occupied run-time slots
  CacheStats stats_;
};

}  // namespace strata
