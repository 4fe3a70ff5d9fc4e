// Q8_0 decode copies and kernel coverage (docs/experts.md):
//  * --decode-copies q8_0 writes a copy after every routed expert tensor and
//    every matrix without a fast kernel; the copy is exactly the reference
//    conversion of its tensor, and close to it in value;
//  * strata-run's policy reads copies where the native type is slow (auto),
//    never (native) or always (copies);
//  * the reader refuses a copy that points wrong, the validator one whose
//    bytes are another tensor's;
//  * coverage: seeds/000's case (Q2_0 experts on the CPU) packs, validates
//    and runs; with Q2_0 made kernel-less by the test hook the packer refuses
//    (naming --decode-copies q8_0) or converts, and the validator fails a pack
//    that has no copy; GPU targets fail, saying this build has none.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "packer/decode_copies.h"
#include "runtime/gpu/images.h"
#include "runtime/model/backend.h"
#include "runtime/model/backend_factory.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/forward.h"
#include "runtime/model/kernel_coverage.h"
#include "runtime/pack/pack_reader.h"
#include "runtime/quant/dequantize.h"
#include "tests/gguf_writer/synthetic_model.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/run_command.h"
#include "tests/testing/test_data.h"
#include "validate/validator.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
using R = TensorRole;

// A qwen3moe: Q4_K matrices (fast at AVX2), TQ1_0 output head (slow).
std::string MixedModel(const std::string& dir) {
  testing::SyntheticModelSpec s;
  s.hp = testing::TinyQwen3MoeHParams();
  s.matrix_type = GgmlType::kQ4_K;
  s.type_by_role = {{R::kOutput, GgmlType::kTQ1_0}};
  auto b = testing::BuildSyntheticModel(s);
  EXPECT_TRUE(b.ok()) << b.status().message();
  EXPECT_TRUE(b->WriteFile(dir + "/mixed.gguf").ok());
  return dir + "/mixed.gguf";
}

// seeds/000's shape: a qwen35moe whose routed experts are Q2_0.
std::string Q2_0ExpertsModel(const std::string& dir) {
  testing::SyntheticModelSpec s;
  s.arch = Arch::kQwen35Moe;
  s.hp = testing::TinyQwen35MoeHParams();
  s.type_by_role = {{R::kFfnGateExps, GgmlType::kQ2_0}, {R::kFfnUpExps, GgmlType::kQ2_0},
                    {R::kFfnDownExps, GgmlType::kQ2_0}};
  auto b = testing::BuildSyntheticModel(s);
  EXPECT_TRUE(b.ok()) << b.status().message();
  EXPECT_TRUE(b->WriteFile(dir + "/q2_0.gguf").ok());
  return dir + "/q2_0.gguf";
}

PackOptions Fast() {
  PackOptions o;
  o.profile_tokens = 200;
  return o;
}

PackOptions WithCopies() {
  PackOptions o = Fast();
  o.decode_copies = DecodeCopyType::kQ8_0;
  return o;
}

