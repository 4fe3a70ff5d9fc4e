#include "runtime/serve/http_server.h"

// The only file that includes Boost: Asio for the sockets and timers, Beast
// for the HTTP/1.1 request parser. Responses are written as plain bytes.
#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "runtime/base/strings.h"
#include "runtime/serve/api_error.h"

namespace strata::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

std::optional<std::string_view> HttpRequest::Header(std::string_view name) const {
  for (const HttpHeader& h : headers)
    if (EqualsIgnoringAsciiCase(h.name, name)) return std::string_view(h.value);
  return std::nullopt;
}

bool IsLoopbackHost(std::string_view h) {
  return h == "localhost" || h == "::1" || StartsWith(h, "127.") || EndsWith(h, ".localhost");
}

HttpRefusal RefusalFrom(const ApiError& e) { return HttpRefusal{e.status, e.Body(), {}}; }

bool SplitHostHeader(std::string_view value, std::string* host, int* port) {
  *port = -1;
  std::string_view rest;
  if (!value.empty() && value.front() == '[') {  // [v6 address]:port
    const size_t close = value.find(']');
    if (close == std::string_view::npos || close < 2) return false;
    *host = std::string(value.substr(1, close - 1));
    rest = value.substr(close + 1);
  } else {
    const size_t colon = value.find(':');
    *host = std::string(value.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : value.substr(colon);
  }
  if (host->empty()) return false;
  for (char& c : *host) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F || c == '/' || c == '@' || c == '\\') return false;
    c = static_cast<char>(std::tolower(u));
  }
  if (rest.empty()) return true;
  if (rest.front() != ':' || rest.size() < 2 || rest.size() > 6) return false;
  int p = 0;
  for (char c : rest.substr(1)) {
    if (c < '0' || c > '9') return false;
    p = p * 10 + (c - '0');
  }
  if (p > 65535) return false;
  *port = p;
  return true;
}

namespace {

const char* Reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

HttpRefusal HeadTooLarge(const std::string& what) {
  return RefusalFrom(ApiError{431, "invalid_request_error", "header_too_large", what, ""});
}

using Parser = http::request_parser<http::string_body>;

void ConfigureParser(Parser& p, const HttpLimits& limits) {
  p.header_limit(static_cast<std::uint32_t>(limits.max_head_bytes));
  p.body_limit(limits.max_body);
}

// A parse error as the client sees it.
HttpRefusal ParseRefusal(const ErrorCode& ec, const HttpLimits& limits) {
  if (ec == http::error::header_limit)
    return HeadTooLarge(StrFormat("the request head is larger than %zu bytes", limits.max_head_bytes));
  if (ec == http::error::body_limit) return RefusalFrom(PayloadTooLarge(static_cast<size_t>(limits.max_body)));
  return RefusalFrom(BadRequest("malformed HTTP request: " + ec.message(), "", "invalid_http"));
}

// Line and size limits on a parsed head; fills *out (without the body).
std::optional<HttpRefusal> CheckHead(const Parser& p, const HttpLimits& limits, HttpRequest* out) {
  const auto& m = p.get();
  out->method = std::string(m.method_string());
  out->target = std::string(m.target());
  out->path = out->target.substr(0, out->target.find('?'));
  out->version = m.version() == 10 ? 10 : 11;
  if (m.version() != 10 && m.version() != 11)
    return RefusalFrom(BadRequest("only HTTP/1.0 and HTTP/1.1 are spoken here", "", "invalid_http"));
  const size_t request_line = out->method.size() + out->target.size() + 11;
  if (request_line > limits.max_header_line)
    return HeadTooLarge(StrFormat("the request line is %zu bytes; at most %zu", request_line, limits.max_header_line));
  out->headers.clear();
  size_t lines = 1;
  for (const auto& f : m) {
    if (++lines > limits.max_header_lines)
      return HeadTooLarge(StrFormat("the request head has more than %zu lines", limits.max_header_lines));
    HttpHeader h{std::string(f.name_string()), std::string(f.value())};
    const size_t line = h.name.size() + 2 + h.value.size();
    if (line > limits.max_header_line)
      return HeadTooLarge(StrFormat("header '%s' is %zu bytes; at most %zu per line",
                                    h.name.substr(0, 64).c_str(), line, limits.max_header_line));
    out->headers.push_back(std::move(h));
  }
  if (out->target.empty() || (out->target[0] != '/' && out->target != "*"))
    return RefusalFrom(BadRequest("the request target must be a path", "", "invalid_http"));
  return std::nullopt;
}

// A fixed pool of worker threads running handlers in submission order.
class Workers {
 public:
  explicit Workers(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { Run(); });
  }
  ~Workers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void Post(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(f));
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    while (true) {
      std::function<void()> f;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        f = std::move(tasks_.front());
        tasks_.pop_front();
      }
      f();  // tasks catch their own exceptions
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

class Connection;

}  // namespace

