// strata-run: maps a pack and runs it: one-shot generation, interactive
// chat, a benchmark, tokenization, or an HTTP server (--serve, runtime/serve).

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/base/atomic_file.h"
#include "runtime/base/main_guard.h"
#include "runtime/base/platform.h"
#include "runtime/base/strings.h"
#include "runtime/chat/chat_template.h"
#include "runtime/serve/chat_prompt.h"
#include "runtime/cli/run_options.h"
#include "runtime/experts/routing_trace.h"
#include "runtime/memory/load_run.h"
#include "runtime/memory/plan_format.h"
#include "runtime/memory/run_memory.h"
#include "runtime/model/generator.h"
#include "runtime/pack/pack_reader.h"
#include "runtime/pack/pack_vocab.h"
#include "runtime/serve/serve_options.h"
#include "strata/version.h"

namespace {

using namespace strata;

int Fail(const Status& s) {
  std::fprintf(stderr, "strata-run: error: %s\n", s.message().c_str());
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return kExitUsage;
    case StatusCode::kUnsupported: return kExitUnsupported;
    case StatusCode::kInternal: return kExitInternal;
    default: return kExitError;
  }
}

Result<std::vector<int32_t>> ParseIds(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 0 || v > INT32_MAX)
      return InvalidArgument("--tokens: '" + item + "' is not a token id (expected comma-separated integers >= 0)");
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return InvalidArgument("--tokens: no ids given");
  return ids;
}

// Prompt and text files: the tokenizers index text with 32-bit offsets, and no
// context holds more than a few million tokens, so 256 MiB is far past any
// real prompt and well short of where an offset could wrap.
constexpr uint64_t kMaxTextFileBytes = 256ull << 20;

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound(path + ": cannot open");
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxTextFileBytes)
    return InvalidArgument(StrFormat("%s: expected a text file of at most %" PRIu64 " MiB, found %" PRIu64 " bytes",
                                     path.c_str(), kMaxTextFileBytes >> 20, size));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<tokenizer::Tokenizer> LoadTokenizer(const Pack& pack) {
  STRATA_ASSIGN_OR_RETURN(tokenizer::Vocab v, VocabFromManifest(*pack.manifest().tokenizer(), pack.path()));
  return tokenizer::Tokenizer::Create(v);
}

// --spec draft: the draft model, loaded on the CPU (the reference path when
// the target runs it), with its own sequence state and workspace.
struct LoadedDraft {
  LoadedRun run;
  SequenceState state;
  Workspace workspace;
  DraftModel draft;
};

// A draft must cut text into the target's tokens: the same count, the same
// text for every id, the same end-of-generation ids.
Status SameTokenizer(const tokenizer::Tokenizer& target, const tokenizer::Tokenizer& draft) {
  if (target.n_tokens() != draft.n_tokens())
    return InvalidArgument(StrFormat("the draft's vocabulary has %d tokens, the model's %d: a draft must share the "
                                     "model's tokenizer",
                                     draft.n_tokens(), target.n_tokens()));
  const std::vector<std::string> a = target.TextPieces(), b = draft.TextPieces();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (a[i] != b[i])
      return InvalidArgument(StrFormat("the draft's token %zu is '%s', the model's '%s': a draft must share the "
                                       "model's tokenizer",
                                       i, Printable(b[i]).c_str(), Printable(a[i]).c_str()));
  if (target.vocab().eog_ids != draft.vocab().eog_ids)
    return InvalidArgument("the draft's end-of-generation tokens differ from the model's: a draft must share the "
                           "model's tokenizer");
  return Status::Ok();
}

Result<std::unique_ptr<LoadedDraft>> LoadDraft(const RunOptions& o, const LoadOptions& target,
                                               const tokenizer::Tokenizer& tok, KvType kv) {
  auto d = std::make_unique<LoadedDraft>();
  LoadOptions lo = target;
  lo.pack = o.draft;
  lo.backend = o.backend == "reference" ? "reference" : "cpu";
  lo.plan_only = false;
  lo.who = "strata-run (draft)";
  auto run = LoadRun(lo);
  if (!run.ok()) return run.status().WithContext("--draft " + o.draft);
  d->run = std::move(*run);
  auto dtok = LoadTokenizer(*d->run.pack);
  if (!dtok.ok()) return dtok.status().WithContext("--draft " + o.draft);
  STRATA_RETURN_IF_ERROR(SameTokenizer(tok, *dtok).WithContext("--draft " + o.draft));
  const Model& m = *d->run.model;
  Backend& be = *d->run.backend;
  auto st = SequenceState::Create(be, m.hp(), target.n_ctx, kv, o.batch);
  if (!st.ok()) return st.status().WithContext("the draft's sequence state");
  d->state = std::move(*st);
  const uint64_t ws = be.WorkspaceBytes(m, PassShape{std::max<int64_t>(o.batch, 2), target.n_ctx, be.threads()});
  auto w = be.CreateWorkspace(ws, "the draft's workspace");
  if (!w.ok()) return w.status();
  d->workspace = std::move(*w);
  d->draft.model = &m;
  d->draft.backend = &be;
  d->draft.state = &d->state;
  d->draft.workspace = &d->workspace;
  d->draft.max_draft = o.spec_max;
  d->draft.adaptive = !o.spec_fixed;
  return d;
}

