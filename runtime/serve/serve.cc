// Serve(): the life of `strata-run PACK --serve`: listen first (so /health
// can say 503 while loading), load and plan, serve, and on SIGINT/SIGTERM
// stop accepting, let running requests finish (or cancel them), exit 0.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

#ifndef _WIN32
#include <sys/resource.h>
#endif

#include "runtime/base/main_guard.h"
#include "runtime/base/platform.h"
#include "runtime/base/strings.h"
#include "runtime/chat/chat_template.h"
#include "runtime/memory/load_run.h"
#include "runtime/memory/memory_plan.h"
#include "runtime/memory/plan_format.h"
#include "runtime/memory/run_memory.h"
#include "runtime/model/backend_factory.h"
#include "runtime/pack/pack_reader.h"
#include "runtime/pack/pack_vocab.h"
#include "runtime/serve/api_server.h"
#include "runtime/serve/harmony.h"
#include "runtime/serve/scheduler.h"
#include "runtime/serve/serve_options.h"

namespace strata::serve {
namespace {


// After the device is lost, how long /health answers 503 before the exit.
constexpr int kDeviceLostLingerMs = 2000;

std::atomic<int> g_signals{0};  // lock-free: safe to touch in a signal handler

extern "C" void OnStopSignal(int) { g_signals.fetch_add(1); }

int ExitCode(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return kExitUsage;
    case StatusCode::kUnsupported: return kExitUnsupported;
    case StatusCode::kInternal: return kExitInternal;
    default: return kExitError;
  }
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Every connection holds a file descriptor: the soft limit is raised to the
// hard one, and --max-connections lowered to fit what remains.
void FitConnectionsToFileLimit(ServeOptions& o) {
#ifndef _WIN32
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  constexpr rlim_t kReserve = 64;  // the pack, logs, the listening socket
  if (rl.rlim_cur != RLIM_INFINITY && static_cast<rlim_t>(o.max_connections) + kReserve > rl.rlim_cur) {
    const int fit = rl.rlim_cur > kReserve + 4 ? static_cast<int>(rl.rlim_cur - kReserve) : 4;
    std::fprintf(stderr, "strata serve: the file-descriptor limit is %llu: at most %d connections (not %d); "
                 "raise it with ulimit -n\n", static_cast<unsigned long long>(rl.rlim_cur), fit, o.max_connections);
    o.max_connections = fit;
  }
#else
  (void)o;
#endif
}

// Binds the port and starts the HTTP thread (so /health can answer 503 while
// the model loads), with the warnings an exposed server deserves.
Status StartListening(ApiServer& api, const ServeOptions& o, std::thread* listener) {
  STRATA_ASSIGN_OR_RETURN(int port, api.Bind());
  const std::string host_in_url = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  std::fprintf(stderr, "strata serve: listening on http://%s:%d (loading %s)\n", host_in_url.c_str(), port,
               o.load.pack.c_str());
  if (!IsLoopbackHost(o.host) && o.api_key.empty())
    std::fprintf(stderr, "strata serve: WARNING: listening on %s without an API key: anyone who can reach this "
                 "address can use the model (--api-key)\n", o.host.c_str());
  if (o.cors_origin == "*" && o.api_key.empty())
    std::fprintf(stderr, "strata serve: WARNING: --cors-origin '*' without an API key: any web page a user of "
                 "this machine opens can use the model\n");
  *listener = std::thread([&api] { api.Listen(); });
  return Status::Ok();
}

// What the server runs on: the loaded run (LoadRun), the tokenizer and the
// chat template, checked now rather than at the first request.
struct ServingParts {
  LoadedRun loaded;
  std::optional<tokenizer::Tokenizer> tok;
  ChatTemplate tmpl;
  std::string template_source;  // its Jinja text (the pack's, or --chat-template-file's)
};

Result<ServingParts> LoadForServing(const ServeOptions& o) {
  ServingParts parts;
  LoadOptions lo = o.load;
  lo.allow_fall_back = true;
  lo.who = "strata serve";
  STRATA_ASSIGN_OR_RETURN(parts.loaded, LoadRun(lo));
  const Pack& pack = *parts.loaded.pack;
  STRATA_ASSIGN_OR_RETURN(auto vocab, VocabFromManifest(*pack.manifest().tokenizer(), pack.path()));
  STRATA_ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::Create(vocab));
  parts.tok.emplace(std::move(tok));
  parts.template_source = parts.tok->vocab().chat_template;
  if (!o.chat_template_file.empty()) {
    std::ifstream in(o.chat_template_file, std::ios::binary);
    if (!in) return IoError("--chat-template-file " + o.chat_template_file + ": cannot open it");
    parts.template_source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (parts.template_source.size() > (1u << 20))
      return InvalidArgument("--chat-template-file " + o.chat_template_file + ": larger than 1 MiB");
  }
  Result<ChatTemplate> tmpl = ChatTemplate::FromVocab(parts.tok->vocab(), parts.template_source);
  if (!o.chat_template_file.empty()) {
    if (!tmpl.ok()) return tmpl.status().WithContext("--chat-template-file " + o.chat_template_file);
    std::fprintf(stderr, "strata serve: chats are rendered with %s\n", o.chat_template_file.c_str());
  }
  if (!tmpl.ok())
    return Unsupported("refusing to serve: " + tmpl.status().message() +
                       " (the server renders chats with it; a model it cannot render would answer garbage)");
  if (tmpl->fallback)
    std::fprintf(stderr, "strata serve: the pack has no chat template; chats are rendered with ChatML\n");
  parts.tmpl = *tmpl;
  return parts;
}

SchedulerOptions SchedulerOptionsFor(const ServeOptions& o, int64_t n_ctx) {
  SchedulerOptions so;
  so.parallel = o.parallel;
  so.n_ctx = n_ctx;
  so.queue_limit = o.queue;
  so.step_tokens = std::max<int32_t>(o.batch, o.parallel);
  so.delta_net = o.delta_net;
  so.kv_type = o.memory.kv_type;
  so.step_delay_ms = o.test_step_delay_ms;  // test hook: slow every step down
  return so;
}

// The memory plan, as strata-run makes it (docs/memory-plan.md): the slots'
// states, the workspace of the largest step, the expert tiers. A server that
// would not fit refuses to start instead of failing under load.
RunMemoryOptions MemoryOptionsFor(const ServeOptions& o, const SchedulerOptions& so) {
  RunMemoryOptions mo = o.memory;
  mo.parallel = so.parallel;
  mo.decode_copies = o.load.decode_copies != "native";  // the host expert tier follows --decode-copies
  return mo;
}

RunShape ShapeFor(const LoadedRun& loaded, const SchedulerOptions& so) {
  RunShape shape;
  shape.n_ctx = so.n_ctx;
  shape.batch = so.step_tokens;
  shape.threads = loaded.backend->threads();
  shape.recurrent_snapshots = true;
  return shape;
}

Result<std::unique_ptr<PlannedRun>> PlanServing(const ServeOptions& o, LoadedRun& loaded,
                                                const SchedulerOptions& so) {
  return PlanAndAllocate(loaded, MemoryOptionsFor(o, so), ShapeFor(loaded, so), o.plan_only, "strata serve");
}

// Without -c: the largest context per slot, up to the training context and
// in steps of 256, whose memory plan fits the slots, workspace and tiers
// (plans only; nothing is allocated). When not even the CLI's default
// (min(training context, 4096)) fits, that default stays, and the plan's
// refusal names what does not fit.
int64_t FitContext(const ServeOptions& o, const LoadedRun& loaded, SchedulerOptions so) {
  const int64_t train = loaded.model->hp().n_ctx_train;
  const int64_t dflt = loaded.n_ctx;
  auto fits = [&](int64_t n) {
    so.n_ctx = n;
    auto setup = PlanRun(*loaded.pack, *loaded.model, *loaded.backend, MemoryOptionsFor(o, so), ShapeFor(loaded, so));
    return setup.ok() && setup->plan.Fits();
  };
  if (train <= dflt || !fits(dflt)) return dflt;
  if (fits(train)) return train;
  constexpr int64_t kStep = 256;
  // lo * kStep fits (the default, rounded down); hi * kStep is taken not to (train, rounded down; train itself
  // did not fit).
  int64_t lo = dflt / kStep, hi = train / kStep;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (fits(mid * kStep)) lo = mid;
    else hi = mid;
  }
  return std::max(dflt, lo * kStep);
}

