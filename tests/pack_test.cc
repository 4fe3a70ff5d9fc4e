// The pack: every real GGUF packs, validates and reads back byte for byte;
// the broken fixtures pack with their fixes; packing is deterministic; and
// every kind of corruption is caught with its own message.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <cstring>
#include <random>

#include "packer/gguf/gguf_file.h"
#include "runtime/base/strings.h"
#include "runtime/model/model.h"
#include "packer/tokenizer_import.h"
#include "runtime/pack/pack_enums.h"
#include "runtime/pack/pack_format.h"
#include "runtime/pack/pack_reader.h"
#include "runtime/pack/pack_vocab.h"
#include "runtime/quant/dequantize.h"
#include "tests/gguf_writer/synthetic_model.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/run_command.h"
#include "tests/testing/test_data.h"
#include "validate/validator.h"

namespace strata {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::PackFile;
using testing::ReadBytes;
using testing::RewriteManifest;
using testing::WriteBytes;

std::vector<std::string> Ggufs(const std::string& sub) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(testing::SharedFile(sub), ec)) {
    std::string p = e.path().string();
    if (e.path().extension() != ".gguf") continue;
    if (p.find("-00002-of-") != std::string::npos) continue;  // opened through shard 1
    out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Stem(const std::string& p) { return std::filesystem::path(p).stem().string(); }

// Packs every model GGUF, validates it, and compares every tensor's bytes
// with the GGUF's (a squeezed shape keeps the same bytes).
TEST(Pack, EveryModelGgufPacksValidatesAndReadsBack) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("models/stories260K.gguf"));
  std::string dir = testing::ScratchDir("pack_every_model");
  auto files = Ggufs("conformance");
  for (const auto& f : Ggufs("models")) files.push_back(f);
  ASSERT_GE(files.size(), 15u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    std::string out = dir + "/" + Stem(f) + ".strata";
    auto r = PackFile(f, out);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ValidateReport rep = ValidatePack(out, {});
    ASSERT_TRUE(rep.ok()) << ValidateReportText(rep);
    auto pack = Pack::Open(out);
    ASSERT_TRUE(pack.ok()) << pack.status().message();
    auto g = gguf::GgufModel::Open(f);
    ASSERT_TRUE(g.ok());
    ASSERT_EQ((*pack)->tensors().size(), g->tensors().size());
    for (const TensorView& t : (*pack)->tensors()) {
      const gguf::TensorInfo* gt = g->FindTensor(t.name);
      ASSERT_NE(gt, nullptr) << t.name;
      auto src = g->TensorData(*gt);
      ASSERT_EQ(t.type, gt->type) << t.name;
      ASSERT_EQ(t.data.size(), src.size()) << t.name;
      ASSERT_TRUE(std::equal(src.begin(), src.end(), t.data.begin())) << t.name;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data.data()) % 4096, 0u) << t.name;
    }
  }
}

TEST(Pack, EveryVocabOnlyGgufPacksAndItsVocabularyRoundTrips) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("tokenizer/ggml-vocab-qwen2.gguf"));
  std::string dir = testing::ScratchDir("pack_vocab_only");
  auto files = Ggufs("tokenizer");
  ASSERT_GE(files.size(), 15u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    std::string out = dir + "/" + Stem(f) + ".strata";
    auto r = PackFile(f, out);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->arch, Arch::kVocabOnly);
    ValidateReport rep = ValidatePack(out, {});
    ASSERT_TRUE(rep.ok()) << ValidateReportText(rep);
    auto pack = Pack::Open(out);
    ASSERT_TRUE(pack.ok());
    auto back = VocabFromManifest(*(*pack)->manifest().tokenizer(), out);
    ASSERT_TRUE(back.ok()) << back.status().message();
    const tokenizer::Vocab& v = r->vocab;
    EXPECT_EQ(back->tokens, v.tokens);
    EXPECT_EQ(back->merges, v.merges);
    EXPECT_EQ(back->scores, v.scores);
    EXPECT_EQ(back->types, v.types);
    EXPECT_EQ(back->special.bos, v.special.bos);
    EXPECT_EQ(back->special.eos, v.special.eos);
    EXPECT_EQ(back->eog_ids, v.eog_ids);
    EXPECT_EQ(back->pre, v.pre);
    EXPECT_EQ(back->add_bos, v.add_bos);
    EXPECT_EQ(back->chat_template, v.chat_template);
  }
}

// The two broken qwen35moe fixtures (seeds/000's hand patches, reversed).
TEST(Pack, BrokenFixturesPackWithFixesAndEqualTheUnbrokenModel) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("conformance/qwen35moe-q4_k_m.gguf"));
  std::string dir = testing::ScratchDir("pack_broken");
  auto good = PackFile(testing::SharedFile("conformance/qwen35moe-q4_k_m.gguf"), dir + "/good.strata");
  ASSERT_TRUE(good.ok()) << good.status().message();
  struct Case {
    const char* file;
    const char* kind;
    const char* location;
    size_t count;
  } cases[] = {
      {"qwen35moe-q4_k_m-broken-no-nextn-key", "default", "qwen35moe.nextn_predict_layers", 1},
      {"qwen35moe-q4_k_m-broken-shexp-gate-2d", "squeeze-dims", ".ffn_gate_inp_shexp.weight", 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    std::string out = dir + "/" + c.file + ".strata";
    auto r = PackFile(testing::SharedFile(std::string("conformance/") + c.file + ".gguf"), out);
    ASSERT_TRUE(r.ok()) << r.status().message();
    size_t n = 0;
    for (const Fix& f : r->log.fixes)
      if (f.kind == c.kind && f.location.find(c.location) != std::string::npos) ++n;
    EXPECT_EQ(n, c.count);
    auto p = Pack::Open(out);
    auto q = Pack::Open(dir + "/good.strata");
    ASSERT_TRUE(p.ok() && q.ok());
    // The fixes are in the pack itself.
    size_t in_pack = 0;
    for (const auto* f : *(*p)->manifest().fixes())
      if (f->kind()->str() == c.kind && f->location()->str().find(c.location) != std::string::npos) ++in_pack;
    EXPECT_EQ(in_pack, c.count);
    ASSERT_EQ((*p)->tensors().size(), (*q)->tensors().size());
    for (size_t i = 0; i < (*p)->tensors().size(); ++i) {
      const TensorView& a = (*p)->tensors()[i];
      const TensorView& b = (*q)->tensors()[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.shape, b.shape) << a.name;
      EXPECT_TRUE(std::equal(a.data.begin(), a.data.end(), b.data.begin(), b.data.end())) << a.name;
    }
    EXPECT_EQ((*p)->hparams().nextn_predict_layers, 0u);
    EXPECT_EQ((*p)->hparams().n_layer, (*q)->hparams().n_layer);
  }
}

TEST(Pack, SameInputSameBytes) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("conformance/qwen3moe-q4_k_m.gguf"));
  std::string dir = testing::ScratchDir("pack_deterministic");
  for (const char* f : {"conformance/qwen3moe-q4_k_m.gguf", "tokenizer/ggml-vocab-qwen2.gguf"}) {
    ASSERT_TRUE(PackFile(testing::SharedFile(f), dir + "/a.strata").ok());
    ASSERT_TRUE(PackFile(testing::SharedFile(f), dir + "/b-with-another-name.strata").ok());
    EXPECT_EQ(ReadBytes(dir + "/a.strata"), ReadBytes(dir + "/b-with-another-name.strata")) << f;
  }
  // No temporary file is left behind.
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST(Pack, SplitModelPacksToTheSameTensorsAsTheUnsplitOne) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("conformance/qwen3moe-q4_k_m-split-00001-of-00002.gguf"));
  std::string dir = testing::ScratchDir("pack_split");
  ASSERT_TRUE(PackFile(testing::SharedFile("conformance/qwen3moe-q4_k_m-split-00001-of-00002.gguf"), dir + "/s.strata").ok());
  ASSERT_TRUE(PackFile(testing::SharedFile("conformance/qwen3moe-q4_k_m.gguf"), dir + "/u.strata").ok());
  auto s = Pack::Open(dir + "/s.strata");
  auto u = Pack::Open(dir + "/u.strata");
  ASSERT_TRUE(s.ok() && u.ok());
  // Everything but the provenance (file names) is identical: same blobs at the same offsets.
  EXPECT_EQ((*s)->header().manifest_offset, (*u)->header().manifest_offset);
  auto sb = (*s)->file_bytes(), ub = (*u)->file_bytes();
  EXPECT_TRUE(std::equal(sb.begin() + 4096, sb.begin() + static_cast<long>((*s)->header().manifest_offset),
                         ub.begin() + 4096));
  EXPECT_EQ((*s)->manifest().provenance()->sources()->size(), 2u);
}