std::vector<float> Logits(const Model& m, CpuBackend& be, const std::vector<int32_t>& ids) {
  auto st = SequenceState::Create(be, m.hp(), 64);
  EXPECT_TRUE(st.ok());
  ForwardOptions fo;
  fo.all_logits = true;
  std::vector<float> out;
  Status s = Forward(m, be, *st, ids, fo, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

TEST(DecodeCopies, WrittenForExpertsAndSlowTypesExactlyAndCloseInValue) {
  std::string dir = testing::ScratchDir("copies_written");
  const std::string gguf = MixedModel(dir);
  auto r = testing::PackFile(gguf, dir + "/c.strata", WithCopies());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->decode_copies, 3u * 3 + 1);  // gate/up/down experts of 3 layers, and the TQ1_0 head
  auto pack = Pack::Open(dir + "/c.strata");
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  const Pack& p = **pack;
  size_t copies = 0;
  for (const TensorView& t : p.tensors()) {
    if (t.is_decode_copy) {
      ++copies;
      continue;
    }
    const bool want = t.expert_count > 0 || t.role == R::kOutput;
    ASSERT_EQ(t.decode_copy >= 0, want) << t.name;
    if (!want) continue;
    // The copy follows its tensor, with its own blob.
    ASSERT_EQ(static_cast<uint32_t>(t.decode_copy), t.index + 1) << t.name;
    const TensorView& c = p.tensors()[static_cast<size_t>(t.decode_copy)];
    EXPECT_EQ(c.name, std::string(t.name) + ".decode_q8_0");
    EXPECT_TRUE(c.is_decode_copy);
    EXPECT_EQ(c.type, GgmlType::kQ8_0);
    EXPECT_EQ(c.shape, t.shape);
    EXPECT_EQ(c.role, t.role);
    EXPECT_EQ(c.layer, t.layer);
    EXPECT_EQ(c.expert_count, t.expert_count);
    EXPECT_NE(p.manifest().tensors()->Get(c.index)->blob(), p.manifest().tensors()->Get(t.index)->blob());
    // Byte for byte the reference conversion of every row...
    std::vector<uint8_t> expect(c.data.size());
    MakeDecodeCopyRows(t.type, t.data.data(), t.row_bytes, static_cast<int64_t>(t.shape[0]),
                       static_cast<int64_t>(t.rows()), expect.data());
    ASSERT_TRUE(std::equal(expect.begin(), expect.end(), c.data.begin())) << t.name;
    // ... and within Q8_0's rounding of the native values: half a step of
    // each 32-element block (amax / 127 / 2) plus the F16 scale's rounding:
    // relative 2^-11 while it is normal, absolute half a subnormal step
    // (2^-25) times 127 when small blocks give it a subnormal scale.
    const auto n = static_cast<int64_t>(t.shape[0]);
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    for (uint64_t row = 0; row < t.rows(); row += 37) {
      DequantizeRowUnchecked(t.type, t.Row(row), a.data(), n);
      DequantizeRowUnchecked(c.type, c.Row(row), b.data(), n);
      for (int64_t blk = 0; blk < n; blk += 32) {
        float amax = 0;
        for (int64_t i = blk; i < blk + 32; ++i) amax = std::max(amax, std::fabs(a[i]));
        for (int64_t i = blk; i < blk + 32; ++i)
          ASSERT_LE(std::fabs(a[i] - b[i]), amax / 127.0f * 0.5f + amax * 1e-3f + 127.0f * 0x1p-25f) << t.name << " row " << row;
      }
    }
  }
  EXPECT_EQ(copies, r->decode_copies);

  // The validator: coverage counts the copy; the decode-copies check passes.
  ValidateReport rep = ValidatePack(dir + "/c.strata", {});
  ASSERT_TRUE(rep.ok()) << ValidateReportText(rep);
  const std::string text = ValidateReportText(rep);
  EXPECT_THAT(text, HasSubstr("ok   kernel-coverage  target cpu (kernel table at avx2): 25 matrices: 24 fast kernel, "
                              "1 Q8_0 decode copy, 0 scalar kernel only"));
  EXPECT_THAT(text, HasSubstr("ok   decode-copies    10 Q8_0 decode copies"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("warn ")));

  // Without copies the slow head is a warning in the packer and the validator, not a failure.
  auto plain = testing::PackFile(gguf, dir + "/plain.strata", Fast());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->decode_copies, 0u);
  ASSERT_EQ(plain->log.warnings.size(), 1u);
  EXPECT_THAT(plain->log.warnings[0], HasSubstr("TQ1_0 has no fast CPU kernel at avx2"));
  EXPECT_THAT(plain->log.warnings[0], HasSubstr("--decode-copies q8_0"));
  ValidateReport prep = ValidatePack(dir + "/plain.strata", {});
  ASSERT_TRUE(prep.ok());
  EXPECT_THAT(ValidateReportText(prep), HasSubstr("warn TQ1_0 has no fast kernel at avx2: 1 matrices ('output.weight')"));

  // Same input, same options: same bytes, whatever the thread count.
  PackOptions one = WithCopies();
  one.threads = 1;
  ASSERT_TRUE(testing::PackFile(gguf, dir + "/c1.strata", one).ok());
  EXPECT_TRUE(testing::ReadBytes(dir + "/c.strata") == testing::ReadBytes(dir + "/c1.strata"));
}