ServingModel Describe(const ServeOptions& o, const ServingParts& parts, Scheduler* scheduler) {
  ServingModel sm;
  sm.id = std::filesystem::path(o.load.pack).stem().string();
  sm.model = parts.loaded.model.get();
  sm.tok = &*parts.tok;
  sm.chat_template = parts.tmpl;
  sm.scheduler = scheduler;
  sm.pack_bytes = parts.loaded.pack->file_size();
  sm.backend = parts.loaded.backend->name();
  sm.created = std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch()).count();
  for (const std::string& t : parts.tok->vocab().tokens) sm.max_token_bytes = std::max(sm.max_token_bytes, t.size());
  sm.tool_format = ToolCallFormatOf(parts.template_source);
  sm.harmony = IsHarmonyTemplate(parts.template_source);
  sm.fim = tokenizer::FindFimTokens(sm.tok->vocab());
  sm.trie = std::make_shared<const grammar::TokenTrie>(parts.tok->TextPieces());
  return sm;
}

// After the first signal: stop accepting connections and close the idle
// ones, let running requests finish within the grace period (a second
// signal cancels them), then say what was served.
void DrainAndReport(Scheduler& scheduler, ApiServer& api, const ServeOptions& o, const RunMemory& memory,
                    const std::function<void()>& stop_http) {
  api.BeginShutdown();
  scheduler.StopAccepting();
  const SchedulerMetrics m = scheduler.Metrics();
  std::fprintf(stderr, "strata serve: stopping: no new connections, idle ones closed; %d running get up to %.0f s "
               "to finish (a second signal cancels them now), %d queued are refused\n", m.requests_processing,
               o.shutdown_grace_ms / 1000.0, m.requests_deferred);
  std::atomic<bool> drained{false};
  std::thread drainer([&] {
    scheduler.Drain(o.shutdown_grace_ms);
    drained.store(true);
  });
  while (!drained.load()) {
    if (g_signals.load() > 1) scheduler.CancelAll();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  drainer.join();
  stop_http();
  if (memory.experts) std::fprintf(stderr, "strata serve: %s\n", memory.experts->StatsLine().c_str());
  const SchedulerMetrics end = scheduler.Metrics();
  std::fprintf(stderr, "strata serve: stopped: %llu requests served, %llu cancelled, %llu refused; %llu prompt "
               "tokens run, %llu reused, %llu generated\n",
               static_cast<unsigned long long>(end.requests_finished_total),
               static_cast<unsigned long long>(end.requests_cancelled_total),
               static_cast<unsigned long long>(end.requests_rejected_total),
               static_cast<unsigned long long>(end.prompt_tokens_total),
               static_cast<unsigned long long>(end.prompt_tokens_reused_total),
               static_cast<unsigned long long>(end.tokens_predicted_total));
}

}  // namespace