std::optional<HttpRefusal> ParseHttpRequest(std::string_view bytes, const HttpLimits& limits, HttpRequest* out) {
  Parser p;
  ConfigureParser(p, limits);
  p.eager(true);
  ErrorCode ec;
  size_t used = 0;
  while (used < bytes.size() && !p.is_done()) {
    const size_t n = p.put(asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    if (ec == http::error::need_more) break;
    if (ec) return ParseRefusal(ec, limits);
    if (n == 0) break;
    used += n;
    if (p.is_header_done()) {
      HttpRequest head;
      if (auto r = CheckHead(p, limits, &head)) return r;
    }
  }
  if (!p.is_header_done()) return HttpRefusal{0, "", {}};
  if (auto r = CheckHead(p, limits, out)) return r;
  if (!p.is_done()) return HttpRefusal{0, "", {}};
  out->body = p.get().body();
  return std::nullopt;
}

struct HttpServer::Impl {
  Impl(HttpLimits l, HttpHeadCheck c, HttpHandler h)
      : limits(l), check(std::move(c)), handler(std::move(h)), workers(l.handler_threads) {}

  void Accept();
  void CloseAllIdle();  // io thread
  bool ReserveBody(uint64_t n) {
    uint64_t held = body_held.load();
    do {
      if (held + n > limits.body_budget) return false;
    } while (!body_held.compare_exchange_weak(held, held + n));
    return true;
  }
  void ReleaseBody(uint64_t n) { body_held.fetch_sub(n); }
  void Count(uint64_t HttpCounters::*field, int64_t delta = 1) {
    std::lock_guard<std::mutex> lock(counters_mu);
    counters.*field = static_cast<uint64_t>(static_cast<int64_t>(counters.*field) + delta);
  }
  void HandlerStarted() {
    std::lock_guard<std::mutex> lock(handling_mu);
    ++handling;
  }
  void HandlerEnded() {
    {
      std::lock_guard<std::mutex> lock(handling_mu);
      --handling;
    }
    handling_cv.notify_all();
  }

  HttpLimits limits;
  HttpHeadCheck check;
  HttpHandler handler;
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};
  asio::executor_work_guard<asio::io_context::executor_type> work{asio::make_work_guard(ioc)};
  std::atomic<bool> stopping{false};
  std::atomic<bool> running{false};  // Run() was called
  std::atomic<uint64_t> body_held{0};
  // I/O thread only.
  std::unordered_set<std::shared_ptr<Connection>> conns;
  int open = 0;       // counted connections
  int refusing = 0;   // connections being sent a 503 "full"
  bool accept_error_logged = false;

  mutable std::mutex counters_mu;
  HttpCounters counters;
  std::mutex handling_mu;
  std::condition_variable handling_cv;
  int handling = 0;
  Workers workers;  // last: joined first
};

namespace {

// One client connection. Lives on the I/O thread; a handler on a worker
// reaches it only through WriteFromWorker (posted, then waited for).
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  enum class State { kIdle, kHead, kBody, kHandling, kRefusing, kClosed };

  Connection(HttpServer::Impl* s, tcp::socket sock, bool counted)
      : s_(s), sock_(std::move(sock)), timer_(s->ioc), buffer_(s->limits.max_head_bytes + (16 << 10)),
        counted_(counted) {
    ErrorCode ec;
    const auto ep = sock_.remote_endpoint(ec);
    if (!ec) remote_ = ep.address().to_string() + ":" + std::to_string(ep.port());
    sock_.set_option(tcp::no_delay(true), ec);
  }

  void Start() {
    head_deadline_ = Clock::now() + s_->limits.head_deadline;
    ReadHead();
  }

  // 503 "full" and close; no request is read.
  void RefuseFull(int max_connections) {
    HttpRefusal r = RefusalFrom(Busy(StrFormat("the server holds its maximum of %d connections; try again later",
                                           max_connections)));
    Refuse(r, /*linger=*/false);
  }

