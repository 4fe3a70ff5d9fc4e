#include "packer/gguf/gguf_file.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <unordered_set>

#include "runtime/base/checked_cast.h"
#include "runtime/base/checked_math.h"
#include "runtime/base/strings.h"

namespace strata::gguf {
namespace {

// Smallest possible encodings, used to bound counts before anything is sized by them.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;          // key length, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // name length, n_dims, type, offset

std::string U64(uint64_t v) { return StrFormat("%" PRIu64, v); }
std::string I64(int64_t v) { return StrFormat("%" PRId64, v); }

// Sequential little-endian reader over untrusted bytes.
class Reader {
 public:
  Reader(std::string_view name, std::span<const uint8_t> bytes) : name_(name), bytes_(bytes) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  const uint8_t* here() const { return bytes_.data() + pos_; }
  std::string_view name() const { return name_; }

  Status Truncated(std::string_view field, uint64_t need) const {
    return CorruptAt(name_, pos_, field, StrFormat("%" PRIu64 " more bytes", need),
                     StrFormat("the file ends after %" PRIu64 " (truncated)", remaining()));
  }
  Status Bad(uint64_t at, std::string_view field, std::string_view expected, std::string_view found) const {
    return CorruptAt(name_, at, field, expected, found);
  }

  template <typename T>
  Status Read(T* out, std::string_view field) {
    if (remaining() < sizeof(T)) return Truncated(field, sizeof(T));
    std::memcpy(out, here(), sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  Status Skip(uint64_t n, std::string_view field) {
    if (remaining() < n) return Truncated(field, n);
    pos_ += n;
    return Status::Ok();
  }

  // A gguf_string: u64 length + bytes (no terminator).
  Status ReadString(std::string_view* out, std::string_view field, uint64_t max_len) {
    uint64_t at = pos_;
    uint64_t len;
    STRATA_RETURN_IF_ERROR(Read(&len, std::string(field) + " length"));
    if (len > max_len)
      return Bad(at, std::string(field) + " length", StrFormat("at most %" PRIu64 " bytes", max_len),
                 StrFormat("%" PRIu64, len));
    if (len > remaining()) return Truncated(field, len);
    *out = std::string_view(reinterpret_cast<const char*>(here()), static_cast<size_t>(len));
    pos_ += len;
    return Status::Ok();
  }

 private:
  std::string_view name_;
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

bool ValidValueType(uint32_t t) { return t < kValueTypeCount; }

Status ReadScalar(Reader& r, ValueType type, Value* v, const std::string& field) {
  switch (type) {
    case ValueType::kU8: { uint8_t x; STRATA_RETURN_IF_ERROR(r.Read(&x, field)); v->u64 = x; v->i64 = x; break; }
    case ValueType::kI8: { int8_t x; STRATA_RETURN_IF_ERROR(r.Read(&x, field)); v->i64 = x; v->u64 = static_cast<uint64_t>(x); break; }
    case ValueType::kU16: { uint16_t x; STRATA_RETURN_IF_ERROR(r.Read(&x, field)); v->u64 = x; v->i64 = x; break; }
    case ValueType::kI16: { int16_t x; STRATA_RETURN_IF_ERROR(r.Read(&x, field)); v->i64 = x; v->u64 = static_cast<uint64_t>(x); break; }
    case ValueType::kU32: { uint32_t x; STRATA_RETURN_IF_ERROR(r.Read(&x, field)); v->u64 = x; v->i64 = x; break; }
    case ValueType::kI32: { int32_t x; STRATA_RETURN_IF_ERROR(r.Read(&x, field)); v->i64 = x; v->u64 = static_cast<uint64_t>(x); break; }
    case ValueType::kU64: { uint64_t x; STRATA_RETURN_IF_ERROR(r.Read(&x, field)); v->u64 = x; v->i64 = static_cast<int64_t>(x); break; }
    case ValueType::kI64: { int64_t x; STRATA_RETURN_IF_ERROR(r.Read(&x, field)); v->i64 = x; v->u64 = static_cast<uint64_t>(x); break; }
    case ValueType::kF32: { float x; STRATA_RETURN_IF_ERROR(r.Read(&x, field)); v->f64 = static_cast<double>(x); break; }
    case ValueType::kF64: { double x; STRATA_RETURN_IF_ERROR(r.Read(&x, field)); v->f64 = x; break; }
    case ValueType::kBool: {
      uint64_t at = r.pos();
      uint8_t x;
      STRATA_RETURN_IF_ERROR(r.Read(&x, field));
      if (x > 1) return r.Bad(at, field, "a bool (0 or 1)", StrFormat("%u", x));
      v->u64 = x;
      v->i64 = x;
      break;
    }
    case ValueType::kString:
      return r.ReadString(&v->str, field, kMaxStringBytes);
    case ValueType::kArray:
      return Internal("ReadScalar called for an array");
  }
  return Status::Ok();
}

Status ReadValue(Reader& r, ValueType type, Value* v, const std::string& field) {
  v->type = type;
  v->offset = r.pos();
  if (type != ValueType::kArray) return ReadScalar(r, type, v, field);

  uint64_t at = r.pos();
  uint32_t et;
  STRATA_RETURN_IF_ERROR(r.Read(&et, field + " element type"));
  if (!ValidValueType(et))
    return r.Bad(at, field + " element type", "a type id 0..12", U64(et));
  if (static_cast<ValueType>(et) == ValueType::kArray)
    return r.Bad(at, field + " element type", "a scalar or string element type (nested arrays are not allowed)",
                 "array");
  v->elem_type = static_cast<ValueType>(et);
  at = r.pos();
  STRATA_RETURN_IF_ERROR(r.Read(&v->count, field + " element count"));
  if (v->count > kMaxArrayElements)
    return r.Bad(at, field + " element count", StrFormat("at most %" PRIu64, kMaxArrayElements), U64(v->count));

  if (v->elem_type == ValueType::kString) {
    uint64_t min_bytes;
    if (!CheckedMul<uint64_t>(v->count, 8, &min_bytes) || min_bytes > r.remaining())
      return r.Bad(at, field + " element count",
                   StrFormat("at most %" PRIu64 " strings in the %" PRIu64 " bytes left", r.remaining() / 8,
                             r.remaining()),
                   U64(v->count));
    v->strings.reserve(static_cast<size_t>(std::min<uint64_t>(v->count, 1u << 20)));
    for (uint64_t i = 0; i < v->count; ++i) {
      std::string_view s;
      STRATA_RETURN_IF_ERROR(r.ReadString(&s, field + StrFormat("[%" PRIu64 "]", i), kMaxStringBytes));
      v->strings.push_back(s);
    }
    return Status::Ok();
  }

  uint32_t esize = ScalarSize(v->elem_type);
  uint64_t bytes;
  if (!CheckedMul<uint64_t>(v->count, esize, &bytes) || bytes > r.remaining())
    return r.Bad(at, field + " element count",
                 StrFormat("at most %" PRIu64 " %s elements in the %" PRIu64 " bytes left",
                           r.remaining() / esize, std::string(ValueTypeName(v->elem_type)).c_str(), r.remaining()),
                 U64(v->count));
  v->elems = r.here();
  if (v->elem_type == ValueType::kBool) {
    for (uint64_t i = 0; i < v->count; ++i)
      if (v->elems[i] > 1)
        return r.Bad(r.pos() + i, field + StrFormat("[%" PRIu64 "]", i), "a bool (0 or 1)",
                     StrFormat("%u", v->elems[i]));
  }
  return r.Skip(bytes, field);
}

}  // namespace

std::string_view ValueTypeName(ValueType t) {
  switch (t) {
    case ValueType::kU8: return "u8";
    case ValueType::kI8: return "i8";
    case ValueType::kU16: return "u16";
    case ValueType::kI16: return "i16";
    case ValueType::kU32: return "u32";
    case ValueType::kI32: return "i32";
    case ValueType::kF32: return "f32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kU64: return "u64";
    case ValueType::kI64: return "i64";
    case ValueType::kF64: return "f64";
  }
  return "?";
}

uint32_t ScalarSize(ValueType t) {
  switch (t) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kBool: return 1;
    case ValueType::kU16: case ValueType::kI16: return 2;
    case ValueType::kU32: case ValueType::kI32: case ValueType::kF32: return 4;
    case ValueType::kU64: case ValueType::kI64: case ValueType::kF64: return 8;
    case ValueType::kString: case ValueType::kArray: return 0;
  }
  return 0;
}

bool IsIntegerType(ValueType t) {
  switch (t) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kU16: case ValueType::kI16:
    case ValueType::kU32: case ValueType::kI32: case ValueType::kU64: case ValueType::kI64: return true;
    default: return false;
  }
}

bool IsFloatType(ValueType t) { return t == ValueType::kF32 || t == ValueType::kF64; }

bool Value::is_signed_integer() const {
  return type == ValueType::kI8 || type == ValueType::kI16 || type == ValueType::kI32 || type == ValueType::kI64;
}

namespace {
template <typename T>
T LoadAt(const uint8_t* p, uint64_t i) {
  T x;
  std::memcpy(&x, p + i * sizeof(T), sizeof(T));
  return x;
}
}  // namespace

std::optional<int64_t> Value::IntAt(uint64_t i) const {
  switch (elem_type) {
    case ValueType::kU8: case ValueType::kBool: return LoadAt<uint8_t>(elems, i);
    case ValueType::kI8: return LoadAt<int8_t>(elems, i);
    case ValueType::kU16: return LoadAt<uint16_t>(elems, i);
    case ValueType::kI16: return LoadAt<int16_t>(elems, i);
    case ValueType::kU32: return LoadAt<uint32_t>(elems, i);
    case ValueType::kI32: return LoadAt<int32_t>(elems, i);
    case ValueType::kU64: return ExactCast<int64_t>(LoadAt<uint64_t>(elems, i));
    case ValueType::kI64: return LoadAt<int64_t>(elems, i);
    case ValueType::kF32: return ExactCast<int64_t>(LoadAt<float>(elems, i));
    case ValueType::kF64: return ExactCast<int64_t>(LoadAt<double>(elems, i));
    default: return std::nullopt;
  }
}

std::optional<uint64_t> Value::UIntAt(uint64_t i) const {
  switch (elem_type) {
    case ValueType::kU64: return LoadAt<uint64_t>(elems, i);
    case ValueType::kF32: return ExactCast<uint64_t>(LoadAt<float>(elems, i));
    case ValueType::kF64: return ExactCast<uint64_t>(LoadAt<double>(elems, i));
    default: {
      std::optional<int64_t> x = IntAt(i);
      if (!x) return std::nullopt;
      return ExactCast<uint64_t>(*x);
    }
  }
}

double Value::FloatAt(uint64_t i) const {
  switch (elem_type) {
    case ValueType::kF32: return static_cast<double>(LoadAt<float>(elems, i));
    case ValueType::kF64: return LoadAt<double>(elems, i);
    case ValueType::kU64: return static_cast<double>(LoadAt<uint64_t>(elems, i));
    default: return static_cast<double>(IntAt(i).value_or(0));
  }
}

std::string Value::ElementText(uint64_t i) const {
  switch (elem_type) {
    case ValueType::kString: return "\"" + Printable(strings[i], 60) + "\"";
    case ValueType::kF32: return NumberText(LoadAt<float>(elems, i));
    case ValueType::kF64: return NumberText(LoadAt<double>(elems, i));
    case ValueType::kU64: return NumberText(LoadAt<uint64_t>(elems, i));
    case ValueType::kBool: return LoadAt<uint8_t>(elems, i) ? "true" : "false";
    default: return NumberText(IntAt(i).value_or(0));
  }
}

std::string Value::TypeString() const {
  if (!is_array()) return std::string(ValueTypeName(type));
  return "array[" + std::string(ValueTypeName(elem_type)) + "]";
}

std::string Value::Describe() const {
  switch (type) {
    case ValueType::kString: return "string \"" + Printable(str, 60) + "\"";
    case ValueType::kBool: return u64 ? "bool true" : "bool false";
    case ValueType::kF32: case ValueType::kF64: return StrFormat("%s %g", std::string(ValueTypeName(type)).c_str(), f64);
    case ValueType::kArray: return StrFormat("array[%s, %" PRIu64 "]", std::string(ValueTypeName(elem_type)).c_str(), count);
    case ValueType::kU64: return "u64 " + U64(u64);
    default:
      if (is_signed_integer()) return std::string(ValueTypeName(type)) + " " + I64(i64);
      return std::string(ValueTypeName(type)) + " " + U64(u64);
  }
}

std::string TensorInfo::ShapeString() const {
  std::string s = "[";
  for (uint32_t i = 0; i < n_dims; ++i) {
    if (i) s += ", ";
    s += I64(ne[i]);
  }
  return s + "]";
}

const KeyValue* ParsedGguf::Find(std::string_view key) const {
  for (const KeyValue& e : kv)
    if (e.key == key) return &e;
  return nullptr;
}

Result<ParsedGguf> ParseGguf(std::string_view name, std::span<const uint8_t> bytes) {
  Reader r(name, bytes);
  ParsedGguf g;
  g.name = std::string(name);
  g.file_size = bytes.size();

  // --- header ---
  if (r.remaining() < 4) return r.Truncated("header magic", 4);
  if (std::memcmp(r.here(), "GGUF", 4) != 0) {
    std::string found = Printable(std::string_view(reinterpret_cast<const char*>(r.here()), 4));
    return r.Bad(0, "header magic", "\"GGUF\"", "\"" + found + "\"");
  }
  STRATA_RETURN_IF_ERROR(r.Skip(4, "header magic"));
  uint32_t version;
  STRATA_RETURN_IF_ERROR(r.Read(&version, "header version"));
  if (version != 2 && version != 3) {
    const uint32_t swapped = (version >> 24) | ((version >> 8) & 0xFF00u) | ((version << 8) & 0xFF0000u) | (version << 24);
    if ((version & 0xFFFFu) == 0 && (swapped == 2 || swapped == 3))
      return r.Bad(4, "header version", "a little-endian GGUF v2 or v3",
                   StrFormat("version %u byte-swapped: a big-endian GGUF, which Strata does not read", swapped));
    if (version == 1) return r.Bad(4, "header version", "2 or 3", "1 (GGUF v1 is no longer supported)");
    return r.Bad(4, "header version", "2 or 3", U64(version));
  }
  g.version = version;

  uint64_t n_tensors, n_kv;
  uint64_t at = r.pos();
  STRATA_RETURN_IF_ERROR(r.Read(&n_tensors, "header tensor count"));
  if (n_tensors > r.remaining() / kMinTensorInfoBytes)
    return r.Bad(at, "header tensor count",
                 StrFormat("at most %" PRIu64 " tensors in a file of %" PRIu64 " bytes",
                           r.remaining() / kMinTensorInfoBytes, r.size()),
                 n_tensors > INT64_MAX ? I64(static_cast<int64_t>(n_tensors)) + " (negative)" : U64(n_tensors));
  at = r.pos();
  STRATA_RETURN_IF_ERROR(r.Read(&n_kv, "header metadata count"));
  if (n_kv > r.remaining() / kMinKvBytes)
    return r.Bad(at, "header metadata count",
                 StrFormat("at most %" PRIu64 " key-value pairs in a file of %" PRIu64 " bytes",
                           r.remaining() / kMinKvBytes, r.size()),
                 n_kv > INT64_MAX ? I64(static_cast<int64_t>(n_kv)) + " (negative)" : U64(n_kv));

  // --- metadata ---
  g.kv.reserve(static_cast<size_t>(n_kv));
  std::unordered_map<std::string_view, uint64_t> seen_keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    KeyValue kv;
    kv.offset = r.pos();
    std::string field = StrFormat("metadata[%" PRIu64 "] key", i);
    STRATA_RETURN_IF_ERROR(r.ReadString(&kv.key, field, kMaxKeyBytes));
    if (kv.key.empty()) return r.Bad(kv.offset, field, "a non-empty key", "an empty key");
    std::string vfield = "metadata '" + Printable(kv.key) + "'";
    auto [it, inserted] = seen_keys.emplace(kv.key, kv.offset);
    if (!inserted)
      return r.Bad(kv.offset, vfield, "each key once",
                   StrFormat("a duplicate of the key at byte %" PRIu64, it->second));
    uint64_t type_at = r.pos();
    uint32_t type;
    STRATA_RETURN_IF_ERROR(r.Read(&type, vfield + " value type"));
    if (!ValidValueType(type)) return r.Bad(type_at, vfield + " value type", "a type id 0..12", U64(type));
    STRATA_RETURN_IF_ERROR(ReadValue(r, static_cast<ValueType>(type), &kv.value, vfield + " value"));
    g.kv.push_back(std::move(kv));
  }

