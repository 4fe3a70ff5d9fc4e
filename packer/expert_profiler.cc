#include "packer/expert_profiler.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/base/strings.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/forward.h"
#include "runtime/model/sequence_state.h"

namespace strata {

// cmake/EmbedFile.cmake, from packer/calibration/default.txt.
extern const unsigned char kDefaultCalibrationCorpus[];
extern const unsigned long long kDefaultCalibrationCorpusSize;

namespace {

constexpr uint64_t kMaxCorpusBytes = uint64_t{64} << 20;
// Tokens per forward call inside one prompt (bounds activation memory).
constexpr size_t kForwardBatch = 256;

// Counts routings per (layer, expert).
class RoutingCounter : public RoutingObserver {
 public:
  RoutingCounter(uint32_t n_layer, uint32_t n_expert)
      : counts_(n_layer, std::vector<uint32_t>(n_expert, 0)), mass_(n_layer, std::vector<double>(n_expert, 0.0)) {}

  void OnRouted(int32_t layer, std::span<const int32_t> experts, std::span<const float> probs) override {
    if (layer < 0 || static_cast<size_t>(layer) >= counts_.size()) return;
    std::vector<uint32_t>& c = counts_[static_cast<size_t>(layer)];
    std::vector<double>& m = mass_[static_cast<size_t>(layer)];
    for (size_t k = 0; k < experts.size(); ++k) {
      const auto e = static_cast<size_t>(experts[k]);
      if (e >= c.size()) continue;
      ++c[e];
      m[e] += static_cast<double>(probs[k]);
    }
  }

  std::vector<LayerExpertProfile> Layers() const {
    std::vector<LayerExpertProfile> out(counts_.size());
    for (size_t il = 0; il < counts_.size(); ++il) {
      out[il].counts = counts_[il];
      out[il].mass.resize(mass_[il].size());
      for (size_t e = 0; e < mass_[il].size(); ++e) out[il].mass[e] = static_cast<float>(mass_[il][e]);
      out[il].ranking = RankExperts(out[il].counts, out[il].mass);
    }
    return out;
  }

 private:
  std::vector<std::vector<uint32_t>> counts_;
  std::vector<std::vector<double>> mass_;  // summed in double; stored as float
};

}  // namespace

CalibrationCorpus DefaultCalibrationCorpus() {
  CalibrationCorpus c;
  c.name = std::string(kDefaultCorpusName);
  c.text.assign(reinterpret_cast<const char*>(kDefaultCalibrationCorpus),
                static_cast<size_t>(kDefaultCalibrationCorpusSize));
  c.xxh3 = XXH3_64bits(c.text.data(), c.text.size());
  return c;
}

Result<CalibrationCorpus> LoadCalibrationCorpus(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return NotFound("--calibration " + path + ": cannot read the file (" + ec.message() + ")");
  if (size == 0) return InvalidArgument("--calibration " + path + ": the file is empty");
  if (size > kMaxCorpusBytes)
    return InvalidArgument(StrFormat("--calibration %s: %s is more than the 64 MiB a calibration text may have",
                                     path.c_str(), HumanBytes(size).c_str()));
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("--calibration " + path + ": cannot open the file");
  std::stringstream ss;
  ss << f.rdbuf();
  CalibrationCorpus c;
  c.name = std::filesystem::path(path).filename().string();
  c.text = ss.str();
  if (c.text.size() != size) return IoError("--calibration " + path + ": the file changed while it was read");
  c.xxh3 = XXH3_64bits(c.text.data(), c.text.size());
  return c;
}

std::vector<std::string_view> CorpusDocuments(std::string_view text) {
  std::vector<std::string_view> docs;
  size_t begin = 0, line = 0;
  auto add = [&](size_t end) {
    std::string_view d = text.substr(begin, end - begin);
    if (d.find_first_not_of(" \t\r\n") != std::string_view::npos) docs.push_back(d);
  };
  while (line <= text.size()) {
    size_t eol = text.find('\n', line);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view l = text.substr(line, eol - line);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l == kCorpusDocumentSeparator) {
      add(line);
      begin = std::min(eol + 1, text.size());
    }
    line = eol + 1;
  }
  add(text.size());
  return docs;
}