  State state() const { return state_; }

  // Closes now, whatever is pending.
  void Close() {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    ++gen_;
    ErrorCode ec;
    timer_.cancel();
    sock_.shutdown(tcp::socket::shutdown_both, ec);
    sock_.close(ec);
    ReleaseBody();
    if (counted_) {
      --s_->open;
      s_->Count(&HttpCounters::connections_open, -1);
    } else {
      --s_->refusing;
    }
    s_->conns.erase(shared_from_this());
  }

  // BeginShutdown: idle, trickling and refusing connections go now; one in a
  // handler closes after its response, and its writes get the short stall.
  void OnShutdown() {
    if (state_ == State::kHandling) {
      if (writing_) ArmWrite();
      return;
    }
    Close();
  }

  // Called on a worker: writes `bytes` and waits. False when the connection
  // is gone or the write failed or stalled.
  bool WriteFromWorker(std::string bytes) {
    auto done = std::make_shared<std::promise<bool>>();
    auto future = done->get_future();
    auto data = std::make_shared<std::string>(std::move(bytes));
    asio::post(s_->ioc, [self = shared_from_this(), data, done] {
      if (self->state_ != State::kHandling) return done->set_value(false);
      self->writing_ = true;
      self->ArmWrite();
      asio::async_write(self->sock_, asio::buffer(*data), [self, data, done](const ErrorCode& ec, size_t) {
        self->writing_ = false;
        self->Disarm();
        if (ec) self->Close();
        done->set_value(!ec);
      });
    });
    try {
      return future.get();
    } catch (const std::future_error&) {  // the I/O loop ended with the write still queued
      return false;
    }
  }

  // Called on the I/O thread when the handler is done.
  void AfterHandler(bool keep_alive) {
    ReleaseBody();
    if (state_ != State::kHandling) return;
    if (!keep_alive || s_->stopping.load()) return LingerClose();
    WaitForNextRequest();
  }

  const std::string& remote() const { return remote_; }

 private:
  // The deadline timer: one per connection, re-armed for each phase.
  void Arm(Clock::time_point when) {
    const uint64_t gen = ++gen_;
    timer_.expires_at(when);
    timer_.async_wait([self = shared_from_this(), gen](const ErrorCode& ec) {
      if (ec || gen != self->gen_) return;
      self->OnDeadline();
    });
  }
  void ArmWrite() {
    Arm(Clock::now() + (s_->stopping.load() ? s_->limits.write_stall_stopping : s_->limits.write_stall));
  }
  void Disarm() {
    ++gen_;
    timer_.cancel();
  }
  void OnDeadline() {
    if (state_ == State::kClosed) return;
    s_->Count(&HttpCounters::timed_out);
    if (state_ == State::kHead || state_ == State::kBody) {
      if (timed_out_) return Close();  // the cancelled read did not end (it had completed already): close
      timed_out_ = true;
      ErrorCode ec;
      sock_.cancel(ec);  // the read ends with operation_aborted and answers 408
      // A composed read whose current step had already completed goes on
      // reading; it gets a short while to notice, then the socket closes.
      Arm(Clock::now() + s_->limits.write_stall_stopping);
      return;
    }
    Close();  // an idle keep-alive, a stalled write, a refusal nobody reads
  }

  void ReleaseBody() {
    if (reserved_ == 0) return;
    s_->ReleaseBody(reserved_);
    s_->Count(&HttpCounters::body_bytes_held, -static_cast<int64_t>(reserved_));
    reserved_ = 0;
  }

