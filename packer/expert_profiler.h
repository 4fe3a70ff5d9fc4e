#pragma once
// The packer's expert profiler: runs a calibration text through the
// runtime's CPU fast path (FastBackend) and counts, per (layer, expert), how
// often the router chose the expert and the probability mass it gave it
// (docs/experts.md).
//
// Work is bounded: the corpus is cut into documents (at lines that read
// exactly kCorpusDocumentSeparator), each tokenized on its own; when the
// total exceeds max_tokens every document is cut proportionally, so all
// documents keep a share; each document runs in prompts of at most
// min(max_prompt_tokens, n_ctx_train) tokens, each prompt in a fresh state.
//
// Determinism: the same model, corpus and options give the same profile on
// every machine and thread count: the kernels run at a pinned level (AVX2
// when the CPU has it, else the scalar kernels; recorded in the profile), and
// FastBackend's results do not depend on the thread count.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/model/model.h"
#include "runtime/pack/expert_profile.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata {

inline constexpr std::string_view kCorpusDocumentSeparator = "<<<strata:document>>>";
inline constexpr std::string_view kDefaultCorpusName = "default";

struct CalibrationCorpus {
  std::string name;   // "default" or the file's base name
  std::string text;
  uint64_t xxh3 = 0;  // of `text`
};

// The built-in corpus (packer/calibration/default.txt, embedded by the build):
// prose, code, chat turns and text in several languages and scripts.
CalibrationCorpus DefaultCalibrationCorpus();
// A calibration file. Errors: unreadable, empty, larger than 64 MiB.
Result<CalibrationCorpus> LoadCalibrationCorpus(const std::string& path);
// The corpus's documents (separator lines removed; empty documents dropped).
std::vector<std::string_view> CorpusDocuments(std::string_view text);

struct ProfileOptions {
  uint64_t max_tokens = 4096;        // --profile-tokens
  uint32_t max_prompt_tokens = 1024; // each prompt: at most this and n_ctx_train
  int threads = 0;                   // 0: all cores (does not change the result)
};

struct ProfileRun {
  ExpertProfile profile;
  size_t documents = 0;
  size_t prompts = 0;
  uint32_t prompt_tokens = 0;  // the prompt length limit used
  uint64_t corpus_tokens = 0;  // tokens in the corpus before the cap
  double seconds = 0;
  std::string backend;         // "fast (avx2, 2 threads)"
};

// REQUIRES: an architecture with routed experts (qwen3moe, qwen35moe).
Result<ProfileRun> MeasureExpertProfile(const Model& model, const tokenizer::Tokenizer& tok,
                                        const CalibrationCorpus& corpus, const ProfileOptions& options);

}  // namespace strata
