#pragma once
// The blocked attention kernel (attention.h AttnBlockFn), written once over a
// SIMD traits type and instantiated by attention_avx2.cc and
// attention_avx512.cc with their own traits. Everything here is in an
// anonymous namespace: each ISA file gets its own copy, compiled with its own
// flags, and no copy can reach a baseline caller through the linker.
//
// No std:: algorithm or math function is called here: an inline function of
// a shared header instantiated with these flags could be picked by the linker
// for baseline code (x86_simd.h says the same).
//
// For a block of query rows that share one KV head (consecutive tokens of one
// sequence x the query heads of the group), keys are visited in blocks of
// kAttnKeyBlock:
//   1. the scores of RB rows x KB keys at a time: RB x KB accumulators over
//      the head's dimensions, so each query and key vector is loaded once per
//      tile (a transposed key block was tried: its scalar transpose cost more
//      than the horizontal sums it saves, most at decode's 8 rows);
//   2. each row's scores past its own key count (causal) are masked, and an
//      online softmax keeps the row's running maximum m and sum l: the
//      output so far is rescaled by exp(m_old - m_new);
//   3. the probabilities times the value block are added to the output, RB
//      rows x CB vectors of dimensions at a time.
// K and V are thus read once per block of rows instead of once per row, and
// exp runs vectorized (a Cephes-style polynomial, ~1 ulp). K and V are read
// as stored (F32, F16 or Q8_0: E), converted to floats as they are loaded.

#include <cstdint>

#include "runtime/kernels/attention.h"