LoadOptions LoadOptionsFrom(const RunOptions& o);

// --spec: the draft of a run (null: none), what it needs kept alive.
struct SpecSetup {
  std::unique_ptr<LoadedDraft> loaded;  // --spec draft
  DraftModel mtp;                       // --spec mtp
  std::vector<float> mtp_hidden;        // its DraftModel::hidden
  const DraftModel* draft = nullptr;
};

Status SetUpSpec(const RunOptions& o, const Model& model, Backend& backend, RunMemory& mem, Workspace* workspace,
                 const tokenizer::Tokenizer& tok, SpecSetup* spec) {
  if (o.spec == "mtp") {  // the model's own MTP block, on its backend, with the plan's MTP state
    if (mem.experts)
      return Unsupported("--spec mtp with experts split between tiers (--expert-slots, a GPU whose memory does not "
                         "hold every expert) is not supported yet: the MTP layer's experts run on the backend");
    if (mem.mtp_states.empty()) return Internal("--spec mtp: the plan made no MTP state");
    spec->mtp.model = &model;
    spec->mtp.backend = &backend;
    spec->mtp.state = &mem.mtp_states[0];
    spec->mtp.workspace = workspace;
    spec->mtp.mtp = true;
    spec->mtp.hidden = &spec->mtp_hidden;
    spec->mtp.max_draft = o.spec_max;
    spec->mtp.adaptive = !o.spec_fixed;
    spec->draft = &spec->mtp;
  } else if (o.spec == "draft") {
    LoadOptions target = LoadOptionsFrom(o);
    target.n_ctx = mem.states[0].n_ctx;  // the plan's (--bench: its depth, prompt and tokens)
    STRATA_ASSIGN_OR_RETURN(spec->loaded, LoadDraft(o, target, tok, mem.states[0].kv_type));
    spec->draft = &spec->loaded->draft;
  }
  return Status::Ok();
}