// ---------------------------------------------------------------------------
// Corruption

class PackCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::SharedFile("conformance/stories260k-q8_0.gguf");
    STRATA_REQUIRE_SHARED_FILE(path_);
    dir_ = testing::ScratchDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    good_ = dir_ + "/good.strata";
    auto r = PackFile(path_, good_);
    ASSERT_TRUE(r.ok()) << r.status().message();
    bytes_ = ReadBytes(good_);
    auto h = pack::DecodeHeader(good_, bytes_);
    ASSERT_TRUE(h.ok());
    header_ = *h;
  }
  Result<std::unique_ptr<Pack>> OpenBytes(const std::vector<uint8_t>& b) { return Pack::FromBytes("t.strata", b); }
  std::string dir_, good_, path_;
  std::vector<uint8_t> bytes_;
  pack::PackHeader header_;
};

TEST_F(PackCorruption, EverySingleByteChangeInTheHeaderIsDetected) {
  for (uint32_t i = 0; i < pack::kHeaderSize; ++i) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}}) {
      auto b = bytes_;
      b[i] ^= flip;
      auto p = OpenBytes(b);
      ASSERT_FALSE(p.ok()) << "header byte " << i;
      EXPECT_THAT(p.status().message(), ::testing::AnyOf(HasSubstr("header checksum"), HasSubstr("pack magic"),
                                                         HasSubstr("format")))
          << i;
    }
  }
}

TEST_F(PackCorruption, EverySingleByteChangeInTheManifestIsDetected) {
  // One byte flipped and put back at a time: no copy of the pack per byte.
  auto b = bytes_;
  for (uint64_t i = header_.manifest_offset; i < header_.file_size; ++i) {
    b[i] ^= 0x20;
    auto p = OpenBytes(b);
    b[i] ^= 0x20;
    ASSERT_FALSE(p.ok()) << "manifest byte " << i;
    EXPECT_THAT(p.status().message(), HasSubstr("manifest checksum")) << i;
  }
}

TEST_F(PackCorruption, BlobByteChangesFailTheChecksumNamingTheTensor) {
  auto p0 = OpenBytes(bytes_);
  ASSERT_TRUE(p0.ok());
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const TensorView& t = (*p0)->tensors()[rng() % (*p0)->tensors().size()];
    uint64_t at = static_cast<uint64_t>(t.data.data() - bytes_.data()) + rng() % t.data.size();
    auto b = bytes_;
    b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    auto p = OpenBytes(b);
    ASSERT_TRUE(p.ok()) << "blob bytes are not read at open";
    ChecksumReport cr = (*p)->VerifyChecksums(2);
    ASSERT_EQ(cr.failures.size(), 1u);
    EXPECT_THAT(cr.failures[0], AllOf(HasSubstr("tensor '" + std::string(t.name) + "'"), HasSubstr("checksum")));
  }
  // Through the validator, too.
  auto b = bytes_;
  b[static_cast<size_t>((*p0)->tensors()[3].data.data() - bytes_.data())] ^= 1;
  ASSERT_TRUE(WriteBytes(dir_ + "/bad.strata", b).ok());
  ValidateReport rep = ValidatePack(dir_ + "/bad.strata", {});
  EXPECT_FALSE(rep.ok());
  auto r = testing::RunProgram("strata-validate", {dir_ + "/bad.strata"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, AllOf(HasSubstr("FAIL checksums"), HasSubstr("NOT SOUND")));
}

TEST_F(PackCorruption, NonZeroPaddingIsCaughtByTheValidator) {
  auto p0 = OpenBytes(bytes_);
  ASSERT_TRUE(p0.ok());
  const TensorView& t = (*p0)->tensors()[0];
  uint64_t pad = static_cast<uint64_t>(t.data.data() - bytes_.data()) + t.data.size() + 10;
  auto b = bytes_;
  b[pad] = 0x5A;
  ASSERT_TRUE(WriteBytes(dir_ + "/pad.strata", b).ok());
  EXPECT_TRUE(Pack::Open(dir_ + "/pad.strata").ok());
  ValidateReport rep = ValidatePack(dir_ + "/pad.strata", {});
  EXPECT_FALSE(rep.ok());
  bool found = false;
  for (const auto& c : rep.checks)
    if (c.name == "zero-bytes") {
      found = true;
      EXPECT_FALSE(c.ok);
      EXPECT_THAT(c.detail, HasSubstr("byte " + std::to_string(pad) + " = 0x5a"));
    }
  EXPECT_TRUE(found);
}

TEST_F(PackCorruption, TruncationAtAnyPointIsDetected) {
  std::vector<uint64_t> cuts = {0, 1, 8, 64, 127, 128, 4095, 4096, header_.manifest_offset - 1,
                                header_.manifest_offset, header_.file_size - 1};
  for (uint64_t c = 129; c < header_.file_size; c += 997) cuts.push_back(c);
  for (uint64_t c : cuts) {
    std::vector<uint8_t> b(bytes_.begin(), bytes_.begin() + static_cast<long>(c));
    auto p = OpenBytes(b);
    ASSERT_FALSE(p.ok()) << "truncated at " << c;
    if (c >= pack::kHeaderSize) {
      EXPECT_THAT(p.status().message(), HasSubstr("(truncated)")) << c;
    }
  }
  auto b = bytes_;
  b.push_back(0);
  auto p = OpenBytes(b);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("bytes appended"));
}

