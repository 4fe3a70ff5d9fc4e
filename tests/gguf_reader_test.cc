// The GGUF reader: the negative corpus (one malformed file per class of
// defect, each with its own specific error), round trips, split models, and
// every real GGUF in ../shared/data.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "packer/gguf/gguf_file.h"
#include "runtime/base/strings.h"
#include "tests/gguf_writer/gguf_builder.h"
#include "tests/testing/run_command.h"
#include "tests/testing/test_data.h"

namespace strata {
namespace {

using gguf::ParseGguf;
using gguf::ValueType;
using testing::GgufBuilder;
using testing::GgufLayout;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;

bool EqualsIgnoreCaseForTest(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

std::vector<uint8_t> Bytes(size_t n, uint8_t fill = 0x11) { return std::vector<uint8_t>(n, fill); }

// A small valid file: a few keys of several types and two tensors.
GgufBuilder BaseBuilder() {
  GgufBuilder b;
  b.String("general.architecture", "llama")
      .U32("llama.block_count", 2)
      .F32("llama.rope.freq_base", 10000.0f)
      .Bool("tokenizer.ggml.add_bos_token", true)
      .StringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"})
      .I32Array("tokenizer.ggml.token_type", {2, 3, 3, 1});
  b.Tensor("token_embd.weight", GgmlType::kF32, {8, 2}, Bytes(8 * 2 * 4));
  b.Tensor("blk.0.attn_q.weight", GgmlType::kQ8_0, {64, 2}, Bytes(2 * 2 * 34));
  return b;
}

template <typename T>
void Patch(std::vector<uint8_t>& bytes, uint64_t offset, T v) {
  ASSERT_LE(offset + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + offset, &v, sizeof(T));
}

std::string ParseError(const std::vector<uint8_t>& bytes) {
  auto r = ParseGguf("t.gguf", bytes);
  if (r.ok()) return "(parsed OK)";
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().message();
  return r.status().message();
}

TEST(GgufReader, ParsesBaseFile) {
  GgufLayout lay;
  auto bytes = BaseBuilder().Build(&lay);
  auto r = ParseGguf("t.gguf", bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->version, 3u);
  EXPECT_EQ(r->kv.size(), 6u);
  ASSERT_EQ(r->tensors.size(), 2u);
  EXPECT_EQ(r->tensors[1].name, "blk.0.attn_q.weight");
  EXPECT_EQ(r->tensors[1].type, GgmlType::kQ8_0);
  EXPECT_EQ(r->tensors[1].nbytes, 136u);
  EXPECT_EQ(r->tensors[1].offset, lay.tensors[1].data_offset);
  EXPECT_EQ(r->data_offset % 32, 0u);
  const gguf::KeyValue* toks = r->Find("tokenizer.ggml.tokens");
  ASSERT_NE(toks, nullptr);
  ASSERT_EQ(toks->value.strings.size(), 4u);
  EXPECT_EQ(toks->value.strings[3], "a");
  EXPECT_EQ(r->Find("tokenizer.ggml.token_type")->value.IntAt(0), 2);
}

TEST(GgufReader, AllThirteenValueTypesRoundTrip) {
  GgufBuilder b;
  b.U8("a.u8", 200).I8("a.i8", -100).U16("a.u16", 60000).I16("a.i16", -30000).U32("a.u32", 4000000000u)
      .I32("a.i32", -2000000000).F32("a.f32", 1.5f).Bool("a.bool", false).String("a.str", "héllo")
      .U64("a.u64", 0xFFFFFFFFFFFFFFF0ull).I64("a.i64", INT64_MIN).F64("a.f64", -2.25)
      .F32Array("a.arr_f32", {1.0f, -2.0f}).U32Array("a.arr_u32", {7, 8, 9}).BoolArray("a.arr_bool", {true, false})
      .StringArray("a.arr_str", {"", "x"});
  auto bytes = b.Build();
  auto r = ParseGguf("t.gguf", bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Find("a.u8")->value.u64, 200u);
  EXPECT_EQ(r->Find("a.i8")->value.i64, -100);
  EXPECT_EQ(r->Find("a.u16")->value.u64, 60000u);
  EXPECT_EQ(r->Find("a.i16")->value.i64, -30000);
  EXPECT_EQ(r->Find("a.u32")->value.u64, 4000000000u);
  EXPECT_EQ(r->Find("a.i32")->value.i64, -2000000000);
  EXPECT_EQ(r->Find("a.f32")->value.f64, 1.5);
  EXPECT_EQ(r->Find("a.bool")->value.u64, 0u);
  EXPECT_EQ(r->Find("a.str")->value.str, "héllo");
  EXPECT_EQ(r->Find("a.u64")->value.u64, 0xFFFFFFFFFFFFFFF0ull);
  EXPECT_EQ(r->Find("a.i64")->value.i64, INT64_MIN);
  EXPECT_EQ(r->Find("a.f64")->value.f64, -2.25);
  EXPECT_EQ(r->Find("a.arr_f32")->value.FloatAt(1), -2.0);
  EXPECT_EQ(r->Find("a.arr_u32")->value.UIntAt(2), 9u);
  EXPECT_EQ(r->Find("a.arr_bool")->value.IntAt(0), 1);
  EXPECT_EQ(r->Find("a.arr_str")->value.strings[1], "x");
  EXPECT_EQ(r->Find("a.arr_str")->value.TypeString(), "array[string]");
  EXPECT_TRUE(r->tensors.empty());
  EXPECT_EQ(r->data_offset, bytes.size());  // no tensors: no padding
}

// Issue 12: float and u64 array elements read as integers go through
// ExactCast: out-of-range values, NaN and fractions are refused, never cast.
TEST(GgufReader, ArrayElementsConvertOnlyWhenExact) {
  GgufBuilder b;
  b.F64Array("a.f64", {6.2e223, -3.0, 2.5, std::nan(""), -9223372036854775808.0, 9223372036854775808.0})
      .F32Array("a.f32", {1.8e28f, 4.1e31f, 7.0f, -0.0f, std::numeric_limits<float>::infinity()})
      .U64Array("a.u64", {UINT64_MAX, 5})
      .I32Array("a.i32", {-1});
  auto bytes = b.Build();
  auto r = ParseGguf("t.gguf", bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& f64 = r->Find("a.f64")->value;
  EXPECT_EQ(f64.IntAt(0), std::nullopt);
  EXPECT_EQ(f64.IntAt(1), -3);
  EXPECT_EQ(f64.UIntAt(1), std::nullopt);
  EXPECT_EQ(f64.IntAt(2), std::nullopt);
  EXPECT_EQ(f64.IntAt(3), std::nullopt);
  EXPECT_EQ(f64.IntAt(4), INT64_MIN);
  EXPECT_EQ(f64.IntAt(5), std::nullopt);
  EXPECT_EQ(f64.UIntAt(5), 9223372036854775808ull);
  EXPECT_EQ(f64.ElementText(0), "6.2e+223");
  EXPECT_EQ(f64.ElementText(3), "nan");
  const auto& f32 = r->Find("a.f32")->value;
  EXPECT_EQ(f32.IntAt(0), std::nullopt);
  EXPECT_EQ(f32.IntAt(1), std::nullopt);
  EXPECT_EQ(f32.UIntAt(2), 7u);
  EXPECT_EQ(f32.IntAt(3), 0);
  EXPECT_EQ(f32.IntAt(4), std::nullopt);
  const auto& u64 = r->Find("a.u64")->value;
  EXPECT_EQ(u64.IntAt(0), std::nullopt);
  EXPECT_EQ(u64.UIntAt(0), UINT64_MAX);
  EXPECT_EQ(u64.ElementText(0), "18446744073709551615");
  EXPECT_EQ(u64.IntAt(1), 5);
  EXPECT_EQ(r->Find("a.i32")->value.UIntAt(0), std::nullopt);
  EXPECT_EQ(r->Find("a.i32")->value.ElementText(0), "-1");
}

TEST(GgufReader, AcceptsVersion2AndCustomAlignment) {
  GgufBuilder b = BaseBuilder();
  b.SetVersion(2).SetAlignment(64);
  auto bytes = b.Build();
  auto r = ParseGguf("t.gguf", bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->version, 2u);
  EXPECT_EQ(r->alignment, 64u);
  EXPECT_EQ(r->data_offset % 64, 0u);
}

// ---------------------------------------------------------------------------
// The negative corpus: one defect per case, each with its own error. The
// classes cover llama.cpp's test-gguf handcrafted cases (peers.md 3.2) and the
// checks of gguf.cpp and the llama.cpp loader (formats.md 1.5, 1.6).

struct Defect {
  std::string name;
  std::function<std::vector<uint8_t>()> make;
  std::vector<std::string> expect;  // substrings of the error
};

std::vector<Defect> NegativeCorpus() {
  std::vector<Defect> d;
  auto base = [](GgufLayout* lay = nullptr) { return BaseBuilder().Build(lay); };
  auto kv = [](const GgufLayout& l, const char* key) { return *l.FindKv(key); };

  d.push_back({"header_bad_magic", [&] { auto b = base(); b[0] = 'X'; return b; },
               {"byte 0 ", "header magic", "expected \"GGUF\"", "found \"XGUF\""}});
  d.push_back({"header_truncated_magic", [&] { return std::vector<uint8_t>{'G', 'G'}; },
               {"header magic", "truncated"}});
  d.push_back({"version_0", [&] { auto b = base(); Patch<uint32_t>(b, 4, 0); return b; },
               {"header version", "expected 2 or 3, found 0"}});
  d.push_back({"version_1", [&] { auto b = base(); Patch<uint32_t>(b, 4, 1); return b; },
               {"header version", "GGUF v1 is no longer supported"}});
  d.push_back({"version_future", [&] { auto b = base(); Patch<uint32_t>(b, 4, 4); return b; },
               {"header version", "expected 2 or 3, found 4"}});
  d.push_back({"big_endian", [&] { auto b = base(); Patch<uint32_t>(b, 4, 0x03000000u); return b; },
               {"header version", "big-endian GGUF"}});
  d.push_back({"n_tensors_negative", [&] { auto b = base(); Patch<int64_t>(b, 8, -1); return b; },
               {"header tensor count", "-1 (negative)"}});
  d.push_back({"n_tensors_too_many", [&] { auto b = base(); Patch<uint64_t>(b, 8, 1ull << 40); return b; },
               {"header tensor count", "expected at most", "found 1099511627776"}});
  d.push_back({"n_kv_negative", [&] { auto b = base(); Patch<int64_t>(b, 16, -1); return b; },
               {"header metadata count", "(negative)"}});
  d.push_back({"n_kv_too_many_for_file", [&] {
                 auto b = base(); Patch<uint64_t>(b, 16, 1000); return b; },
               {"metadata count", "at most"}});
  d.push_back({"kv_key_size_huge", [&] {
                 GgufLayout l; auto b = base(&l); Patch<uint64_t>(b, l.kv[0].key_len_offset, UINT64_MAX); return b; },
               {"metadata[0] key length", "expected at most 65535 bytes", "found 18446744073709551615"}});
  d.push_back({"kv_key_past_end", [&] {
                 GgufLayout l; auto b = base(&l); Patch<uint64_t>(b, l.kv[0].key_len_offset, 60000); return b; },
               {"metadata[0] key", "truncated"}});
  d.push_back({"kv_empty_key", [&] {
                 GgufBuilder g = BaseBuilder(); g.U32("", 1); return g.Build(); },
               {"metadata[6] key", "expected a non-empty key"}});
  d.push_back({"kv_bad_type", [&] {
                 GgufLayout l; auto b = base(&l); Patch<uint32_t>(b, kv(l, "llama.block_count").type_offset, 13); return b; },
               {"metadata 'llama.block_count' value type", "expected a type id 0..12, found 13"}});
  d.push_back({"kv_bad_type_negative", [&] {
                 GgufLayout l; auto b = base(&l); Patch<int32_t>(b, kv(l, "llama.block_count").type_offset, -1); return b; },
               {"metadata 'llama.block_count' value type", "found 4294967295"}});
  d.push_back({"kv_duplicate_key", [&] {
                 // Add "llama.block_counX" (same length as "llama.block_count"), then rename it in place.
                 GgufBuilder g = BaseBuilder(); g.U32("llama.block_counX", 3);
                 GgufLayout l; auto b = g.Build(&l);
                 b[l.FindKv("llama.block_counX")->key_len_offset + 8 + 16] = 't';
                 return b; },
               {"metadata 'llama.block_count'", "expected each key once", "duplicate of the key at byte"}});
  d.push_back({"kv_bool_not_0_or_1", [&] {
                 GgufLayout l; auto b = base(&l);
                 Patch<uint8_t>(b, kv(l, "tokenizer.ggml.add_bos_token").value_offset, 2); return b; },
               {"metadata 'tokenizer.ggml.add_bos_token' value", "expected a bool (0 or 1), found 2"}});
  d.push_back({"kv_string_too_long", [&] {
                 GgufLayout l; auto b = base(&l);
                 Patch<uint64_t>(b, kv(l, "general.architecture").value_offset, 1ull << 31); return b; },
               {"metadata 'general.architecture' value length", "at most 1073741824 bytes"}});
  d.push_back({"kv_string_past_end", [&] {
                 GgufLayout l; auto b = base(&l);
                 Patch<uint64_t>(b, kv(l, "general.architecture").value_offset, 1u << 20); return b; },
               {"metadata 'general.architecture' value", "truncated"}});
  d.push_back({"array_nested", [&] {
                 GgufLayout l; auto b = base(&l);
                 Patch<uint32_t>(b, kv(l, "tokenizer.ggml.token_type").value_offset, 9); return b; },
               {"metadata 'tokenizer.ggml.token_type' value element type", "nested arrays are not allowed"}});
  d.push_back({"array_bad_element_type", [&] {
                 GgufLayout l; auto b = base(&l);
                 Patch<uint32_t>(b, kv(l, "tokenizer.ggml.token_type").value_offset, 77); return b; },
               {"value element type", "a type id 0..12, found 77"}});
  d.push_back({"array_count_too_big", [&] {
                 GgufLayout l; auto b = base(&l);
                 Patch<uint64_t>(b, kv(l, "tokenizer.ggml.token_type").value_offset + 4, 1ull << 31); return b; },
               {"value element count", "expected at most 1073741824"}});
  d.push_back({"array_count_past_end", [&] {
                 GgufLayout l; auto b = base(&l);
                 Patch<uint64_t>(b, kv(l, "tokenizer.ggml.token_type").value_offset + 4, 1u << 20); return b; },
               {"value element count", "i32 elements in the", "found 1048576"}});
  d.push_back({"string_array_count_past_end", [&] {
                 GgufLayout l; auto b = base(&l);
                 Patch<uint64_t>(b, kv(l, "tokenizer.ggml.tokens").value_offset + 4, 1u << 24); return b; },
               {"metadata 'tokenizer.ggml.tokens' value element count", "strings in the"}});
  d.push_back({"alignment_not_power_of_two", [&] {
                 GgufBuilder g = BaseBuilder(); g.U32("general.alignment", 13); return g.Build(); },
               {"metadata 'general.alignment'", "a non-zero power of two, found 13"}});
  d.push_back({"alignment_zero", [&] {
                 GgufBuilder g = BaseBuilder(); g.U32("general.alignment", 0); return g.Build(); },
               {"metadata 'general.alignment'", "power of two, found 0"}});
  d.push_back({"alignment_wrong_type", [&] {
                 GgufBuilder g = BaseBuilder(); g.I32("general.alignment", 32); return g.Build(); },
               {"metadata 'general.alignment'", "expected type u32, found i32"}});
  d.push_back({"tensor_name_too_long", [&] {
                 GgufBuilder g = BaseBuilder(); g.Tensor(std::string(64, 'n'), GgmlType::kF32, {4}, Bytes(16));
                 return g.Build(); },
               {"tensor[2] name length", "expected at most 63 bytes, found 64"}});
  d.push_back({"tensor_name_empty", [&] {
                 GgufBuilder g = BaseBuilder(); g.Tensor("", GgmlType::kF32, {4}, Bytes(16)); return g.Build(); },
               {"tensor[2] name", "expected a non-empty name"}});
  d.push_back({"tensor_duplicate_name", [&] {
                 GgufBuilder g = BaseBuilder(); g.Tensor("token_embd.weighX", GgmlType::kF32, {4}, Bytes(16));
                 GgufLayout l; auto b = g.Build(&l);
                 b[l.FindTensor("token_embd.weighX")->name_len_offset + 8 + 16] = 't';
                 return b; },
               {"tensor[2] 'token_embd.weight'", "expected each tensor name once", "duplicate of the tensor at byte"}});
  d.push_back({"tensor_n_dims_too_many", [&] {
                 GgufLayout l; auto b = base(&l); Patch<uint32_t>(b, l.tensors[0].n_dims_offset, 5); return b; },
               {"tensor[0] 'token_embd.weight' n_dims", "expected 1..4, found 5"}});
  d.push_back({"tensor_n_dims_zero", [&] {
                 GgufLayout l; auto b = base(&l); Patch<uint32_t>(b, l.tensors[0].n_dims_offset, 0); return b; },
               {"n_dims", "expected 1..4, found 0"}});
  d.push_back({"tensor_shape_negative", [&] {
                 GgufLayout l; auto b = base(&l); Patch<int64_t>(b, l.tensors[0].ne_offset + 8, -1); return b; },
               {"tensor[0] 'token_embd.weight' ne[1]", "expected a dimension >= 1, found -1"}});
  d.push_back({"tensor_zero_dim", [&] {
                 GgufLayout l; auto b = base(&l); Patch<int64_t>(b, l.tensors[0].ne_offset, 0); return b; },
               {"ne[0]", "expected a dimension >= 1, found 0"}});
  d.push_back({"tensor_ne_too_big", [&] {
                 GgufBuilder g = BaseBuilder();
                 g.RawTensor("big", 0, {1ll << 32, 1ll << 32}, {}, 0);
                 return g.Build(); },
               {"tensor[2] 'big' ne[1]", "element count that fits in 64 bits", "overflows"}});
  d.push_back({"tensor_nbytes_too_big", [&] {
                 GgufBuilder g = BaseBuilder();
                 g.RawTensor("big", 0, {1ll << 31, 1ll << 31}, {}, 0);  // 2^62 F32 elements = 2^64 bytes
                 return g.Build(); },
               {"tensor[2] 'big' size", "byte size that fits in 64 bits"}});
  d.push_back({"tensor_type_unknown", [&] {
                 GgufLayout l; auto b = base(&l); Patch<uint32_t>(b, l.tensors[0].type_offset, 43); return b; },
               {"tensor[0] 'token_embd.weight' type", "a ggml type id this build knows", "type 43 (unknown)"}});
  d.push_back({"tensor_type_removed", [&] {
                 GgufLayout l; auto b = base(&l); Patch<uint32_t>(b, l.tensors[0].type_offset, 4); return b; },
               {"type", "type 4 (Q4_2, removed from ggml)"}});
  d.push_back({"tensor_row_not_whole_blocks", [&] {
                 GgufLayout l; auto b = base(&l); Patch<int64_t>(b, l.tensors[1].ne_offset, 48); return b; },
               {"tensor[1] 'blk.0.attn_q.weight' type", "multiple of the Q8_0 block size 32, found 48"}});
  d.push_back({"tensor_offset_misaligned", [&] {
                 GgufLayout l; auto b = base(&l); Patch<uint64_t>(b, l.tensors[1].offset_offset, 65); return b; },
               {"tensor[1] 'blk.0.attn_q.weight' data offset", "multiple of the alignment 32, found 65"}});
  d.push_back({"tensor_offset_inconsistent_alignment", [&] {
                 GgufBuilder g = BaseBuilder(); g.SetAlignment(64);
                 GgufLayout l; auto b = g.Build(&l); Patch<uint64_t>(b, l.tensors[1].offset_offset, 96); return b; },
               {"data offset", "multiple of the alignment 64, found 96"}});
  d.push_back({"tensor_offset_huge", [&] {
                 GgufLayout l; auto b = base(&l);
                 Patch<uint64_t>(b, l.tensors[1].offset_offset, 0xFFFFFFFFFFFFFFE0ull); return b; },
               {"tensor 'blk.0.attn_q.weight' data", "inside the file", "beyond 2^64"}});
  d.push_back({"tensor_data_past_end", [&] {
                 auto b = base(); b.pop_back(); return b; },
               {"tensor 'blk.0.attn_q.weight' data", "136 bytes (Q8_0 [64, 2]) inside the file"}});
  d.push_back({"tensor_data_mem_size_overflow", [&] {
                 GgufBuilder g;
                 g.RawTensor("a", 0, {0x1FFFFFFFFFFFFFF0ll}, {}, 0);
                 g.RawTensor("b", 0, {0x1FFFFFFFFFFFFFF0ll}, {}, 0x7FFFFFFFFFFFFFC0ull);
                 return g.Build(); },
               {"tensor 'a' data", "inside the file"}});
  d.push_back({"tensor_data_overlap", [&] {
                 GgufLayout l; auto b = base(&l); Patch<uint64_t>(b, l.tensors[1].offset_offset, 32); return b; },
               {"tensor 'blk.0.attn_q.weight' data", "where tensor 'token_embd.weight' ends", "overlap"}});
  d.push_back({"data_section_past_end", [&] {
                 GgufLayout l; auto b = base(&l); b.resize(l.tensors[1].offset_offset + 8 + 1); return b; },
               {"data section", "inside the file", "(truncated)"}});
  return d;
}

TEST(GgufReaderNegativeCorpus, EachDefectHasItsOwnError) {
  std::set<std::string> messages;
  for (const Defect& d : NegativeCorpus()) {
    SCOPED_TRACE(d.name);
    std::string err = ParseError(d.make());
    for (const std::string& e : d.expect) EXPECT_THAT(err, HasSubstr(e)) << d.name;
    EXPECT_THAT(err, HasSubstr("t.gguf: byte ")) << d.name;
    EXPECT_TRUE(messages.insert(err).second) << d.name << " gives the same message as another defect: " << err;
  }
  EXPECT_GE(messages.size(), 40u);
}

TEST(GgufReaderNegativeCorpus, WrittenFilesFailInspectWithNonZeroExit) {
  std::string dir = testing::ScratchDir("gguf_negative_corpus");
  for (const Defect& d : NegativeCorpus()) {
    std::string path = dir + "/" + d.name + ".gguf";
    auto bytes = d.make();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                static_cast<std::streamsize>(bytes.size()));
    auto r = testing::RunProgram("strata-pack", {"--inspect", path});
    EXPECT_EQ(r.exit_code, 1) << d.name << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(d.expect[0])) << d.name;
  }
}

TEST(GgufReader, EveryTruncationIsAnError) {
  auto bytes = BaseBuilder().Build();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<long>(n));
    auto r = ParseGguf("t.gguf", prefix);
    ASSERT_FALSE(r.ok()) << "a " << n << "-byte prefix parsed";
    EXPECT_THAT(r.status().message(), AnyOf(HasSubstr("truncated"), HasSubstr("inside the file"),
                                            HasSubstr("at most")))
        << n << ": " << r.status().message();
  }
}

