#pragma once
// GgufBuilder: writes GGUF files for tests, fixtures and benchmarks, including
// deliberately broken ones. Not part of the runtime or the packer.
//
// A builder holds metadata (in insertion order) and tensors; Build() lays
// them out the way gguf-py does (tensor data in order, each padded to the
// alignment) and can report the byte offset of every field it wrote, so a
// test can corrupt exactly one field of an otherwise valid file.

#include <cstdint>
#include <string>
#include <vector>

#include "packer/gguf/gguf_file.h"
#include "runtime/base/status.h"
#include "runtime/quant/ggml_type.h"

namespace strata::testing {

struct GgufLayout {
  struct Kv {
    std::string key;
    uint64_t key_len_offset = 0;  // the u64 key length
    uint64_t type_offset = 0;     // the u32 value type
    uint64_t value_offset = 0;    // the value (for arrays: the u32 element type)
  };
  struct Tensor {
    std::string name;
    uint64_t name_len_offset = 0;
    uint64_t n_dims_offset = 0;
    uint64_t ne_offset = 0;       // ne[0]
    uint64_t type_offset = 0;
    uint64_t offset_offset = 0;   // the u64 relative data offset
    uint64_t data_offset = 0;     // absolute offset of the data
    uint64_t nbytes = 0;
  };
  uint64_t version_offset = 4;
  uint64_t n_tensors_offset = 8;
  uint64_t n_kv_offset = 16;
  std::vector<Kv> kv;
  std::vector<Tensor> tensors;
  uint64_t data_section_offset = 0;
  uint64_t file_size = 0;

  const Kv* FindKv(const std::string& key) const;
  const Tensor* FindTensor(const std::string& name) const;
};

class GgufBuilder {
 public:
  GgufBuilder& SetVersion(uint32_t v) { version_ = v; return *this; }
  // Sets the data alignment and writes it as general.alignment (u32).
  GgufBuilder& SetAlignment(uint32_t a);
  uint32_t alignment() const { return alignment_; }

  // Metadata. Setting an existing key replaces its value in place.
  GgufBuilder& U8(const std::string& key, uint8_t v);
  GgufBuilder& I8(const std::string& key, int8_t v);
  GgufBuilder& U16(const std::string& key, uint16_t v);
  GgufBuilder& I16(const std::string& key, int16_t v);
  GgufBuilder& U32(const std::string& key, uint32_t v);
  GgufBuilder& I32(const std::string& key, int32_t v);
  GgufBuilder& U64(const std::string& key, uint64_t v);
  GgufBuilder& I64(const std::string& key, int64_t v);
  GgufBuilder& F32(const std::string& key, float v);
  GgufBuilder& F64(const std::string& key, double v);
  GgufBuilder& Bool(const std::string& key, bool v);
  GgufBuilder& String(const std::string& key, const std::string& v);
  GgufBuilder& StringArray(const std::string& key, const std::vector<std::string>& v);
  GgufBuilder& I32Array(const std::string& key, const std::vector<int32_t>& v);
  GgufBuilder& U32Array(const std::string& key, const std::vector<uint32_t>& v);
  GgufBuilder& F32Array(const std::string& key, const std::vector<float>& v);
  GgufBuilder& F64Array(const std::string& key, const std::vector<double>& v);
  GgufBuilder& U64Array(const std::string& key, const std::vector<uint64_t>& v);
  GgufBuilder& BoolArray(const std::string& key, const std::vector<bool>& v);
  // Any value, given as its already-encoded bytes (after the u32 type id).
  GgufBuilder& RawValue(const std::string& key, uint32_t type_id, std::vector<uint8_t> encoded);
  GgufBuilder& Remove(const std::string& key);
  bool Has(const std::string& key) const;
  // Copies every key of `parsed` (with its type) into this builder.
  GgufBuilder& CopyMetadata(const gguf::ParsedGguf& parsed, bool skip_split_keys = true);

  // A tensor with ggml dims `ne` (ne[0] = row length). `data` must hold
  // exactly the tensor's byte size.
  GgufBuilder& Tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, std::vector<uint8_t> data);
  // A tensor of F32 values.
  GgufBuilder& TensorF32(const std::string& name, std::vector<int64_t> ne, const std::vector<float>& values);
  // A tensor record written exactly as given (any type id, any offset), for
  // broken files. offset == UINT64_MAX means "where it would normally go".
  GgufBuilder& RawTensor(const std::string& name, uint32_t type_id, std::vector<int64_t> ne,
                         std::vector<uint8_t> data, uint64_t offset = UINT64_MAX);
  GgufBuilder& RemoveTensor(const std::string& name);
  // Replaces the dims a tensor is recorded with (the data stays the same).
  GgufBuilder& ReshapeTensor(const std::string& name, std::vector<int64_t> ne);
  size_t tensor_count() const { return tensors_.size(); }
  std::vector<std::string> TensorNames() const;

  std::vector<uint8_t> Build(GgufLayout* layout = nullptr) const;
  Status WriteFile(const std::string& path, GgufLayout* layout = nullptr) const;

  // Splits the tensors over `n` shards the way llama-gguf-split does: every
  // shard gets split.no (u16, 0-based), split.count (u16) and
  // split.tensors.count (i32); only the first shard carries the other
  // metadata. Writes PREFIX-0000k-of-0000n.gguf and returns the paths.
  Result<std::vector<std::string>> WriteSplit(const std::string& prefix, uint32_t n) const;

 private:
  struct KvEntry {
    std::string key;
    uint32_t type_id;
    std::vector<uint8_t> encoded;
  };
  struct TensorEntry {
    std::string name;
    uint32_t type_id;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
    uint64_t offset;  // UINT64_MAX: automatic
  };
  GgufBuilder& Put(const std::string& key, uint32_t type_id, std::vector<uint8_t> encoded);
  std::vector<uint8_t> BuildHead(GgufLayout* lay, std::vector<uint64_t>* rel) const;

  uint32_t version_ = 3;
  uint32_t alignment_ = 32;
  std::vector<KvEntry> kv_;
  std::vector<TensorEntry> tensors_;
};

}  // namespace strata::testing
