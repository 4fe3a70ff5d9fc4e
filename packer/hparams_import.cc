#include "packer/hparams_import.h"

#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "runtime/base/checked_cast.h"
#include "runtime/base/strings.h"

namespace strata {
namespace {

using gguf::KeyValue;
using gguf::Value;
using gguf::ValueType;

constexpr const char* kUnsafeFlag = "--allow-unsafe-fixes";

// Keys that change the math in ways Strata does not implement: refused
// unless they hold the value that means "off".
struct UnsupportedKey {
  const char* suffix;
  const char* off_value;  // the value that is harmless, as text
  const char* what;
};
constexpr UnsupportedKey kUnsupportedKeys[] = {
    {"expert_gating_func", "1", "an expert gating function other than softmax (1)"},
    {"attention.sliding_window", "0", "sliding-window attention"},
    {"attention.temperature_scale", "0", "attention temperature tuning (llama.cpp's f_attn_temp_scale)"},
};

std::string Describe(const Value& v) { return v.Describe(); }

// Whether the architecture's spec reads `<arch>.key`.
bool SpecReads(const ArchSpec& spec, std::string_view key) {
  for (const HParamSpec& s : spec.hparams)
    if (std::string_view(s.key) == key) return true;
  return false;
}

class Importer {
 public:
  Importer(const gguf::GgufModel& m, Arch arch, const PackOptions& o, FixLog* log)
      : m_(m), arch_name_(ArchName(arch)), opts_(o), log_(log) {}

  std::string Key(const char* suffix) const { return suffix[0] == '@' ? std::string(suffix + 1) : arch_name_ + "." + suffix; }

  std::optional<std::string> OverrideFor(const std::string& key) const {
    for (const auto& [k, v] : opts_.overrides)
      if (k == key) return v;
    return std::nullopt;
  }

  // A u32 from any representation that holds it exactly.
  bool ReadU32(const std::string& key, const Value& v, uint32_t* out) {
    if (v.type == ValueType::kU32) {
      *out = static_cast<uint32_t>(v.u64);
      return true;
    }
    if (v.is_integer()) {
      bool neg = v.is_signed_integer() && v.i64 < 0;
      if (neg || v.u64 > UINT32_MAX) {
        log_->Refuse(key, "expected an unsigned 32-bit integer, found " + Describe(v));
        return false;
      }
      *out = static_cast<uint32_t>(v.u64);
      log_->AddFix("integer-type", key, Describe(v), StrFormat("u32 %u", *out),
                   "llama.cpp reads this key as u32; the stored value fits exactly");
      return true;
    }
    std::optional<uint32_t> whole = gguf::IsFloatType(v.type) ? ExactCast<uint32_t>(v.f64) : std::nullopt;
    if (whole) {
      *out = *whole;
      log_->AddFix("float-type", key, Describe(v), StrFormat("u32 %u", *out),
                   "a whole number stored as a float; converted exactly");
      return true;
    }
    log_->Refuse(key, "expected an unsigned 32-bit integer, found " + Describe(v));
    return false;
  }

  bool ReadF32(const std::string& key, const Value& v, float* out) {
    if (v.type == ValueType::kF32) {
      *out = static_cast<float>(v.f64);
      return true;
    }
    if (v.type == ValueType::kF64 || v.is_integer()) {
      double d = v.type == ValueType::kF64 ? v.f64 : (v.is_signed_integer() ? static_cast<double>(v.i64)
                                                                            : static_cast<double>(v.u64));
      // A finite double beyond float's range has no f32 at all, even rounded.
      std::optional<float> rounded = std::isfinite(d) ? ExactCast<float>(d) : std::nullopt;
      if (!rounded) {
        log_->Refuse(key, "expected f32, found " + Describe(v) + ", which is outside f32's finite range");
        return false;
      }
      float f = *rounded;
      bool exact = static_cast<double>(f) == d;
      if (!exact && !opts_.allow_unsafe_fixes) {
        log_->Refuse(key,
                     "expected f32, found " + Describe(v) + ", which f32 cannot hold exactly (nearest: " +
                         StrFormat("%.9g", static_cast<double>(f)) + ")",
                     kUnsafeFlag);
        return false;
      }
      *out = f;
      log_->AddFix("float-type", key, Describe(v), StrFormat("f32 %.9g", static_cast<double>(f)),
                   exact ? "llama.cpp reads this key as f32; converted exactly"
                         : "rounded to the nearest f32 (allowed by --allow-unsafe-fixes)");
      return true;
    }
    log_->Refuse(key, "expected f32, found " + Describe(v));
    return false;
  }

