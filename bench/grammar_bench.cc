// Constrained sampling: the cost of a token mask on Qwen2's vocabulary
// (151,646 tokens; the model's 151,936 rows include unused ids that are
// never allowed), per generated token, for a JSON document of ~600 bytes
// tokenized as the model would write it.
//
//   ./build/bench/grammar_bench
//
//  - BM_MaskPerToken/warm: the masker of a grammar already used (the server
//    keeps one per grammar text): per token, the union of cached sets plus
//    the uncertain tokens checked, then the token read.
//  - BM_MaskPerToken/cold: a new grammar each document: every trie walk is
//    paid inside the document (the first request with a new schema).
//  - BM_ApplyMask: setting the refused logits to -inf (the sampler's part).
// Compare with decode time per token (bench/results/vs-llama.md): 17-25 ms
// for the 4-layer benchmark models, ~100 ms for a 48-layer Qwen3-30B-A3B.

#include <benchmark/benchmark.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/token_mask.h"
#include "tests/testing/tokenizer_vocabs.h"

namespace strata::grammar {
namespace {

// What a JSON-schema grammar for a tool's arguments looks like: an object
// with fixed keys in order, strings, numbers, an enum and a list.
const char* kSchemaGrammar = R"(
root ::= "{" ws "\"city\"" ws ":" ws string "," ws "\"days\"" ws ":" ws integer "," ws "\"unit\"" ws ":" ws unit
         ("," ws "\"notes\"" ws ":" ws notes)? ws "}"
unit ::= "\"celsius\"" | "\"fahrenheit\""
notes ::= "[" ws (string ("," ws string)*)? ws "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
ws ::= ( " " | "\n" [ \t]{0,20} )?
)";

const char* kDocument =
    "{\"city\": \"Z\\u00fcrich, Switzerland \\u2014 the old town by the lake\", \"days\": 14, \"unit\": \"celsius\", "
    "\"notes\": [\"bring an umbrella: rain is likely on most afternoons\", \"the forecast beyond day 7 is uncertain\", "
    "\"UV index high around noon; wind from the north-west at 20 km/h\", \"\\\"quoted\\\" text and a tab\\t\"]}";

struct Setup {
  std::shared_ptr<const TokenTrie> trie;
  std::vector<int32_t> doc;  // kDocument as the tokenizer splits it
  std::shared_ptr<const Grammar> g;
};

const Setup* GetSetup() {
  static const Setup* s = [] {
    auto tok = strata::testing::SharedTokenizer("tokenizer/ggml-vocab-qwen2.gguf");
    if (!tok.ok()) return static_cast<Setup*>(nullptr);
    auto* st = new Setup;
    st->trie = std::make_shared<const TokenTrie>(tok->TextPieces());
    st->doc = tok->Encode(kDocument, false, false);
    auto g = Grammar::Parse(kSchemaGrammar);
    if (!g.ok()) return static_cast<Setup*>(nullptr);
    st->g = *g;
    return st;
  }();
  return s;
}

void BM_MaskPerToken(benchmark::State& state) {
  const Setup* s = GetSetup();
  if (!s) return state.SkipWithError("no Qwen2 vocabulary (../shared/data/tokenizer/ggml-vocab-qwen2.gguf)");
  const bool warm = state.range(0) == 1;
  TokenMasker shared(s->g, s->trie);
  std::vector<uint64_t> mask;
  uint64_t tokens = 0, uncertain = 0, walks = 0;
  for (auto _ : state) {
    TokenMasker fresh(s->g, s->trie);
    TokenMasker& masker = warm ? shared : fresh;
    Matcher m(s->g);
    for (int32_t t : s->doc) {
      masker.Compute(m, &mask);
      if (!((mask[static_cast<size_t>(t) >> 6] >> (t & 63)) & 1)) return state.SkipWithError("the document's token was refused");
      m.Accept(s->trie->bytes(t));
      ++tokens;
    }
    if (!m.CanEnd()) return state.SkipWithError("the document did not finish the grammar");
    uncertain = masker.stats().uncertain_checked;
    walks = masker.stats().keys_computed;
  }
  state.counters["tokens"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kAvgIterations);
  state.counters["per_token"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["doc_tokens"] = static_cast<double>(s->doc.size());
  state.counters["walks"] = static_cast<double>(walks);
  state.counters["uncertain_total"] = static_cast<double>(uncertain);
  state.SetLabel(warm ? "warm" : "cold");
}
BENCHMARK(BM_MaskPerToken)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// What a request with a new grammar pays when it arrives: TokenMasker::
// ProbeStart (an 8-token walk with the 32 longest allowed tokens checked at
// each step) on a fresh masker, for the schema grammar and for free text.
void BM_ProbeStart(benchmark::State& state) {
  const Setup* s = GetSetup();
  if (!s) return state.SkipWithError("no Qwen2 vocabulary");
  std::shared_ptr<const Grammar> g = s->g;
  if (state.range(0) == 1) {
    auto text = Grammar::Parse("root ::= [a-zA-Z ,.]+");
    if (!text.ok()) return state.SkipWithError("grammar");
    g = *text;
  }
  for (auto _ : state) {
    TokenMasker masker(g, s->trie);
    if (!masker.ProbeStart()) return state.SkipWithError("a plain grammar was refused");
  }
  state.SetLabel(state.range(0) == 1 ? "free text" : "schema");
}
BENCHMARK(BM_ProbeStart)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// One trie walk: the first mask inside a string (most of the vocabulary is
// read whole there), and after '{' (most is refused at the first byte).
void BM_FirstMask(benchmark::State& state) {
  const Setup* s = GetSetup();
  if (!s) return state.SkipWithError("no Qwen2 vocabulary");
  Matcher m(s->g);
  m.Accept(state.range(0) == 0 ? "{\"city\": \"Z" : "{");
  std::vector<uint64_t> mask;
  for (auto _ : state) {
    TokenMasker masker(s->g, s->trie);
    masker.Compute(m, &mask);
  }
  state.SetLabel(state.range(0) == 0 ? "in a string" : "after {");
}
BENCHMARK(BM_FirstMask)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_ApplyMask(benchmark::State& state) {
  const Setup* s = GetSetup();
  if (!s) return state.SkipWithError("no Qwen2 vocabulary");
  const size_t V = 151936;
  std::vector<float> logits(V, 0.5f);
  std::vector<uint64_t> mask((V + 63) / 64, 0x5555555555555555ull);
  for (auto _ : state) {
    for (size_t t = 0; t < V; ++t)
      if (!((mask[t >> 6] >> (t & 63)) & 1)) logits[t] = -std::numeric_limits<float>::infinity();
    benchmark::DoNotOptimize(logits.data());
  }
}
BENCHMARK(BM_ApplyMask)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace strata::grammar

BENCHMARK_MAIN();
