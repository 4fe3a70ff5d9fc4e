// Tiered experts: the cache policies do what they say; hotness comes from a
// trace or the pack's profile (and a malformed profile is refused, not
// trusted); routing traces round-trip; and above all a run with a device
// tier computes exactly what the untiered path computes, whatever the slot
// count, pinning, policy or batch.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>

#include "runtime/experts/expert_cache.h"
#include "runtime/experts/expert_hotness.h"
#include "runtime/experts/expert_slots.h"
#include "runtime/pack/expert_profile.h"
#include "runtime/experts/routing_trace.h"
#include "runtime/experts/tiered_executor.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/forward.h"
#include "runtime/model/sim_backend.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/synthetic_pack.h"
#include "tests/testing/synthetic_routing.h"
#include "tests/testing/test_data.h"

namespace strata {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

ExpertCacheConfig Config(int32_t slots, int32_t pinned, CachePolicy p, bool per_layer = false) {
  ExpertCacheConfig c;
  c.slots = slots;
  c.pinned = pinned;
  c.policy = p;
  c.per_layer = per_layer;
  c.half_life = 8;
  return c;
}

TEST(ExpertCache, LruEvictsTheLeastRecentlyUsed) {
  ExpertCache c(1, 8, Config(2, 0, CachePolicy::kLru));
  EXPECT_GE(c.Access({0, 1}).upload, 0);  // a miss, placed
  EXPECT_GE(c.Access({0, 2}).upload, 0);
  EXPECT_GE(c.Access({0, 1}).slot, 0);  // hit: 1 is now the most recent
  CacheAccess a = c.Access({0, 3});     // evicts 2
  ASSERT_TRUE(a.evicted.has_value());
  EXPECT_EQ(a.evicted->expert, 2u);
  EXPECT_EQ(c.SlotOf({0, 2}), -1);
  EXPECT_GE(c.SlotOf({0, 1}), 0);
  EXPECT_EQ(c.stats().hits, 1u);
  EXPECT_EQ(c.stats().misses, 3u);
  EXPECT_EQ(c.stats().evictions, 1u);
}

TEST(ExpertCache, PinnedSlotsAreNeverEvicted) {
  for (CachePolicy p : {CachePolicy::kLru, CachePolicy::kLfru}) {
    ExpertCache c(2, 8, Config(3, 2, p));
    auto placed = c.Pin({{1, 7}, {0, 3}, {0, 4}});
    ASSERT_EQ(placed.size(), 2u);  // only two pinned slots
    for (int i = 0; i < 200; ++i) c.Access({i % 2, static_cast<uint32_t>(i % 8)});
    EXPECT_EQ(c.SlotOf({1, 7}), 0);
    EXPECT_EQ(c.SlotOf({0, 3}), 1);
    EXPECT_GT(c.stats().pinned_hits, 0u);
  }
}

TEST(ExpertCache, LfruKeepsARecurringExpertThroughOneOffs) {
  ExpertCache lfru(1, 64, Config(2, 0, CachePolicy::kLfru));
  ExpertCache lru(1, 64, Config(2, 0, CachePolicy::kLru));
  // Expert 0 recurs every other access; the others come once each.
  uint32_t next = 1;
  for (int i = 0; i < 60; ++i) {
    ExpertKey k = i % 2 == 0 ? ExpertKey{0, 0} : ExpertKey{0, next++};
    lfru.Access(k);
    lru.Access(k);
  }
  // LRU keeps 0 as well (it is always among the last two), but a two-burst of
  // one-offs pushes it out; LFRU does not admit them over it.
  lfru.Access({0, 61});
  lfru.Access({0, 62});
  lru.Access({0, 61});
  lru.Access({0, 62});
  EXPECT_GE(lfru.SlotOf({0, 0}), 0);
  EXPECT_EQ(lru.SlotOf({0, 0}), -1);
}

TEST(ExpertCache, PerLayerGroupsDoNotEvictEachOther) {
  ExpertCache c(2, 16, Config(4, 0, CachePolicy::kLru, /*per_layer=*/true));
  c.Access({0, 1});
  c.Access({0, 2});
  for (uint32_t e = 0; e < 16; ++e) c.Access({1, e});  // a burst in layer 1
  EXPECT_GE(c.SlotOf({0, 1}), 0);
  EXPECT_GE(c.SlotOf({0, 2}), 0);
}

TEST(ExpertCache, DropFreesTheSlotAndTheNextUseMisses) {
  ExpertCache c(1, 8, Config(2, 0, CachePolicy::kLru));
  CacheAccess a = c.Access({0, 5});
  ASSERT_GE(a.upload, 0);
  c.Drop(a.upload);  // as after a failed upload
  EXPECT_EQ(c.SlotOf({0, 5}), -1);
  CacheAccess b = c.Access({0, 5});
  EXPECT_EQ(b.slot, -1);  // a miss, never a hit on the dropped slot
  EXPECT_GE(b.upload, 0);
}

TEST(ExpertHotness, FromTraceCountsAndRanksAcrossLayers) {
  RoutingTrace t;
  t.n_layer = 2;
  t.n_expert = 4;
  t.k = 1;
  // layer 0: expert 3 three times, 1 once; layer 1: expert 2 twice, 0 twice.
  int32_t e[][2] = {{3, 2}, {3, 0}, {3, 2}, {1, 0}};
  for (auto& row : e) {
    t.experts.insert(t.experts.end(), {row[0], row[1]});
    t.probs.insert(t.probs.end(), {0.5f, 0.25f});
  }
  t.sessions = {0};
  auto h = ExpertHotness::FromTrace(t);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->count(0, 3), 3u);
  EXPECT_EQ(h->count(1, 2), 2u);
  auto hot = h->Hottest(3);
  ASSERT_EQ(hot.size(), 3u);
  EXPECT_EQ(hot[0], (ExpertKey{0, 3}));
  EXPECT_EQ(hot[1], (ExpertKey{1, 0}));  // ties on count: mass (0.25 + 0.25) equal too; then layer, expert
  EXPECT_EQ(hot[2], (ExpertKey{1, 2}));
  EXPECT_NEAR(h->Share({{0, 3}}), 3.0 / 8.0, 1e-12);
}

