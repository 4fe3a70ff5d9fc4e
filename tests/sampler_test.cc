#include "runtime/model/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

namespace strata {
namespace {

// The definition Argmax must keep: one scan, the first index whose logit is
// greater than every earlier one's (NaN never compares greater).
int32_t ScanArgmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  return best;
}

TEST(Sampler, ArgmaxIsTheFirstLargestLogit) {
  std::mt19937_64 rng(7);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  int checked = 0;
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{8}, size_t{9}, size_t{15}, size_t{16},
                   size_t{17}, size_t{33}, size_t{100}, size_t{151936}}) {
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<float> logits(n);
      // Few distinct values, so that the maximum is often tied (the first
      // one must win), with -inf, +inf and NaN sprinkled in.
      std::uniform_int_distribution<int> level(0, trial % 2 ? 3 : 1000);
      std::uniform_int_distribution<int> special(0, 19);
      for (float& v : logits) {
        v = static_cast<float>(level(rng)) - 500.0f;
        const int s = special(rng);
        if (trial >= 10 && s == 0) v = -inf;
        if (trial >= 20 && s == 1) v = nan;
        if (trial >= 30 && s == 2) v = inf;
      }
      if (n > 0 && trial % 10 == 9) logits[0] = trial >= 20 ? nan : -inf;
      if (trial == 5) std::fill(logits.begin(), logits.end(), -inf);
      EXPECT_EQ(Sampler::Argmax(logits), ScanArgmax(logits)) << "n " << n << " trial " << trial;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 12 * 40);
  // By hand: the earlier of two equal maxima, in different interleaved scans
  // (index i in scan i % 8), the earlier one in the higher-numbered scan.
  const std::vector<float> tie = {1, 5, 2, 3, 4, 0, 1, 2, 3, 5, 5};
  EXPECT_EQ(Sampler::Argmax(tie), 1);
  const std::vector<float> tie_wrapped = {0, 0, 0, 0, 0, 0, 0, 5, 5, 0};
  EXPECT_EQ(Sampler::Argmax(tie_wrapped), 7);
  const std::vector<float> late = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 99};
  EXPECT_EQ(Sampler::Argmax(late), 23);
  const std::vector<float> nan_first = {nan, 1, 2};
  EXPECT_EQ(Sampler::Argmax(nan_first), 0);
}

// logit_bias is added before anything else; -infinity bans a token, in the
// greedy and the sampled paths alike, and a ban of every candidate is -1.
TEST(Sampler, LogitBiasShiftsAndBans) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.5f};
  const float ban = -std::numeric_limits<float>::infinity();
  SamplingParams greedy;
  greedy.temperature = 0;
  EXPECT_EQ(Sampler(greedy).Sample(logits, {}), 1);
  greedy.logit_bias = {{2, 1.5f}};  // 2 + 1.5 > 3
  EXPECT_FALSE(greedy.IsPlainArgmax());
  EXPECT_EQ(Sampler(greedy).Sample(logits, {}), 2);
  greedy.logit_bias = {{1, ban}, {2, ban}, {99, 100.0f}};  // an id past the logits is ignored
  EXPECT_EQ(Sampler(greedy).Sample(logits, {}), 0);
  greedy.logit_bias = {{0, ban}, {1, ban}, {2, ban}, {3, ban}};
  EXPECT_EQ(Sampler(greedy).Sample(logits, {}), -1);
  SamplingParams hot;
  hot.temperature = 5;
  hot.top_k = 0;
  hot.min_p = 0;
  hot.top_p = 1;
  hot.logit_bias = {{1, ban}, {3, ban}};
  Sampler s(hot);
  std::vector<int> seen(4);
  for (int i = 0; i < 400; ++i) seen[static_cast<size_t>(s.Sample(logits, {}))]++;
  EXPECT_EQ(seen[1] + seen[3], 0);
  EXPECT_GT(seen[0], 0);
  EXPECT_GT(seen[2], 0);
  hot.logit_bias = {{0, ban}, {1, ban}, {2, ban}, {3, ban}};
  EXPECT_EQ(Sampler(hot).Sample(logits, {}), -1);
  SamplingParams bad;
  bad.logit_bias = {{1, std::numeric_limits<float>::infinity()}};
  EXPECT_FALSE(bad.Validate().ok());
  bad.logit_bias = {{-1, 1.0f}};
  EXPECT_FALSE(bad.Validate().ok());
}

// penalty_last_n: the penalties count the last N generated tokens only; 0
// turns them off; -1 counts all of them.
TEST(Sampler, PenaltiesCountTheLastNTokens) {
  const std::vector<float> logits = {2.0f, 1.9f, 0.0f};
  SamplingParams p;
  p.temperature = 0;
  p.repeat_penalty = 2;  // token 0: 2 -> 1, below token 1's 1.9 when counted
  const std::vector<int32_t> history = {0, 2, 2};
  p.penalty_last_n = -1;
  EXPECT_EQ(Sampler(p).Sample(logits, history), 1);
  p.penalty_last_n = 3;
  EXPECT_EQ(Sampler(p).Sample(logits, history), 1);
  p.penalty_last_n = 2;  // token 0 is older than the last two
  EXPECT_EQ(Sampler(p).Sample(logits, history), 0);
  p.penalty_last_n = 0;  // off
  EXPECT_EQ(Sampler(p).Sample(logits, history), 0);
  p.penalty_last_n = -2;
  EXPECT_FALSE(p.Validate().ok());
}

}  // namespace
}  // namespace strata
