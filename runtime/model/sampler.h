#pragma once
// Sampler: picks the next token from logits. temp <= 0 is greedy (argmax, ties
// to the lowest id, as the conformance references). Otherwise, in
// llama.cpp's default order: repetition penalties, top-k, top-p, min-p,
// temperature, then a draw from a seeded generator (same seed, same logits:
// same token, on every machine).

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/base/status.h"

namespace strata {

struct SamplingParams {
  float temperature = 0.8f;
  int32_t top_k = 40;      // <= 0: off
  float top_p = 0.95f;     // >= 1: off
  float min_p = 0.05f;     // <= 0: off
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repeat_penalty = 1.0f;  // 1: off
  // The penalties count the last N generated tokens: -1 all of them, 0 none
  // (penalties off). llama-server's penalty_last_n / repeat_last_n.
  int32_t penalty_last_n = -1;
  // Added to a token's logit before anything else (OpenAI's logit_bias);
  // -infinity bans the token. Ids are checked against the vocabulary by the
  // caller that has one; ids past the logits are ignored here.
  std::vector<std::pair<int32_t, float>> logit_bias;
  uint64_t seed = 0xC0FFEE;

  // Range checks with messages naming the option.
  Status Validate() const;
  // True when sampling is the plain argmax of the logits (temperature 0, no
  // penalties): the forward pass can then return the argmax alone
  // (ForwardOptions::argmax), computed where the logits are.
  bool IsPlainArgmax() const {
    return temperature <= 0 && presence_penalty == 0 && frequency_penalty == 0 && repeat_penalty == 1 &&
           logit_bias.empty();
  }
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p);
  // Chooses a token. `history` holds tokens generated so far (for penalties).
  // `allowed` (constrained sampling): a bit per token, 64 per word; only
  // tokens whose bit is set are candidates. Returns -1 when none is.
  int32_t Sample(std::span<const float> logits, std::span<const int32_t> history, const uint64_t* allowed = nullptr);
  static int32_t Argmax(std::span<const float> logits);

  // The distribution Sample draws from, for speculative sampling: the
  // candidates after the penalties, top-k, top-p, min-p and temperature, as
  // (id, weight) in Sample's order, weights not normalized; returns their
  // sum (0: no candidate). With temperature <= 0, the one token Sample
  // picks, weight 1.
  using Weighted = std::vector<std::pair<int32_t, double>>;
  double Distribution(std::span<const float> logits, std::span<const int32_t> history, const uint64_t* allowed,
                      Weighted* out);
  // A uniform double in [0, 1) from the top 53 bits of one draw of the
  // seeded generator (the same on every platform).
  double Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  // A draw from `dist` (total: its weights' sum) with one Uniform().
  int32_t Draw(const Weighted& dist, double total);

  // log p(token) under softmax(logits), the model's own distribution (before
  // penalties, truncation and temperature), for `chosen` and the `top` most
  // likely tokens, most likely first (ties to the lower id).
  struct Logprob {
    int32_t id;
    float logprob;
  };
  static float LogSumExp(std::span<const float> logits);
  static std::vector<Logprob> TopLogprobs(std::span<const float> logits, float log_sum, size_t top);

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;
  std::vector<float> biased_;  // the logits with logit_bias added
  Weighted dist_;              // Sample's distribution
};

}  // namespace strata