TEST(GgufReader, RandomByteFlipsNeverCrash) {
  auto bytes = BaseBuilder().Build();
  std::mt19937_64 rng(1234);
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    auto b = bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    auto r = ParseGguf("t.gguf", b);
    if (r.ok()) {
      ++parsed;
      for (const auto& t : r->tensors) ASSERT_LE(t.offset + t.nbytes, b.size());
    } else {
      ASSERT_FALSE(r.status().message().empty());
    }
  }
  EXPECT_GT(parsed, 0);  // flips in tensor data are harmless
}

TEST(GgufReader, TrailingBytesAfterDataAreAccepted) {
  auto bytes = BaseBuilder().Build();
  bytes.insert(bytes.end(), 100, 0xAB);
  EXPECT_TRUE(ParseGguf("t.gguf", bytes).ok());
}

// ---------------------------------------------------------------------------
// Split models

class GgufSplit : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::ScratchDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    GgufBuilder b = BaseBuilder();
    b.Tensor("blk.0.attn_k.weight", GgmlType::kF16, {16, 4}, Bytes(16 * 4 * 2, 0x3c));
    b.Tensor("output.weight", GgmlType::kF32, {8, 3}, Bytes(8 * 3 * 4, 0x42));
    builder_ = b;
    auto paths = b.WriteSplit(dir_ + "/m", 3);
    ASSERT_TRUE(paths.ok()) << paths.status().message();
    paths_ = *paths;
  }
  std::string dir_;
  GgufBuilder builder_;
  std::vector<std::string> paths_;
};