  if (const KeyValue* a = g.Find("general.alignment")) {
    if (a->value.type != ValueType::kU32)
      return r.Bad(a->value.offset, "metadata 'general.alignment'", "type u32", a->value.TypeString());
    if (!IsPowerOfTwo(a->value.u64))
      return r.Bad(a->value.offset, "metadata 'general.alignment'", "a non-zero power of two", U64(a->value.u64));
    g.alignment = static_cast<uint32_t>(a->value.u64);
  }

  // --- tensor table ---
  g.tensors.reserve(static_cast<size_t>(n_tensors));
  std::unordered_map<std::string_view, uint64_t> seen_names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.info_offset = r.pos();
    std::string field = StrFormat("tensor[%" PRIu64 "] name", i);
    STRATA_RETURN_IF_ERROR(r.ReadString(&t.name, field, kMaxTensorNameBytes));
    if (t.name.empty()) return r.Bad(t.info_offset, field, "a non-empty name", "an empty name");
    std::string tf = StrFormat("tensor[%" PRIu64 "] '", i) + Printable(t.name) + "'";
    auto [it, inserted] = seen_names.emplace(t.name, t.info_offset);
    if (!inserted)
      return r.Bad(t.info_offset, tf, "each tensor name once",
                   StrFormat("a duplicate of the tensor at byte %" PRIu64, it->second));

