#include "tests/gguf_writer/gguf_builder.h"

#include <algorithm>
#include <cstring>

#include "runtime/base/atomic_file.h"
#include "runtime/base/strings.h"

namespace strata::testing {
namespace {

using gguf::ValueType;

template <typename T>
void Append(std::vector<uint8_t>* out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out->insert(out->end(), b, b + sizeof(T));
}

void AppendString(std::vector<uint8_t>* out, const std::string& s) {
  Append<uint64_t>(out, s.size());
  out->insert(out->end(), s.begin(), s.end());
}

template <typename T>
std::vector<uint8_t> Scalar(T v) {
  std::vector<uint8_t> e;
  Append(&e, v);
  return e;
}

uint32_t Id(ValueType t) { return static_cast<uint32_t>(t); }

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

const GgufLayout::Kv* GgufLayout::FindKv(const std::string& key) const {
  for (const auto& k : kv)
    if (k.key == key) return &k;
  return nullptr;
}

const GgufLayout::Tensor* GgufLayout::FindTensor(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

GgufBuilder& GgufBuilder::Put(const std::string& key, uint32_t type_id, std::vector<uint8_t> encoded) {
  for (auto& e : kv_) {
    if (e.key == key) {
      e.type_id = type_id;
      e.encoded = std::move(encoded);
      return *this;
    }
  }
  kv_.push_back({key, type_id, std::move(encoded)});
  return *this;
}

GgufBuilder& GgufBuilder::SetAlignment(uint32_t a) {
  alignment_ = a;
  return U32("general.alignment", a);
}

GgufBuilder& GgufBuilder::U8(const std::string& k, uint8_t v) { return Put(k, Id(ValueType::kU8), Scalar(v)); }
GgufBuilder& GgufBuilder::I8(const std::string& k, int8_t v) { return Put(k, Id(ValueType::kI8), Scalar(v)); }
GgufBuilder& GgufBuilder::U16(const std::string& k, uint16_t v) { return Put(k, Id(ValueType::kU16), Scalar(v)); }
GgufBuilder& GgufBuilder::I16(const std::string& k, int16_t v) { return Put(k, Id(ValueType::kI16), Scalar(v)); }
GgufBuilder& GgufBuilder::U32(const std::string& k, uint32_t v) { return Put(k, Id(ValueType::kU32), Scalar(v)); }
GgufBuilder& GgufBuilder::I32(const std::string& k, int32_t v) { return Put(k, Id(ValueType::kI32), Scalar(v)); }
GgufBuilder& GgufBuilder::U64(const std::string& k, uint64_t v) { return Put(k, Id(ValueType::kU64), Scalar(v)); }
GgufBuilder& GgufBuilder::I64(const std::string& k, int64_t v) { return Put(k, Id(ValueType::kI64), Scalar(v)); }
GgufBuilder& GgufBuilder::F32(const std::string& k, float v) { return Put(k, Id(ValueType::kF32), Scalar(v)); }
GgufBuilder& GgufBuilder::F64(const std::string& k, double v) { return Put(k, Id(ValueType::kF64), Scalar(v)); }
GgufBuilder& GgufBuilder::Bool(const std::string& k, bool v) {
  return Put(k, Id(ValueType::kBool), Scalar<uint8_t>(v ? 1 : 0));
}
GgufBuilder& GgufBuilder::String(const std::string& k, const std::string& v) {
  std::vector<uint8_t> e;
  AppendString(&e, v);
  return Put(k, Id(ValueType::kString), std::move(e));
}

GgufBuilder& GgufBuilder::StringArray(const std::string& k, const std::vector<std::string>& v) {
  std::vector<uint8_t> e;
  Append<uint32_t>(&e, Id(ValueType::kString));
  Append<uint64_t>(&e, v.size());
  for (const auto& s : v) AppendString(&e, s);
  return Put(k, Id(ValueType::kArray), std::move(e));
}

namespace {
template <typename T>
std::vector<uint8_t> NumArray(ValueType et, const std::vector<T>& v) {
  std::vector<uint8_t> e;
  Append<uint32_t>(&e, static_cast<uint32_t>(et));
  Append<uint64_t>(&e, v.size());
  for (T x : v) Append(&e, x);
  return e;
}
}  // namespace

GgufBuilder& GgufBuilder::I32Array(const std::string& k, const std::vector<int32_t>& v) {
  return Put(k, Id(ValueType::kArray), NumArray(ValueType::kI32, v));
}
GgufBuilder& GgufBuilder::U32Array(const std::string& k, const std::vector<uint32_t>& v) {
  return Put(k, Id(ValueType::kArray), NumArray(ValueType::kU32, v));
}
GgufBuilder& GgufBuilder::F32Array(const std::string& k, const std::vector<float>& v) {
  return Put(k, Id(ValueType::kArray), NumArray(ValueType::kF32, v));
}
GgufBuilder& GgufBuilder::F64Array(const std::string& k, const std::vector<double>& v) {
  return Put(k, Id(ValueType::kArray), NumArray(ValueType::kF64, v));
}
GgufBuilder& GgufBuilder::U64Array(const std::string& k, const std::vector<uint64_t>& v) {
  return Put(k, Id(ValueType::kArray), NumArray(ValueType::kU64, v));
}
GgufBuilder& GgufBuilder::BoolArray(const std::string& k, const std::vector<bool>& v) {
  std::vector<uint8_t> b;
  for (bool x : v) b.push_back(x ? 1 : 0);
  return Put(k, Id(ValueType::kArray), NumArray(ValueType::kBool, b));
}

GgufBuilder& GgufBuilder::RawValue(const std::string& k, uint32_t type_id, std::vector<uint8_t> encoded) {
  return Put(k, type_id, std::move(encoded));
}

GgufBuilder& GgufBuilder::Remove(const std::string& key) {
  kv_.erase(std::remove_if(kv_.begin(), kv_.end(), [&](const KvEntry& e) { return e.key == key; }), kv_.end());
  return *this;
}

bool GgufBuilder::Has(const std::string& key) const {
  return std::any_of(kv_.begin(), kv_.end(), [&](const KvEntry& e) { return e.key == key; });
}

GgufBuilder& GgufBuilder::CopyMetadata(const gguf::ParsedGguf& parsed, bool skip_split_keys) {
  for (const gguf::KeyValue& kv : parsed.kv) {
    std::string key(kv.key);
    if (skip_split_keys && StartsWith(key, "split.")) continue;
    const gguf::Value& v = kv.value;
    std::vector<uint8_t> e;
    switch (v.type) {
      case ValueType::kString: AppendString(&e, std::string(v.str)); break;
      case ValueType::kArray: {
        Append<uint32_t>(&e, Id(v.elem_type));
        Append<uint64_t>(&e, v.count);
        if (v.elem_type == ValueType::kString) {
          for (auto s : v.strings) AppendString(&e, std::string(s));
        } else {
          uint64_t n = v.count * gguf::ScalarSize(v.elem_type);
          e.insert(e.end(), v.elems, v.elems + n);
        }
        break;
      }
      case ValueType::kF32: Append<float>(&e, static_cast<float>(v.f64)); break;
      case ValueType::kF64: Append<double>(&e, v.f64); break;
      default: {
        uint32_t sz = gguf::ScalarSize(v.type);
        uint64_t raw = v.u64;
        uint8_t b[8];
        std::memcpy(b, &raw, 8);
        e.insert(e.end(), b, b + sz);
        break;
      }
    }
    if (key == "general.alignment") alignment_ = static_cast<uint32_t>(v.u64);
    Put(key, Id(v.type), std::move(e));
  }
  return *this;
}

GgufBuilder& GgufBuilder::Tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne,
                                 std::vector<uint8_t> data) {
  return RawTensor(name, static_cast<uint32_t>(type), std::move(ne), std::move(data));
}

GgufBuilder& GgufBuilder::TensorF32(const std::string& name, std::vector<int64_t> ne, const std::vector<float>& values) {
  std::vector<uint8_t> d(values.size() * 4);
  std::memcpy(d.data(), values.data(), d.size());
  return Tensor(name, GgmlType::kF32, std::move(ne), std::move(d));
}

GgufBuilder& GgufBuilder::RawTensor(const std::string& name, uint32_t type_id, std::vector<int64_t> ne,
                                    std::vector<uint8_t> data, uint64_t offset) {
  for (auto& t : tensors_) {
    if (t.name == name) {
      t = {name, type_id, std::move(ne), std::move(data), offset};
      return *this;
    }
  }
  tensors_.push_back({name, type_id, std::move(ne), std::move(data), offset});
  return *this;
}

GgufBuilder& GgufBuilder::RemoveTensor(const std::string& name) {
  tensors_.erase(std::remove_if(tensors_.begin(), tensors_.end(), [&](const TensorEntry& t) { return t.name == name; }),
                 tensors_.end());
  return *this;
}

GgufBuilder& GgufBuilder::ReshapeTensor(const std::string& name, std::vector<int64_t> ne) {
  for (auto& t : tensors_)
    if (t.name == name) t.ne = std::move(ne);
  return *this;
}

std::vector<std::string> GgufBuilder::TensorNames() const {
  std::vector<std::string> n;
  for (const auto& t : tensors_) n.push_back(t.name);
  return n;
}

// Serializes everything before the data section; fills `lay` and the
// relative offset of every tensor.
std::vector<uint8_t> GgufBuilder::BuildHead(GgufLayout* lay, std::vector<uint64_t>* rel) const {
  std::vector<uint8_t> out;
  out.insert(out.end(), {'G', 'G', 'U', 'F'});
  Append<uint32_t>(&out, version_);
  Append<uint64_t>(&out, tensors_.size());
  Append<uint64_t>(&out, kv_.size());
  for (const auto& e : kv_) {
    GgufLayout::Kv k;
    k.key = e.key;
    k.key_len_offset = out.size();
    AppendString(&out, e.key);
    k.type_offset = out.size();
    Append<uint32_t>(&out, e.type_id);
    k.value_offset = out.size();
    out.insert(out.end(), e.encoded.begin(), e.encoded.end());
    lay->kv.push_back(k);
  }
  const uint64_t align = alignment_ ? alignment_ : 32;
  uint64_t next = 0;
  rel->assign(tensors_.size(), 0);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    (*rel)[i] = t.offset != UINT64_MAX ? t.offset : next;
    if (t.offset == UINT64_MAX) next = AlignUp(next + t.data.size(), align);
    GgufLayout::Tensor lt;
    lt.name = t.name;
    lt.name_len_offset = out.size();
    AppendString(&out, t.name);
    lt.n_dims_offset = out.size();
    Append<uint32_t>(&out, static_cast<uint32_t>(t.ne.size()));
    lt.ne_offset = out.size();
    for (int64_t d : t.ne) Append<int64_t>(&out, d);
    lt.type_offset = out.size();
    Append<uint32_t>(&out, t.type_id);
    lt.offset_offset = out.size();
    Append<uint64_t>(&out, (*rel)[i]);
    lt.nbytes = t.data.size();
    lay->tensors.push_back(lt);
  }
  if (!tensors_.empty()) out.resize(AlignUp(out.size(), align), 0);
  lay->data_section_offset = out.size();
  return out;
}

std::vector<uint8_t> GgufBuilder::Build(GgufLayout* layout) const {
  GgufLayout lay;
  std::vector<uint64_t> rel;
  std::vector<uint8_t> out = BuildHead(&lay, &rel);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    if (t.offset != UINT64_MAX) continue;  // raw offsets: data is not placed
    uint64_t at = lay.data_section_offset + rel[i];
    if (out.size() < at) out.resize(at, 0);
    out.insert(out.end(), t.data.begin(), t.data.end());
    lay.tensors[i].data_offset = at;
  }
  lay.file_size = out.size();
  if (layout) *layout = std::move(lay);
  return out;
}

