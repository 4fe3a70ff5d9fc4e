#pragma once
// The packer's report: a human summary and the same as JSON.

#include <string>

#include <nlohmann/json.hpp>

#include "packer/packer.h"

namespace strata {

std::string PackReportText(const gguf::GgufModel& model, const PackResult& r, const PackOptions& options);
nlohmann::json PackReportJson(const gguf::GgufModel& model, const PackResult& r, const PackOptions& options);
// One line per hyperparameter group, e.g. "3 layers, n_embd 256, ...".
std::string DescribeHParams(Arch arch, const HParams& hp);

}  // namespace strata
