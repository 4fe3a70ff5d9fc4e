// The request-head rules of the server's HTTP layer (ParseHttpRequest) and
// the Host header split, on bytes; the same rules on a live socket are in
// serve_http_test.cc.

#include <gtest/gtest.h>

#include <string>

#include "runtime/serve/http_server.h"

namespace strata::serve {
namespace {

std::optional<HttpRefusal> Parse(const std::string& bytes, HttpRequest* out, HttpLimits limits = {}) {
  return ParseHttpRequest(bytes, limits, out);
}

TEST(HttpRequest, AWellFormedRequestParsesWithItsBody) {
  HttpRequest r;
  const auto refusal = Parse("POST /v1/completions?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nCONTENT-type: "
                             "application/json\r\nContent-Length: 2\r\n\r\n{}",
                             &r);
  ASSERT_FALSE(refusal) << refusal->body;
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/v1/completions?x=1");
  EXPECT_EQ(r.path, "/v1/completions");
  EXPECT_EQ(r.version, 11);
  EXPECT_EQ(r.body, "{}");
  ASSERT_TRUE(r.Header("content-type"));
  EXPECT_EQ(*r.Header("Content-Type"), "application/json");
  EXPECT_FALSE(r.Header("Origin"));
}

TEST(HttpRequest, ChunkedBodiesAreJoined) {
  HttpRequest r;
  ASSERT_FALSE(Parse("POST /t HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n1\r\n \r\n0\r\n\r\n",
                     &r));
  EXPECT_EQ(r.body, "{} ");
}

TEST(HttpRequest, LineCountLineLengthAndHeadSizeAreLimited) {
  HttpLimits l;
  l.max_header_lines = 4;
  l.max_header_line = 40;
  l.max_head_bytes = 200;
  HttpRequest r;
  // 4 lines: the request line and three headers.
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", &r, l));
  auto refusal = Parse("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", &r, l);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 431);
  EXPECT_NE(refusal->body.find("more than 4 lines"), std::string::npos);
  // A line of 40 bytes passes, 41 does not.
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nA: " + std::string(37, 'v') + "\r\n\r\n", &r, l));
  refusal = Parse("GET / HTTP/1.1\r\nA: " + std::string(38, 'v') + "\r\n\r\n", &r, l);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 431);
  // The whole head: refused as soon as it passes 200 bytes, complete or not.
  refusal = Parse("GET / HTTP/1.1\r\nA: " + std::string(30, 'v') + "\r\nB: " + std::string(30, 'v') + "\r\nC: " +
                      std::string(30, 'v') + "\r\nD: " + std::string(300, 'v'),
                  &r, l);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 431);
  // A request line longer than a line may be.
  refusal = Parse("GET /" + std::string(40, 'p') + " HTTP/1.1\r\n\r\n", &r, l);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 431);
}

TEST(HttpRequest, ABodyOverTheLimitIsRefusedFromItsLength) {
  HttpLimits l;
  l.max_body = 10;
  HttpRequest r;
  const auto refusal = Parse("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", &r, l);  // no body byte sent
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 413);
}

TEST(HttpRequest, IncompleteAndMalformedInput) {
  HttpRequest r;
  auto refusal = Parse("GET / HTTP/1.1\r\nHost: h\r\n", &r);  // head not finished
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 0);
  refusal = Parse("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n{}", &r);  // body not finished
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 0);
  for (const char* bad : {"\x01\x02 nonsense\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET / HTTP/1.1\r\nBad Header\r\n\r\n",
                          "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                          "GET http://example.com/ HTTP/1.1\r\n\r\n"}) {
    refusal = Parse(bad, &r);
    ASSERT_TRUE(refusal) << bad;
    EXPECT_EQ(refusal->status, 400) << bad;
    EXPECT_NE(refusal->body.find("\"error\""), std::string::npos) << bad;
  }
}

TEST(HttpRequest, HostHeaderSplits) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(SplitHostHeader("LocalHost:8080", &host, &port));
  EXPECT_EQ(host, "localhost");
  EXPECT_EQ(port, 8080);
  ASSERT_TRUE(SplitHostHeader("127.0.0.1", &host, &port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, -1);
  ASSERT_TRUE(SplitHostHeader("[::1]:99", &host, &port));
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 99);
  for (const char* bad : {"", ":80", "a:", "a:65536", "a:8x", "[::1", "[]:80", "a b", "a/b", "user@a", "a:80:81",
                          "[::1]x"})
    EXPECT_FALSE(SplitHostHeader(bad, &host, &port)) << bad;
}

}  // namespace
}  // namespace strata::serve