TEST_F(PackCorruption, BadBlobsInAnOtherwiseValidManifestAreRefused) {
  struct Case {
    const char* name;
    std::function<void(fb::ManifestT&)> edit;
    std::vector<std::string> expect;
  } cases[] = {
      {"overlapping", [](fb::ManifestT& m) { m.blobs[2]->offset = m.blobs[1]->offset; },
       {"blob 2 offset", "blobs overlap or are out of order"}},
      {"misaligned", [](fb::ManifestT& m) { m.blobs[1]->offset += 64; }, {"blob 1 offset", "a multiple of 4096"}},
      {"short", [](fb::ManifestT& m) { m.blobs[5]->size -= 34; }, {"blob size", "expected", "found"}},
      {"out_of_file", [](fb::ManifestT& m) { m.blobs.back()->offset += 1ull << 30; },
       {"inside the blob region"}},
      {"size_overflow", [](fb::ManifestT& m) { m.blobs.back()->size = UINT64_MAX - 10; }, {"beyond 2^64"}},
      {"blob_index", [](fb::ManifestT& m) { m.tensors[0]->blob = 100000; }, {"blob: expected an index below"}},
      {"shared_blob", [](fb::ManifestT& m) { m.tensors[1]->blob = m.tensors[0]->blob; },
       {"a blob no other tensor uses"}},
      {"bad_type", [](fb::ManifestT& m) { m.tensors[0]->type = static_cast<fb::WeightType>(4); }, {"type", "removed from ggml"}},
      {"bad_shape", [](fb::ManifestT& m) { m.tensors[0]->shape[1] += 1; }, {"blob size"}},
      {"spec_shape", [](fb::ManifestT& m) {
         // A consistent tensor whose shape the llama spec does not allow.
         for (auto& t : m.tensors)
           if (t->name == "output_norm.weight") t->role = pack::ToFb(TensorRole::kAttnNorm);
       },
       {"output_norm.weight", "role"}},
      {"missing_tensor", [](fb::ManifestT& m) {
         m.tensors.erase(m.tensors.begin() + 5);
         m.blobs.erase(m.blobs.begin() + 5);
         for (size_t i = 5; i < m.tensors.size(); ++i) m.tensors[i]->blob -= 1;
       },
       {"the llama spec requires it"}},
      {"hparams", [](fb::ManifestT& m) { m.hparams->n_head_kv = 3; }, {"head_count_kv", "a divisor"}},
      {"vocab_count", [](fb::ManifestT& m) { m.tokenizer->n_tokens += 1; }, {"tokenizer.n_tokens"}},
      {"format", [](fb::ManifestT& m) { m.format_major = 2; }, {"format_major"}},
      {"arch", [](fb::ManifestT& m) { m.arch = static_cast<fb::Arch>(9); }, {"architecture id 9"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string out = dir_ + "/" + c.name + ".strata";
    ASSERT_TRUE(RewriteManifest(good_, out, c.edit).ok());
    auto p = Pack::Open(out);
    ASSERT_FALSE(p.ok()) << c.name;
    for (const auto& e : c.expect) EXPECT_THAT(p.status().message(), HasSubstr(e)) << c.name;
    ValidateReport rep = ValidatePack(out, {});
    EXPECT_FALSE(rep.ok());
  }
  // An unedited rewrite is still sound (the helper itself is not what fails).
  ASSERT_TRUE(RewriteManifest(good_, dir_ + "/same.strata", [](fb::ManifestT&) {}).ok());
  EXPECT_TRUE(Pack::Open(dir_ + "/same.strata").ok());
}

TEST_F(PackCorruption, CorruptTokenizerSectionIsCaughtWhenLoaded) {
  std::string out = dir_ + "/tok.strata";
  ASSERT_TRUE(RewriteManifest(good_, out, [](fb::ManifestT& m) { m.tokenizer->token_bytes->xxh3 ^= 1; }).ok());
  auto p = Pack::Open(out);
  ASSERT_TRUE(p.ok());
  auto v = VocabFromManifest(*(*p)->manifest().tokenizer(), out);
  ASSERT_FALSE(v.ok());
  EXPECT_THAT(v.status().message(), AllOf(HasSubstr("token_bytes"), HasSubstr("checksum")));
  EXPECT_FALSE(ValidatePack(out, {}).ok());
}

// Counts that bound what a section may decompress to are checked before it
// is decompressed: a tiny manifest edit must not make the reader allocate
// gigabytes (found by review for issue 12: n_merges * 4 bytes of merge_ends).
TEST_F(PackCorruption, TokenizerCountsAreBoundedBeforeDecompression) {
  struct Case {
    const char* name;
    std::function<void(fb::ManifestT&)> edit;
    const char* expect;
  } cases[] = {
      {"n_merges", [](fb::ManifestT& m) { m.tokenizer->n_merges = 0xFFFFFFFFu; }, "n_merges: expected at most"},
      {"n_tokens", [](fb::ManifestT& m) { m.tokenizer->n_tokens = 0xFFFFFFFFu; }, "n_tokens: expected at most"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string out = dir_ + "/" + c.name + ".strata";
    ASSERT_TRUE(RewriteManifest(good_, out, c.edit).ok());
    auto p = Pack::Open(out);
    if (!p.ok()) continue;  // refused even earlier: as good
    auto v = VocabFromManifest(*(*p)->manifest().tokenizer(), out);
    ASSERT_FALSE(v.ok());
    EXPECT_THAT(v.status().message(), HasSubstr(c.expect));
  }
}

// Hyperparameters the forward pass uses as floats must be finite.
TEST_F(PackCorruption, NonFiniteScalesAreRefused) {
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity(), -1.0f}) {
    SCOPED_TRACE(bad);
    std::string out = dir_ + "/scale.strata";
    ASSERT_TRUE(RewriteManifest(good_, out, [&](fb::ManifestT& m) { m.hparams->attn_scale = bad; }).ok());
    auto p = Pack::Open(out);
    ASSERT_FALSE(p.ok());
    EXPECT_THAT(p.status().message(), HasSubstr("attn_scale"));
    ASSERT_TRUE(RewriteManifest(good_, out, [&](fb::ManifestT& m) { m.hparams->rope_freq_scale = bad; }).ok());
    p = Pack::Open(out);
    ASSERT_FALSE(p.ok());
    EXPECT_THAT(p.status().message(), HasSubstr("rope_freq_scale"));
  }
}

// A pack written before the schema named its enums (TensorRole, WeightType)
// reads and validates: the stored bytes did not change. The file is the fuzz
// corpus's llama seed, written by that earlier strata-pack (128-byte blobs).
TEST(PackFormat, APackWrittenBeforeTheEnumsWereNamedStillOpens) {
  const std::string old = std::string(STRATA_SOURCE_DIR) + "/tests/fuzz/corpus/pack_reader_fuzz/llama.strata";
  auto p = Pack::Open(old);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ((*p)->arch(), Arch::kLlama);
  ASSERT_NE((*p)->Find("token_embd.weight"), nullptr);
  EXPECT_EQ((*p)->Find("token_embd.weight")->role, TensorRole::kTokenEmbd);
  EXPECT_EQ((*p)->Find("token_embd.weight")->type, GgmlType::kQ8_0);
  ValidateReport rep = ValidatePack(old, {});
  EXPECT_TRUE(rep.ok()) << ValidateReportText(rep);
}

TEST_F(PackCorruption, NewerMajorVersionIsReportedAsSuch) {
  auto b = bytes_;
  b[pack::off::kFormatMajor] = 2;
  testing::FixHeaderChecksum(b);
  auto p = OpenBytes(b);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(p.status().message(), HasSubstr("pack format 2." + std::to_string(pack::kFormatMinor) +
                                              " is newer than this build reads"));
  auto g = testing::ReadBytes(path_);
  auto q = OpenBytes(g);
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(q.status().message(), HasSubstr("this is a GGUF file"));
}

// ---------------------------------------------------------------------------
// Refusals, overrides, and the command line

TEST(PackRefusals, SpecViolationsAreRefusedAndNothingIsWritten) {
  std::string dir = testing::ScratchDir("pack_refusals");
  testing::SyntheticModelSpec s;
  s.hp = testing::TinyQwen3MoeHParams();
  struct Case {
    const char* name;
    std::function<void(testing::GgufBuilder&)> edit;
    std::vector<std::string> expect;
  } cases[] = {
      {"missing_key", [](testing::GgufBuilder& b) { b.Remove("qwen3moe.expert_count"); },
       {"qwen3moe.expert_count", "required key missing", "--set qwen3moe.expert_count=VALUE"}},
      {"wrong_shape", [](testing::GgufBuilder& b) { b.ReshapeTensor("blk.1.attn_k.weight", {256, 64}); },
       {"blk.1.attn_k.weight", "shape: expected [256 (n_embd), 128 (n_head_kv*head_dim_k)], found [256, 64]"}},
      {"missing_tensor", [](testing::GgufBuilder& b) { b.RemoveTensor("blk.2.ffn_up_exps.weight"); },
       {"blk.2.ffn_up_exps.weight", "missing"}},
      {"unknown_tensor", [](testing::GgufBuilder& b) { b.TensorF32("blk.0.extra.weight", {4}, {1, 2, 3, 4}); },
       {"blk.0.extra.weight", "not a tensor of the qwen3moe spec", "--drop-unknown-tensors"}},
      {"norm_quantized", [](testing::GgufBuilder& b) {
         b.Tensor("blk.0.attn_norm.weight", GgmlType::kQ8_0, {256}, std::vector<uint8_t>(8 * 34, 0));
       },
       {"blk.0.attn_norm.weight", "type: expected F32, found Q8_0"}},
      {"signed_negative", [](testing::GgufBuilder& b) { b.I32("qwen3moe.expert_used_count", -2); },
       {"qwen3moe.expert_used_count", "unsigned 32-bit", "i32 -2"}},
      {"unsupported_arch", [](testing::GgufBuilder& b) { b.String("general.architecture", "mamba"); },
       {"architecture 'mamba' is not supported"}},
      {"rope_scaling", [](testing::GgufBuilder& b) { b.String("qwen3moe.rope.scaling.type", "longrope"); },
       {"qwen3moe.rope.scaling.type", "expected \"none\", \"linear\" or \"yarn\"", "LongRoPE"}},
      {"rope_factor", [](testing::GgufBuilder& b) { b.F32("qwen3moe.rope.scaling.factor", -4.0f); },
       {"qwen3moe.rope.scaling.factor", "a finite factor >= 0", "f32 -4"}},
      {"yarn_orig_ctx", [](testing::GgufBuilder& b) {
         b.String("qwen3moe.rope.scaling.type", "yarn").F32("qwen3moe.rope.scaling.factor", 4.0f);
         b.U32("qwen3moe.rope.scaling.original_context_length", 0);
       },
       {"rope.scaling.original_context_length", "expected 1..16777216, found 0"}},
      {"gating_func", [](testing::GgufBuilder& b) { b.U32("qwen3moe.expert_gating_func", 2); },
       {"qwen3moe.expert_gating_func", "an expert gating function other than softmax (1)"}},
      {"f64_inexact", [](testing::GgufBuilder& b) { b.F64("qwen3moe.attention.layer_norm_rms_epsilon", 1e-6); },
       {"f32 cannot hold exactly", "--allow-unsafe-fixes"}},
      // Floats and wide integers where an integer is read (issue 12): each is
      // refused by value through ExactCast, never converted (UBSan's
      // float-cast-overflow would stop this test on a raw cast).
      {"f64_huge_as_u32", [](testing::GgufBuilder& b) { b.F64("qwen3moe.expert_used_count", 6.2e223); },
       {"qwen3moe.expert_used_count", "unsigned 32-bit", "f64 6.2e+223"}},
      {"f32_huge_as_u32", [](testing::GgufBuilder& b) { b.F32("qwen3moe.expert_count", 1.8e28f); },
       {"qwen3moe.expert_count", "unsigned 32-bit", "f32 1.8e+28"}},
      {"f32_nan_as_u32", [](testing::GgufBuilder& b) { b.F32("qwen3moe.block_count", std::nanf("")); },
       {"qwen3moe.block_count", "unsigned 32-bit", "nan"}},
      {"f32_fraction_as_u32", [](testing::GgufBuilder& b) { b.F32("qwen3moe.block_count", 3.5f); },
       {"qwen3moe.block_count", "unsigned 32-bit", "f32 3.5"}},
      {"f64_negative_as_u32", [](testing::GgufBuilder& b) { b.F64("qwen3moe.block_count", -3.0); },
       {"qwen3moe.block_count", "unsigned 32-bit", "f64 -3"}},
      {"f64_beyond_f32", [](testing::GgufBuilder& b) { b.F64("qwen3moe.attention.layer_norm_rms_epsilon", 1e300); },
       {"qwen3moe.attention.layer_norm_rms_epsilon", "outside f32's finite range"}},
      {"array_as_u32", [](testing::GgufBuilder& b) { b.F64Array("qwen3moe.attention.head_count_kv", {4.1e31, 2, 2}); },
       {"qwen3moe.attention.head_count_kv", "unsigned 32-bit", "array[f64, 3]"}},
      {"bos_as_f64", [](testing::GgufBuilder& b) { b.F64("tokenizer.ggml.bos_token_id", 6.2e223); },
       {"tokenizer.ggml.bos_token_id", "integer token id"}},
      {"token_types_as_f32", [](testing::GgufBuilder& b) {
         b.F32Array("tokenizer.ggml.token_type", std::vector<float>(1000, std::nanf("")));
       },
       {"tokenizer.ggml.token_type", "array[i32]"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto b = testing::BuildSyntheticModel(s);
    ASSERT_TRUE(b.ok()) << b.status().message();
    c.edit(*b);
    std::string gguf = dir + "/" + c.name + ".gguf";
    ASSERT_TRUE(b->WriteFile(gguf).ok());
    std::string out = dir + "/" + c.name + ".strata";
    auto r = PackFile(gguf, out);
    ASSERT_FALSE(r.ok());
    for (const auto& e : c.expect) EXPECT_THAT(r.status().message() + " " + [&] {
      // All refusals, not only the first.
      auto m = gguf::GgufModel::Open(gguf);
      PackOptions o;
      o.dry_run = true;
      auto rr = PackModel(*m, o);
      std::string all;
      if (rr.ok())
        for (const auto& f : rr->log.refusals) all += f.location + ": " + f.message + " | " + f.override_flag + "\n";
      return all;
    }(), HasSubstr(e)) << c.name;
    EXPECT_FALSE(FileExists(out)) << c.name;
  }
}

// An edit of a GGUF that the spec must refuse, and what the refusals say.
struct ArchEdit {
  const char* name;
  std::function<void(testing::GgufBuilder&)> edit;
  std::vector<std::string> expect;
};

// Each edit of the model `s` writes, packed: refused with every expected
// text among the refusals (all of them: a dry run collects every one), and
// nothing written.
template <size_t N>
void ExpectEveryEditRefused(const testing::SyntheticModelSpec& s, const ArchEdit (&cases)[N], const std::string& dir) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto b = testing::BuildSyntheticModel(s);
    ASSERT_TRUE(b.ok()) << b.status().message();
    c.edit(*b);
    const std::string gguf = dir + "/" + c.name + ".gguf", out = dir + "/" + c.name + ".strata";
    ASSERT_TRUE(b->WriteFile(gguf).ok());
    auto m = gguf::GgufModel::Open(gguf);
    ASSERT_TRUE(m.ok());
    PackOptions o;
    o.dry_run = true;
    auto rr = PackModel(*m, o);
    std::string all = rr.ok() ? "" : rr.status().message();
    if (rr.ok())
      for (const auto& f : rr->log.refusals) all += f.location + ": " + f.message + "\n";
    for (const auto& e : c.expect) EXPECT_THAT(all, HasSubstr(e));
    EXPECT_FALSE(PackFile(gguf, out).ok());
    EXPECT_FALSE(FileExists(out));
  }
}

// glm4moe's keys and tensors are checked against its spec like every other
// architecture's: each defect is refused naming the key or tensor and what
// was expected, and nothing is written.
TEST(PackRefusals, Glm4MoeSpecViolationsAreRefused) {
  std::string dir = testing::ScratchDir("pack_refusals_glm");
  testing::SyntheticModelSpec s;
  s.arch = Arch::kGlm4Moe;
  s.hp = testing::TinyGlm4MoeHParams();
  const ArchEdit cases[] = {
      {"missing_shared_count", [](testing::GgufBuilder& b) { b.Remove("glm4moe.expert_shared_count"); },
       {"glm4moe.expert_shared_count", "required key missing"}},
      {"gating_4", [](testing::GgufBuilder& b) { b.U32("glm4moe.expert_gating_func", 4); },
       {"glm4moe.expert_gating_func", "expected 1 (softmax), 2 (sigmoid) or 3", "u32 4"}},
      {"bias_shape", [](testing::GgufBuilder& b) { b.ReshapeTensor("blk.1.exp_probs_b.bias", {4}); },
       {"blk.1.exp_probs_b.bias", "expected [8 (n_expert)], found [4]"}},
      {"q_bias_shape", [](testing::GgufBuilder& b) { b.ReshapeTensor("blk.0.attn_q.bias", {256}); },
       {"blk.0.attn_q.bias", "expected [512 (n_head*head_dim_k)], found [256]"}},
      {"dense_lead_2", [](testing::GgufBuilder& b) { b.U32("glm4moe.leading_dense_block_count", 2); },
       {"blk.1.ffn_gate.weight", "missing"}},
      {"no_nextn_key", [](testing::GgufBuilder& b) { b.Remove("glm4moe.nextn_predict_layers"); },
       {"glm4moe.nextn_predict_layers", "the file has MTP tensors"}},
      {"mrope_sections", [](testing::GgufBuilder& b) { b.I32Array("glm4moe.rope.dimension_sections", {8, 8, 0, 0}); },
       {"rope.dimension_sections", "M-RoPE"}},
  };
  ExpectEveryEditRefused(s, cases, dir);
  // The unbroken model packs, with the defaults it relied on recorded.
  auto b = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->WriteFile(dir + "/ok.gguf").ok());
  auto r = PackFile(dir + "/ok.gguf", dir + "/ok.strata");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->arch, Arch::kGlm4Moe);
}

