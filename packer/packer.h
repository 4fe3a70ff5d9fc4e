#pragma once
// strata-pack's core: GGUF model -> checked, normalized plan -> pack file.
//
//   1. identify the architecture (or a vocab-only file);
//   2. import the tokenizer and the hyperparameters (fixes recorded);
//   3. match every tensor against the architecture spec (fixes recorded);
//   4. check kernel coverage and decide the Q8_0 decode copies
//      (packer/decode_copies.h);
//   5. unless refused or a dry run: record the probe, measure the expert
//      profile (packer/expert_profiler.h), and write blobs (each decode copy
//      right after its tensor) and the manifest through a temporary file
//      renamed into place only when complete.
// The same inputs and options give the same bytes.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "packer/expert_profiler.h"
#include "packer/fixes.h"
#include "packer/gguf/gguf_file.h"
#include "packer/pack_options.h"
#include "packer/tensor_plan.h"
#include "runtime/arch/arch_spec.h"
#include "runtime/tokenizer/vocab.h"

namespace strata {

struct PackProgress {
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
  size_t tensors_done = 0;
  size_t tensors_total = 0;
  std::string_view current;  // tensor being written
};
using ProgressFn = std::function<void(const PackProgress&)>;

struct PackResult {
  Arch arch = Arch::kVocabOnly;
  std::string arch_name;  // general.architecture
  HParams hparams;
  FixLog log;
  std::vector<PlannedTensor> plan;
  tokenizer::Vocab vocab;
  bool written = false;
  std::string output;
  uint64_t pack_bytes = 0;
  uint64_t weight_bytes = 0;      // the tensors' own bytes (decode copies not included)
  size_t decode_copies = 0;       // Q8_0 decode copies planned (written unless refused or a dry run)
  uint64_t decode_copy_bytes = 0;
  std::optional<ProfileRun> profile;  // the expert profile measured, when one was
  double seconds = 0;

  bool ok() const { return !log.refused(); }
};

// Plans, and unless options.dry_run or a refusal, writes the pack. A non-OK
// status is an error that stopped the work (I/O, a bad option); refusals are
// in result.log and leave no output file.
Result<PackResult> PackModel(const gguf::GgufModel& model, const PackOptions& options,
                             const ProgressFn& progress = nullptr);

// strata-pack --mtp-from FILE: some publishers ship a model's MTP block as
// a GGUF of its own (the model's metadata, its block_count and
// nextn_predict_layers counting the block, and only the block's tensors).
// Checks it against `model` (the same architecture, one with an MTP block;
// every key of the architecture but those two equal; its main layers those
// of `model`), takes the block's tensors (blk.N.* for the MTP layers N) into
// `model`, and sets the two keys for the packer (options->overrides; the
// pack records them as "mtp-from" fixes). Errors name the key or tensor,
// what `model` has and what the file has.
Status AttachMtpFrom(gguf::GgufModel& model, const std::string& path, PackOptions* options);

}  // namespace strata