  bool ReadSections(const std::string& key, const Value& v, std::array<int32_t, 4>* out) {
    if (!v.is_array() || !gguf::IsIntegerType(v.elem_type) || v.count == 0 || v.count > 4) {
      log_->Refuse(key, "expected an array of 1..4 integers, found " + Describe(v));
      return false;
    }
    *out = {0, 0, 0, 0};
    for (uint64_t i = 0; i < v.count; ++i) {
      std::optional<int32_t> x;
      if (std::optional<int64_t> wide = v.IntAt(i)) x = ExactCast<int32_t>(*wide);
      if (!x || *x < 0) {
        log_->Refuse(key, StrFormat("expected non-negative 32-bit sections, found element %" PRIu64 " = ", i) +
                              v.ElementText(i));
        return false;
      }
      (*out)[i] = *x;
    }
    if (v.elem_type != ValueType::kI32 || v.count != 4)
      log_->AddFix(v.elem_type != ValueType::kI32 ? "integer-type" : "default", key, Describe(v),
                   StrFormat("array[i32, 4] [%d, %d, %d, %d]", (*out)[0], (*out)[1], (*out)[2], (*out)[3]),
                   "llama.cpp reads 4 i32 sections; missing trailing sections are 0");
    return true;
  }

  // attention.head_count_kv may be a per-layer array (0 on layers without
  // attention). It collapses to one value when all non-zero entries agree.
  bool ReadPerLayer(const std::string& key, const Value& v, uint32_t n_layers, uint32_t* out) {
    if (!v.is_array()) return ReadU32(key, v, out);
    if (!gguf::IsIntegerType(v.elem_type) || v.count != n_layers) {
      log_->Refuse(key, StrFormat("expected a u32 or an array of %u integers (one per layer), found ", n_layers) +
                            Describe(v));
      return false;
    }
    uint32_t value = 0;
    for (uint64_t i = 0; i < v.count; ++i) {
      std::optional<uint32_t> x;
      if (std::optional<uint64_t> wide = v.UIntAt(i)) x = ExactCast<uint32_t>(*wide);
      if (x == 0u) continue;
      if (!x || (value != 0 && *x != value)) {
        log_->Refuse(key, "per-layer values must be 0 or one common value; found " + v.ElementText(i) +
                              StrFormat(" at layer %" PRIu64 " after %u", i, value));
        return false;
      }
      value = *x;
    }
    if (value == 0) {
      log_->Refuse(key, "expected at least one non-zero entry, found all zeros");
      return false;
    }
    *out = value;
    log_->AddFix("per-layer-array", key, Describe(v), StrFormat("u32 %u", value),
                 "every layer with attention has the same value; layers without attention (0) do not use it");
    return true;
  }

  Status ApplyOverride(const HParamSpec& s, const std::string& key, const std::string& text, HParams* hp) {
    const KeyValue* kv = m_.Find(key);
    std::string before = kv ? Describe(kv->value) : "absent";
    char* end = nullptr;
    switch (s.kind) {
      case HpKind::kU32:
      case HpKind::kU32OrPerLayer: {
        unsigned long long v = std::strtoull(text.c_str(), &end, 10);
        if (text.empty() || *end || v > UINT32_MAX || text[0] == '-')
          return InvalidArgument("--set " + key + "=" + text + ": expected an unsigned 32-bit integer");
        hp->*(s.u32_field) = static_cast<uint32_t>(v);
        log_->AddFix("user-override", key, before, StrFormat("u32 %llu", v), "set with --set");
        return Status::Ok();
      }
      case HpKind::kF32: {
        float v = std::strtof(text.c_str(), &end);
        if (text.empty() || *end || !std::isfinite(v))
          return InvalidArgument("--set " + key + "=" + text + ": expected a finite number");
        hp->*(s.f32_field) = v;
        log_->AddFix("user-override", key, before, StrFormat("f32 %.9g", static_cast<double>(v)), "set with --set");
        return Status::Ok();
      }
      case HpKind::kBool:
        if (text != "true" && text != "false")
          return InvalidArgument("--set " + key + "=" + text + ": expected true or false");
        hp->*(s.bool_field) = text == "true";
        log_->AddFix("user-override", key, before, "bool " + text, "set with --set");
        return Status::Ok();
      case HpKind::kGating: {
        unsigned long v = std::strtoul(text.c_str(), &end, 10);
        if (text.empty() || *end || v < 1 || v > 3)
          return InvalidArgument("--set " + key + "=" + text + ": expected 1 (softmax), 2 (sigmoid) or 3 (softmax "
                                 "over the chosen)");
        hp->expert_gating = static_cast<ExpertGating>(v);
        log_->AddFix("user-override", key, before, StrFormat("u32 %lu", v), "set with --set");
        return Status::Ok();
      }
      case HpKind::kI32Array4: {
        std::array<int32_t, 4> v{};
        size_t n = 0, pos = 0;
        while (pos <= text.size() && n < 4) {
          size_t comma = text.find(',', pos);
          std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
          long x = std::strtol(part.c_str(), &end, 10);
          if (part.empty() || *end || x < 0 || x > INT32_MAX)
            return InvalidArgument("--set " + key + "=" + text + ": expected up to 4 comma-separated integers");
          v[n++] = static_cast<int32_t>(x);
          if (comma == std::string::npos) break;
          pos = comma + 1;
        }
        hp->rope_sections = v;
        log_->AddFix("user-override", key, before, text, "set with --set");
        return Status::Ok();
      }
    }
    return Internal("unknown hyperparameter kind");
  }

