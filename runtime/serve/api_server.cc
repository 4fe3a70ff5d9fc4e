#include "runtime/serve/api_server.h"

#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "runtime/base/strings.h"
#include "runtime/serve/chat_prompt.h"
#include "runtime/serve/metrics_text.h"
#include "runtime/serve/utf8_stream.h"
#include "runtime/serve/web_page.h"
#include "strata/version.h"

namespace strata::serve {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// How often a handler that has nothing to send writes a keep-alive (and so
// finds out whether its client is still there).
constexpr auto kKeepAlive = std::chrono::milliseconds(500);
// A non-streamed answer that is ready within this time gets a normal
// response; a later one is preceded by keep-alive whitespace.
constexpr auto kQuickAnswer = std::chrono::milliseconds(300);

void SendJson(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(Dump(body), "application/json");
}

void SendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(e.Body(), "application/json");
}

uint64_t RandomU64() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  return rng();
}

std::string RandomId(const char* prefix) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = prefix;
  uint64_t bits = 0;
  for (int i = 0; i < 24; ++i) {
    if (i % 10 == 0) bits = RandomU64();  // 62^10 < 2^64: ten letters per draw
    id += kAlphabet[bits % 62];
    bits /= 62;
  }
  return id;
}

// Request-controlled text for the log: control characters cannot forge lines
// or move the cursor, and the length is bounded.
std::string LogSafe(std::string_view s, size_t max = 160) {
  std::string out;
  for (char c : s.substr(0, max)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7F) ? '?' : c;
  }
  if (s.size() > max) out += "...";
  return out;
}

