// Conformance: every quantized qwen3moe fixture in shared/data/conformance,
// which llama-quantize made from qwen3moe-f32.gguf, dequantizes close to that
// F32 master, tensor by tensor. stories260k-q8_0 (Q8_0 plus F16 ffn_down,
// quantized from stories260k-f32) adds real F16 data.
//
// The bound is on the relative RMS error of a whole tensor,
//   rel = rms(dequantized - master) / rms(master),
// per ggml type. The bounds were measured on these fixtures (largest value
// over all tensors of that type in all fixtures, printed by this test) and
// set with headroom; docs/quant-types.md lists both. A wrong block layout,
// scale or grid gives rel near or above 1, far outside every bound.

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "packer/gguf/gguf_file.h"
#include "runtime/base/mapped_file.h"
#include "runtime/quant/blocks.h"
#include "runtime/quant/dequantize.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/quantize.h"
#include "tests/testing/test_data.h"

namespace strata {
namespace {

using T = GgmlType;

// Relative RMS error bounds per weight type: the largest value measured over
// all tensors of that type in the nine fixtures (in parentheses), times ~1.3.
const std::map<GgmlType, double> kRelRmsBound = {
    {T::kQ8_0, 0.008},    // (0.0062 stories260k, 0.0054 qwen3moe)
    {T::kQ6_K, 0.024},    // (0.0178)
    {T::kQ5_K, 0.048},    // (0.0362)
    {T::kQ4_K, 0.095},    // (0.0715)
    {T::kIQ4_XS, 0.100},  // (0.0768)
    {T::kMXFP4, 0.150},   // (0.1161)
    {T::kQ3_K, 0.200},    // (0.1511)
    {T::kIQ3_S, 0.220},   // (0.1664)
    {T::kQ2_K, 0.390},    // (0.2967)
    {T::kQ2_0, 0.900},    // (0.7219) 2 bits, levels {-1, 0, 1, 2} * amax: coarse by design
    {T::kF16, 0.0005},    // (0.0002)
};

double RelRms(const std::vector<float>& got, const std::vector<float>& want) {
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - static_cast<double>(want[i]);
    err2 += d * d;
    ref2 += static_cast<double>(want[i]) * static_cast<double>(want[i]);
  }
  return ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
}

std::vector<float> AsFloats(std::span<const uint8_t> bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

struct Fixture {
  const char* master;  // the F32 GGUF llama-quantize started from
  const char* file;    // the quantized GGUF (shard 1 of a split model)
};

class DequantizeConformance : public ::testing::TestWithParam<Fixture> {
 protected:
  static void TearDownTestSuite() {
    masters_.clear();
    std::printf("max relative RMS error per type, all fixtures:\n");
    for (const auto& [type, rel] : max_rel_) std::printf("  %-7s %.4f\n", std::string(TypeName(type)).c_str(), rel);
  }
  // The master model, opened once per suite; nullptr if it cannot be opened.
  static const gguf::GgufModel* Master(const std::string& path) {
    auto it = masters_.find(path);
    if (it == masters_.end()) {
      Result<gguf::GgufModel> m = gguf::GgufModel::Open(path);
      it = masters_.emplace(path, m.ok() ? std::make_unique<gguf::GgufModel>(std::move(m).value()) : nullptr).first;
    }
    return it->second.get();
  }
  static std::map<std::string, std::unique_ptr<gguf::GgufModel>> masters_;
  static std::map<GgmlType, double> max_rel_;
};
std::map<std::string, std::unique_ptr<gguf::GgufModel>> DequantizeConformance::masters_;
std::map<GgmlType, double> DequantizeConformance::max_rel_;

TEST_P(DequantizeConformance, CloseToF32Master) {
  const std::string master_path = testing::SharedFile(std::string("conformance/") + GetParam().master);
  STRATA_REQUIRE_SHARED_FILE(master_path);
  const std::string path = testing::SharedFile(std::string("conformance/") + GetParam().file);
  STRATA_REQUIRE_SHARED_FILE(path);
  const gguf::GgufModel* master_ = Master(master_path);
  ASSERT_NE(master_, nullptr) << "cannot open " << master_path;
  Result<gguf::GgufModel> model = gguf::GgufModel::Open(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_EQ(model->tensors().size(), master_->tensors().size());

  int quantized = 0;
  for (const gguf::TensorInfo& t : model->tensors()) {
    const std::string name(t.name);
    SCOPED_TRACE(std::string(GetParam().file) + " tensor " + name + " (" + std::string(TypeName(t.type)) + ")");
    const gguf::TensorInfo* ref = master_->FindTensor(t.name);
    ASSERT_NE(ref, nullptr);
    ASSERT_EQ(ref->type, T::kF32);
    ASSERT_EQ(ref->n_elements, t.n_elements);
    ASSERT_EQ(ref->ShapeString(), t.ShapeString());
    const std::vector<float> want = AsFloats(master_->TensorData(*ref));

    std::vector<float> got(t.n_elements);
    const Status s = DequantizeRow(t.type, model->TensorData(t), got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    if (t.type == T::kF32) {  // llama-quantize copies these (norms, router)
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0);
      continue;
    }
    ++quantized;
    const double rel = RelRms(got, want);
    double& worst = max_rel_[t.type];
    if (rel > worst) worst = rel;
    const auto bound = kRelRmsBound.find(t.type);
    ASSERT_NE(bound, kRelRmsBound.end()) << "no bound for this type: measure it and add one";
    EXPECT_LT(rel, bound->second);
    EXPECT_GT(rel, 0.0);  // a quantized tensor is never exact
  }
  EXPECT_GT(quantized, 0);
}

// Q2_0 reference quantizer (ggml's quantize_row_q2_0_ref, as the format
// describes it): d = max |x| of the 64 elements, stored as F16; code =
// clamp(roundf(x * (1/d)) + 1, 0, 3), 2 bits per element, element j at bit
// 2*(j%4) of byte j/4.
std::vector<uint8_t> QuantizeQ2_0(const std::vector<float>& x) {
  std::vector<uint8_t> out(x.size() / 64 * sizeof(BlockQ2_0));
  for (size_t i = 0; i < x.size() / 64; ++i) {
    const float* xb = x.data() + 64 * i;
    float amax = 0;
    for (int j = 0; j < 64; ++j) amax = std::fabs(xb[j]) > amax ? std::fabs(xb[j]) : amax;
    const float id = amax > 0 ? 1.0f / amax : 0.0f;
    BlockQ2_0 b{};
    b.d = Fp32ToFp16(amax);
    for (int j = 0; j < 64; ++j) {
      int q = static_cast<int>(std::round(xb[j] * id)) + 1;
      q = q < 0 ? 0 : (q > 3 ? 3 : q);
      b.qs[j / 4] = static_cast<uint8_t>(b.qs[j / 4] | (q << (2 * (j % 4))));
    }
    StoreBlock(out.data(), static_cast<int64_t>(i), b);
  }
  return out;
}

// llama-quantize (no imatrix) made every Q8_0, Q2_0 and F16 tensor with ggml's
// reference quantizers, so quantizing the master again must give the file's
// bytes exactly. This pins the Q8_0 reference rule (roundf, F16 rounding of d),
// the F32 -> F16 rounding and the Q2_0 layout bit for bit.
TEST_P(DequantizeConformance, ReferenceQuantizersReproduceTheFileBytes) {
  const std::string master_path = testing::SharedFile(std::string("conformance/") + GetParam().master);
  STRATA_REQUIRE_SHARED_FILE(master_path);
  const std::string path = testing::SharedFile(std::string("conformance/") + GetParam().file);
  STRATA_REQUIRE_SHARED_FILE(path);
  const gguf::GgufModel* master_ = Master(master_path);
  ASSERT_NE(master_, nullptr) << "cannot open " << master_path;
  Result<gguf::GgufModel> model = gguf::GgufModel::Open(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  int checked = 0;
  for (const gguf::TensorInfo& t : model->tensors()) {
    if (t.type != T::kQ8_0 && t.type != T::kQ2_0 && t.type != T::kF16) continue;
    SCOPED_TRACE(std::string(GetParam().file) + " tensor " + std::string(t.name));
    const std::vector<float> x = AsFloats(master_->TensorData(*master_->FindTensor(t.name)));
    std::vector<uint8_t> mine;
    if (t.type == T::kQ8_0) {
      mine.resize(t.nbytes);
      QuantizeRowQ8_0Unchecked(Q8_0Rule::kGgmlReference, x.data(), mine.data(), static_cast<int64_t>(x.size()));
    } else if (t.type == T::kF16) {
      mine.resize(t.nbytes);
      Fp32RowToFp16Unchecked(x.data(), mine.data(), static_cast<int64_t>(x.size()));
    } else {
      mine = QuantizeQ2_0(x);
    }
    const std::span<const uint8_t> file = model->TensorData(t);
    ASSERT_EQ(mine.size(), file.size());
    EXPECT_EQ(std::memcmp(mine.data(), file.data(), file.size()), 0);
    ++checked;
  }
  EXPECT_GT(checked, 0);  // every fixture has Q8_0 tensors
}

constexpr const char* kQwen = "qwen3moe-f32.gguf";
INSTANTIATE_TEST_SUITE_P(Fixtures, DequantizeConformance,
                         ::testing::Values(Fixture{kQwen, "qwen3moe-q8_0.gguf"}, Fixture{kQwen, "qwen3moe-q4_k_m.gguf"},
                                           Fixture{kQwen, "qwen3moe-q2_k.gguf"}, Fixture{kQwen, "qwen3moe-iq4_xs.gguf"},
                                           Fixture{kQwen, "qwen3moe-iq3_s.gguf"}, Fixture{kQwen, "qwen3moe-q2_0.gguf"},
                                           Fixture{kQwen, "qwen3moe-mxfp4_moe.gguf"},
                                           Fixture{kQwen, "qwen3moe-q4_k_m-split-00001-of-00002.gguf"},
                                           Fixture{"stories260k-f32.gguf", "stories260k-q8_0.gguf"}),
                         [](const ::testing::TestParamInfo<Fixture>& param) {
                           std::string n = param.param.file;
                           n = n.substr(0, n.find(".gguf"));
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace strata
