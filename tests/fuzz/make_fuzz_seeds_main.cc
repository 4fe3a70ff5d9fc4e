// strata-make-fuzz-seeds OUTDIR: small, deep seeds for the fuzz targets
// (issue 12). Whole models make slow inputs that mutate mostly tensor bytes;
// these files are a few KiB to a few tens of KiB and carry every structure the
// parsers check:
//   OUTDIR/gguf_reader_fuzz/  a tiny GGUF per architecture (and qwen3moe with
//       YaRN's rope.scaling keys), a vocab-only one,
//       one with every metadata value type (scalars and arrays, including
//       floats where integers are read), one with a tensor of every ggml type,
//       a v2 file and one with a custom alignment;
//   OUTDIR/pack_reader_fuzz/  a pack per architecture (128-byte blob
//       alignment, probe and expert profile), one with Q8_0 decode copies, and
//       one without a compressed tokenizer.
// Not part of the product: the fuzz stage (scripts/fuzz.sh) runs it.

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "packer/gguf/gguf_file.h"
#include "packer/packer.h"
#include "runtime/base/main_guard.h"
#include "tests/gguf_writer/synthetic_model.h"

namespace {

using namespace strata;
using namespace strata::testing;

// The smallest shapes each architecture's spec accepts with Q8_0 matrices
// (rows of 32) and the built-in byte-level tokenizer (259 tokens).
HParams Smallest(Arch arch) {
  HParams h;
  h.n_vocab = 260;
  h.n_ctx_train = 64;
  h.n_embd = 32;
  h.n_head = 2;
  h.n_head_kv = 1;
  h.head_dim_k = h.head_dim_v = 16;
  h.n_rot = 16;
  h.rms_eps = 1e-6f;
  h.n_layer_all = h.n_layer = 1;
  switch (arch) {
    case Arch::kLlama:
      h.n_ff = 32;
      h.rms_eps = 1e-5f;
      break;
    case Arch::kQwen3Moe:
      h.n_ff = 32;
      h.n_expert = 4;
      h.n_expert_used = 2;
      h.n_ff_exp = 32;
      h.rope_freq_base = 1e6f;
      break;
    case Arch::kQwen35Moe:
    case Arch::kQwen3Next:  // the same layers; NEOX RoPE, grouped heads, fused ssm_in and ssm_ba in the GGUF
      h.n_layer_all = h.n_layer = 2;  // one gated delta-net layer, one gated attention layer
      h.full_attn_interval = 2;
      if (arch == Arch::kQwen35Moe) h.rope_sections = {3, 3, 2, 0};
      h.ssm_grouped_heads = arch == Arch::kQwen3Next;
      h.rope_freq_base = 1e7f;
      h.n_expert = 4;
      h.n_expert_used = 2;
      h.n_ff_exp = 32;
      h.n_ff_shexp = 32;
      h.ssm_d_conv = 4;
      h.ssm_d_state = 16;
      h.ssm_n_group = 1;
      h.ssm_dt_rank = 2;
      h.ssm_d_inner = 32;
      break;
    case Arch::kDeepseek2:  // latent attention (low-rank query), a dense layer, an MoE layer with expert groups
      h.n_layer_all = h.n_layer = 2;
      h.n_layer_dense_lead = 1;
      h.n_ff = 32;
      h.n_head_kv = 1;
      h.q_lora_rank = 32;
      h.kv_lora_rank = 32;
      h.head_dim_k = h.kv_lora_rank + h.n_rot;
      h.head_dim_v = h.kv_lora_rank;
      h.head_dim_k_mla = h.n_rot + 32;
      h.head_dim_v_mla = 32;
      h.n_expert = 4;
      h.n_expert_used = 2;
      h.n_ff_exp = 32;
      h.n_expert_shared = 1;
      h.n_ff_shexp = 32;
      h.n_expert_groups = 2;
      h.n_expert_groups_used = 1;
      h.expert_gating = ExpertGating::kSigmoid;
      h.rope_yarn_log_mul = 0.1f;
      break;
    case Arch::kGptOss:
      h.n_expert = 4;
      h.n_expert_used = 2;
      h.n_ff_exp = 32;
      h.n_layer_all = h.n_layer = 2;  // a sliding layer and a full one
      h.n_swa = 8;
      h.swa_pattern = 2;
      h.expert_gating = ExpertGating::kSoftmaxWeight;
      h.swiglu_alpha = 1.702f;
      h.swiglu_limit = 7.0f;
      h.rope_scaling = RopeScaling::kYarn;
      h.rope_freq_scale = 0.25f;
      h.n_ctx_orig_yarn = 16;
      break;
    case Arch::kGlm4Moe:
      h.n_layer_all = 3;  // a leading dense layer, an MoE layer, an MTP layer
      h.n_layer = 2;
      h.nextn_predict_layers = 1;
      h.n_layer_dense_lead = 1;
      h.n_rot = 8;  // partial RoPE
      h.n_ff = 32;
      h.n_expert = 4;
      h.n_expert_used = 2;
      h.n_ff_exp = h.n_ff_shexp = 32;
      h.n_expert_shared = 1;
      h.expert_gating = ExpertGating::kSigmoid;
      h.expert_weights_norm = true;
      h.expert_weights_scale = 2.5f;
      break;
    default:
      break;
  }
  return h;
}

Result<GgufBuilder> Model(Arch arch) {
  SyntheticModelSpec s;
  s.arch = arch;
  s.hp = Smallest(arch);
  s.matrix_type = GgmlType::kQ8_0;
  s.name = "fuzz-seed";
  return BuildSyntheticModel(s);
}

Status Write(const GgufBuilder& b, const std::string& path) {
  STRATA_RETURN_IF_ERROR(b.WriteFile(path));
  std::printf("%s\n", path.c_str());
  return Status::Ok();
}

Status Pack(const std::string& gguf, const std::string& out, PackOptions o) {
  STRATA_ASSIGN_OR_RETURN(gguf::GgufModel m, gguf::GgufModel::Open(gguf));
  o.output = out;
  o.blob_alignment = 128;
  o.profile_tokens = 64;
  o.threads = 1;
  STRATA_ASSIGN_OR_RETURN(PackResult r, PackModel(m, o));
  if (r.log.refused())
    return FailedPrecondition(gguf + ": refused: " + r.log.refusals.front().location + ": " +
                              r.log.refusals.front().message);
  std::printf("%s\n", out.c_str());
  return Status::Ok();
}

Status Run(const std::string& dir) {
  const std::string g = dir + "/gguf_reader_fuzz", p = dir + "/pack_reader_fuzz";
  std::filesystem::create_directories(g);
  std::filesystem::create_directories(p);

  for (Arch arch : {Arch::kLlama, Arch::kQwen3Moe, Arch::kQwen35Moe, Arch::kGlm4Moe, Arch::kGptOss, Arch::kQwen3Next,
                    Arch::kDeepseek2}) {
    STRATA_ASSIGN_OR_RETURN(GgufBuilder b, Model(arch));
    const std::string name(ArchName(arch));
    STRATA_RETURN_IF_ERROR(Write(b, g + "/" + name + ".gguf"));
    STRATA_RETURN_IF_ERROR(Pack(g + "/" + name + ".gguf", p + "/" + name + ".strata", {}));
    if (arch == Arch::kQwen3Moe) {  // YaRN's rope.scaling.* keys
      SyntheticModelSpec y;
      y.arch = arch;
      y.hp = Smallest(arch);
      y.hp.rope_scaling = RopeScaling::kYarn;
      y.hp.rope_freq_scale = 0.25f;
      y.hp.n_ctx_orig_yarn = 16;
      y.matrix_type = GgmlType::kQ8_0;
      y.name = "fuzz-seed";
      STRATA_ASSIGN_OR_RETURN(GgufBuilder yb, BuildSyntheticModel(y));
      STRATA_RETURN_IF_ERROR(Write(yb, g + "/" + name + "-yarn.gguf"));
    }
    if (arch == Arch::kQwen3Moe) {
      PackOptions copies;
      copies.decode_copies = DecodeCopyType::kQ8_0;
      STRATA_RETURN_IF_ERROR(Pack(g + "/" + name + ".gguf", p + "/" + name + "-copies.strata", copies));
      PackOptions plain;
      plain.compress_tokenizer = false;
      plain.probe = false;
      plain.profile = false;
      STRATA_RETURN_IF_ERROR(Pack(g + "/" + name + ".gguf", p + "/" + name + "-plain.strata", plain));
    }
    if (arch == Arch::kLlama) {
      // Vocab-only: the same metadata, no tensors.
      GgufBuilder v = b;
      for (const std::string& t : v.TensorNames()) v.RemoveTensor(t);
      STRATA_RETURN_IF_ERROR(Write(v, g + "/vocab-only.gguf"));
      // Version 2, and a custom alignment.
      GgufBuilder v2 = b;
      v2.SetVersion(2);
      STRATA_RETURN_IF_ERROR(Write(v2, g + "/llama-v2.gguf"));
      GgufBuilder al = b;
      al.SetAlignment(64);
      STRATA_RETURN_IF_ERROR(Write(al, g + "/llama-align64.gguf"));
    }
  }

  // Every metadata value type, as a scalar and as an array, including floats
  // (and huge, NaN and fractional ones) under keys the packer reads as integers.
  GgufBuilder vt;
  vt.String("general.architecture", "qwen3moe")
      .U8("t.u8", 200).I8("t.i8", -100).U16("t.u16", 60000).I16("t.i16", -30000).U32("t.u32", 4000000000u)
      .I32("t.i32", -2000000000).U64("t.u64", ~0ull).I64("t.i64", -1).F32("t.f32", 1.5f).F64("t.f64", -2.25)
      .Bool("t.bool", true).String("t.str", "h\xc3\xa9llo")
      .F64("qwen3moe.block_count", 6.2e223).F32("qwen3moe.expert_count", 1.8e28f)
      .F32("qwen3moe.embedding_length", 3.5f).F64("qwen3moe.context_length", -1.0)
      .F64Array("qwen3moe.attention.head_count_kv", {4.1e31, 2, -0.0})
      .U64Array("qwen3moe.rope.dimension_sections", {~0ull, 3})
      .F32Array("tokenizer.ggml.token_type", {1, 2, 3.5f})
      .F64("tokenizer.ggml.bos_token_id", 1e300)
      .I32Array("t.arr_i32", {-1, 2}).U32Array("t.arr_u32", {7}).BoolArray("t.arr_bool", {true, false})
      .StringArray("t.arr_str", {"", "x"});
  STRATA_RETURN_IF_ERROR(Write(vt, g + "/value-types.gguf"));

  // A tensor of every ggml type: one block each.
  GgufBuilder tt;
  tt.String("general.architecture", "llama");
  for (const GgmlTypeInfo& t : AllGgmlTypes())
    tt.Tensor("t." + std::string(t.name), t.type, {static_cast<int64_t>(t.block_elems)},
              std::vector<uint8_t>(t.block_bytes, 0x11));
  STRATA_RETURN_IF_ERROR(Write(tt, g + "/tensor-types.gguf"));
  return Status::Ok();
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: strata-make-fuzz-seeds OUTDIR\n");
    return kExitUsage;
  }
  Status st = Run(argv[1]);
  if (!st.ok()) {
    std::fprintf(stderr, "strata-make-fuzz-seeds: %s\n", st.message().c_str());
    return kExitError;
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return strata::GuardedMain("strata-make-fuzz-seeds", argc, argv, Main);
}
