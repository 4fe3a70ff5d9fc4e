// Attention inner loops (kernels/attention.h): every ISA level this CPU runs
// against a double-precision evaluation of the same sums, on random inputs
// over head sizes and key counts that hit every tail (d mod 4/8/16, n mod 4),
// with rows `stride` apart as in the KV cache. Also: nothing is written past
// scores[n) or o[d), and o is accumulated into, not overwritten.

#include "runtime/kernels/attention.h"
#include "runtime/kernels/delta_rule.h"
#include "runtime/base/platform.h"
#include "runtime/quant/quantize.h"


#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace strata::kernels {
namespace {

constexpr float kSentinel = -12345.0f;

std::vector<IsaLevel> Levels() {
  std::vector<IsaLevel> out;
  for (IsaLevel l : kAllIsaLevels)
    if (CpuSupports(l)) out.push_back(l);
  return out;
}

std::vector<float> Random(size_t n, std::mt19937_64& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

constexpr int64_t kDims[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 192, 255, 256, 257};
constexpr int64_t kKeys[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 33, 130};

TEST(AttentionKernels, ScoresMatchDoublePrecisionDots) {
  std::mt19937_64 rng(11);
  for (IsaLevel level : Levels()) {
    const AttnKernels& k = AttnKernelsFor(level);
    ASSERT_EQ(k.isa, level);
    for (int64_t d : kDims) {
      for (int64_t n : kKeys) {
        for (int64_t pad : {int64_t{0}, int64_t{5}, 3 * d}) {  // a row alone, odd padding, four KV heads side by side
          const int64_t stride = d + pad;
          SCOPED_TRACE(std::string(IsaName(level)) + " d=" + std::to_string(d) + " n=" + std::to_string(n) +
                       " stride=" + std::to_string(stride));
          const std::vector<float> q = Random(static_cast<size_t>(d), rng);
          // Exactly n rows: the last row ends at d, as the cache's last key may.
          const std::vector<float> K = Random(static_cast<size_t>(n > 0 ? (n - 1) * stride + d : 0), rng);
          std::vector<float> scores(static_cast<size_t>(n) + 1, kSentinel);
          const float scale = 0.0883883f;
          k.scores(q.data(), K.data(), stride, n, d, scale, scores.data());
          for (int64_t j = 0; j < n; ++j) {
            double exact = 0.0, mag = 0.0;
            for (int64_t i = 0; i < d; ++i) {
              exact += static_cast<double>(q[i]) * static_cast<double>(K[j * stride + i]);
              mag += std::fabs(static_cast<double>(q[i]) * static_cast<double>(K[j * stride + i]));
            }
            EXPECT_NEAR(static_cast<double>(scores[j]), exact * static_cast<double>(scale),
                        (mag * 4e-7 * static_cast<double>(d) + 1e-30) * static_cast<double>(scale)) << "key " << j;
          }
          EXPECT_EQ(scores[n], kSentinel) << "wrote past scores[n)";
        }
      }
    }
  }
}

TEST(AttentionKernels, MixAccumulatesWeightedRowsIntoO) {
  std::mt19937_64 rng(12);
  for (IsaLevel level : Levels()) {
    const AttnKernels& k = AttnKernelsFor(level);
    for (int64_t d : kDims) {
      for (int64_t n : kKeys) {
        for (int64_t pad : {int64_t{0}, int64_t{5}, 3 * d}) {
          const int64_t stride = d + pad;
          SCOPED_TRACE(std::string(IsaName(level)) + " d=" + std::to_string(d) + " n=" + std::to_string(n) +
                       " stride=" + std::to_string(stride));
          const std::vector<float> p = Random(static_cast<size_t>(n), rng, 0.0f, 1.0f);
          const std::vector<float> V = Random(static_cast<size_t>(n > 0 ? (n - 1) * stride + d : 0), rng);
          std::vector<float> o = Random(static_cast<size_t>(d), rng);  // accumulated into
          const std::vector<float> o0 = o;
          o.push_back(kSentinel);
          k.mix(p.data(), V.data(), stride, n, d, o.data());
          for (int64_t i = 0; i < d; ++i) {
            double exact = static_cast<double>(o0[i]), mag = std::fabs(exact);
            for (int64_t j = 0; j < n; ++j) {
              exact += static_cast<double>(p[j]) * static_cast<double>(V[j * stride + i]);
              mag += std::fabs(static_cast<double>(p[j]) * static_cast<double>(V[j * stride + i]));
            }
            EXPECT_NEAR(static_cast<double>(o[i]), exact, mag * 4e-7 * static_cast<double>(n + 1) + 1e-30) << "value " << i;
          }
          EXPECT_EQ(o[d], kSentinel) << "wrote past o[d)";
        }
      }
    }
  }
}

// No level reads outside the rows it is given: q, the last K/V row and the
// cache's first row are placed against inaccessible pages (an out-of-bounds
// read, masked tails included, is a SIGSEGV), for every tail of d.
TEST(AttentionKernels, ReadNothingOutsideTheirRows) {
  const size_t page = static_cast<size_t>(PageBytes());
  const size_t bytes = 64 * page;
  auto region = GuardedMemory::Allocate(bytes + 2 * page, "attention guard region");
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  uint8_t* base = region->data();
  ASSERT_TRUE(region->SetAccess(GuardedMemory::Access::kNone, 0, page).ok());
  ASSERT_TRUE(region->SetAccess(GuardedMemory::Access::kNone, page + bytes, page).ok());
  float* lo = static_cast<float*>(static_cast<void*>(base + page));         // right after the leading guard
  float* hi = static_cast<float*>(static_cast<void*>(base + page + bytes));  // the trailing guard
  std::mt19937_64 rng(14);
  for (IsaLevel level : Levels()) {
    const AttnKernels& k = AttnKernelsFor(level);
    for (int64_t d : kDims) {
      for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{9}}) {
        SCOPED_TRACE(std::string(IsaName(level)) + " d=" + std::to_string(d) + " n=" + std::to_string(n));
        const int64_t stride = d + 3, span = (n - 1) * stride + d;
        const std::vector<float> rows = Random(static_cast<size_t>(span), rng);
        const std::vector<float> qv = Random(static_cast<size_t>(d), rng);
        // Rows ending at the trailing guard, q starting at the leading one.
        float* K = hi - span;
        std::copy(rows.begin(), rows.end(), K);
        std::copy(qv.begin(), qv.end(), lo);
        std::vector<float> scores(static_cast<size_t>(n)), o(static_cast<size_t>(d), 0.0f);
        k.scores(lo, K, stride, n, d, 1.0f, scores.data());
        k.mix(scores.data(), K, stride, n, d, o.data());
        // Rows starting at the leading guard, q ending at the trailing one.
        std::copy(rows.begin(), rows.end(), lo);
        std::copy(qv.begin(), qv.end(), hi - d);
        std::vector<float> scores2(static_cast<size_t>(n)), o2(static_cast<size_t>(d), 0.0f);
        k.scores(hi - d, lo, stride, n, d, 1.0f, scores2.data());
        k.mix(scores2.data(), lo, stride, n, d, o2.data());
        EXPECT_EQ(scores, scores2);
        EXPECT_EQ(o, o2);
      }
    }
  }
}

