// The expert profile: measured by strata-pack on a calibration text, stored in
// the pack, refused by the reader when inconsistent, summarized by
// strata-validate and drawn as an SVG heat map.
//
// The key test uses a synthetic model whose router is deliberately skewed
// (SyntheticModelSpec::router_skew): the favoured experts must come first in
// every layer's ranking.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <xxhash.h>

#include <fstream>
#include <set>

#include "packer/expert_profiler.h"
#include "runtime/pack/pack_reader.h"
#include "tests/gguf_writer/synthetic_model.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/run_command.h"
#include "tests/testing/test_data.h"
#include "validate/profile_svg.h"
#include "validate/validator.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kExperts = 16;
constexpr uint32_t kFavoured = 11, kSecond = 3;  // the skewed router's winners

// A qwen3moe with 16 experts (2 used) whose router prefers kFavoured, then kSecond.
std::string SkewedModel(const std::string& dir, bool skew = true) {
  testing::SyntheticModelSpec s;
  s.hp = testing::TinyQwen3MoeHParams();
  s.hp.n_expert = kExperts;
  if (skew) s.router_skew = {{kFavoured, 4.0f}, {kSecond, 3.0f}};
  auto b = testing::BuildSyntheticModel(s);
  EXPECT_TRUE(b.ok()) << b.status().message();
  std::string path = dir + (skew ? "/skewed.gguf" : "/plain.gguf");
  EXPECT_TRUE(b->WriteFile(path).ok());
  return path;
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A small well-formedness check of XML: every tag closes in order, attribute
// values are quoted, and only the escapes XML defines appear. Returns "" or
// what is wrong.
std::string XmlProblem(const std::string& s) {
  std::vector<std::string> stack;
  size_t i = 0;
  if (s.rfind("<?xml", 0) == 0) i = s.find("?>") + 2;
  bool root_seen = false;
  while (i < s.size()) {
    if (s[i] == '&') {
      size_t semi = s.find(';', i);
      if (semi == std::string::npos) return "an unterminated entity";
      const std::string e = s.substr(i, semi - i + 1);
      if (e != "&amp;" && e != "&lt;" && e != "&gt;" && e != "&quot;" && e != "&apos;") return "entity " + e;
      i = semi + 1;
      continue;
    }
    if (s[i] != '<') {
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(s[i]))) return "text outside the root element";
      ++i;
      continue;
    }
    size_t end = i + 1;
    char quote = 0;
    for (; end < s.size(); ++end) {
      if (quote) {
        if (s[end] == quote) quote = 0;
        else if (s[end] == '<') return "'<' inside an attribute value";
      } else if (s[end] == '"' || s[end] == '\'') {
        quote = s[end];
      } else if (s[end] == '>') {
        break;
      }
    }
    if (end >= s.size()) return "an unterminated tag";
    std::string tag = s.substr(i + 1, end - i - 1);
    if (tag.empty()) return "an empty tag";
    if (tag[0] == '/') {
      std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return "</" + name + "> does not close the open element";
      stack.pop_back();
    } else {
      const bool self_closing = tag.back() == '/';
      std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
      if (stack.empty()) {
        if (root_seen) return "a second root element";
        root_seen = true;
      }
      if (!self_closing) stack.push_back(name);
    }
    i = end + 1;
  }
  if (!stack.empty()) return "<" + stack.back() + "> is never closed";
  return root_seen ? "" : "no root element";
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(ExpertProfile, SkewedRouterRanksTheFavouredExpertsFirst) {
  std::string dir = testing::ScratchDir("profile_skewed");
  PackOptions o;
  o.profile_tokens = 1024;
  auto r = testing::PackFile(SkewedModel(dir), dir + "/skewed.strata", o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->profile.has_value());
  EXPECT_GT(r->profile->seconds, 0.0);
  EXPECT_EQ(r->profile->profile.isa, CpuSupports(IsaLevel::kAvx2) ? "avx2" : "scalar");

  auto pack = Pack::Open(dir + "/skewed.strata");
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  const ExpertProfile* p = (*pack)->expert_profile();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->corpus_name, "default");
  EXPECT_EQ(p->corpus_xxh3, DefaultCalibrationCorpus().xxh3);
  EXPECT_GT(p->n_tokens, 900u);
  EXPECT_LE(p->n_tokens, 1024u);
  ASSERT_EQ(p->layers.size(), 3u);
  for (size_t il = 0; il < p->layers.size(); ++il) {
    SCOPED_TRACE(il);
    const LayerExpertProfile& l = p->layers[il];
    EXPECT_EQ(l.ranking[0], kFavoured);
    EXPECT_EQ(l.ranking[1], kSecond);
    EXPECT_GT(TopMassShare(l, 2.0 / kExperts), 0.9);  // the two hold almost all routed mass
    uint64_t sum = 0;
    for (uint32_t c : l.counts) sum += c;
    EXPECT_EQ(sum, p->n_tokens * 2);
  }

  // A router without skew spreads the mass: the top two hold far less.
  auto plain = testing::PackFile(SkewedModel(dir, false), dir + "/plain.strata", o);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_LT(OverallTopMassShare(plain->profile->profile, 2.0 / kExperts), 0.6);

  // The validator's summary.
  ValidateReport rep = ValidatePack(dir + "/skewed.strata", {});
  ASSERT_TRUE(rep.ok()) << ValidateReportText(rep);
  const std::string text = ValidateReportText(rep);
  EXPECT_THAT(text, HasSubstr("ok   expert-profile   corpus 'default'"));
  EXPECT_THAT(text, HasSubstr("top 10% / 25% / 50% of experts (2 / 4 / 8 of 16, ranked by count)"));
  EXPECT_THAT(text, HasSubstr("overall"));
  const nlohmann::json j = ValidateReportJson(rep);
  ASSERT_EQ(j["info"]["expert_profile"]["layers"].size(), 3u);
  EXPECT_GT(j["info"]["expert_profile"]["overall"]["top10"].get<double>(), 0.9);
  EXPECT_EQ(j["info"]["expert_profile"]["layers"][0]["ranking"][0].get<int>(), static_cast<int>(kFavoured));

  // The heat map: well-formed, one cell per (layer, expert), ranked order.
  const std::string svg_path = dir + "/profile.svg";
  ASSERT_TRUE(WriteExpertProfileSvg(*p, "skewed & <test>", svg_path).ok());
  const std::string svg = ReadText(svg_path);
  EXPECT_EQ(XmlProblem(svg), "") << svg.substr(0, 400);
  EXPECT_EQ(Count(svg, "<rect class=\"cell\""), 3u * kExperts);
  EXPECT_EQ(Count(svg, "<title>layer 0, rank 1: expert 11,"), 1u);
  EXPECT_EQ(Count(svg, "<title>layer 2, rank 2: expert 3,"), 1u);
  EXPECT_THAT(svg, HasSubstr("skewed &amp; &lt;test&gt;"));
  EXPECT_THAT(svg, HasSubstr("expert rank within the layer"));
  EXPECT_THAT(svg, HasSubstr("linearGradient"));
  EXPECT_EQ(svg.find("href"), std::string::npos);  // no external assets
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_EQ(XmlProblem("<svg><g></svg>"), "</svg> does not close the open element");  // the checker checks

  // The same through the command line; no temporary file is left behind.
  const std::string cli_svg = dir + "/cli.svg";
  auto cli = testing::RunProgram("strata-validate", {dir + "/skewed.strata", "--profile-svg", cli_svg, "--json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(nlohmann::json::parse(cli.out)["info"]["profile_svg"], cli_svg);
  EXPECT_EQ(XmlProblem(ReadText(cli_svg)), "");
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(ExpertProfile, CalibrationFileTokenCapAndNoProfileAreHonouredAndRecorded) {
  std::string dir = testing::ScratchDir("profile_options");
  const std::string gguf = SkewedModel(dir);
  const std::string text = "First document, in English.\n<<<strata:document>>>\nZweites Dokument, auf Deutsch.\n";
  {
    std::ofstream f(dir + "/calib.txt", std::ios::binary);
    f << text;
  }
  PackOptions o;
  o.calibration = dir + "/calib.txt";
  auto r = testing::PackFile(gguf, dir + "/calib.strata", o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->profile->documents, 2u);
  auto pack = Pack::Open(dir + "/calib.strata");
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  const ExpertProfile* p = (*pack)->expert_profile();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->corpus_name, "calib.txt");
  EXPECT_EQ(p->corpus_xxh3, XXH3_64bits(text.data(), text.size()));
  EXPECT_EQ(p->n_tokens, r->profile->corpus_tokens);  // under the cap: every token ran
  std::vector<std::string> recorded;
  for (const auto* s : *(*pack)->manifest().provenance()->options()) recorded.push_back(s->str());
  EXPECT_THAT(recorded, ::testing::Contains("--calibration calib.txt"));

  // The cap cuts every document proportionally.
  o.profile_tokens = 20;
  auto capped = testing::PackFile(gguf, dir + "/capped.strata", o);
  ASSERT_TRUE(capped.ok()) << capped.status().message();
  EXPECT_LE(capped->profile->profile.n_tokens, 20u);
  EXPECT_EQ(capped->profile->documents, 2u);

  // A missing calibration file is an error that names it; nothing is written.
  o.calibration = dir + "/missing.txt";
  auto missing = testing::PackFile(gguf, dir + "/missing.strata", o);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("missing.txt"));
  EXPECT_FALSE(FileExists(dir + "/missing.strata"));

  // --no-profile: no profile; the validator says so; --profile-svg fails.
  PackOptions none;
  none.profile = false;
  auto np = testing::PackFile(gguf, dir + "/none.strata", none);
  ASSERT_TRUE(np.ok()) << np.status().message();
  EXPECT_FALSE(np->profile.has_value());
  ValidateReport rep = ValidatePack(dir + "/none.strata", {});
  ASSERT_TRUE(rep.ok());
  EXPECT_THAT(ValidateReportText(rep), HasSubstr("SKIP expert-profile   skipped: the pack has no expert profile"));
  auto cli = testing::RunProgram("strata-validate", {dir + "/none.strata", "--profile-svg", dir + "/none.svg"});
  EXPECT_EQ(cli.exit_code, 1);
  EXPECT_THAT(cli.err, HasSubstr("no expert profile to draw"));
  EXPECT_FALSE(FileExists(dir + "/none.svg"));

  // The command line prints the time it took.
  auto pack_cli = testing::RunProgram("strata-pack", {gguf, "-o", dir + "/cli.strata", "--profile-tokens", "300"});
  ASSERT_EQ(pack_cli.exit_code, 0) << pack_cli.err;
  EXPECT_THAT(pack_cli.out, HasSubstr("profile    300 tokens of corpus 'default'"));
  EXPECT_THAT(pack_cli.out, HasSubstr(" s ("));
}