TEST(DecodeCopies, RuntimePolicyChoosesTheBytesThatRun) {
  std::string dir = testing::ScratchDir("copies_policy");
  ASSERT_TRUE(testing::PackFile(MixedModel(dir), dir + "/c.strata", WithCopies()).ok());
  auto pack = Pack::Open(dir + "/c.strata");
  ASSERT_TRUE(pack.ok());
  auto make = [&](DecodeCopyPolicy policy, size_t expect_switched) {
    auto m = Model::Create(**pack);
    EXPECT_TRUE(m.ok());
    EXPECT_EQ(m->UseDecodeCopies(policy, IsaLevel::kAvx2), expect_switched) << DecodeCopyPolicyName(policy);
    return std::move(*m);
  };
  Model native = make(DecodeCopyPolicy::kNative, 0);
  Model autom = make(DecodeCopyPolicy::kAuto, 1);  // only the TQ1_0 head: Q4_K is fast
  Model copies = make(DecodeCopyPolicy::kCopies, 10);
  EXPECT_EQ(native.Get(R::kOutput)->type, GgmlType::kTQ1_0);
  EXPECT_EQ(autom.Get(R::kOutput)->type, GgmlType::kQ8_0);
  EXPECT_EQ(autom.Get(0, R::kFfnGateExps)->type, GgmlType::kQ4_K);
  EXPECT_EQ(copies.Get(0, R::kFfnGateExps)->type, GgmlType::kQ8_0);
  EXPECT_TRUE(copies.Get(0, R::kFfnGateExps)->is_decode_copy);
  EXPECT_EQ(copies.Get(0, R::kAttnQ)->type, GgmlType::kQ4_K);  // no copy: stays native
  EXPECT_LT(copies.DecodeBytesPerToken(), native.DecodeBytesPerToken() * 3);
  // The expert path reads copies through RunExpertOnBackend too.
  ReferenceBackend ref;
  std::vector<float> x(static_cast<size_t>(native.hp().n_embd), 0.5f), y1(x.size()), y2(x.size());
  ASSERT_TRUE(RunExpertOnBackend(native, ref, 1, 3, x.data(), 1, y1.data(), false).ok());
  ASSERT_TRUE(RunExpertOnBackend(native, ref, 1, 3, x.data(), 1, y2.data(), true).ok());
  EXPECT_NE(y1, y2);
  EXPECT_LT(MaxAbsDiff(y1, y2), 0.05f);

  // Logits: copies stay close to native (the fidelity cost docs/experts.md reports).
  auto fast = FastBackend::Create({});
  ASSERT_TRUE(fast.ok());
  const std::vector<int32_t> ids = {1, 13, 20, 27, 34, 41, 48, 55, 62, 69};
  const std::vector<float> a = Logits(native, **fast, ids), b = Logits(copies, **fast, ids);
  EXPECT_GT(MaxAbsDiff(a, b), 0.0f);
  EXPECT_LT(MaxAbsDiff(a, b), 0.5f);

  // strata-run: the option and its note.
  for (const char* policy : {"auto", "native", "copies"}) {
    auto run = testing::RunProgram("strata-run", {dir + "/c.strata", "--tokens", "1,2,3", "-n", "2", "--temp", "0",
                                                  "--print-ids", "--decode-copies", policy});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    if (std::string(policy) == "native") EXPECT_THAT(run.err, ::testing::Not(HasSubstr("decode copies")));
    else EXPECT_THAT(run.err, HasSubstr(std::string(policy) == "auto" ? "1 tensors read their Q8_0 decode copies"
                                                                      : "10 tensors read their Q8_0 decode copies"));
  }
  auto bad = testing::RunProgram("strata-run", {dir + "/c.strata", "--tokens", "1", "--decode-copies", "sometimes"});
  EXPECT_EQ(bad.exit_code, 2);
}