// The SIMD levels agree with the scalar reference (what --reference runs) as
// closely as float summation order allows, on attention-like magnitudes.
TEST(AttentionKernels, SimdLevelsAgreeWithTheReference) {
  std::mt19937_64 rng(13);
  const AttnKernels& ref = AttnKernelsFor(IsaLevel::kScalar);
  for (IsaLevel level : Levels()) {
    if (level == IsaLevel::kScalar) continue;
    const AttnKernels& k = AttnKernelsFor(level);
    for (int64_t d : {64, 128, 256}) {
      const int64_t n = 517, stride = 4 * d;
      const std::vector<float> q = Random(static_cast<size_t>(d), rng, -3.0f, 3.0f);
      const std::vector<float> KV = Random(static_cast<size_t>((n - 1) * stride + d), rng, -3.0f, 3.0f);
      std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
      ref.scores(q.data(), KV.data(), stride, n, d, 0.125f, a.data());
      k.scores(q.data(), KV.data(), stride, n, d, 0.125f, b.data());
      for (int64_t j = 0; j < n; ++j) EXPECT_NEAR(a[j], b[j], 2e-4f * std::sqrt(static_cast<float>(d))) << j;
      std::vector<float> p = Random(static_cast<size_t>(n), rng, 0.0f, 2.0f / static_cast<float>(n));
      std::vector<float> oa(static_cast<size_t>(d), 0.0f), ob(static_cast<size_t>(d), 0.0f);
      ref.mix(p.data(), KV.data(), stride, n, d, oa.data());
      k.mix(p.data(), KV.data(), stride, n, d, ob.data());
      for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(oa[i], ob[i], 1e-4f) << i;
    }
  }
}