// gpt-oss: its window, sinks and expert biases are checked like any key or
// tensor; a RoPE base of its own for the sliding layers is refused.
TEST(PackRefusals, GptOssSpecViolationsAreRefused) {
  std::string dir = testing::ScratchDir("pack_refusals_oss");
  testing::SyntheticModelSpec s;
  s.arch = Arch::kGptOss;
  s.hp = testing::TinyGptOssHParams();
  const ArchEdit cases[] = {
      {"no_window", [](testing::GgufBuilder& b) { b.Remove("gpt-oss.attention.sliding_window"); },
       {"gpt-oss.attention.sliding_window", "required key missing"}},
      {"sinks_shape", [](testing::GgufBuilder& b) { b.ReshapeTensor("blk.0.attn_sinks.weight", {4}); },
       {"blk.0.attn_sinks.weight", "expected [8 (n_head)], found [4]"}},
      {"no_expert_bias", [](testing::GgufBuilder& b) { b.RemoveTensor("blk.1.ffn_down_exps.bias"); },
       {"blk.1.ffn_down_exps.bias", "missing"}},
      {"swa_base", [](testing::GgufBuilder& b) { b.F32("gpt-oss.rope.freq_base_swa", 10000.0f); },
       {"gpt-oss.rope.freq_base_swa", "a RoPE base per layer kind"}},
  };
  ExpectEveryEditRefused(s, cases, dir);
  auto b = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(b.ok());
  b->F32("gpt-oss.rope.freq_base_swa", s.hp.rope_freq_base);  // the same base: accepted
  ASSERT_TRUE(b->WriteFile(dir + "/ok.gguf").ok());
  auto r = PackFile(dir + "/ok.gguf", dir + "/ok.strata");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->arch, Arch::kGptOss);
}