// Compares a key without stopping at the first difference.
bool ConstantTimeEquals(std::string_view given, std::string_view expected) {
  if (expected.empty()) return false;
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  return diff == 0;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

json UsageJson(const JobStats& s) {
  return {{"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", s.completion_tokens},
          {"total_tokens", s.prompt_tokens + s.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", s.reused_tokens}}}};
}

// llama-server's "timings" extension (the chat page shows its speeds).
json TimingsJson(const JobStats& s) {
  const int64_t read = s.prompt_tokens - s.reused_tokens;
  auto rate = [](int64_t n, double ms) { return ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0.0; };
  return {{"cache_n", s.reused_tokens},        {"prompt_n", read},
          {"prompt_ms", s.prompt_ms},          {"prompt_per_second", rate(read, s.prompt_ms)},
          {"predicted_n", s.completion_tokens}, {"predicted_ms", s.gen_ms},
          {"predicted_per_second", rate(s.completion_tokens, s.gen_ms)}, {"queued_ms", s.queued_ms},
          {"slot", s.slot}};
}

// One generation request between its handler and the scheduler.
struct Exchange {
  ApiKind kind = ApiKind::kChat;
  bool include_usage = false;
  std::string id, model, fingerprint;
  int64_t created = 0;
  std::shared_ptr<Job> job;
  Scheduler* scheduler = nullptr;
  // Non-streamed answers accumulate here.
  std::string text;
  bool done = false;
  FinishReason finish = FinishReason::kNone;
  std::optional<ApiError> error;
  JobStats stats;

  void Absorb(JobUpdate& u) {
    text += u.text;
    if (u.done) {
      done = true;
      finish = u.finish;
      error = u.error;
      stats = u.stats;
    }
  }
  // Finish reasons a client sees ("cancelled" never reaches a connected one).
  const char* Reason() const { return finish == FinishReason::kStop ? "stop" : "length"; }

  json Base(bool chunk) const {
    const char* object = kind == ApiKind::kChat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                                : "text_completion";
    return {{"id", id}, {"object", object}, {"created", created}, {"model", model}, {"system_fingerprint", fingerprint}};
  }
  json Chunk(const std::string& content, const char* finish_reason, bool role) const {
    json j = Base(true);
    json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
    if (finish_reason) choice["finish_reason"] = finish_reason;
    if (kind == ApiKind::kChat) {
      json delta = json::object();
      if (role) {
        delta["role"] = "assistant";
        delta["content"] = nullptr;
      } else if (!finish_reason) {
        delta["content"] = content;
      }
      choice["delta"] = delta;
    } else {
      choice["text"] = content;
    }
    j["choices"] = json::array({choice});
    if (include_usage) j["usage"] = nullptr;
    return j;
  }
  json UsageChunk() const {
    json j = Base(true);
    j["choices"] = json::array();
    j["usage"] = UsageJson(stats);
    j["timings"] = TimingsJson(stats);
    return j;
  }
  json Answer() const {
    json j = Base(false);
    json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", Reason()}};
    if (kind == ApiKind::kChat) {
      choice["message"] = {{"role", "assistant"}, {"content", text}};
    } else {
      choice["text"] = text;
    }
    j["choices"] = json::array({choice});
    j["usage"] = UsageJson(stats);
    j["timings"] = TimingsJson(stats);
    return j;
  }
};

std::string Event(const json& j) { return "data: " + Dump(j) + "\n\n"; }

// Parses a small JSON object body (tokenize, detokenize).
std::optional<ApiError> ParseObject(const std::string& body, json* out) {
  if (body.empty()) return BadRequest("the request body is empty: send a JSON object", "", "invalid_json");
  if (JsonDepth(body, 64) > 64) return BadRequest("the request body nests too deep", "", "invalid_json");
  try {
    *out = json::parse(body);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers too large for a double
    return BadRequest(std::string("the request body is not valid JSON: ") + e.what(), "", "invalid_json");
  }
  if (!out->is_object()) return BadRequest("the request body must be a JSON object", "", "invalid_json");
  return std::nullopt;
}

std::optional<ApiError> OptionalBool(const json& j, const char* name, bool* out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return BadRequest(std::string("'") + name + "' must be true or false", name, "invalid_type");
  *out = it->get<bool>();
  return std::nullopt;
}

// Given to httplib with a chunked response: a response that did not finish
// (the client went) cancels its job.
std::function<void(bool)> CancelIfUnfinished(const std::shared_ptr<Exchange>& x) {
  return [x](bool success) {
    if (!success) x->scheduler->Cancel(x->job);
  };
}

// A streamed answer: server-sent events as the tokens come, keep-alive
// comments while none do; the job is cancelled if the client goes.
void StreamAnswer(httplib::Response& res, const std::shared_ptr<Exchange>& x) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [x](size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& text) { return sink.write(text.data(), text.size()); };
        auto gone = [&] {
          x->scheduler->Cancel(x->job);
          return false;
        };
        if (x->kind == ApiKind::kChat && !write(Event(x->Chunk("", nullptr, /*role=*/true)))) return gone();
        while (true) {
          JobUpdate u;
          if (!x->job->Wait(kKeepAlive, &u)) {
            if (!write(": keep-alive\n\n")) return gone();
            continue;
          }
          if (!u.text.empty() && !write(Event(x->Chunk(u.text, nullptr, false)))) return gone();
          if (!u.done) continue;
          x->Absorb(u);
          if (x->error) {
            write(Event(x->error->ToJson()));
          } else {
            if (!write(Event(x->Chunk("", x->Reason(), false)))) return gone();
            if (x->include_usage && !write(Event(x->UsageChunk()))) return gone();
            if (!write("data: [DONE]\n\n")) return gone();
          }
          sink.done();
          return true;
        }
      },
      CancelIfUnfinished(x));
}

// An answer at once when it is quick (with the right status on error);
// otherwise a 200 whose body begins with keep-alive whitespace (valid before
// a JSON value) until the answer is ready.
void AnswerWhenDone(httplib::Response& res, const std::shared_ptr<Exchange>& x) {
  const auto deadline = Clock::now() + kQuickAnswer;
  while (!x->done) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    JobUpdate u;
    if (x->job->Wait(left, &u)) x->Absorb(u);
  }
  if (x->done) {
    if (x->error) return SendError(res, *x->error);
    return SendJson(res, 200, x->Answer());
  }
  // A slow one: keep-alive whitespace until the answer is ready.
  res.set_chunked_content_provider(
      "application/json",
      [x](size_t, httplib::DataSink& sink) {
        auto last_write = Clock::now();
        while (!x->done) {
          JobUpdate u;
          if (x->job->Wait(kKeepAlive, &u)) x->Absorb(u);
          if (x->done || Clock::now() - last_write < kKeepAlive) continue;
          if (!sink.write(" ", 1)) {
            x->scheduler->Cancel(x->job);
            return false;
          }
          last_write = Clock::now();
        }
        const std::string body = x->error ? x->error->Body() : Dump(x->Answer());
        if (!sink.write(body.data(), body.size())) return false;
        sink.done();
        return true;
      },
      CancelIfUnfinished(x));
}

}  // namespace

