#pragma once
// ExpertCache: which experts the device tier holds, slot by slot. Pure
// bookkeeping (no memory, no device): the tiered executor asks it on every
// routed expert, and bench/expert_cache_bench.cc replays routing traces
// through the same code to measure hit rates.
//
// Slots [0, pinned) are filled once from the expert profile (the hottest
// (layer, expert) pairs over all layers) and never change. Slots [pinned,
// slots) are the run-time tier, either shared by all layers or split evenly
// between layers (per_layer: one layer's burst cannot evict another layer's
// experts, and a region smaller than one token's n_layer * k accesses does
// not thrash, which a shared LRU does):
//  * kLru: a miss takes the least recently used slot.
//  * kLfru (frequency-weighted LRU): every expert, cached or not, has a use
//    count that halves every `half_life` accesses; a miss takes the slot
//    whose expert has the lowest decayed count, and only if the newcomer's
//    decayed count is at least that high (one-off experts do not push out
//    recurring ones). Ordering by log(count) + t * ln2 / half_life keeps the
//    order fixed between uses, so eviction is a set lookup. With a profile,
//    the counts start from the profile's rates (FillFromHotness), so
//    profiled experts hold their slots until the session shows otherwise.
// A miss is computed on the host tier; the executor then uploads the expert
// into the slot the cache chose, for the next token.

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/experts/expert_hotness.h"
#include "runtime/experts/routing_trace.h"

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
  bool per_layer = false;  // split the run-time slots evenly between layers
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
  // recent); returns (key, slot) for each placed. Experts already cached, and
  // experts whose layer has no free slot left, are skipped.
  std::vector<std::pair<ExpertKey, int32_t>> Warm(const std::vector<ExpertKey>& keys);
  // kLfru: starts every expert's decayed count at its profile rate (uses per
  // access in the profile) times the half-life / ln 2: the count a steady
  // stream at that rate converges to. Call before Warm.
  void Seed(const ExpertHotness& hotness);
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
  struct Group {
    std::vector<int32_t> free;       // free slots (a stack)
    int32_t lru = -1, mru = -1;      // LRU list of occupied slots (prev_/next_)
    std::vector<int32_t> heap;       // LFRU: occupied slots, a min-heap on (slot_score_, slot)
  };
  size_t Index(ExpertKey k) const { return static_cast<size_t>(k.layer) * n_expert_ + k.expert; }
  // The run-time group of a layer / of a slot: 0 when shared, the layer when per_layer.
  size_t GroupOf(int32_t layer) const { return config_.per_layer ? static_cast<size_t>(layer) : 0; }
  void Place(ExpertKey key, int32_t slot);
  void Unlink(int32_t slot);
  void PushMru(int32_t slot);
  double Touch(size_t index, uint64_t rows);  // LFRU: the key's new score
  // LFRU's eviction order: an indexed min-heap per group, sized once, so
  // nothing is allocated while a run accesses the cache.
  bool Less(int32_t a, int32_t b) const;
  void HeapSwap(Group& g, size_t i, size_t j);
  void SiftUp(Group& g, size_t i);
  void SiftDown(Group& g, size_t i);
  void HeapPush(Group& g, int32_t slot, double score);
  void HeapRemove(Group& g, int32_t slot);
  void HeapUpdate(Group& g, int32_t slot, double score);

  uint32_t n_layer_, n_expert_;
  ExpertCacheConfig config_;
  double lambda_ = 0;  // LFRU decay per access (ln 2 / half-life)
  uint64_t clock_ = 0;
  std::vector<int32_t> slot_of_;   // [layer][expert] -> slot, -1
  std::vector<int64_t> key_of_;    // [slot] -> key index, -1
  std::vector<uint32_t> group_of_slot_;
  std::vector<int32_t> prev_, next_;  // LRU lists
  std::vector<Group> groups_;
  std::vector<double> score_;      // LFRU: [layer][expert] log(decayed count) + clock * lambda; -inf never used
  std::vector<double> slot_score_; // LFRU: [slot] the score of the expert it holds
  std::vector<int32_t> heap_pos_;  // LFRU: [slot] index in its group's heap, -1
  CacheStats stats_;
};

// Pins the hottest experts of `hotness` in the pinned slots and (when `warm`)
// fills the run-time slots with the next hottest. Returns (key, slot) for
// every slot filled, pinned first: the executor uploads them.
std::vector<std::pair<ExpertKey, int32_t>> FillFromHotness(ExpertCache& cache, const ExpertHotness& hotness, bool warm);

// Replays tokens [begin, end) of a trace through the cache, one access per
// routed (token, layer, expert), as decode does; returns the stats of the
// replay alone (the cache keeps its state).
CacheStats ReplayRouting(ExpertCache& cache, const RoutingTrace& trace, uint64_t begin = 0, uint64_t end = UINT64_MAX);

}  // namespace strata