// deepseek2: the latent attention's keys and tensors are checked against
// each other (the cache row is latent + RoPE part, one KV head), the two query
// forms follow q_lora_rank, expert groups must divide the experts, and a
// file of the older attn_kv_b form is refused with that reason.
TEST(PackRefusals, Deepseek2SpecViolationsAreRefused) {
  std::string dir = testing::ScratchDir("pack_refusals_ds2");
  testing::SyntheticModelSpec s;
  s.arch = Arch::kDeepseek2;
  s.hp = testing::TinyDeepseek2HParams();
  const ArchEdit cases[] = {
      {"kv_b_shape",
       [](testing::GgufBuilder& b) {  // the older form with a misshapen attn_kv_b
         b.Remove("deepseek2.attention.key_length_mla");
         b.Remove("deepseek2.attention.value_length_mla");
         b.U32("deepseek2.attention.key_length", 64).U32("deepseek2.attention.value_length", 32);
         for (int il = 0; il < 3; ++il) {
           b.RemoveTensor(StrFormat("blk.%d.attn_k_b.weight", il));
           b.RemoveTensor(StrFormat("blk.%d.attn_v_b.weight", il));
           b.TensorF32(StrFormat("blk.%d.attn_kv_b.weight", il), {64, 8 * 32}, std::vector<float>(64 * 8 * 32, 0.01f));
         }
       },
       {"blk.0.attn_kv_b.weight", "expected [64 (kv_lora_rank), 512 (n_head*(key_length_mla-n_rot+value_length_mla))]"}},
      {"kv_heads", [](testing::GgufBuilder& b) { b.U32("deepseek2.attention.head_count_kv", 8); },
       {"attention.head_count_kv", "expected 1 (latent attention caches one head), found 8"}},
      {"key_length", [](testing::GgufBuilder& b) { b.U32("deepseek2.attention.key_length", 64); },
       {"attention.key_length", "expected 96 (kv_lora_rank + rope.dimension_count), found 64"}},
      {"k_b_shape", [](testing::GgufBuilder& b) { b.ReshapeTensor("blk.1.attn_k_b.weight", {32, 64, 4}); },
       {"blk.1.attn_k_b.weight", "expected [32 (head_dim_k_mla-n_rot), 64 (kv_lora_rank), 8 (n_head)]"}},
      {"full_q_with_lora",
       [](testing::GgufBuilder& b) {
         b.RemoveTensor("blk.0.attn_q_b.weight");
         b.TensorF32("blk.0.attn_q.weight", {256, 8 * 64}, std::vector<float>(256 * 8 * 64, 0.01f));
       },
       {"blk.0.attn_q_b.weight", "missing"}},
      {"groups_3", [](testing::GgufBuilder& b) { b.U32("deepseek2.expert_group_count", 3); },
       {"expert_group_count", "a divisor of expert_count 16"}},
      {"groups_used_5", [](testing::GgufBuilder& b) { b.U32("deepseek2.expert_group_used_count", 5); },
       {"expert_group_used_count", "expected 1..4, found 5"}},
      {"temperature", [](testing::GgufBuilder& b) { b.F32("deepseek2.attention.temperature_scale", 0.1f); },
       {"deepseek2.attention.temperature_scale", "attention temperature tuning"}},
  };
  ExpectEveryEditRefused(s, cases, dir);
  auto b = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->WriteFile(dir + "/ok.gguf").ok());
  auto r = PackFile(dir + "/ok.gguf", dir + "/ok.strata");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->arch, Arch::kDeepseek2);
  // DeepSeek V3's MTP layer (newer GGUFs): kept, not run; without its key the
  // default 0 would run it as a fourth main layer, so that is refused.
  s.hp.n_layer_all = 4;
  s.hp.nextn_predict_layers = 1;
  const ArchEdit mtp[] = {
      {"no_nextn_key", [](testing::GgufBuilder& g) { g.Remove("deepseek2.nextn_predict_layers"); },
       {"deepseek2.nextn_predict_layers", "the file has MTP tensors"}},
  };
  ExpectEveryEditRefused(s, mtp, dir);
  auto m = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(m->WriteFile(dir + "/mtp.gguf").ok());
  auto rm = PackFile(dir + "/mtp.gguf", dir + "/mtp.strata");
  ASSERT_TRUE(rm.ok()) << rm.status().message();
  auto pack = Pack::Open(dir + "/mtp.strata");
  ASSERT_TRUE(pack.ok());
  EXPECT_EQ((*pack)->hparams().n_layer, 3u);
  EXPECT_EQ((*pack)->hparams().n_layer_all, 4u);
  EXPECT_NE((*pack)->Find("blk.3.nextn.eh_proj.weight"), nullptr);
}

