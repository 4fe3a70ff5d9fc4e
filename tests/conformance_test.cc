// Conformance with llama.cpp (../shared/data/conformance/README.md): every
// fixture is packed, its recorded prompt is run through strata-run exactly
// as a user would (--tokens ... --logits-out ... --print-ids), and the rows
// are compared with the references llama.cpp computed.
//
//  * The reference path (--reference: dequantized weights, float
//    activations) must match the F32-math reference within 1e-3 on every row
//    and reproduce its greedy chain. (An independent float64 implementation
//    agrees with F32-math within 2.4e-5, so 1e-3 leaves room only for float
//    rounding; Strata measures about 1e-5.)
//  * The fast path (activations quantized as llama.cpp does, SIMD kernels)
//    must match the native reference within a tolerance per fixture, stated
//    in kFastTolerance below with the reason, and reproduce the native greedy
//    token at every step whose recorded top-1/top-2 margin exceeds it. It is
//    run teacher-forced on the native greedy chain, so one low-margin step
//    cannot derail the comparison of the rows after it.
//  * The split fixture gives exactly the unsplit fixture's logits; the broken
//    qwen35moe fixtures give exactly the unbroken model's.
//  * stories260K continues "Once upon a time" with exactly llama.cpp's text.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>

#include <nlohmann/json.hpp>

#include "runtime/gpu/device.h"
#include "runtime/model/model.h"
#include "runtime/pack/pack_reader.h"
#include "runtime/quant/ggml_type.h"
#include "tests/gguf_writer/synthetic_model.h"
#include "tests/testing/gpu_test_device.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/run_command.h"
#include "tests/testing/test_data.h"
#include "tests/testing/test_matrix.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
constexpr int kVocab = 512;

using testing::ReadF32;