    at = r.pos();
    STRATA_RETURN_IF_ERROR(r.Read(&t.n_dims, tf + " n_dims"));
    if (t.n_dims < 1 || t.n_dims > kMaxDims)
      return r.Bad(at, tf + " n_dims", StrFormat("1..%u", kMaxDims), U64(t.n_dims));
    int64_t n_el = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      at = r.pos();
      std::string df = tf + StrFormat(" ne[%u]", d);
      STRATA_RETURN_IF_ERROR(r.Read(&t.ne[d], df));
      if (t.ne[d] < 1) return r.Bad(at, df, "a dimension >= 1", I64(t.ne[d]));
      if (!CheckedMul<int64_t>(n_el, t.ne[d], &n_el))
        return r.Bad(at, df, "an element count that fits in 64 bits",
                     "a shape of " + t.ShapeString() + " whose element count overflows");
    }
    t.n_elements = static_cast<uint64_t>(n_el);

    at = r.pos();
    uint32_t type_id;
    STRATA_RETURN_IF_ERROR(r.Read(&type_id, tf + " type"));
    const GgmlTypeInfo* ti = LookupGgmlType(type_id);
    if (!ti) return r.Bad(at, tf + " type", "a ggml type id this build knows", DescribeTypeId(type_id));
    t.type = ti->type;
    if (t.ne[0] % ti->block_elems != 0)
      return r.Bad(at, tf + " type",
                   StrFormat("a row length (ne[0]) that is a multiple of the %s block size %u",
                             std::string(ti->name).c_str(), ti->block_elems),
                   I64(t.ne[0]));
    Result<uint64_t> nb = TensorBytes(t.type, t.dims());
    if (!nb.ok()) return r.Bad(at, tf + " size", "a byte size that fits in 64 bits", nb.status().message());
    t.nbytes = *nb;