// Values only deepseek2 reads are zero everywhere else (a crafted pack
// cannot switch YaRN's log multiplier or expert groups on for qwen3moe), and
// latent attention has no sliding window (its GPU op has none to apply).
TEST(PackRefusals, LatentAttentionValuesAreRefusedWhereTheyDoNotApply) {
  HParams q = testing::TinyHParams(Arch::kQwen3Moe);
  q.n_layer = q.n_layer_all;
  ASSERT_TRUE(CheckHParams(Arch::kQwen3Moe, q).ok());
  HParams bad = q;
  bad.rope_yarn_log_mul = 0.1f;
  Status st = CheckHParams(Arch::kQwen3Moe, bad);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("rope.scaling.yarn_log_multiplier: expected 0 (qwen3moe does not read it)"));
  bad = q;
  bad.n_expert_groups = 2;
  bad.n_expert_groups_used = 1;
  st = CheckHParams(Arch::kQwen3Moe, bad);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("expert_group_count: expected 0 or 1 (qwen3moe has no expert groups)"));
  HParams d = testing::TinyDeepseek2HParams();
  ASSERT_TRUE(CheckHParams(Arch::kDeepseek2, d).ok());
  d.n_swa = 16;
  st = CheckHParams(Arch::kDeepseek2, d);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("attention.sliding_window: expected 0"));
}

// deepseek2's older GGUF form (one attn_kv_b a layer, no key_length_mla):
// the packer writes the latent form. attn_k_b's heads are each head's key rows
// of attn_kv_b, dequantized and transposed; attn_v_b's are its value rows, byte
// for byte; the keys become the latent form's.
TEST(PackDeepseek2, TheOlderKvBFormPacksIntoTheLatentForm) {
  std::string dir = testing::ScratchDir("pack_ds2_legacy");
  testing::SyntheticModelSpec s;
  s.arch = Arch::kDeepseek2;
  s.hp = testing::TinyDeepseek2HParams();
  s.matrix_type = GgmlType::kQ8_0;
  s.legacy_kv_b = true;
  auto b = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_TRUE(b->WriteFile(dir + "/legacy.gguf").ok());
  auto r = PackFile(dir + "/legacy.gguf", dir + "/legacy.strata");
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto g = gguf::GgufModel::Open(dir + "/legacy.gguf");
  ASSERT_TRUE(g.ok());
  auto pack = Pack::Open(dir + "/legacy.strata");
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  const HParams& hp = (*pack)->hparams();
  EXPECT_EQ(hp.n_head_kv, 1u);
  EXPECT_EQ(hp.head_dim_k, hp.kv_lora_rank + hp.n_rot);
  EXPECT_EQ(hp.head_dim_v, hp.kv_lora_rank);
  EXPECT_EQ(hp.head_dim_k_mla, s.hp.head_dim_k_mla);
  EXPECT_EQ(hp.head_dim_v_mla, s.hp.head_dim_v_mla);
  const uint64_t L = hp.kv_lora_rank, nope = hp.MlaNope(), v = hp.head_dim_v_mla, H = hp.n_head;
  for (int32_t il = 0; il < 3; ++il) {
    SCOPED_TRACE(il);
    const gguf::TensorInfo* kv_b = g->FindTensor(StrFormat("blk.%d.attn_kv_b.weight", il));
    ASSERT_NE(kv_b, nullptr);
    ASSERT_EQ(kv_b->type, GgmlType::kQ8_0);
    const std::span<const uint8_t> src = g->TensorData(*kv_b);
    const uint64_t src_row = src.size() / (H * (nope + v));
    const TensorView* k_b = (*pack)->Find(TensorRole::kAttnKB, il);
    const TensorView* v_b = (*pack)->Find(TensorRole::kAttnVB, il);
    ASSERT_TRUE(k_b && v_b);
    ASSERT_EQ(k_b->type, GgmlType::kF32);
    ASSERT_EQ(v_b->type, GgmlType::kQ8_0);
    EXPECT_EQ(k_b->expert_count, H);
    const auto* kf = reinterpret_cast<const float*>(k_b->data.data());
    std::vector<float> row(L);
    for (uint64_t h = 0; h < H; ++h) {
      for (uint64_t c = 0; c < nope; ++c) {
        DequantizeRowUnchecked(GgmlType::kQ8_0, src.data() + (h * (nope + v) + c) * src_row, row.data(),
                               static_cast<int64_t>(L));
        for (uint64_t i = 0; i < L; ++i) ASSERT_EQ(kf[(h * L + i) * nope + c], row[i]) << h << " " << i << " " << c;
      }
      for (uint64_t i = 0; i < v; ++i)
        ASSERT_EQ(std::memcmp(v_b->data.data() + (h * v + i) * v_b->row_bytes, src.data() + (h * (nope + v) + nope + i) * src_row,
                              src_row),
                  0);
    }
  }
  // It validates (probe replay included) and runs.
  auto run = testing::RunProgram("strata-run", {dir + "/legacy.strata", "--tokens", "1,2,3", "-n", "4", "--temp", "0"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
}

// qwen3next: its GGUFs carry ssm_in and ssm_ba fused; the packer stores the
// spec's attn_qkv/attn_gate and ssm_beta/ssm_alpha. Both forms of ssm_in
// pack to the same bytes; a GGUF with both forms, a misshapen fused tensor,
// a missing one, or M-RoPE sections is refused.
TEST(PackRefusals, Qwen3NextFusedTensorsSplitAndTheirViolationsAreRefused) {
  std::string dir = testing::ScratchDir("pack_qwen3next");
  testing::SyntheticModelSpec s;
  s.arch = Arch::kQwen3Next;
  s.hp = testing::TinyQwen3NextHParams();
  s.matrix_type = GgmlType::kQ4_K;
  const ArchEdit cases[] = {
      {"both_forms",
       [](testing::GgufBuilder& b) {
         b.Tensor("blk.0.attn_gate.weight", GgmlType::kF32, {256, 256}, std::vector<uint8_t>(256 * 256 * 4));
       },
       {"blk.0.ssm_in.weight: both forms: the GGUF carries blk.0.ssm_in.weight and blk.0.attn_gate.weight"}},
      {"fused_shape", [](testing::GgufBuilder& b) { b.ReshapeTensor("blk.1.ssm_ba.weight", {256, 4, 2}); },
       {"blk.1.ssm_ba.weight: shape: expected [256 (n_embd), 8 (2*ssm_dt_rank)], found [256, 4, 2]"}},
      {"no_fused", [](testing::GgufBuilder& b) { b.RemoveTensor("blk.2.ssm_in.weight"); },
       {"blk.2.attn_qkv.weight: missing", "or the fused blk.2.ssm_in.weight that holds it",
        "blk.2.attn_gate.weight: missing"}},
      {"sections", [](testing::GgufBuilder& b) { b.I32Array("qwen3next.rope.dimension_sections", {3, 3, 2, 0}); },
       {"rope.dimension_sections: expected none"}},
  };
  ExpectEveryEditRefused(s, cases, dir);

  std::vector<std::string> packs;
  for (bool split : {false, true}) {
    s.split_qkvz = split;
    auto b = testing::BuildSyntheticModel(s);
    ASSERT_TRUE(b.ok()) << b.status().message();
    const std::string name = dir + (split ? "/split" : "/fused");
    ASSERT_TRUE(b->WriteFile(name + ".gguf").ok());
    auto g = gguf::GgufModel::Open(name + ".gguf");
    ASSERT_TRUE(g.ok());
    EXPECT_EQ(g->FindTensor("blk.0.ssm_in.weight") != nullptr, !split);
    EXPECT_NE(g->FindTensor("blk.0.ssm_ba.weight"), nullptr);
    auto r = PackFile(name + ".gguf", name + ".strata");
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->hparams.ssm_grouped_heads);
    packs.push_back(name + ".strata");
  }
  auto fused = Pack::Open(packs[0]);
  auto split = Pack::Open(packs[1]);
  ASSERT_TRUE(fused.ok() && split.ok());
  EXPECT_TRUE((*fused)->hparams().ssm_grouped_heads);
  for (const char* t : {"blk.0.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.2.ssm_beta.weight",
                        "blk.2.ssm_alpha.weight"}) {
    SCOPED_TRACE(t);
    const TensorView* a = (*fused)->Find(t);
    const TensorView* b = (*split)->Find(t);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->type, GgmlType::kQ4_K);
    ASSERT_EQ(a->data.size(), b->data.size());
    EXPECT_EQ(std::memcmp(a->data.data(), b->data.data(), a->data.size()), 0);
  }
}