// The blocked kernel: every level (the reference row by row; AVX2 and
// AVX-512 flash-style) against a double-precision softmax attention, for
// rows of different key counts (causal, random, none), key counts across
// block edges, head sizes with every tail, and rows kDk/kDv apart in a
// cache of several KV heads. Nothing is written past o[dv).
double ExactRow(const float* q, const float* K, const float* V, int64_t ks, int64_t vs, int64_t n, int64_t dk,
                int64_t dv, float scale, std::vector<double>& out) {
  out.assign(static_cast<size_t>(dv), 0.0);
  if (n <= 0) return 0.0;
  std::vector<double> s(static_cast<size_t>(n));
  double mx = -1e300;
  for (int64_t j = 0; j < n; ++j) {
    double d = 0.0;
    for (int64_t i = 0; i < dk; ++i) d += static_cast<double>(q[i]) * static_cast<double>(K[j * ks + i]);
    s[static_cast<size_t>(j)] = d * static_cast<double>(scale);
    mx = std::max(mx, s[static_cast<size_t>(j)]);
  }
  double sum = 0.0;
  for (double& x : s) sum += (x = std::exp(x - mx));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < dv; ++i) out[static_cast<size_t>(i)] += s[static_cast<size_t>(j)] / sum * static_cast<double>(V[j * vs + i]);
  return sum;
}

TEST(AttentionKernels, BlockedAttentionMatchesDoublePrecision) {
  std::mt19937_64 rng(21);
  constexpr int64_t kHeadDims[] = {1, 7, 16, 17, 64, 65, 128, 129};
  constexpr int64_t kRowCounts[] = {1, 3, 4, 5, 8, 32, 33};
  constexpr int64_t kMaxKeys[] = {1, 2, 63, 64, 65, 127, 130, 200};
  for (IsaLevel level : Levels()) {
    const AttnKernels& k = AttnKernelsFor(level);
    ASSERT_NE(k.block, nullptr);
    for (int64_t d : kHeadDims) {
      const int64_t dk = d, dv = d == 17 ? 33 : d;  // Dk != Dv too
      for (int64_t rows : kRowCounts) {
        for (int64_t n_max : kMaxKeys) {
          for (int pattern = 0; pattern < 3; ++pattern) {
            SCOPED_TRACE(std::string(IsaName(level)) + " dk=" + std::to_string(dk) + " dv=" + std::to_string(dv) +
                         " rows=" + std::to_string(rows) + " keys=" + std::to_string(n_max) +
                         " pattern=" + std::to_string(pattern));
            const int64_t ks = 2 * dk + 3, vs = 2 * dv + 1;  // other KV heads between rows
            const std::vector<float> K = Random(static_cast<size_t>((n_max - 1) * ks + dk), rng);
            const std::vector<float> V = Random(static_cast<size_t>((n_max - 1) * vs + dv), rng);
            // Large scale on pattern 2: a peaked softmax (scores up to ~30).
            const float scale = pattern == 2 ? 3.0f : 1.0f / std::sqrt(static_cast<float>(dk));
            std::vector<std::vector<float>> q(static_cast<size_t>(rows)), o(static_cast<size_t>(rows));
            std::vector<const float*> qp;
            std::vector<float*> op;
            std::vector<int64_t> nk;
            std::uniform_int_distribution<int64_t> pick(0, n_max);
            for (int64_t r = 0; r < rows; ++r) {
              q[static_cast<size_t>(r)] = Random(static_cast<size_t>(dk), rng);
              o[static_cast<size_t>(r)].assign(static_cast<size_t>(dv) + 1, kSentinel);
              qp.push_back(q[static_cast<size_t>(r)].data());
              op.push_back(o[static_cast<size_t>(r)].data());
              // 0: causal (the last row sees every key), 1: random counts
              // (0 included), 2: every row all keys.
              nk.push_back(pattern == 0 ? std::max<int64_t>(1, n_max - (rows - 1 - r) / 2)
                           : pattern == 1 ? pick(rng)
                                          : n_max);
            }
            std::vector<float> scratch(static_cast<size_t>(std::max(AttnBlockScratchFloats(rows, dk, dv), n_max)),
                                       kSentinel);
            const AttnBlockArgs a{.q = qp.data(), .n_keys = nk.data(), .o = op.data(), .rows = rows,
                                  .K = K.data(), .k_stride = ks * 4, .V = V.data(), .v_stride = vs * 4,
                                  .dk = dk, .dv = dv, .scale = scale, .scratch = scratch.data()};
            k.block(a);
            std::vector<double> exact;
            for (int64_t r = 0; r < rows; ++r) {
              ExactRow(qp[static_cast<size_t>(r)], K.data(), V.data(), ks, vs, nk[static_cast<size_t>(r)], dk, dv,
                       scale, exact);
              for (int64_t i = 0; i < dv; ++i)
                ASSERT_NEAR(static_cast<double>(op[static_cast<size_t>(r)][i]), exact[static_cast<size_t>(i)],
                            2e-6 * (1.0 + std::fabs(exact[static_cast<size_t>(i)])) * std::sqrt(static_cast<double>(dk)))
                    << "row " << r << " of " << nk[static_cast<size_t>(r)] << " keys, value " << i;
              ASSERT_EQ(op[static_cast<size_t>(r)][dv], kSentinel) << "wrote past o[dv)";
            }
          }
        }
      }
    }
  }
}

