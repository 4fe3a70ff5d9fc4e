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
  for (int32_t s = config_.slots - 1; s >= config_.pinned; --s) free_.push_back(s);
  if (config_.policy == CachePolicy::kLfru) {
    double half = config_.half_life > 0 ? config_.half_life : 64.0 * n_layer * std::max<uint32_t>(config_.k, 1);
    config_.half_life = half;
    lambda_ = std::log(2.0) / half;
    score_.assign(n_keys, -std::numeric_limits<double>::infinity());
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
  if (prev_[i] >= 0) next_[static_cast<size_t>(prev_[i])] = next_[i];
  else lru_ = next_[i];
  if (next_[i] >= 0) prev_[static_cast<size_t>(next_[i])] = prev_[i];
  else mru_ = prev_[i];
  prev_[i] = next_[i] = -1;
}

void ExpertCache::PushMru(int32_t s) {
  const size_t i = static_cast<size_t>(s);
  prev_[i] = mru_;
  next_[i] = -1;
  if (mru_ >= 0) next_[static_cast<size_t>(mru_)] = s;
  else lru_ = s;
  mru_ = s;
}

double ExpertCache::Touch(size_t index, uint64_t rows) {
  const double t = static_cast<double>(clock_);
  const double old = score_[index];
  const double decayed = std::isinf(old) ? 0.0 : std::exp(old - lambda_ * t);
  score_[index] = std::log(decayed + static_cast<double>(rows)) + lambda_ * t;
  return score_[index];
}

std::vector<std::pair<ExpertKey, int32_t>> ExpertCache::Warm(const std::vector<ExpertKey>& keys) {
  std::vector<std::pair<ExpertKey, int32_t>> placed;
  // The list is given hottest first; place the coldest first so the hottest ends most recent.
  std::vector<ExpertKey> take;
  for (const ExpertKey& k : keys) {
    if (take.size() >= free_.size()) break;
    if (k.layer < 0 || static_cast<uint32_t>(k.layer) >= n_layer_ || k.expert >= n_expert_ || SlotOf(k) >= 0) continue;
    if (std::find(take.begin(), take.end(), k) != take.end()) continue;
    take.push_back(k);
  }
  for (auto it = take.rbegin(); it != take.rend(); ++it) {
    const int32_t s = free_.back();
    free_.pop_back();
    Place(*it, s);
    if (config_.policy == CachePolicy::kLru) {
      PushMru(s);
    } else {
      by_score_.emplace(Touch(Index(*it), 1), s);
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
  double score = 0;
  if (lfru) {
    if (s >= config_.pinned) by_score_.erase({score_[idx], s});
    score = Touch(idx, rows);
  }
  if (s >= 0) {
    stats_.hits += rows;
    stats_.layer_hits[static_cast<size_t>(key.layer)] += rows;
    if (s < config_.pinned) {
      stats_.pinned_hits += rows;
    } else if (lfru) {
      by_score_.emplace(score, s);
    } else {
      Unlink(s);
      PushMru(s);
    }
    a.slot = s;
    return a;
  }
  stats_.misses += rows;
  stats_.layer_misses[static_cast<size_t>(key.layer)] += rows;
  if (config_.slots == config_.pinned) return a;  // no run-time tier
  int32_t target = -1;
  if (!free_.empty()) {
    target = free_.back();
    free_.pop_back();
  } else if (lfru) {
    auto victim = by_score_.begin();
    if (victim == by_score_.end() || score < victim->first) return a;  // not admitted
    target = victim->second;
    by_score_.erase(victim);
  } else {
    target = lru_;
    Unlink(target);
  }
  if (auto old = KeyOf(target)) {
    slot_of_[Index(*old)] = -1;
    a.evicted = old;
    ++stats_.evictions;
  }
  Place(key, target);
  if (lfru) by_score_.emplace(score, target);
  else PushMru(target);
  ++stats_.uploads;
  a.upload = target;
  return a;
}

void ExpertCache::Drop(int32_t slot) {
  if (slot < config_.pinned || slot >= config_.slots) {
    if (auto k = KeyOf(slot)) {  // a pinned slot that could not be filled
      slot_of_[Index(*k)] = -1;
      key_of_[static_cast<size_t>(slot)] = -1;
    }
    return;
  }
  auto k = KeyOf(slot);
  if (!k) return;
  if (config_.policy == CachePolicy::kLfru) by_score_.erase({score_[Index(*k)], slot});
  else Unlink(slot);
  slot_of_[Index(*k)] = -1;
  key_of_[static_cast<size_t>(slot)] = -1;
  free_.push_back(slot);
}

}  // namespace strata