TEST_F(GgufSplit, FirstShardFindsSiblingsAndPresentsOneModel) {
  auto m = gguf::GgufModel::Open(paths_[0]);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->shard_count(), 3u);
  ASSERT_EQ(m->tensors().size(), 4u);
  EXPECT_EQ(m->tensors()[3].shard, 1u);
  const gguf::TensorInfo* out = m->FindTensor("output.weight");
  ASSERT_NE(out, nullptr);
  auto data = m->TensorData(*out);
  ASSERT_EQ(data.size(), 96u);
  EXPECT_EQ(data[0], 0x42);
  EXPECT_NE(m->Find("general.architecture"), nullptr);
}

TEST_F(GgufSplit, AllShardsInAnyOrder) {
  std::vector<std::string> rev(paths_.rbegin(), paths_.rend());
  auto m = gguf::GgufModel::Open(rev);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->shard(0).path, paths_[0]);
  EXPECT_EQ(m->tensors()[0].name, "token_embd.weight");
}

TEST_F(GgufSplit, MissingShardIsNamed) {
  std::filesystem::remove(paths_[1]);
  auto m = gguf::GgufModel::Open(paths_[0]);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(m.status().message(), HasSubstr("shard 2 of the 3-shard split model is missing"));
}

TEST_F(GgufSplit, OneShardAloneUnderAnotherNameIsRefused) {
  std::string lone = dir_ + "/renamed.gguf";
  std::filesystem::copy_file(paths_[1], lone);
  auto m = gguf::GgufModel::Open(lone);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("is one shard (split.no 1) of a 3-shard split model"));
}

