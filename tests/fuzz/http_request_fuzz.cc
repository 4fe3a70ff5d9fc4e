// libFuzzer target: the server's HTTP request reading (Beast's parser under
// Strata's limits, ParseHttpRequest) and the Host header split, on arbitrary
// bytes. No input may crash, hang, leak or trip a sanitizer; what is accepted
// must keep the limits the rest of the server relies on.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/serve/http_server.h"
#include "tests/fuzz/fuzz_check.h"

using strata::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::serve;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  HttpLimits limits;
  limits.max_header_lines = 20;  // small limits, so inputs of a few KiB reach them
  limits.max_header_line = 256;
  limits.max_head_bytes = 2048;
  limits.max_body = 1024;
  HttpRequest req;
  const auto refusal = ParseHttpRequest(bytes, limits, &req);
  if (!refusal) {
    Check(req.headers.size() + 1 <= limits.max_header_lines);
    for (const HttpHeader& h : req.headers) Check(h.name.size() + 2 + h.value.size() <= limits.max_header_line);
    Check(req.body.size() <= limits.max_body);
    Check(!req.target.empty());
    Check(req.path.size() <= req.target.size());
    Check(req.version == 10 || req.version == 11);
    // Every Host value either splits into a name and a valid port or is refused.
    if (auto host = req.Header("Host")) {
      std::string name;
      int port = 0;
      if (SplitHostHeader(*host, &name, &port)) {
        Check(!name.empty());
        Check(port >= -1 && port <= 65535);
      }
    }
  } else {
    Check(refusal->status == 0 || refusal->status == 400 || refusal->status == 413 || refusal->status == 431);
  }
  // The Host splitter alone, on the raw bytes.
  std::string name;
  int port = 0;
  if (SplitHostHeader(bytes.substr(0, 300), &name, &port)) Check(!name.empty() && port <= 65535);
  return 0;
}