TEST(ExpertProfile, SameBytesForAnyThreadCount) {
  std::string dir = testing::ScratchDir("profile_threads");
  const std::string gguf = SkewedModel(dir);
  PackOptions a, b;
  a.threads = 1;
  b.threads = 2;
  a.profile_tokens = b.profile_tokens = 600;
  ASSERT_TRUE(testing::PackFile(gguf, dir + "/a.strata", a).ok());
  ASSERT_TRUE(testing::PackFile(gguf, dir + "/b.strata", b).ok());
  EXPECT_TRUE(testing::ReadBytes(dir + "/a.strata") == testing::ReadBytes(dir + "/b.strata"));
}

TEST(ExpertProfile, DefaultCorpusIsVariedAndSplitIntoDocuments) {
  const CalibrationCorpus c = DefaultCalibrationCorpus();
  EXPECT_EQ(c.name, "default");
  EXPECT_GT(c.text.size(), 8000u);
  const auto docs = CorpusDocuments(c.text);
  EXPECT_GE(docs.size(), 12u);
  for (std::string_view d : docs) EXPECT_EQ(d.find(kCorpusDocumentSeparator), std::string_view::npos);
  // Code, chat turns, and several scripts.
  for (const char* s : {"#include", "def ", "SELECT", "User:", "Assistant:", "Rückgabeautomaten", "春天", "駅から", "Зимой",
                        "المكتبة", "गाँव", "김치찌개"})
    EXPECT_NE(c.text.find(s), std::string::npos) << s;
  EXPECT_EQ(CorpusDocuments("a\n<<<strata:document>>>\r\nb\n<<<strata:document>>>\n\n").size(), 2u);
  EXPECT_EQ(CorpusDocuments("no separator").size(), 1u);
  EXPECT_EQ(CorpusDocuments("x <<<strata:document>>> y").size(), 1u);  // only whole lines separate
}