class WithModel : public ::testing::Test {
 protected:
  void Make(Arch arch, const std::function<void(testing::SyntheticModelSpec&)>& tweak = {}) {
    dir_ = testing::ScratchDir("tiers");
    auto m = testing::MakeSyntheticPack(arch, dir_, "m", 7, tweak);
    ASSERT_TRUE(m.ok()) << m.status().message();
    m_ = std::move(*m);
  }
  std::string dir_;
  testing::OpenedModel m_;
};

TEST_F(WithModel, HotnessFromThePackProfileAndMalformedProfilesAreRefused) {
  Make(Arch::kQwen3Moe);
  const HParams hp = m_.model->hp();
  // A profile the pack reader accepts: counts summing to n_tokens x
  // n_expert_used per layer, mass at most its count, RankExperts' ranking.
  auto with_profile = [&](const std::string& out, const std::function<void(fb::ExpertProfileT&)>& edit) {
    Status s = testing::RewriteManifest(m_.path, out, [&](fb::ManifestT& m) {
      m.expert_profile = std::make_unique<fb::ExpertProfileT>();
      m.expert_profile->corpus_name = "test corpus";
      uint64_t sum = 0;
      std::vector<uint32_t> counts(hp.n_expert);
      std::vector<float> mass(hp.n_expert);
      for (uint32_t e = 0; e < hp.n_expert; ++e) {
        counts[e] = e == 5 ? 90 : e;
        mass[e] = static_cast<float>(e) * 0.5f;
        sum += counts[e];
      }
      counts[5] += static_cast<uint32_t>((hp.n_expert_used - sum % hp.n_expert_used) % hp.n_expert_used);
      sum += (hp.n_expert_used - sum % hp.n_expert_used) % hp.n_expert_used;
      m.expert_profile->n_tokens = sum / hp.n_expert_used;
      for (uint32_t l = 0; l < hp.n_layer; ++l) {
        auto lp = std::make_unique<fb::LayerProfileT>();
        lp->counts = counts;
        lp->mass = mass;
        lp->ranking = RankExperts(counts, mass);
        m.expert_profile->layers.push_back(std::move(lp));
      }
      edit(*m.expert_profile);
    });
    EXPECT_TRUE(s.ok()) << s.message();
    return testing::OpenPack(out);
  };
  {
    auto p = with_profile(dir_ + "/good.strata", [](fb::ExpertProfileT&) {});
    ASSERT_TRUE(p.ok()) << p.status().message();
    auto h = ExpertHotness::FromPack(*p->pack, hp);
    ASSERT_TRUE(h.ok()) << h.status().message();
    EXPECT_EQ(h->Hottest(1)[0].expert, 5u);
    EXPECT_GE(h->count(0, 5), 90u);
    EXPECT_THAT(h->source, HasSubstr("test corpus"));
    EXPECT_EQ(h->tokens, p->pack->manifest().expert_profile()->n_tokens());
  }
  // Malformed profiles never reach the tiers: the pack reader refuses them at
  // open (runtime/pack/expert_profile.cc), naming the field.
  struct Bad {
    const char* what;
    std::function<void(fb::ExpertProfileT&)> edit;
    const char* message;
  };
  const Bad bad[] = {
      {"a layer missing", [](fb::ExpertProfileT& p) { p.layers.pop_back(); }, "expert_profile.layers: expected 3"},
      {"short counts", [](fb::ExpertProfileT& p) { p.layers[1]->counts.pop_back(); },
       "expert_profile.layers[1].counts: expected 8 entries"},
      {"ranking not a permutation", [](fb::ExpertProfileT& p) { p.layers[2]->ranking = {0, 1, 2, 3, 4, 5, 6, 6}; },
       "expected a permutation"},
      {"ranking out of range", [](fb::ExpertProfileT& p) { p.layers[0]->ranking = {0, 1, 2, 3, 4, 5, 6, 900}; },
       "expected an expert id below 8"},
      {"ranking not by count", [](fb::ExpertProfileT& p) { std::swap(p.layers[0]->ranking[0], p.layers[0]->ranking[1]); },
       "experts by descending count"},
  };
  for (const Bad& b : bad) {
    auto p = with_profile(dir_ + "/bad.strata", b.edit);
    ASSERT_FALSE(p.ok()) << b.what;
    EXPECT_EQ(p.status().code(), StatusCode::kDataLoss) << b.what;
    EXPECT_THAT(p.status().message(), HasSubstr(b.message)) << b.what;
  }
  // Packs carry a profile by default; one without gives kNotFound.
  ASSERT_TRUE(
      testing::RewriteManifest(m_.path, dir_ + "/none.strata", [](fb::ManifestT& m) { m.expert_profile.reset(); }).ok());
  auto none = testing::OpenPack(dir_ + "/none.strata");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(ExpertHotness::FromPack(*none->pack, hp).status().code(), StatusCode::kNotFound);
}

