#pragma once
// A small synthetic model packed and opened, for tests that need a Model.

#include <functional>
#include <memory>
#include <string>

#include "runtime/model/model.h"
#include "runtime/pack/pack_reader.h"
#include "packer/pack_options.h"
#include "tests/gguf_writer/synthetic_model.h"

namespace strata::testing {

struct OpenedModel {
  std::string path;
  std::unique_ptr<Pack> pack;
  std::unique_ptr<Model> model;
};

// The tiny preset of `arch` (TinyLlama/TinyQwen3Moe/TinyQwen35MoeHParams),
// changed by `tweak`, packed without a probe into `dir`/NAME.strata.
// `edit`, when given, changes the GGUF's tensors before it is packed.
Result<OpenedModel> MakeSyntheticPack(Arch arch, const std::string& dir, const std::string& name, uint64_t seed = 5,
                                      const std::function<void(SyntheticModelSpec&)>& tweak = {},
                                      const std::function<void(GgufBuilder&)>& edit = {});
// A tiny `arch` model (its tiny preset) whose routed experts are
// `expert_type`, written as dir/NAME.gguf and packed, with an expert profile
// of 200 tokens and the given decode copies, into dir/NAME.strata; the
// pack's path.
Result<std::string> ExpertTypePack(const std::string& dir, const std::string& name, Arch arch, GgmlType expert_type,
                                   DecodeCopyType copies = DecodeCopyType::kNone);
// Opens a pack that exists.
Result<OpenedModel> OpenPack(const std::string& path);

}  // namespace strata::testing
