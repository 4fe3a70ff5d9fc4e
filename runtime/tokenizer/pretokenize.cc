#include "runtime/tokenizer/pretokenize.h"

#include <span>

#include "runtime/tokenizer/pretokenize_scanners.h"

namespace strata::tokenizer {
namespace {

using K = PreTokenizerKind;

// Names and flags from llama.cpp's llama_vocab::impl::load (the BPE branch);
// kinds from the regex list each pre-type gets in llm_tokenizer_bpe.
//                 name                 kind              clean  ignore bos    sep    no-bos
const std::vector<PreTokenizerInfo> kPreTokenizers = {
    {"default",          K::kDefault,       true,  false, false, false, false},
    {"llama3",           K::kLlama3,        true,  true,  true,  false, false},
    {"llama-v3",         K::kLlama3,        true,  true,  true,  false, false},
    {"llama-bpe",        K::kLlama3,        true,  true,  true,  false, false},
    {"falcon3",          K::kLlama3,        true,  true,  true,  false, false},
    {"falcon-h1",        K::kLlama3,        true,  true,  true,  false, false},
    {"pixtral",          K::kLlama3,        true,  true,  true,  false, false},
    {"midm-2.0",         K::kLlama3,        true,  true,  true,  false, false},
    {"lfm2",             K::kLlama3,        true,  true,  true,  false, false},
    {"jina-v5-nano",     K::kLlama3,        true,  true,  true,  false, false},
    {"dbrx",             K::kLlama3,        true,  false, false, false, false},
    {"smaug-bpe",        K::kLlama3,        true,  false, false, false, false},
    {"chatglm-bpe",      K::kLlama3,        true,  false, false, false, true},
    {"glm4",             K::kLlama3,        true,  false, false, false, true},
    {"deepseek-llm",     K::kDeepseekLlm,   false, false, false, false, false},
    {"deepseek-coder",   K::kDeepseekCoder, false, false, false, false, false},
    {"deepseek-v3",      K::kDeepseekV3,    false, false, false, false, false},
    {"kimi-k2",          K::kKimiK2,        false, false, false, false, false},
    {"falcon",           K::kFalcon,        true,  false, false, false, false},
    {"mpt",              K::kGpt2,          true,  false, false, false, false},
    {"gpt-2",            K::kGpt2,          true,  false, false, false, false},
    {"phi-2",            K::kGpt2,          true,  false, false, false, false},
    {"jina-es",          K::kGpt2,          true,  false, false, false, false},
    {"jina-de",          K::kGpt2,          true,  false, false, false, false},
    {"gigachat",         K::kGpt2,          true,  false, false, false, false},
    {"jina-v2-es",       K::kGpt2,          true,  false, false, false, false},
    {"jina-v2-de",       K::kGpt2,          true,  false, false, false, false},
    {"a.x-4.0",          K::kGpt2,          true,  false, false, false, false},
    {"mellum",           K::kGpt2,          true,  false, false, false, false},
    {"modern-bert",      K::kGpt2,          true,  false, false, false, false},
    {"jina-v1-en",       K::kGpt2,          true,  false, false, true,  false},
    {"jina-v2-code",     K::kGpt2,          true,  false, false, true,  false},
    {"roberta-bpe",      K::kGpt2,          true,  false, false, true,  false},
    {"olmo",             K::kGpt2,          true,  false, false, false, false},
    {"jais",             K::kGpt2,          true,  false, false, false, false},
    {"exaone4",          K::kGpt2,          true,  false, false, false, false},
    {"trillion",         K::kGpt2,          false, false, false, false, false},
    {"granite-docling",  K::kGpt2,          false, false, false, false, false},
    {"starcoder",        K::kStarcoder,     true,  false, false, false, false},
    {"refact",           K::kStarcoder,     true,  false, false, false, false},
    {"command-r",        K::kStarcoder,     false, false, false, false, false},
    {"smollm",           K::kStarcoder,     false, false, false, false, false},
    {"codeshell",        K::kStarcoder,     true,  false, false, false, false},
    {"exaone",           K::kStarcoder,     true,  false, false, false, false},
    {"minerva-7b",       K::kStarcoder,     true,  false, false, false, false},
    {"mellum2",          K::kStarcoder,     true,  false, false, false, false},
    {"qwen2",            K::kQwen2,         false, false, false, false, false},
    {"deepseek-r1-qwen", K::kQwen2,         false, false, false, false, false},
    {"kormo",            K::kQwen2,         false, false, false, false, false},
    {"f2llmv2",          K::kQwen2,         false, false, false, false, false},
    {"megrez",           K::kQwen2,         true,  false, false, false, false},
    {"stablelm2",        K::kQwen2,         true,  false, false, false, false},
    {"hunyuan",          K::kQwen2,         false, false, false, false, false},
    {"solar-open",       K::kQwen2,         false, false, false, false, false},
    {"qwen35",           K::kQwen35,        false, false, false, false, false},
    {"gpt-4o",           K::kGpt4o,         false, false, false, false, false},
    {"llama4",           K::kGpt4o,         false, false, false, false, false},
};

// The split expressions of each kind, in llama.cpp's order.
std::span<const Scanner> StagesOf(PreTokenizerKind kind) {
  static constexpr Scanner kGpt2[] = {ScanGpt2};
  static constexpr Scanner kLlama3[] = {ScanLlama3};
  static constexpr Scanner kQwen2[] = {ScanQwen2};
  static constexpr Scanner kQwen35[] = {ScanQwen35};
  static constexpr Scanner kGpt4o[] = {ScanGpt4o};
  static constexpr Scanner kDeepseekLlm[] = {ScanEachNewline,   ScanDeepseekLetters, ScanDeepseekPunct,
                                             ScanTrailingSpace, ScanDeepseekCjk,     ScanNumberRun};
  static constexpr Scanner kDeepseekCoder[] = {ScanEachNewline, ScanSpaceLetterRun, ScanSpacePunctRun,
                                               ScanDeepseekCjk, ScanNumberEach};
  static constexpr Scanner kDeepseekV3[] = {ScanNumbersUpTo3, ScanDeepseekV3Cjk, ScanDeepseekV3};
  static constexpr Scanner kKimiK2[] = {ScanKimiK2};
  static constexpr Scanner kFalcon[] = {ScanFalconPunctRun, ScanGpt2, ScanThreeDigits};
  static constexpr Scanner kStarcoder[] = {ScanNumberEach, ScanGpt2};
  static constexpr Scanner kDefault[] = {ScanDefaultPunctRun, ScanGpt2, ScanNumberRun, ScanThreeDigits};
  switch (kind) {
    case K::kGpt2: return kGpt2;
    case K::kLlama3: return kLlama3;
    case K::kQwen2: return kQwen2;
    case K::kQwen35: return kQwen35;
    case K::kGpt4o: return kGpt4o;
    case K::kDeepseekLlm: return kDeepseekLlm;
    case K::kDeepseekCoder: return kDeepseekCoder;
    case K::kDeepseekV3: return kDeepseekV3;
    case K::kKimiK2: return kKimiK2;
    case K::kFalcon: return kFalcon;
    case K::kStarcoder: return kStarcoder;
    case K::kDefault: break;
  }
  return kDefault;
}

}  // namespace

const PreTokenizerInfo* FindPreTokenizer(std::string_view name) {
  for (const auto& p : kPreTokenizers)
    if (p.name == name) return &p;
  return nullptr;
}

const std::vector<PreTokenizerInfo>& AllPreTokenizers() { return kPreTokenizers; }

void PreTokenize(PreTokenizerKind kind, std::string_view text, std::vector<std::string>* words) {
  words->clear();
  CodepointText t;
  t.cps = DecodeUtf8(text);
  if (t.cps.empty()) return;
  t.flags.resize(t.cps.size());
  for (size_t i = 0; i < t.cps.size(); ++i) t.flags[i] = FlagsOf(t.cps[i]);

  PieceLengths pieces = {static_cast<uint32_t>(t.cps.size())};
  PieceLengths next;
  for (Scanner scan : StagesOf(kind)) {
    next.clear();
    next.reserve(pieces.size() + 16);
    size_t start = 0;
    for (uint32_t len : pieces) {
      scan(t, start, start + len, &next);
      start += len;
    }
    pieces.swap(next);
  }

  words->reserve(pieces.size());
  size_t start = 0;
  for (uint32_t len : pieces) {
    std::string& w = words->emplace_back();
    for (size_t i = start; i < start + len; ++i) AppendUtf8(t.cps[i], &w);
    start += len;
  }
}

}  // namespace strata::tokenizer
