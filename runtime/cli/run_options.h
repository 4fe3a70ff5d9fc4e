#pragma once
// strata-run's command line.

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/base/status.h"
#include "runtime/cli/memory_flags.h"
#include "runtime/model/pass.h"
#include "runtime/model/sampler.h"

namespace strata {

struct RunOptions {
  std::string pack;
  std::string prompt;
  std::string prompt_file;
  std::string tokens;  // --tokens 1,2,3
  int32_t n_predict = -1;
  int64_t n_ctx = 0;   // 0: min(training context, 4096)
  int threads = 0;     // 0: all cores
  int32_t batch = 512;
  std::string delta_net = "sequential";  // --delta-net sequential|chunked
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool parse_special = false;
  bool print_ids = false;
  bool reference = false;        // --reference: the same as --backend reference (Validate sets backend)
  std::string backend = "auto";  // --backend: auto, or a name of the backend table (backend_factory.h)
  std::string decode_copies = "auto";  // auto | native | copies (docs/experts.md)
  bool verify = false;
  std::string logits_out;
  std::string tokenize_file;
  bool chat = false;
  std::string system;
  bool bench = false;
  int64_t bench_prompt = 512;
  int64_t bench_depth = 0;  // tokens in the context before each measured prefill and decode (llama-bench -d)
  int bench_reps = 5;
  // --serve: an OpenAI-compatible HTTP server (runtime/serve, docs/server.md).
  bool serve = false;
  std::string host = "127.0.0.1";
  int port = 8080;
  int queue = 64;
  int test_load_delay_ms = 0;  // --test-load-delay-ms (hidden): tests hold the loading phase open
  int test_step_delay_ms = 0;  // --test-step-delay-ms (hidden): tests slow every scheduler step
  int test_head_deadline_ms = 0, test_body_deadline_ms = 0, test_idle_ms = 0;
  std::string api_key;
  std::string chat_template_file;
  std::string cors_origin;
  std::vector<std::string> allowed_hosts;
  int max_connections = 1024;
  size_t max_body = 16u << 20;
  MemoryFlags memory;  // the memory plan and the expert tiers (memory_flags.h)
  // Speculative decoding (docs/speculative.md): --spec draft with --draft PACK.
  std::string spec = "none";  // --spec none|draft (mtp: not yet)
  std::string draft;          // --draft PACK
  int spec_max = 3;           // --spec-max N
  bool spec_fixed = false;    // --spec-fixed: always --spec-max drafts (no adaptive rule)

  // Checks every option and fills the parsed forms below.
  Status Validate();
  DeltaNetMode delta_net_mode = DeltaNetMode::kSequential;  // from delta_net
};

void AddRunOptions(CLI::App& app, RunOptions& o);

}  // namespace strata