TEST_F(GgufSplit, WrongSplitCountTensorCountOrDuplicateNumber) {
  {
    GgufBuilder b = builder_;
    b.U16("split.count", 2).U16("split.no", 0).I32("split.tensors.count", 4);
    ASSERT_TRUE(b.WriteFile(paths_[0]).ok());
    auto m = gguf::GgufModel::Open(paths_[0]);
    ASSERT_FALSE(m.ok());
    EXPECT_THAT(m.status().message(), AllOf(HasSubstr("split.count"), HasSubstr("expected 3"), HasSubstr("found 2")));
  }
  auto rewrite_first = [&](uint16_t no, int32_t tensors) {
    GgufBuilder b;
    b.CopyMetadata(*gguf::ParseGguf("x", BaseBuilder().Build()));
    b.U16("split.no", no).U16("split.count", 3).I32("split.tensors.count", tensors);
    b.Tensor("token_embd.weight", GgmlType::kF32, {8, 2}, Bytes(64));
    b.Tensor("blk.0.attn_q.weight", GgmlType::kQ8_0, {64, 2}, Bytes(136));
    ASSERT_TRUE(b.WriteFile(paths_[0]).ok());
  };
  rewrite_first(0, 7);
  auto m = gguf::GgufModel::Open(paths_[0]);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), AllOf(HasSubstr("split.tensors.count"), HasSubstr("expected 4"), HasSubstr("found 7")));
  rewrite_first(1, 4);
  m = gguf::GgufModel::Open(paths_[0]);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), AllOf(HasSubstr("split.no"), HasSubstr("exactly once")));
}