    at = r.pos();
    STRATA_RETURN_IF_ERROR(r.Read(&t.rel_offset, tf + " data offset"));
    if (t.rel_offset % g.alignment != 0)
      return r.Bad(at, tf + " data offset", StrFormat("a multiple of the alignment %u", g.alignment),
                   U64(t.rel_offset));
    g.tensors.push_back(t);
  }

  // --- data section ---
  g.data_offset = r.pos();
  if (n_tensors > 0) {
    if (!CheckedAlignUp(r.pos(), g.alignment, &g.data_offset) || g.data_offset > r.size())
      return r.Bad(r.pos(), "data section",
                   StrFormat("to start at byte %" PRIu64 " (the next multiple of %u) inside the file", g.data_offset,
                             g.alignment),
                   StrFormat("a file of %" PRIu64 " bytes (truncated)", r.size()));
  }
  for (TensorInfo& t : g.tensors) {
    std::string tf = "tensor '" + Printable(t.name) + "' data";
    uint64_t end = 0;
    bool fits = CheckedAdd(g.data_offset, t.rel_offset, &t.offset) && CheckedAdd(t.offset, t.nbytes, &end);
    if (!fits || end > r.size()) {
      std::string found = fits ? StrFormat("bytes from %" PRIu64 " to %" PRIu64, t.offset, end)
                               : StrFormat("data offset %" PRIu64 " past the data section at %" PRIu64
                                           ", with %" PRIu64 " bytes: an end beyond 2^64",
                                           t.rel_offset, g.data_offset, t.nbytes);
      return r.Bad(t.info_offset, tf,
                   StrFormat("%" PRIu64 " bytes (%s %s) inside the file of %" PRIu64 " bytes", t.nbytes,
                             std::string(TypeName(t.type)).c_str(), t.ShapeString().c_str(), r.size()),
                   found);
    }
  }
  std::vector<size_t> order(g.tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return g.tensors[a].offset != g.tensors[b].offset ? g.tensors[a].offset < g.tensors[b].offset : a < b;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = g.tensors[order[k - 1]];
    const TensorInfo& cur = g.tensors[order[k]];
    if (cur.offset < prev.offset + prev.nbytes)
      return r.Bad(cur.info_offset, "tensor '" + Printable(cur.name) + "' data",
                   StrFormat("to start at or after byte %" PRIu64 ", where tensor '%s' ends",
                             prev.offset + prev.nbytes, Printable(prev.name).c_str()),
                   StrFormat("it starts at byte %" PRIu64 " (the two overlap)", cur.offset));
  }
  return g;
}

