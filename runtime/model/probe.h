#pragma once
// The probe record (docs/pack-format.md 4.8): a short prompt, and what the
// plain reference path computes for it (the top logits of every position and
// a greedy continuation). The packer records it; strata-validate replays it
// with the serving machine's fast kernels, so a miscompiled or wrongly
// dispatched kernel is caught in CI rather than by users.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/backend.h"
#include "runtime/model/model.h"
#include "runtime/tokenizer/tokenizer.h"
#include "schema/strata_pack_generated.h"

namespace strata {

struct ProbeData {
  std::vector<int32_t> prompt_ids;
  uint32_t top_k = 8;
  std::vector<int32_t> top_ids;      // rows x top_k, by descending logit
  std::vector<float> top_logits;     // rows x top_k
  std::vector<int32_t> greedy_ids;   // the reference greedy continuation
  float tolerance = 0;               // max |fast - reference| accepted on the recorded entries
  // The same entries computed by the scalar kernels (llama.cpp's activation
  // quantization and integer block sums, identical on every machine): SIMD
  // kernels may differ from these only by float summation order.
  std::vector<float> kernel_logits;
  float kernel_mean_tolerance = 0;
  float kernel_max_tolerance = 0;
  uint32_t rows() const { return top_k ? static_cast<uint32_t>(top_ids.size() / top_k) : 0; }
};

// The probe prompt: a fixed sentence through the model's tokenizer (BOS as
// the vocabulary adds it), at most 16 tokens.
std::vector<int32_t> ProbePrompt(const tokenizer::Tokenizer& tok, uint32_t n_vocab);

// The tolerance for a model: how far its fast path may legitimately drift
// from the reference (activation rounding, routing flips; see
// docs/conformance.md), and 1e-3 when every weight is F32.
float ProbeTolerance(const Model& model);

// Runs the probe prompt and `n_gen` greedy tokens on `reference` (the
// reference backend), then the same rows on `kernels` (the scalar-ISA fast
// backend), and records both.
Result<ProbeData> RecordProbe(const Model& model, Backend& reference, Backend& kernels,
                              std::vector<int32_t> prompt, int n_gen);

struct ProbeReplay {
  bool ok = false;
  float max_abs_diff = 0;     // vs the reference, over the recorded entries
  float mean_abs_diff = 0;
  float kernel_max_diff = 0;  // vs the scalar kernels
  float kernel_mean_diff = 0;
  int rows = 0;
  int confident_rows = 0;     // rows whose recorded top-1/top-2 margin exceeds the tolerance
  int top1_mismatches = 0;    // among the confident rows
  std::string detail;
};

// Re-runs the probe (teacher-forced on the recorded greedy chain) on
// `backend` and compares.
Result<ProbeReplay> ReplayProbe(const Model& model, Backend& backend, const ProbeData& probe);

ProbeData ProbeFromManifest(const fb::ProbeRecord& r);
flatbuffers::Offset<fb::ProbeRecord> BuildProbe(flatbuffers::FlatBufferBuilder& b, const ProbeData& p);

}  // namespace strata
