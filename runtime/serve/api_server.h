#pragma once
// ApiServer: the API of `strata-run --serve` on HttpServer (http_server.h).
//
// Endpoints (docs/server.md): POST /v1/chat/completions, POST
// /v1/completions (both streaming as Server-Sent Events or not), GET
// /v1/models, GET /health, GET /metrics, POST /tokenize, POST /detokenize,
// and the chat page at /. The server listens before the model is loaded:
// until SetReady(), /health answers 503 and so does everything else.
//
// Every request head is checked before its body is read (CheckHead, on the
// I/O thread): the Host header must name this server (DNS rebinding), a
// cross-origin request needs --cors-origin, the API key, the route and
// method, and a body must be JSON. Handlers run on the HTTP worker threads.
// Generation requests are checked and tokenized there, handed to the
// Scheduler, and the thread then writes what the job produces. While it
// waits it writes a keep-alive every 500 ms (an SSE comment, or JSON
// whitespace before a non-streamed body); a failed write means the client
// left, and the job is cancelled.

#include <atomic>
#include <list>
#include <mutex>
#include <memory>
#include <optional>
#include <string>

#include "runtime/chat/chat_template.h"
#include "runtime/grammar/token_mask.h"
#include "runtime/model/model.h"
#include "runtime/serve/api_request.h"
#include "runtime/serve/http_server.h"
#include "runtime/serve/scheduler.h"
#include "runtime/serve/tool_calls.h"
#include "runtime/serve/serve_options.h"
#include "runtime/tokenizer/fim_tokens.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::serve {

// What the API needs once the model is loaded; must outlive the ApiServer.
struct ServingModel {
  std::string id;  // the model name clients see (the pack's file name without extension)
  const Model* model = nullptr;
  const tokenizer::Tokenizer* tok = nullptr;
  ChatTemplate chat_template;
  Scheduler* scheduler = nullptr;
  uint64_t pack_bytes = 0;
  std::string backend;
  int64_t created = 0;  // Unix time the model was loaded
  // The most text bytes one token stands for (the longest vocabulary entry):
  // a text of more than n * max_token_bytes bytes has more than n tokens,
  // which is known before tokenizing it.
  size_t max_token_bytes = 1;
  // The tool-call format the pack's template teaches (kNone: tools are refused).
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  bool harmony = false;  // the template speaks harmony (gpt-oss): channels, calls, reasoning in one format
  tokenizer::FimTokens fim;  // /infill's tokens, found by their texts
  // The vocabulary as a trie of token bytes, for constrained sampling.
  std::shared_ptr<const grammar::TokenTrie> trie;
};

// A text longer than this is refused by /tokenize (400) without tokenizing.
inline constexpr size_t kMaxTokenizeBytes = 1u << 20;

class ApiServer {
 public:
  explicit ApiServer(const ServeOptions& options);
  ~ApiServer();

  // Binds to options.host:options.port (port 0: any free port). Returns the
  // port, or an error.
  Result<int> Bind();
  // Serves until Stop(); call on a thread of its own.
  void Listen();
  // Stops accepting and closes every connection that is not running a
  // request (idle, trickling); running ones finish.
  void BeginShutdown();
  // Waits for running requests' last writes and ends Listen().
  void Stop();
  // From now on requests are served by `m`.
  void SetReady(const ServingModel* m);
  HttpCounters Counters() const;

 private:
  using Handler = void (ApiServer::*)(const HttpRequest&, HttpResponse&);
  // The route of a path: its handler, and whether it takes POST (else GET).
  struct Route {
    Handler handler;
    bool post;
    bool is_public;  // served without the API key and while loading
  };
  static const Route* FindRoute(std::string_view path);
  std::optional<HttpRefusal> CheckHead(const HttpRequest& head) const;
  std::optional<HttpRefusal> CheckHost(const HttpRequest& head) const;
  std::optional<HttpRefusal> CheckOrigin(const HttpRequest& head) const;
  std::vector<HttpHeader> CorsHeaders() const;
  void Handle(const HttpRequest& req, HttpResponse& res);
  void HandlePage(const HttpRequest& req, HttpResponse& res);
  void HandleHealth(const HttpRequest& req, HttpResponse& res);
  void HandleModels(const HttpRequest& req, HttpResponse& res);
  void HandleMetrics(const HttpRequest& req, HttpResponse& res);
  void HandleTokenize(const HttpRequest& req, HttpResponse& res);
  void HandleDetokenize(const HttpRequest& req, HttpResponse& res);
  void HandleChat(const HttpRequest& req, HttpResponse& res);
  void HandleCompletion(const HttpRequest& req, HttpResponse& res);
  void HandleProps(const HttpRequest& req, HttpResponse& res);
  void HandleSlots(const HttpRequest& req, HttpResponse& res);
  void HandleApplyTemplate(const HttpRequest& req, HttpResponse& res);
  void HandleInfill(const HttpRequest& req, HttpResponse& res);
  void HandleGenerate(ApiKind kind, const HttpRequest& req, HttpResponse& res);
  const ServingModel* ready() const { return ready_.load(std::memory_order_acquire); }
  Result<std::shared_ptr<grammar::TokenMasker>> MaskerFor(const std::string& gbnf,
                                                          const std::shared_ptr<const grammar::TokenTrie>& trie);

  ServeOptions options_;
  int port_ = -1;  // once bound
  std::unique_ptr<HttpServer> http_;
  std::atomic<const ServingModel*> ready_{nullptr};
  static constexpr size_t kMaxMaskers = 8;  // compiled grammars kept (each <= ~10 MB of caches)
  std::mutex maskers_mu_;
  std::list<std::pair<std::string, std::shared_ptr<grammar::TokenMasker>>> maskers_;  // most recent first
};

}  // namespace strata::serve
