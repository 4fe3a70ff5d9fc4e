#include "tests/testing/tokenizer_vocabs.h"

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "packer/gguf/gguf_file.h"
#include "packer/tokenizer_import.h"
#include "tests/testing/test_data.h"

namespace strata::testing {
namespace {

Result<std::string> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

Result<tokenizer::Tokenizer> SharedTokenizer(const std::string& relative, std::vector<std::string>* warnings) {
  static std::mutex mu;
  static std::map<std::string, std::pair<Result<tokenizer::Tokenizer>, std::vector<std::string>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(relative);
  if (it == cache.end()) {
    std::vector<std::string> w;
    Result<tokenizer::Tokenizer> tok = [&]() -> Result<tokenizer::Tokenizer> {
      STRATA_ASSIGN_OR_RETURN(auto model, gguf::GgufModel::Open(SharedFile(relative)));
      STRATA_ASSIGN_OR_RETURN(auto vocab, ImportVocab(model, &w));
      return tokenizer::Tokenizer::Create(vocab);
    }();
    it = cache.emplace(relative, std::make_pair(std::move(tok), std::move(w))).first;
  }
  if (warnings) *warnings = it->second.second;
  return it->second.first;
}

Result<std::vector<TokenizerCase>> ReadTokenizerCases(const std::string& inp_path, const std::string& out_path) {
  STRATA_ASSIGN_OR_RETURN(std::string inp, ReadAll(inp_path));
  STRATA_ASSIGN_OR_RETURN(std::string out, ReadAll(out_path));
  static const std::string kSep = "\n__ggml_vocab_test__\n";
  std::vector<TokenizerCase> cases;
  for (size_t pos = 0;;) {
    size_t at = inp.find(kSep, pos);
    if (at == std::string::npos) break;
    cases.push_back({inp.substr(pos, at - pos), {}});
    pos = at + kSep.size();
  }
  std::vector<std::string> lines;
  std::istringstream lin(out);
  for (std::string line; std::getline(lin, line);) lines.push_back(line);
  if (lines.size() != cases.size())
    return DataLoss(inp_path + " has " + std::to_string(cases.size()) + " tests but " + out_path + " has " +
                    std::to_string(lines.size()) + " lines");
  for (size_t i = 0; i < cases.size(); ++i) {
    std::istringstream ids(lines[i]);
    for (int32_t id; ids >> id;) cases[i].ids.push_back(id);
  }
  return cases;
}

std::string IdsToString(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

}  // namespace strata::testing