Result<ProfileRun> MeasureExpertProfile(const Model& model, const tokenizer::Tokenizer& tok,
                                        const CalibrationCorpus& corpus, const ProfileOptions& options) {
  const HParams& hp = model.hp();
  if (hp.n_expert == 0 || !GetArchSpec(model.arch()).has_experts())
    return Internal("an expert profile needs a model with routed experts");
  if (options.max_tokens == 0) return InvalidArgument("--profile-tokens must be at least 1");
  const auto t0 = std::chrono::steady_clock::now();
  ProfileRun run;

  // Documents, tokenized, then cut to the token budget proportionally.
  std::vector<std::vector<int32_t>> docs;
  for (std::string_view d : CorpusDocuments(corpus.text)) {
    std::vector<int32_t> ids = tok.Encode(d, /*add_special=*/true, /*parse_special=*/false);
    if (!ids.empty()) {
      run.corpus_tokens += ids.size();
      docs.push_back(std::move(ids));
    }
  }
  if (run.corpus_tokens > options.max_tokens) {
    // Largest remainders: each document keeps floor(len * max / total)
    // tokens, and the tokens left over go to the largest fractions (ties:
    // the earlier document), so exactly max_tokens run.
    std::vector<uint64_t> keep(docs.size());
    std::vector<std::pair<uint64_t, size_t>> remainder;  // (fraction numerator, document)
    uint64_t kept = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
      const uint64_t scaled = docs[i].size() * options.max_tokens;  // max_tokens < total <= 2^26: no overflow
      keep[i] = scaled / run.corpus_tokens;
      kept += keep[i];
      remainder.emplace_back(scaled % run.corpus_tokens, i);
    }
    std::stable_sort(remainder.begin(), remainder.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t k = 0; kept < options.max_tokens && k < remainder.size(); ++k)
      if (keep[remainder[k].second] < docs[remainder[k].second].size()) ++keep[remainder[k].second], ++kept;
    for (size_t i = 0; i < docs.size(); ++i) docs[i].resize(static_cast<size_t>(keep[i]));
  }
  std::erase_if(docs, [](const std::vector<int32_t>& d) { return d.empty(); });
  if (docs.empty())
    return InvalidArgument("calibration corpus '" + corpus.name + "' gives no tokens to run (" +
                           (run.corpus_tokens ? "--profile-tokens is too small" : "it has no text") + ")");
  run.documents = docs.size();

  // The CPU fast path at a pinned kernel level.
  FastBackend::Options fo;
  fo.threads = options.threads;
  fo.isa = CpuSupports(IsaLevel::kAvx2) ? IsaLevel::kAvx2 : IsaLevel::kScalar;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FastBackend> backend, FastBackend::Create(fo));
  run.backend = backend->name();

  run.prompt_tokens = std::max<uint32_t>(1, std::min(options.max_prompt_tokens, hp.n_ctx_train));
  STRATA_ASSIGN_OR_RETURN(SequenceState state, SequenceState::Create(*backend, hp, run.prompt_tokens));
  RoutingCounter counter(hp.n_layer, hp.n_expert);
  ForwardOptions fwd;
  fwd.observer = &counter;
  std::vector<float> logits;
  uint64_t n_tokens = 0;
  for (const std::vector<int32_t>& d : docs) {
    for (size_t p = 0; p < d.size(); p += run.prompt_tokens) {
      const size_t prompt_end = std::min(d.size(), p + run.prompt_tokens);
      STRATA_RETURN_IF_ERROR(state.Clear());
      for (size_t b = p; b < prompt_end; b += kForwardBatch) {
        const size_t n = std::min(kForwardBatch, prompt_end - b);
        STRATA_RETURN_IF_ERROR(
            Forward(model, *backend, state, {d.data() + b, n}, fwd, &logits).WithContext("expert profile"));
      }
      n_tokens += prompt_end - p;
      ++run.prompts;
    }
  }

  run.profile.corpus_name = corpus.name;
  run.profile.corpus_xxh3 = corpus.xxh3;
  run.profile.n_tokens = n_tokens;
  run.profile.isa = std::string(IsaName(backend->isa()));
  run.profile.layers = counter.Layers();
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return run;
}

}  // namespace strata