// Sliding windows and sinks (gpt-oss): row r sees keys [first_key[r],
// n_keys[r]) and its softmax has one more logit, sink[r], that weighs no
// value. Every level against double precision, windows starting inside and
// at the edges of key blocks, rows whose window is empty (zeros, or only the
// sink: zeros too).
TEST(AttentionKernels, BlockedAttentionWithWindowsAndSinksMatchesDoublePrecision) {
  std::mt19937_64 rng(23);
  for (IsaLevel level : Levels()) {
    const AttnKernels& k = AttnKernelsFor(level);
    for (int64_t d : {16, 17, 64, 65}) {
      const int64_t dk = d, dv = d;
      for (int64_t rows : {1, 5, 33}) {
        for (int64_t n_max : {1, 63, 65, 130, 200}) {
          for (int with_sink = 0; with_sink < 2; ++with_sink) {
            SCOPED_TRACE(std::string(IsaName(level)) + " d=" + std::to_string(d) + " rows=" + std::to_string(rows) +
                         " keys=" + std::to_string(n_max) + " sink=" + std::to_string(with_sink));
            const int64_t ks = dk + 5, vs = dv + 3;
            const std::vector<float> K = Random(static_cast<size_t>((n_max - 1) * ks + dk), rng);
            const std::vector<float> V = Random(static_cast<size_t>((n_max - 1) * vs + dv), rng);
            const float scale = 1.0f / std::sqrt(static_cast<float>(dk));
            std::vector<std::vector<float>> q(static_cast<size_t>(rows)), o(static_cast<size_t>(rows));
            std::vector<const float*> qp;
            std::vector<float*> op;
            std::vector<int64_t> nk, first;
            std::vector<float> sink;
            std::uniform_int_distribution<int64_t> pick(0, n_max);
            std::uniform_real_distribution<float> logit(-3.0f, 3.0f);
            for (int64_t r = 0; r < rows; ++r) {
              q[static_cast<size_t>(r)] = Random(static_cast<size_t>(dk), rng);
              o[static_cast<size_t>(r)].assign(static_cast<size_t>(dv) + 1, kSentinel);
              qp.push_back(q[static_cast<size_t>(r)].data());
              op.push_back(o[static_cast<size_t>(r)].data());
              const int64_t n = std::max<int64_t>(1, n_max - (rows - 1 - r) / 2);  // causal
              nk.push_back(n);
              // A window of 1..n keys, sometimes one ending on a block edge, sometimes empty.
              const int64_t w = r % 7 == 3 ? 0 : r % 5 == 2 ? std::min<int64_t>(n, 64) : 1 + pick(rng) % n;
              first.push_back(n - w);
              sink.push_back(logit(rng));
            }
            std::vector<float> scratch(static_cast<size_t>(std::max(AttnBlockScratchFloats(rows, dk, dv), n_max)),
                                       kSentinel);
            const AttnBlockArgs a{.q = qp.data(), .n_keys = nk.data(), .o = op.data(), .rows = rows,
                                  .K = K.data(), .k_stride = ks * 4, .V = V.data(), .v_stride = vs * 4,
                                  .dk = dk, .dv = dv, .scale = scale, .scratch = scratch.data(),
                                  .first_key = first.data(), .sink = with_sink ? sink.data() : nullptr};
            k.block(a);
            for (int64_t r = 0; r < rows; ++r) {
              const auto ur = static_cast<size_t>(r);
              const int64_t f = first[ur], n = nk[ur] - f;
              std::vector<double> exact;
              const double sum = ExactRow(qp[ur], K.data() + f * ks, V.data() + f * vs, ks, vs, n, dk, dv, scale, exact);
              if (with_sink && n > 0) {
                // The same softmax with one more logit: the values scale by sum / (sum + exp(sink - max)).
                double mx = -1e300;
                for (int64_t j = 0; j < n; ++j) {
                  double dot = 0.0;
                  for (int64_t i = 0; i < dk; ++i)
                    dot += static_cast<double>(qp[ur][i]) * static_cast<double>(K[static_cast<size_t>((f + j) * ks + i)]);
                  mx = std::max(mx, dot * static_cast<double>(scale));
                }
                const double extra = std::exp(static_cast<double>(sink[ur]) - mx);
                for (double& x : exact) x *= sum / (sum + extra);
              }
              for (int64_t i = 0; i < dv; ++i)
                ASSERT_NEAR(static_cast<double>(op[ur][i]), exact[static_cast<size_t>(i)],
                            2e-6 * (1.0 + std::fabs(exact[static_cast<size_t>(i)])) * std::sqrt(static_cast<double>(dk)))
                    << "row " << r << ": keys " << f << ".." << nk[ur] << ", value " << i;
              ASSERT_EQ(op[ur][dv], kSentinel) << "wrote past o[dv)";
            }
          }
        }
      }
    }
  }
}