// A decode copy that points wrong is refused at open; one whose bytes belong
// to another tensor of the same shape passes the reader (its structure is
// sound) and fails the validator's decode-copies check.
TEST(DecodeCopies, CopiesThatPointWrongAreRefused) {
  std::string dir = testing::ScratchDir("copies_hostile");
  PackOptions o = WithCopies();
  o.probe = false;
  o.profile = false;
  ASSERT_TRUE(testing::PackFile(MixedModel(dir), dir + "/good.strata", o).ok());
  auto good = Pack::Open(dir + "/good.strata");
  ASSERT_TRUE(good.ok());
  auto idx = [&](const std::string& name) { return static_cast<int32_t>((*good)->Find(name)->index); };
  const int32_t gate0 = idx("blk.0.ffn_gate_exps.weight"), up0 = idx("blk.0.ffn_up_exps.weight"),
                output = idx("output.weight"), gate1 = idx("blk.1.ffn_gate_exps.weight"),
                attn_q0 = idx("blk.0.attn_q.weight");
  struct Case {
    const char* name;
    std::function<void(fb::ManifestT&)> edit;
    std::string expect;
  } cases[] = {
      {"points_at_ordinary", [&](fb::ManifestT& m) { m.tensors[gate0]->decode_copy = attn_q0; },
       "tensor 'blk.0.ffn_gate_exps.weight' decode copy 'blk.0.attn_q.weight': expected a tensor marked as a decode "
       "copy, found an ordinary tensor"},
      {"shared_copy", [&](fb::ManifestT& m) { m.tensors[up0]->decode_copy = gate0 + 1; },
       "expected a copy of this tensor only, found a copy that tensor 'blk.0.ffn_gate_exps.weight' also names"},
      {"other_layer",
       [&](fb::ManifestT& m) { std::swap(m.tensors[gate0]->decode_copy, m.tensors[gate1]->decode_copy); },
       "role and layer: expected ffn_gate_exps of layer 0 (the original's), found ffn_gate_exps of layer 1"},
      {"other_shape",
       [&](fb::ManifestT& m) { std::swap(m.tensors[gate0]->decode_copy, m.tensors[output]->decode_copy); },
       "tensor 'output.weight' decode copy 'blk.0.ffn_gate_exps.weight.decode_q8_0' shape: expected [256, 512], found "
       "[256, 256, 8]"},
      {"orphan", [&](fb::ManifestT& m) { m.tensors[gate0]->decode_copy = -1; },
       "tensor 'blk.0.ffn_gate_exps.weight.decode_q8_0': expected a decode copy that an ordinary tensor names, found a "
       "decode copy no tensor names"},
      {"chain", [&](fb::ManifestT& m) { m.tensors[gate0 + 1]->decode_copy = up0 + 1; },
       "tensor 'blk.0.ffn_gate_exps.weight.decode_q8_0' decode_copy: expected -1 for a tensor that is itself a decode "
       "copy"},
      {"out_of_range", [&](fb::ManifestT& m) { m.tensors[gate0]->decode_copy = 100000; },
       "decode_copy: expected -1 or another tensor's index"},
      {"self", [&](fb::ManifestT& m) { m.tensors[gate0]->decode_copy = gate0; },
       "decode_copy: expected -1 or another tensor's index"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string out = dir + "/" + c.name + ".strata";
    ASSERT_TRUE(testing::RewriteManifest(dir + "/good.strata", out, c.edit).ok());
    auto p = Pack::Open(out);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), StatusCode::kDataLoss);
    EXPECT_THAT(p.status().message(), HasSubstr(c.expect));
  }

  // Swap the blobs of the gate and up copies of layer 0 (same shape, same
  // role family): the reader cannot tell; the validator recomputes rows.
  const std::string swapped = dir + "/swapped.strata";
  ASSERT_TRUE(testing::RewriteManifest(dir + "/good.strata", swapped, [&](fb::ManifestT& m) {
                std::swap(m.tensors[gate0 + 1]->blob, m.tensors[up0 + 1]->blob);
              }).ok());
  ASSERT_TRUE(Pack::Open(swapped).ok());
  ValidateReport rep = ValidatePack(swapped, {});
  EXPECT_FALSE(rep.ok());
  EXPECT_THAT(ValidateReportText(rep),
              HasSubstr("FAIL decode-copies    decode copy 'blk.0.ffn_gate_exps.weight.decode_q8_0' row 0 is not the "
                        "Q8_0 conversion of tensor 'blk.0.ffn_gate_exps.weight' row 0"));
}

