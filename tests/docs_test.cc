// Documents generated from code stay equal to what the code says.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "packer/describe_arch.h"
#include "schema/strata_pack_generated.h"

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

// docs/pack-format.md section 4.9 lists every value of every enum the
// manifest stores, as the schema defines it.
template <typename E, size_t N>
void ExpectEveryValueListed(const std::string& doc, const char* enum_name, const E (&values)[N],
                            const char* (*name_of)(E)) {
  ASSERT_NE(doc.find(std::string("`") + enum_name + "` ("), std::string::npos) << enum_name << " has no table";
  for (E v : values) {
    const std::string row = "| " + std::to_string(static_cast<uint64_t>(v)) + " | `" + name_of(v) + "` |";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/pack-format.md lacks the row " << row;
  }
}

TEST(Docs, PackFormatListsEveryEnumValueOfTheSchema) {
  std::ifstream f(std::string(STRATA_SOURCE_DIR) + "/docs/pack-format.md");
  ASSERT_TRUE(f) << "docs/pack-format.md is missing";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  ExpectEveryValueListed(doc, "Arch", fb::EnumValuesArch(), fb::EnumNameArch);
  ExpectEveryValueListed(doc, "RopeType", fb::EnumValuesRopeType(), fb::EnumNameRopeType);
  ExpectEveryValueListed(doc, "TensorRole", fb::EnumValuesTensorRole(), fb::EnumNameTensorRole);
  ExpectEveryValueListed(doc, "WeightType", fb::EnumValuesWeightType(), fb::EnumNameWeightType);
}

}  // namespace
}  // namespace strata