TEST_F(GgufSplit, DuplicateTensorAcrossShards) {
  GgufBuilder b;  // shard 2 with "output.weight" renamed to a tensor of shard 1
  b.U16("split.no", 1).U16("split.count", 3).I32("split.tensors.count", 4);
  b.Tensor("blk.0.attn_k.weight", GgmlType::kF16, {16, 4}, Bytes(16 * 4 * 2));
  b.Tensor("token_embd.weight", GgmlType::kF32, {8, 3}, Bytes(96));
  ASSERT_TRUE(b.WriteFile(paths_[1]).ok());
  auto m = gguf::GgufModel::Open(paths_[0]);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), AllOf(HasSubstr("tensor 'token_embd.weight'"), HasSubstr("across all shards")));
}

// ---------------------------------------------------------------------------
// Real files

std::vector<std::string> RealGgufs() {
  std::vector<std::string> out;
  for (const char* sub : {"models", "conformance", "tokenizer"}) {
    std::string dir = testing::SharedFile(sub);
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".gguf") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(GgufReaderRealFiles, EveryGgufInSharedDataReads) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("models/stories260K.gguf"));
  auto files = RealGgufs();
  EXPECT_GE(files.size(), 30u);
  for (const auto& f : files) {
    auto m = gguf::GgufModel::Open(f);
    ASSERT_TRUE(m.ok()) << f << ": " << m.status().message();
    EXPECT_TRUE(m->GetString("general.architecture").ok()) << f;
    // Every truncation of the first 4 KiB of a real file is an error.
    // Every truncation before the end of the last tensor's data (or, for a
    // vocab-only file, before the end of the file) is an error.
    auto bytes = m->shard(0).file.bytes();
    size_t data_end = bytes.size();
    if (!m->shard(0).parsed.tensors.empty()) {
      data_end = 0;
      for (const auto& t : m->shard(0).parsed.tensors) data_end = std::max<size_t>(data_end, t.offset + t.nbytes);
    }
    for (size_t n : {size_t{0}, size_t{3}, size_t{24}, size_t{100}, size_t{1000}, data_end / 2, data_end - 1}) {
      if (n >= bytes.size()) continue;
      EXPECT_FALSE(ParseGguf(f, bytes.first(n)).ok()) << f << " truncated to " << n;
    }
  }
}