TEST(KernelCoverage, Seed000Q2_0ExpertsPackValidateAndRunOnTheCpu) {
  std::string dir = testing::ScratchDir("coverage_seed000");
  const std::string gguf = Q2_0ExpertsModel(dir);
  EXPECT_EQ(CpuKernelSupport(GgmlType::kQ2_0), KernelSupport::kFast);
  auto r = testing::PackFile(gguf, dir + "/q2_0.strata", Fast());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->log.warnings.empty());
  ValidateReport rep = ValidatePack(dir + "/q2_0.strata", {});
  ASSERT_TRUE(rep.ok()) << ValidateReportText(rep);
  EXPECT_THAT(ValidateReportText(rep), HasSubstr("0 Q8_0 decode copy, 0 scalar kernel only"));
  auto run = testing::RunProgram("strata-run", {dir + "/q2_0.strata", "--tokens", "1,13,20,27", "-n", "8", "--temp",
                                                "0", "--ignore-eos", "--print-ids"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), ' '), 7);
  auto cli = testing::RunProgram("strata-validate", {dir + "/q2_0.strata", "--target", "cpu", "--no-checksums"});
  EXPECT_EQ(cli.exit_code, 0) << cli.out;
}

// qwen3next's attn_qkv / attn_gate / ssm_beta / ssm_alpha are rows of the
// GGUF's fused ssm_in / ssm_ba: their decode copies are made from the
// gathered rows (the pack's own bytes), not the fused source's.
TEST(KernelCoverage, TensorsSplitFromAFusedOneGetCopiesOfTheirOwnRows) {
  std::string dir = testing::ScratchDir("coverage_fused");
  testing::SyntheticModelSpec s;
  s.arch = Arch::kQwen3Next;
  s.hp = testing::TinyQwen3NextHParams();
  s.matrix_type = GgmlType::kQ4_K;
  auto b = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_TRUE(b->WriteFile(dir + "/m.gguf").ok());
  ScopedKernelLessTypesForTesting hook({GgmlType::kQ4_K});
  auto converted = testing::PackFile(dir + "/m.gguf", dir + "/m.strata", WithCopies());
  ASSERT_TRUE(converted.ok()) << converted.status().message();
  auto pack = Pack::Open(dir + "/m.strata");
  ASSERT_TRUE(pack.ok());
  for (const char* name : {"blk.0.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.1.ssm_beta.weight"}) {
    SCOPED_TRACE(name);
    const TensorView* t = (*pack)->Find(name);
    const TensorView* copy = (*pack)->Find(std::string(name) + kDecodeCopySuffix);
    ASSERT_TRUE(t && copy);
    ASSERT_EQ(t->type, GgmlType::kQ4_K);
    ASSERT_EQ(copy->type, GgmlType::kQ8_0);
    const size_t n = t->shape[0] * t->shape[1];
    std::vector<float> a(n), c(n);
    ASSERT_TRUE(DequantizeRow(t->type, t->data, a).ok());
    ASSERT_TRUE(DequantizeRow(copy->type, copy->data, c).ok());
    float worst = 0, scale = 0;
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(a[i] - c[i])), scale = std::max(scale, std::fabs(a[i]));
    EXPECT_LT(worst, scale / 64) << "the copy holds other rows than the tensor";
  }
}