std::string Join(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

std::vector<int32_t> ParseIds(const std::string& out) {
  std::vector<int32_t> ids;
  std::istringstream ss(out);
  int32_t x;
  while (ss >> x) ids.push_back(x);
  return ids;
}

int32_t Argmax(const float* row) {
  int32_t best = 0;
  for (int32_t i = 1; i < kVocab; ++i)
    if (row[i] > row[best]) best = i;
  return best;
}

float Margin(const float* row) {
  float a = -INFINITY, b = -INFINITY;
  for (int32_t i = 0; i < kVocab; ++i) {
    if (row[i] > a) b = a, a = row[i];
    else if (row[i] > b) b = row[i];
  }
  return a - b;
}

struct Fixture {
  std::string name;
  nlohmann::json j;
  std::string pack;
};

// The fixtures of the project's GGUF writer (tests/conformance/, written by
// scripts/conformance-refs.sh): the GGUF is remade here from the recorded
// strata-make-gguf command and must hash to the recorded XXH3, so a change
// of the writer that would silently change the fixture fails instead (and
// says to regenerate the references). Every other fixture is shared data.
std::string WriterFixtureDir() { return std::string(STRATA_SOURCE_DIR) + "/tests/conformance/"; }
bool IsWriterFixture(const std::string& name) { return FileExists(WriterFixtureDir() + name + ".prompt.json"); }
// Where a fixture's NAME + suffix file is.
std::string FixtureFile(const std::string& name, const std::string& suffix) {
  return IsWriterFixture(name) ? WriterFixtureDir() + name + suffix : testing::SharedFile("conformance/" + name + suffix);
}

// Writes a writer fixture's GGUF into dir; returns its path.
std::string MakeWriterGguf(const nlohmann::json& j, const std::string& dir) {
  std::vector<std::string> args;
  std::istringstream ss(j["make_gguf_args"].get<std::string>());
  for (std::string a; ss >> a;) args.push_back(a);
  const std::string gguf = dir + "/" + j["fixture"].get<std::string>() + ".gguf";
  args.insert(args.end(), {"--print-xxh3", "-o", gguf});
  auto r = testing::RunProgram("strata-make-gguf", args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
#if defined(_WIN32)
  // The writer's normals come from std::normal_distribution, whose log and
  // cos are the C library's: the Windows CRT rounds some of them one ulp
  // apart from glibc, where the references were made, so the bytes differ
  // here (measured: every fixture's). The weights are the same to float
  // rounding, and every check below still holds them to its tolerance.
  if (r.out.find(" " + j["gguf_xxh3"].get<std::string>()) == std::string::npos)
    std::cout << "[ note ] " << j["fixture"].get<std::string>()
              << ": this C library's normals differ from glibc's in the last bits, so the GGUF's XXH3 differs; the "
                 "references are checked at their tolerances\n";
#else
  EXPECT_THAT(r.out, HasSubstr(" " + j["gguf_xxh3"].get<std::string>()))
      << "strata-make-gguf " << j["make_gguf_args"].get<std::string>()
      << " no longer writes the fixture's GGUF; rerun scripts/conformance-refs.sh with llama.cpp (docs/conformance.md)";
#endif
  return gguf;
}

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  static std::map<std::string, Fixture>& Packed() {
    static std::map<std::string, Fixture> m;
    return m;
  }
  // Packs the fixture once per test binary.
  const Fixture& Get(const std::string& name) {
    auto& m = Packed();
    auto it = m.find(name);
    if (it != m.end()) return it->second;
    Fixture f;
    f.name = name;
    std::ifstream in(FixtureFile(name, ".prompt.json"));
    f.j = nlohmann::json::parse(in);
    std::string dir = testing::ScratchDir("conformance_" + name);
    f.pack = dir + "/" + name + ".strata";
    const std::string gguf = IsWriterFixture(name)
                                 ? MakeWriterGguf(f.j, dir)
                                 : testing::SharedFile("conformance/" + f.j["load_path"].get<std::string>());
    auto r = testing::PackFile(gguf, f.pack);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return m.emplace(name, std::move(f)).first->second;
  }

  // Runs strata-run; returns the logits rows and generated ids.
  struct Run {
    std::vector<float> logits;
    std::vector<int32_t> ids;
  };
  void ExpectNativeWithinFastTolerance(const std::string& name, const std::string& backend,
                                       const std::vector<std::string>& extra = {});
  Run RunPack(const Fixture& f, const std::vector<int32_t>& prompt, int n, bool reference) {
    return RunPackOn(f, prompt, n, reference ? "reference" : "cpu");
  }
  // K and V are F32 unless `kv_type` says otherwise: llama.cpp computed the
  // references with an F32 cache (the conformance README).
  Run RunPackOn(const Fixture& f, const std::vector<int32_t>& prompt, int n, const std::string& backend,
                const std::string& kv_type = "f32", const std::vector<std::string>& extra = {}) {
    std::string out = testing::ScratchDir("conformance_run") + "/logits.f32";
    std::vector<std::string> args = {f.pack, "--tokens", Join(prompt), "-n", std::to_string(n), "--temp", "0",
                                     "--ignore-eos", "--print-ids", "--logits-out", out, "-t", "2",
                                     "--backend", backend, "--kv-type", kv_type};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = testing::RunProgram("strata-run", args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return {ReadF32(out), ParseIds(r.out)};
  }
};

// Fast path vs native tolerance (max |logit difference| over all 56 rows),
// per fixture. The measured maxima (AVX-512, docs/conformance.md) are about
// 2e-2..4e-2 for the quantized models, 0 for MXFP4 (bit-exact), 1e-6 for F32;
// the bounds leave about 3x headroom for another ISA level's summation order.
// Q2_0 and Q8_0 stories260k are larger: after the first activation element
// that rounds the other way, an MoE routing flip (Q2_0) or F16-rounded
// activations (stories260k's F16 ffn_down) move single rows by 0.1..0.4.
// qwen35moe is the most sensitive (the conformance README: its native and
// F32-math references differ by up to 0.78): one routing flip is carried
// forward by the delta-net recurrence. Token-by-token prompts measure 0.03;
// the chunked prompt path (another float summation order) flips a route and
// measures 0.44 on q8_0. The bound is the README's native-vs-F32-math gap.
const std::map<std::string, float> kFastTolerance = {
    {"qwen3moe-f32", 1e-3f},   {"qwen3moe-q8_0", 0.10f},   {"qwen3moe-q4_k_m", 0.12f},
    {"qwen3moe-q2_k", 0.12f},  {"qwen3moe-iq4_xs", 0.10f}, {"qwen3moe-iq3_s", 0.12f},
    {"qwen3moe-q2_0", 0.60f},  {"qwen3moe-mxfp4_moe", 0.05f}, {"qwen3moe-q4_k_m-split", 0.12f},
    {"stories260k-f32", 1e-3f}, {"stories260k-q8_0", 0.30f},
    {"qwen35moe-q8_0", 0.80f}, {"qwen35moe-q4_k_m", 0.80f},
    // The project writer's fixtures (tests/conformance/, docs/conformance.md).
    // Measured (docs/conformance.md): 1e-5 or less on the cpu backend, up to
    // 0.008 on the software GPU; the bounds leave room for other ISA levels.
    {"glm4moe-f32", 1e-3f},    {"glm4moe-q8_0", 0.05f},    {"glm4moe-q4_k_m-yarn", 0.05f},
    {"qwen3-f32-yarn", 1e-3f}, {"qwen3moe-q8_0-linear", 0.05f},
    {"gpt-oss-f32", 1e-3f},    {"gpt-oss-mxfp4_moe", 0.05f},
    {"qwen3next-f32", 1e-3f},  {"qwen3next-q8_0", 0.05f},  {"qwen3next-q4_k_m-yarn", 0.05f},
    {"deepseek2-f32", 1e-3f},  {"deepseek2-q8_0", 0.05f},  {"deepseek2-lite-q4_k_m-yarn", 0.05f},
    {"deepseek2-legacy-f32", 1e-3f}, {"deepseek2-lite-legacy-q8_0", 0.05f},
};

TEST_P(Conformance, ReferencePathMatchesF32MathAndItsGreedyChain) {
  const std::string name = GetParam();
  STRATA_REQUIRE_SHARED_FILE(FixtureFile(name, ".prompt.json"));
  const Fixture& f = Get(name);
  const int n_prompt = f.j["n_prompt"].get<int>();
  const bool quantized = f.j.contains("f32math_reference");
  // Unquantized models: the native reference is exact F32 math already.
  const std::string base = FixtureFile(name, quantized ? ".f32math" : "");
  std::vector<float> ref = ReadF32(base + ".logits.f32");
  std::vector<float> dec = ReadF32(base + ".decode.f32");
  ref.insert(ref.end(), dec.begin(), dec.end());
  std::vector<int32_t> greedy = quantized ? f.j["f32math_reference"]["greedy_ids"].get<std::vector<int32_t>>()
                                          : f.j["greedy_ids"].get<std::vector<int32_t>>();
  Run r = RunPack(f, f.j["prompt_ids"].get<std::vector<int32_t>>(), 32, /*reference=*/true);
  ASSERT_EQ(r.logits.size(), ref.size());
  float worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(r.logits[i] - ref[i]));
  EXPECT_LT(worst, 1e-3f) << name << " (rows: " << n_prompt << " prompt + 32 decode)";
  EXPECT_EQ(r.ids, greedy);
  RecordProperty("max_abs_vs_f32math", std::to_string(worst));
}

// The fast path's checks on `backend`: teacher-forced rows within the
// fixture's tolerance, the native greedy token at every confident step, and
// the free-running chain up to the first step within the tolerance.
void Conformance::ExpectNativeWithinFastTolerance(const std::string& name, const std::string& backend,
                                                  const std::vector<std::string>& extra) {
  const Fixture& f = Get(name);
  const float tol = kFastTolerance.at(name);
  const std::string base = FixtureFile(name, "");
  std::vector<float> ref = ReadF32(base + ".logits.f32");
  std::vector<float> dec = ReadF32(base + ".decode.f32");
  std::vector<int32_t> prompt = f.j["prompt_ids"].get<std::vector<int32_t>>();
  std::vector<int32_t> greedy = f.j["greedy_ids"].get<std::vector<int32_t>>();
  // Teacher forcing: the prompt plus the native chain, as one prompt.
  std::vector<int32_t> forced = prompt;
  forced.insert(forced.end(), greedy.begin(), greedy.end());
  Run r = RunPackOn(f, forced, 1, backend, "f32", extra);
  std::vector<float> all = ref;
  all.insert(all.end(), dec.begin(), dec.end());
  ASSERT_GE(r.logits.size(), all.size());
  float worst = 0;
  for (size_t i = 0; i < all.size(); ++i) worst = std::max(worst, std::fabs(r.logits[i] - all[i]));
  EXPECT_LT(worst, tol) << name;
  // The greedy choice at each step: row n_prompt-1+k chooses greedy[k].
  const size_t n_prompt = prompt.size();
  int confident = 0;
  for (size_t k = 0; k < greedy.size(); ++k) {
    const float* native_row = &all[(n_prompt - 1 + k) * kVocab];
    if (Margin(native_row) <= tol) continue;
    ++confident;
    EXPECT_EQ(Argmax(&r.logits[(n_prompt - 1 + k) * kVocab]), greedy[k]) << name << " step " << k;
  }
  RecordProperty("max_abs_vs_native_" + backend, std::to_string(worst));
  RecordProperty("confident_steps", confident);
  // Free-running, the chain agrees with llama.cpp's up to the first step
  // whose margin is within the tolerance.
  Run free = RunPackOn(f, prompt, 32, backend, "f32", extra);
  for (size_t k = 0; k < greedy.size(); ++k) {
    const float* native_row = &all[(n_prompt - 1 + k) * kVocab];
    if (Margin(native_row) <= tol) break;
    ASSERT_LT(k, free.ids.size());
    ASSERT_EQ(free.ids[k], greedy[k]) << name << " free-running step " << k;
  }
}

TEST_P(Conformance, FastPathMatchesNativeWithinToleranceAndAtConfidentSteps) {
  const std::string name = GetParam();
  STRATA_REQUIRE_SHARED_FILE(FixtureFile(name, ".prompt.json"));
  ExpectNativeWithinFastTolerance(name, "cpu");
}

// The GPU backend (on the software GPU here; on a real one with
// STRATA_TEST_DEVICE=cuda, scripts/device-check.sh) is held to the fast
// path's tolerances: it quantizes activations too (int8, 32 values a scale).
// The whole list runs in the optimized build; the sanitizer build two
// fixtures (one of each MoE architecture), the Windows build one.
TEST_P(Conformance, GpuBackendMatchesNativeWithinTheFastPathTolerance) {
  const std::string name = GetParam();
  STRATA_REQUIRE_SHARED_FILE(FixtureFile(name, ".prompt.json"));
  const testing::GpuTestMatrix matrix = testing::TestMatrix();
  if ((matrix == testing::GpuTestMatrix::kTails && name != "qwen3moe-q4_k_m" && name != "qwen35moe-q4_k_m") ||
      (matrix == testing::GpuTestMatrix::kSmoke && name != "qwen3moe-q4_k_m"))
    GTEST_SKIP() << "the GPU conformance runs whole in the optimized build only (" << testing::TestMatrixName(matrix)
                 << " here)";
  ExpectNativeWithinFastTolerance(name, testing::OnSoftwareGpu() ? "software-gpu" : testing::TestDeviceBackend());
}

// The VRAM/RAM split of the routed experts (docs/experts-split.md): the
// device tier's slots hold none, half and all of the experts (the profile's
// hottest first, LFRU after), the CPU runs the rest; every split is held to
// the fast path's tolerances. The optimized build runs the Q4_K_M fixtures of
// the Qwen MoE architectures, IQ3_S (seeds/001) and glm4moe Q8_0 (a
// dense layer 0 without experts) at 0%, 50% and 100%; the
// sanitizer build qwen3moe Q4_K_M at 50%; the Windows build none (its GPU
// smoke subset is the conformance run above).
TEST_P(Conformance, ExpertSplitBetweenVramAndRamMatchesNativeWithinTheFastPathTolerance) {
  const std::string name = GetParam();
  STRATA_REQUIRE_SHARED_FILE(FixtureFile(name, ".prompt.json"));
  const testing::GpuTestMatrix matrix = testing::TestMatrix();
  const bool full = matrix == testing::GpuTestMatrix::kFull;
  if (name != "qwen3moe-q4_k_m" && name != "qwen3moe-iq3_s" && name != "qwen35moe-q4_k_m" && name != "glm4moe-q8_0" &&
      name != "gpt-oss-mxfp4_moe" && name != "deepseek2-q8_0")
    GTEST_SKIP() << "the split runs on the Q4_K_M fixtures of the Qwen MoE architectures, IQ3_S, glm4moe Q8_0, "
                    "gpt-oss MXFP4 and deepseek2 Q8_0";
  if (matrix == testing::GpuTestMatrix::kSmoke || (!full && name != "qwen3moe-q4_k_m"))
    GTEST_SKIP() << "the split's conformance runs in the Linux builds (" << testing::TestMatrixName(matrix) << " here)";
  const Fixture& f = Get(name);
  auto pack = Pack::Open(f.pack, {});
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  auto model = Model::Create(**pack);
  ASSERT_TRUE(model.ok());
  const int all = static_cast<int>(model->hp().RoutedExperts());  // glm4moe: its dense layer 0 has none
  for (int slots : {0, all / 2, all}) {
    if (!full && slots != all / 2) continue;
    SCOPED_TRACE("--expert-slots " + std::to_string(slots) + " of " + std::to_string(all));
    ExpectNativeWithinFastTolerance(name, testing::OnSoftwareGpu() ? "software-gpu" : testing::TestDeviceBackend(),
                                    {"--expert-slots", std::to_string(slots)});
  }
}

// The KV cache types (--kv-type; kernels/kv_type.h): F16 (the default) and
// Q8_0 against an F32 cache, teacher-forced over the prompt and llama.cpp's
// greedy chain so every row sees the same context.
// * The reference path (exact F32 math) isolates what the cache type itself
//   costs: F16 moves logits by ~1e-3, Q8_0 by ~2e-2 (docs/conformance.md).
// * The fast path quantizes activations (Q8_0 / Q8_K, as llama.cpp): a change
//   anywhere flips some roundings, which cascade (the conformance README),
//   so its F16-vs-F32 gap is that cascade's size, like the fast path's gap
//   to llama.cpp, with single rows up to ~0.4 where a route is near a tie.
//   Rows whose F32 margin exceeds the bound keep their argmax.
// Bounds: the measured maxima (RecordProperty max_abs_*; docs/conformance.md)
// with ~2-3x headroom. Q8_0 moves the reference path's logits by ~1e-2 but
// flips near-tied routes in most qwen3moe fixtures (their router gaps are
// tiny: the README's min_router_topk_prob_gap), hence bounds near 1 there.
// Q8_0 on a model whose head
// dimensions are not multiples of 32 (stories260k: 8) is refused.
struct KvBounds {
  float ref_f16, ref_q8, fast_f16, fast_q8;  // 0: Q8_0 does not fit the model
};
const std::map<std::string, KvBounds> kKvTolerance = {
    {"qwen3moe-f32", {3e-3f, 1.2f, 3e-3f, 1.2f}},
    {"qwen3moe-q8_0", {3e-3f, 0.08f, 0.8f, 0.8f}},
    // fast F16: 0.05 at first, 0.18 with the Q4_K panels, 0.41 with the Q8_0
    // panels (sums in other orders, then a near-tied route flips, as on the
    // q8_0 and iq4_xs fixtures): the bound of those.
    {"qwen3moe-q4_k_m", {3e-3f, 1.0f, 0.8f, 0.5f}},
    {"qwen3moe-q2_k", {3e-3f, 1.0f, 0.15f, 1.5f}},
    {"qwen3moe-iq4_xs", {3e-3f, 1.0f, 0.8f, 1.2f}},
    {"qwen3moe-iq3_s", {3e-3f, 1.2f, 0.15f, 1.0f}},
    {"qwen3moe-q2_0", {3e-3f, 0.5f, 1.0f, 1.2f}},
    {"qwen3moe-mxfp4_moe", {3e-3f, 1.0f, 1.0f, 0.15f}},
    {"qwen3moe-q4_k_m-split", {3e-3f, 1.0f, 0.8f, 0.5f}},
    {"stories260k-f32", {0.08f, 0, 0.08f, 0}},
    {"stories260k-q8_0", {0.05f, 0, 0.8f, 0}},
    {"qwen35moe-q8_0", {1.5e-3f, 0.04f, 0.06f, 0.1f}},
    {"qwen35moe-q4_k_m", {1.5e-3f, 0.04f, 0.1f, 0.6f}},
    // The project writer's fixtures: the measured maxima with 3-5x headroom;
    // q4_k_m-yarn's fast path flips a near-tied route under F16 (0.39).
    {"glm4moe-f32", {3e-4f, 6e-3f, 3e-4f, 6e-3f}},
    {"glm4moe-q8_0", {3e-4f, 6e-3f, 0.03f, 0.03f}},
    {"glm4moe-q4_k_m-yarn", {3e-4f, 6e-3f, 0.8f, 0.6f}},
    {"qwen3-f32-yarn", {3e-4f, 5e-3f, 3e-4f, 5e-3f}},
    {"qwen3moe-q8_0-linear", {3e-4f, 0.03f, 0.03f, 0.03f}},
    {"gpt-oss-f32", {3e-4f, 5e-3f, 3e-4f, 5e-3f}},
    {"gpt-oss-mxfp4_moe", {3e-4f, 5e-3f, 0.03f, 0.03f}},
    {"qwen3next-f32", {1e-4f, 1.5e-3f, 1e-4f, 1.5e-3f}},
    {"qwen3next-q8_0", {1e-4f, 1.5e-3f, 0.01f, 0.015f}},
    {"qwen3next-q4_k_m-yarn", {1e-4f, 1.5e-3f, 0.05f, 0.05f}},
    {"deepseek2-f32", {3e-4f, 6e-3f, 3e-4f, 6e-3f}},
    {"deepseek2-q8_0", {3e-4f, 6e-3f, 0.03f, 0.03f}},
    {"deepseek2-lite-q4_k_m-yarn", {3e-4f, 6e-3f, 0.05f, 0.05f}},
    {"deepseek2-legacy-f32", {3e-4f, 6e-3f, 3e-4f, 6e-3f}},
    {"deepseek2-lite-legacy-q8_0", {3e-4f, 6e-3f, 0.03f, 0.03f}},
};

float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

// The cache types' code depends on the attention's shape, not on the weight
// type: the subset builds run it on one fixture of each cache layout (grouped
// heads, the gated attention beside delta-net layers, sinks with a sliding
// window, the latent row, a dense model with YaRN, and a head too small for
// Q8_0 rows); the optimized build on every fixture.
TEST_P(Conformance, KvCacheTypesStayCloseToF32) {
  const std::string name = GetParam();
  STRATA_REQUIRE_SHARED_FILE(FixtureFile(name, ".prompt.json"));
  if (testing::kMatrixSubset && name != "qwen3moe-q4_k_m" && name != "qwen35moe-q4_k_m" &&
      name != "gpt-oss-mxfp4_moe" && name != "deepseek2-q8_0" && name != "qwen3-f32-yarn" &&
      name != "stories260k-q8_0")
    GTEST_SKIP() << "the cache types run on one fixture of each cache layout in this build; on every fixture in "
                    "the optimized one";
  const Fixture& f = Get(name);
  std::vector<int32_t> forced = f.j["prompt_ids"].get<std::vector<int32_t>>();
  const std::vector<int32_t> greedy = f.j["greedy_ids"].get<std::vector<int32_t>>();
  forced.insert(forced.end(), greedy.begin(), greedy.end());
  const KvBounds bound = kKvTolerance.at(name);
  for (const std::string backend : {"reference", "cpu"}) {
    const Run f32 = RunPackOn(f, forced, 1, backend, "f32");
    for (const std::string kv : {"f16", "q8_0"}) {
      const bool ref = backend == "reference";
      const float tol = kv == "f16" ? (ref ? bound.ref_f16 : bound.fast_f16) : (ref ? bound.ref_q8 : bound.fast_q8);
      SCOPED_TRACE(name + " --backend " + backend + " --kv-type " + kv);
      if (tol == 0) {  // Q8_0 does not fit this model's head rows: a usage error that says why
        auto r = testing::RunProgram("strata-run", {f.pack, "--tokens", "1,2", "-n", "1", "--kv-type", kv});
        EXPECT_EQ(r.exit_code, 2) << r.err;
        EXPECT_THAT(r.err, HasSubstr("expected multiples of 32")) << r.err;
        continue;
      }
      Run typed = RunPackOn(f, forced, 1, backend, kv);
      ASSERT_EQ(typed.logits.size(), f32.logits.size());
      // The teacher-forced rows only: the row after them is fed the token
      // each run sampled, which a near-tied last row may choose differently.
      ASSERT_GE(typed.logits.size(), forced.size() * kVocab);
      typed.logits.resize(forced.size() * kVocab);
      const std::vector<float> f32_rows(f32.logits.begin(), f32.logits.begin() + typed.logits.size());
      const float worst = MaxAbsDiff(typed.logits, f32_rows);
      EXPECT_LT(worst, tol);
      EXPECT_GT(worst, 0.0f) << "the cache type changed nothing";
      for (size_t row = 0; row < forced.size(); ++row) {
        if (Margin(&f32.logits[row * kVocab]) <= tol) continue;
        EXPECT_EQ(Argmax(&typed.logits[row * kVocab]), Argmax(&f32.logits[row * kVocab])) << "row " << row;
      }
      RecordProperty("max_abs_" + backend + "_" + kv + "_vs_f32", std::to_string(worst));
    }
  }
}

// The sim backend (the cpu backend's ops on memory the forward pass cannot
// touch, docs/backends.md) gives the cpu backend's bits on every fixture:
// the prompt, then greedy decoding, so prompt passes and decode steps both run.
TEST_P(Conformance, SimBackendIsBitIdenticalToCpu) {
  const std::string name = GetParam();
  STRATA_REQUIRE_SHARED_FILE(FixtureFile(name, ".prompt.json"));
  const Fixture& f = Get(name);
  const std::vector<int32_t> prompt = f.j["prompt_ids"].get<std::vector<int32_t>>();
  Run cpu = RunPackOn(f, prompt, 12, "cpu");
  Run sim = RunPackOn(f, prompt, 12, "sim");
  ASSERT_FALSE(cpu.logits.empty());
  EXPECT_EQ(sim.ids, cpu.ids);
  ASSERT_EQ(sim.logits.size(), cpu.logits.size());
  EXPECT_EQ(std::memcmp(sim.logits.data(), cpu.logits.data(), cpu.logits.size() * sizeof(float)), 0) << name;
}

// Under the sanitizers: one fixture per architecture and per kind of weight
// kernel (K-quants, i-quants, Q2_0, MXFP4, Q8_0), the split pack, and both
// RoPE scalings' code (YaRN; linear is a factor on the same path).
std::vector<std::string> ConformanceFixtures() {
  return testing::MatrixCases<std::string>(
      {"qwen3moe-f32", "qwen3moe-q8_0", "qwen3moe-q4_k_m", "qwen3moe-q2_k", "qwen3moe-iq4_xs", "qwen3moe-iq3_s",
       "qwen3moe-q2_0", "qwen3moe-mxfp4_moe", "qwen3moe-q4_k_m-split", "stories260k-f32", "stories260k-q8_0",
       "qwen35moe-q8_0", "qwen35moe-q4_k_m", "glm4moe-f32", "glm4moe-q8_0", "glm4moe-q4_k_m-yarn", "qwen3-f32-yarn",
       "qwen3moe-q8_0-linear", "gpt-oss-f32", "gpt-oss-mxfp4_moe", "qwen3next-f32", "qwen3next-q8_0",
       "qwen3next-q4_k_m-yarn", "deepseek2-f32", "deepseek2-q8_0", "deepseek2-lite-q4_k_m-yarn",
       "deepseek2-legacy-f32", "deepseek2-lite-legacy-q8_0"},
      [](const std::string& name) {
        for (const char* kept : {"qwen3moe-q4_k_m", "qwen3moe-iq3_s", "qwen3moe-q2_0", "qwen3moe-q4_k_m-split",
                                 "stories260k-q8_0", "qwen35moe-q4_k_m", "glm4moe-q4_k_m-yarn", "qwen3-f32-yarn",
                                 "gpt-oss-mxfp4_moe", "qwen3next-q4_k_m-yarn", "deepseek2-q8_0"})
          if (name == kept) return true;
        return false;
      });
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Conformance, ::testing::ValuesIn(ConformanceFixtures()),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// Same logits, bit for bit, from two packs of the same weights.
void ExpectSameLogits(const std::string& a, const std::string& b, bool reference) {
  std::ifstream in(testing::SharedFile("conformance/qwen3moe-q4_k_m.prompt.json"));
  auto j = nlohmann::json::parse(in);
  std::string dir = testing::ScratchDir("conformance_same");
  std::vector<std::string> out;
  for (const std::string& p : {a, b}) {
    std::string pack = dir + "/" + std::to_string(out.size()) + ".strata";
    auto r = testing::PackFile(p, pack);
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::string lf = dir + "/" + std::to_string(out.size()) + ".f32";
    std::vector<std::string> args = {pack, "--tokens", Join(j["prompt_ids"].get<std::vector<int32_t>>()), "-n", "8",
                                     "--temp", "0", "--ignore-eos", "--print-ids", "--logits-out", lf};
    if (reference) args.push_back("--reference");
    auto run = testing::RunProgram("strata-run", args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    out.push_back(lf);
  }
  EXPECT_EQ(testing::ReadBytes(out[0]), testing::ReadBytes(out[1])) << a << " vs " << b;
}

TEST(ConformanceSame, SplitFixtureEqualsUnsplit) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("conformance/qwen3moe-q4_k_m-split-00001-of-00002.gguf"));
  for (bool reference : {true, false})
    ExpectSameLogits(testing::SharedFile("conformance/qwen3moe-q4_k_m-split-00001-of-00002.gguf"),
                     testing::SharedFile("conformance/qwen3moe-q4_k_m.gguf"), reference);
}

TEST(ConformanceSame, BrokenQwen35FixturesEqualTheUnbrokenModel) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("conformance/qwen35moe-q4_k_m.gguf"));
  // Both paths in the Linux optimized build; the fast one in the subset builds.
  for (const char* broken : {"qwen35moe-q4_k_m-broken-no-nextn-key", "qwen35moe-q4_k_m-broken-shexp-gate-2d"})
    for (bool reference : testing::MatrixCases<bool>({true, false}, [](bool r) { return !r; }))
      ExpectSameLogits(testing::SharedFile(std::string("conformance/") + broken + ".gguf"),
                       testing::SharedFile("conformance/qwen35moe-q4_k_m.gguf"), reference);
}