// ---------------------------------------------------------------------------
// Split models

bool ParseSplitName(const std::string& path, SplitName* out) {
  // PREFIX-NNNNN-of-MMMMM.gguf
  static constexpr std::string_view kSuffix = ".gguf";
  if (!EndsWith(path, kSuffix)) return false;
  std::string_view s(path);
  s.remove_suffix(kSuffix.size());
  if (s.size() < 19) return false;
  std::string_view tail = s.substr(s.size() - 15);  // "-00001-of-00003"
  auto digits = [](std::string_view d, uint32_t* v) {
    if (d.size() != 5) return false;
    uint32_t x = 0;
    for (char c : d) {
      if (c < '0' || c > '9') return false;
      x = x * 10 + static_cast<uint32_t>(c - '0');
    }
    *v = x;
    return true;
  };
  if (tail[0] != '-' || tail.substr(6, 4) != "-of-") return false;
  SplitName sn;
  if (!digits(tail.substr(1, 5), &sn.index) || !digits(tail.substr(10, 5), &sn.count)) return false;
  if (sn.index < 1 || sn.count < 1 || sn.index > sn.count) return false;
  sn.prefix = std::string(s.substr(0, s.size() - 15));
  *out = sn;
  return true;
}

std::string MakeSplitName(const std::string& prefix, uint32_t index, uint32_t count) {
  return StrFormat("%s-%05u-of-%05u.gguf", prefix.c_str(), index, count);
}

