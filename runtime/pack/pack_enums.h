#pragma once
// The pack format's numbers, tied to the runtime's enums. schema/strata_pack.fbs
// defines every number a pack stores (architecture ids, RoPE types, tensor
// roles, weight types); the runtime's C++ enums carry the same values, and
// the static_asserts below stop the build when either side drifts. Conversions
// between the two go through these functions only.

#include <cstdint>

#include "runtime/arch/arch_spec.h"
#include "runtime/quant/ggml_type.h"
#include "schema/strata_pack_generated.h"

namespace strata::pack {

#define STRATA_PIN(cpp, fb) static_assert(static_cast<uint64_t>(cpp) == static_cast<uint64_t>(fb), #cpp " != " #fb)

STRATA_PIN(Arch::kLlama, fb::Arch::Llama);
STRATA_PIN(Arch::kQwen3Moe, fb::Arch::Qwen3Moe);
STRATA_PIN(Arch::kQwen35Moe, fb::Arch::Qwen35Moe);
STRATA_PIN(Arch::kVocabOnly, fb::Arch::VocabOnly);
STRATA_PIN(Arch::kQwen3, fb::Arch::Qwen3);
STRATA_PIN(Arch::kGlm4Moe, fb::Arch::Glm4Moe);
STRATA_PIN(Arch::kGptOss, fb::Arch::GptOss);
STRATA_PIN(Arch::kQwen3Next, fb::Arch::Qwen3Next);
STRATA_PIN(Arch::kDeepseek2, fb::Arch::Deepseek2);
static_assert(fb::Arch::MAX == fb::Arch::Deepseek2, "an architecture id was added to the schema: add it to Arch");

STRATA_PIN(RopeType::kNorm, fb::RopeType::Norm);
STRATA_PIN(RopeType::kNeox, fb::RopeType::Neox);
STRATA_PIN(RopeType::kIMRope, fb::RopeType::IMRope);
static_assert(fb::RopeType::MAX == fb::RopeType::IMRope, "a RoPE type was added to the schema: add it to RopeType");

STRATA_PIN(TensorRole::kTokenEmbd, fb::TensorRole::TokenEmbd);
STRATA_PIN(TensorRole::kOutputNorm, fb::TensorRole::OutputNorm);
STRATA_PIN(TensorRole::kOutput, fb::TensorRole::Output);
STRATA_PIN(TensorRole::kAttnNorm, fb::TensorRole::AttnNorm);
STRATA_PIN(TensorRole::kAttnQ, fb::TensorRole::AttnQ);
STRATA_PIN(TensorRole::kAttnK, fb::TensorRole::AttnK);
STRATA_PIN(TensorRole::kAttnV, fb::TensorRole::AttnV);
STRATA_PIN(TensorRole::kAttnOutput, fb::TensorRole::AttnOutput);
STRATA_PIN(TensorRole::kAttnQNorm, fb::TensorRole::AttnQNorm);
STRATA_PIN(TensorRole::kAttnKNorm, fb::TensorRole::AttnKNorm);
STRATA_PIN(TensorRole::kFfnNorm, fb::TensorRole::FfnNorm);
STRATA_PIN(TensorRole::kFfnGate, fb::TensorRole::FfnGate);
STRATA_PIN(TensorRole::kFfnUp, fb::TensorRole::FfnUp);
STRATA_PIN(TensorRole::kFfnDown, fb::TensorRole::FfnDown);
STRATA_PIN(TensorRole::kFfnGateInp, fb::TensorRole::FfnGateInp);
STRATA_PIN(TensorRole::kFfnGateExps, fb::TensorRole::FfnGateExps);
STRATA_PIN(TensorRole::kFfnUpExps, fb::TensorRole::FfnUpExps);
STRATA_PIN(TensorRole::kFfnDownExps, fb::TensorRole::FfnDownExps);
STRATA_PIN(TensorRole::kFfnGateInpShexp, fb::TensorRole::FfnGateInpShexp);
STRATA_PIN(TensorRole::kFfnGateShexp, fb::TensorRole::FfnGateShexp);
STRATA_PIN(TensorRole::kFfnUpShexp, fb::TensorRole::FfnUpShexp);
STRATA_PIN(TensorRole::kFfnDownShexp, fb::TensorRole::FfnDownShexp);
STRATA_PIN(TensorRole::kPostAttnNorm, fb::TensorRole::PostAttnNorm);
STRATA_PIN(TensorRole::kAttnQkv, fb::TensorRole::AttnQkv);
STRATA_PIN(TensorRole::kAttnGate, fb::TensorRole::AttnGate);
STRATA_PIN(TensorRole::kSsmConv1d, fb::TensorRole::SsmConv1d);
STRATA_PIN(TensorRole::kSsmDtBias, fb::TensorRole::SsmDtBias);
STRATA_PIN(TensorRole::kSsmA, fb::TensorRole::SsmA);
STRATA_PIN(TensorRole::kSsmBeta, fb::TensorRole::SsmBeta);
STRATA_PIN(TensorRole::kSsmAlpha, fb::TensorRole::SsmAlpha);
STRATA_PIN(TensorRole::kSsmNorm, fb::TensorRole::SsmNorm);
STRATA_PIN(TensorRole::kSsmOut, fb::TensorRole::SsmOut);
STRATA_PIN(TensorRole::kNextnEhProj, fb::TensorRole::NextnEhProj);
STRATA_PIN(TensorRole::kNextnEnorm, fb::TensorRole::NextnEnorm);
STRATA_PIN(TensorRole::kNextnHnorm, fb::TensorRole::NextnHnorm);
STRATA_PIN(TensorRole::kNextnEmbedTokens, fb::TensorRole::NextnEmbedTokens);
STRATA_PIN(TensorRole::kNextnSharedHeadHead, fb::TensorRole::NextnSharedHeadHead);
STRATA_PIN(TensorRole::kNextnSharedHeadNorm, fb::TensorRole::NextnSharedHeadNorm);
STRATA_PIN(TensorRole::kAttnQBias, fb::TensorRole::AttnQBias);
STRATA_PIN(TensorRole::kAttnKBias, fb::TensorRole::AttnKBias);
STRATA_PIN(TensorRole::kAttnVBias, fb::TensorRole::AttnVBias);
STRATA_PIN(TensorRole::kFfnExpProbsB, fb::TensorRole::FfnExpProbsB);
STRATA_PIN(TensorRole::kAttnOutputBias, fb::TensorRole::AttnOutputBias);
STRATA_PIN(TensorRole::kAttnSinks, fb::TensorRole::AttnSinks);
STRATA_PIN(TensorRole::kFfnGateInpBias, fb::TensorRole::FfnGateInpBias);
STRATA_PIN(TensorRole::kFfnGateExpsBias, fb::TensorRole::FfnGateExpsBias);
STRATA_PIN(TensorRole::kFfnUpExpsBias, fb::TensorRole::FfnUpExpsBias);
STRATA_PIN(TensorRole::kFfnDownExpsBias, fb::TensorRole::FfnDownExpsBias);
STRATA_PIN(TensorRole::kAttnQA, fb::TensorRole::AttnQA);
STRATA_PIN(TensorRole::kAttnQANorm, fb::TensorRole::AttnQANorm);
STRATA_PIN(TensorRole::kAttnQB, fb::TensorRole::AttnQB);
STRATA_PIN(TensorRole::kAttnKvAMqa, fb::TensorRole::AttnKvAMqa);
STRATA_PIN(TensorRole::kAttnKvANorm, fb::TensorRole::AttnKvANorm);
STRATA_PIN(TensorRole::kAttnKB, fb::TensorRole::AttnKB);
STRATA_PIN(TensorRole::kAttnVB, fb::TensorRole::AttnVB);
static_assert(static_cast<uint64_t>(TensorRole::kCount) == static_cast<uint64_t>(fb::TensorRole::MAX) + 1,
              "TensorRole and the schema's TensorRole list different roles");

STRATA_PIN(GgmlType::kF32, fb::WeightType::F32);
STRATA_PIN(GgmlType::kF16, fb::WeightType::F16);
STRATA_PIN(GgmlType::kQ4_0, fb::WeightType::Q4_0);
STRATA_PIN(GgmlType::kQ4_1, fb::WeightType::Q4_1);
STRATA_PIN(GgmlType::kQ5_0, fb::WeightType::Q5_0);
STRATA_PIN(GgmlType::kQ5_1, fb::WeightType::Q5_1);
STRATA_PIN(GgmlType::kQ8_0, fb::WeightType::Q8_0);
STRATA_PIN(GgmlType::kQ8_1, fb::WeightType::Q8_1);
STRATA_PIN(GgmlType::kQ2_K, fb::WeightType::Q2_K);
STRATA_PIN(GgmlType::kQ3_K, fb::WeightType::Q3_K);
STRATA_PIN(GgmlType::kQ4_K, fb::WeightType::Q4_K);
STRATA_PIN(GgmlType::kQ5_K, fb::WeightType::Q5_K);
STRATA_PIN(GgmlType::kQ6_K, fb::WeightType::Q6_K);
STRATA_PIN(GgmlType::kQ8_K, fb::WeightType::Q8_K);
STRATA_PIN(GgmlType::kIQ2_XXS, fb::WeightType::IQ2_XXS);
STRATA_PIN(GgmlType::kIQ2_XS, fb::WeightType::IQ2_XS);
STRATA_PIN(GgmlType::kIQ3_XXS, fb::WeightType::IQ3_XXS);
STRATA_PIN(GgmlType::kIQ1_S, fb::WeightType::IQ1_S);
STRATA_PIN(GgmlType::kIQ4_NL, fb::WeightType::IQ4_NL);
STRATA_PIN(GgmlType::kIQ3_S, fb::WeightType::IQ3_S);
STRATA_PIN(GgmlType::kIQ2_S, fb::WeightType::IQ2_S);
STRATA_PIN(GgmlType::kIQ4_XS, fb::WeightType::IQ4_XS);
STRATA_PIN(GgmlType::kI8, fb::WeightType::I8);
STRATA_PIN(GgmlType::kI16, fb::WeightType::I16);
STRATA_PIN(GgmlType::kI32, fb::WeightType::I32);
STRATA_PIN(GgmlType::kI64, fb::WeightType::I64);
STRATA_PIN(GgmlType::kF64, fb::WeightType::F64);
STRATA_PIN(GgmlType::kIQ1_M, fb::WeightType::IQ1_M);
STRATA_PIN(GgmlType::kBF16, fb::WeightType::BF16);
STRATA_PIN(GgmlType::kTQ1_0, fb::WeightType::TQ1_0);
STRATA_PIN(GgmlType::kTQ2_0, fb::WeightType::TQ2_0);
STRATA_PIN(GgmlType::kMXFP4, fb::WeightType::MXFP4);
STRATA_PIN(GgmlType::kNVFP4, fb::WeightType::NVFP4);
STRATA_PIN(GgmlType::kQ1_0, fb::WeightType::Q1_0);
STRATA_PIN(GgmlType::kQ2_0, fb::WeightType::Q2_0);
static_assert(static_cast<uint32_t>(fb::WeightType::MAX) + 1 == kGgmlTypeIdLimit,
              "GgmlType and the schema's WeightType end at different ids");

#undef STRATA_PIN

inline fb::Arch ToFb(Arch a) { return static_cast<fb::Arch>(a); }
inline fb::RopeType ToFb(RopeType r) { return static_cast<fb::RopeType>(r); }
inline fb::TensorRole ToFb(TensorRole r) { return static_cast<fb::TensorRole>(r); }
inline fb::WeightType ToFb(GgmlType t) { return static_cast<fb::WeightType>(t); }

// Reading: a stored value this build does not know is the caller's error to
// report (the reader names the field and the value); these only widen.
inline uint32_t RawValue(fb::Arch a) { return static_cast<uint32_t>(a); }
inline uint32_t RawValue(fb::RopeType r) { return static_cast<uint32_t>(r); }
inline uint32_t RawValue(fb::TensorRole r) { return static_cast<uint32_t>(r); }
inline uint32_t RawValue(fb::WeightType t) { return static_cast<uint32_t>(t); }

}  // namespace strata::pack
