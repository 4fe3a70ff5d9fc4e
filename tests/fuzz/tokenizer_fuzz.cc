// libFuzzer target: Tokenizer::Encode on arbitrary bytes, with parse_special
// on and off, then Decode. No input may crash, hang or trip a sanitizer, and
// byte-level BPE must give the text back (invalid UTF-8 as U+FFFD) when its
// vocabulary has all 256 byte symbols (Falcon's lacks some control bytes,
// which llama.cpp then drops, and so do we).
//
// Vocabularies: $STRATA_FUZZ_VOCAB (one GGUF path), else several real ones
// from the shared data folder ($STRATA_DATA_DIR, or a "shared/data" folder
// found next to an ancestor of this binary's directory). The first input byte
// picks the vocabulary and the flags. Every pre-tokenizer kind, those of
// names without a vocabulary on this machine included (glm4, gpt-4o,
// deepseek-v3, kimi-k2), also splits the text: its pieces must cover it
// exactly, with no empty piece.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "packer/gguf/gguf_file.h"
#include "packer/tokenizer_import.h"
#include "runtime/base/compiler.h"
#include "runtime/base/mapped_file.h"
#include "runtime/base/platform.h"
#include "runtime/tokenizer/pretokenize.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/unicode.h"

namespace {

using strata::tokenizer::Tokenizer;

struct Loaded {
  Tokenizer tok;
  bool round_trips;  // byte-level BPE with every byte symbol in the vocabulary
};

bool RoundTrips(const Tokenizer& t) {
  if (t.vocab().model != strata::tokenizer::VocabModel::kBpe) return false;
  for (int b = 0; b < 256; ++b)
    if (t.Find(strata::tokenizer::ByteToUnicode(static_cast<uint8_t>(b))) == strata::tokenizer::kNoToken) return false;
  return true;
}

std::string FindDataDir() {
  if (const char* d = std::getenv("STRATA_DATA_DIR")) return d;
  std::string dir = strata::ExecutablePath();
  if (dir.empty()) return "../shared/data";
  for (int up = 0; up < 8; ++up) {
    dir = dir.substr(0, dir.find_last_of('/'));
    if (dir.empty()) break;
    for (const char* rel : {"/shared/data", "/../shared/data"}) {
      std::string cand = dir + rel;
      if (strata::FileExists(cand + "/tokenizer/ggml-vocab-qwen2.gguf")) return cand;
    }
  }
  return "../shared/data";
}

std::vector<Loaded> LoadVocabs() {
  std::vector<std::string> paths;
  if (const char* one = std::getenv("STRATA_FUZZ_VOCAB")) {
    paths.push_back(one);
  } else {
    const std::string data = FindDataDir();
    for (const char* name : {"qwen2", "qwen35", "llama-spm", "bert-bge", "deepseek-llm", "deepseek-coder", "falcon",
                             "gpt-2", "llama-bpe", "mpt"})
      paths.push_back(data + "/tokenizer/ggml-vocab-" + name + ".gguf");
    paths.push_back(data + "/models/stories260K.gguf");
  }
  std::vector<Loaded> out;
  for (const auto& p : paths) {
    auto model = strata::gguf::GgufModel::Open(p);
    if (!model.ok()) {
      std::fprintf(stderr, "tokenizer_fuzz: skipping %s: %s\n", p.c_str(), model.status().ToString().c_str());
      continue;
    }
    auto vocab = strata::ImportVocab(*model);
    if (!vocab.ok()) {
      std::fprintf(stderr, "tokenizer_fuzz: cannot import %s: %s\n", p.c_str(), vocab.status().ToString().c_str());
      continue;
    }
    auto tok = Tokenizer::Create(*vocab);
    if (!tok.ok()) {
      std::fprintf(stderr, "tokenizer_fuzz: cannot build %s: %s\n", p.c_str(), tok.status().ToString().c_str());
      continue;
    }
    out.push_back({*tok, RoundTrips(*tok)});
    std::fprintf(stderr, "tokenizer_fuzz: loaded %s%s\n", p.c_str(), out.back().round_trips ? " (round trip checked)" : "");
  }
  if (out.empty()) {
    std::fprintf(stderr, "tokenizer_fuzz: no vocabulary found (set STRATA_FUZZ_VOCAB or STRATA_DATA_DIR)\n");
    std::abort();
  }
  return out;
}

std::string Sanitized(std::string_view s) {
  std::string out;
  for (uint32_t cp : strata::tokenizer::DecodeUtf8(s)) strata::tokenizer::AppendUtf8(cp, &out);
  return out;
}

const std::vector<Loaded>* g_tokenizers = nullptr;

}  // namespace

// Loading eleven vocabularies takes seconds under ASan (15 s on 2 cores), so it
// happens here, before libFuzzer starts timing inputs: done lazily inside the
// first input, it counted against -timeout and failed CI on a slower machine.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  g_tokenizers = new std::vector<Loaded>(LoadVocabs());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (g_tokenizers == nullptr) LLVMFuzzerInitialize(nullptr, nullptr);  // a driver that skips Initialize
  const std::vector<Loaded>& tokenizers = *g_tokenizers;
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  const Loaded& loaded = tokenizers[(selector >> 2) % tokenizers.size()];
  const Tokenizer& tok = loaded.tok;
  const bool parse_special = selector & 1;
  const bool add_special = selector & 2;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  std::vector<int32_t> ids = tok.Encode(text, add_special, parse_special);
  for (int32_t id : ids)
    if (id < 0 || id >= tok.n_tokens()) STRATA_TRAP();
  std::string back = tok.Decode(ids, {.unparse_special = true, .keep_spaces = true});
  if (loaded.round_trips && !add_special && back != Sanitized(text))
    STRATA_TRAP();
  volatile size_t sink = back.size() + tok.Decode(ids).size();
  (void)sink;

  // The pre-tokenizer of the selector's kind (one per input keeps the rate).
  const auto& pres = strata::tokenizer::AllPreTokenizers();
  const auto kind = pres[(selector >> 2) % pres.size()].kind;
  std::vector<std::string> words;
  strata::tokenizer::PreTokenize(kind, text, &words);
  std::string joined;
  for (const std::string& w : words) {
    if (w.empty()) STRATA_TRAP();
    joined += w;
  }
  if (joined != Sanitized(text)) STRATA_TRAP();
  return 0;
}
