// Tokenizer throughput: Encode (and Decode) on ~400 KB of mixed text with
// real vocabularies: Qwen2 byte-level BPE, Llama SentencePiece, and a few
// others for comparison. Reports MB/s (bytes_per_second) and tokens/s.
//
//   ./build/bench/tokenizer_bench --benchmark_min_time=2
//
// The text is generated (fixed seed): English prose, code, numbers, Chinese,
// Cyrillic, emoji and whitespace runs, roughly in the proportions of a chat
// log with some code, so every pre-tokenizer branch is exercised.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/testing/test_data.h"
#include "tests/testing/tokenizer_vocabs.h"

namespace strata {
namespace {

std::string MixedText(size_t bytes) {
  static const char* kWords[] = {"the",   "model",  "expert", "router", "token",   "layer",  "weights", "is",
                                 "a",     "of",     "and",    "to",     "in",      "with",   "Strata",  "pack",
                                 "which", "that",   "runs",   "fast",   "quickly", "memory", "cache",   "GPU",
                                 "it's",  "they're", "don't", "we'll",  "I've",    "HTTP",   "JSON",    "Qwen3"};
  static const char* kSnippets[] = {
      "\n\nfor (int i = 0; i < n; ++i) {\n    sum += a[i] * b[i];\n}\n",
      " 3.14159 2026-08-22 1,234,567 0x7fff ",
      " \u6211\u60F3\u5728apple\u5DE5\u4F5C1314151\u5929\uFF5E ",
      " \u043D\u0435\u0449\u043E \u043D\u0430 \u0411\u044A\u043B\u0433\u0430\u0440\u0441\u043A\u0438 ",
      " \U0001F680 (normal) \U0001F636\u200D\U0001F32B\uFE0F \u2705 ",
      "\t\t    ",
      " caf\u00E9 na\u00EFve \u00FCber ",
      " <|im_start|>user\nHello!<|im_end|> ",
  };
  std::string s;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  while (s.size() < bytes) {
    uint32_t r = next() % 100;
    if (r < 8) {
      s += kSnippets[next() % (sizeof kSnippets / sizeof *kSnippets)];
    } else if (r < 14) {
      s += ". ";
    } else if (r < 16) {
      s += ", ";
    } else {
      if (!s.empty() && s.back() != ' ' && s.back() != '\n') s += ' ';
      s += kWords[next() % (sizeof kWords / sizeof *kWords)];
    }
  }
  return s;
}

// Worst case for the per-call word caches: nearly every word is new
// (random lower-case letters, 2..11 long).
std::string UniqueWords(size_t bytes) {
  std::string s;
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  while (s.size() < bytes) {
    s += ' ';
    for (uint32_t n = 2 + next() % 10; n > 0; --n) s += static_cast<char>('a' + next() % 26);
  }
  return s;
}

const std::string& Text() {
  static const std::string kText = MixedText(400 * 1000);
  return kText;
}

const std::string& UniqueText() {
  static const std::string kText = UniqueWords(400 * 1000);
  return kText;
}

void EncodeLoop(benchmark::State& state, const std::string& gguf, const std::string& text) {
  auto tok = testing::SharedTokenizer(gguf);
  if (!tok.ok()) {
    state.SkipWithError(tok.status().ToString().c_str());
    return;
  }
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tok->Encode(text, false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(n_tokens), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes/token"] = static_cast<double>(text.size()) / static_cast<double>(n_tokens);
}

void BM_Encode(benchmark::State& state, const std::string& gguf) { EncodeLoop(state, gguf, Text()); }
void BM_EncodeUniqueWords(benchmark::State& state, const std::string& gguf) { EncodeLoop(state, gguf, UniqueText()); }

void BM_Decode(benchmark::State& state, const std::string& gguf) {
  auto tok = testing::SharedTokenizer(gguf);
  if (!tok.ok()) {
    state.SkipWithError(tok.status().ToString().c_str());
    return;
  }
  const auto ids = tok->Encode(Text(), false, false);
  for (auto _ : state) {
    std::string s = tok->Decode(ids);
    benchmark::DoNotOptimize(s.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * Text().size()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(ids.size()), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_Encode, qwen2_bpe, std::string("tokenizer/ggml-vocab-qwen2.gguf"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, llama_spm, std::string("tokenizer/ggml-vocab-llama-spm.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, llama3_bpe, std::string("tokenizer/ggml-vocab-llama-bpe.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, deepseek_llm_bpe, std::string("tokenizer/ggml-vocab-deepseek-llm.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, bert_wpm, std::string("tokenizer/ggml-vocab-bert-bge.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EncodeUniqueWords, qwen2_bpe, std::string("tokenizer/ggml-vocab-qwen2.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EncodeUniqueWords, llama_spm, std::string("tokenizer/ggml-vocab-llama-spm.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, qwen2_bpe, std::string("tokenizer/ggml-vocab-qwen2.gguf"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, llama_spm, std::string("tokenizer/ggml-vocab-llama-spm.gguf"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