// Every kind of inconsistent profile is refused at open with a message that
// names the layer and the field.
TEST(ExpertProfile, InconsistentProfilesAreRefusedByTheReader) {
  std::string dir = testing::ScratchDir("profile_hostile");
  PackOptions o;
  o.profile_tokens = 300;
  o.probe = false;
  ASSERT_TRUE(testing::PackFile(SkewedModel(dir), dir + "/good.strata", o).ok());
  struct Case {
    const char* name;
    std::function<void(fb::ManifestT&)> edit;
    std::string expect;
  } cases[] = {
      {"counts_short", [](fb::ManifestT& m) { m.expert_profile->layers[1]->counts.pop_back(); },
       "expert_profile.layers[1].counts: expected 16 entries (n_expert), found 15"},
      {"mass_long", [](fb::ManifestT& m) { m.expert_profile->layers[2]->mass.push_back(0); },
       "expert_profile.layers[2].mass: expected 16 entries (n_expert), found 17"},
      {"ranking_short", [](fb::ManifestT& m) { m.expert_profile->layers[0]->ranking.resize(3); },
       "expert_profile.layers[0].ranking: expected 16 entries (n_expert), found 3"},
      {"ranking_duplicate",
       [](fb::ManifestT& m) {
         auto& r = m.expert_profile->layers[0]->ranking;
         r[5] = r[4];
       },
       "expert_profile.layers[0].ranking: expected a permutation of 0..15, found expert"},
      {"ranking_out_of_range", [](fb::ManifestT& m) { m.expert_profile->layers[1]->ranking[7] = 16; },
       "expert_profile.layers[1].ranking[7]: expected an expert id below 16, found 16"},
      {"ranking_order",
       [](fb::ManifestT& m) {
         auto& r = m.expert_profile->layers[2]->ranking;
         std::swap(r[0], r[1]);
       },
       "expert_profile.layers[2].ranking: expected experts by descending count, then mass, then id: expert 11"},
      {"too_few_layers", [](fb::ManifestT& m) { m.expert_profile->layers.pop_back(); },
       "expert_profile.layers: expected 3 entries (n_layer), found 2"},
      {"counts_sum",
       [](fb::ManifestT& m) {
         auto& l = *m.expert_profile->layers[0];
         l.counts[l.ranking[0]] += 1;
       },
       "expert_profile.layers[0].counts: expected a sum of"},
      {"mass_nan", [](fb::ManifestT& m) { m.expert_profile->layers[0]->mass[kFavoured] = NAN; },
       "expert_profile.layers[0].mass[11]: expected a finite value"},
      {"mass_negative", [](fb::ManifestT& m) { m.expert_profile->layers[1]->mass[0] = -1.0f; },
       "expert_profile.layers[1].mass[0]: expected a finite value"},
      {"mass_above_count",
       [](fb::ManifestT& m) {
         auto& l = *m.expert_profile->layers[1];
         l.mass[kFavoured] = static_cast<float>(l.counts[kFavoured]) + 10.0f;
       },
       "expert_profile.layers[1].mass[11]: expected a finite value in [0,"},
      {"no_tokens", [](fb::ManifestT& m) { m.expert_profile->n_tokens = 0; },
       "expert_profile.n_tokens: expected at least 1, found 0"},
      {"no_name", [](fb::ManifestT& m) { m.expert_profile->corpus_name.clear(); },
       "expert_profile.corpus_name: expected a name, found none"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string out = dir + "/" + c.name + ".strata";
    ASSERT_TRUE(testing::RewriteManifest(dir + "/good.strata", out, c.edit).ok());
    auto p = Pack::Open(out);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kDataLoss);
    EXPECT_THAT(p.status().message(), HasSubstr(c.expect));
    ValidateReport rep = ValidatePack(out, {});
    EXPECT_FALSE(rep.ok());
  }
  // A profile in a pack whose model has no routed experts.
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("models/stories260K.gguf"));
  ASSERT_TRUE(testing::PackFile(testing::SharedFile("models/stories260K.gguf"), dir + "/dense.strata").ok());
  auto good = Pack::Open(dir + "/good.strata");
  ASSERT_TRUE(good.ok());
  std::unique_ptr<fb::ExpertProfileT> prof((*good)->manifest().expert_profile()->UnPack());
  ASSERT_TRUE(testing::RewriteManifest(dir + "/dense.strata", dir + "/dense-profile.strata", [&](fb::ManifestT& m) {
                m.expert_profile = std::make_unique<fb::ExpertProfileT>(*prof);
              }).ok());
  auto dense = Pack::Open(dir + "/dense-profile.strata");
  ASSERT_FALSE(dense.ok());
  EXPECT_THAT(dense.status().message(),
              HasSubstr("expert_profile: expected none (the llama architecture has no routed experts), found one"));
}