  // Keep-alive: the next request may idle for keep_alive_idle before its
  // first byte; from that byte its head has head_deadline.
  void WaitForNextRequest() {
    if (s_->stopping.load()) return Close();
    if (buffer_.size() > 0) {  // pipelined: it has begun already
      head_deadline_ = Clock::now() + s_->limits.head_deadline;
      return ReadHead();
    }
    state_ = State::kIdle;
    Arm(Clock::now() + s_->limits.keep_alive_idle);
    sock_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](const ErrorCode& ec, size_t n) {
      if (self->state_ != State::kIdle) return;
      if (ec) return self->Close();
      self->buffer_.commit(n);
      self->head_deadline_ = Clock::now() + self->s_->limits.head_deadline;
      self->ReadHead();
    });
  }

  // Reads a request head, complete by head_deadline_.
  void ReadHead() {
    if (s_->stopping.load()) return Close();
    parser_.emplace();
    ConfigureParser(*parser_, s_->limits);
    state_ = State::kHead;
    Arm(head_deadline_);
    http::async_read_header(sock_, buffer_, *parser_, [self = shared_from_this()](const ErrorCode& ec, size_t) {
      self->OnHead(ec);
    });
  }

  void OnHead(const ErrorCode& ec) {
    if (state_ != State::kHead) return;
    if (ec || timed_out_) return OnReadError(ec);
    request_ = std::make_shared<HttpRequest>();
    request_->remote = remote_;
    if (auto r = CheckHead(*parser_, s_->limits, request_.get())) {
      s_->Count(&HttpCounters::refused_head);
      return Refuse(*r, true);
    }
    if (s_->check) {
      std::optional<HttpRefusal> r;
      try {
        r = s_->check(*request_);
      } catch (const std::exception& e) {
        r = RefusalFrom(ServerError(std::string("internal error: ") + e.what()));
      }
      if (r) return Refuse(*r, true);
    }
    if (parser_->is_done()) return Dispatch();
    // A body follows: reserve its bytes in the budget first.
    const uint64_t n = parser_->content_length() ? *parser_->content_length() : s_->limits.max_body;
    if (!s_->ReserveBody(n))
      return Refuse(RefusalFrom(Busy("the server is reading too many request bodies at once; try again shortly")),
                    true);
    reserved_ = n;
    s_->Count(&HttpCounters::body_bytes_held, static_cast<int64_t>(n));
    state_ = State::kBody;
    Arm(Clock::now() + s_->limits.body_deadline);
    const auto expect = request_->Header("Expect");
    if (expect && request_->version == 11 && beast::iequals(*expect, "100-continue")) {
      auto cont = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      asio::async_write(sock_, asio::buffer(*cont), [self = shared_from_this(), cont](const ErrorCode& e, size_t) {
        if (self->state_ != State::kBody) return;
        if (e) return self->Close();
        self->ReadBody();
      });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(sock_, buffer_, *parser_, [self = shared_from_this()](const ErrorCode& ec, size_t) {
      if (self->state_ != State::kBody) return;
      if (ec || self->timed_out_) return self->OnReadError(ec);
      self->request_->body = std::move(self->parser_->get().body());
      self->Dispatch();
    });
  }

  void OnReadError(const ErrorCode& ec) {
    if (timed_out_) {
      const bool in_body = state_ == State::kBody;
      return Refuse(RefusalFrom(ApiError{408, "invalid_request_error", "request_timeout",
                                     StrFormat("the request %s did not arrive within %lld ms",
                                               in_body ? "body" : "head",
                                               static_cast<long long>(in_body ? s_->limits.body_deadline.count()
                                                                              : s_->limits.head_deadline.count())),
                                     ""}),
                    /*linger=*/true);  // read what the client still trickles, so it sees the 408, not a reset
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == http::error::partial_message ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted)
      return Close();
    s_->Count(&HttpCounters::refused_head);
    Refuse(ParseRefusal(ec, s_->limits), true);
  }

  void Dispatch();

  // Writes a complete error response (Connection: close), then closes.
  void Refuse(const HttpRefusal& r, bool linger) {
    state_ = State::kRefusing;
    ReleaseBody();
    std::string head = StrFormat("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                                 "Connection: close\r\n", r.status, Reason(r.status), r.body.size());
    for (const HttpHeader& h : r.headers) head += h.name + ": " + h.value + "\r\n";
    auto data = std::make_shared<std::string>(head + "\r\n" + r.body);
    Arm(Clock::now() + s_->limits.write_stall_stopping);
    asio::async_write(sock_, asio::buffer(*data), [self = shared_from_this(), data, linger](const ErrorCode& ec,
                                                                                         size_t) {
      if (self->state_ != State::kRefusing) return;
      if (ec || !linger) return self->Close();
      self->LingerClose();
    });
  }

  // Half-closes and reads what the client still sends (for up to a second,
  // at most 1 MiB), so that it sees the response instead of a reset.
  void LingerClose() {
    state_ = State::kRefusing;
    ErrorCode ec;
    sock_.shutdown(tcp::socket::shutdown_send, ec);
    Arm(Clock::now() + s_->limits.write_stall_stopping);
    Drain(0);
  }
  void Drain(size_t drained) {
    auto scratch = std::make_shared<std::array<char, 4096>>();
    sock_.async_read_some(asio::buffer(*scratch), [self = shared_from_this(), scratch, drained](const ErrorCode& ec,
                                                                                                size_t n) {
      if (self->state_ != State::kRefusing) return;
      if (ec || drained + n > (1u << 20)) return self->Close();
      self->Drain(drained + n);
    });
  }

  HttpServer::Impl* s_;
  tcp::socket sock_;
  asio::steady_timer timer_;
  uint64_t gen_ = 0;
  beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  std::shared_ptr<HttpRequest> request_;
  State state_ = State::kHead;
  Clock::time_point head_deadline_;
  bool timed_out_ = false;
  bool writing_ = false;
  bool counted_;
  uint64_t reserved_ = 0;
  std::string remote_;
};

// The response a handler writes, formatted here and written by the I/O thread.
class ResponseWriter final : public HttpResponse {
 public:
  ResponseWriter(std::shared_ptr<Connection> c, int version, bool keep_alive, bool stopping,
                 std::chrono::milliseconds idle)
      : c_(std::move(c)), version_(version), keep_alive_(keep_alive && !stopping),
        // Clients that honour it close an idle connection before the server does.
        keep_alive_header_(StrFormat("Keep-Alive: timeout=%lld\r\n",
                                     static_cast<long long>(std::max<int64_t>(1, idle.count() / 1000)))) {}

  bool Send(int status, std::string_view content_type, std::string_view body) override {
    if (started_) return false;
    started_ = true;
    std::string bytes = Head(status, content_type) + StrFormat("Content-Length: %zu\r\n\r\n", body.size());
    bytes.append(body);
    complete_ = ok_ = c_->WriteFromWorker(std::move(bytes));
    return ok_;
  }
  bool Begin(int status, std::string_view content_type) override {
    if (started_) return false;
    started_ = true;
    chunked_ = version_ == 11;
    if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the body ends when the connection does
    std::string bytes = Head(status, content_type) + (chunked_ ? "Transfer-Encoding: chunked\r\n\r\n" : "\r\n");
    ok_ = c_->WriteFromWorker(std::move(bytes));
    return ok_;
  }
  bool Write(std::string_view data) override {
    if (!started_ || complete_ || !ok_) return false;
    if (data.empty()) return true;
    std::string bytes = chunked_ ? StrFormat("%zx\r\n", data.size()) : std::string();
    bytes.append(data);
    if (chunked_) bytes += "\r\n";
    ok_ = c_->WriteFromWorker(std::move(bytes));
    return ok_;
  }
  bool End() override {
    if (!started_ || complete_ || !ok_) return false;
    complete_ = true;
    if (chunked_) ok_ = c_->WriteFromWorker("0\r\n\r\n");
    return ok_;
  }
  bool started() const override { return started_; }
  // Whether the connection can carry another request.
  bool reusable() const { return complete_ && ok_ && keep_alive_; }

 private:
  std::string Head(int status, std::string_view content_type) {
    std::string h = StrFormat("HTTP/1.1 %d %s\r\n", status, Reason(status));
    if (!content_type.empty()) h += "Content-Type: " + std::string(content_type) + "\r\n";
    for (const HttpHeader& x : extra_) h += x.name + ": " + x.value + "\r\n";
    if (!keep_alive_) h += "Connection: close\r\n";
    else h += keep_alive_header_;
    return h;
  }

  std::shared_ptr<Connection> c_;
  int version_;
  bool keep_alive_;
  std::string keep_alive_header_;
  bool started_ = false, complete_ = false, chunked_ = false, ok_ = true;
};

void Connection::Dispatch() {
  Disarm();
  state_ = State::kHandling;
  const bool keep_alive = parser_->keep_alive();
  parser_.reset();
  auto request = std::move(request_);
  s_->HandlerStarted();
  s_->workers.Post([self = shared_from_this(), request, keep_alive] {
    HttpServer::Impl* s = self->s_;
    ResponseWriter response(self, request->version, keep_alive, s->stopping.load(), s->limits.keep_alive_idle);
    try {
      s->handler(*request, response);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "strata serve: error: %s %s: %s\n", request->method.substr(0, 16).c_str(),
                   request->path.substr(0, 160).c_str(), e.what());
      if (!response.started()) response.Send(500, "application/json", ServerError(std::string("internal error: ") +
                                                                                  e.what()).Body());
    } catch (...) {
      if (!response.started()) response.Send(500, "application/json", ServerError("internal error").Body());
    }
    if (!response.started()) response.Send(500, "application/json", ServerError("the handler sent no response").Body());
    if (response.started() && !response.reusable()) response.End();  // a stream the handler left open
    const bool keep = response.reusable();
    asio::post(s->ioc, [self, keep] { self->AfterHandler(keep); });
    s->HandlerEnded();
  });
}

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor.async_accept([this](const ErrorCode& ec, tcp::socket sock) {
    if (stopping.load() || !acceptor.is_open()) return;
    if (ec) {
      // Out of descriptors (or the like): wait, then accept again; no busy loop.
      if (!accept_error_logged) {
        std::fprintf(stderr, "strata serve: cannot accept a connection: %s (retrying)\n", ec.message().c_str());
        accept_error_logged = true;
      }
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](const ErrorCode& e) {
        if (!e) Accept();
      });
      return;
    }
    accept_error_logged = false;
    Count(&HttpCounters::connections_total);
    if (open >= limits.max_connections) {
      Count(&HttpCounters::refused_full);
      if (refusing < 64) {
        ++refusing;
        auto c = std::make_shared<Connection>(this, std::move(sock), /*counted=*/false);
        conns.insert(c);
        c->RefuseFull(limits.max_connections);
      }  // else the socket closes here, unanswered
    } else {
      ++open;
      Count(&HttpCounters::connections_open);
      auto c = std::make_shared<Connection>(this, std::move(sock), /*counted=*/true);
      conns.insert(c);
      c->Start();
    }
    Accept();
  });
}

