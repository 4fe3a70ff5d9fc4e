#include "tests/testing/pack_edit.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "runtime/pack/pack_format.h"

namespace strata::testing {

Result<PackResult> PackFile(const std::string& gguf, const std::string& out, PackOptions options) {
  STRATA_ASSIGN_OR_RETURN(gguf::GgufModel m, gguf::GgufModel::Open(gguf));
  if (!options.mtp_from.empty()) {  // as strata-pack --mtp-from
    const std::string from = options.mtp_from;
    options.mtp_from.clear();
    STRATA_RETURN_IF_ERROR(AttachMtpFrom(m, from, &options));
  }
  options.output = out;
  if (options.profile_tokens == PackOptions{}.profile_tokens) options.profile_tokens = kTestProfileTokens;
  STRATA_ASSIGN_OR_RETURN(PackResult r, PackModel(m, options));
  if (r.log.refused()) return FailedPrecondition(gguf + ": refused: " + r.log.refusals.front().location + ": " +
                                                 r.log.refusals.front().message);
  return r;
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::vector<float> ReadF32(const std::string& path) {
  const std::vector<uint8_t> b = ReadBytes(path);
  std::vector<float> v(b.size() / sizeof(float));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(float));
  return v;
}

Status WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return f ? Status::Ok() : IoError("cannot write " + path);
}

void FixHeaderChecksum(std::vector<uint8_t>& bytes) {
  uint64_t h = pack::Xxh3({bytes.data(), pack::off::kHeaderXxh3});
  std::memcpy(bytes.data() + pack::off::kHeaderXxh3, &h, 8);
}

Status RewriteManifest(const std::string& in, const std::string& out, const std::function<void(fb::ManifestT&)>& edit) {
  std::vector<uint8_t> bytes = ReadBytes(in);
  STRATA_ASSIGN_OR_RETURN(pack::PackHeader h, pack::DecodeHeader(in, bytes));
  std::unique_ptr<fb::ManifestT> m(fb::GetManifest(bytes.data() + h.manifest_offset)->UnPack());
  edit(*m);
  flatbuffers::FlatBufferBuilder b;
  fb::FinishManifestBuffer(b, fb::Manifest::Pack(b, m.get()));
  bytes.resize(h.manifest_offset);
  bytes.insert(bytes.end(), b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  h.manifest_size = b.GetSize();
  h.manifest_xxh3 = pack::Xxh3({b.GetBufferPointer(), b.GetSize()});
  h.file_size = bytes.size();
  auto hb = pack::EncodeHeader(h);
  std::memcpy(bytes.data(), hb.data(), hb.size());
  return WriteBytes(out, bytes);
}

}  // namespace strata::testing
