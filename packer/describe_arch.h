#pragma once
// `strata-pack --describe-arch`: the architecture specs as Markdown
// (docs/architectures.md is this output; a test keeps them equal).

#include <string>

namespace strata {

std::string DescribeArchitecturesMarkdown();

}  // namespace strata
