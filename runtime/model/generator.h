#pragma once
// Generator: runs a prompt and generates tokens on one sequence, with the
// stop conditions a user expects (end-of-generation tokens, stop strings,
// a token limit, the context limit) and says which one stopped it.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/model/backend.h"
#include "runtime/model/forward.h"
#include "runtime/model/model.h"
#include "runtime/model/sampler.h"
#include "runtime/model/sequence_state.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata {

enum class StopReason { kNone, kEndOfGeneration, kStopString, kTokenLimit, kContextFull, kCancelled };
std::string_view StopReasonName(StopReason r);  // "end-of-generation token", "stop string", ...

// Speculative decoding with a draft model (docs/speculative.md): the draft
// proposes up to max_draft tokens one at a time, the target checks them in
// one pass, and the longest prefix it agrees with is kept plus its own next
// token. Greedy decoding only: the tokens are those plain greedy decoding
// gives (a pass's rows do not depend on how many tokens it holds; gated
// delta-net layers run their sequential form). Where it cannot run, the run goes on without
// it and GenerateResult::spec_off says why.
//
// Or with the model's own MTP block (mtp: arch_spec.h, MtpBlock): model and
// backend are the target's (its EnableMtp called before the backend bound
// it), state an MTP state (StateLayers::kMtp) holding what the target's
// holds. The block reads each token with the target's hidden state of the
// position before it (zeros before the first token of a run), and drafts on
// from its own; after a verification pass, it reads the kept tokens again
// with the target's hidden states.
struct DraftModel {
  const Model* model = nullptr;
  Backend* backend = nullptr;
  SequenceState* state = nullptr;  // holds what the target's state holds (the same tokens)
  bool mtp = false;                // the target's MTP block (above)
  // MTP: where a run leaves the model's hidden state of its last position
  // and the next run, when its state holds what this one's left, reads its
  // first token with it (null, or a run whose state is empty: zeros).
  std::vector<float>* hidden = nullptr;
  Workspace* workspace = nullptr;  // the draft's passes' (null: one per pass)
  int32_t max_draft = 3;           // tokens drafted per step, 1..16
  // The draft's own sampling when the run samples (a lower temperature, say);
  // null: the run's. Its seed is derived from the run's either way.
  const SamplingParams* sampling = nullptr;
  // Draft as many tokens as the measured acceptance and costs make pay, up
  // to max_draft, none when none pays (generator.cc, DraftAdapt); false:
  // always max_draft (tests that need the same draws every run).
  bool adaptive = true;
};

struct GenerateOptions {
  int32_t n_predict = -1;       // < 0: until another stop condition
  bool ignore_eog = false;      // do not stop at end-of-generation tokens
  std::vector<std::string> stop_strings;
  SamplingParams sampling;
  int32_t batch = 512;          // prompt tokens per forward pass
  bool prompt_logits = false;   // emit logits for every prompt position
  bool feed_last = false;       // also run the last generated token (its logits are emitted)
  RoutingObserver* observer = nullptr;
  ExpertExecutor* experts = nullptr;  // ForwardOptions::experts
  Workspace* workspace = nullptr;     // ForwardOptions::workspace (the run's, from the memory plan)
  DeltaNetMode delta_net = DeltaNetMode::kSequential;  // ForwardOptions::delta_net
  OpTimes* decode_op_times = nullptr;  // the decode steps' ForwardOptions::op_times (--bench)
  const DraftModel* draft = nullptr;   // speculative decoding (above); null: none
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids
  std::string text;             // their text, cut before a stop string
  StopReason stop = StopReason::kNone;
  int64_t n_prompt = 0;
  double prompt_seconds = 0;
  double gen_seconds = 0;       // decode time for the generated tokens
  int64_t n_decoded = 0;        // generated tokens fed back (one pass each, or in a verification pass)
  // Speculative decoding: tokens drafted, of them accepted, verification
  // passes; spec_off: why it did not run although a draft was given.
  // n_replayed: passes run again after a rejection (gated delta-net models).
  // n_undrafted: steps the adaptive rule ran without drafts.
  int64_t n_drafted = 0, n_accepted = 0, n_verify = 0, n_replayed = 0, n_undrafted = 0;
  // The adaptive rule stopped the draft after this many generated tokens
  // (its probes refused for about 500 steps); -1: it did not.
  int64_t spec_stopped_at = -1;
  std::string spec_off;
  double prompt_tps() const { return prompt_seconds > 0 ? static_cast<double>(n_prompt) / prompt_seconds : 0; }
  double gen_tps() const { return gen_seconds > 0 ? static_cast<double>(n_decoded) / gen_seconds : 0; }
};

struct GenerateCallbacks {
  // Text ready to show (stop strings held back until they cannot match).
  std::function<void(std::string_view)> on_text;
  // Every row of logits the run produces, in order (prompt rows if asked, then
  // one per token fed back).
  std::function<void(std::span<const float>)> on_logits;
  // Called before each decode step; return false to cancel.
  std::function<bool()> keep_going;
};

class Generator {
 public:
  // `tok` may be null (ids only: no text, no stop strings).
  Generator(const Model& model, Backend& backend, SequenceState& state, const tokenizer::Tokenizer* tok)
      : model_(model), backend_(backend), state_(state), tok_(tok) {}

  // Runs `prompt` after what the state already holds, then generates.
  // Errors: empty prompt, ids out of range, a prompt that does not fit the context.
  Result<GenerateResult> Generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const GenerateCallbacks& callbacks = {});

  bool IsEndOfGeneration(int32_t id) const;

 private:
  const Model& model_;
  Backend& backend_;
  SequenceState& state_;
  const tokenizer::Tokenizer* tok_;
};

}  // namespace strata