// The conformance fixtures list every tensor (name, type, ne) as llama.cpp saw it.
TEST(GgufReaderRealFiles, TensorTablesMatchLlamaCppListing) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("conformance/qwen3moe-q8_0.prompt.json"));
  int checked = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(testing::SharedFile("conformance"), ec)) {
    std::string p = e.path().string();
    if (!EndsWith(p, ".prompt.json")) continue;
    nlohmann::json j = nlohmann::json::parse(std::ifstream(p));
    std::string load = testing::SharedFile("conformance/" + j["load_path"].get<std::string>());
    auto m = gguf::GgufModel::Open(load);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_EQ(m->tensors().size(), j["tensors"].size()) << p;
    for (const auto& t : j["tensors"]) {
      const gguf::TensorInfo* ti = m->FindTensor(t["name"].get<std::string>());
      ASSERT_NE(ti, nullptr) << p << " " << t["name"];
      std::string type = t["type"].get<std::string>();
      EXPECT_TRUE(EqualsIgnoreCaseForTest(TypeName(ti->type), type)) << t["name"] << " " << type;
      std::vector<int64_t> ne = t["ne"].get<std::vector<int64_t>>();
      ASSERT_EQ(ne.size(), ti->n_dims) << t["name"];
      for (size_t k = 0; k < ne.size(); ++k) EXPECT_EQ(ne[k], ti->ne[k]) << t["name"];
      ++checked;
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(GgufReaderRealFiles, InspectJsonForEveryRealFile) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("models/stories260K.gguf"));
  for (const auto& f : RealGgufs()) {
    auto r = testing::RunProgram("strata-pack", {"--inspect", "--json", f});
    ASSERT_EQ(r.exit_code, 0) << f << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_TRUE(j["ok"].get<bool>());
    EXPECT_FALSE(j["architecture"].is_null()) << f;
  }
  auto r = testing::RunProgram("strata-pack", {"--inspect", testing::SharedFile("models/stories260K.gguf")});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, AllOf(HasSubstr("architecture llama"), HasSubstr("embedding_length"), HasSubstr("vocab size"),
                           HasSubstr("F32"), HasSubstr("tensors      48")));
}

}  // namespace
}  // namespace strata