ApiServer::ApiServer(const ServeOptions& options) : options_(options), http_(std::make_unique<httplib::Server>()) {
  Routes();
}

ApiServer::~ApiServer() = default;

void ApiServer::SetReady(const ServingModel* m) { ready_.store(m, std::memory_order_release); }

Result<int> ApiServer::Bind() {
  if (options_.port == 0) {
    int port = http_->bind_to_any_port(options_.host);
    if (port < 0) return IoError(StrFormat("cannot listen on %s (any port)", options_.host.c_str()));
    return port;
  }
  if (!http_->bind_to_port(options_.host, options_.port))
    return IoError(StrFormat("cannot listen on %s:%d: the address is in use, not local, or not permitted",
                             options_.host.c_str(), options_.port));
  return options_.port;
}

void ApiServer::Listen() {
  http_->listen_after_bind();
  listen_returned_.store(true);
}

void ApiServer::Stop() {
  // httplib's stop() does nothing before listening has begun; a server that
  // fails to load right after binding must still stop.
  while (!http_->is_running() && !listen_returned_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_->stop();
}

void ApiServer::Routes() {
  ConfigureHttp();
  httplib::Server& s = *http_;
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return PreRoute(req, res) ? httplib::Server::HandlerResponse::Handled : httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_error_handler([this](const httplib::Request& req, httplib::Response& res) { OnHttpError(req, res); });
  s.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    OnException(req, res, ep);
  });
  using Handler = void (ApiServer::*)(const httplib::Request&, httplib::Response&);
  auto get = [&](const char* path, Handler h) {
    s.Get(path, [this, h](const httplib::Request& req, httplib::Response& res) { (this->*h)(req, res); });
  };
  auto post = [&](const char* path, Handler h) {
    s.Post(path, [this, h](const httplib::Request& req, httplib::Response& res) { (this->*h)(req, res); });
  };
  get("/", &ApiServer::HandlePage);
  get("/index.html", &ApiServer::HandlePage);
  get("/health", &ApiServer::HandleHealth);
  get("/v1/health", &ApiServer::HandleHealth);
  get("/v1/models", &ApiServer::HandleModels);
  get("/models", &ApiServer::HandleModels);
  get("/metrics", &ApiServer::HandleMetrics);
  post("/tokenize", &ApiServer::HandleTokenize);
  post("/detokenize", &ApiServer::HandleDetokenize);
  post("/v1/chat/completions", &ApiServer::HandleChat);
  post("/chat/completions", &ApiServer::HandleChat);
  post("/v1/completions", &ApiServer::HandleCompletion);
  post("/completions", &ApiServer::HandleCompletion);
}

// Limits, threads and socket options of the HTTP layer.
void ApiServer::ConfigureHttp() {
  httplib::Server& s = *http_;
  // Threads: every running or queued request holds one while it waits, and
  // idle keep-alive connections hold one for up to the keep-alive timeout.
  const size_t threads = static_cast<size_t>(options_.parallel + options_.queue + 8);
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_payload_max_length(options_.max_body);
  // httplib's default also sets SO_REUSEPORT, with which a second server
  // could bind the same port and silently take half the connections.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
#ifdef _WIN32
    setsockopt(sock, SOL_SOCKET, SO_EXCLUSIVEADDRUSE, reinterpret_cast<const char*>(&yes), sizeof(yes));
#else
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));  // restart while old connections linger
#endif
  });
  s.set_tcp_nodelay(true);
  s.set_keep_alive_timeout(2);  // also bounds how long shutdown waits for idle connections
  s.set_read_timeout(30);
  s.set_write_timeout(10);
}

// Before any route: CORS headers and preflight, the API key, "loading".
// True when the request was answered here.
bool ApiServer::PreRoute(const httplib::Request& req, httplib::Response& res) {
  if (!options_.cors_origin.empty()) {
    res.set_header("Access-Control-Allow-Origin", options_.cors_origin);
    if (options_.cors_origin != "*") res.set_header("Vary", "Origin");
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Api-Key");
    res.set_header("Access-Control-Max-Age", "600");
  }
  if (req.method == "OPTIONS") {  // CORS preflight: never needs the key
    res.status = 204;
    return true;
  }
  const std::string& p = req.path;
  const bool is_public = p == "/health" || p == "/v1/health" || p == "/" || p == "/index.html";
  if (!is_public && !options_.api_key.empty()) {
    std::string key;
    const std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0) key = auth.substr(7);
    else key = req.get_header_value("X-Api-Key");
    if (!ConstantTimeEquals(key, options_.api_key)) {
      SendError(res, Unauthorized());
      return true;
    }
  }
  if (!ready() && !is_public) {
    SendError(res, Loading());
    return true;
  }
  return false;
}