// 64 readable pages, then one that cannot be read: rows placed to end at the
// boundary fault on any read past them.
Result<GuardedMemory> MemoryBeforeAGuardPage() {
  const size_t page = static_cast<size_t>(PageBytes());
  auto region = GuardedMemory::Allocate(65 * page, "attention guard");
  if (!region.ok()) return region.status();
  STRATA_RETURN_IF_ERROR(region->SetAccess(GuardedMemory::Access::kNone, 64 * page, page));
  return region;
}

// The blocked kernel reads no key or value row past the last one any row
// sees: K and V end at an inaccessible page.
TEST(AttentionKernels, BlockedAttentionReadsNothingPastTheLastKey) {
  auto region = MemoryBeforeAGuardPage();
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  float* end = static_cast<float*>(static_cast<void*>(region->data() + region->size() - PageBytes()));
  std::mt19937_64 rng(22);
  for (IsaLevel level : Levels()) {
    const AttnKernels& k = AttnKernelsFor(level);
    for (int64_t d : {int64_t{7}, int64_t{64}, int64_t{129}}) {
      for (int64_t n : {int64_t{1}, int64_t{64}, int64_t{65}, int64_t{100}}) {
        SCOPED_TRACE(std::string(IsaName(level)) + " d=" + std::to_string(d) + " n=" + std::to_string(n));
        const int64_t stride = d + 1, span = (n - 1) * stride + d;
        float* K = end - span;
        const std::vector<float> rows = Random(static_cast<size_t>(span), rng);
        std::copy(rows.begin(), rows.end(), K);
        const std::vector<float> q0 = Random(static_cast<size_t>(d), rng), q1 = Random(static_cast<size_t>(d), rng);
        const float* qp[2] = {q0.data(), q1.data()};
        std::vector<float> o0(static_cast<size_t>(d)), o1(static_cast<size_t>(d));
        float* op[2] = {o0.data(), o1.data()};
        const int64_t nk[2] = {n - 1, n};
        std::vector<float> scratch(static_cast<size_t>(std::max(AttnBlockScratchFloats(2, d, d), n)));
        // The same rows as keys and values.
        const AttnBlockArgs a{.q = qp, .n_keys = nk, .o = op, .rows = 2, .K = K, .k_stride = stride * 4,
                              .V = K, .v_stride = stride * 4, .dk = d, .dv = d, .scale = 0.1f,
                              .scratch = scratch.data()};
        k.block(a);
        std::vector<double> exact;
        ExactRow(q1.data(), K, K, stride, stride, n, d, d, 0.1f, exact);
        for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(static_cast<double>(o1[static_cast<size_t>(i)]), exact[static_cast<size_t>(i)], 1e-5);
      }
    }
  }
}


// A KV cache of F16 or Q8_0 rows (kv_type.h): `n` rows of `d` values, each
// row `stride` bytes from the last (other heads between), encoded as the
// backend stores them, and the values the kernels must read back (decoded
// with KvValueRef), `fstride` floats apart.
struct TypedRows {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
  int64_t stride = 0, fstride = 0;
};
TypedRows EncodeRows(KvType t, int64_t n, int64_t d, std::mt19937_64& rng, uint8_t* at_end = nullptr) {
  TypedRows r;
  const int64_t head = KvHeadBytes(t, d);
  r.stride = 2 * head + 6;  // another head and some padding between rows
  r.fstride = d;
  r.bytes.assign(static_cast<size_t>((n - 1) * r.stride + head), 0xA5);
  r.values.resize(static_cast<size_t>(n * d));
  for (int64_t j = 0; j < n; ++j) {
    // Rows of different magnitudes: Q8_0 scales differ per block.
    const std::vector<float> x = Random(static_cast<size_t>(d), rng, -1.0f - j % 3, 1.0f + j % 3);
    uint8_t* row = r.bytes.data() + j * r.stride;
    if (t == KvType::kF16) Fp32RowToFp16Unchecked(x.data(), row, d);
    else QuantizeRowQ8_0Unchecked(Q8_0Rule::kGgmlX86Simd, x.data(), row, d);
    for (int64_t i = 0; i < d; ++i) r.values[static_cast<size_t>(j * d + i)] = KvValueRef(row, t, i);
  }
  if (at_end) std::copy(r.bytes.begin(), r.bytes.end(), at_end - r.bytes.size());
  return r;
}

