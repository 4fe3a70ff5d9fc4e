#include "runtime/cli/run_options.h"

#include <span>

#include "runtime/base/strings.h"
#include "runtime/model/backend_factory.h"
#include "runtime/model/forward.h"

namespace strata {

void AddRunOptions(CLI::App& app, RunOptions& o) {
  app.add_option("pack", o.pack, "the pack to run (made by strata-pack, checked by strata-validate)")->required();
  app.add_option("-p,--prompt", o.prompt,
                 "prompt text (with --bench: the number of prompt tokens to time, default 512)");
  app.add_option("-f,--file", o.prompt_file, "read the prompt text from a file");
  app.add_option("--tokens", o.tokens, "the prompt as token ids: 1,2,3 (no tokenization, no BOS added)");
  app.add_option("-n,--n-predict", o.n_predict, "tokens to generate (default: until end of generation or context)");
  app.add_option("-c,--ctx-size", o.n_ctx, "context length in tokens (default: min(training context, 4096))");
  app.add_option("-t,--threads", o.threads, "threads (default: all cores)");
  app.add_option("-b,--batch", o.batch, "prompt tokens per forward pass (default 512)");
  app.add_option("--delta-net", o.delta_net,
                 "how gated delta-net layers (qwen35moe) run a prompt: sequential (default, token by token) or "
                 "chunked (the chunked delta rule; decode is always sequential)");
  app.add_option("--temp", o.sampling.temperature, "temperature; 0 is greedy (default 0.8)");
  app.add_option("--top-k", o.sampling.top_k, "top-k; 0 is off (default 40)");
  app.add_option("--top-p", o.sampling.top_p, "top-p; 1 is off (default 0.95)");
  app.add_option("--min-p", o.sampling.min_p, "min-p; 0 is off (default 0.05)");
  app.add_option("--repeat-penalty", o.sampling.repeat_penalty, "repetition penalty; 1 is off (default 1)");
  app.add_option("--repeat-last-n,--penalty-last-n", o.sampling.penalty_last_n,
                 "the penalties count the last N generated tokens; -1 all of them (default), 0 none (penalties off)");
  app.add_option("--presence-penalty", o.sampling.presence_penalty, "presence penalty (default 0)");
  app.add_option("--frequency-penalty", o.sampling.frequency_penalty, "frequency penalty (default 0)");
  app.add_option("--seed", o.sampling.seed, "sampling seed");
  app.add_option("--stop", o.stop, "stop when this text is generated (repeatable)");
  app.add_flag("--ignore-eos", o.ignore_eos, "do not stop at end-of-generation tokens");
  app.add_flag("--special", o.parse_special, "parse special-token text (e.g. <|im_start|>) in the prompt");
  app.add_flag("--print-ids", o.print_ids, "print the generated token ids on one line instead of text");
  app.add_option("--spec", o.spec,
                 "speculative decoding: none (default); draft (a draft model, --draft PACK, proposes tokens the "
                 "model checks in one pass); or mtp (the pack's own MTP block proposes them: qwen35moe, glm4moe). "
                 "Greedy decoding gives the tokens plain decoding gives; sampling, the model's distribution "
                 "(docs/speculative.md)");
  app.add_option("--draft", o.draft, "the draft model's pack for --spec draft (its tokenizer must be the model's)");
  app.add_option("--spec-max", o.spec_max,
                 "the most tokens the draft proposes per step, 1..16 (default 3); each step drafts what the measured "
                 "acceptance and costs make pay, none when nothing does");
  app.add_flag("--spec-fixed", o.spec_fixed, "always draft --spec-max tokens (no adaptive rule)");
  // "auto (...), cpu (what it is), reference (...) ...": the backend table
  std::string kinds = "auto (default: a GPU whose device opens and whose memory holds the run, else cpu)";
  const std::span<const BackendKind> table = BackendKinds();
  for (size_t i = 0; i < table.size(); ++i)
    kinds += (i + 1 == table.size() ? " or " : ", ") + std::string(table[i].name) + " (" +
             std::string(table[i].summary) + ")";
  app.add_option("--backend", o.backend, kinds);
  app.add_flag("--reference", o.reference,
               "the same as --backend reference: the plain reference path (dequantized weights, float activations, "
               "no SIMD)");
  app.add_option("--decode-copies", o.decode_copies,
                 "which bytes to read for tensors the pack has Q8_0 decode copies of: auto (default: the copy when "
                 "the tensor's type has no fast kernel on this CPU, else the native bytes), native, or copies")
      ->check(CLI::IsMember({"auto", "native", "copies"}));
  app.add_flag("--verify", o.verify, "verify every blob's checksum before running");
  app.add_option("--logits-out", o.logits_out,
                 "write float32 logits rows: one per prompt position, then one per generated token (each generated "
                 "token is fed back)");
  app.add_option("--tokenize-file", o.tokenize_file,
                 "print the token ids of the file's content (no BOS, special tokens not parsed) and exit");
  app.add_flag("--chat", o.chat, "interactive chat using the pack's chat template");
  app.add_option("--system", o.system, "system message for --chat");
  app.add_flag("--bench", o.bench, "measure prefill and decode speed (-p N prompt tokens, -n N generated)");
  app.add_option("--bench-reps", o.bench_reps, "benchmark repetitions after a warm-up (default 5)");
  app.add_option("--bench-depth", o.bench_depth,
                 "tokens already in the context (processed, not timed) before each measured prefill and decode, as "
                 "llama-bench -d (default 0)");

  auto* serve = app.add_option_group("server", "--serve: an OpenAI-compatible HTTP server (docs/server.md)");
  serve->add_flag("--serve", o.serve,
                  "serve /v1/chat/completions, /v1/completions, /v1/models, /health, /metrics and a chat page at /");
  serve->add_option("--host", o.host, "address to listen on (default 127.0.0.1: this machine only)");
  serve->add_option("--port", o.port, "port to listen on (default 8080; 0: any free port, printed at start)");
  serve->add_option("--queue", o.queue, "requests that may wait for a slot; more get 503 (default 64)");
  // Test hooks: options of their own (not environment variables), left out of
  // --help (an option group without a name is hidden).
  auto* hooks = app.add_option_group("");
  hooks->add_option("--test-load-delay-ms", o.test_load_delay_ms, "tests: hold the loading phase open this long")
      ->check(CLI::Range(0, 60000));
  hooks->add_option("--test-step-delay-ms", o.test_step_delay_ms, "tests: pause this long before each step")
      ->check(CLI::Range(0, 60000));
  hooks->add_option("--test-head-deadline-ms", o.test_head_deadline_ms, "tests: the request-head deadline")
      ->check(CLI::Range(0, 60000));
  hooks->add_option("--test-body-deadline-ms", o.test_body_deadline_ms, "tests: the request-body deadline")
      ->check(CLI::Range(0, 60000));
  hooks->add_option("--test-idle-ms", o.test_idle_ms, "tests: the keep-alive idle limit")->check(CLI::Range(0, 60000));
  serve->add_option("--api-key", o.api_key,
                    "require this key (Authorization: Bearer KEY) on every endpoint but /health and the chat page; "
                    "default: the STRATA_API_KEY environment variable, else none");
  serve->add_option("--chat-template-file", o.chat_template_file,
                    "render chats with this Jinja template instead of the pack's (checked at start as the pack's is; "
                    "its tool-call format is read from it)");
  serve->add_option("--cors-origin", o.cors_origin,
                    "allow web pages from this origin (e.g. http://localhost:3000, or *) to call the API "
                    "(default: none)");
  serve->add_option("--allowed-host", o.allowed_hosts,
                    "a name clients may use in the Host header besides the listening address (repeatable; '*': any, "
                    "which gives up the DNS-rebinding guard)");
  serve->add_option("--max-connections", o.max_connections,
                    "open connections at most; one more gets 503 at once (default 1024; the file-descriptor limit "
                    "may lower it)");
  serve->add_option("--max-body", o.max_body, "largest request body in bytes; larger ones get 413 (default 16 MiB)");
  AddMemoryFlags(app, o.memory);
}

Status RunOptions::Validate() {
  if (n_predict < -1) return InvalidArgument(StrFormat("-n %d: expected -1 (no limit) or a count >= 0", n_predict));
  if (n_ctx < 0) return InvalidArgument("-c must be > 0");
  if (threads < 0 || threads > 1024) return InvalidArgument(StrFormat("-t %d: expected 1..1024", threads));
  if (batch < 1 || batch > 65536) return InvalidArgument(StrFormat("-b %d: expected 1..65536", batch));
  if (bench_reps < 1 || bench_reps > 1000) return InvalidArgument("--bench-reps: expected 1..1000");
  if (bench_depth < 0 || bench_depth > (1 << 20)) return InvalidArgument("--bench-depth: expected 0..1048576");
  STRATA_ASSIGN_OR_RETURN(delta_net_mode, ParseDeltaNetMode(delta_net));
  if (backend != "auto" && !ParseBackendKind(backend).ok())
    return InvalidArgument("--backend '" + Printable(backend) + "': expected auto, " + BackendKindNames());
  if (reference) backend = "reference";
  if (spec != "none" && spec != "draft" && spec != "mtp")
    return InvalidArgument("--spec '" + Printable(spec) + "': expected none, draft or mtp");
  if (spec == "draft" && draft.empty()) return InvalidArgument("--spec draft: give the draft model's pack (--draft PACK)");
  if (spec != "draft" && !draft.empty()) return InvalidArgument("--draft PACK: add --spec draft to use it");
  if (spec_max < 1 || spec_max > 16) return InvalidArgument(StrFormat("--spec-max %d: expected 1..16", spec_max));
  if (spec != "none" && (chat || serve))
    return InvalidArgument("--spec " + spec + " runs with a prompt (-p, -f or --tokens) or --bench; --chat and "
                           "--serve do not speculate yet");
  if (serve) {
    if (!prompt.empty() || !prompt_file.empty() || !tokens.empty() || chat || bench || !tokenize_file.empty() ||
        !logits_out.empty())
      return InvalidArgument("--serve takes its prompts over HTTP; drop -p/-f/--tokens/--chat/--bench/"
                             "--tokenize-file/--logits-out");
    if (port < 0 || port > 65535) return InvalidArgument(StrFormat("--port %d: expected 0..65535", port));
    if (queue < 0 || queue > 4096) return InvalidArgument(StrFormat("--queue %d: expected 0..4096", queue));
    if (host.empty()) return InvalidArgument("--host: give an address, e.g. 127.0.0.1");
    if (max_connections < 4 || max_connections > 65536)
      return InvalidArgument(StrFormat("--max-connections %d: expected 4..65536", max_connections));
    if (max_body < 1024 || max_body > (1u << 30)) return InvalidArgument("--max-body: expected 1024..1073741824");
    if (n_predict == 0) return InvalidArgument("-n 0 with --serve: give the default max_tokens (>= 1), or -1 for none");
    return sampling.Validate();
  }
  int inputs = !prompt.empty() + !prompt_file.empty() + !tokens.empty();
  if (inputs > 1 && !bench) return InvalidArgument("give only one of -p, -f and --tokens");
  if (!bench && !chat && tokenize_file.empty() && inputs == 0 && !memory.plan)
    return InvalidArgument("nothing to run: give a prompt (-p TEXT, -f FILE or --tokens IDS), or --chat, --bench "
                           "or --tokenize-file");
  if (chat && inputs > 0) return InvalidArgument("--chat reads its messages from the terminal; drop -p/-f/--tokens");
  return sampling.Validate();
}

}  // namespace strata
