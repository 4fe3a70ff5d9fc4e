// libFuzzer target: the GGUF reader, the --inspect summary, and everything
// the packer reads from metadata, on arbitrary bytes. An input that parses is
// opened as a model and packed in dry-run mode (tokenizer import,
// hyperparameters with their integer and float conversions, the tensor plan,
// decode copies), and a tokenizer is built from a vocabulary that imports.
// No input may crash, hang, leak or trip a sanitizer (UBSan's
// float-cast-overflow included: issue 12).

#include <cstddef>
#include <cstdint>
#include <string>

#include "packer/gguf/gguf_file.h"
#include "runtime/base/platform.h"
#include "packer/packer.h"
#include "packer/tokenizer_import.h"
#include "runtime/tokenizer/tokenizer.h"

namespace {

void PackDryRun(const uint8_t* data, size_t size) {
  auto f = strata::ScratchFile::Create({data, size});
  if (!f.ok()) return;
  auto model = strata::gguf::GgufModel::Open(f->path());
  if (!model.ok()) return;
  strata::PackOptions o;
  o.dry_run = true;
  o.probe = false;
  o.profile = false;
  // The last byte picks the options that change what is read and how.
  const uint8_t flags = data[size - 1];
  o.allow_unsafe_fixes = flags & 1;
  o.drop_unknown_tensors = flags & 2;
  if (flags & 4) o.decode_copies = strata::DecodeCopyType::kQ8_0;
  auto r = strata::PackModel(*model, o);
  if (!r.ok() || r->log.refused() || r->vocab.tokens.empty()) return;
  auto tok = strata::tokenizer::Tokenizer::Create(r->vocab);
  if (!tok.ok()) return;
  auto ids = tok->Encode("Hello, world! 123 <|im_start|>", /*add_special=*/true, /*parse_special=*/true);
  volatile size_t keep = ids.size();
  (void)keep;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = strata::gguf::ParseGguf("fuzz-input", {data, size});
  if (!parsed.ok()) return 0;
  // Touch everything a consumer would: values, array elements, tensor bytes.
  uint64_t sink = 0;
  for (const auto& kv : parsed->kv) {
    sink += kv.value.Describe().size();
    if (kv.value.is_array() && kv.value.elem_type != strata::gguf::ValueType::kString)
      for (uint64_t i = 0; i < kv.value.count && i < 64; ++i) {
        sink += static_cast<uint64_t>(kv.value.IntAt(i).value_or(0)) + kv.value.UIntAt(i).value_or(0);
        sink += kv.value.ElementText(i).size();
      }
  }
  for (const auto& t : parsed->tensors) {
    if (t.nbytes > 0) sink += data[t.offset] + data[t.offset + t.nbytes - 1];
    sink += t.ShapeString().size();
  }
  volatile uint64_t keep = sink;
  (void)keep;
  PackDryRun(data, size);
  return 0;
}