// qwen35moe's per-layer head_count_kv: each element converts exactly or the
// key is refused naming the layer and the value.
TEST(PackRefusals, PerLayerArraysConvertOnlyExactly) {
  std::string dir = testing::ScratchDir("pack_per_layer");
  testing::SyntheticModelSpec s;
  s.arch = Arch::kQwen35Moe;
  s.hp = testing::TinyQwen35MoeHParams();
  struct Case {
    const char* name;
    std::function<void(testing::GgufBuilder&)> edit;
    std::string expect;
  } cases[] = {
      {"u64_beyond_u32", [](testing::GgufBuilder& b) {
         b.U64Array("qwen35moe.attention.head_count_kv", {0, 0, 0, (1ull << 63) + 5});
       }, "found 9223372036854775813 at layer 3"},
      {"f64_elements", [](testing::GgufBuilder& b) {
         b.F64Array("qwen35moe.attention.head_count_kv", {0, 0, 0, 6.2e223});
       }, "array of 4 integers"},
      {"u64_sections", [](testing::GgufBuilder& b) {
         b.U64Array("qwen35moe.rope.dimension_sections", {3, ~0ull, 2, 0});
       }, "found element 1 = 18446744073709551615"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto b = testing::BuildSyntheticModel(s);
    ASSERT_TRUE(b.ok()) << b.status().message();
    c.edit(*b);
    std::string gguf = dir + "/" + c.name + ".gguf";
    ASSERT_TRUE(b->WriteFile(gguf).ok());
    auto r = PackFile(gguf, dir + "/" + c.name + ".strata");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.status().message(), HasSubstr(c.expect));
  }
}

TEST(PackRefusals, SafeNormalizationsAreAppliedAndRecorded) {
  std::string dir = testing::ScratchDir("pack_fixes");
  testing::SyntheticModelSpec s;
  s.hp = testing::TinyQwen3MoeHParams();
  auto b = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(b.ok());
  b->U16("qwen3moe.block_count", 3);            // narrower integer
  b->I64("qwen3moe.expert_count", 8);           // signed, wider
  b->F64("qwen3moe.rope.freq_base", 1000000.0);  // f64 that f32 holds exactly
  b->Remove("qwen3moe.rope.dimension_count");    // a documented default
  std::vector<uint8_t> f16(256 * 2);
  for (size_t i = 0; i < 256; ++i) f16[2 * i + 1] = 0x3c;  // 1.0 in F16
  b->Tensor("blk.0.ffn_norm.weight", GgmlType::kF16, {256}, f16);
  ASSERT_TRUE(b->WriteFile(dir + "/m.gguf").ok());
  auto r = PackFile(dir + "/m.gguf", dir + "/m.strata");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::map<std::string, std::string> kinds;
  for (const Fix& f : r->log.fixes) kinds[f.location] = f.kind + ": " + f.before + " -> " + f.after;
  EXPECT_EQ(kinds["qwen3moe.block_count"], "integer-type: u16 3 -> u32 3");
  EXPECT_EQ(kinds["qwen3moe.expert_count"], "integer-type: i64 8 -> u32 8");
  EXPECT_EQ(kinds["qwen3moe.rope.freq_base"], "float-type: f64 1e+06 -> f32 1000000");
  EXPECT_THAT(kinds["qwen3moe.rope.dimension_count"], HasSubstr("default: absent -> u32 64 (attention.key_length)"));
  EXPECT_EQ(kinds["blk.0.ffn_norm.weight"], "widen-type: F16 -> F32");
  // A default that the tensors contradict is refused, not applied: without
  // attention.key_length, the default head width n_embd / n_head = 32 does not
  // fit attn_q's 512 rows.
  b->Remove("qwen3moe.attention.key_length");
  ASSERT_TRUE(b->WriteFile(dir + "/m2.gguf").ok());
  auto bad = PackFile(dir + "/m2.gguf", dir + "/m2.strata");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("blk.0.attn_q.weight: shape: expected [256 (n_embd), 256 (n_head*head_dim_k)], found [256, 512]"));
  auto p = Pack::Open(dir + "/m.strata");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const TensorView* t = (*p)->Find("blk.0.ffn_norm.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->type, GgmlType::kF32);
  float v;
  std::memcpy(&v, t->data.data() + 400, 4);
  EXPECT_EQ(v, 1.0f);
}

// The tiny qwen35moe preset with an MTP layer: 4 main layers, blk.4 the block.
testing::SyntheticModelSpec TinyQwen35MoeWithMtp() {
  testing::SyntheticModelSpec s;
  s.arch = Arch::kQwen35Moe;
  s.hp = testing::TinyQwen35MoeHParams();
  s.hp.n_layer_all = 5;
  s.hp.nextn_predict_layers = 1;
  return s;
}

// An MTP block that fails its checks (a tensor of another shape, a required
// one missing) is dropped whole, with a recorded fix: the rest of the model
// packs and runs, and the pack holds no tensor of that layer.
TEST(PackRefusals, ABrokenMtpBlockIsDroppedWithARecordedFix) {
  const std::string dir = testing::ScratchDir("pack_mtp_drop");
  const testing::SyntheticModelSpec s = TinyQwen35MoeWithMtp();
  const std::string bad_shape = "blk.4.nextn.eh_proj.weight", missing = "blk.4.nextn.hnorm.weight";
  for (const std::string& broken : {bad_shape, missing}) {
    SCOPED_TRACE(broken);
    auto b = testing::BuildSyntheticModel(s);
    ASSERT_TRUE(b.ok()) << b.status().message();
    if (broken == bad_shape) b->ReshapeTensor(broken, {static_cast<int64_t>(s.hp.n_embd), 2 * static_cast<int64_t>(s.hp.n_embd)});
    else b->RemoveTensor(broken);
    ASSERT_TRUE(b->WriteFile(dir + "/m.gguf").ok());
    PackOptions o;
    o.probe = false;
    o.profile = false;
    auto r = PackFile(dir + "/m.gguf", dir + "/m.strata", o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->hparams.nextn_predict_layers, 0u);
    EXPECT_EQ(r->hparams.n_layer_all, 4u);
    const Fix* drop = nullptr;
    for (const Fix& f : r->log.fixes)
      if (f.kind == "drop-mtp-block") drop = &f;
    ASSERT_NE(drop, nullptr);
    EXPECT_EQ(drop->location, "blk.4 (MTP)");
    EXPECT_THAT(drop->reason, HasSubstr(broken));
    auto p = Pack::Open(dir + "/m.strata");
    ASSERT_TRUE(p.ok()) << p.status().message();
    for (const TensorView& t : (*p)->tensors()) EXPECT_LT(t.layer, 4) << t.name;
    auto m = Model::Create(**p);
    ASSERT_TRUE(m.ok());
    EXPECT_THAT(m->MtpMissing(), HasSubstr("nextn_predict_layers is 0"));
  }
}

