#include "runtime/experts/expert_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/base/strings.h"

namespace strata {

std::string_view CachePolicyName(CachePolicy p) { return p == CachePolicy::kLfru ? "lfru" : "lru"; }

Result<CachePolicy> ParseCachePolicy(std::string_view s) {
  if (s == "lru") return CachePolicy::kLru;
  if (s == "lfru") return CachePolicy::kLfru;
  return InvalidArgument("expert cache policy '" + Printable(s) + "': expected lru or lfru");
}

ExpertCache::ExpertCache(uint32_t n_layer, uint32_t n_expert, const ExpertCacheConfig& config)
    : n_layer_(n_layer), n_expert_(n_expert), config_(config) {
  config_.slots = std::max(config_.slots, 0);
  config_.pinned = std::clamp(config_.pinned, 0, config_.slots);
  const size_t n_keys = static_cast<size_t>(n_layer) * n_expert;
  slot_of_.assign(n_keys, -1);
  key_of_.assign(static_cast<size_t>(config_.slots), -1);
  prev_.assign(static_cast<size_t>(config_.slots), -1);
  next_.assign(static_cast<size_t>(config_.slots), -1);
  group_of_slot_.assign(static_cast<size_t>(config_.slots), 0);
  groups_.resize(config_.per_layer ? std::max<uint32_t>(n_layer, 1) : 1);
  // Run-time slots in order, dealt to the groups in contiguous ranges (the
  // first layers get one more when they do not divide evenly).
  const int32_t dynamic = config_.slots - config_.pinned;
  const int32_t n_groups = static_cast<int32_t>(groups_.size());
  int32_t slot = config_.pinned;
  for (int32_t g = 0; g < n_groups; ++g) {
    const int32_t n = dynamic / n_groups + (g < dynamic % n_groups ? 1 : 0);
    for (int32_t i = 0; i < n; ++i) group_of_slot_[static_cast<size_t>(slot + i)] = static_cast<uint32_t>(g);
    for (int32_t i = n - 1; i >= 0; --i) groups_[static_cast<size_t>(g)].free.push_back(slot + i);
    slot += n;
  }
  if (config_.policy == CachePolicy::kLfru) {
    double half = config_.half_life > 0 ? config_.half_life : 64.0 * n_layer * std::max<uint32_t>(config_.k, 1);
    config_.half_life = half;
    lambda_ = std::log(2.0) / half;
    score_.assign(n_keys, -std::numeric_limits<double>::infinity());
    slot_score_.assign(static_cast<size_t>(config_.slots), 0.0);
    heap_pos_.assign(static_cast<size_t>(config_.slots), -1);
    for (Group& g : groups_) g.heap.reserve(g.free.size());
  }
  stats_.layer_hits.assign(n_layer, 0);
  stats_.layer_misses.assign(n_layer, 0);
}

void ExpertCache::ResetStats() {
  stats_ = CacheStats{};
  stats_.layer_hits.assign(n_layer_, 0);
  stats_.layer_misses.assign(n_layer_, 0);
}

std::optional<ExpertKey> ExpertCache::KeyOf(int32_t slot) const {
  if (slot < 0 || slot >= config_.slots || key_of_[static_cast<size_t>(slot)] < 0) return std::nullopt;
  const int64_t i = key_of_[static_cast<size_t>(slot)];
  return ExpertKey{static_cast<int32_t>(i / n_expert_), static_cast<uint32_t>(i % n_expert_)};
}

void ExpertCache::Place(ExpertKey key, int32_t slot) {
  slot_of_[Index(key)] = slot;
  key_of_[static_cast<size_t>(slot)] = static_cast<int64_t>(Index(key));
}

std::vector<std::pair<ExpertKey, int32_t>> ExpertCache::Pin(const std::vector<ExpertKey>& keys) {
  std::vector<std::pair<ExpertKey, int32_t>> placed;
  int32_t slot = 0;
  for (const ExpertKey& k : keys) {
    if (slot >= config_.pinned) break;
    if (k.layer < 0 || static_cast<uint32_t>(k.layer) >= n_layer_ || k.expert >= n_expert_ || SlotOf(k) >= 0) continue;
    while (slot < config_.pinned && key_of_[static_cast<size_t>(slot)] >= 0) ++slot;
    if (slot >= config_.pinned) break;
    Place(k, slot);
    placed.emplace_back(k, slot);
  }
  return placed;
}

void ExpertCache::Unlink(int32_t s) {
  const size_t i = static_cast<size_t>(s);
  Group& g = groups_[group_of_slot_[i]];
  if (prev_[i] >= 0) next_[static_cast<size_t>(prev_[i])] = next_[i];
  else g.lru = next_[i];
  if (next_[i] >= 0) prev_[static_cast<size_t>(next_[i])] = prev_[i];
  else g.mru = prev_[i];
  prev_[i] = next_[i] = -1;
}

void ExpertCache::PushMru(int32_t s) {
  const size_t i = static_cast<size_t>(s);
  Group& g = groups_[group_of_slot_[i]];
  prev_[i] = g.mru;
  next_[i] = -1;
  if (g.mru >= 0) next_[static_cast<size_t>(g.mru)] = s;
  else g.lru = s;
  g.mru = s;
}

double ExpertCache::Touch(size_t index, uint64_t rows) {
  const double t = static_cast<double>(clock_);
  const double old = score_[index];
  const double decayed = std::isinf(old) ? 0.0 : std::exp(old - lambda_ * t);
  score_[index] = std::log(decayed + static_cast<double>(rows)) + lambda_ * t;
  return score_[index];
}

bool ExpertCache::Less(int32_t a, int32_t b) const {
  const double sa = slot_score_[static_cast<size_t>(a)], sb = slot_score_[static_cast<size_t>(b)];
  return sa != sb ? sa < sb : a < b;
}

void ExpertCache::HeapSwap(Group& g, size_t i, size_t j) {
  std::swap(g.heap[i], g.heap[j]);
  heap_pos_[static_cast<size_t>(g.heap[i])] = static_cast<int32_t>(i);
  heap_pos_[static_cast<size_t>(g.heap[j])] = static_cast<int32_t>(j);
}

void ExpertCache::SiftUp(Group& g, size_t i) {
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (!Less(g.heap[i], g.heap[parent])) break;
    HeapSwap(g, i, parent);
    i = parent;
  }
}