// Dense Qwen3, the architecture added through the spec alone
// (docs/architectures.md): a model written by the project's GGUF writer packs,
// validates (the probe replay included) and runs, and the fast path agrees
// with the reference path, which is the oracle here (shared/data has no
// llama.cpp reference for qwen3), within the tolerances the qwen3moe
// fixtures of the same types have against llama.cpp.
TEST(Qwen3Dense, PacksValidatesAndTheFastPathMatchesTheReferencePath) {
  std::string dir = testing::ScratchDir("conformance_qwen3");
  for (const auto& [type, tol] : {std::pair{GgmlType::kF32, 1e-3f}, std::pair{GgmlType::kQ8_0, 0.10f}}) {
    const std::string name(TypeName(type));
    SCOPED_TRACE(name);
    testing::SyntheticModelSpec s;
    s.arch = Arch::kQwen3;
    s.hp = testing::TinyQwen3HParams();
    s.matrix_type = type;
    s.seed = 3;
    auto b = testing::BuildSyntheticModel(s);
    ASSERT_TRUE(b.ok()) << b.status().message();
    const std::string gguf = dir + "/qwen3-" + name + ".gguf", pack = dir + "/qwen3-" + name + ".strata";
    ASSERT_TRUE(b->WriteFile(gguf).ok());
    auto packed = testing::PackFile(gguf, pack);
    ASSERT_TRUE(packed.ok()) << packed.status().message();
    EXPECT_EQ(packed->arch, Arch::kQwen3);
    auto val = testing::RunProgram("strata-validate", {pack});
    EXPECT_EQ(val.exit_code, 0) << val.out << val.err;
    EXPECT_THAT(val.out, ::testing::HasSubstr("ok   probe-replay"));
    std::vector<int32_t> prompt;
    for (int i = 0; i < 24; ++i) prompt.push_back((i * 53 + 7) % kVocab);
    std::vector<std::vector<float>> logits;
    for (const char* backend : {"reference", "cpu", "sim"}) {
      const std::string out = dir + "/logits-" + name + "-" + backend + ".f32";
      std::vector<std::string> args = {pack, "--tokens", Join(prompt), "-n", "8", "--temp", "0", "--ignore-eos",
                                       "--print-ids", "--logits-out", out, "-t", "2", "--backend", backend};
      auto r = testing::RunProgram("strata-run", args);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      logits.push_back(ReadF32(out));
    }
    // The sim backend runs the cpu backend's ops on memory the forward pass
    // cannot touch: the same bits.
    EXPECT_EQ(logits[2], logits[1]);
    auto unknown = testing::RunProgram("strata-run", {pack, "--tokens", "1,2", "--backend", "gpu"});
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_THAT(unknown.err,
                ::testing::HasSubstr("--backend 'gpu': expected auto, cpu, reference, sim, cuda, hip or software-gpu"));
    // A GPU backend asked for where its device is missing: refused, saying
    // why, exit 3 (auto, the default, runs on the CPU instead).
    if (!gpu::OpenCudaDevice(0).ok()) {
      auto cuda = testing::RunProgram("strata-run", {pack, "--tokens", "1,2", "--backend", "cuda"});
      EXPECT_EQ(cuda.exit_code, 3) << cuda.err;
      EXPECT_THAT(cuda.err, ::testing::HasSubstr("--backend cuda: "));
      if (!gpu::OpenHipDevice(0).ok()) {  // no GPU at all (CI, Wine): auto says why, once, and runs on the CPU
        auto dflt = testing::RunProgram("strata-run", {pack, "--tokens", "1,2", "-n", "2", "--print-ids"});
        EXPECT_EQ(dflt.exit_code, 0) << dflt.err;
        const size_t at = dflt.err.find("no GPU to run on (");
        EXPECT_NE(at, std::string::npos) << dflt.err;
        EXPECT_EQ(dflt.err.find("no GPU to run on (", at + 1), std::string::npos) << "said more than once: " << dflt.err;
        EXPECT_THAT(dflt.err, ::testing::HasSubstr("running on the CPU"));
      }
    }
    ASSERT_EQ(logits[0].size(), logits[1].size());
    ASSERT_GE(logits[0].size(), prompt.size() * kVocab);
    float worst = 0;
    for (size_t i = 0; i < logits[0].size(); ++i) worst = std::max(worst, std::fabs(logits[0][i] - logits[1][i]));
    EXPECT_LT(worst, tol);
    // Not a constant model: the logits vary across the vocabulary.
    const auto [lo, hi] = std::minmax_element(logits[0].begin(), logits[0].begin() + kVocab);
    EXPECT_GT(*hi - *lo, 0.01f);
    for (size_t row = 0; row < logits[0].size() / kVocab; ++row) {
      if (Margin(&logits[0][row * kVocab]) <= tol) continue;
      EXPECT_EQ(Argmax(&logits[0][row * kVocab]), Argmax(&logits[1][row * kVocab])) << "row " << row;
    }
    RecordProperty("max_abs_fast_vs_reference_" + name, std::to_string(worst));
  }
}

TEST(ConformanceText, Stories260kOnceUponATime) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("models/stories260K.gguf"));
  std::string dir = testing::ScratchDir("conformance_text");
  ASSERT_TRUE(testing::PackFile(testing::SharedFile("models/stories260K.gguf"), dir + "/s.strata").ok());
  const std::string expected =
      ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red "
      "ball. She wanted to play with it,";
  for (bool reference : {true, false}) {
    std::vector<std::string> args = {dir + "/s.strata", "-p", "Once upon a time", "-n", "48", "--temp", "0"};
    if (reference) args.push_back("--reference");
    auto r = testing::RunProgram("strata-run", args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, expected + "\n") << (reference ? "reference" : "fast");
    EXPECT_THAT(r.err, HasSubstr("stopped: token limit"));
  }
}

}  // namespace
}  // namespace strata