TEST_F(WithModel, RoutingTraceRecordsPromptsAsTokenByTokenAndRoundTrips) {
  Make(Arch::kQwen35Moe);
  const HParams& hp = m_.model->hp();
  ReferenceBackend be;
  std::vector<int32_t> ids = {3, 40, 41, 7, 300, 2, 9};
  auto record = [&](size_t chunk) {
    RoutingTraceRecorder rec(hp.n_layer, hp.n_expert, hp.n_expert_used);
    auto st = SequenceState::Create(be, hp, 32);
    EXPECT_TRUE(st.ok());
    std::vector<float> logits;
    ForwardOptions fo;
    fo.observer = &rec;
    for (size_t i = 0; i < ids.size(); i += chunk)
      EXPECT_TRUE(Forward(*m_.model, be, *st, std::span(ids).subspan(i, std::min(chunk, ids.size() - i)), fo, &logits).ok());
    auto t = rec.Finish();
    EXPECT_TRUE(t.ok());
    return *t;
  };
  RoutingTrace whole = record(ids.size()), single = record(1);
  EXPECT_EQ(whole.tokens(), ids.size());
  EXPECT_EQ(whole.experts, single.experts);
  EXPECT_EQ(whole.probs, single.probs);
  RoutingTrace two = whole;
  ASSERT_TRUE(two.Append(single).ok());
  EXPECT_EQ(two.sessions, (std::vector<uint64_t>{0, ids.size()}));
  const std::string path = dir_ + "/t.trace";
  ASSERT_TRUE(WriteRoutingTrace(two, path).ok());
  auto back = ReadRoutingTrace(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->experts, two.experts);
  EXPECT_EQ(back->sessions, two.sessions);
  for (size_t i = 0; i < two.probs.size(); ++i) EXPECT_NEAR(back->probs[i], two.probs[i], 5e-4f * two.probs[i] + 1e-6f);  // 4 digits
  // Malformed traces are refused with the line.
  {
    std::ofstream(dir_ + "/bad.trace") << "strata-routing-trace 1\nlayers 4 experts 8 k 2\n1:0.5 9:0.1 | 1:1 2:1 | 1:1 2:1 | 1:1 2:1\n";
    auto r = ReadRoutingTrace(dir_ + "/bad.trace");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr("line 3"));
  }
  {
    std::ofstream(dir_ + "/short.trace") << "strata-routing-trace 1\nlayers 4 experts 8 k 2\n1:0.5 2:0.1 | 1:1 2:1\n";
    EXPECT_EQ(ReadRoutingTrace(dir_ + "/short.trace").status().code(), StatusCode::kDataLoss);
  }
  // Counts beyond 32 bits and probabilities that are not numbers in [0, 1]
  // are refused (sscanf's %u was undefined on overflow; NaN broke the sort).
  // The header must be exactly the three counts.
  for (const char* body : {"layers 99999999999 experts 8 k 2\n", "layers 4 experts 8 k 2 x\n",
                           "layers -4 experts 8 k 2\n"}) {
    std::ofstream(dir_ + "/hdr.trace") << "strata-routing-trace 1\n" << body;
    auto r = ReadRoutingTrace(dir_ + "/hdr.trace");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_THAT(r.status().message(), HasSubstr("line 2")) << body;
  }
  for (const char* p : {"nan", "inf", "-0.5", "x"}) {
    std::ofstream(dir_ + "/p.trace") << "strata-routing-trace 1\nlayers 1 experts 8 k 1\n1:" << p << "\n";
    auto r = ReadRoutingTrace(dir_ + "/p.trace");
    ASSERT_FALSE(r.ok()) << p;
    EXPECT_THAT(r.status().message(), AllOf(HasSubstr("line 3"), HasSubstr("probability"))) << p;
  }
  EXPECT_EQ(ReadRoutingTrace(dir_ + "/none.trace").status().code(), StatusCode::kNotFound);
}