// httplib's own errors (no route, body too large, malformed request) as API error objects.
void ApiServer::OnHttpError(const httplib::Request& req, httplib::Response& res) {
  if (!res.body.empty()) return;
  ApiError e;
  if (res.status == 404) {
    e = NotFoundError(StrFormat("no endpoint %s %s", LogSafe(req.method, 16).c_str(), LogSafe(req.path).c_str()));
  } else if (res.status == 413) {
    e = PayloadTooLarge(options_.max_body);
  } else if (res.status == 400) {
    e = BadRequest("malformed HTTP request", "", "invalid_http");
  } else {
    e = ApiError{res.status, "invalid_request_error", "http_error", StrFormat("HTTP error %d", res.status), ""};
  }
  res.set_content(e.Body(), "application/json");
}

// An exception in a handler ends that request with a 500 object.
void ApiServer::OnException(const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
  std::string what = "unknown exception";
  try {
    if (ep) std::rethrow_exception(ep);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  std::fprintf(stderr, "strata serve: error: %s %s: %s\n", LogSafe(req.method, 16).c_str(),
               LogSafe(req.path).c_str(), LogSafe(what, 400).c_str());
  SendError(res, ServerError("internal error: " + what));
}

// GET / and /index.html: the chat page.
void ApiServer::HandlePage(const httplib::Request&, httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
                 "img-src data:; base-uri 'none'; form-action 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-cache");
  res.set_content(std::string(kChatPageHtml), "text/html; charset=utf-8");
}

// GET /health, /v1/health.
void ApiServer::HandleHealth(const httplib::Request&, httplib::Response& res) {
  if (!ready()) return SendError(res, Loading());
  SendJson(res, 200, {{"status", "ok"}});
}

// GET /v1/models, /models.
void ApiServer::HandleModels(const httplib::Request&, httplib::Response& res) {
  const ServingModel& m = *ready();
  const HParams& hp = m.model->hp();
  json meta = {{"arch", std::string(ArchName(m.model->arch()))},
               {"n_vocab", hp.n_vocab},
               {"n_ctx_train", hp.n_ctx_train},
               {"n_ctx", m.scheduler->options().n_ctx},
               {"n_embd", hp.n_embd},
               {"n_layer", hp.n_layer},
               {"n_expert", hp.n_expert},
               {"n_expert_used", hp.n_expert_used},
               {"size", m.pack_bytes},
               {"parallel", m.scheduler->options().parallel},
               {"backend", m.backend},
               {"chat_template", m.chat_template.fallback ? "ChatML (fallback: the pack has none)" : "ChatML"}};
  json model = {{"id", m.id}, {"object", "model"}, {"created", m.created}, {"owned_by", "strata"}, {"meta", meta}};
  SendJson(res, 200, {{"object", "list"}, {"data", json::array({model})}});
}

// GET /metrics (Prometheus text).
void ApiServer::HandleMetrics(const httplib::Request&, httplib::Response& res) {
  res.set_content(PrometheusText(ready()->scheduler->Metrics()), "text/plain; version=0.0.4; charset=utf-8");
}

// POST /tokenize.
void ApiServer::HandleTokenize(const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = ParseObject(req.body, &body)) return SendError(res, *e);
  auto it = body.find("content");
  if (it == body.end() || !it->is_string())
    return SendError(res, BadRequest("'content' is required and must be a string", "content", "missing_field"));
  bool add_special = false, parse_special = true, with_pieces = false;
  for (auto [name, out] : {std::pair{"add_special", &add_special}, std::pair{"parse_special", &parse_special},
                           std::pair{"with_pieces", &with_pieces}})
    if (auto e = OptionalBool(body, name, out)) return SendError(res, *e);
  const tokenizer::Tokenizer& tok = *ready()->tok;
  std::vector<int32_t> ids = tok.Encode(it->get<std::string>(), add_special, parse_special);
  json tokens = json::array();
  for (int32_t id : ids) {
    if (with_pieces) tokens.push_back({{"id", id}, {"piece", SanitizeUtf8(tok.TokenToPiece(id, true))}});
    else tokens.push_back(id);
  }
  SendJson(res, 200, {{"tokens", tokens}});
}

