// Expert-cache hit rates: profile-pinned vs LRU vs LFRU vs both, at several
// cache sizes, on routing traces from real forward passes (the conformance
// fixtures; a synthetic model whose router is skewed per layer, run on text
// with topics) and from the synthetic routing generator in two regimes
// (strong static skew; weak static skew with strong temporal locality).
// Every policy runs through runtime/experts/expert_cache.h, the code the
// tiered executor uses.
//
//   ./build/bench/expert_cache_bench [--data ../shared/data] [--traces DIR] [--tokens N] > expert-cache.md
//
// Protocol: the profile (hotness) is counted on the first half of a trace's
// sessions (calibration); hit rates are measured on the second half, with the
// cache's state carried from session to session as a server would. "oracle"
// pins the hottest experts of the evaluation half itself: the best any static
// pin set can do. The traces are written to --traces (default
// build/bench-data/routing) for strata-run --expert-profile.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "runtime/base/strings.h"
#include "runtime/experts/expert_cache.h"
#include "runtime/experts/expert_hotness.h"
#include "runtime/experts/routing_trace.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/generator.h"
#include "runtime/pack/pack_reader.h"
#include "tests/gguf_writer/synthetic_model.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/synthetic_routing.h"

namespace {

using namespace strata;

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "expert_cache_bench: %s: %s\n", what.c_str(), s.message().c_str());
  std::exit(1);
}

// Routing of `sessions` generations on a pack: a random prompt of
// `prompt` tokens (or the tokens `make_prompt` gives), then `gen` sampled tokens.
RoutingTrace Record(const std::string& pack_path, int sessions, const std::function<std::vector<int32_t>(int)>& make_prompt,
                    int gen, int32_t batch) {
  auto pack = Pack::Open(pack_path);
  if (!pack.ok()) Die(pack_path, pack.status());
  auto model = Model::Create(**pack);
  if (!model.ok()) Die(pack_path, model.status());
  FastBackend::Options fo;
  auto backend = FastBackend::Create(fo);
  if (!backend.ok()) Die("backend", backend.status());
  const HParams& hp = model->hp();
  RoutingTraceRecorder rec(hp.n_layer, hp.n_expert, hp.n_expert_used);
  for (int s = 0; s < sessions; ++s) {
    std::vector<int32_t> prompt = make_prompt(s);
    auto st = SequenceState::Create(**backend, hp, static_cast<int64_t>(prompt.size()) + gen + 1);
    if (!st.ok()) Die("state", st.status());
    Generator g(*model, **backend, *st, nullptr);
    GenerateOptions go;
    go.n_predict = gen;
    go.ignore_eog = true;
    go.sampling.temperature = 0.8f;
    go.sampling.seed = static_cast<uint32_t>(1000 + s);
    go.batch = batch;
    go.observer = &rec;
    rec.BeginSession();
    auto r = g.Generate(prompt, go);
    if (!r.ok()) Die("generate", r.status());
  }
  auto t = rec.Finish();
  if (!t.ok()) Die("trace", t.status());
  return *t;
}

struct Row {
  std::string policy;
  double hit[3];
};

// The evaluation split: the first session at or after half the tokens.
uint64_t Split(const RoutingTrace& t) {
  const uint64_t half = t.tokens() / 2;
  for (uint64_t s : t.sessions)
    if (s >= half) return s;
  return half;
}

double Hit(const RoutingTrace& t, uint64_t split, const ExpertHotness* hot, int32_t slots, int32_t pinned,
           CachePolicy policy, bool per_layer, double half_life_tokens = 0, uint64_t end = UINT64_MAX) {
  ExpertCacheConfig c;
  c.half_life = half_life_tokens * t.n_layer * t.k;
  c.slots = slots;
  c.pinned = pinned;
  c.policy = policy;
  c.per_layer = per_layer;
  c.k = t.k;
  ExpertCache cache(t.n_layer, t.n_expert, c);
  if (hot) FillFromHotness(cache, *hot, /*warm=*/true);
  return 100.0 * ReplayRouting(cache, t, split, std::min(end, t.tokens())).HitRate();
}