  Status Import(const ArchSpec& spec, HParams* hp) {
    for (const HParamSpec& s : spec.hparams) {
      std::string key = Key(s.key);
      if (auto ov = OverrideFor(key)) {
        STRATA_RETURN_IF_ERROR(ApplyOverride(s, key, *ov, hp));
        continue;
      }
      const KeyValue* kv = m_.Find(key);
      if (!kv) {
        if (s.required) {
          log_->Refuse(key, "required key missing (the " + arch_name_ + " spec has no safe default for it)",
                       "--set " + key + "=VALUE");
          continue;
        }
        if (s.kind == HpKind::kI32Array4) continue;
        std::string after;
        if (s.kind == HpKind::kGating) {
          hp->expert_gating = static_cast<ExpertGating>(s.default_value);
          after = StrFormat("u32 %g", s.default_value);
        }
        if (s.u32_field) {
          uint32_t v = s.derive ? s.derive(*hp) : static_cast<uint32_t>(s.default_value);
          hp->*(s.u32_field) = v;
          after = StrFormat("u32 %u", v);
        } else if (s.f32_field) {
          hp->*(s.f32_field) = static_cast<float>(s.default_value);
          after = StrFormat("f32 %g", s.default_value);
        } else if (s.bool_field) {
          hp->*(s.bool_field) = s.default_value != 0;
          after = s.default_value != 0 ? "bool true" : "bool false";
        }
        std::string from = s.default_text ? std::string(" (") + s.default_text + ")" : "";
        log_->AddFix("default", key, "absent", after + from, s.why_default_safe ? s.why_default_safe : "");
        continue;
      }
      const Value& v = kv->value;
      switch (s.kind) {
        case HpKind::kU32: ReadU32(key, v, &(hp->*(s.u32_field))); break;
        case HpKind::kF32: ReadF32(key, v, &(hp->*(s.f32_field))); break;
        case HpKind::kBool:
          if (v.type == ValueType::kBool) {
            hp->*(s.bool_field) = v.u64 != 0;
          } else if (v.is_integer() && (v.u64 == 0 || v.u64 == 1)) {
            hp->*(s.bool_field) = v.u64 != 0;
            log_->AddFix("integer-type", key, Describe(v), v.u64 ? "bool true" : "bool false",
                         "a 0/1 integer stored for a bool");
          } else {
            log_->Refuse(key, "expected a bool, found " + Describe(v));
          }
          break;
        case HpKind::kI32Array4: ReadSections(key, v, &hp->rope_sections); break;
        case HpKind::kU32OrPerLayer: ReadPerLayer(key, v, hp->n_layer_all, &(hp->*(s.u32_field))); break;
        case HpKind::kGating: ReadGating(s, key, v, hp); break;
      }
    }
    return Status::Ok();
  }

  // expert_gating_func: 1 softmax, 2 sigmoid, 3 softmax over the chosen; 0
  // (llama.cpp's "none") means the architecture's default.
  void ReadGating(const HParamSpec& s, const std::string& key, const Value& v, HParams* hp) {
    uint32_t g = 0;
    if (!ReadU32(key, v, &g)) return;
    if (g == 0) {
      hp->expert_gating = static_cast<ExpertGating>(s.default_value);
      log_->AddFix("default", key, Describe(v), StrFormat("u32 %g", s.default_value),
                   s.why_default_safe ? s.why_default_safe : "");
      return;
    }
    if (g > 3) {
      log_->Refuse(key, "expected 1 (softmax), 2 (sigmoid) or 3 (softmax over the chosen), found " + Describe(v) +
                            ", a gating function Strata does not implement");
      return;
    }
    hp->expert_gating = static_cast<ExpertGating>(g);
  }