void ExpertCache::SiftDown(Group& g, size_t i) {
  for (;;) {
    size_t best = i;
    const size_t l = 2 * i + 1, r = l + 1;
    if (l < g.heap.size() && Less(g.heap[l], g.heap[best])) best = l;
    if (r < g.heap.size() && Less(g.heap[r], g.heap[best])) best = r;
    if (best == i) return;
    HeapSwap(g, i, best);
    i = best;
  }
}

void ExpertCache::HeapPush(Group& g, int32_t slot, double score) {
  slot_score_[static_cast<size_t>(slot)] = score;
  g.heap.push_back(slot);  // within the capacity reserved at construction
  heap_pos_[static_cast<size_t>(slot)] = static_cast<int32_t>(g.heap.size() - 1);
  SiftUp(g, g.heap.size() - 1);
}

void ExpertCache::HeapRemove(Group& g, int32_t slot) {
  const int32_t at = heap_pos_[static_cast<size_t>(slot)];
  if (at < 0) return;
  const size_t i = static_cast<size_t>(at), last = g.heap.size() - 1;
  if (i != last) HeapSwap(g, i, last);
  g.heap.pop_back();
  heap_pos_[static_cast<size_t>(slot)] = -1;
  if (i < g.heap.size()) {
    SiftUp(g, i);
    SiftDown(g, i);
  }
}

void ExpertCache::HeapUpdate(Group& g, int32_t slot, double score) {
  slot_score_[static_cast<size_t>(slot)] = score;
  const size_t i = static_cast<size_t>(heap_pos_[static_cast<size_t>(slot)]);
  SiftUp(g, i);
  SiftDown(g, i);
}

void ExpertCache::Seed(const ExpertHotness& h) {
  if (config_.policy != CachePolicy::kLfru || h.n_layer != n_layer_ || h.n_expert != n_expert_) return;
  uint64_t total = 0;
  for (uint64_t c : h.counts) total += c;
  if (total == 0) return;
  const double scale = config_.half_life / std::log(2.0) / static_cast<double>(total);
  const double t = static_cast<double>(clock_);
  for (size_t i = 0; i < score_.size(); ++i)
    if (h.counts[i] > 0) score_[i] = std::log(static_cast<double>(h.counts[i]) * scale) + lambda_ * t;
}