void Report(const std::string& title, const std::string& how, const RoutingTrace& t) {
  const uint64_t split = Split(t);
  const int32_t total = static_cast<int32_t>(t.n_layer * t.n_expert);
  auto cal = ExpertHotness::FromTrace(t, 0, split);
  auto eval = ExpertHotness::FromTrace(t, split, t.tokens());
  const int32_t sizes[3] = {std::max(1, total / 8), std::max(1, total / 4), std::max(1, total / 2)};
  std::printf("### %s\n\n%s\n\n", title.c_str(), how.c_str());
  std::printf("%u layers x %u experts, top-%u; %llu tokens in %zu sessions; calibration: tokens [0, %llu), "
              "evaluation: [%llu, %llu).\n\n",
              t.n_layer, t.n_expert, t.k, static_cast<unsigned long long>(t.tokens()), t.sessions.size(),
              static_cast<unsigned long long>(split), static_cast<unsigned long long>(split),
              static_cast<unsigned long long>(t.tokens()));
  // Static skew: share of the evaluation's routed uses that the calibration's top experts receive.
  std::printf("Static skew: the calibration's hottest 1/8, 1/4, 1/2 of all experts receive %.1f%%, %.1f%%, %.1f%% "
              "of the evaluation's routed uses (the evaluation's own: %.1f%%, %.1f%%, %.1f%%; uniform: 12.5, 25, 50).\n\n",
              100 * eval->Share(cal->Hottest(static_cast<size_t>(sizes[0]))),
              100 * eval->Share(cal->Hottest(static_cast<size_t>(sizes[1]))),
              100 * eval->Share(cal->Hottest(static_cast<size_t>(sizes[2]))),
              100 * eval->Share(eval->Hottest(static_cast<size_t>(sizes[0]))),
              100 * eval->Share(eval->Hottest(static_cast<size_t>(sizes[1]))),
              100 * eval->Share(eval->Hottest(static_cast<size_t>(sizes[2]))));
  std::vector<Row> rows;
  auto row = [&](const std::string& name, const ExpertHotness* hot, double pin_share, CachePolicy p, bool per_layer) {
    Row r{name, {}};
    for (int i = 0; i < 3; ++i) {
      const int32_t pinned = static_cast<int32_t>(sizes[i] * pin_share + 0.5);
      r.hit[i] = Hit(t, split, hot, sizes[i], pinned, p, per_layer);
    }
    rows.push_back(r);
  };
  const auto lru = CachePolicy::kLru, lfru = CachePolicy::kLfru;
  row("profile only (all slots pinned)", &*cal, 1.0, lru, false);
  row("LRU, shared by all layers (cold start)", nullptr, 0.0, lru, false);
  row("LRU, per layer (cold start)", nullptr, 0.0, lru, true);
  row("LFRU, shared (cold start)", nullptr, 0.0, lfru, false);
  row("LFRU, per layer (cold start)", nullptr, 0.0, lfru, true);
  row("LFRU, shared, seeded and filled from the profile (strata-run's default)", &*cal, 0.0, lfru, false);
  row("both: 1/2 pinned + 1/2 LRU per layer", &*cal, 0.5, lru, true);
  row("both: 3/4 pinned + 1/4 LRU per layer", &*cal, 0.75, lru, true);
  row("both: 1/2 pinned + 1/2 LFRU shared, seeded", &*cal, 0.5, lfru, false);
  row("oracle static pin (evaluation's own hottest)", &*eval, 1.0, lru, false);
  std::printf("| policy | %d slots (1/8) | %d slots (1/4) | %d slots (1/2) |\n|---|---:|---:|---:|\n", sizes[0],
              sizes[1], sizes[2]);
  for (const Row& r : rows) std::printf("| %s | %.1f%% | %.1f%% | %.1f%% |\n", r.policy.c_str(), r.hit[0], r.hit[1], r.hit[2]);
  // Start-up: the first 64 tokens of the evaluation from a fresh cache, 1/4 of the experts in slots.
  const uint64_t first = split + 64;
  std::printf("\nStart-up, first 64 evaluation tokens, %d slots: profile only %.1f%%, LFRU cold %.1f%%, LFRU seeded "
              "and filled from the profile %.1f%%, LRU cold %.1f%%.\n",
              sizes[1], Hit(t, split, &*cal, sizes[1], sizes[1], lru, false, 0, first),
              Hit(t, split, nullptr, sizes[1], 0, lfru, false, 0, first),
              Hit(t, split, &*cal, sizes[1], 0, lfru, false, 0, first),
              Hit(t, split, nullptr, sizes[1], 0, lru, false, 0, first));
  std::printf("LFRU half-life (seeded, %d slots): 16 tokens %.1f%%, 64 tokens (default) %.1f%%, 256 tokens %.1f%%, "
              "1024 tokens %.1f%%.\n\n",
              sizes[1], Hit(t, split, &*cal, sizes[1], 0, lfru, false, 16), Hit(t, split, &*cal, sizes[1], 0, lfru, false, 64),
              Hit(t, split, &*cal, sizes[1], 0, lfru, false, 256), Hit(t, split, &*cal, sizes[1], 0, lfru, false, 1024));
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = std::string(STRATA_SHARED_DATA_DIR), traces = std::string(STRATA_BINARY_DIR) + "/bench-data/routing";
  uint64_t gen_tokens = 12000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--data") data = argv[i + 1];
    else if (a == "--traces") traces = argv[i + 1];
    else if (a == "--tokens") gen_tokens = std::strtoull(argv[i + 1], nullptr, 10);
  }
  std::filesystem::create_directories(traces);
  auto save = [&](const RoutingTrace& t, const std::string& name) {
    Status s = WriteRoutingTrace(t, traces + "/" + name + ".trace");
    if (!s.ok()) Die("write trace", s);
  };

  std::printf("## Expert-cache hit rates\n\nMade by `./build/bench/expert_cache_bench` (bench/expert_cache_bench.cc). "
              "Hit rate = routed (token, layer, expert) uses served from a device slot, over all routed uses of "
              "the evaluation half.\n\n");

  // 1. Conformance fixtures: 16 sessions of a random 64-token prompt and 128 sampled tokens.
  for (const char* name : {"qwen3moe-q4_k_m", "qwen35moe-q4_k_m"}) {
    const std::string gguf = data + "/conformance/" + name + ".gguf";
    const std::string pack = traces + "/" + name + ".strata";
    auto r = testing::PackFile(gguf, pack);
    if (!r.ok()) Die(gguf, r.status());
    auto prompt = [](int s) {
      std::mt19937 rng(static_cast<uint32_t>(77 + s));
      std::vector<int32_t> p(64);
      for (auto& x : p) x = static_cast<int32_t>(rng() % 500);
      return p;
    };
    RoutingTrace t = Record(pack, 16, prompt, 128, 64);
    save(t, name);
    Report(std::string("Fixture ") + name,
           "Recorded with RoutingTraceRecorder: 16 sessions, each a random 64-token prompt then 128 tokens sampled "
           "at temperature 0.8 (random-weight model: routing follows token identity and context, with no designed skew).",
           t);
  }

  // 2. A synthetic qwen3moe with a Zipf-like router bias per layer, run on text with topics.
  {
    testing::SyntheticModelSpec s;
    s.arch = Arch::kQwen3Moe;
    s.hp = testing::TinyQwen3MoeHParams();
    s.hp.n_layer_all = s.hp.n_layer = 8;
    s.hp.n_expert = 128;
    s.hp.n_expert_used = 8;
    s.hp.n_ff_exp = 64;
    s.hp.n_ctx_train = 4096;
    s.seed = 11;
    // Per layer, a random permutation of the experts; rank r gets a logit bias of -s*ln(r+1)
    // (router probability ~ (r+1)^-s before the data's own contribution), s = 0.9. The
    // embedding's dimension 0 is about 7 after the first RMSNorm, hence the division.
    std::vector<std::vector<float>> bias(8, std::vector<float>(128));
    std::mt19937 rng(5);
    for (auto& layer : bias) {
      std::vector<uint32_t> perm(128);
      for (uint32_t i = 0; i < 128; ++i) perm[i] = i;
      std::shuffle(perm.begin(), perm.end(), rng);
      for (uint32_t r = 0; r < 128; ++r) layer[perm[r]] = -0.9f * std::log(r + 1.0f) / 7.0f;
    }
    s.router_bias = [bias](uint32_t l, uint32_t e) { return bias[l][e]; };
    auto b = testing::BuildSyntheticModel(s);
    if (!b.ok()) Die("synthetic model", b.status());
    const std::string gguf = traces + "/skewed-qwen3moe.gguf", pack = traces + "/skewed-qwen3moe.strata";
    if (Status st = b->WriteFile(gguf); !st.ok()) Die(gguf, st);
    PackOptions po;
    po.probe = false;
    auto r = testing::PackFile(gguf, pack, po);
    if (!r.ok()) Die(gguf, r.status());
    // Text with topics: each session is 4 segments of 128 tokens; a segment
    // draws from its own 40 token ids (a topic's vocabulary), often repeating
    // the last few tokens (phrases).
    auto prompt = [](int sess) {
      std::mt19937 g(static_cast<uint32_t>(900 + sess));
      std::vector<int32_t> p;
      for (int seg = 0; seg < 4; ++seg) {
        std::vector<int32_t> vocab(40);
        for (auto& x : vocab) x = static_cast<int32_t>(g() % 500);
        for (int i = 0; i < 128; ++i) {
          if (p.size() > 8 && g() % 4 == 0) p.push_back(p[p.size() - 1 - g() % 8]);
          else p.push_back(vocab[g() % vocab.size()]);
        }
      }
      return p;
    };
    RoutingTrace t = Record(pack, 12, prompt, 1, 64);
    save(t, "skewed-qwen3moe");
    Report("Synthetic qwen3moe with a skewed router, text with topics",
           "8 layers x 128 experts, top-8; the router of each layer favours its own random ranking of experts "
           "(logit bias -0.9 ln(rank+1)); 12 sessions of 512 prompt tokens in 4 topics of 40 token ids with "
           "repeated phrases, run as prompts (batches of 64).",
           t);
  }

  // 3. The routing generator (Qwen3-30B-A3B shape: 48 layers x 128 experts, top-8), two regimes.
  {
    testing::SyntheticRoutingSpec g;
    g.n_layer = 48;
    g.n_expert = 128;
    g.k = 8;
    g.tokens = gen_tokens;
    g.zipf_s = 1.0;
    g.topic_boost = 2.0;
    g.repeat_p = 0.05;
    g.seed = 3;
    RoutingTrace t = testing::MakeSyntheticRouting(g);
    for (uint64_t s = 500; s < t.tokens(); s += 500) t.sessions.push_back(s);
    save(t, "generator-static-skew");
    Report("Generator: strong static skew",
           "MakeSyntheticRouting: Zipf s = 1.0 per layer, weak topics (boost 2, 16 experts, mean 400 tokens), "
           "5% repeats; sessions of 500 tokens.",
           t);
    g.zipf_s = 0.2;
    g.topic_boost = 30.0;
    g.topic_experts = 12;
    g.repeat_p = 0.3;
    g.seed = 4;
    RoutingTrace u = testing::MakeSyntheticRouting(g);
    for (uint64_t s = 500; s < u.tokens(); s += 500) u.sessions.push_back(s);
    save(u, "generator-temporal");
    Report("Generator: weak static skew, strong temporal locality",
           "MakeSyntheticRouting: Zipf s = 0.2, strong topics (boost 30 on 12 experts per layer, mean 400 tokens), "
           "30% of tokens repeat one of the last 64 tokens' routing; sessions of 500 tokens.",
           u);
  }
  return 0;
}