// POST /detokenize.
void ApiServer::HandleDetokenize(const httplib::Request& req, httplib::Response& res) {
  json body;
  if (auto e = ParseObject(req.body, &body)) return SendError(res, *e);
  auto it = body.find("tokens");
  if (it == body.end() || !it->is_array())
    return SendError(res, BadRequest("'tokens' is required and must be an array of token ids", "tokens",
                                     "missing_field"));
  const tokenizer::Tokenizer& tok = *ready()->tok;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& v = (*it)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= tok.n_tokens())
      return SendError(res, BadRequest(StrFormat("'tokens[%zu]' is not a token id (integers 0..%d)", i,
                                                 tok.n_tokens() - 1),
                                       "tokens", "invalid_value"));
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  SendJson(res, 200, {{"content", SanitizeUtf8(tok.Decode(ids))}});
}

void ApiServer::HandleChat(const httplib::Request& req, httplib::Response& res) { HandleGenerate(ApiKind::kChat, req, res); }
void ApiServer::HandleCompletion(const httplib::Request& req, httplib::Response& res) {
  HandleGenerate(ApiKind::kCompletion, req, res);
}

// POST /v1/chat/completions and /v1/completions: parse, build the prompt,
// submit to the scheduler, then answer (streamed, or at once, or after
// keep-alive whitespace).
void ApiServer::HandleGenerate(ApiKind kind, const httplib::Request& req, httplib::Response& res) {
  const ServingModel& m = *ready();
  Scheduler& sched = *m.scheduler;
  const int64_t n_ctx = sched.options().n_ctx;
  const char* endpoint = kind == ApiKind::kChat ? "/v1/chat/completions" : "/v1/completions";
  auto reject = [&](const ApiError& e) {
    std::fprintf(stderr, "strata serve: %d %s: %s\n", e.status, endpoint, LogSafe(e.message, 300).c_str());
    SendError(res, e);
  };
  ApiLimits limits;
  limits.n_ctx = n_ctx;
  limits.n_vocab = m.model->hp().n_vocab;
  ApiRequest ar;
  if (auto e = ParseApiRequest(kind, req.body, options_.sampling, limits, &ar)) return reject(*e);

  GenerationRequest g;
  g.stop = ar.stop;
  g.ignore_eog = ar.ignore_eos;
  if (kind == ApiKind::kChat) {
    g.kind = "chat";
    g.prompt = ChatPromptTokens(*m.tok, m.chat_template, ar.messages);
    for (const std::string& stop : m.chat_template.StopStrings()) g.stop.push_back(stop);
  } else {
    g.kind = "completion";
    // Raw prompts are the caller's own template: special-token text is parsed (as llama-server does).
    g.prompt = ar.prompt_is_ids ? ar.prompt_ids : m.tok->Encode(ar.prompt_text, true, /*parse_special=*/true);
  }
  const char* prompt_param = kind == ApiKind::kChat ? "messages" : "prompt";
  if (g.prompt.empty()) return reject(BadRequest("the prompt has no tokens", prompt_param, "invalid_value"));
  if (static_cast<int64_t>(g.prompt.size()) >= n_ctx)
    return reject(BadRequest(StrFormat("the prompt is %zu tokens but a slot's context holds %lld (-c %lld), "
                                       "and at least one position must stay free for the answer",
                                       g.prompt.size(), static_cast<long long>(n_ctx),
                                       static_cast<long long>(n_ctx)),
                             prompt_param, "context_length_exceeded"));
  g.sampling = ar.sampling;
  if (!ar.has_seed) g.sampling.seed = RandomU64();
  g.max_tokens = ar.max_tokens;
  if (g.max_tokens < 0) g.max_tokens = options_.max_tokens > 0 ? options_.max_tokens
                                       : kind == ApiKind::kCompletion ? 16 : -1;  // OpenAI's defaults

  ApiError rejection;
  auto job = sched.Submit(std::move(g), &rejection);
  if (!job.ok()) return reject(rejection);

  auto x = std::make_shared<Exchange>();
  x->kind = kind;
  x->include_usage = ar.include_usage;
  x->id = RandomId(kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-");
  x->model = m.id;
  x->fingerprint = std::string("strata-") + kVersion;
  x->created = UnixNow();
  x->job = *job;
  x->scheduler = &sched;
  if (ar.stream) return StreamAnswer(res, x);
  AnswerWhenDone(res, x);
}

}  // namespace strata::serve
