#include "packer/inspect.h"

#include <cinttypes>
#include <map>

#include "runtime/base/strings.h"

namespace strata {
namespace {

using gguf::GgufModel;
using gguf::KeyValue;
using gguf::Value;
using gguf::ValueType;

nlohmann::json ValueJson(const Value& v, size_t max_array = 16) {
  using nlohmann::json;
  switch (v.type) {
    case ValueType::kString: return json(std::string(v.str));
    case ValueType::kBool: return json(v.u64 != 0);
    case ValueType::kF32: case ValueType::kF64: return json(v.f64);
    case ValueType::kArray: {
      json j = json::object();
      j["type"] = v.TypeString();
      j["count"] = v.count;
      json items = json::array();
      for (uint64_t i = 0; i < v.count && i < max_array; ++i) {
        if (v.elem_type == ValueType::kString) items.push_back(std::string(v.strings[i]));
        else if (gguf::IsFloatType(v.elem_type)) items.push_back(v.FloatAt(i));
        else if (v.elem_type == ValueType::kBool) items.push_back(v.IntAt(i).value_or(0) != 0);
        else if (v.elem_type == ValueType::kU64) items.push_back(v.UIntAt(i).value_or(0));  // a u64 always fits
        else items.push_back(v.IntAt(i).value_or(0));  // every other integer type fits int64
      }
      j["head"] = items;
      return j;
    }
    default:
      if (v.is_signed_integer()) return json(v.i64);
      return json(v.u64);
  }
}

std::string ValueText(const Value& v) {
  if (v.type == ValueType::kString) {
    std::string q = "\"";
    q += Printable(v.str, 100);
    q += '"';
    return q;
  }
  if (v.type != ValueType::kArray) {
    std::string d = v.Describe();
    size_t sp = d.find(' ');
    return sp == std::string::npos ? d : d.substr(sp + 1);
  }
  std::string s = v.TypeString() + StrFormat(" x %" PRIu64 " [", v.count);
  for (uint64_t i = 0; i < v.count && i < 8; ++i) {
    if (i) s += ", ";
    if (v.elem_type == ValueType::kString) {
      s += '"';
      s += Printable(v.strings[i], 24);
      s += '"';
    }
    else if (gguf::IsFloatType(v.elem_type)) s += StrFormat("%g", v.FloatAt(i));
    else s += v.ElementText(i);
  }
  if (v.count > 8) s += ", ...";
  return s + "]";
}

const char* kSpecialIds[] = {"bos", "eos", "eot", "eom", "unknown", "seperator", "padding", "cls", "mask"};

}  // namespace

nlohmann::json InspectGgufJson(const GgufModel& m) {
  using nlohmann::json;
  json j;
  json files = json::array();
  for (size_t i = 0; i < m.shard_count(); ++i) {
    const auto& s = m.shard(i);
    files.push_back({{"path", s.path},
                     {"bytes", s.file.size()},
                     {"version", s.parsed.version},
                     {"alignment", s.parsed.alignment},
                     {"tensors", s.parsed.tensors.size()},
                     {"metadata_keys", s.parsed.kv.size()}});
  }
  j["files"] = files;
  std::string arch;
  if (auto a = m.GetString("general.architecture"); a.ok()) arch = std::string(*a);
  j["architecture"] = arch.empty() ? json(nullptr) : json(arch);
  if (auto nm = m.GetString("general.name"); nm.ok()) j["name"] = std::string(*nm);

  json hp = json::object();
  json general = json::object();
  json tok = json::object();
  json other = json::object();
  for (const KeyValue& kv : m.metadata()) {
    std::string key(kv.key);
    if (!arch.empty() && StartsWith(key, arch + ".")) hp[key.substr(arch.size() + 1)] = ValueJson(kv.value);
    else if (StartsWith(key, "general.")) general[key.substr(8)] = ValueJson(kv.value);
    else if (StartsWith(key, "tokenizer.")) continue;
    else other[key] = ValueJson(kv.value);
  }
  j["hyperparameters"] = hp;
  j["general"] = general;
  if (!other.empty()) j["other_metadata"] = other;

  if (auto tm = m.GetString("tokenizer.ggml.model"); tm.ok()) tok["model"] = std::string(*tm);
  if (auto tp = m.GetString("tokenizer.ggml.pre"); tp.ok()) tok["pre"] = std::string(*tp);
  if (const KeyValue* t = m.Find("tokenizer.ggml.tokens"); t && t->value.is_array()) tok["vocab_size"] = t->value.count;
  if (const KeyValue* t = m.Find("tokenizer.ggml.merges"); t && t->value.is_array()) tok["merges"] = t->value.count;
  json special = json::object();
  for (const char* s : kSpecialIds) {
    if (const KeyValue* t = m.Find(std::string("tokenizer.ggml.") + s + "_token_id"); t && t->value.is_integer())
      special[s] = t->value.i64;
  }
  tok["special_ids"] = special;
  for (const char* b : {"add_bos_token", "add_eos_token", "add_space_prefix"})
    if (const KeyValue* t = m.Find(std::string("tokenizer.ggml.") + b); t && t->value.type == ValueType::kBool)
      tok[b] = t->value.u64 != 0;
  if (const KeyValue* t = m.Find("tokenizer.chat_template"); t && t->value.type == ValueType::kString)
    tok["chat_template_bytes"] = t->value.str.size();
  j["tokenizer"] = tok;

  std::map<std::string, std::pair<uint64_t, uint64_t>> by_type;
  uint64_t total = 0;
  for (const auto& t : m.tensors()) {
    auto& e = by_type[std::string(TypeName(t.type))];
    e.first += 1;
    e.second += t.nbytes;
    total += t.nbytes;
  }
  json bt = json::object();
  for (const auto& [name, e] : by_type) bt[name] = {{"count", e.first}, {"bytes", e.second}};
  j["tensors"] = {{"count", m.tensors().size()}, {"bytes", total}, {"by_type", bt}};
  return j;
}

std::string InspectGgufText(const GgufModel& m) {
  nlohmann::json j = InspectGgufJson(m);
  std::string out;
  for (const auto& f : j["files"])
    out += StrFormat("file         %s (%s, GGUF v%u, alignment %u, %zu tensors, %zu keys)\n",
                     f["path"].get<std::string>().c_str(), HumanBytes(f["bytes"].get<uint64_t>()).c_str(),
                     f["version"].get<uint32_t>(), f["alignment"].get<uint32_t>(), f["tensors"].get<size_t>(),
                     f["metadata_keys"].get<size_t>());
  std::string arch = j["architecture"].is_null() ? "(none: general.architecture is missing)"
                                                  : j["architecture"].get<std::string>();
  out += "architecture " + arch + "\n";
  if (j.contains("name")) out += "name         " + j["name"].get<std::string>() + "\n";
  std::string prefix = j["architecture"].is_null() ? "" : arch + ".";
  if (!j["hyperparameters"].empty()) {
    out += "hyperparameters\n";
    for (const KeyValue& kv : m.metadata()) {
      std::string key(kv.key);
      if (!prefix.empty() && StartsWith(key, prefix))
        out += StrFormat("  %-40s %s\n", key.substr(prefix.size()).c_str(), ValueText(kv.value).c_str());
    }
  }
  const auto& tok = j["tokenizer"];
  out += "tokenizer\n";
  out += StrFormat("  %-40s %s\n", "model", tok.contains("model") ? tok["model"].get<std::string>().c_str() : "(none)");
  out += StrFormat("  %-40s %s\n", "pre-tokenizer", tok.contains("pre") ? tok["pre"].get<std::string>().c_str() : "(none)");
  if (tok.contains("vocab_size")) out += StrFormat("  %-40s %" PRIu64 "\n", "vocab size", tok["vocab_size"].get<uint64_t>());
  if (tok.contains("merges")) out += StrFormat("  %-40s %" PRIu64 "\n", "merges", tok["merges"].get<uint64_t>());
  for (const auto& [k, v] : tok["special_ids"].items())
    out += StrFormat("  %-40s %" PRId64 "\n", (k + " id").c_str(), v.get<int64_t>());
  if (tok.contains("chat_template_bytes"))
    out += StrFormat("  %-40s %zu bytes\n", "chat template", tok["chat_template_bytes"].get<size_t>());
  const auto& tj = j["tensors"];
  out += StrFormat("tensors      %zu, %s\n", tj["count"].get<size_t>(), HumanBytes(tj["bytes"].get<uint64_t>()).c_str());
  for (const auto& [name, e] : tj["by_type"].items())
    out += StrFormat("  %-8s %6zu tensors %12s\n", name.c_str(), e["count"].get<size_t>(),
                     HumanBytes(e["bytes"].get<uint64_t>()).c_str());
  return out;
}

}  // namespace strata