TEST(KernelCoverage, AKernelLessExpertTypeIsRefusedOrConverted) {
  std::string dir = testing::ScratchDir("coverage_kernel_less");
  const std::string gguf = Q2_0ExpertsModel(dir);
  // A pack made while Q2_0 still had its kernel, for the validator below.
  ASSERT_TRUE(testing::PackFile(gguf, dir + "/native.strata", Fast()).ok());

  ScopedKernelLessTypesForTesting hook({GgmlType::kQ2_0});
  EXPECT_EQ(CpuKernelSupport(GgmlType::kQ2_0), KernelSupport::kNone);

  // Refused, with the reason and the flag that converts; nothing written.
  auto model = gguf::GgufModel::Open(gguf);
  ASSERT_TRUE(model.ok());
  PackOptions o = Fast();
  o.output = dir + "/refused.strata";
  auto refused = PackModel(*model, o);
  ASSERT_TRUE(refused.ok());
  ASSERT_TRUE(refused->log.refused());
  ASSERT_EQ(refused->log.refusals.size(), 1u);
  const Refusal& why = refused->log.refusals[0];
  EXPECT_THAT(why.location, HasSubstr("'blk.0.ffn_gate_exps.weight' and 11 more"));
  EXPECT_THAT(why.message, HasSubstr("type Q2_0 has no CPU kernel in this build"));
  EXPECT_THAT(why.message, HasSubstr("routed experts reaching the CPU expert pool"));
  EXPECT_EQ(why.override_flag, "--decode-copies q8_0");
  EXPECT_FALSE(FileExists(dir + "/refused.strata"));

  // Converted: every Q2_0 expert tensor gets a copy; the pack validates and
  // runs on the copies.
  auto converted = testing::PackFile(gguf, dir + "/converted.strata", WithCopies());
  ASSERT_TRUE(converted.ok()) << converted.status().message();
  EXPECT_EQ(converted->decode_copies, 12u);
  ValidateReport rep = ValidatePack(dir + "/converted.strata", {});
  ASSERT_TRUE(rep.ok()) << ValidateReportText(rep);
  EXPECT_THAT(ValidateReportText(rep), HasSubstr("12 Q8_0 decode copy, 0 scalar kernel only"));
  auto pack = Pack::Open(dir + "/converted.strata");
  ASSERT_TRUE(pack.ok());
  auto m = Model::Create(**pack);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->UseDecodeCopies(DecodeCopyPolicy::kAuto, IsaLevel::kAvx2), 12u);
  EXPECT_EQ(m->Get(3, R::kFfnDownExps)->type, GgmlType::kQ8_0);
  auto fast = FastBackend::Create({});
  ASSERT_TRUE(fast.ok());
  const std::vector<float> logits = Logits(*m, **fast, {1, 13, 20, 27, 34});
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));

  // The validator fails the pack without copies, naming the tensor and the fix.
  ValidateReport bad = ValidatePack(dir + "/native.strata", {});
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(ValidateReportText(bad),
              HasSubstr("FAIL kernel-coverage  tensor 'blk.0.ffn_gate_exps.weight' has type Q2_0, which has no CPU "
                        "kernel in this build and no decode copy: the CPU cannot compute it (repack with "
                        "--decode-copies q8_0)"));
}

// --target cuda|hip: the device kernels' coverage per tensor, where this build
// embeds that device's images; a clear failure where it does not.
TEST(KernelCoverage, GpuTargetsCheckTheDeviceKernelsOfThisBuild) {
  std::string dir = testing::ScratchDir("coverage_gpu");
  ASSERT_TRUE(testing::PackFile(MixedModel(dir), dir + "/m.strata", Fast()).ok());
  for (Placement target : {Placement::kCuda, Placement::kHip}) {
    const std::string name(PlacementName(target));
    SCOPED_TRACE(name);
    ValidateOptions o;
    o.target = target;
    ValidateReport rep = ValidatePack(dir + "/m.strata", o);
    const std::string text = ValidateReportText(rep);
    if (PlacementBuilt(target)) {
      // Every type the packer writes has a device kernel: all native, none failing.
      EXPECT_TRUE(rep.ok()) << text;
      EXPECT_THAT(text, HasSubstr("ok   kernel-coverage  target " + name + " (device images "));
      EXPECT_THAT(text, HasSubstr("0 Q8_0 decode copy"));
      auto run = testing::RunProgram("strata-validate", {dir + "/m.strata", "--target", name, "--json"});
      EXPECT_EQ(run.exit_code, 0) << run.err;
      // A type the device kernels lack (the test hook) and no decode copy: a problem naming the tensor.
      ScopedKernelLessTypesForTesting no_kernels({GgmlType::kQ4_K, GgmlType::kTQ1_0, GgmlType::kQ2_0,
                                                  GgmlType::kIQ3_S, GgmlType::kQ6_K, GgmlType::kQ8_0});
      ValidateReport missing = ValidatePack(dir + "/m.strata", o);
      EXPECT_FALSE(missing.ok());
      EXPECT_THAT(ValidateReportText(missing), HasSubstr("no " + name + " kernel in this build and no decode copy"));
    } else {
      EXPECT_FALSE(rep.ok());
      EXPECT_THAT(text, HasSubstr("FAIL kernel-coverage  target " + name + ": this build has no "));
      auto run = testing::RunProgram("strata-validate", {dir + "/m.strata", "--target", name, "--json"});
      EXPECT_EQ(run.exit_code, 1);
      auto j = nlohmann::json::parse(run.out);
      EXPECT_FALSE(j["ok"].get<bool>());
      EXPECT_EQ(j["info"]["target"], name);
    }
  }
  auto tpu = testing::RunProgram("strata-validate", {dir + "/m.strata", "--target", "tpu"});
  EXPECT_EQ(tpu.exit_code, 2);
  EXPECT_THAT(tpu.err, HasSubstr("expected cpu, cuda or hip"));
  EXPECT_TRUE(PlacementBuilt(Placement::kCpu));
  EXPECT_EQ(PlacementBuilt(Placement::kCuda), gpu::CudaModuleImage() != nullptr);
  EXPECT_EQ(PlacementBuilt(Placement::kHip), gpu::HipModuleImage() != nullptr);
}