// The blocked kernel on F16 and Q8_0 caches: every level against a double-
// precision attention over the decoded values (so the only differences are
// float summation order and exp), head sizes with every tail F16 allows and
// the multiples of 32 Q8_0 needs, 1-32 rows (from 4 tiles of rows on, a block
// is converted to F32 once: both ways are covered), key counts across block
// edges; the reference level (--reference's loops) against the same.
TEST(AttentionKernels, BlockedAttentionReadsF16AndQ8_0Caches) {
  std::mt19937_64 rng(23);
  for (KvType t : {KvType::kF16, KvType::kQ8_0}) {
    const std::vector<int64_t> dims = t == KvType::kF16 ? std::vector<int64_t>{1, 7, 16, 17, 64, 65, 128, 129}
                                                        : std::vector<int64_t>{32, 64, 96, 128, 256};
    for (IsaLevel level : Levels()) {
      const AttnKernels& k = AttnKernelsFor(level);
      for (int64_t d : dims) {
        for (int64_t rows : {int64_t{1}, int64_t{4}, int64_t{5}, int64_t{8}, int64_t{17}, int64_t{32}}) {
          for (int64_t n_max : {int64_t{1}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{130}}) {
            SCOPED_TRACE(std::string(KvTypeName(t)) + " " + std::string(IsaName(level)) + " d=" + std::to_string(d) +
                         " rows=" + std::to_string(rows) + " keys=" + std::to_string(n_max));
            const TypedRows K = EncodeRows(t, n_max, d, rng), V = EncodeRows(t, n_max, d, rng);
            std::vector<std::vector<float>> q(static_cast<size_t>(rows)), o(static_cast<size_t>(rows));
            std::vector<const float*> qp;
            std::vector<float*> op;
            std::vector<int64_t> nk;
            for (int64_t r = 0; r < rows; ++r) {
              q[static_cast<size_t>(r)] = Random(static_cast<size_t>(d), rng);
              o[static_cast<size_t>(r)].assign(static_cast<size_t>(d) + 1, kSentinel);
              qp.push_back(q[static_cast<size_t>(r)].data());
              op.push_back(o[static_cast<size_t>(r)].data());
              nk.push_back(std::max<int64_t>(1, n_max - (rows - 1 - r)));  // causal
            }
            std::vector<float> scratch(static_cast<size_t>(std::max(AttnBlockScratchFloats(rows, d, d), n_max)), kSentinel);
            const AttnBlockArgs a{.q = qp.data(), .n_keys = nk.data(), .o = op.data(), .rows = rows,
                                  .K = K.bytes.data(), .k_stride = K.stride, .V = V.bytes.data(),
                                  .v_stride = V.stride, .kv = t, .dk = d, .dv = d,
                                  .scale = 1.0f / std::sqrt(static_cast<float>(d)), .scratch = scratch.data()};
            k.block(a);
            std::vector<double> exact;
            for (int64_t r = 0; r < rows; ++r) {
              ExactRow(qp[static_cast<size_t>(r)], K.values.data(), V.values.data(), d, d, nk[static_cast<size_t>(r)],
                       d, d, a.scale, exact);
              for (int64_t i = 0; i < d; ++i)
                ASSERT_NEAR(static_cast<double>(op[static_cast<size_t>(r)][i]), exact[static_cast<size_t>(i)],
                            2e-6 * (1.0 + 3.0 * std::fabs(exact[static_cast<size_t>(i)])) * std::sqrt(static_cast<double>(d)))
                    << "row " << r << " value " << i;
              ASSERT_EQ(op[static_cast<size_t>(r)][d], kSentinel) << "wrote past o[d)";
            }
          }
        }
      }
    }
  }
}