void HttpServer::Impl::CloseAllIdle() {
  ErrorCode ec;
  acceptor.close(ec);
  accept_retry.cancel();
  std::vector<std::shared_ptr<Connection>> all(conns.begin(), conns.end());
  for (auto& c : all) c->OnShutdown();
}

HttpServer::HttpServer(HttpLimits limits, HttpHeadCheck check, HttpHandler handler)
    : impl_(std::make_unique<Impl>(limits, std::move(check), std::move(handler))) {}

HttpServer::~HttpServer() {
  Stop();
}

Result<int> HttpServer::Bind(const std::string& host, int port) {
  ErrorCode ec;
  std::string name = host;
  if (name == "localhost") name = "127.0.0.1";
  const auto addr = asio::ip::make_address(name, ec);
  if (ec) return InvalidArgument(StrFormat("--host %s is not an IP address (use 127.0.0.1, ::1, 0.0.0.0 or ::)",
                                           host.c_str()));
  const tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  tcp::acceptor& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) {
#ifdef _WIN32
    // No other socket may bind the same port while this one listens.
    a.set_option(asio::detail::socket_option::boolean<SOL_SOCKET, SO_EXCLUSIVEADDRUSE>(true), ec);
#else
    a.set_option(tcp::acceptor::reuse_address(true), ec);  // restart while old connections linger
#endif
  }
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    ErrorCode ignored;
    a.close(ignored);
    return IoError(StrFormat("cannot listen on %s:%d: %s", host.c_str(), port, ec.message().c_str()));
  }
  return static_cast<int>(a.local_endpoint().port());
}

