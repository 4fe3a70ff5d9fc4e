// libFuzzer target: the GGUF reader and the --inspect summary on arbitrary bytes.
// No input may crash, hang, leak or trip a sanitizer.

#include <cstddef>
#include <cstdint>

#include "packer/gguf/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = strata::gguf::ParseGguf("fuzz-input", {data, size});
  if (!parsed.ok()) return 0;
  // Touch everything a consumer would: values, array elements, tensor bytes.
  uint64_t sink = 0;
  for (const auto& kv : parsed->kv) {
    sink += kv.value.Describe().size();
    if (kv.value.is_array() && kv.value.elem_type != strata::gguf::ValueType::kString)
      for (uint64_t i = 0; i < kv.value.count && i < 64; ++i) sink += static_cast<uint64_t>(kv.value.IntAt(i));
  }
  for (const auto& t : parsed->tensors) {
    if (t.nbytes > 0) sink += data[t.offset] + data[t.offset + t.nbytes - 1];
    sink += t.ShapeString().size();
  }
  volatile uint64_t keep = sink;
  (void)keep;
  return 0;
}