int TokenizeFile(const Pack& pack, const std::string& file) {
  auto tok = LoadTokenizer(pack);
  if (!tok.ok()) return Fail(tok.status());
  auto text = ReadFile(file);
  if (!text.ok()) return Fail(text.status());
  std::vector<int32_t> ids = tok->Encode(*text, /*add_special=*/false, /*parse_special=*/false);
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
  std::printf("%s\n", line.c_str());
  return kExitOk;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// What the memory plan allocated for the run (runtime/memory/run_memory.h).
struct RunContext {
  SequenceState* state = nullptr;
  Workspace* workspace = nullptr;
  ExpertExecutor* experts = nullptr;
  RoutingObserver* observer = nullptr;
};

int64_t BenchGenerated(const RunOptions& o) { return o.n_predict < 0 ? 128 : o.n_predict; }

int Bench(const Model& model, Backend& backend, const RunOptions& o, const RunContext& rc, const DraftModel* draft) {
  const int64_t n_prompt = o.bench_prompt, n_gen = BenchGenerated(o);
  SequenceState* state = rc.state;
  std::mt19937 rng(1234);
  std::vector<int32_t> prompt(static_cast<size_t>(n_prompt)), depth(static_cast<size_t>(o.bench_depth));
  for (auto& t : prompt) t = static_cast<int32_t>(rng() % model.hp().n_vocab);
  for (auto& t : depth) t = static_cast<int32_t>(rng() % model.hp().n_vocab);
  std::vector<double> pp, tg;
  // What crossed the backend's seam in the last rep: the prompt's passes, then
  // the decode steps (the first keep_going call comes after the prompt).
  TransferCounts t_start, t_prompt, t_end;
  int64_t n_steps = 0;
  OpTimes op_times;  // the last rep's decode steps
  uint64_t sync_prompt = 0, sync_end = 0;
  double decode_seconds = 0;
  int64_t spec_drafted = 0, spec_accepted = 0, spec_verify = 0;  // over the measured reps
  // The VRAM/RAM split's times over the last rep's decode steps.
  ExpertSplit* split = rc.experts ? rc.experts->SplitOn(backend) : nullptr;
  ExpertSplit::Times split_prompt, split_end;
  std::fprintf(stderr,
               "strata-run: bench: %s, prompt %lld tokens, generate %lld tokens, at depth %lld, %d threads, %s "
               "backend, %d reps\n",
               std::string(ArchName(model.arch())).c_str(), static_cast<long long>(n_prompt),
               static_cast<long long>(n_gen), static_cast<long long>(o.bench_depth), backend.threads(),
               backend.name().c_str(), o.bench_reps);
  for (int rep = 0; rep < o.bench_reps + 1; ++rep) {  // rep 0 warms up
    if (Status cleared = state->Clear(); !cleared.ok()) return Fail(cleared);
    if (draft)
      if (Status cleared = draft->state->Clear(); !cleared.ok()) return Fail(cleared);
    Generator g(model, backend, *state, nullptr);
    if (!depth.empty()) {  // the context before the measured part, untimed
      GenerateOptions fill;
      fill.workspace = rc.workspace;
      fill.experts = rc.experts;
      fill.n_predict = 0;
      fill.ignore_eog = true;
      fill.sampling.temperature = 0;
      fill.batch = o.batch;
      fill.delta_net = o.delta_net_mode;
      fill.draft = draft;  // (it reads the context too)
      auto filled = g.Generate(depth, fill);
      if (!filled.ok()) return Fail(filled.status().WithContext("--bench-depth"));
    }
    GenerateOptions go;
    go.workspace = rc.workspace;
    go.experts = rc.experts;
    go.n_predict = n_gen;
    go.ignore_eog = true;
    go.sampling.temperature = 0;
    go.batch = o.batch;
    go.delta_net = o.delta_net_mode;
    // The last token's pass is timed too; speculation leaves it out (a step
    // decides tokens it has already run), so its decode steps are the passes run.
    go.feed_last = draft == nullptr;
    go.draft = draft;
    op_times = OpTimes{};
    go.decode_op_times = &op_times;
    t_start = backend.transfers();
    bool prompt_done = false;
    GenerateCallbacks cb;
    cb.keep_going = [&] {
      if (!prompt_done) {
        t_prompt = backend.transfers();
        sync_prompt = backend.SyncWaitNs();
        if (split) split_prompt = split->times();
      }
      prompt_done = true;
      return true;
    };
    auto r = g.Generate(prompt, go, cb);
    if (!r.ok()) return Fail(r.status());
    t_end = backend.transfers();
    sync_end = backend.SyncWaitNs();
    if (split) split_end = split->times();
    decode_seconds = r->gen_seconds;
    if (!prompt_done) t_prompt = t_end;
    n_steps = r->n_decoded;
    if (rep == 0) continue;
    pp.push_back(r->prompt_tps());
    // Decode: generated tokens per second (with speculation, a step may
    // decide several).
    const double gen_tps = draft ? static_cast<double>(r->tokens.size()) / std::max(r->gen_seconds, 1e-9) : r->gen_tps();
    tg.push_back(gen_tps);
    std::fprintf(stderr, "  rep %d: prefill %.1f tok/s, decode %.2f tok/s\n", rep, r->prompt_tps(), gen_tps);
    if (draft) {
      spec_drafted += r->n_drafted;
      spec_accepted += r->n_accepted;
      spec_verify += r->n_verify;
      std::fprintf(stderr, "  rep %d: speculation (%s): %lld drafted, %lld accepted, %lld verification passes, %lld "
                   "steps without drafts%s%s\n",
                   rep, draft->mtp ? "the MTP block" : "a draft model", static_cast<long long>(r->n_drafted),
                   static_cast<long long>(r->n_accepted), static_cast<long long>(r->n_verify),
                   static_cast<long long>(r->n_undrafted), r->spec_off.empty() ? "" : "; off: ",
                   r->spec_off.c_str());
    }
  }
  auto mm = [](const std::vector<double>& v) { return std::minmax_element(v.begin(), v.end()); };
  auto [pmin, pmax] = mm(pp);
  auto [gmin, gmax] = mm(tg);
  const double mb_per_token = static_cast<double>(model.DecodeBytesPerToken()) / 1e6;
  const double steps = static_cast<double>(std::max<int64_t>(n_steps, 1));
  const double step_in = static_cast<double>(t_end.up_bytes - t_prompt.up_bytes) / steps;
  const double step_out = static_cast<double>(t_end.down_bytes - t_prompt.down_bytes) / steps;
  std::fprintf(stderr,
               "  transfers (%s backend): weights made resident %s; the prompt %s in, %s out; each decode step "
               "%.0f B in, %.0f B out (%.1f calls)\n",
               backend.name().c_str(), HumanBytes(t_end.weight_bytes).c_str(),
               HumanBytes(t_prompt.up_bytes - t_start.up_bytes).c_str(),
               HumanBytes(t_prompt.down_bytes - t_start.down_bytes).c_str(), step_in, step_out,
               static_cast<double>(t_end.up_calls - t_prompt.up_calls + t_end.down_calls - t_prompt.down_calls) /
                   steps);
  // Where the last rep's decode time went, by layer op, and how much of it
  // the calling thread spent waiting for the pool's other threads.
  if (n_steps > 0 && decode_seconds > 0) {
    const double per_token_ms = 1e3 / steps;
    std::string line = StrFormat("  decode time per token %.3f ms:", decode_seconds * per_token_ms);
    for (int k = 0; k < OpTimes::kCount; ++k) {
      if (op_times.seconds[k] <= 0) continue;
      line += StrFormat(" %s %.3f ms (%.0f%%);", OpTimes::Name(k), op_times.seconds[k] * per_token_ms,
                        100.0 * op_times.seconds[k] / decode_seconds);
    }
    const double other = decode_seconds - op_times.Total();
    line += StrFormat(" sampling and the rest %.3f ms (%.0f%%)", std::max(other, 0.0) * per_token_ms,
                      100.0 * std::max(other, 0.0) / decode_seconds);
    const double sync = static_cast<double>(sync_end - sync_prompt) * 1e-9;
    line += StrFormat("; waiting for the other threads %.3f ms (%.0f%%)", sync * per_token_ms,
                      100.0 * sync / decode_seconds);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  if (split && n_steps > 0) {
    const ExpertSplit::Times& a = split_prompt;
    const ExpertSplit::Times& b = split_end;
    const double per_ms = 1e3 / steps;
    std::fprintf(stderr,
                 "  VRAM/RAM split, per decode step: %.1f experts on the device, %.1f on the host; waiting for the "
                 "routing %.3f ms (the device's work before it included), host experts %.3f ms, then waiting for the "
                 "device's experts %.3f ms; link %.0f B down, %.0f B up\n",
                 static_cast<double>(b.device_experts - a.device_experts) / steps,
                 static_cast<double>(b.host_experts - a.host_experts) / steps, (b.route_wait - a.route_wait) * per_ms,
                 (b.host - a.host) * per_ms, (b.device_wait - a.device_wait) * per_ms,
                 static_cast<double>(b.down_bytes - a.down_bytes) / steps,
                 static_cast<double>(b.up_bytes - a.up_bytes) / steps);
    // The prompt's offload decisions (the last rep's prompt: from the start
    // of the run's split times to the prompt's end, less the reps before).
    std::fprintf(stderr,
                 "  VRAM/RAM split, prefill: %llu CPU experts moved to the device over the run (%llu rows, %s "
                 "uploaded): upload at the link's %.1f GB/s (measured at start) against the CPU's time, the larger of "
                 "reading the expert at %.0f GB/s (host RAM, the plan's rate) and %.3f ms per row (measured)\n",
                 static_cast<unsigned long long>(b.offloaded), static_cast<unsigned long long>(b.offload_rows),
                 HumanBytes(b.offload_bytes).c_str(), b.link_bytes_per_s / 1e9, b.host_read_gbs,
                 b.host_seconds_per_row * 1e3);
  }
  // The device's copy bandwidth, measured now, beside what decode read.
  auto copy = backend.DeviceCopyGBs();
  if (!copy.ok()) return Fail(copy.status().WithContext("measuring the device's copy bandwidth"));
  const double decode_gb_s = Median(tg) * mb_per_token / 1e3;
  if (*copy > 0)
    std::fprintf(stderr, "  device copy bandwidth %.1f GB/s (read + write, a copy within device memory); decode read "
                 "the weights at %.1f GB/s, %.0f%% of it\n", *copy, decode_gb_s, 100.0 * decode_gb_s / *copy);
  std::printf("{\"arch\": \"%s\", \"threads\": %d, \"backend\": \"%s\", \"n_prompt\": %lld, \"n_gen\": %lld, "
              "\"depth\": %lld, "
              "\"reps\": %d, \"prefill_tps_median\": %.2f, \"prefill_tps_min\": %.2f, \"prefill_tps_max\": %.2f, "
              "\"decode_tps_median\": %.3f, \"decode_tps_min\": %.3f, \"decode_tps_max\": %.3f, "
              "\"weight_mb_per_token\": %.1f, \"decode_effective_gb_s\": %.2f, \"resident_weight_bytes\": %llu, "
              "\"decode_step_bytes_in\": %.0f, \"decode_step_bytes_out\": %.0f, \"device_copy_gb_s\": %.1f, "
              "\"spec\": \"%s\", \"spec_drafted\": %lld, \"spec_accepted\": %lld, \"spec_verify_passes\": %lld}\n",
              std::string(ArchName(model.arch())).c_str(), backend.threads(), backend.name().c_str(),
              static_cast<long long>(n_prompt), static_cast<long long>(n_gen), static_cast<long long>(o.bench_depth),
              o.bench_reps, Median(pp), *pmin, *pmax,
              Median(tg), *gmin, *gmax, mb_per_token, decode_gb_s,
              static_cast<unsigned long long>(t_end.weight_bytes), step_in, step_out, *copy,
              !draft ? "none" : draft->mtp ? "mtp" : "draft", static_cast<long long>(spec_drafted),
              static_cast<long long>(spec_accepted), static_cast<long long>(spec_verify));
  return kExitOk;
}

int Chat(const Model& model, Backend& backend, const tokenizer::Tokenizer& tok, const RunOptions& o,
         const RunContext& rc) {
  auto tmpl = ChatTemplate::FromVocab(tok.vocab());
  if (!tmpl.ok()) return Fail(tmpl.status());
  if (tmpl->fallback) std::fprintf(stderr, "strata-run: the pack has no chat template; using ChatML\n");
  SequenceState* state = rc.state;
  const tokenizer::Vocab& vocab = tok.vocab();
  std::vector<ChatMessage> history;
  if (!o.system.empty()) history.push_back({"system", o.system, nullptr});
  // What the state holds, as rendered text: each turn runs only what the
  // conversation adds to it (or all of it, when the template rewrote history).
  std::string rendered_so_far;
  std::fprintf(stderr, "strata-run: chat (%s template, context %lld). Type a message; an empty line or EOF quits.\n",
               tmpl->name().c_str(), static_cast<long long>(o.n_ctx));
  ForwardOptions fo;
  fo.delta_net = o.delta_net_mode;
  fo.workspace = rc.workspace;
  fo.experts = rc.experts;
  fo.observer = rc.observer;
  // Tokens for the text after what the state holds; starts afresh when the
  // rendered conversation no longer extends it.
  auto tokens_after_state = [&](const std::string& full, std::vector<int32_t>* ids) -> Status {
    if (full.compare(0, rendered_so_far.size(), rendered_so_far) != 0) {
      STRATA_RETURN_IF_ERROR(state->Clear());
      rendered_so_far.clear();
    }
    // Special-token text a user types stays text (the server's rule).
    STRATA_ASSIGN_OR_RETURN(*ids, serve::EncodeRenderedChat(tok, full, history, rendered_so_far.size()));
    if (rendered_so_far.empty() && vocab.add_bos && vocab.special.bos != tokenizer::kNoToken &&
        (ids->empty() || ids->front() != vocab.special.bos))
      ids->insert(ids->begin(), vocab.special.bos);
    return Status::Ok();
  };
  std::string line;
  while (true) {
    std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line) || line.empty()) break;
    history.push_back({"user", line, nullptr});
    auto full = tmpl->Render(history, true);
    if (!full.ok()) return Fail(full.status());
    std::vector<int32_t> ids;
    if (Status s = tokens_after_state(*full, &ids); !s.ok()) return Fail(s);
    Generator g(model, backend, *state, &tok);
    GenerateOptions go;
    go.workspace = rc.workspace;
    go.experts = rc.experts;
    go.observer = rc.observer;
    go.n_predict = o.n_predict;
    go.sampling = o.sampling;
    go.stop_strings = tmpl->StopStrings();
    go.batch = o.batch;
    go.delta_net = o.delta_net_mode;
    auto r = g.Generate(ids, go, {[](std::string_view s) { std::fwrite(s.data(), 1, s.size(), stdout); std::fflush(stdout); }, {}, {}});
    if (!r.ok()) return Fail(r.status());
    std::printf("\n");
    std::fprintf(stderr, "[%lld prompt tokens at %.1f tok/s, %zu generated at %.2f tok/s; stopped: %s]\n",
                 static_cast<long long>(r->n_prompt), r->prompt_tps(), r->tokens.size(), r->gen_tps(),
                 std::string(StopReasonName(r->stop)).c_str());
    if (r->stop == StopReason::kContextFull) {
      std::fprintf(stderr, "strata-run: the context is full (-c %lld); ending the chat\n", static_cast<long long>(o.n_ctx));
      break;
    }
    history.push_back({"assistant", r->text, nullptr});
    // The state holds the turn up to its last generated token; close the turn
    // the way the template renders it, so the next turn continues from here.
    rendered_so_far = *full + r->text;
    auto closed = tmpl->Render(history, false);
    if (!closed.ok()) return Fail(closed.status());
    if (closed->compare(0, rendered_so_far.size(), rendered_so_far) != 0) continue;  // next turn starts afresh
    auto tail = serve::EncodeRenderedChat(tok, *closed, history, rendered_so_far.size());
    if (!tail.ok()) return Fail(tail.status());
    const std::vector<int32_t>& tail_ids = *tail;
    if (state->n_past + static_cast<int64_t>(tail_ids.size()) > state->n_ctx) break;
    std::vector<float> unused;
    if (!tail_ids.empty()) {
      Status s = Forward(model, backend, *state, tail_ids, fo, &unused);
      if (!s.ok()) return Fail(s);
    }
    rendered_so_far = *closed;
  }
  return kExitOk;
}