namespace {

// Reads an unsigned integer key of any width (llama-gguf-split writes u16/i32).
Status GetSplitInt(const ParsedGguf& g, std::string_view key, bool* present, uint64_t* out) {
  const KeyValue* kv = g.Find(key);
  *present = kv != nullptr;
  if (!kv) return Status::Ok();
  if (!kv->value.is_integer() || (kv->value.is_signed_integer() && kv->value.i64 < 0))
    return CorruptAt(g.name, kv->value.offset, "metadata '" + std::string(key) + "'", "a non-negative integer",
                     kv->value.Describe());
  *out = kv->value.u64;
  return Status::Ok();
}

}  // namespace

Result<GgufModel> GgufModel::Open(std::span<const std::string> paths_in) {
  if (paths_in.empty()) return InvalidArgument("no GGUF file given");
  std::vector<std::string> paths(paths_in.begin(), paths_in.end());

  SplitName sn;
  if (paths.size() == 1 && ParseSplitName(paths[0], &sn) && sn.count > 1) {
    paths.clear();
    for (uint32_t i = 1; i <= sn.count; ++i) {
      std::string p = MakeSplitName(sn.prefix, i, sn.count);
      if (!FileExists(p))
        return NotFound(StrFormat("%s: shard %u of the %u-shard split model is missing (looked for %s)",
                                  paths_in[0].c_str(), i, sn.count, p.c_str()));
      paths.push_back(std::move(p));
    }
  }

  GgufModel m;
  for (const std::string& p : paths) {
    auto shard = std::make_unique<Shard>();
    shard->path = p;
    STRATA_ASSIGN_OR_RETURN(shard->file, MappedFile::Open(p));
    STRATA_ASSIGN_OR_RETURN(shard->parsed, ParseGguf(p, shard->file.bytes()));
    m.shards_.push_back(std::move(shard));
  }

  // Split consistency.
  const size_t n = m.shards_.size();
  std::vector<uint64_t> split_no(n, 0);
  uint64_t total_tensors = 0;
  for (size_t i = 0; i < n; ++i) {
    const ParsedGguf& g = m.shards_[i]->parsed;
    total_tensors += g.tensors.size();
    bool has_count, has_no;
    uint64_t count = 1, no = 0;
    STRATA_RETURN_IF_ERROR(GetSplitInt(g, "split.count", &has_count, &count));
    STRATA_RETURN_IF_ERROR(GetSplitInt(g, "split.no", &has_no, &no));
    if (n == 1) {
      if (has_count && count > 1)
        return FailedPrecondition(StrFormat(
            "%s: this file is one shard (split.no %" PRIu64 ") of a %" PRIu64
            "-shard split model; pass the first shard (NAME-00001-of-%05" PRIu64 ".gguf) or every shard",
            g.name.c_str(), no, count, count));
      break;
    }
    const KeyValue* ckv = g.Find("split.count");
    if (!has_count)
      return CorruptAt(g.name, 0, "metadata 'split.count'", StrFormat("%zu (one of %zu shards given)", n, n),
                       "no such key");
    if (count != n)
      return CorruptAt(g.name, ckv->value.offset, "metadata 'split.count'",
                       StrFormat("%zu (the number of shards given or found)", n), U64(count));
    if (!has_no)
      return CorruptAt(g.name, 0, "metadata 'split.no'", StrFormat("a shard number 0..%zu", n - 1), "no such key");
    if (no >= n)
      return CorruptAt(g.name, g.Find("split.no")->value.offset, "metadata 'split.no'",
                       StrFormat("a shard number 0..%zu", n - 1), U64(no));
    split_no[i] = no;
  }
  if (n > 1) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return split_no[a] < split_no[b]; });
    for (size_t k = 0; k < n; ++k) {
      if (split_no[order[k]] != k) {
        size_t dup = k > 0 && split_no[order[k]] == split_no[order[k - 1]] ? order[k - 1] : order[k];
        return CorruptAt(m.shards_[order[k]]->parsed.name, m.shards_[order[k]]->parsed.Find("split.no")->value.offset,
                         "metadata 'split.no'", StrFormat("each shard number 0..%zu exactly once", n - 1),
                         StrFormat("%" PRIu64 " (also in %s)", split_no[order[k]],
                                   m.shards_[dup]->parsed.name.c_str()));
      }
    }
    std::vector<std::unique_ptr<Shard>> sorted;
    for (size_t k = 0; k < n; ++k) sorted.push_back(std::move(m.shards_[order[k]]));
    m.shards_ = std::move(sorted);

    const ParsedGguf& first = m.shards_[0]->parsed;
    bool has_tc;
    uint64_t tc = 0;
    STRATA_RETURN_IF_ERROR(GetSplitInt(first, "split.tensors.count", &has_tc, &tc));
    if (!has_tc)
      return CorruptAt(first.name, 0, "metadata 'split.tensors.count'",
                       StrFormat("the total tensor count %" PRIu64, total_tensors), "no such key");
    if (tc != total_tensors)
      return CorruptAt(first.name, first.Find("split.tensors.count")->value.offset, "metadata 'split.tensors.count'",
                       StrFormat("%" PRIu64 " (the tensors found in all %zu shards)", total_tensors, n), U64(tc));
  }

  for (size_t s = 0; s < m.shards_.size(); ++s) {
    for (TensorInfo t : m.shards_[s]->parsed.tensors) {
      t.shard = static_cast<uint32_t>(s);
      auto [it, inserted] = m.tensor_index_.emplace(t.name, m.tensors_.size());
      if (!inserted) {
        const TensorInfo& other = m.tensors_[it->second];
        return CorruptAt(m.shards_[s]->parsed.name, t.info_offset, "tensor '" + Printable(t.name) + "'",
                         "each tensor name once across all shards",
                         "a duplicate of the tensor in " + m.shards_[other.shard]->parsed.name);
      }
      m.tensors_.push_back(t);
    }
  }
  const auto& kv = m.shards_[0]->parsed.kv;
  for (size_t i = 0; i < kv.size(); ++i) m.kv_index_.emplace(kv[i].key, i);
  return m;
}

