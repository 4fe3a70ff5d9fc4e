// Documents generated from code stay equal to what the code says.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "packer/describe_arch.h"

namespace strata {
namespace {

TEST(Docs, ArchitecturesMarkdownIsTheSpecTable) {
  std::ifstream f(std::string(STRATA_SOURCE_DIR) + "/docs/architectures.md");
  ASSERT_TRUE(f) << "docs/architectures.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), DescribeArchitecturesMarkdown())
      << "docs/architectures.md is stale: regenerate it with build/packer/strata-pack --describe-arch > "
         "docs/architectures.md";
}

}  // namespace
}  // namespace strata