// What both a run and the server load, from the command line.
LoadOptions LoadOptionsFrom(const RunOptions& o) {
  LoadOptions lo;
  lo.pack = o.pack;
  lo.verify = o.verify;
  lo.threads = o.threads;
  lo.decode_copies = o.decode_copies;
  lo.backend = o.backend;
  lo.plan_only = o.memory.plan;
  lo.n_ctx = o.n_ctx;
  lo.mtp = o.spec == "mtp";
  return lo;
}

int Serve(const RunOptions& o) {
  serve::ServeOptions so;
  so.load = LoadOptionsFrom(o);
  so.host = o.host;
  so.port = o.port;
  so.parallel = o.memory.parallel > 0 ? o.memory.parallel : 4;
  auto mem = o.memory.Resolve();
  if (!mem.ok()) return Fail(mem.status());
  if (!o.memory.routing_trace_out.empty())
    return Fail(InvalidArgument("--routing-trace-out records one run; the server does not write a trace"));
  so.memory = *mem;
  so.plan_only = o.memory.plan;
  so.queue = o.queue;
  so.api_key = o.api_key;
  if (so.api_key.empty())
    if (const char* env = std::getenv("STRATA_API_KEY")) so.api_key = env;
  so.cors_origin = o.cors_origin;
  so.chat_template_file = o.chat_template_file;
  so.allowed_hosts = o.allowed_hosts;
  so.max_connections = o.max_connections;
  so.test_head_deadline_ms = o.test_head_deadline_ms;
  so.test_body_deadline_ms = o.test_body_deadline_ms;
  so.test_idle_ms = o.test_idle_ms;
  so.batch = o.batch;
  so.max_body = o.max_body;
  so.sampling = o.sampling;
  so.max_tokens = o.n_predict;
  so.delta_net = o.delta_net_mode;
  so.test_load_delay_ms = o.test_load_delay_ms;
  so.test_step_delay_ms = o.test_step_delay_ms;
  return serve::Serve(so);
}

