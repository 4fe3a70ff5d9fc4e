#pragma once
// `strata-pack --inspect`: a readable summary of a GGUF (architecture,
// hyperparameters, tokenizer, tensors by type) as text or JSON.

#include <string>

#include <nlohmann/json.hpp>

#include "packer/gguf/gguf_file.h"

namespace strata {

nlohmann::json InspectGgufJson(const gguf::GgufModel& model);
std::string InspectGgufText(const gguf::GgufModel& model);

}  // namespace strata
