#pragma once
// HttpServer: the HTTP/1.1 layer under `strata-run --serve`, on Boost.Beast
// and Asio (Debian's libboost-dev, header-only; the same code builds for
// Windows). Every limit is this file's, and each is a deadline or a count,
// never a per-read timeout (docs/server.md, "The HTTP layer"):
//
//   - a request head of at most 100 lines (request line included) of at most
//     8 KiB each and 64 KiB in all, else 431; the whole head within 10 s of
//     the connection (or of the first byte of a keep-alive request), else 408;
//   - a body of at most max_body (413, refused from Content-Length before a
//     byte of it is read), read whole within 30 s; all bodies being read or
//     held together within body_budget, else 503;
//   - at most max_connections connections; one beyond gets an immediate 503
//     and is closed; an idle keep-alive connection is closed after 30 s
//     (responses say so: Keep-Alive: timeout=30);
//   - a response write that makes no progress for 10 s (1 s while stopping)
//     closes the connection.
//
// One thread runs all network I/O (Asio, asynchronous); handlers run on a
// pool of worker threads and write their responses through HttpResponse,
// which blocks the worker until the bytes are written (so a handler learns
// at once that its client has gone). An exception that escapes a handler
// becomes a 500 (when nothing was sent yet) and never ends the process.
//
// Shutdown has two steps: BeginShutdown() stops accepting at once and closes
// every connection that is not inside a handler (idle, trickling a head or a
// body); handlers still running finish and their connections close after
// the response. Stop() then waits for them and ends Run().

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/base/status.h"

namespace strata::serve {

struct HttpLimits {
  size_t max_header_lines = 100;     // the request line and header lines together
  size_t max_header_line = 8 << 10;  // bytes in one line
  size_t max_head_bytes = 64 << 10;  // bytes in the whole head
  uint64_t max_body = 16u << 20;     // bytes in one body
  uint64_t body_budget = 64u << 20;  // bytes of all bodies read or held at once
  std::chrono::milliseconds head_deadline{10000};
  std::chrono::milliseconds body_deadline{30000};
  std::chrono::milliseconds keep_alive_idle{30000};
  std::chrono::milliseconds write_stall{10000};
  std::chrono::milliseconds write_stall_stopping{1000};
  int max_connections = 1024;
  int handler_threads = 16;
};

struct HttpHeader {
  std::string name, value;
};

struct HttpRequest {
  std::string method;  // as sent ("GET", "POST", ...)
  std::string target;  // the request target as sent
  std::string path;    // target without the query
  int version = 11;    // 10 or 11
  std::vector<HttpHeader> headers;
  std::string body;
  std::string remote;  // the peer's address, for the log

  // The first header of that name (case-insensitive), or nullopt.
  std::optional<std::string_view> Header(std::string_view name) const;
};

// A refusal: status, and the JSON body a client sees.
struct HttpRefusal {
  int status = 400;
  std::string body;
  std::vector<HttpHeader> headers;
};

// The worker's side of one response. Each call blocks until its bytes are
// written or the connection failed; false means the client is gone (or the
// response was already complete) and the handler should stop.
class HttpResponse {
 public:
  virtual ~HttpResponse() = default;
  // Headers added to the response about to start.
  void AddHeader(std::string name, std::string value) { extra_.push_back({std::move(name), std::move(value)}); }
  // A complete response with a body (Content-Length).
  virtual bool Send(int status, std::string_view content_type, std::string_view body) = 0;
  // A streamed response: Begin, then Write any number of times, then End.
  virtual bool Begin(int status, std::string_view content_type) = 0;
  virtual bool Write(std::string_view data) = 0;
  virtual bool End() = 0;
  // True once Send or Begin has started the response.
  virtual bool started() const = 0;

 protected:
  std::vector<HttpHeader> extra_;
};

// Called on the I/O thread once a request's head is read, before its body:
// a refusal here (wrong Host, foreign Origin, missing key, not JSON) costs
// no body read. The body of `head` is empty.
using HttpHeadCheck = std::function<std::optional<HttpRefusal>(const HttpRequest& head)>;
using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

// Counters for /metrics and the tests.
struct HttpCounters {
  uint64_t connections_open = 0;
  uint64_t connections_total = 0;
  uint64_t refused_full = 0;      // 503: max_connections reached
  uint64_t refused_head = 0;      // 400/431: malformed or oversized heads
  uint64_t timed_out = 0;         // 408 and deadlines passed
  uint64_t body_bytes_held = 0;   // the body budget in use
};

class HttpServer {
 public:
  HttpServer(HttpLimits limits, HttpHeadCheck check, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0: any free port) and listens. Returns the port.
  Result<int> Bind(const std::string& host, int port);
  // Runs the I/O loop until Stop(); call on a thread of its own.
  void Run();
  // Stop accepting, close every connection not inside a handler.
  void BeginShutdown();
  // BeginShutdown(), wait for running handlers and their last writes, end Run().
  void Stop();
  HttpCounters Counters() const;

  struct Impl;  // http_server.cc's

 private:
  std::unique_ptr<Impl> impl_;
};

// The head checks of the server, on bytes: parses `bytes` as one request
// (head and, when complete, body) under `limits`. On success fills *out and
// returns nullopt; else the refusal the server would send (400, 413, 431).
// Returns a 0-status refusal when the bytes end before the head does. Pure:
// the fuzz target (tests/fuzz/http_request_fuzz.cc) and the unit tests use it.
std::optional<HttpRefusal> ParseHttpRequest(std::string_view bytes, const HttpLimits& limits, HttpRequest* out);

struct ApiError;  // api_error.h

// The API error as a refusal of the request (its status and JSON body).
HttpRefusal RefusalFrom(const ApiError& e);

// A name or address of this machine's loopback interface: localhost,
// *.localhost, 127.x.x.x, ::1.
bool IsLoopbackHost(std::string_view host);

// Where a Host header value points: "name" or "name:port" or "[v6]:port".
// False when it is not of that form.
bool SplitHostHeader(std::string_view value, std::string* host, int* port);

}  // namespace strata::serve