// F16 and Q8_0 rows that end at an inaccessible page: no load reads past the
// last key's row (a vector load of a 16-bit or 8-bit row must stay inside it).
TEST(AttentionKernels, TypedCachesReadNothingPastTheLastKey) {
  auto region = MemoryBeforeAGuardPage();
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  uint8_t* end = region->data() + region->size() - PageBytes();
  std::mt19937_64 rng(24);
  for (KvType t : {KvType::kF16, KvType::kQ8_0}) {
    for (IsaLevel level : Levels()) {
      const AttnKernels& k = AttnKernelsFor(level);
      for (int64_t d : t == KvType::kF16 ? std::vector<int64_t>{7, 17, 64, 129} : std::vector<int64_t>{32, 128}) {
        for (int64_t n : {int64_t{1}, int64_t{64}, int64_t{65}}) {
          SCOPED_TRACE(std::string(KvTypeName(t)) + " " + std::string(IsaName(level)) + " d=" + std::to_string(d) +
                       " n=" + std::to_string(n));
          const TypedRows rows = EncodeRows(t, n, d, rng, end);
          const uint8_t* K = end - rows.bytes.size();
          const std::vector<float> q0 = Random(static_cast<size_t>(d), rng), q1 = Random(static_cast<size_t>(d), rng);
          const float* qp[2] = {q0.data(), q1.data()};
          std::vector<float> o0(static_cast<size_t>(d)), o1(static_cast<size_t>(d));
          float* op[2] = {o0.data(), o1.data()};
          const int64_t nk[2] = {n - 1, n};
          std::vector<float> scratch(static_cast<size_t>(std::max(AttnBlockScratchFloats(2, d, d), n)));
          // The same rows as keys and values.
          const AttnBlockArgs a{.q = qp, .n_keys = nk, .o = op, .rows = 2, .K = K, .k_stride = rows.stride,
                                .V = K, .v_stride = rows.stride, .kv = t, .dk = d, .dv = d, .scale = 0.1f,
                                .scratch = scratch.data()};
          k.block(a);
          std::vector<double> exact;
          ExactRow(q1.data(), rows.values.data(), rows.values.data(), d, d, n, d, d, 0.1f, exact);
          for (int64_t i = 0; i < d; ++i)
            EXPECT_NEAR(static_cast<double>(o1[static_cast<size_t>(i)]), exact[static_cast<size_t>(i)], 1e-5 * (1 + std::fabs(exact[static_cast<size_t>(i)])));
        }
      }
    }
  }
}

// KvValueRef decodes what the backend stores: F16 values round-trip exactly
// for halves, Q8_0 values are d * q of their block.
TEST(AttentionKernels, TypedValuesDecodeAsStored) {
  const float x[32] = {1.0f, -2.5f, 0.333f, 65504.0f, -1e-3f, 0.0f};
  uint8_t h[64];
  Fp32RowToFp16Unchecked(x, h, 32);
  EXPECT_EQ(KvValueRef(h, KvType::kF16, 0), 1.0f);
  EXPECT_EQ(KvValueRef(h, KvType::kF16, 1), -2.5f);
  EXPECT_EQ(KvValueRef(h, KvType::kF16, 3), 65504.0f);
  EXPECT_NEAR(KvValueRef(h, KvType::kF16, 2), 0.333f, 1e-4f);
  uint8_t q[kKvQ8BlockBytes];
  QuantizeRowQ8_0Unchecked(Q8_0Rule::kGgmlX86Simd, x, q, 32);
  const float scale = KvValueRef(q, KvType::kQ8_0, 3) / 127.0f;  // the largest |x| is q = 127
  EXPECT_NEAR(scale, 65504.0f / 127.0f, 0.5f);
  EXPECT_EQ(KvValueRef(q, KvType::kQ8_0, 5), 0.0f);
  EXPECT_EQ(KvValueRef(q, KvType::kQ8_0, 1), 0.0f);  // -2.5 is q = 0 at this scale
  EXPECT_EQ(KvHeadBytes(KvType::kQ8_0, 128), 136);
  EXPECT_EQ(KvHeadBytes(KvType::kF16, 128), 256);
  EXPECT_FALSE(KvTypeFits(KvType::kQ8_0, 80));
}