std::vector<std::pair<ExpertKey, int32_t>> ExpertCache::Warm(const std::vector<ExpertKey>& keys) {
  std::vector<std::pair<ExpertKey, int32_t>> placed;
  // Per group, the keys that fit its free slots, hottest first.
  std::vector<std::vector<ExpertKey>> take(groups_.size());
  for (const ExpertKey& k : keys) {
    if (k.layer < 0 || static_cast<uint32_t>(k.layer) >= n_layer_ || k.expert >= n_expert_ || SlotOf(k) >= 0) continue;
    auto& t = take[GroupOf(k.layer)];
    if (t.size() >= groups_[GroupOf(k.layer)].free.size()) continue;
    if (std::find(t.begin(), t.end(), k) != t.end()) continue;
    t.push_back(k);
  }
  // The coldest first, so the hottest ends most recent.
  for (size_t g = 0; g < groups_.size(); ++g)
    for (auto it = take[g].rbegin(); it != take[g].rend(); ++it) {
      const int32_t s = groups_[g].free.back();
      groups_[g].free.pop_back();
      Place(*it, s);
      if (config_.policy == CachePolicy::kLru) {
        PushMru(s);
      } else {
        const size_t idx = Index(*it);
        if (std::isinf(score_[idx])) Touch(idx, 1);
        HeapPush(groups_[g], s, score_[idx]);
      }
      placed.emplace_back(*it, s);
    }
  return placed;
}

CacheAccess ExpertCache::Access(ExpertKey key, uint64_t rows) {
  CacheAccess a;
  const size_t idx = Index(key);
  ++clock_;
  const int32_t s = slot_of_[idx];
  const bool lfru = config_.policy == CachePolicy::kLfru;
  Group& g = groups_[GroupOf(key.layer)];
  double score = 0;
  if (lfru) score = Touch(idx, rows);
  if (s >= 0) {
    stats_.hits += rows;
    stats_.layer_hits[static_cast<size_t>(key.layer)] += rows;
    if (s < config_.pinned) {
      stats_.pinned_hits += rows;
    } else if (lfru) {
      HeapUpdate(g, s, score);
    } else {
      Unlink(s);
      PushMru(s);
    }
    a.slot = s;
    return a;
  }
  stats_.misses += rows;
  stats_.layer_misses[static_cast<size_t>(key.layer)] += rows;
  int32_t target = -1;
  if (!g.free.empty()) {
    target = g.free.back();
    g.free.pop_back();
  } else if (lfru) {
    if (g.heap.empty()) return a;  // no run-time slots
    target = g.heap.front();
    if (score < slot_score_[static_cast<size_t>(target)]) return a;  // not admitted
    HeapRemove(g, target);
  } else {
    if (g.lru < 0) return a;  // no run-time slots
    target = g.lru;
    Unlink(target);
  }
  if (auto old = KeyOf(target)) {
    slot_of_[Index(*old)] = -1;
    a.evicted = old;
    ++stats_.evictions;
  }
  Place(key, target);
  if (lfru) HeapPush(g, target, score);
  else PushMru(target);
  ++stats_.uploads;
  a.upload = target;
  return a;
}

void ExpertCache::Drop(int32_t slot) {
  auto k = KeyOf(slot);
  if (!k) return;
  if (slot >= config_.pinned) {
    Group& g = groups_[group_of_slot_[static_cast<size_t>(slot)]];
    if (config_.policy == CachePolicy::kLfru) HeapRemove(g, slot);
    else Unlink(slot);
    g.free.push_back(slot);
  }
  slot_of_[Index(*k)] = -1;
  key_of_[static_cast<size_t>(slot)] = -1;
}

std::vector<std::pair<ExpertKey, int32_t>> FillFromHotness(ExpertCache& cache, const ExpertHotness& hotness, bool warm) {
  const ExpertCacheConfig& c = cache.config();
  // Warm wants the whole ranking: with per-layer groups, each layer's slots
  // take that layer's hottest, wherever they rank overall.
  std::vector<ExpertKey> hot = hotness.Hottest(warm ? hotness.counts.size() : static_cast<size_t>(c.pinned));
  const size_t n_pin = std::min(hot.size(), static_cast<size_t>(c.pinned));
  std::vector<ExpertKey> pin(hot.begin(), hot.begin() + static_cast<ptrdiff_t>(n_pin));
  std::vector<ExpertKey> rest(hot.begin() + static_cast<ptrdiff_t>(n_pin), hot.end());
  std::vector<std::pair<ExpertKey, int32_t>> placed = cache.Pin(pin);
  cache.Seed(hotness);
  if (warm) {
    auto w = cache.Warm(rest);
    placed.insert(placed.end(), w.begin(), w.end());
  }
  return placed;
}

CacheStats ReplayRouting(ExpertCache& cache, const RoutingTrace& trace, uint64_t begin, uint64_t end) {
  cache.ResetStats();
  end = std::min(end, trace.tokens());
  for (uint64_t t = begin; t < end; ++t)
    for (uint32_t l = 0; l < trace.n_layer; ++l)
      for (int32_t e : trace.Experts(t, l))
        if (e >= 0) cache.Access({static_cast<int32_t>(l), static_cast<uint32_t>(e)});
  return cache.stats();
}

}  // namespace strata