int Serve(const ServeOptions& options) {
  ServeOptions fitted = options;
  FitConnectionsToFileLimit(fitted);
  const ServeOptions& o = fitted;
  InstallStopHandler(OnStopSignal);

  ApiServer api(o);
  std::thread listener;
  auto stop_http = [&] {
    if (!listener.joinable()) return;
    api.Stop();
    listener.join();
  };
  auto fail = [&](const Status& s) {
    std::fprintf(stderr, "strata-run: error: %s\n", s.message().c_str());
    stop_http();
    return ExitCode(s);
  };
  if (!o.plan_only) {  // --plan: nothing is served, no port is taken
    Status listening = StartListening(api, o, &listener);
    if (!listening.ok()) return fail(listening);
  }

  // Test hook: hold the loading phase open so tests can see /health answer 503.
  for (int ms = o.test_load_delay_ms; ms > 0 && g_signals.load() == 0; ms -= 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));

  const auto t_load = std::chrono::steady_clock::now();
  auto parts = LoadForServing(o);
  if (!parts.ok()) return fail(parts.status());
  LoadedRun& loaded = parts->loaded;
  SchedulerOptions so = SchedulerOptionsFor(o, loaded.n_ctx);
  if (o.load.n_ctx == 0) {
    so.n_ctx = FitContext(o, loaded, so);
    std::fprintf(stderr, "strata serve: context per slot: %lld (the largest the memory plan fits, up to the training "
                 "context %lld; -c sets it)\n", static_cast<long long>(so.n_ctx),
                 static_cast<long long>(loaded.model->hp().n_ctx_train));
  }
  auto planned = PlanServing(o, loaded, so);
  if (!planned.ok()) return fail(planned.status());
  if (o.plan_only) {
    std::printf("%s", FormatPlan((*planned)->setup.plan).c_str());
    return (*planned)->setup.plan.Fits() ? kExitOk : kExitError;
  }
  const RunMemory& memory = *(*planned)->memory;
  so.memory = &*(*planned)->memory;
  const HParams& hp = loaded.model->hp();
  std::fprintf(stderr, "strata serve: %d slots x %lld positions: %s of KV cache and recurrent state with snapshots "
               "(%s per slot)\n", so.parallel, static_cast<long long>(so.n_ctx),
               HumanBytes(Scheduler::PlannedBytes(hp, so)).c_str(),
               HumanBytes(Scheduler::PlannedBytes(hp, so) / static_cast<uint64_t>(so.parallel)).c_str());
  auto scheduler = Scheduler::Create(*loaded.model, *loaded.backend, *parts->tok, so);
  if (!scheduler.ok()) return fail(scheduler.status());
  if (g_signals.load() > 0) {
    std::fprintf(stderr, "strata serve: stopped before the model was ready\n");
    stop_http();
    return kExitOk;
  }
  (*scheduler)->Start();

  const ServingModel sm = Describe(o, *parts, scheduler->get());
  api.SetReady(&sm);
  std::fprintf(stderr, "strata serve: ready in %.2f s: model %s (%s), %d slots, context %lld per slot, %s backend, "
               "%d threads, queue %d, %s\n", SecondsSince(t_load), sm.id.c_str(),
               std::string(ArchName(loaded.model->arch())).c_str(), so.parallel, static_cast<long long>(so.n_ctx),
               sm.backend.c_str(), loaded.backend->threads(), so.queue_limit,
               o.api_key.empty() ? "no API key" : "API key required");

  while (g_signals.load() == 0 && (*scheduler)->Health().ok())
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (Status lost = (*scheduler)->Health(); !lost.ok()) {
    // A poisoned device context stays poisoned: only a new process gets a
    // new one. /health answers 503 for a while (so a balancer sees it), then
    // the server stops as on a signal and exits 75 for its supervisor.
    std::fprintf(stderr, "strata serve: error: the device is lost (%s); /health answers 503 for %.0f s, then the "
                 "server exits %d so that its supervisor restarts it\n", lost.message().c_str(),
                 kDeviceLostLingerMs / 1000.0, kExitDeviceLost);
    for (int ms = kDeviceLostLingerMs; ms > 0 && g_signals.load() == 0; ms -= 50)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    DrainAndReport(**scheduler, api, o, memory, stop_http);
    return kExitDeviceLost;
  }
  DrainAndReport(**scheduler, api, o, memory, stop_http);
  return kExitOk;
}

}  // namespace strata::serve