  // RoPE scaling, for every architecture, as llama.cpp reads it:
  // rope.scaling.type (none, linear or yarn; absent: linear, a no-op without
  // a factor), rope.scaling.factor or the older rope.scale_linear (the
  // position divisor; absent or 0: 1), rope.scaling.original_context_length
  // (YaRN's corrections; absent: context_length) and rope.scaling.attn_factor
  // (absent: 1).
  void ReadRopeScaling(HParams* hp) {
    const std::string type_key = arch_name_ + ".rope.scaling.type";
    RopeScaling type = RopeScaling::kLinear;
    if (const KeyValue* kv = m_.Find(type_key)) {
      const Value& v = kv->value;
      const std::string_view t = v.type == ValueType::kString ? v.str : std::string_view();
      if (v.type != ValueType::kString || (t != "none" && t != "linear" && t != "yarn")) {
        log_->Refuse(type_key, "expected \"none\", \"linear\" or \"yarn\", found " + Describe(v) +
                                   (t == "longrope" ? " (LongRoPE, which Strata does not implement)" : ""));
        return;
      }
      type = t == "none" ? RopeScaling::kNone : t == "yarn" ? RopeScaling::kYarn : RopeScaling::kLinear;
    }
    float factor = 0.0f;
    for (const char* suffix : {"rope.scaling.factor", "rope.scale_linear"}) {
      const std::string key = arch_name_ + "." + suffix;
      if (const KeyValue* kv = m_.Find(key)) {
        if (!ReadF32(key, kv->value, &factor)) return;
        if (!std::isfinite(factor) || factor < 0.0f) {
          log_->Refuse(key, "expected a finite factor >= 0, found " + Describe(kv->value));
          return;
        }
        break;
      }
    }
    const std::string orig_key = arch_name_ + ".rope.scaling.original_context_length";
    hp->n_ctx_orig_yarn = hp->n_ctx_train;
    if (const KeyValue* kv = m_.Find(orig_key))
      if (!ReadU32(orig_key, kv->value, &hp->n_ctx_orig_yarn)) return;
    const std::string attn_key = arch_name_ + ".rope.scaling.attn_factor";
    if (const KeyValue* kv = m_.Find(attn_key))
      if (!ReadF32(attn_key, kv->value, &hp->rope_attn_factor)) return;
    hp->rope_freq_scale = (type == RopeScaling::kNone || factor == 0.0f) ? 1.0f : 1.0f / factor;
    hp->rope_scaling = hp->rope_freq_scale == 1.0f && type == RopeScaling::kLinear ? RopeScaling::kNone : type;
  }

  void CheckUnsupportedKeys(const ArchSpec& spec) {
    for (const UnsupportedKey& u : kUnsupportedKeys) {
      if (SpecReads(spec, u.suffix)) continue;  // a key the spec reads is not unsupported
      std::string key = arch_name_ + "." + u.suffix;
      const KeyValue* kv = m_.Find(key);
      if (!kv) continue;
      const Value& v = kv->value;
      std::string text = v.type == ValueType::kString ? std::string(v.str)
                         : gguf::IsFloatType(v.type)  ? StrFormat("%g", v.f64)
                         : v.is_integer()             ? StrFormat("%" PRId64, v.i64)
                                                      : Describe(v);
      if (text != u.off_value)
        log_->Refuse(key, std::string("this model uses ") + u.what + " (" + Describe(v) +
                              "), which Strata does not implement; its output would be wrong");
    }
  }