// strata-pack --mtp-from: a model without its MTP block, and the block as a
// GGUF of its own (the model's metadata, only blk.4's tensors), pack to the
// tensors of the whole model; a block of another model is refused naming
// the key that differs, and one the model already has, the tensor.
TEST(PackMtpFrom, TheBlockFromItsOwnFileGivesTheWholeModelsTensors) {
  const std::string dir = testing::ScratchDir("pack_mtp_from");
  const testing::SyntheticModelSpec s = TinyQwen35MoeWithMtp();
  auto whole = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  ASSERT_TRUE(whole->WriteFile(dir + "/whole.gguf").ok());
  std::vector<std::string> block, trunk;
  {
    auto g = gguf::GgufModel::Open(dir + "/whole.gguf");
    ASSERT_TRUE(g.ok());
    for (const gguf::TensorInfo& t : g->tensors())
      (std::string(t.name).rfind("blk.4.", 0) == 0 ? block : trunk).push_back(std::string(t.name));
  }
  ASSERT_FALSE(block.empty());
  auto main_only = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(main_only.ok());
  for (const std::string& n : block) main_only->RemoveTensor(n);
  main_only->U32("qwen35moe.block_count", 4).Remove("qwen35moe.nextn_predict_layers");
  ASSERT_TRUE(main_only->WriteFile(dir + "/main.gguf").ok());
  auto mtp_only = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(mtp_only.ok());
  for (const std::string& n : trunk) mtp_only->RemoveTensor(n);
  ASSERT_TRUE(mtp_only->WriteFile(dir + "/mtp.gguf").ok());

  PackOptions o;  // no probe or profile: the tensors are what this test compares (and ASan's time)
  o.probe = false;
  o.profile = false;
  auto want = PackFile(dir + "/whole.gguf", dir + "/whole.strata", o);
  ASSERT_TRUE(want.ok()) << want.status().message();
  o.mtp_from = dir + "/mtp.gguf";
  auto got = PackFile(dir + "/main.gguf", dir + "/joined.strata", o);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->hparams.nextn_predict_layers, 1u);
  EXPECT_EQ(got->hparams.n_layer, 4u);
  int mtp_fixes = 0;
  for (const Fix& f : got->log.fixes) mtp_fixes += f.kind == "mtp-from";
  EXPECT_EQ(mtp_fixes, 2);
  auto a = Pack::Open(dir + "/whole.strata");
  auto b = Pack::Open(dir + "/joined.strata");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  for (const TensorView& t : (*a)->tensors()) {
    const TensorView* u = (*b)->Find(std::string(t.name));
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), u->data.begin(), u->data.end())) << t.name;
  }
  // Refusals.
  auto other = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(other.ok());
  for (const std::string& n : trunk) other->RemoveTensor(n);
  other->U32("qwen35moe.expert_count", 16);
  ASSERT_TRUE(other->WriteFile(dir + "/other.gguf").ok());
  o.mtp_from = dir + "/other.gguf";
  auto bad = PackFile(dir + "/main.gguf", dir + "/x.strata", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("metadata 'qwen35moe.expert_count': expected u32 8"));
  o.mtp_from = dir + "/mtp.gguf";
  auto twice = PackFile(dir + "/whole.gguf", dir + "/x.strata", o);
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("the model already has tensor 'blk.4."));
  // A block asked for by name that fails its checks is refused, not dropped.
  auto broken = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(broken.ok());
  for (const std::string& n : trunk) broken->RemoveTensor(n);
  broken->ReshapeTensor("blk.4.nextn.eh_proj.weight",
                        {static_cast<int64_t>(s.hp.n_embd), 2 * static_cast<int64_t>(s.hp.n_embd)});
  ASSERT_TRUE(broken->WriteFile(dir + "/broken.gguf").ok());
  o.mtp_from = dir + "/broken.gguf";
  auto refused = PackFile(dir + "/main.gguf", dir + "/x.strata", o);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("blk.4.nextn.eh_proj.weight (from --mtp-from"));
  // The CLI.
  auto cli = testing::RunProgram("strata-pack", {dir + "/main.gguf", "--mtp-from", dir + "/mtp.gguf", "--no-probe",
                                                  "--no-profile", "-o", dir + "/cli.strata"});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  auto cli_bad = testing::RunProgram("strata-pack", {dir + "/main.gguf", "--mtp-from", dir + "/other.gguf", "-o",
                                                      dir + "/cli-bad.strata"});
  EXPECT_NE(cli_bad.exit_code, 0);
  EXPECT_THAT(cli_bad.err, HasSubstr("the block is of another model"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/cli-bad.strata"));
}

TEST(PackRefusals, SetOverridesAKeyAndMtpTensorsWithoutTheKeyAreRefused) {
  std::string dir = testing::ScratchDir("pack_set");
  testing::SyntheticModelSpec s;
  s.arch = Arch::kQwen35Moe;
  s.hp = testing::TinyQwen35MoeHParams();
  s.hp.n_layer_all = 5;  // 4 main layers + 1 MTP layer
  s.hp.nextn_predict_layers = 1;
  auto b = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_TRUE(b->WriteFile(dir + "/mtp.gguf").ok());
  auto r = PackFile(dir + "/mtp.gguf", dir + "/mtp.strata");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->hparams.n_layer, 4u);
  EXPECT_EQ(r->hparams.nextn_predict_layers, 1u);
  auto p = Pack::Open(dir + "/mtp.strata");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_NE((*p)->Find("blk.4.nextn.eh_proj.weight"), nullptr);
  // seeds/000 in reverse: the key is gone but the MTP tensors are there.
  testing::BreakRemoveNextnKey(*b);
  ASSERT_TRUE(b->WriteFile(dir + "/mtp-nokey.gguf").ok());
  auto bad = PackFile(dir + "/mtp-nokey.gguf", dir + "/x.strata");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("MTP tensors"));
  PackOptions o;
  o.overrides = {{"qwen35moe.nextn_predict_layers", "1"}};
  auto fixed = PackFile(dir + "/mtp-nokey.gguf", dir + "/fixed.strata", o);
  ASSERT_TRUE(fixed.ok()) << fixed.status().message();
  bool recorded = false;
  for (const Fix& f : fixed->log.fixes) recorded |= f.kind == "user-override" && f.after == "u32 1";
  EXPECT_TRUE(recorded);
  auto a = Pack::Open(dir + "/fixed.strata");
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ((*a)->tensors().size(), (*p)->tensors().size());
  for (size_t i = 0; i < (*a)->tensors().size(); ++i)
    EXPECT_TRUE(std::equal((*a)->tensors()[i].data.begin(), (*a)->tensors()[i].data.end(),
                           (*p)->tensors()[i].data.begin(), (*p)->tensors()[i].data.end()));
}

TEST(PackCli, JsonDryRunAndExitCodes) {
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("conformance/qwen35moe-q4_k_m-broken-shexp-gate-2d.gguf"));
  std::string dir = testing::ScratchDir("pack_cli");
  std::string in = testing::SharedFile("conformance/qwen35moe-q4_k_m-broken-shexp-gate-2d.gguf");
  auto dry = testing::RunProgram("strata-pack", {in, "--dry-run", "--json"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  auto j = nlohmann::json::parse(dry.out);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_FALSE(j["written"].get<bool>());
  EXPECT_EQ(j["fixes"].size(), 7u);
  auto lint = testing::RunProgram("strata-validate", {"--gguf", in});
  EXPECT_EQ(lint.exit_code, 0);
  EXPECT_THAT(lint.out, AllOf(HasSubstr("squeeze-dims"), HasSubstr("packable")));
  auto w = testing::RunProgram("strata-pack", {in, "-o", dir + "/p.strata"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_THAT(w.out, AllOf(HasSubstr("fixes      7 applied"), HasSubstr("wrote")));
  auto v = testing::RunProgram("strata-validate", {dir + "/p.strata", "--json"});
  ASSERT_EQ(v.exit_code, 0) << v.out;
  auto vj = nlohmann::json::parse(v.out);
  EXPECT_TRUE(vj["ok"].get<bool>());
  EXPECT_EQ(vj["checks"].size(), 8u);
  EXPECT_EQ(vj["checks"][7]["name"], "probe-replay");
  EXPECT_TRUE(vj["checks"][7]["ok"].get<bool>());
  auto none = testing::RunProgram("strata-pack", {in});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("no output"));
  auto missing = testing::RunProgram("strata-validate", {dir + "/nope.strata"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.out, HasSubstr("no such file"));
}

}  // namespace
}  // namespace strata
