// Replays a fuzz target's inputs without libFuzzer: the checked-in corpus
// (tests/fuzz/corpus/TARGET/) as a plain test in every build, optimized and
// sanitized, so an input that ever found a bug stays a regression test.
//   TARGET_replay FILE_OR_DIR...   exit 0 when every input ran; a crash,
//   a sanitizer report or a failed check in the target ends the process.
// Prints "N passed, 0 failed" (inputs), the closing line CI reads.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
#ifndef _WIN32
// Optional in a target; PE/COFF has no undefined weak symbols, so on Windows
// targets that need set-up do it on their first input (tokenizer_fuzz does).
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);
#endif

int main(int argc, char** argv) {
#ifndef _WIN32
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
#endif
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p, ec))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else if (std::filesystem::is_regular_file(p, ec)) {
      inputs.push_back(p);
    } else {
      std::fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
      return 1;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs (give the corpus folder)\n");
    return 1;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& p : inputs) {
    std::ifstream f(p, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
    if (!f.good() && !f.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", p.string().c_str());
      return 1;
    }
    // An empty vector's data() may be null; libFuzzer never passes null.
    static const uint8_t kEmpty = 0;
    LLVMFuzzerTestOneInput(bytes.empty() ? &kEmpty : bytes.data(), bytes.size());
  }
  std::printf("replay: %zu passed, 0 failed\n", inputs.size());
  return 0;
}