// Logits of a prompt (in chunks of `chunk`) and `gen` greedy steps.
std::vector<float> RunLogits(const Model& model, CpuBackend& be, ExpertExecutor* ex, const std::vector<int32_t>& prompt,
                       size_t chunk, int gen) {
  auto st = SequenceState::Create(be, model.hp(), 64);
  EXPECT_TRUE(st.ok());
  std::vector<float> all, logits;
  ForwardOptions fo;
  fo.experts = ex;
  fo.all_logits = true;
  for (size_t i = 0; i < prompt.size(); i += chunk) {
    Status s = Forward(model, be, *st, std::span(prompt).subspan(i, std::min(chunk, prompt.size() - i)), fo, &logits);
    EXPECT_TRUE(s.ok()) << s.message();
    all.insert(all.end(), logits.begin(), logits.end());
  }
  fo.all_logits = false;
  for (int g = 0; g < gen; ++g) {
    const float* last = all.data() + all.size() - model.hp().n_vocab;
    int32_t id = static_cast<int32_t>(std::max_element(last, last + model.hp().n_vocab) - last);
    Status s = Forward(model, be, *st, std::span(&id, 1), fo, &logits);
    EXPECT_TRUE(s.ok()) << s.message();
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

class TieredEqualsUntiered : public ::testing::TestWithParam<Arch> {};

TEST_P(TieredEqualsUntiered, EverySlotCountPinningPolicyAndBatch) {
  const std::string dir = testing::ScratchDir("tiers_equal");
  auto m = testing::MakeSyntheticPack(GetParam(), dir, "m", 9, [](testing::SyntheticModelSpec& s) {
    s.type_by_role = {{TensorRole::kFfnDownExps, GgmlType::kQ4_K}, {TensorRole::kFfnGateExps, GgmlType::kQ6_K}};
  });
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Model& model = *m->model;
  const HParams& hp = model.hp();
  FastBackend::Options fo;
  fo.threads = 2;
  auto host = FastBackend::Create(fo);
  ASSERT_TRUE(host.ok());
  const std::vector<int32_t> prompt = {1, 13, 20, 27, 34, 41, 48, 55, 62, 69, 76};
  const std::vector<float> expect = RunLogits(model, **host, nullptr, prompt, prompt.size(), 12);
  // Hotness from a trace of the same run.
  RoutingTraceRecorder rec(hp.n_layer, hp.n_expert, hp.n_expert_used);
  {
    auto st = SequenceState::Create(**host, hp, 64);
    std::vector<float> logits;
    ForwardOptions o;
    o.observer = &rec;
    ASSERT_TRUE(Forward(model, **host, *st, prompt, o, &logits).ok());
  }
  auto trace = rec.Finish();
  ASSERT_TRUE(trace.ok());
  auto hot = ExpertHotness::FromTrace(*trace, 0, UINT64_MAX, &hp);
  ASSERT_TRUE(hot.ok());
  const int32_t all = static_cast<int32_t>(hp.n_layer * hp.n_expert);
  struct Case {
    int32_t slots, pinned;
    CachePolicy policy;
    bool hotness, per_layer;
    int device_threads;
  };
  const Case cases[] = {
      {0, 0, CachePolicy::kLru, false, false, 1},      {3, 0, CachePolicy::kLru, false, false, 1},
      {5, 0, CachePolicy::kLfru, true, false, 2},      {5, 5, CachePolicy::kLru, true, false, 1},
      {all, all, CachePolicy::kLru, true, false, 2},   {7, 2, CachePolicy::kLfru, true, true, 1},
      {all, 0, CachePolicy::kLfru, false, false, 1},
  };
  for (const Case& c : cases) {
    for (size_t chunk : {prompt.size(), size_t{1}, size_t{4}}) {
      // The simulated device: a CPU backend of its own.
      FastBackend::Options dopt;
      dopt.threads = c.device_threads;
      auto dev = FastBackend::Create(dopt);
      ASSERT_TRUE(dev.ok());
      const TierDevice device{dev->get(), "simulated", MemoryPlace::Device(0), true};
      TierOptions t;
      t.slots = c.slots;
      t.pinned = c.pinned;
      t.policy = c.policy;
      t.per_layer = c.per_layer;
      t.max_rows = static_cast<int64_t>(prompt.size());
      auto ex = TieredExpertExecutor::Create(model, **host, device, c.hotness ? &*hot : nullptr, t);
      ASSERT_TRUE(ex.ok()) << ex.status().message();
      const std::vector<float> got = RunLogits(model, **host, ex->get(), prompt, chunk, 12);
      const std::string what = StrFormat("%d slots, %d pinned, %s, chunk %zu", c.slots, c.pinned,
                                         std::string(CachePolicyName(c.policy)).c_str(), chunk);
      ASSERT_EQ(got.size(), expect.size()) << what;
      EXPECT_EQ(std::memcmp(got.data(), expect.data(), got.size() * sizeof(float)), 0) << what;
      const CacheStats& s = (*ex)->stats();
      EXPECT_EQ(s.hits + s.misses, (prompt.size() + 12) * hp.n_layer * hp.n_expert_used) << what;
      if (c.slots == all && c.pinned == all) {
        EXPECT_EQ(s.misses, 0u) << what;
      }
      if (c.slots == 0) {
        EXPECT_EQ(s.hits, 0u) << what;
      }
      // (A shared LRU smaller than one token's n_layer * k uses thrashes: no hits, by design of LRU.)
      if (c.slots >= static_cast<int32_t>(2 * hp.n_layer * hp.n_expert_used) && chunk == 1) {
        EXPECT_GT(s.hits, 0u) << what;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, TieredEqualsUntiered, ::testing::Values(Arch::kQwen3Moe, Arch::kQwen35Moe),
                         [](const auto& p) { return std::string(ArchName(p.param)); });

TEST_F(WithModel, DeviceSlotsKeepZeroPaddingAndRefuseBadUse) {
  Make(Arch::kQwen3Moe, [](testing::SyntheticModelSpec& s) {
    s.type_by_role = {{TensorRole::kFfnDownExps, GgmlType::kQ4_K}};
  });
  const Model& model = *m_.model;
  auto dev = FastBackend::Create({});
  ASSERT_TRUE(dev.ok());
  const SlotLayout layout = ExpertSlotLayout(model, false);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(layout.offset[i] % 64, 0u);
    if (i) {
      EXPECT_GE(layout.offset[i], layout.offset[i - 1] + layout.capacity[i - 1] + kSlotPadding);
    }
  }
  const TierDevice device{dev->get(), "simulated", MemoryPlace::Device(0), true};
  auto slots = ExpertSlots::Create(device, model, 2, layout, 4);
  ASSERT_TRUE(slots.ok()) << slots.status().message();
  std::vector<float> x(4 * model.hp().n_embd, 0.1f), y(x.size());
  Status empty = slots->Run(1, x.data(), 1, y.data());
  EXPECT_EQ(empty.code(), StatusCode::kInternal);
  EXPECT_THAT(empty.message(), HasSubstr("holds no expert"));
  auto w = HostExpertWeights(model, 0, 3, false);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(slots->Upload(5, *w).code(), StatusCode::kInternal);  // no such slot
  ASSERT_TRUE(slots->Upload(1, *w).ok());
  EXPECT_EQ(slots->Run(1, x.data(), 5, y.data()).code(), StatusCode::kInternal);  // more rows than planned
  // A run from a slot is the backend's SlotSwiGlu: the rows cross its seam, counted.
  const TransferCounts before = (*dev)->transfers();
  EXPECT_TRUE(slots->Run(1, x.data(), 4, y.data()).ok());
  const uint64_t rows_bytes = 4 * model.hp().n_embd * sizeof(float);
  EXPECT_EQ((*dev)->transfers().up_bytes - before.up_bytes, rows_bytes);
  EXPECT_EQ((*dev)->transfers().down_bytes - before.down_bytes, rows_bytes);
  // The same result as the host path.
  std::vector<float> ref(y.size());
  auto host = FastBackend::Create({});
  ASSERT_TRUE(RunExpertOnBackend(model, **host, 0, 3, x.data(), 4, ref.data()).ok());
  EXPECT_EQ(std::memcmp(ref.data(), y.data(), y.size() * sizeof(float)), 0);
  // And on the sim backend, whose memory is closed outside its ops: the
  // slots are its memory, reached only through Upload and SlotSwiGlu.
  auto engine = FastBackend::Create({});
  ASSERT_TRUE(engine.ok());
  SimBackend sim(std::move(*engine));
  auto guarded = ExpertSlots::Create({&sim, "sim", MemoryPlace::Device(0), true}, model, 2, layout, 4);
  ASSERT_TRUE(guarded.ok()) << guarded.status().message();
  ASSERT_TRUE(guarded->Upload(0, *w).ok());
  std::vector<float> on_sim(y.size());
  ASSERT_TRUE(guarded->Run(0, x.data(), 4, on_sim.data()).ok());
  EXPECT_EQ(std::memcmp(ref.data(), on_sim.data(), y.size() * sizeof(float)), 0);
}

TEST(SyntheticRouting, SkewAndLocalityAreWhatTheSpecSays) {
  testing::SyntheticRoutingSpec s;
  s.n_layer = 4;
  s.n_expert = 64;
  s.k = 4;
  s.tokens = 4000;
  s.zipf_s = 1.2;
  s.topic_boost = 1;
  s.repeat_p = 0;
  RoutingTrace skewed = testing::MakeSyntheticRouting(s);
  ASSERT_EQ(skewed.tokens(), 4000u);
  for (uint64_t t = 0; t < 50; ++t)
    for (uint32_t l = 0; l < 4; ++l) {
      auto e = skewed.Experts(t, l);
      std::set<int32_t> distinct(e.begin(), e.end());
      EXPECT_EQ(distinct.size(), 4u);
    }
  auto h = ExpertHotness::FromTrace(skewed);
  EXPECT_GT(h->Share(h->Hottest(32)), 0.5);  // 1/8 of the experts take most uses
  s.zipf_s = 0;
  auto flat = ExpertHotness::FromTrace(testing::MakeSyntheticRouting(s));
  EXPECT_LT(flat->Share(flat->Hottest(32)), 0.2);
}

}  // namespace
}  // namespace strata
