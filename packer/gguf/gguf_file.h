#pragma once
// The GGUF reader (v2 and v3, little-endian). This is the only place in Strata
// that parses GGUF; the runtime never does.
//
// Every byte is treated as hostile: counts, lengths, dims, type ids, offsets
// and sizes are range- and overflow-checked, and each defect is a Status in the
// form "<file>: byte <offset>: <field>: expected <...>, found <...>". Nothing
// here asserts on input or throws.
//
// Values and names are views into the parsed bytes: a ParsedGguf is valid only
// while those bytes are, and a GgufModel keeps its shards mapped for its life.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/base/mapped_file.h"
#include "runtime/base/status.h"
#include "runtime/quant/ggml_type.h"

namespace strata::gguf {

// Metadata value types, with their on-disk ids.
enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

std::string_view ValueTypeName(ValueType t);  // "u32", "string", "array", ...
// Bytes of a fixed-size scalar type; 0 for string and array.
uint32_t ScalarSize(ValueType t);
bool IsIntegerType(ValueType t);
bool IsFloatType(ValueType t);

// Limits beyond which a value is refused as hostile.
inline constexpr uint64_t kMaxStringBytes = 1ull << 30;   // as ggml
inline constexpr uint64_t kMaxArrayElements = 1ull << 30;  // as ggml
inline constexpr uint64_t kMaxKeyBytes = 65535;            // GGUF spec
inline constexpr uint64_t kMaxTensorNameBytes = 63;        // GGML_MAX_NAME - 1
inline constexpr uint32_t kMaxDims = 4;                    // GGML_MAX_DIMS

struct Value {
  ValueType type = ValueType::kU8;
  uint64_t offset = 0;  // byte offset of the value in its file

  // Scalars. For integer types both fields hold the value when it fits.
  uint64_t u64 = 0;  // unsigned integers and bools (0/1)
  int64_t i64 = 0;   // signed integers (and unsigned ones <= INT64_MAX)
  double f64 = 0;    // f32 and f64
  std::string_view str;

  // Arrays (type == kArray).
  ValueType elem_type = ValueType::kU8;
  uint64_t count = 0;
  const uint8_t* elems = nullptr;          // raw little-endian elements (non-string arrays)
  std::vector<std::string_view> strings;   // string arrays

  bool is_array() const { return type == ValueType::kArray; }
  bool is_integer() const { return IsIntegerType(type); }
  bool is_signed_integer() const;
  // Element i of a numeric or bool array. REQUIRES: i < count and a
  // non-string array. IntAt and UIntAt give the element exactly, through
  // ExactCast (runtime/base/checked_cast.h): nullopt when it is not a whole
  // number in the result's range (a float with a fraction, NaN, 6.2e223, a
  // negative for UIntAt, a u64 above INT64_MAX for IntAt). FloatAt widens.
  std::optional<int64_t> IntAt(uint64_t i) const;
  std::optional<uint64_t> UIntAt(uint64_t i) const;
  double FloatAt(uint64_t i) const;
  // Element i as text in its own type ("-3", "18446744073709551615", "6.2e+223").
  std::string ElementText(uint64_t i) const;
  // Short human description: "u32 2048", "string \"qwen3moe\"", "array[string, 151936]".
  std::string Describe() const;
  // "u32", or "array[i32]".
  std::string TypeString() const;
};

struct KeyValue {
  std::string_view key;
  Value value;
  uint64_t offset = 0;  // byte offset of the key
};

struct TensorInfo {
  std::string_view name;
  uint32_t n_dims = 0;
  std::array<int64_t, kMaxDims> ne = {1, 1, 1, 1};  // ggml order: ne[0] is the row length
  GgmlType type = GgmlType::kF32;
  uint64_t rel_offset = 0;   // from the file's data section
  uint64_t offset = 0;       // absolute byte offset in its file
  uint64_t nbytes = 0;
  uint64_t n_elements = 0;
  uint32_t shard = 0;        // which file of a split model holds it
  uint64_t info_offset = 0;  // byte offset of its tensor-info record

  std::span<const int64_t> dims() const { return {ne.data(), n_dims}; }
  std::string ShapeString() const;  // "[2048, 151936]"
};

// One parsed GGUF file.
struct ParsedGguf {
  std::string name;  // used in messages
  uint32_t version = 0;
  uint32_t alignment = 32;
  uint64_t data_offset = 0;  // start of the data section
  uint64_t file_size = 0;
  std::vector<KeyValue> kv;
  std::vector<TensorInfo> tensors;

  const KeyValue* Find(std::string_view key) const;
};

// Parses and checks a whole GGUF held in memory: header, metadata, tensor
// table and that every tensor's data lies inside `bytes`, aligned and not
// overlapping another. `name` is what errors call the file.
Result<ParsedGguf> ParseGguf(std::string_view name, std::span<const uint8_t> bytes);

struct Shard {
  std::string path;
  MappedFile file;
  ParsedGguf parsed;
};

// A model: one GGUF file, or the shards of a split model presented as one.
class GgufModel {
 public:
  // Opens one file, or a split model. Given one path named
  // NAME-0000k-of-0000n.gguf, all n shards are found beside it; given several
  // paths, they are the shards (any order). Checks split.count, split.no and
  // split.tensors.count and that tensor names are unique across shards.
  static Result<GgufModel> Open(std::span<const std::string> paths);
  static Result<GgufModel> Open(const std::string& path) { return Open(std::span<const std::string>(&path, 1)); }

  GgufModel(GgufModel&&) = default;
  GgufModel& operator=(GgufModel&&) = default;

  // Metadata of the first shard (the split.* keys of the others are checked
  // and not repeated here).
  const std::vector<KeyValue>& metadata() const { return shards_[0]->parsed.kv; }
  const KeyValue* Find(std::string_view key) const;
  // All tensors of all shards, in shard then file order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(std::string_view name) const;
  std::span<const uint8_t> TensorData(const TensorInfo& t) const;

  // Takes the tensors of `other` whose names `take` accepts, with their
  // files (a publisher's separate MTP file: strata-pack --mtp-from); the
  // metadata stays this model's. Returns how many were taken. Errors: a name
  // this model already has (nothing is taken then).
  Result<size_t> AddTensorsFrom(GgufModel&& other, const std::function<bool(std::string_view)>& take);

  size_t shard_count() const { return shards_.size(); }
  const Shard& shard(size_t i) const { return *shards_[i]; }
  uint64_t total_file_bytes() const;

  // Typed getters. A missing key is kNotFound; a value of another type is
  // kDataLoss naming both types.
  Result<std::string_view> GetString(std::string_view key) const;
  Result<const Value*> GetValue(std::string_view key) const;

 private:
  GgufModel() = default;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
  std::unordered_map<std::string_view, size_t> kv_index_;
};

// Split naming: "PREFIX-00002-of-00005.gguf" -> {prefix, 2, 5}.
struct SplitName {
  std::string prefix;
  uint32_t index = 0;  // 1-based, as in the file name
  uint32_t count = 0;
};
bool ParseSplitName(const std::string& path, SplitName* out);
std::string MakeSplitName(const std::string& prefix, uint32_t index, uint32_t count);

}  // namespace strata::gguf