void HttpServer::Run() {
  impl_->running.store(true);
  asio::post(impl_->ioc, [this] { impl_->Accept(); });
  impl_->ioc.run();
}

void HttpServer::BeginShutdown() {
  if (impl_->stopping.exchange(true)) return;
  asio::post(impl_->ioc, [this] { impl_->CloseAllIdle(); });
}

void HttpServer::Stop() {
  BeginShutdown();
  {
    std::unique_lock<std::mutex> lock(impl_->handling_mu);
    impl_->handling_cv.wait(lock, [&] { return impl_->handling == 0; });
  }
  // The last responses' connections close (or finish their lingering close)
  // on the I/O thread; then it ends.
  auto closed = std::make_shared<std::promise<void>>();
  auto done = closed->get_future();
  asio::post(impl_->ioc, [this, closed] {
    std::vector<std::shared_ptr<Connection>> all(impl_->conns.begin(), impl_->conns.end());
    for (auto& c : all) c->Close();
    impl_->work.reset();
    closed->set_value();
  });
  if (impl_->running.load() && !impl_->ioc.stopped()) done.wait_for(std::chrono::seconds(2));
  impl_->ioc.stop();
}

HttpCounters HttpServer::Counters() const {
  std::lock_guard<std::mutex> lock(impl_->counters_mu);
  return impl_->counters;
}

}  // namespace strata::serve
