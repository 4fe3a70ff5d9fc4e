#pragma once
// What `strata-run PACK --serve` is told on its command line.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/memory/load_run.h"
#include "runtime/memory/run_memory.h"

#include "runtime/model/forward.h"
#include "runtime/model/sampler.h"

namespace strata::serve {

struct ServeOptions {
  // The pack and how to load it, as strata-run loads it (runtime/memory/load_run.h):
  // load.n_ctx is the positions per slot (0: the largest the memory plan fits,
  // up to the training context).
  // Serve sets load.who and load.allow_fall_back itself.
  LoadOptions load;
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 8080;                 // 0: any free port (the log line says which)
  int parallel = 4;                // slots decoding together
  int queue = 64;                  // requests waiting beyond the slots; more get 503
  std::string api_key;             // empty: no key (only sensible on loopback)
  std::string chat_template_file;  // a Jinja file to render chats with instead of the pack's template
  std::string cors_origin;         // empty: no CORS headers; "*": any origin
  // Host header names accepted besides the listening address (and, on
  // loopback, localhost and the loopback addresses); "*": any.
  std::vector<std::string> allowed_hosts;
  int max_connections = 1024;      // open connections; more get 503 at once
  int32_t batch = 512;             // tokens per forward pass, all slots together
  size_t max_body = 16u << 20;     // request bodies above this get 413
  SamplingParams sampling;         // defaults for requests that do not set them
  int32_t max_tokens = -1;         // -n: default max_tokens; -1: chat until the end, completions 16 (OpenAI's)
  int shutdown_grace_ms = 10000;   // on SIGINT/SIGTERM, running requests get this long to finish
  // Memory plan and expert tiers (--ram-budget, --expert-device, ...): the
  // server plans its slots, workspace and tiers exactly as strata-run does
  // (docs/memory-plan.md); `memory.parallel` and `memory.decode_copies` are
  // ignored: `parallel` and `load.decode_copies` win.
  RunMemoryOptions memory;
  bool plan_only = false;          // --plan: print the plan and exit (0 when it fits)
  DeltaNetMode delta_net = DeltaNetMode::kSequential;  // --delta-net
  int test_load_delay_ms = 0;      // tests only: hold the loading phase open (/health answers 503)
  int test_step_delay_ms = 0;
  // Tests only: shorter HTTP deadlines (0: the defaults of HttpLimits).
  int test_head_deadline_ms = 0, test_body_deadline_ms = 0, test_idle_ms = 0;      // tests only: pause before each step, so tests can act while requests run
};

// Runs the server until SIGINT or SIGTERM. Returns the process exit code:
// 0 after a clean shutdown, non-zero when it could not start.
int Serve(const ServeOptions& options);

}  // namespace strata::serve