namespace strata::kernels {
namespace {

constexpr float kNegInf = -__builtin_inff();
inline int64_t MaxI(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t MinI(int64_t a, int64_t b) { return a < b ? a : b; }
inline float MaxF(float a, float b) { return a > b ? a : b; }
inline void Fill(float* p, int64_t n, float v) {
  for (int64_t i = 0; i < n; ++i) p[i] = v;
}

// exp(x) for a vector: x clamped to [-87.34, 88.38], x = n ln2 + r with
// |r| <= ln2/2 (ln2 in two parts), a degree-7 polynomial for e^r, 2^n from the
// exponent bits.
template <class V>
inline typename V::T ExpV(typename V::T x) {
  using T = typename V::T;
  x = V::Min(V::Max(x, V::Set1(-87.3365478515625f)), V::Set1(88.3762626647949f));
  const T fx = V::Floor(V::Fma(x, V::Set1(1.44269504088896341f), V::Set1(0.5f)));
  x = V::Fma(fx, V::Set1(-0.693359375f), x);
  x = V::Fma(fx, V::Set1(2.12194440e-4f), x);
  T y = V::Set1(1.9875691500e-4f);
  y = V::Fma(y, x, V::Set1(1.3981999507e-3f));
  y = V::Fma(y, x, V::Set1(8.3334519073e-3f));
  y = V::Fma(y, x, V::Set1(4.1665795894e-2f));
  y = V::Fma(y, x, V::Set1(1.6666665459e-1f));
  y = V::Fma(y, x, V::Set1(5.0000001201e-1f));
  y = V::Fma(y, V::Mul(x, x), V::Add(x, V::Set1(1.0f)));
  return V::Mul(y, V::Pow2(fx));
}

// SwiGLU's gate and SiLU (swiglu.h): g[i] = silu(g[i]) (* u[i] with kGate)
// with ExpV, in the reference's order of operations (x / (1 + e), then times
// u). The last n % kLanes values go through a padded vector: the same
// operations, so a value's bits do not depend on where it falls.
template <class V, bool kGate>
void SiluRowV(float* g, const float* u, int64_t n) {
  using T = typename V::T;
  constexpr int L = V::kLanes;
  const T one = V::Set1(1.0f), lim = V::Set1(-88.3762626647949f), neg_zero = V::Set1(-0.0f);
  // Below ExpV's clamp, exp(-x) overflows in the reference: x / inf = -0.
  auto silu = [=](T x) {
    const T s = V::Div(x, V::Add(one, ExpV<V>(V::Sub(V::Zero(), x))));
    return V::SelectLess(x, lim, neg_zero, s);
  };
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    if constexpr (kGate) V::Store(g + i, V::Mul(silu(V::Load(g + i)), V::Load(u + i)));
    else V::Store(g + i, silu(V::Load(g + i)));
  }
  if (i < n) {
    float xg[L], xu[L];
    for (int j = 0; j < L; ++j) {
      xg[j] = i + j < n ? g[i + j] : 0.0f;
      if constexpr (kGate) xu[j] = i + j < n ? u[i + j] : 0.0f;
    }
    if constexpr (kGate) V::Store(xg, V::Mul(silu(V::Load(xg)), V::Load(xu)));
    else V::Store(xg, silu(V::Load(xg)));
    for (int64_t j = 0; i + j < n; ++j) g[i + j] = xg[j];
  }
}

// Values d .. d + kLanes of a K or V row stored as E, as floats. A Q8_0
// vector never straddles a block (kLanes divides 32, and Q8_0 rows have no
// dimension tail): d * q with the block's F16 scale, as KvValueRef.
template <class V, KvType E>
inline typename V::T LoadKv(const uint8_t* row, int64_t d) {
  if constexpr (E == KvType::kF32) {
    return V::Load(reinterpret_cast<const float*>(row) + d);
  } else if constexpr (E == KvType::kF16) {
    return V::LoadHalf(row + 2 * d);
  } else {
    const uint8_t* blk = row + d / kKvQ8Block * kKvQ8BlockBytes;
    const float scale = V::HalfToFloat(static_cast<uint16_t>(blk[0] | (blk[1] << 8)));
    return V::Mul(V::Set1(scale), V::LoadI8(blk + 2 + d % kKvQ8Block));
  }
}
// Value d of such a row (dimension tails, which only F32 and F16 rows have):
// F16 through KvValueRef, the reference's decoder (out of line, compiled for
// the baseline; F16C's conversion is exact, so it gives the same value).
template <class V, KvType E>
inline float KvScalar(const uint8_t* row, int64_t d) {
  if constexpr (E == KvType::kF32) {
    return reinterpret_cast<const float*>(row)[d];
  } else {
    return KvValueRef(row, E, d);
  }
}

// s[i][c] = scale * dot(q_i, key j0 + c) for RB rows and KB keys: RB x KB
// accumulators over the head's dimensions (each query and key vector loaded
// once per step), then one horizontal sum per output; a dimension tail past
// whole vectors is added in scalar code. s rows are kAttnKeyBlock apart; key
// rows are ks bytes apart.
template <class V, KvType E, int RB, int KB>
inline void ScoresTile(const float* const* q, const uint8_t* K, int64_t ks, int64_t dk, float scale, float* s) {
  using T = typename V::T;
  constexpr int64_t kKeys = kAttnKeyBlock;
  T acc[RB][KB];
  for (int i = 0; i < RB; ++i)
    for (int c = 0; c < KB; ++c) acc[i][c] = V::Zero();
  const int64_t dvec = dk / V::kLanes * V::kLanes;
  for (int64_t d = 0; d < dvec; d += V::kLanes) {
    T kv[KB];
    for (int c = 0; c < KB; ++c) kv[c] = LoadKv<V, E>(K + c * ks, d);
    for (int i = 0; i < RB; ++i) {
      const T qv = V::Load(q[i] + d);
      for (int c = 0; c < KB; ++c) acc[i][c] = V::Fma(qv, kv[c], acc[i][c]);
    }
  }
  for (int i = 0; i < RB; ++i) {
    float out[KB];
    if constexpr (KB == 4) {
      V::Sum4(acc[i][0], acc[i][1], acc[i][2], acc[i][3], out);
    } else {
      for (int c = 0; c < KB; ++c) out[c] = V::ReduceAdd(acc[i][c]);
    }
    for (int64_t d = dvec; d < dk; ++d)
      for (int c = 0; c < KB; ++c) out[c] += q[i][d] * KvScalar<V, E>(K + c * ks, d);
    for (int c = 0; c < KB; ++c) s[i * kKeys + c] = out[c] * scale;
  }
}

// o_r[c0 ..) += sum over j < nb of p[r][j] * V[j][c0 ..) for RB rows and CB
// vectors of dimensions; value rows are v_stride bytes apart.
template <class V, KvType E, int RB, int CB>
inline void MixTile(const float* p, float* const* o, int64_t c0, const uint8_t* Vb, int64_t v_stride, int64_t nb) {
  using T = typename V::T;
  constexpr int64_t kKeys = kAttnKeyBlock;
  T acc[RB][CB];
  for (int i = 0; i < RB; ++i)
    for (int c = 0; c < CB; ++c) acc[i][c] = V::Load(o[i] + c0 + c * V::kLanes);
  for (int64_t j = 0; j < nb; ++j) {
    const uint8_t* vj = Vb + j * v_stride;
    T vv[CB];
    for (int c = 0; c < CB; ++c) vv[c] = LoadKv<V, E>(vj, c0 + c * V::kLanes);
    for (int i = 0; i < RB; ++i) {
      const T pv = V::Set1(p[i * kKeys + j]);
      for (int c = 0; c < CB; ++c) acc[i][c] = V::Fma(pv, vv[c], acc[i][c]);
    }
  }
  for (int i = 0; i < RB; ++i)
    for (int c = 0; c < CB; ++c) V::Store(o[i] + c0 + c * V::kLanes, acc[i][c]);
}

// Scores of all R rows against nb keys (rows ks bytes apart, stored as E).
template <class V, KvType E, int RB, int KB>
inline void ScoresBlock(const AttnBlockArgs& a, const uint8_t* Kb, int64_t ks, int64_t nb, float* s) {
  constexpr int64_t kKeys = kAttnKeyBlock;
  const int64_t R = a.rows;
  int64_t r = 0;
  for (; r + RB <= R; r += RB) {
    int64_t j = 0;
    for (; j + KB <= nb; j += KB) ScoresTile<V, E, RB, KB>(a.q + r, Kb + j * ks, ks, a.dk, a.scale, s + r * kKeys + j);
    for (; j < nb; ++j) ScoresTile<V, E, RB, 1>(a.q + r, Kb + j * ks, ks, a.dk, a.scale, s + r * kKeys + j);
  }
  for (; r < R; ++r) {
    int64_t j = 0;
    for (; j + KB <= nb; j += KB) ScoresTile<V, E, 1, KB>(a.q + r, Kb + j * ks, ks, a.dk, a.scale, s + r * kKeys + j);
    for (; j < nb; ++j) ScoresTile<V, E, 1, 1>(a.q + r, Kb + j * ks, ks, a.dk, a.scale, s + r * kKeys + j);
  }
}

// Probabilities times nb value rows (vs bytes apart, stored as E), added into
// every row's output.
template <class V, KvType E, int RB, int CBM>
inline void MixBlock(const AttnBlockArgs& a, const float* s, const uint8_t* Vb, int64_t vs, int64_t nb) {
  constexpr int L = V::kLanes;
  constexpr int64_t kKeys = kAttnKeyBlock;
  const int64_t R = a.rows, dv = a.dv;
  const int64_t dv_tiles = dv / (CBM * L) * (CBM * L);
  const int64_t dv_vecs = dv / L * L;
  int64_t r = 0;
  for (; r + RB <= R; r += RB) {
    for (int64_t c0 = 0; c0 < dv_tiles; c0 += CBM * L) MixTile<V, E, RB, CBM>(s + r * kKeys, a.o + r, c0, Vb, vs, nb);
    for (int64_t c0 = dv_tiles; c0 < dv_vecs; c0 += L) MixTile<V, E, RB, 1>(s + r * kKeys, a.o + r, c0, Vb, vs, nb);
  }
  for (; r < R; ++r) {
    for (int64_t c0 = 0; c0 < dv_tiles; c0 += CBM * L) MixTile<V, E, 1, CBM>(s + r * kKeys, a.o + r, c0, Vb, vs, nb);
    for (int64_t c0 = dv_tiles; c0 < dv_vecs; c0 += L) MixTile<V, E, 1, 1>(s + r * kKeys, a.o + r, c0, Vb, vs, nb);
  }
  if (dv_vecs < dv) {
    for (r = 0; r < R; ++r) {
      const float* p = s + r * kKeys;
      float* o = a.o[r];
      for (int64_t j = 0; j < nb; ++j)
        for (int64_t d = dv_vecs; d < dv; ++d) o[d] += p[j] * KvScalar<V, E>(Vb + j * vs, d);
    }
  }
}

// nb rows of d values stored as E (src_stride bytes apart) to F32 rows of d
// (the same values LoadKv gives).
template <class V, KvType E>
inline void ConvertBlock(const uint8_t* src, int64_t src_stride, int64_t nb, int64_t d, float* dst) {
  const int64_t dvec = d / V::kLanes * V::kLanes;
  for (int64_t j = 0; j < nb; ++j) {
    const uint8_t* row = src + j * src_stride;
    float* out = dst + j * d;
    int64_t i = 0;
    for (; i < dvec; i += V::kLanes) V::Store(out + i, LoadKv<V, E>(row, i));
    for (; i < d; ++i) out[i] = KvScalar<V, E>(row, i);
  }
}

template <class V, KvType E, int RB, int KB, int CBM>
void AttnBlockT(const AttnBlockArgs& a) {
  using T = typename V::T;
  constexpr int L = V::kLanes;
  constexpr int64_t kKeys = kAttnKeyBlock;
  const int64_t R = a.rows, dv = a.dv;
  float* s = a.scratch;         // R x kKeys: scores, then probabilities
  float* m = s + R * kKeys;     // R: running maximum
  float* l = m + R;             // R: running sum
  float* kf = l + R;            // kKeys x dk: a key block as F32
  float* vf = kf + kKeys * a.dk;  // kKeys x dv: a value block as F32
  // An F16 or Q8_0 block read by 4 or more tiles of rows (prompts) is
  // converted once, then read as F32 from L1/L2; fewer tiles (decode: one or
  // two) convert as they load, which attention_bench measures faster there.
  const bool convert = E != KvType::kF32 && R >= 4 * RB;
  int64_t n_max = 0, k_min = -1;
  for (int64_t r = 0; r < R; ++r) {
    n_max = MaxI(n_max, a.n_keys[r]);
    const int64_t first = a.first_key ? MaxI(a.first_key[r], 0) : 0;
    k_min = k_min < 0 ? first : MinI(k_min, first);
    // A sink starts the online softmax as one more logit that weighs no value.
    m[r] = a.sink ? a.sink[r] : kNegInf;
    l[r] = a.sink ? 1.0f : 0.0f;
    Fill(a.o[r], dv, 0.0f);
  }
  // Key blocks stay on the grid of kKeys from 0 (the same blocks whatever
  // the window), starting at the first one any row sees.
  for (int64_t kb = MaxI(k_min, 0) / kKeys * kKeys; kb < n_max; kb += kKeys) {
    const int64_t nb = MinI(kKeys, n_max - kb);
    // 1. Scores of every row against the key block (rows whose keys ended
    // are overwritten below).
    const uint8_t* Kb = static_cast<const uint8_t*>(a.K) + kb * a.k_stride;
    if (convert) {
      ConvertBlock<V, E>(Kb, a.k_stride, nb, a.dk, kf);
      ScoresBlock<V, KvType::kF32, RB, KB>(a, reinterpret_cast<const uint8_t*>(kf), a.dk * 4, nb, s);
    } else {
      ScoresBlock<V, E, RB, KB>(a, Kb, a.k_stride, nb, s);
    }
    // 2. Mask and online softmax.
    for (int64_t r = 0; r < R; ++r) {
      float* row = s + r * kKeys;
      const int64_t valid = MinI(MaxI(a.n_keys[r] - kb, 0), nb);
      const int64_t lo = a.first_key ? MinI(MaxI(a.first_key[r] - kb, 0), valid) : 0;  // keys before the window
      if (valid == lo) {
        Fill(row, kKeys, 0.0f);
        continue;
      }
      for (int64_t j = 0; j < lo; ++j) row[j] = kNegInf;
      for (int64_t j = valid; j < kKeys; ++j) row[j] = kNegInf;
      T mx = V::Load(row);
      for (int64_t j = L; j < kKeys; j += L) mx = V::Max(mx, V::Load(row + j));
      const float m_new = MaxF(m[r], V::ReduceMax(mx));
      const T mv = V::Set1(m_new);
      T sum = V::Zero();
      for (int64_t j = 0; j < kKeys; j += L) {
        const T e = ExpV<V>(V::Sub(V::Load(row + j), mv));
        V::Store(row + j, e);
        sum = V::Add(sum, e);
      }
      // Masked keys: exactly zero (the clamped exp would leave 1e-38).
      for (int64_t j = 0; j < lo; ++j) row[j] = 0.0f;
      for (int64_t j = valid; j < kKeys; ++j) row[j] = 0.0f;
      float block_sum = V::ReduceAdd(sum);
      if (valid < kKeys || lo > 0) {  // a block with masked lanes: the sum without them
        block_sum = 0.0f;
        for (int64_t j = lo; j < valid; ++j) block_sum += row[j];
      }
      const float corr = m[r] == kNegInf ? 0.0f : V::First(ExpV<V>(V::Set1(m[r] - m_new)));
      if (corr != 1.0f) {
        float* o = a.o[r];
        for (int64_t d = 0; d < dv; ++d) o[d] *= corr;
      }
      l[r] = l[r] * corr + block_sum;
      m[r] = m_new;
    }
    // 3. Probabilities times the value block.
    const uint8_t* Vb = static_cast<const uint8_t*>(a.V) + kb * a.v_stride;
    if (convert) {
      ConvertBlock<V, E>(Vb, a.v_stride, nb, dv, vf);
      MixBlock<V, KvType::kF32, RB, CBM>(a, s, reinterpret_cast<const uint8_t*>(vf), dv * 4, nb);
    } else {
      MixBlock<V, E, RB, CBM>(a, s, Vb, a.v_stride, nb);
    }
  }
  for (int64_t r = 0; r < R; ++r) {
    if (l[r] <= 0.0f) continue;  // a row with no keys stays zero
    const float inv = 1.0f / l[r];
    float* o = a.o[r];
    for (int64_t d = 0; d < dv; ++d) o[d] *= inv;
  }
}

// The kernel for the cache type of `a`.
template <class V, int RB, int KB, int CBM>
void AttnBlockForType(const AttnBlockArgs& a) {
  switch (a.kv) {
    case KvType::kF16: return AttnBlockT<V, KvType::kF16, RB, KB, CBM>(a);
    case KvType::kQ8_0: return AttnBlockT<V, KvType::kQ8_0, RB, KB, CBM>(a);
    case KvType::kF32: break;
  }
  AttnBlockT<V, KvType::kF32, RB, KB, CBM>(a);
}

}  // namespace
}  // namespace strata::kernels
