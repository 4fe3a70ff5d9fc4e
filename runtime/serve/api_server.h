#pragma once
// ApiServer: the HTTP side of `strata-run --serve`, on cpp-httplib.
//
// Endpoints (docs/server.md): POST /v1/chat/completions, POST
// /v1/completions (both streaming as Server-Sent Events or not), GET
// /v1/models, GET /health, GET /metrics, POST /tokenize, POST /detokenize,
// and the chat page at /. The server listens before the model is loaded:
// until SetReady(), /health answers 503 and so does everything else.
//
// Each HTTP request runs on a pool thread. Generation requests are checked
// and tokenized there, handed to the Scheduler, and the thread then writes
// what the job produces. While it waits it writes a keep-alive every
// 500 ms (an SSE comment, or JSON whitespace before a non-streamed body);
// a failed write means the client left, and the job is cancelled.

#include <atomic>
#include <exception>
#include <memory>
#include <string>

#include "runtime/chat/chat_template.h"
#include "runtime/model/model.h"
#include "runtime/serve/api_request.h"
#include "runtime/serve/scheduler.h"
#include "runtime/serve/serve_options.h"
#include "runtime/tokenizer/tokenizer.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

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
};

class ApiServer {
 public:
  explicit ApiServer(const ServeOptions& options);
  ~ApiServer();

  // Binds to options.host:options.port (port 0: any free port). Returns the
  // port, or an error.
  Result<int> Bind();
  // Serves until Stop(); call on a thread of its own.
  void Listen();
  void Stop();
  // From now on requests are served by `m`.
  void SetReady(const ServingModel* m);

 private:
  // The routes, each a named handler below.
  void Routes();
  void ConfigureHttp();
  bool PreRoute(const httplib::Request& req, httplib::Response& res);
  void OnHttpError(const httplib::Request& req, httplib::Response& res);
  static void OnException(const httplib::Request& req, httplib::Response& res, std::exception_ptr ep);
  void HandlePage(const httplib::Request& req, httplib::Response& res);
  void HandleHealth(const httplib::Request& req, httplib::Response& res);
  void HandleModels(const httplib::Request& req, httplib::Response& res);
  void HandleMetrics(const httplib::Request& req, httplib::Response& res);
  void HandleTokenize(const httplib::Request& req, httplib::Response& res);
  void HandleDetokenize(const httplib::Request& req, httplib::Response& res);
  void HandleChat(const httplib::Request& req, httplib::Response& res);
  void HandleCompletion(const httplib::Request& req, httplib::Response& res);
  void HandleGenerate(ApiKind kind, const httplib::Request& req, httplib::Response& res);
  const ServingModel* ready() const { return ready_.load(std::memory_order_acquire); }

  ServeOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<const ServingModel*> ready_{nullptr};
  std::atomic<bool> listen_returned_{false};
};

}  // namespace strata::serve
