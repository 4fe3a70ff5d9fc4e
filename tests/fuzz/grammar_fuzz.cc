// libFuzzer target: constrained sampling's parsers of request text
// (runtime/grammar): GBNF grammars (the `grammar` parameter) and JSON
// Schemas (`response_format`, tools). The first byte chooses:
//   even: the rest is GBNF; if it parses, a matcher reads text through it and
//         token masks over a small vocabulary are computed and compared with
//         the per-token reference;
//   odd:  the rest is a JSON Schema; if it converts, the GBNF it gives must
//         parse (a converter bug otherwise).
// No input may crash, hang, exhaust memory or trip a sanitizer.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/token_mask.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using strata::fuzz::Check;

const std::shared_ptr<const strata::grammar::TokenTrie>& Trie() {
  static const auto trie = std::make_shared<const strata::grammar::TokenTrie>(std::vector<std::string>{
      "a", "b", "ab", "abc", "{", "}", "\"", "\":", "\",", "[", "]", ",", " ", "\n", "0", "1", "12", "-", ".", "e",
      "true", "null", "\xC3\xA9", "\xC3", "\xA9", "\\", "\\n", "x", "yes", "no", "", "<tool_call>"});
  return trie;
}

void FuzzGrammar(std::string_view text) {
  using namespace strata::grammar;
  GrammarLimits limits;
  limits.max_elements = 1 << 14;
  limits.max_text_bytes = 1 << 14;
  auto g = Grammar::Parse(text, limits);
  if (!g.ok()) return;
  TokenMasker masker(*g, Trie());
  if (!masker.ProbeStart(8, 2)) return;  // refused when the request arrives, as the server does (shorter walk)
  Matcher m(*g);
  std::vector<uint64_t> mask;
  // A grammar too ambiguous to enforce (a limit was hit: paths were dropped)
  // is refused by the server; nothing is checked past that point.
  auto too_ambiguous = [&] { return m.overflowed() || masker.overflowed(); };
  for (int step = 0; step < 6 && !too_ambiguous(); ++step) {
    masker.Compute(m, &mask);
    int32_t pick = -1;
    for (int32_t t = 0; t < Trie()->n_tokens(); ++t) {
      const bool bit = (mask[static_cast<size_t>(t) >> 6] >> (t & 63)) & 1;
      const bool reference = masker.Allows(m, t);
      if (too_ambiguous()) return;
      Check(bit == reference);  // the mask equals its reference
      if (bit && (pick < 0 || (t * 7 + step) % 5 == 0)) pick = t;
    }
    if (pick < 0) break;
    const bool read = m.Accept(Trie()->bytes(pick));
    Check(read || too_ambiguous());
  }
}

void FuzzSchema(std::string_view text) {
  auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded()) return;
  auto gbnf = strata::grammar::JsonSchemaToGbnf(j);
  if (!gbnf.ok()) return;
  auto g = strata::grammar::Grammar::Parse(*gbnf);
  Check(g.ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 8192) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  // JSON nesting is bounded by the size cap (nlohmann's parser recurses).
  if (data[0] % 2 == 0) {
    FuzzGrammar(rest);
  } else {
    FuzzSchema(rest);
  }
  return 0;
}
