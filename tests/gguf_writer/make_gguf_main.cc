// strata-make-gguf: writes synthetic GGUF models (tests/gguf_writer), for the
// built-in default model, benchmarks and fixtures. Not part of the product.

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <xxhash.h>

#include "packer/gguf/gguf_file.h"
#include "runtime/base/mapped_file.h"

#include "runtime/base/main_guard.h"
#include "tests/gguf_writer/synthetic_model.h"

namespace {

using namespace strata;
using namespace strata::testing;

int Main(int argc, char** argv) {
  CLI::App app{"strata-make-gguf: writes a synthetic GGUF model with seeded random weights."};
  // The same options on every system: no /option forms on Windows (CLI11's
  // default there), so a path such as /data/model.gguf stays a path.
  app.allow_windows_style_options(false);
  std::string arch = "qwen3moe", preset = "tiny", type = "Q8_0", mix, tok, out, breaks, rope_scaling, vocab_from, pre;
  bool qk_norm = false, f32_math = false, print_xxh3 = false, split_qkvz = false, lite = false, legacy_kv_b = false;
  uint32_t layers = 0, split = 1, context_length = 0;
  int32_t mtp = -1;  // --mtp; -1: the preset's
  uint64_t seed = 1;
  app.add_option("--arch", arch, "llama, qwen3, qwen3moe, qwen35moe, qwen3next, glm4moe, gpt-oss or deepseek2");
  app.add_flag("--legacy-kv-b", legacy_kv_b,
               "deepseek2: the older GGUF form (one attn_kv_b a layer, no key_length_mla), as converted before "
               "llama.cpp split the KV up-projection");
  app.add_flag("--lite", lite,
               "deepseek2: DeepSeek-V2-Lite's form (one attn_q, softmax router, no expert groups) instead of V3's");
  app.add_option("--preset", preset,
                 "tiny (the conformance fixtures' shapes), qwen3-30b-a3b, qwen36-35b-a3b, glm45-air or gpt-oss-20b "
                 "(real layer shapes)");
  app.add_option("--rope-scaling", rope_scaling,
                 "yarn:FACTOR:ORIGINAL_CONTEXT or linear:FACTOR (the rope.scaling.* keys, any architecture)");
  app.add_option("--context-length", context_length, "the training context (context_length; default: the preset's)")
      ->check(CLI::Range(16u, 1u << 20));
  app.add_flag("--split-qkvz", split_qkvz,
               "qwen3next: write attn_qkv + attn_gate (the newer converter's form) instead of the fused ssm_in");
  app.add_option("--mtp", mtp,
                 "MTP (nextn) layers after the main ones: 1 writes one MTP block, 0 none (qwen35moe, glm4moe; "
                 "default: the preset's: glm4moe's tiny preset has one)")
      ->check(CLI::Range(0, 1));
  app.add_flag("--qk-norm", qk_norm, "write the optional QK-norm tensors (glm4moe: as GLM-4.5)");
  app.add_option("--vocab-from", vocab_from,
                 "write a vocab-only GGUF: this GGUF's metadata without its tensors (--pre renames its pre-tokenizer)");
  app.add_option("--pre", pre, "with --vocab-from: the tokenizer.ggml.pre to write (e.g. glm4)");
  app.add_flag("--print-xxh3", print_xxh3, "print the written file's XXH3-64 (hex) after its path");
  app.add_flag("--f32-math", f32_math,
               "write the F32-math twin: the same weights, dequantized from their types, as F32 (docs/conformance.md)");
  app.add_option("--layers", layers, "layers (qwen36-35b-a3b: groups of 3 delta-net + 1 attention)");
  app.add_option("--type", type, "type of the weight matrices (Q8_0, Q4_K, F16, ...)");
  app.add_option("--mix", mix,
                 "q4_k_m: Q4_K matrices, Q6_K output head and attn_v, Q8_0 small matrices; mxfp4_moe: MXFP4 experts, "
                 "Q8_0 the rest");
  app.add_option("--tokenizer", tok, "copy the tokenizer of this GGUF (default: a built-in byte-level BPE)");
  app.add_option("--seed", seed, "random seed");
  app.add_option("--split", split, "write this many shards (NAME-0000k-of-0000n.gguf)");
  app.add_option("--break", breaks, "remove-nextn-key or shexp-gate-2d (qwen35moe; the seeds/000 patches reversed)");
  app.add_option("-o,--output", out, "output path (with --split: the prefix)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (!vocab_from.empty()) {  // a vocabulary under another pre-tokenizer name, for tokenizer checks
    auto src = gguf::GgufModel::Open(vocab_from);
    if (!src.ok()) {
      std::fprintf(stderr, "strata-make-gguf: %s\n", src.status().message().c_str());
      return kExitError;
    }
    gguf::ParsedGguf meta;
    for (const auto& kv : src->metadata()) meta.kv.push_back(kv);
    GgufBuilder v;
    v.CopyMetadata(meta);
    if (!pre.empty()) v.String("tokenizer.ggml.pre", pre);
    Status st = v.WriteFile(out);
    if (!st.ok()) {
      std::fprintf(stderr, "strata-make-gguf: %s\n", st.message().c_str());
      return kExitError;
    }
    std::printf("%s\n", out.c_str());
    return kExitOk;
  }
  SyntheticModelSpec s;
  auto a = ArchFromName(arch);
  if (!a) {
    std::fprintf(stderr, "strata-make-gguf: unknown --arch %s\n", arch.c_str());
    return kExitUsage;
  }
  s.arch = *a;
  s.seed = seed;
  s.tokenizer_gguf = tok;
  if (preset == "tiny") {
    s.hp = lite && s.arch == Arch::kDeepseek2 ? TinyDeepseek2LiteHParams() : TinyHParams(s.arch);
    if (layers) {
      s.hp.n_layer_all = layers + s.hp.nextn_predict_layers;
      s.hp.n_layer = layers;
    }
  } else if (preset == "qwen3-30b-a3b" && s.arch == Arch::kQwen3Moe) {
    s.hp = Qwen3_30BA3BShape(layers ? layers : 4);
  } else if (preset == "qwen36-35b-a3b" && s.arch == Arch::kQwen35Moe) {
    s.hp = Qwen36_35BA3BShape(layers ? layers : 1);
  } else if (preset == "gpt-oss-20b" && s.arch == Arch::kGptOss) {
    s.hp = GptOss20bShape(layers ? layers : 4);
  } else if (preset == "glm45-air" && s.arch == Arch::kGlm4Moe) {
    s.hp = Glm45AirShape(layers ? layers : 4);
  } else {
    std::fprintf(stderr, "strata-make-gguf: unknown --preset %s for --arch %s\n", preset.c_str(), arch.c_str());
    return kExitUsage;
  }
  if (mtp >= 0) {
    if (s.arch != Arch::kQwen35Moe && s.arch != Arch::kGlm4Moe) {
      std::fprintf(stderr, "strata-make-gguf: --mtp: %s has no MTP block (qwen35moe and glm4moe have)\n", arch.c_str());
      return kExitUsage;
    }
    s.hp.n_layer_all = s.hp.n_layer + static_cast<uint32_t>(mtp);
    s.hp.nextn_predict_layers = static_cast<uint32_t>(mtp);
  }
  const GgmlTypeInfo* t = FindGgmlTypeByName(type);
  if (!t || !t->weight) {
    std::fprintf(stderr, "strata-make-gguf: unknown --type %s\n", type.c_str());
    return kExitUsage;
  }
  s.matrix_type = t->type;
  s.qk_norm = qk_norm;
  s.f32_math = f32_math;
  s.split_qkvz = split_qkvz;
  s.legacy_kv_b = legacy_kv_b;
  if (context_length) s.hp.n_ctx_train = context_length;
  if (!rope_scaling.empty()) {
    Status rs = ParseRopeScaling(rope_scaling, &s.hp);
    if (!rs.ok()) {
      std::fprintf(stderr, "strata-make-gguf: %s\n", rs.message().c_str());
      return kExitUsage;
    }
  }
  if (mix == "q4_k_m") {
    s.matrix_type = GgmlType::kQ4_K;
    s.type_by_role = {{TensorRole::kOutput, GgmlType::kQ6_K}, {TensorRole::kAttnV, GgmlType::kQ6_K},
                      {TensorRole::kSsmAlpha, GgmlType::kQ8_0}, {TensorRole::kSsmBeta, GgmlType::kQ8_0}};
  } else if (mix == "mxfp4_moe") {  // as gpt-oss ships: MXFP4 experts, the rest Q8_0
    s.matrix_type = GgmlType::kQ8_0;
    s.type_by_role = {{TensorRole::kFfnGateExps, GgmlType::kMXFP4}, {TensorRole::kFfnUpExps, GgmlType::kMXFP4},
                      {TensorRole::kFfnDownExps, GgmlType::kMXFP4}};
  } else if (!mix.empty()) {
    std::fprintf(stderr, "strata-make-gguf: unknown --mix %s\n", mix.c_str());
    return kExitUsage;
  }
  auto b = BuildSyntheticModel(s);
  if (!b.ok()) {
    std::fprintf(stderr, "strata-make-gguf: %s\n", b.status().message().c_str());
    return kExitError;
  }
  if (breaks == "remove-nextn-key") BreakRemoveNextnKey(*b);
  else if (breaks == "shexp-gate-2d") BreakShexpGate2D(*b, s.hp.n_layer_all, s.hp.n_embd);
  else if (!breaks.empty()) {
    std::fprintf(stderr, "strata-make-gguf: unknown --break %s\n", breaks.c_str());
    return kExitUsage;
  }
  if (split > 1) {
    auto paths = b->WriteSplit(out, split);
    if (!paths.ok()) {
      std::fprintf(stderr, "strata-make-gguf: %s\n", paths.status().message().c_str());
      return kExitError;
    }
    for (const auto& p : *paths) std::printf("%s\n", p.c_str());
    return kExitOk;
  }
  Status st = b->WriteFile(out);
  if (!st.ok()) {
    std::fprintf(stderr, "strata-make-gguf: %s\n", st.message().c_str());
    return kExitError;
  }
  if (print_xxh3) {
    auto f = MappedFile::Open(out);
    if (!f.ok()) {
      std::fprintf(stderr, "strata-make-gguf: %s\n", f.status().message().c_str());
      return kExitError;
    }
    std::printf("%s %016llx\n", out.c_str(), static_cast<unsigned long long>(XXH3_64bits(f->data(), f->bytes().size())));
    return kExitOk;
  }
  std::printf("%s\n", out.c_str());
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return strata::GuardedMain("strata-make-gguf", argc, argv, Main);
}