Status GgufBuilder::WriteFile(const std::string& path, GgufLayout* layout) const {
  // Streams the data section instead of building one buffer (models of many GB).
  GgufLayout lay;
  std::vector<uint64_t> rel;
  std::vector<uint8_t> head = BuildHead(&lay, &rel);
  STRATA_ASSIGN_OR_RETURN(AtomicFileWriter w, AtomicFileWriter::Create(path));
  STRATA_RETURN_IF_ERROR(w.Write(head));
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    if (t.offset != UINT64_MAX) continue;
    uint64_t at = lay.data_section_offset + rel[i];
    if (w.position() < at) STRATA_RETURN_IF_ERROR(w.WriteZeros(at - w.position()));
    STRATA_RETURN_IF_ERROR(w.Write(t.data));
    lay.tensors[i].data_offset = at;
  }
  lay.file_size = w.position();
  if (layout) *layout = std::move(lay);
  return w.Commit();
}

Result<std::vector<std::string>> GgufBuilder::WriteSplit(const std::string& prefix, uint32_t n) const {
  if (n < 1 || n > tensors_.size()) return InvalidArgument("split count must be 1..number of tensors");
  std::vector<std::string> paths;
  size_t per = (tensors_.size() + n - 1) / n;
  for (uint32_t s = 0; s < n; ++s) {
    GgufBuilder b;
    b.version_ = version_;
    b.alignment_ = alignment_;
    if (s == 0) b.kv_ = kv_;
    b.U16("split.no", static_cast<uint16_t>(s));
    b.U16("split.count", static_cast<uint16_t>(n));
    b.I32("split.tensors.count", static_cast<int32_t>(tensors_.size()));
    if (s != 0 && alignment_ != 32) b.U32("general.alignment", alignment_);
    for (size_t i = s * per; i < std::min(tensors_.size(), (s + 1) * per); ++i) b.tensors_.push_back(tensors_[i]);
    std::string path = gguf::MakeSplitName(prefix, s + 1, n);
    STRATA_RETURN_IF_ERROR(b.WriteFile(path));
    paths.push_back(path);
  }
  return paths;
}

}  // namespace strata::testing
