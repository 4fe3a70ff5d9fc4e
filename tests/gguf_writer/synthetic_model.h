#pragma once
// Synthetic GGUF models for tests, benchmarks and the built-in default:
// any supported architecture, any type per tensor, generated from the
// architecture spec itself (so the writer and the checks cannot drift), with
// seeded random weights and either a built-in byte-level BPE tokenizer or the
// tokenizer of a real GGUF.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/arch/arch_spec.h"
#include "tests/gguf_writer/gguf_builder.h"

namespace strata::testing {

struct SyntheticModelSpec {
  Arch arch = Arch::kQwen3Moe;
  HParams hp;            // n_vocab is replaced by the tokenizer's size when one is copied
  uint64_t seed = 1;
  GgmlType matrix_type = GgmlType::kQ8_0;             // default type of matrices
  std::map<TensorRole, GgmlType> type_by_role;        // overrides per role
  GgmlType router_type = GgmlType::kF32;              // ffn_gate_inp, as llama-quantize leaves it
  float weight_scale = 0.02f;
  // Tokenizer: the tokenizer.* keys of this GGUF (e.g. ggml-vocab-qwen2.gguf),
  // or empty for the built-in byte-level BPE vocabulary (256 byte tokens,
  // <|endoftext|>, <|im_start|>, <|im_end|>, padded to hp.n_vocab).
  std::string tokenizer_gguf;
  // A deliberately skewed router (for expert profiles): every token
  // embedding gets a large constant in dimension 0, and the router row of
  // each listed expert gets `gain` there, so those experts win for most tokens.
  std::map<uint32_t, float> router_skew;
  // A router bias per layer and expert (realistic skew that differs by layer,
  // for expert-cache measurements): the same dimension-0 trick, with the
  // router row of expert e in layer l getting router_bias(l, e) there.
  std::function<float(uint32_t layer, uint32_t expert)> router_bias;
  std::string name = "strata-synthetic";
  bool tied_output = false;  // leave out output.weight (the token embedding is the head)
  // Optional tensors written: the Q/K/V biases where the architecture has
  // them (GLM-4.5-Air's files carry them), and QK-norm where it is optional.
  bool attn_biases = true;
  bool qk_norm = false;
  // The F32-math twin (docs/conformance.md): every matrix the same values,
  // dequantized from the type it would have had and written as F32.
  bool f32_math = false;
  // deepseek2: the older GGUF form (one attn_kv_b a layer, no key_length_mla;
  // key_length and value_length the heads' widths, head_count_kv the query
  // heads), as llama.cpp's converter wrote it before the split.
  bool legacy_kv_b = false;
  // qwen3next: write attn_qkv + attn_gate (the newer converter's form)
  // instead of the fused ssm_in; ssm_ba is always fused, as
  // llama.cpp requires. Fused tensors' rows: ArchSpec::row_splits.
  bool split_qkvz = false;
};

// Hyperparameter presets.
HParams TinyQwen3MoeHParams();    // the conformance fixture's shape
HParams TinyQwen35MoeHParams();   // the conformance fixture's shape
HParams TinyLlamaHParams();
HParams TinyQwen3HParams();       // dense Qwen3: TinyQwen3MoeHParams' attention, a dense FFN
// glm4moe: 1 leading dense layer, 2 MoE layers (sigmoid router with a
// selection bias, a shared expert, weights renormalized and scaled by 2.5),
// partial RoPE (32 of 64 dims), and 1 MTP layer.
HParams TinyGlm4MoeHParams();
// gpt-oss: 4 layers, a 16-position window on layers 0 and 2, sinks, biases,
// 8 experts (2 used) with the clamped SwiGLU, YaRN (factor 4, original 64).
HParams TinyGptOssHParams();
// deepseek2: DeepSeek V3's form (a low-rank query, the sigmoid router with a
// selection bias, 4 expert groups of which 2 are kept, 2 shared experts), 1
// leading dense layer and 2 MoE layers, latent 64, RoPE part 32.
HParams TinyDeepseek2HParams();
// DeepSeek-V2-Lite's form: one attn_q, the softmax router, no groups, one shared expert.
HParams TinyDeepseek2LiteHParams();
// qwen3next: TinyQwen35MoeHParams' layers with NEOX RoPE (no sections) and
// 2 value heads per key head in the grouped order.
HParams TinyQwen3NextHParams();
// The tiny preset of an architecture (one of the above).
HParams TinyHParams(Arch arch);
// Qwen3-30B-A3B's layer shapes with `n_layer` layers (vocab 151936).
HParams Qwen3_30BA3BShape(uint32_t n_layer);
// Qwen3.6-35B-A3B's layer shapes with `groups` groups of 3 delta-net + 1
// attention layers (vocab 248320).
HParams Qwen36_35BA3BShape(uint32_t groups);
// GLM-4.5-Air's layer shapes with `n_layer` layers, the first dense (vocab 151552).
HParams Glm45AirShape(uint32_t n_layer);
// gpt-oss-20b's layer shapes with `n_layer` layers (vocab 201088).
HParams GptOss20bShape(uint32_t n_layer);
// Long-context RoPE as GGUF metadata asks for it: "yarn:FACTOR:ORIGINAL_CONTEXT"
// or "linear:FACTOR", into hp (rope_scaling, rope_freq_scale,
// n_ctx_orig_yarn). Errors: any other text.
Status ParseRopeScaling(const std::string& text, HParams* hp);

// Builds the GGUF. Errors: unknown preset values, a tokenizer GGUF that
// cannot be read.
Result<GgufBuilder> BuildSyntheticModel(const SyntheticModelSpec& spec);

// The two hand patches of seeds/000 done in reverse, on a qwen35moe builder:
// drop qwen35moe.nextn_predict_layers; store every ffn_gate_inp_shexp as [n, 1].
void BreakRemoveNextnKey(GgufBuilder& b);
void BreakShexpGate2D(GgufBuilder& b, uint32_t n_layer, uint32_t n_embd);

}  // namespace strata::testing