// The GPU backend refuses, at load, a tensor whose type has no device kernel,
// naming it; with a Q8_0 decode copy of it, it runs the copy.
// --vram-budget with a GPU target: the routed experts may be split between
// VRAM and RAM (docs/experts-split.md), so what the host tier reads (the
// decode copy where there is one) needs a kernel on both sides.
TEST(KernelCoverage, SplitNeedsAKernelOnBothSides) {
  if (!PlacementBuilt(Placement::kCuda))
    GTEST_SKIP() << "this build has no CUDA images (GpuTargetsCheckTheDeviceKernelsOfThisBuild checks that failure)";
  std::string dir = testing::ScratchDir("coverage_split");
  const std::string gguf = Q2_0ExpertsModel(dir);
  ASSERT_TRUE(testing::PackFile(gguf, dir + "/plain.strata", Fast()).ok());
  ASSERT_TRUE(testing::PackFile(gguf, dir + "/copies.strata", WithCopies()).ok());
  ValidateOptions o;
  o.target = Placement::kCuda;
  o.vram_budget = uint64_t{8} << 30;
  for (const char* name : {"plain", "copies"}) {
    ValidateReport rep = ValidatePack(dir + "/" + name + ".strata", o);
    EXPECT_TRUE(rep.ok()) << ValidateReportText(rep);
    EXPECT_THAT(ValidateReportText(rep), HasSubstr("split (--vram-budget 8.00 GiB): 12 routed expert matrices, each "
                                                   "with a cuda and a CPU kernel"));
  }
  {
    // Neither side has a Q2_0 kernel (the hook): the plain pack fails on
    // the split too; its decode copies (Q8_0) run on both sides.
    ScopedKernelLessTypesForTesting no_q2_0({GgmlType::kQ2_0});
    ValidateReport plain = ValidatePack(dir + "/plain.strata", o);
    EXPECT_FALSE(plain.ok());
    EXPECT_THAT(ValidateReportText(plain), HasSubstr("'blk.0.ffn_gate_exps.weight' is read as Q2_0, which has no cuda "
                                                     "kernel in this build: split across VRAM and RAM"));
    ValidateReport copies = ValidatePack(dir + "/copies.strata", o);
    EXPECT_TRUE(copies.ok()) << ValidateReportText(copies);
  }
  auto run = testing::RunProgram("strata-validate", {dir + "/copies.strata", "--target", "cuda", "--vram-budget", "8G"});
  EXPECT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_THAT(run.out, HasSubstr("split (--vram-budget 8.00 GiB)"));
  auto cpu = testing::RunProgram("strata-validate", {dir + "/copies.strata", "--vram-budget", "8G"});
  EXPECT_EQ(cpu.exit_code, 2);
  EXPECT_THAT(cpu.err, HasSubstr("goes with --target cuda or hip"));
  auto bad = testing::RunProgram("strata-validate", {dir + "/copies.strata", "--target", "cuda", "--vram-budget", "8Q"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--vram-budget '8Q'"));
}

TEST(KernelCoverage, GpuBackendRefusesATypeWithoutADeviceKernelOrRunsItsCopy) {
  std::string dir = testing::ScratchDir("coverage_gpu_load");
  ASSERT_TRUE(testing::PackFile(MixedModel(dir), dir + "/plain.strata", Fast()).ok());
  ASSERT_TRUE(testing::PackFile(MixedModel(dir), dir + "/copies.strata", WithCopies()).ok());
  auto kind = ParseBackendKind("software-gpu");
  ASSERT_TRUE(kind.ok());
  BackendOptions bo;
  bo.kind = "software-gpu";
  // Every type the packer writes has a device kernel: auto keeps the originals.
  {
    auto pack = Pack::Open(dir + "/copies.strata");
    ASSERT_TRUE(pack.ok());
    auto m = Model::Create(**pack);
    ASSERT_TRUE(m.ok());
    auto switched = ApplyDecodeCopies(*m, "auto", **kind);
    ASSERT_TRUE(switched.ok());
    EXPECT_EQ(*switched, 0u);
  }
  ScopedKernelLessTypesForTesting no_kernels({GgmlType::kTQ1_0});  // the output head's type
  {
    auto pack = Pack::Open(dir + "/plain.strata");
    ASSERT_TRUE(pack.ok());
    auto m = Model::Create(**pack);
    ASSERT_TRUE(m.ok());
    auto made = MakeBackend(*m, bo);
    ASSERT_FALSE(made.ok());
    EXPECT_THAT(made.status().message(), HasSubstr("tensor 'output.weight' is TQ1_0, which the software-gpu"));
  }
  {
    auto pack = Pack::Open(dir + "/copies.strata");
    ASSERT_TRUE(pack.ok());
    auto m = Model::Create(**pack);
    ASSERT_TRUE(m.ok());
    auto switched = ApplyDecodeCopies(*m, "auto", **kind);
    ASSERT_TRUE(switched.ok());
    EXPECT_EQ(*switched, 1u);  // the head, to its Q8_0 copy
    EXPECT_EQ(m->Get(R::kOutput)->type, GgmlType::kQ8_0);
    auto made = MakeBackend(*m, bo);
    EXPECT_TRUE(made.ok()) << made.status().message();
  }
}

TEST(KernelCoverage, CopyRulesPerTensor) {
  // Which tensors of a plan get copies, without writing anything.
  HParams hp = testing::TinyQwen3MoeHParams();
  auto planned = [](const char* name, R role, GgmlType type, std::vector<uint64_t> shape) {
    PlannedTensor p;
    p.name = name;
    p.role = role;
    p.type = type;
    p.shape = shape;
    p.bytes = 1024;
    return p;
  };
  std::vector<PlannedTensor> plan = {
      planned("token_embd.weight", R::kTokenEmbd, GgmlType::kTQ1_0, {256, 512}),   // row lookups: no copy
      planned("output.weight", R::kOutput, GgmlType::kTQ1_0, {256, 512}),            // slow: copy
      planned("blk.0.ffn_gate_inp.weight", R::kFfnGateInp, GgmlType::kF32, {256, 8}),  // fast, not an expert
      planned("blk.0.ffn_gate_exps.weight", R::kFfnGateExps, GgmlType::kQ4_K, {256, 256, 8}),  // expert: copy
      planned("blk.0.ffn_up_exps.weight", R::kFfnUpExps, GgmlType::kQ8_0, {256, 256, 8}),  // already Q8_0
      planned("blk.0.attn_norm.weight", R::kAttnNorm, GgmlType::kF32, {256}),         // 1-D
  };
  PackOptions o;
  o.decode_copies = DecodeCopyType::kQ8_0;
  FixLog log;
  DecodeCopyPlan dp = PlanDecodeCopies(plan, hp, o, &log);
  EXPECT_EQ(dp.copy, (std::vector<bool>{false, true, false, true, false, false}));
  EXPECT_TRUE(log.warnings.empty());
  // A tied head multiplies the embedding: then it gets a copy.
  hp.tied_output = true;
  dp = PlanDecodeCopies(plan, hp, o, &log);
  EXPECT_TRUE(dp.copy[0]);
  // Without --decode-copies: warnings for the slow multiplied types only.
  hp.tied_output = false;
  FixLog plain;
  dp = PlanDecodeCopies(plan, hp, PackOptions{}, &plain);
  EXPECT_EQ(dp.count, 0u);
  ASSERT_EQ(plain.warnings.size(), 1u);
  EXPECT_THAT(plain.warnings[0], HasSubstr("TQ1_0 has no fast CPU kernel"));
}

}  // namespace
}  // namespace strata