TEST(ExpertProfile, TopShareArithmetic) {
  EXPECT_EQ(TopExpertCount(8, 0.10), 1u);
  EXPECT_EQ(TopExpertCount(8, 0.25), 2u);
  EXPECT_EQ(TopExpertCount(8, 0.50), 4u);
  EXPECT_EQ(TopExpertCount(128, 0.10), 13u);
  EXPECT_EQ(TopExpertCount(256, 0.25), 64u);
  EXPECT_EQ(TopExpertCount(3, 0.01), 1u);
  LayerExpertProfile l;
  l.counts = {1, 3, 0, 4};
  l.mass = {0.5f, 1.0f, 0.0f, 2.5f};
  l.ranking = RankExperts(l.counts, l.mass);
  EXPECT_EQ(l.ranking, (std::vector<uint16_t>{3, 1, 0, 2}));
  EXPECT_DOUBLE_EQ(TopMassShare(l, 0.25), 2.5 / 4.0);
  EXPECT_DOUBLE_EQ(TopMassShare(l, 0.50), 3.5 / 4.0);
  // Ties: mass, then id.
  EXPECT_EQ(RankExperts(std::vector<uint32_t>{2, 2, 2}, std::vector<float>{1.0f, 1.5f, 1.0f}),
            (std::vector<uint16_t>{1, 0, 2}));
}

}  // namespace
}  // namespace strata