Result<size_t> GgufModel::AddTensorsFrom(GgufModel&& other, const std::function<bool(std::string_view)>& take) {
  std::vector<TensorInfo> taken;
  for (const TensorInfo& t : other.tensors_) {
    if (!take(t.name)) continue;
    if (const TensorInfo* mine = FindTensor(t.name))
      return FailedPrecondition(StrFormat("tensor '%s' is in %s and in %s: take it from one file",
                                          Printable(t.name).c_str(), shards_[mine->shard]->parsed.name.c_str(),
                                          other.shards_[t.shard]->parsed.name.c_str()));
    taken.push_back(t);
  }
  const auto base = static_cast<uint32_t>(shards_.size());
  for (auto& sh : other.shards_) shards_.push_back(std::move(sh));
  for (TensorInfo t : taken) {
    t.shard += base;
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(t);
  }
  return taken.size();
}

const KeyValue* GgufModel::Find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &metadata()[it->second];
}

const TensorInfo* GgufModel::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> GgufModel::TensorData(const TensorInfo& t) const {
  // Bounds were proven by ParseGguf.
  return shards_[t.shard]->file.bytes().subspan(static_cast<size_t>(t.offset), static_cast<size_t>(t.nbytes));
}

uint64_t GgufModel::total_file_bytes() const {
  uint64_t s = 0;
  for (const auto& sh : shards_) s += sh->file.size();
  return s;
}

Result<const Value*> GgufModel::GetValue(std::string_view key) const {
  const KeyValue* kv = Find(key);
  if (!kv) return NotFound(shards_[0]->parsed.name + ": metadata key '" + std::string(key) + "' is missing");
  return &kv->value;
}

Result<std::string_view> GgufModel::GetString(std::string_view key) const {
  STRATA_ASSIGN_OR_RETURN(const Value* v, GetValue(key));
  if (v->type != ValueType::kString)
    return CorruptAt(shards_[0]->parsed.name, v->offset, "metadata '" + std::string(key) + "'", "type string",
                     v->TypeString());
  return v->str;
}

}  // namespace strata::gguf