int Main(int argc, char** argv) {
  RunOptions o;
  CLI::App app{"strata-run: maps a Strata pack and runs it: generate text, chat, benchmark, or tokenize."};
  // The same options on every system: no /option forms on Windows (CLI11's
  // default there), so a path such as /data/model.gguf stays a path.
  app.allow_windows_style_options(false);
  app.set_version_flag("--version", std::string("strata-run ") + kVersion);
  AddRunOptions(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (o.bench && !o.prompt.empty()) {
    char* end = nullptr;
    long long v = std::strtoll(o.prompt.c_str(), &end, 10);
    if (*end || v < 1 || v > (1 << 20)) return Fail(InvalidArgument("--bench -p: expected a prompt length 1..1048576"));
    o.bench_prompt = v;
    o.prompt.clear();
  }
  Status valid = o.Validate();
  if (!valid.ok()) return Fail(valid);
  if (o.serve) return Serve(o);

  auto t_load = std::chrono::steady_clock::now();
  if (!o.tokenize_file.empty()) {  // the tokenizer alone: vocab-only packs too
    PackOpenOptions po;
    po.verify_checksums = o.verify;
    po.threads = o.threads;
    auto pack = Pack::Open(o.pack, po);
    if (!pack.ok()) return Fail(pack.status());
    return TokenizeFile(**pack, o.tokenize_file);
  }

  auto loaded = LoadRun(LoadOptionsFrom(o));
  if (!loaded.ok()) return Fail(loaded.status());
  const std::unique_ptr<Pack>& pack = loaded->pack;
  const std::unique_ptr<Model>& model = loaded->model;
  const std::unique_ptr<Backend>& backend = loaded->backend;
  o.n_ctx = loaded->n_ctx;

  // The memory plan, before anything large is allocated: refuse to start
  // rather than fail later (runtime/memory, docs/memory-plan.md).
  auto mem_options = o.memory.Resolve();
  if (!mem_options.ok()) return Fail(mem_options.status());
  mem_options->decode_copies = o.decode_copies != "native";  // the host expert tier too
  if (mem_options->parallel > 1 && !o.memory.plan)
    return Fail(InvalidArgument("--parallel plans several sequences; a one-shot run, --chat and --bench run one (use "
                                "--parallel with --plan, or with the server)"));
  RunShape shape;
  shape.n_ctx = o.bench ? o.bench_depth + o.bench_prompt + BenchGenerated(o) + 1 : o.n_ctx;
  if (o.bench && shape.n_ctx > static_cast<int64_t>(model->hp().n_ctx_train))
    return Fail(InvalidArgument(StrFormat("--bench: depth %lld + prompt %lld + %lld generated tokens is more than the "
                                          "model's training context %u",
                                          static_cast<long long>(o.bench_depth), static_cast<long long>(o.bench_prompt),
                                          static_cast<long long>(BenchGenerated(o)), model->hp().n_ctx_train)));
  shape.batch = o.batch;
  shape.threads = backend->threads();
  shape.logits_all = !o.logits_out.empty();
  shape.trace_tokens = o.memory.routing_trace_out.empty()
                           ? 0
                           : static_cast<uint64_t>(shape.n_ctx) * (o.bench ? o.bench_reps + 1 : 1);
  auto planned = PlanAndAllocate(*loaded, *mem_options, shape, o.memory.plan, "strata-run");
  if (!planned.ok()) return Fail(planned.status());
  if (o.memory.plan) {
    std::printf("%s", FormatPlan((*planned)->setup.plan).c_str());
    return (*planned)->setup.plan.Fits() ? kExitOk : kExitError;
  }
  RunMemory* mem = &*(*planned)->memory;
  std::optional<RoutingTraceRecorder> recorder;
  if (!o.memory.routing_trace_out.empty()) {
    recorder.emplace(model->hp().n_layer, model->hp().n_expert, model->hp().n_expert_used,
                     model->hp().n_layer_dense_lead);
    Status s = recorder->Reserve(shape.trace_tokens);
    if (!s.ok()) return Fail(s);
  }
  RunContext rc{&mem->states[0], &mem->workspace, mem->experts.get(), recorder ? &*recorder : nullptr};
  // After the run: the tiers' counts and the routing trace.
  auto finish = [&](int code) {
    if (mem->experts && o.memory.expert_stats)
      std::fprintf(stderr, "strata-run: %s\n", mem->experts->StatsLine().c_str());
    if (code == kExitOk && recorder) {
      auto trace = recorder->Finish();
      if (!trace.ok()) return Fail(trace.status());
      Status s = WriteRoutingTrace(*trace, o.memory.routing_trace_out);
      if (!s.ok()) return Fail(s);
    }
    return code;
  };
  auto tok = LoadTokenizer(*pack);
  if (!tok.ok()) return Fail(tok.status());
  SpecSetup spec;
  if (Status s = SetUpSpec(o, *model, *backend, *mem, rc.workspace, *tok, &spec); !s.ok()) return Fail(s);
  if (o.bench) return finish(Bench(*model, *backend, o, rc, spec.draft));

  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
  if (o.chat) return finish(Chat(*model, *backend, *tok, o, rc));

  std::vector<int32_t> prompt;
  if (!o.tokens.empty()) {
    auto ids = ParseIds(o.tokens);
    if (!ids.ok()) return Fail(ids.status());
    prompt = *ids;
  } else {
    std::string text = o.prompt;
    if (!o.prompt_file.empty()) {
      auto t = ReadFile(o.prompt_file);
      if (!t.ok()) return Fail(t.status());
      text = *t;
    }
    prompt = tok->Encode(text, /*add_special=*/true, /*parse_special=*/o.parse_special);
  }
  for (int32_t id : prompt)
    if (id < 0 || static_cast<uint32_t>(id) >= model->hp().n_vocab)
      return Fail(InvalidArgument(StrFormat("token id %d is out of range: the vocabulary has %u tokens (0..%u)", id,
                                            model->hp().n_vocab, model->hp().n_vocab - 1)));
  if (static_cast<int64_t>(prompt.size()) > o.n_ctx)
    return Fail(InvalidArgument(StrFormat("the prompt has %zu tokens, more than the context (-c %lld)", prompt.size(),
                                          static_cast<long long>(o.n_ctx))));

  std::optional<AtomicFileWriter> logits_out;
  Status write_status;
  if (!o.logits_out.empty()) {
    auto w = AtomicFileWriter::Create(o.logits_out);
    if (!w.ok()) return Fail(w.status());
    logits_out.emplace(std::move(*w));
  }
  GenerateOptions go;
  go.workspace = rc.workspace;
  go.experts = rc.experts;
  go.observer = rc.observer;
  go.n_predict = o.n_predict;
  go.ignore_eog = o.ignore_eos;
  go.sampling = o.sampling;
  go.stop_strings = o.stop;
  go.batch = o.batch;
  go.delta_net = o.delta_net_mode;
  go.prompt_logits = logits_out.has_value();
  go.feed_last = logits_out.has_value();
  GenerateCallbacks cb;
  if (!o.print_ids) cb.on_text = [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  if (logits_out)
    cb.on_logits = [&](std::span<const float> row) {
      if (write_status.ok())
        write_status = logits_out->Write(reinterpret_cast<const uint8_t*>(row.data()), row.size() * sizeof(float));
    };
  go.draft = spec.draft;
  Generator g(*model, *backend, *rc.state, &*tok);
  auto r = g.Generate(prompt, go, cb);
  if (!r.ok()) return Fail(r.status());
  if (!write_status.ok()) return Fail(write_status);
  if (logits_out) {
    Status s = logits_out->Commit();
    if (!s.ok()) return Fail(s);
  }
  if (o.print_ids) {
    std::string line;
    for (size_t i = 0; i < r->tokens.size(); ++i) line += (i ? " " : "") + std::to_string(r->tokens[i]);
    std::printf("%s\n", line.c_str());
  } else {
    std::printf("\n");
  }
  std::fprintf(stderr,
               "strata-run: load %.2f s; prompt %lld tokens in %.3f s (%.1f tok/s); generated %zu tokens in %.3f s "
               "(%.2f tok/s); stopped: %s\n",
               load_s, static_cast<long long>(r->n_prompt), r->prompt_seconds, r->prompt_tps(), r->tokens.size(),
               r->gen_seconds, r->gen_tps(), std::string(StopReasonName(r->stop)).c_str());
  const bool speculated = spec.draft != nullptr;
  if (speculated && !r->spec_off.empty()) {
    std::fprintf(stderr, "strata-run: speculation did not run: %s\n", r->spec_off.c_str());
  } else if (speculated) {
    std::fprintf(stderr,
                 "strata-run: speculation: %lld tokens drafted, %lld accepted (%.1f%%), %lld verification passes, "
                 "%.2f tokens a pass, %lld passes run again (recurrent state), %lld steps without drafts (not "
                 "expected to pay)\n",
                 static_cast<long long>(r->n_drafted), static_cast<long long>(r->n_accepted),
                 r->n_drafted ? 100.0 * static_cast<double>(r->n_accepted) / static_cast<double>(r->n_drafted) : 0.0,
                 static_cast<long long>(r->n_verify),
                 r->n_verify ? static_cast<double>(r->n_accepted + r->n_verify) / static_cast<double>(r->n_verify) : 0.0,
                 static_cast<long long>(r->n_replayed), static_cast<long long>(r->n_undrafted));
    if (r->spec_stopped_at >= 0)
      std::fprintf(stderr, "strata-run: speculation stopped after %lld tokens: its drafts were not accepted\n",
                   static_cast<long long>(r->spec_stopped_at));
  }
  return finish(kExitOk);
}

}  // namespace

int main(int argc, char** argv) {
  return strata::GuardedMain("strata-run", argc, argv, Main);
}
