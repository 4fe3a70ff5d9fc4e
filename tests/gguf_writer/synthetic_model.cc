#include "tests/gguf_writer/synthetic_model.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "packer/gguf/gguf_file.h"
#include "runtime/base/strings.h"
#include "runtime/quant/dequantize.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/quantize.h"
#include "runtime/tokenizer/unicode.h"
#include "tests/testing/random_blocks.h"

namespace strata::testing {
namespace {

std::vector<float> Normal(std::mt19937_64& rng, size_t n, float mean, float stddev) {
  std::normal_distribution<float> d(mean, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Bytes of a tensor of `type` holding `values` (F32/F16/BF16/Q8_0 are
// converted; other types get random blocks of the same scale).
std::vector<uint8_t> Encode(GgmlType type, const std::vector<float>& values, int64_t row, std::mt19937_64& rng,
                            float scale) {
  const uint64_t rows = values.size() / static_cast<uint64_t>(row);
  std::vector<uint8_t> out(*RowBytes(type, static_cast<uint64_t>(row)) * rows);
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(out.data(), values.data(), out.size());
      break;
    case GgmlType::kF16:
      Fp32RowToFp16Unchecked(values.data(), out.data(), static_cast<int64_t>(values.size()));
      break;
    case GgmlType::kBF16:
      Fp32RowToBf16Unchecked(values.data(), out.data(), static_cast<int64_t>(values.size()));
      break;
    case GgmlType::kQ8_0:
      QuantizeRowQ8_0Unchecked(Q8_0Rule::kGgmlReference, values.data(), out.data(),
                               static_cast<int64_t>(values.size()));
      break;
    default:
      FillRandomBlocks(type, out.size() / TypeInfo(type).block_bytes, rng, out.data(), scale);
      break;
  }
  return out;
}

void BuiltInTokenizer(GgufBuilder& b, uint32_t n_vocab) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int i = 0; i < 256; ++i) {
    tokens.emplace_back(tokenizer::ByteToUnicode(static_cast<uint8_t>(i)));
    types.push_back(1);
  }
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    tokens.emplace_back(s);
    types.push_back(3);
  }
  while (tokens.size() < n_vocab) {
    tokens.push_back(StrFormat("[PAD%zu]", tokens.size()));
    types.push_back(5);
  }
  b.String("tokenizer.ggml.model", "gpt2").String("tokenizer.ggml.pre", "qwen2");
  b.StringArray("tokenizer.ggml.tokens", tokens).I32Array("tokenizer.ggml.token_type", types);
  // A few merges of common English pairs (byte-level: a space is "Ġ").
  b.StringArray("tokenizer.ggml.merges", {"Ġ t", "h e", "Ġ a", "i n", "e r"});
  b.U32("tokenizer.ggml.eos_token_id", 258).U32("tokenizer.ggml.bos_token_id", 256);
  b.U32("tokenizer.ggml.padding_token_id", 256).Bool("tokenizer.ggml.add_bos_token", false);
  b.String("tokenizer.chat_template",
           "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
           "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
}

}  // namespace

HParams TinyQwen3MoeHParams() {
  HParams h;
  h.n_vocab = 512;
  h.n_ctx_train = 256;
  h.n_embd = 256;
  h.n_layer_all = h.n_layer = 3;
  h.n_head = 8;
  h.n_head_kv = 2;
  h.head_dim_k = h.head_dim_v = 64;
  h.n_rot = 64;
  h.n_ff = 768;
  h.n_expert = 8;
  h.n_expert_used = 2;
  h.n_ff_exp = 256;
  h.rope_freq_base = 1e6f;
  h.rms_eps = 1e-6f;
  return h;
}

HParams TinyQwen35MoeHParams() {
  HParams h;
  h.n_vocab = 512;
  h.n_ctx_train = 256;
  h.n_embd = 256;
  h.n_layer_all = h.n_layer = 4;
  h.n_head = 4;
  h.n_head_kv = 2;
  h.head_dim_k = h.head_dim_v = 64;
  h.n_rot = 16;
  h.rope_sections = {3, 3, 2, 0};
  h.rope_freq_base = 1e7f;
  h.rms_eps = 1e-6f;
  h.n_expert = 8;
  h.n_expert_used = 2;
  h.n_ff_exp = 256;
  h.n_ff_shexp = 256;
  h.ssm_d_conv = 4;
  h.ssm_d_state = 64;
  h.ssm_n_group = 2;
  h.ssm_dt_rank = 4;
  h.ssm_d_inner = 256;
  h.full_attn_interval = 4;
  return h;
}

HParams TinyQwen3NextHParams() {
  HParams h = TinyQwen35MoeHParams();
  h.rope_sections = {0, 0, 0, 0};
  h.ssm_grouped_heads = true;
  return h;
}

HParams TinyQwen3HParams() {
  HParams h = TinyQwen3MoeHParams();
  h.n_expert = h.n_expert_used = h.n_ff_exp = 0;
  h.n_ff = 512;
  return h;
}

HParams TinyGlm4MoeHParams() {
  HParams h;
  h.n_vocab = 512;
  h.n_ctx_train = 256;
  h.n_embd = 256;
  h.n_layer_all = 4;
  h.nextn_predict_layers = 1;
  h.n_layer = 3;
  h.n_head = 8;
  h.n_head_kv = 2;
  h.head_dim_k = h.head_dim_v = 64;
  h.n_rot = 32;  // partial RoPE, as GLM-4.5 (half of each head)
  h.rope_freq_base = 1e6f;
  h.rms_eps = 1e-5f;
  h.n_ff = 512;
  h.n_expert = 8;
  h.n_expert_used = 2;
  h.n_ff_exp = 128;
  h.n_expert_shared = 1;
  h.n_ff_shexp = 128;
  h.n_layer_dense_lead = 1;
  h.expert_gating = ExpertGating::kSigmoid;
  h.expert_weights_norm = true;
  h.expert_weights_scale = 2.5f;
  return h;
}

HParams TinyDeepseek2HParams() {
  HParams h;
  h.n_vocab = 512;
  h.n_ctx_train = 256;
  h.n_embd = 256;
  h.n_layer_all = h.n_layer = 3;
  h.n_head = 8;
  h.n_head_kv = 1;
  h.q_lora_rank = 64;
  h.kv_lora_rank = 64;
  h.n_rot = 32;
  h.head_dim_k = h.kv_lora_rank + h.n_rot;
  h.head_dim_v = h.kv_lora_rank;
  h.head_dim_k_mla = 64;  // nope 32 + rope 32
  h.head_dim_v_mla = 32;
  h.rope_freq_base = 10000.0f;
  h.rope_yarn_log_mul = 0.1f;  // DeepSeek V3's mscale_all_dim 1, as its converter writes it
  h.rms_eps = 1e-6f;
  h.n_ff = 512;
  h.n_expert = 16;
  h.n_expert_used = 4;
  h.n_ff_exp = 64;
  h.n_expert_shared = 2;
  h.n_ff_shexp = 128;
  h.n_layer_dense_lead = 1;
  h.expert_gating = ExpertGating::kSigmoid;
  h.expert_weights_norm = true;
  h.expert_weights_scale = 2.5f;
  h.n_expert_groups = 4;
  h.n_expert_groups_used = 2;
  return h;
}

HParams TinyDeepseek2LiteHParams() {
  HParams h = TinyDeepseek2HParams();
  h.q_lora_rank = 0;
  h.rope_yarn_log_mul = 0.0707f;  // DeepSeek-V2-Lite's mscale_all_dim 0.707
  h.expert_gating = ExpertGating::kSoftmax;
  h.expert_weights_norm = false;
  h.expert_weights_scale = 1.0f;
  h.n_expert_groups = h.n_expert_groups_used = 0;
  h.n_expert_shared = 1;
  h.n_ff_shexp = 64;
  return h;
}

HParams TinyGptOssHParams() {
  HParams h;
  h.n_vocab = 512;
  h.n_ctx_train = 256;
  h.n_embd = 256;
  h.n_layer_all = h.n_layer = 4;
  h.n_head = 8;
  h.n_head_kv = 2;
  h.head_dim_k = h.head_dim_v = 64;
  h.n_rot = 64;
  h.rope_freq_base = 150000.0f;
  h.rope_scaling = RopeScaling::kYarn;
  h.rope_freq_scale = 0.25f;
  h.n_ctx_orig_yarn = 64;
  h.rms_eps = 1e-5f;
  h.n_expert = 8;
  h.n_expert_used = 2;
  h.n_ff_exp = 128;
  h.expert_gating = ExpertGating::kSoftmaxWeight;
  h.n_swa = 16;
  h.swa_pattern = 2;
  h.swiglu_alpha = 1.702f;
  h.swiglu_limit = 7.0f;
  return h;
}

HParams GptOss20bShape(uint32_t n_layer) {
  HParams h = TinyGptOssHParams();
  h.n_vocab = 201088;
  h.n_ctx_train = 131072;
  h.n_embd = 2880;
  h.n_layer_all = h.n_layer = n_layer;
  h.n_head = 64;
  h.n_head_kv = 8;
  h.rope_freq_scale = 1.0f / 32.0f;
  h.n_ctx_orig_yarn = 4096;
  h.n_expert = 32;
  h.n_expert_used = 4;
  h.n_ff_exp = 2880;
  h.n_swa = 128;
  return h;
}

HParams Glm45AirShape(uint32_t n_layer) {
  HParams h = TinyGlm4MoeHParams();
  h.n_vocab = 151552;
  h.n_ctx_train = 131072;
  h.n_embd = 4096;
  h.n_layer_all = h.n_layer = n_layer;
  h.nextn_predict_layers = 0;
  h.n_head = 96;
  h.n_head_kv = 8;
  h.head_dim_k = h.head_dim_v = 128;
  h.n_rot = 64;
  h.n_ff = 10944;
  h.n_expert = 128;
  h.n_expert_used = 8;
  h.n_ff_exp = h.n_ff_shexp = 1408;
  h.n_layer_dense_lead = 1;
  return h;
}

Status ParseRopeScaling(const std::string& text, HParams* hp) {
  auto bad = [&] {
    return InvalidArgument("--rope-scaling " + text + ": expected yarn:FACTOR:ORIGINAL_CONTEXT or linear:FACTOR");
  };
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t colon = text.find(':', at);
    parts.push_back(text.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
    if (colon == std::string::npos) break;
    at = colon + 1;
  }
  char* end = nullptr;
  if (parts.size() < 2) return bad();
  const float factor = std::strtof(parts[1].c_str(), &end);
  if (parts[1].empty() || *end || !(factor > 0.0f) || !std::isfinite(factor)) return bad();
  if (parts[0] == "linear" && parts.size() == 2) {
    hp->rope_scaling = RopeScaling::kLinear;
  } else if (parts[0] == "yarn" && parts.size() == 3) {
    const unsigned long orig = std::strtoul(parts[2].c_str(), &end, 10);
    if (parts[2].empty() || *end || orig == 0 || orig > (1u << 24)) return bad();
    hp->rope_scaling = RopeScaling::kYarn;
    hp->n_ctx_orig_yarn = static_cast<uint32_t>(orig);
  } else {
    return bad();
  }
  hp->rope_freq_scale = 1.0f / factor;
  return Status::Ok();
}

HParams TinyHParams(Arch arch) {
  switch (arch) {
    case Arch::kGlm4Moe: return TinyGlm4MoeHParams();
    case Arch::kGptOss: return TinyGptOssHParams();
    case Arch::kLlama: return TinyLlamaHParams();
    case Arch::kQwen3: return TinyQwen3HParams();
    case Arch::kQwen35Moe: return TinyQwen35MoeHParams();
    case Arch::kQwen3Next: return TinyQwen3NextHParams();
    case Arch::kDeepseek2: return TinyDeepseek2HParams();
    default: return TinyQwen3MoeHParams();
  }
}

HParams TinyLlamaHParams() {
  HParams h;
  h.n_vocab = 512;
  h.n_ctx_train = 512;
  h.n_embd = 64;
  h.n_layer_all = h.n_layer = 2;
  h.n_head = 8;
  h.n_head_kv = 4;
  h.head_dim_k = h.head_dim_v = 8;
  h.n_rot = 8;
  h.n_ff = 172;
  h.rms_eps = 1e-5f;
  return h;
}

HParams Qwen3_30BA3BShape(uint32_t n_layer) {
  HParams h = TinyQwen3MoeHParams();
  h.n_vocab = 151936;
  h.n_ctx_train = 40960;
  h.n_embd = 2048;
  h.n_layer_all = h.n_layer = n_layer;
  h.n_head = 32;
  h.n_head_kv = 4;
  h.head_dim_k = h.head_dim_v = 128;
  h.n_rot = 128;
  h.n_ff = 6144;
  h.n_expert = 128;
  h.n_expert_used = 8;
  h.n_ff_exp = 768;
  return h;
}

HParams Qwen36_35BA3BShape(uint32_t groups) {
  HParams h = TinyQwen35MoeHParams();
  h.n_vocab = 248320;
  h.n_ctx_train = 262144;
  h.n_embd = 2048;
  h.n_layer_all = h.n_layer = 4 * groups;
  h.n_head = 16;
  h.n_head_kv = 2;
  h.head_dim_k = h.head_dim_v = 256;
  h.n_rot = 64;
  h.rope_sections = {11, 11, 10, 0};
  h.n_expert = 256;
  h.n_expert_used = 8;
  h.n_ff_exp = 512;
  h.n_ff_shexp = 512;
  h.ssm_d_conv = 4;
  h.ssm_d_state = 128;
  h.ssm_n_group = 16;
  h.ssm_dt_rank = 32;
  h.ssm_d_inner = 4096;
  return h;
}

Result<GgufBuilder> BuildSyntheticModel(const SyntheticModelSpec& spec) {
  if (spec.arch == Arch::kVocabOnly) return InvalidArgument("a synthetic model needs an architecture with weights");
  GgufBuilder b;
  HParams hp = spec.hp;
  const std::string a(ArchName(spec.arch));
  b.String("general.architecture", a).String("general.name", spec.name);

  if (!spec.tokenizer_gguf.empty()) {
    STRATA_ASSIGN_OR_RETURN(gguf::GgufModel tm, gguf::GgufModel::Open(spec.tokenizer_gguf));
    gguf::ParsedGguf only_tokenizer;
    for (const auto& kv : tm.metadata())
      if (StartsWith(kv.key, "tokenizer.")) only_tokenizer.kv.push_back(kv);
    b.CopyMetadata(only_tokenizer);
    const gguf::KeyValue* toks = tm.Find("tokenizer.ggml.tokens");
    if (!toks || !toks->value.is_array()) return InvalidArgument(spec.tokenizer_gguf + ": no token list");
    hp.n_vocab = static_cast<uint32_t>(toks->value.count);
  } else {
    BuiltInTokenizer(b, hp.n_vocab);
  }

  // Hyperparameters as converters write them (u32 counts, f32 floats).
  b.U32(a + ".context_length", hp.n_ctx_train).U32(a + ".embedding_length", hp.n_embd);
  b.U32(a + ".block_count", hp.n_layer_all).U32(a + ".attention.head_count", hp.n_head);
  b.U32(a + ".attention.head_count_kv", hp.n_head_kv);
  b.U32(a + ".attention.key_length", hp.head_dim_k).U32(a + ".attention.value_length", hp.head_dim_v);
  b.U32(a + ".rope.dimension_count", hp.n_rot).F32(a + ".rope.freq_base", hp.rope_freq_base);
  b.F32(a + ".attention.layer_norm_rms_epsilon", hp.rms_eps);
  const ArchSpec& arch_spec = GetArchSpec(spec.arch);
  if (!arch_spec.has_experts() || hp.n_ff) b.U32(a + ".feed_forward_length", hp.n_ff);
  if (arch_spec.has_experts()) {
    b.U32(a + ".expert_count", hp.n_expert).U32(a + ".expert_used_count", hp.n_expert_used);
    b.U32(a + ".expert_feed_forward_length", hp.n_ff_exp);
  }
  if (spec.arch == Arch::kGlm4Moe) {
    b.U32(a + ".expert_shared_count", hp.n_expert_shared);
    b.U32(a + ".leading_dense_block_count", hp.n_layer_dense_lead);
    b.U32(a + ".expert_gating_func", static_cast<uint32_t>(hp.expert_gating));
    b.Bool(a + ".expert_weights_norm", hp.expert_weights_norm);
    b.F32(a + ".expert_weights_scale", hp.expert_weights_scale);
    b.U32(a + ".nextn_predict_layers", hp.nextn_predict_layers);
  }
  if (spec.arch == Arch::kDeepseek2) {
    b.U32(a + ".attention.key_length_mla", hp.head_dim_k_mla).U32(a + ".attention.value_length_mla", hp.head_dim_v_mla);
    b.U32(a + ".attention.q_lora_rank", hp.q_lora_rank).U32(a + ".attention.kv_lora_rank", hp.kv_lora_rank);
    b.U32(a + ".expert_shared_count", hp.n_expert_shared);
    b.U32(a + ".leading_dense_block_count", hp.n_layer_dense_lead);
    b.U32(a + ".expert_gating_func", static_cast<uint32_t>(hp.expert_gating));
    b.Bool(a + ".expert_weights_norm", hp.expert_weights_norm);
    b.F32(a + ".expert_weights_scale", hp.expert_weights_scale);
    b.U32(a + ".expert_group_count", hp.n_expert_groups).U32(a + ".expert_group_used_count", hp.n_expert_groups_used);
    b.F32(a + ".rope.scaling.yarn_log_multiplier", hp.rope_yarn_log_mul);
    if (hp.nextn_predict_layers) b.U32(a + ".nextn_predict_layers", hp.nextn_predict_layers);
    if (spec.legacy_kv_b) {
      b.Remove(a + ".attention.key_length_mla").Remove(a + ".attention.value_length_mla");
      b.U32(a + ".attention.key_length", hp.head_dim_k_mla).U32(a + ".attention.value_length", hp.head_dim_v_mla);
      b.U32(a + ".attention.head_count_kv", hp.n_head);
    }
  }
  if (spec.arch == Arch::kGptOss) {
    b.U32(a + ".attention.sliding_window", hp.n_swa);
    b.U32(a + ".attention.sliding_window_pattern", hp.swa_pattern);
  }
  if (hp.rope_scaling != RopeScaling::kNone) {
    b.String(a + ".rope.scaling.type", std::string(RopeScalingName(hp.rope_scaling)));
    b.F32(a + ".rope.scaling.factor", 1.0f / hp.rope_freq_scale);
    if (hp.rope_scaling == RopeScaling::kYarn) b.U32(a + ".rope.scaling.original_context_length", hp.n_ctx_orig_yarn);
  }
  if (spec.arch == Arch::kQwen35Moe || spec.arch == Arch::kQwen3Next) {
    b.U32(a + ".expert_shared_feed_forward_length", hp.n_ff_shexp);
    if (spec.arch == Arch::kQwen35Moe)
      b.I32Array(a + ".rope.dimension_sections",
                 std::vector<int32_t>(hp.rope_sections.begin(), hp.rope_sections.end()));
    b.U32(a + ".ssm.conv_kernel", hp.ssm_d_conv).U32(a + ".ssm.state_size", hp.ssm_d_state);
    b.U32(a + ".ssm.group_count", hp.ssm_n_group).U32(a + ".ssm.time_step_rank", hp.ssm_dt_rank);
    b.U32(a + ".ssm.inner_size", hp.ssm_d_inner).U32(a + ".full_attention_interval", hp.full_attn_interval);
    b.U32(a + ".nextn_predict_layers", hp.nextn_predict_layers);
  }
  hp.n_layer = hp.n_layer_all - hp.nextn_predict_layers;
  Status check = CheckHParams(spec.arch, hp);
  if (!check.ok()) return check;

  // The fused tensors this file carries (ArchSpec::row_splits): their parts
  // are generated as the spec's tensors, then written as rows of the source.
  std::vector<const RowSplit*> fused;
  for (const RowSplit& r : arch_spec.row_splits)
    if (!(spec.split_qkvz && r.parts[0] == TensorRole::kAttnQkv)) fused.push_back(&r);
  auto fused_part = [&](TensorRole role) -> std::pair<const RowSplit*, size_t> {
    for (const RowSplit* r : fused)
      for (size_t p = 0; p < 2; ++p)
        if (r->parts[p] == role) return {r, p};
    return {nullptr, 0};
  };
  struct Part {
    GgmlType type;
    std::vector<uint8_t> bytes;
  };
  std::map<std::pair<int32_t, TensorRole>, Part> parts;
  auto emit = [&](const ExpectedTensor& e, GgmlType type, std::vector<int64_t> ne, std::vector<uint8_t> bytes) {
    if (fused_part(e.spec->role).first) parts[{e.layer, e.spec->role}] = {type, std::move(bytes)};
    else b.Tensor(e.name, type, std::move(ne), std::move(bytes));
  };

  std::mt19937_64 rng(spec.seed);
  for (const ExpectedTensor& e : ExpectedTensors(GetArchSpec(spec.arch), hp)) {
    if (spec.legacy_kv_b && (e.spec->role == TensorRole::kAttnKB || e.spec->role == TensorRole::kAttnVB)) {
      if (e.spec->role == TensorRole::kAttnVB) continue;
      // The older form's attn_kv_b in attn_k_b's place: per head, its nope
      // rows then its value rows, each kv_lora_rank wide.
      const int64_t L = hp.kv_lora_rank, rows = int64_t{hp.n_head} * (hp.MlaNope() + hp.head_dim_v_mla);
      std::vector<float> v = Normal(rng, static_cast<uint64_t>(L * rows), 0.0f, spec.weight_scale);
      GgmlType type = spec.matrix_type;
      if (L % TypeInfo(type).block_elems != 0) type = GgmlType::kF16;
      std::vector<uint8_t> bytes = Encode(type, v, L, rng, spec.weight_scale);
      if (spec.f32_math && type != GgmlType::kF32) {
        DequantizeRowUnchecked(type, bytes.data(), v.data(), static_cast<int64_t>(v.size()));
        bytes.resize(v.size() * sizeof(float));
        std::memcpy(bytes.data(), v.data(), bytes.size());
        type = GgmlType::kF32;
      }
      b.Tensor(TensorName("blk.{L}.attn_kv_b.weight", e.layer), type, {L, rows}, std::move(bytes));
      continue;
    }
    if (e.spec->optional) {
      const TensorRole r = e.spec->role;
      const bool bias = r == TensorRole::kAttnQBias || r == TensorRole::kAttnKBias || r == TensorRole::kAttnVBias;
      const bool norm = r == TensorRole::kAttnQNorm || r == TensorRole::kAttnKNorm;
      // deepseek2's selection bias: with the sigmoid router (DeepSeek V3), not the softmax one (V2).
      const bool probs_b = r == TensorRole::kFfnExpProbsB && hp.expert_gating == ExpertGating::kSigmoid;
      const bool keep = (r == TensorRole::kOutput && !spec.tied_output) || (bias && spec.attn_biases) ||
                        (norm && spec.qk_norm) || probs_b;
      if (!keep) continue;
    }
    std::vector<int64_t> ne(e.shape.begin(), e.shape.end());
    uint64_t count = 1;
    for (uint64_t d : e.shape) count *= d;
    const int64_t row = ne[0];
    const TensorRole role = e.spec->role;
    if (e.spec->types == TypeRule::kF32Only) {
      std::vector<float> v;
      switch (role) {
        case TensorRole::kSsmA: v = Normal(rng, count, 0.0f, 0.5f); for (float& x : v) x = -std::exp(x); break;
        case TensorRole::kSsmDtBias: v = Normal(rng, count, 0.0f, 0.5f); break;
        case TensorRole::kSsmConv1d: v = Normal(rng, count, 0.0f, 0.3f); break;
        case TensorRole::kFfnGateInpShexp: v = Normal(rng, count, 0.0f, 0.05f); break;
        case TensorRole::kAttnQBias:
        case TensorRole::kAttnKBias:
        case TensorRole::kAttnVBias: v = Normal(rng, count, 0.0f, 0.2f); break;
        case TensorRole::kFfnExpProbsB: v = Normal(rng, count, 0.0f, 0.1f); break;
        case TensorRole::kAttnSinks: v = Normal(rng, count, 0.0f, 1.0f); break;
        case TensorRole::kAttnOutputBias:
        case TensorRole::kFfnGateInpBias:
        case TensorRole::kFfnGateExpsBias:
        case TensorRole::kFfnUpExpsBias:
        case TensorRole::kFfnDownExpsBias: v = Normal(rng, count, 0.0f, 0.1f); break;
        default: v = Normal(rng, count, 1.0f, 0.05f); break;  // norm weights
      }
      b.TensorF32(e.name, ne, v);
      continue;
    }
    GgmlType type = spec.matrix_type;
    if (role == TensorRole::kFfnGateInp) type = spec.router_type;
    // The parts of a fused tensor share its type: the first part's.
    const TensorRole type_role = fused_part(role).first ? fused_part(role).first->parts[0] : role;
    if (auto it = spec.type_by_role.find(type_role); it != spec.type_by_role.end()) type = it->second;
    if (row % TypeInfo(type).block_elems != 0) {
      // Rows the type cannot hold: llama-quantize's fallbacks for 256-value
      // blocks (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, the 2-3 bit and
      // i-quants -> IQ4_NL), F16 otherwise.
      switch (type) {
        case GgmlType::kQ4_K: type = GgmlType::kQ5_0; break;
        case GgmlType::kQ5_K: type = GgmlType::kQ5_1; break;
        case GgmlType::kQ6_K: type = GgmlType::kQ8_0; break;
        case GgmlType::kQ2_K:
        case GgmlType::kQ3_K:
        case GgmlType::kIQ4_XS:
        case GgmlType::kIQ3_S:
        case GgmlType::kIQ2_XXS:
        case GgmlType::kIQ2_XS:
        case GgmlType::kIQ2_S:
        case GgmlType::kIQ3_XXS:
        case GgmlType::kIQ1_S:
        case GgmlType::kIQ1_M: type = GgmlType::kIQ4_NL; break;
        default: type = GgmlType::kF16; break;
      }
      if (row % TypeInfo(type).block_elems != 0) type = GgmlType::kF16;
    }
    float scale = spec.weight_scale;
    if (role == TensorRole::kTokenEmbd) scale = 1.0f;  // embeddings are not normalized before the first norm
    std::vector<float> v = Normal(rng, count, 0.0f, scale);
    if (role == TensorRole::kTokenEmbd && (!spec.router_skew.empty() || spec.router_bias))
      for (uint64_t r = 0; r < count / static_cast<uint64_t>(row); ++r) v[r * row] += 8.0f;
    if (role == TensorRole::kFfnGateInp) {
      for (float& x : v) x *= 10.0f;  // routers have larger logits
      for (const auto& [expert, gain] : spec.router_skew)
        if (expert < hp.n_expert) v[expert * row] = gain;
      if (spec.router_bias && e.layer >= 0)
        for (uint32_t expert = 0; expert < hp.n_expert; ++expert)
          v[expert * row] = spec.router_bias(static_cast<uint32_t>(e.layer), expert);
    }
    std::vector<uint8_t> bytes = Encode(type, v, row, rng, scale);
    if (spec.f32_math && type != GgmlType::kF32) {
      std::vector<float> f(count);
      DequantizeRowUnchecked(type, bytes.data(), f.data(), static_cast<int64_t>(count));
      std::vector<uint8_t> fb(f.size() * sizeof(float));
      std::memcpy(fb.data(), f.data(), fb.size());
      emit(e, GgmlType::kF32, ne, std::move(fb));
      continue;
    }
    emit(e, type, ne, std::move(bytes));
  }
  // The fused tensors: source row r(part, i) is part's row i.
  for (const RowSplit* r : fused) {
    for (uint32_t il = 0; il < hp.n_layer_all; ++il) {
      auto p0 = parts.find({static_cast<int32_t>(il), r->parts[0]});
      auto p1 = parts.find({static_cast<int32_t>(il), r->parts[1]});
      if (p0 == parts.end() || p1 == parts.end()) continue;
      const GgmlType type = p0->second.type;
      const uint64_t rows = r->rows.eval(hp);
      STRATA_ASSIGN_OR_RETURN(uint64_t rb, RowBytes(type, static_cast<int64_t>(hp.n_embd)));
      std::vector<uint8_t> src(rows * rb);
      for (size_t part = 0; part < 2; ++part) {
        const std::vector<uint8_t>& bytes = (part == 0 ? p0 : p1)->second.bytes;
        for (uint64_t i = 0; i < bytes.size() / rb; ++i)
          std::memcpy(src.data() + r->row(hp, part, i) * rb, bytes.data() + i * rb, rb);
      }
      b.Tensor(TensorName(r->pattern, static_cast<int32_t>(il)), type,
               {static_cast<int64_t>(hp.n_embd), static_cast<int64_t>(rows)}, std::move(src));
    }
  }
  return b;
}

void BreakRemoveNextnKey(GgufBuilder& b) { b.Remove("qwen35moe.nextn_predict_layers"); }

void BreakShexpGate2D(GgufBuilder& b, uint32_t n_layer, uint32_t n_embd) {
  for (uint32_t il = 0; il < n_layer; ++il)
    b.ReshapeTensor(StrFormat("blk.%u.ffn_gate_inp_shexp.weight", il), {static_cast<int64_t>(n_embd), 1});
}

}  // namespace strata::testing