  const gguf::GgufModel& m_;
  std::string arch_name_;
  const PackOptions& opts_;
  FixLog* log_;
};

}  // namespace

Result<HParams> ImportHParams(const gguf::GgufModel& model, Arch arch, uint32_t token_count,
                              const PackOptions& options, FixLog* log) {
  HParams hp;
  hp.n_vocab = token_count;
  const ArchSpec& spec = GetArchSpec(arch);
  Importer imp(model, arch, options, log);
  for (const auto& [key, value] : options.overrides) {
    bool known = false;
    for (const HParamSpec& s : spec.hparams) known |= imp.Key(s.key) == key;
    if (!known)
      return InvalidArgument("--set " + key + "=" + value + ": not a hyperparameter of " + std::string(ArchName(arch)) +
                             " that Strata reads");
  }
  STRATA_RETURN_IF_ERROR(imp.Import(spec, &hp));
  // GLM-4.7-Flash ("GLM 4.7 Lite") is stored as deepseek2; when its file lacks
  // expert_gating_func, llama.cpp takes sigmoid for that shape (47 or 48
  // layers, 154880 tokens) where the architecture's default is softmax.
  // Strata does not guess a model from its shape: it asks.
  if (spec.layers.attention == Mixer::kLatentAttention && !model.Find(imp.Key("expert_gating_func")) &&
      !imp.OverrideFor(imp.Key("expert_gating_func")) && (hp.n_layer_all == 47 || hp.n_layer_all == 48) &&
      hp.n_vocab == 154880)
    log->Refuse(imp.Key("expert_gating_func"),
                "missing, and the model has GLM-4.7-Flash's shape (47 or 48 layers, 154880 tokens), for which "
                "llama.cpp takes the sigmoid router, not the softmax default; say which",
                "--set " + imp.Key("expert_gating_func") + "=2");
  // deepseek2's older form (ArchSpec::fused_kv_b): no key_length_mla, the
  // per-head key and value widths in key_length and value_length, every
  // query head its own KV head; the packer makes the latent form of it.
  if (spec.fused_kv_b && !model.Find(imp.Key("attention.key_length_mla")) &&
      !imp.OverrideFor(imp.Key("attention.key_length_mla")) && model.FindTensor(TensorName(spec.fused_kv_b, 0))) {
    const HParams old = hp;
    hp.head_dim_k_mla = old.head_dim_k;
    hp.head_dim_v_mla = old.head_dim_v;
    hp.head_dim_k = old.kv_lora_rank + old.n_rot;
    hp.head_dim_v = old.kv_lora_rank;
    hp.n_head_kv = 1;
    log->AddFix("latent-form", imp.Key("attention.key_length_mla"),
                StrFormat("absent; key_length %u, value_length %u, head_count_kv %u", old.head_dim_k, old.head_dim_v,
                          old.n_head_kv),
                StrFormat("key_length_mla %u, value_length_mla %u; key_length %u, value_length %u, head_count_kv 1",
                          hp.head_dim_k_mla, hp.head_dim_v_mla, hp.head_dim_k, hp.head_dim_v),
                "a GGUF of the older form (one attn_kv_b a layer): llama.cpp reads the same widths from "
                "key_length and value_length; Strata runs the latent form, whose cache holds the latent");
  }
  imp.CheckUnsupportedKeys(spec);
  imp.ReadRopeScaling(&hp);
  hp.rope_type = spec.rope_type;
  hp.swiglu_alpha = spec.swiglu_alpha;
  hp.swiglu_limit = spec.swiglu_limit;
  hp.ssm_grouped_heads = spec.ssm_grouped_heads;
  // A sliding window with a RoPE base of its own (rope.freq_base_swa): runs
  // with one base only.
  if (const gguf::KeyValue* kv = model.Find(imp.Key("rope.freq_base_swa"))) {
    float swa_base = 0.0f;
    if (imp.ReadF32(imp.Key("rope.freq_base_swa"), kv->value, &swa_base) && swa_base != hp.rope_freq_base)
      log->Refuse(imp.Key("rope.freq_base_swa"),
                  StrFormat("expected the rope.freq_base of the other layers (%g), found %g: a RoPE base per layer "
                            "kind, which Strata does not implement",
                            static_cast<double>(hp.rope_freq_base), static_cast<double>(swa_base)));
  }
  // The Qwen MoE architectures renormalize the top k always (llama.cpp passes
  // true); an architecture that lists expert_weights_norm reads it.
  if (!SpecReads(spec, "expert_weights_norm")) hp.expert_weights_norm = spec.has_experts();
  if (hp.nextn_predict_layers < hp.n_layer_all) hp.n_layer = hp.n_layer_all - hp.nextn_predict_layers;

  // seeds/000: a missing nextn_predict_layers defaults to 0, which is only
  // right when the file has no MTP tensors.
  if (SpecReads(spec, "nextn_predict_layers") && !model.Find(imp.Key("nextn_predict_layers")) &&
      !imp.OverrideFor(imp.Key("nextn_predict_layers"))) {
    for (const auto& t : model.tensors()) {
      if (t.name.find(".nextn.") != std::string_view::npos) {
        log->Refuse(imp.Key("nextn_predict_layers"),
                    "missing, and the file has MTP tensors (" + std::string(t.name) +
                        "), so the default 0 would be wrong",
                    "--set " + imp.Key("nextn_predict_layers") + "=N");
        break;
      }
    }
  }
  if (!log->refused()) {
    Status s = CheckHParams(arch, hp);
    if (!s.ok()) log->Refuse(std::string(ArchName(arch)) + " hyperparameters", s.message());
  }
  return hp;
}

}  // namespace strata