// The gated delta rule (delta_rule.h): the AVX2 / AVX-512 versions (two
// visits of S per token, fused multiply-adds) against the reference, for the
// state and every token's output, over several tokens (errors carry through
// S), at the real head size (128) and at sizes with strips of one vector and
// columns past the last whole vector (tails).
TEST(DeltaRule, SimdEqualsTheReferenceWithinRounding) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), dec(0.6f, 1.0f), bet(0.0f, 1.0f);
  struct Shape { int64_t dk, dv, n; };
  for (const Shape sh : {Shape{128, 128, 6}, Shape{16, 20, 3}, Shape{8, 37, 4}, Shape{32, 72, 2}, Shape{5, 3, 2},
                         Shape{64, 16, 1}}) {
    SCOPED_TRACE(testing::Message() << "dk " << sh.dk << " dv " << sh.dv << " n " << sh.n);
    const int64_t dk = sh.dk, dv = sh.dv, n = sh.n;
    std::vector<float> qs(static_cast<size_t>(n * dk)), ks(qs.size()), vs(static_cast<size_t>(n * dv));
    std::vector<float> decay(static_cast<size_t>(n)), beta(decay.size()), S0(static_cast<size_t>(dk * dv));
    // q and k of unit length (as the layer's L2 norm leaves them), q scaled.
    for (int64_t t = 0; t < n; ++t) {
      float nq = 0.0f, nk = 0.0f;
      for (int64_t i = 0; i < dk; ++i) {
        qs[static_cast<size_t>(t * dk + i)] = unit(rng);
        ks[static_cast<size_t>(t * dk + i)] = unit(rng);
        nq += qs[static_cast<size_t>(t * dk + i)] * qs[static_cast<size_t>(t * dk + i)];
        nk += ks[static_cast<size_t>(t * dk + i)] * ks[static_cast<size_t>(t * dk + i)];
      }
      for (int64_t i = 0; i < dk; ++i) {
        qs[static_cast<size_t>(t * dk + i)] /= std::sqrt(nq) * std::sqrt(static_cast<float>(dk));
        ks[static_cast<size_t>(t * dk + i)] /= std::sqrt(nk);
      }
      decay[static_cast<size_t>(t)] = dec(rng);
      beta[static_cast<size_t>(t)] = bet(rng);
    }
    for (float& x : vs) x = unit(rng);
    for (float& x : S0) x = unit(rng);
    std::vector<const float*> qp, kp, vp;
    for (int64_t t = 0; t < n; ++t) {
      qp.push_back(&qs[static_cast<size_t>(t * dk)]);
      kp.push_back(&ks[static_cast<size_t>(t * dk)]);
      vp.push_back(&vs[static_cast<size_t>(t * dv)]);
    }
    // The first `tokens` tokens from S0.
    auto run = [&](DeltaRuleFn fn, int64_t tokens, std::vector<float>& S, std::vector<float>& out) {
      S = S0;
      out.assign(static_cast<size_t>(tokens * dv + 1), 7.0f);  // one guard value past the last row
      std::vector<float*> op;
      for (int64_t t = 0; t < tokens; ++t) op.push_back(&out[static_cast<size_t>(t * dv)]);
      std::vector<float> scratch(static_cast<size_t>(DeltaRuleScratchFloats(dv)));
      fn(tokens, dk, dv, qp.data(), kp.data(), vp.data(), decay.data(), beta.data(), S.data(), op.data(),
         scratch.data());
    };
    std::vector<float> S_ref, o_ref;
    run(DeltaRuleRef, n, S_ref, o_ref);
    // The reference is the rule: one token by hand, in double.
    {
      const std::vector<double> q1(qs.begin(), qs.begin() + dk), k1(ks.begin(), ks.begin() + dk),
          v1(vs.begin(), vs.begin() + dv);
      const double dec0 = static_cast<double>(decay[0]), beta0 = static_cast<double>(beta[0]);
      std::vector<double> S(S0.begin(), S0.end()), kv(static_cast<size_t>(dv), 0.0), d(kv.size()), o(kv.size(), 0.0);
      for (double& x : S) x *= dec0;
      for (size_t i = 0; i < k1.size(); ++i)
        for (size_t j = 0; j < kv.size(); ++j) kv[j] += S[i * kv.size() + j] * k1[i];
      for (size_t j = 0; j < kv.size(); ++j) d[j] = beta0 * (v1[j] - kv[j]);
      for (size_t i = 0; i < k1.size(); ++i)
        for (size_t j = 0; j < kv.size(); ++j) {
          S[i * kv.size() + j] += k1[i] * d[j];
          o[j] += S[i * kv.size() + j] * q1[i];
        }
      std::vector<float> S1, o1;
      run(DeltaRuleRef, 1, S1, o1);
      for (size_t j = 0; j < o.size(); ++j) EXPECT_NEAR(static_cast<double>(o1[j]), o[j], 1e-5) << "o " << j;
      for (size_t i = 0; i < S.size(); ++i) EXPECT_NEAR(static_cast<double>(S1[i]), S[i], 1e-5) << "S " << i;
    }
    for (IsaLevel isa : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
      if (!CpuSupports(isa)) continue;
      SCOPED_TRACE(IsaName(isa));
      ASSERT_NE(DeltaRuleFor(isa), &DeltaRuleRef);
      std::vector<float> S_got, o_got;
      run(DeltaRuleFor(isa), n, S_got, o_got);
      for (size_t i = 0; i < S_ref.size(); ++i) ASSERT_NEAR(S_got[i], S_ref[i], 2e-5f * (1.0f + std::fabs(S_ref[i]))) << "S " << i;
      for (size_t i = 0; i < o_ref.size(); ++i) ASSERT_NEAR(o_got[i], o_ref[i], 2e-5f * (1.0f + std::fabs(o_ref[i]))) << "o " << i;
      EXPECT_EQ(o_got.back(), 7.0f);  // nothing written past the last row
    }
  }
}

}  // namespace
}  // namespace strata::kernels
