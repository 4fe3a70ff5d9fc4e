// strata-run --serve end to end over raw HTTP (cpp-httplib's client and raw
// sockets): every kind of bad input gets a 400/413 with an OpenAI error
// object and never disturbs other requests; API key, CORS, health while
// loading, the SSE wire format, client disconnects, a full queue, shutdown
// on SIGTERM/SIGINT, and refusals at start. The `openai` client library
// tests live in tests/serve/*.test.mjs.

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <atomic>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#if defined(__linux__)
#include <sys/resource.h>
#endif

#include "runtime/base/strings.h"
#include "runtime/grammar/grammar.h"
#include "runtime/grammar/json_schema.h"
#include "tests/gguf_writer/synthetic_model.h"
#include "tests/testing/test_matrix.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/run_command.h"
#include "runtime/serve/utf8_stream.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_data.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_HAS_ASAN 1
#endif
#endif
#ifndef STRATA_HAS_ASAN
#define STRATA_HAS_ASAN 0
#endif

namespace strata {
namespace {

using nlohmann::json;
using testing::ServerProcess;

// Under sanitizers everything is several times slower: timeouts are generous.
constexpr int kLongMs = 60000;

class ServeHttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::ScratchDir("serve_http"));
    testing::SyntheticModelSpec s;
    s.arch = Arch::kQwen35Moe;
    s.hp = testing::TinyQwen35MoeHParams();
    s.seed = 3;
    auto b = testing::BuildSyntheticModel(s);
    ASSERT_TRUE(b.ok()) << b.status().message();
    ASSERT_TRUE(b->WriteFile(*dir_ + "/tiny.gguf").ok());
    PackOptions o;
    o.probe = false;
    ASSERT_TRUE(testing::PackFile(*dir_ + "/tiny.gguf", Pack(), o).ok());
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string Pack() { return *dir_ + "/tiny.strata"; }

  // Starts a server on the test pack (reference backend: the same numbers
  // whatever backends this build has), ready to serve.
  void Start(std::vector<std::string> extra = {}, std::vector<std::pair<std::string, std::string>> env = {},
             bool wait_ready = true) {
    std::vector<std::string> args = {Pack(), "--serve", "--reference", "-t", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string error;
    ASSERT_TRUE(server_.Start(args, env, &error)) << error;
    if (wait_ready) {
      ASSERT_TRUE(server_.WaitReady(kLongMs)) << server_.Log();
    }
  }
  httplib::Client Client() {
    httplib::Client c("127.0.0.1", server_.port());
    c.set_read_timeout(kLongMs / 1000, 0);
    // httplib's default write timeout is 5 s: an 8 MiB body to a server
    // under Wine on a busy machine took longer (seen once, 2026-12-05).
    c.set_write_timeout(kLongMs / 1000, 0);
    return c;
  }
  httplib::Result Post(const std::string& path, const std::string& body, const httplib::Headers& h = {}) {
    return Client().Post(path.c_str(), h, body, "application/json");
  }
  json Metrics() {
    auto r = Client().Get("/metrics");
    json m = json::object();
    if (!r) return m;
    std::regex line(R"(^strata:(\w+) (\S+)$)");
    std::istringstream in(r->body);
    std::string l;
    while (std::getline(in, l)) {
      std::smatch sm;
      if (std::regex_match(l, sm, line)) m[sm[1].str()] = std::stod(sm[2].str());
    }
    return m;
  }
  // Waits until a metric reaches a value.
  bool WaitMetric(const std::string& name, double value, int timeout_ms = kLongMs) {
    for (int waited = 0; waited < timeout_ms; waited += 20) {
      json m = Metrics();
      if (m.contains(name) && m[name].get<double>() == value) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // A copy of the test pack whose chat template is tests/chat/templates/NAME.jinja.
  static std::string PackWithTemplate(const std::string& name) {
    std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/tests/chat/templates/" + name + ".jinja");
    const std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_FALSE(source.empty()) << name;
    const std::string pack = *dir_ + "/" + name + ".strata";
    EXPECT_TRUE(testing::RewriteManifest(Pack(), pack, [&](fb::ManifestT& m) { m.tokenizer->chat_template = source; })
                    .ok());
    return pack;
  }
  // Starts `server` on `pack` (reference backend, one thread), ready to serve.
  static void StartOn(ServerProcess& server, const std::string& pack, std::vector<std::string> extra = {}) {
    std::string error;
    std::vector<std::string> args = {pack, "--serve", "--reference", "-t", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_TRUE(server.Start(args, {}, &error)) << error;
    ASSERT_TRUE(server.WaitReady(kLongMs)) << server.Log();
  }
  static httplib::Client ClientOf(const ServerProcess& server) {
    httplib::Client c("127.0.0.1", server.port());
    c.set_read_timeout(kLongMs / 1000, 0);
    return c;
  }

  static std::string* dir_;
  ServerProcess server_;
};
std::string* ServeHttpTest::dir_ = nullptr;

std::string ChatBody(const std::string& content, const std::string& extra = "") {
  json j = {{"messages", json::array({{{"role", "user"}, {"content", content}}})}};
  std::string s = j.dump();
  if (!extra.empty()) s = s.substr(0, s.size() - 1) + "," + extra + "}";
  return s;
}

// The SSE events of a response body ("data: ..." payloads, in order).
std::vector<std::string> Events(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    out.push_back(body.substr(at + 6, end - at - 6));
    at = end + 2;
  }
  return out;
}

TEST_F(ServeHttpTest, HealthSays503WhileLoadingThen200) {
  Start({"--test-load-delay-ms", "3000"}, {}, /*wait_ready=*/false);
  auto r = Client().Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  json e = json::parse(r->body);
  EXPECT_EQ(e["error"]["type"], "unavailable_error");
  EXPECT_EQ(e["error"]["message"], "Loading model");
  auto models = Client().Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 503);
  ASSERT_TRUE(server_.WaitReady(kLongMs)) << server_.Log();
  r = Client().Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body), json({{"status", "ok"}}));
  EXPECT_EQ(server_.Log().find("no chat template"), std::string::npos);  // the pack has a ChatML template
}

TEST_F(ServeHttpTest, EveryBadRequestGetsAnOpenAiErrorAndTheServerCarriesOn) {
  Start({"-c", "64", "--max-body", "4096"});
  struct Case {
    std::string path, body;
    int status;
    std::string message;  // part of error.message
  };
  const std::string big_prompt = ChatBody(std::string(200, 'a'));
  const std::vector<Case> cases = {
      {"/v1/chat/completions", "{", 400, "not valid JSON"},
      {"/v1/chat/completions", "", 400, "empty"},
      {"/v1/chat/completions", "\"just a string\"", 400, "must be a JSON object"},
      {"/v1/chat/completions", "{\"messages\": 1e999}", 400, "number overflow"},
      {"/tokenize", "{\"content\": 1e999}", 400, "number overflow"},
      {"/v1/chat/completions", std::string(1000, '[') + std::string(1000, ']'), 400, "nests deeper"},
      {"/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}", 400,
       "not valid JSON"},
      {"/v1/chat/completions", R"({"messages":[]})", 400, "'messages' is empty"},
      {"/v1/chat/completions", R"({"messages":[{"role":"user","content":7}]})", 400, "messages[0].content"},
      {"/v1/chat/completions", R"({"messages":[{"role":"robot","content":"x"}]})", 400, "\"robot\""},
      {"/v1/chat/completions", ChatBody("x", R"("temperature":"warm")"), 400, "'temperature' must be a number"},
      {"/v1/chat/completions", ChatBody("x", R"("max_tokens":0)"), 400, "'max_tokens' must be in [1, "},
      {"/v1/chat/completions", ChatBody("x", R"("mirostat":2)"), 400, "'mirostat' is not supported"},
      {"/v1/chat/completions", ChatBody("x", R"("tools":[{"type":"function"}])"), 400, "'tools[0].function' is required"},
      {"/v1/chat/completions", big_prompt, 400, "but a slot's context holds 64"},
      {"/v1/completions", R"({"prompt":[1,99999]})", 400, "out of range"},
      {"/v1/completions", R"({"prompt":""})", 400, "'prompt' is empty"},
      {"/v1/completions", R"({"prompt":"x","stop":[1]})", 400, "'stop[0]' must be a string"},
      {"/tokenize", R"({"content":5})", 400, "'content' is required and must be a string"},
      {"/tokenize", R"({"content":"x","with_pieces":"yes"})", 400, "'with_pieces' must be true or false"},
      {"/detokenize", R"({"tokens":[1,-2]})", 400, "'tokens[1]' is not a token id"},
      {"/detokenize", R"({"tokens":"1 2"})", 400, "'tokens' is required"},
      {"/v1/chat/completions", std::string(5000, ' ') + "{}", 413, "larger than this server accepts"},
  };
  for (const Case& c : cases) {
    auto r = Post(c.path, c.body);
    ASSERT_TRUE(r) << c.path << " " << c.body.substr(0, 80);
    EXPECT_EQ(r->status, c.status) << c.body.substr(0, 80) << " -> " << r->body;
    json e = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(e.is_object() && e.contains("error")) << r->body;
    EXPECT_TRUE(e["error"]["message"].is_string());
    EXPECT_TRUE(e["error"]["type"].is_string());
    EXPECT_TRUE(e["error"].contains("param"));
    EXPECT_TRUE(e["error"].contains("code"));
    EXPECT_NE(e["error"]["message"].get<std::string>().find(c.message), std::string::npos)
        << c.body.substr(0, 80) << " -> " << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  }
  // Unknown endpoints and methods.
  auto nf = Client().Get("/v1/chat/completion");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  EXPECT_NE(json::parse(nf->body)["error"]["message"].get<std::string>().find("GET /v1/chat/completion"),
            std::string::npos);
  auto wrong_method = Client().Get("/v1/chat/completions");
  ASSERT_TRUE(wrong_method);
  EXPECT_EQ(wrong_method->status, 405);
  EXPECT_EQ(wrong_method->get_header_value("Allow"), "POST");
  EXPECT_NE(json::parse(wrong_method->body)["error"]["message"].get<std::string>().find("takes POST, not GET"),
            std::string::npos);
  // Garbage that is not HTTP at all.
  std::string raw = testing::RawHttp(server_.port(), "\x01\x02 nonsense\r\n\r\n", 2000);
  EXPECT_EQ(raw.rfind("HTTP/1.1 400", 0), 0u) << raw;
  // Still serving, and the server logged each refusal on one line.
  auto ok = Post("/v1/chat/completions", ChatBody("hello", R"("max_tokens":3)"));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_TRUE(server_.WaitForLog("strata serve: 400 /v1/chat/completions: 'messages' is empty"));
}

TEST_F(ServeHttpTest, MalformedRequestsDoNotDisturbConcurrentOnes) {
  Start({"--parallel", "3"});
  const std::string body = ChatBody("The same question", R"("max_tokens":24,"temperature":0)");
  auto first = Post("/v1/chat/completions", body);
  ASSERT_TRUE(first && first->status == 200);
  const std::string expected = json::parse(first->body)["choices"][0]["message"]["content"];
  std::atomic<int> good{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 4; ++i) {
        auto r = Post("/v1/chat/completions", body);
        if (r && r->status == 200 && json::parse(r->body)["choices"][0]["message"]["content"] == expected) ++good;
        else ++wrong;
      }
    });
  threads.emplace_back([&] {
    const char* junk[] = {"{", "[[[[", "{\"messages\":[{\"role\":\"user\",\"content\":\"\\ud800\"}]}",
                          "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":-5}", "null"};
    for (int i = 0; i < 40; ++i) Post("/v1/chat/completions", junk[i % 5]);
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 12);
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ServeHttpTest, StreamingFollowsTheOpenAiWireFormat) {
  Start();
  auto r = Post("/v1/chat/completions",
                ChatBody("hi", R"("max_tokens":5,"temperature":0,"stream":true,"stream_options":{"include_usage":true})"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  std::vector<std::string> ev = Events(r->body);
  ASSERT_GE(ev.size(), 4u) << r->body;
  EXPECT_EQ(ev.back(), "[DONE]");
  std::vector<json> chunks;
  for (size_t i = 0; i + 1 < ev.size(); ++i) chunks.push_back(json::parse(ev[i]));
  // First chunk: the role, no content.
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(chunks[0]["choices"][0]["delta"]["content"].is_null());
  const std::string id = chunks[0]["id"];
  EXPECT_EQ(id.rfind("chatcmpl-", 0), 0u);
  int64_t content_chunks = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i]["id"], id);
    EXPECT_EQ(chunks[i]["object"], "chat.completion.chunk");
    EXPECT_TRUE(chunks[i].contains("usage"));  // null on every chunk but the last
    if (i > 0 && i + 2 < chunks.size()) {
      EXPECT_FALSE(chunks[i]["choices"][0]["delta"].contains("role"));
      EXPECT_TRUE(chunks[i]["choices"][0]["finish_reason"].is_null());
      ++content_chunks;
    }
  }
  // The finish chunk, then the usage chunk with no choices.
  const json& finish = chunks[chunks.size() - 2];
  EXPECT_EQ(finish["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(finish["choices"][0]["delta"].contains("content"));
  const json& usage = chunks.back();
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
  EXPECT_GT(usage["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_EQ(usage["usage"]["total_tokens"],
            usage["usage"]["prompt_tokens"].get<int>() + usage["usage"]["completion_tokens"].get<int>());
  EXPECT_GE(content_chunks, 1);

  // Without include_usage there is no usage chunk and no usage field.
  r = Post("/v1/completions", R"({"prompt":"Once","max_tokens":3,"stream":true,"ignore_eos":true})");
  ASSERT_TRUE(r);
  ev = Events(r->body);
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev.back(), "[DONE]");
  json last = json::parse(ev[ev.size() - 2]);
  EXPECT_EQ(last["object"], "text_completion");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(last.contains("usage"));
}

TEST_F(ServeHttpTest, AnApiKeyGuardsEverythingButHealthAndThePage) {
  Start({"--api-key", "s3cret"});
  auto c = Client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  for (const char* path : {"/v1/models", "/metrics"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << path;
    json e = json::parse(r->body);
    EXPECT_EQ(e["error"]["type"], "authentication_error");
    EXPECT_EQ(e["error"]["code"], "invalid_api_key");
  }
  for (const char* path : {"/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize"}) {
    auto r = Post(path, "{}");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << path;
  }
  auto wrong = c.Get("/v1/models", {{"Authorization", "Bearer s3cre"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto bearer = c.Get("/v1/models", {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(bearer);
  EXPECT_EQ(bearer->status, 200);
  auto x_api_key = c.Get("/v1/models", {{"X-Api-Key", "s3cret"}});
  ASSERT_TRUE(x_api_key);
  EXPECT_EQ(x_api_key->status, 200);
  auto chat = Post("/v1/chat/completions", ChatBody("x", R"("max_tokens":2)"), {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 200);
}

TEST_F(ServeHttpTest, CorsHeadersOnlyWhenAsked) {
  Start();
  auto plain = Client().Get("/health", {{"Origin", "http://example.test"}});
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->has_header("Access-Control-Allow-Origin"));
  server_.Terminate();
  ASSERT_EQ(server_.WaitExit(kLongMs), 0);

  ServerProcess cors;
  std::string error;
  ASSERT_TRUE(cors.Start({Pack(), "--serve", "--reference", "--cors-origin", "http://example.test", "--api-key", "k"},
                         {}, &error))
      << error;
  ASSERT_TRUE(cors.WaitReady(kLongMs));
  httplib::Client c("127.0.0.1", cors.port());
  // A preflight needs no key.
  auto pre = c.Options("/v1/chat/completions", {{"Origin", "http://example.test"},
                                                {"Access-Control-Request-Method", "POST"},
                                                {"Access-Control-Request-Headers", "authorization, content-type"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "http://example.test");
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization"), std::string::npos);
  auto get = c.Get("/v1/models", {{"Origin", "http://example.test"}, {"Authorization", "Bearer k"}});
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(get->get_header_value("Access-Control-Allow-Origin"), "http://example.test");
}

TEST_F(ServeHttpTest, ModelsTokenizeDetokenizeMetricsAndThePage) {
  Start({"--parallel", "2", "-c", "128"});
  auto c = Client();
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  json m = json::parse(models->body);
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "tiny");
  EXPECT_EQ(m["data"][0]["object"], "model");
  EXPECT_EQ(m["data"][0]["meta"]["arch"], "qwen35moe");
  EXPECT_EQ(m["data"][0]["meta"]["n_ctx"], 128);
  EXPECT_EQ(m["data"][0]["meta"]["parallel"], 2);

  auto tok = Post("/tokenize", R"({"content":"Hello <|im_end|> world"})");
  ASSERT_TRUE(tok);
  json ids = json::parse(tok->body)["tokens"];
  ASSERT_TRUE(ids.is_array());
  auto plain = Post("/tokenize", R"({"content":"Hello <|im_end|> world","parse_special":false,"with_pieces":true})");
  ASSERT_TRUE(plain);
  json pieces = json::parse(plain->body)["tokens"];
  EXPECT_GT(pieces.size(), ids.size());  // the special token stays text when not parsed
  EXPECT_TRUE(pieces[0].contains("piece"));
  auto detok = Post("/detokenize", json({{"tokens", ids}}).dump());
  ASSERT_TRUE(detok);
  EXPECT_EQ(json::parse(detok->body)["content"], "Hello  world");  // control tokens decode to nothing

  // ignore_eos: a sampled end-of-text token would stop it early and the count below would be by chance.
  auto done = Post("/v1/completions", R"({"prompt":"abc","max_tokens":4,"ignore_eos":true})");
  ASSERT_TRUE(done);
  ASSERT_EQ(done->status, 200);
  EXPECT_EQ(json::parse(done->body)["usage"]["completion_tokens"], 4);
  auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  EXPECT_NE(metrics->body.find("# TYPE strata:prompt_tokens_total counter"), std::string::npos);
  json mm = Metrics();
  EXPECT_EQ(mm["tokens_predicted_total"], 4.0);
  EXPECT_EQ(mm["requests_finished_total"], 1.0);
  EXPECT_EQ(mm["requests_processing"], 0.0);
  EXPECT_EQ(mm["n_slots"], 2.0);
  EXPECT_GT(mm["kv_cache_usage_ratio"].get<double>(), 0.0);
  for (const char* name : {"prompt_tokens_seconds", "predicted_tokens_seconds", "requests_deferred",
                           "kv_cache_tokens", "n_decode_total", "prompt_tokens_reused_total"})
    EXPECT_TRUE(mm.contains(name)) << name;

  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'none'"), std::string::npos);
  EXPECT_NE(page->body.find("<textarea id=\"input\""), std::string::npos);
  EXPECT_EQ(page->body.find("http://"), std::string::npos);  // no external assets
  EXPECT_EQ(page->body.find("https://"), std::string::npos);
}

TEST_F(ServeHttpTest, AFollowUpTurnReusesTheSlotAndTheLogSaysSo) {
  Start({"--parallel", "1"});
  json first = {{"messages", {{{"role", "user"}, {"content", "Tell me something."}}}}, {"max_tokens", 6},
                {"temperature", 0}};
  auto a = Post("/v1/chat/completions", first.dump());
  ASSERT_TRUE(a && a->status == 200);
  json ja = json::parse(a->body);
  EXPECT_EQ(ja["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  json second = first;
  second["messages"].push_back({{"role", "assistant"}, {"content", ja["choices"][0]["message"]["content"]}});
  second["messages"].push_back({{"role", "user"}, {"content", "And more?"}});
  auto b = Post("/v1/chat/completions", second.dump());
  ASSERT_TRUE(b && b->status == 200);
  json jb = json::parse(b->body);
  const int cached = jb["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GE(cached, ja["usage"]["prompt_tokens"].get<int>() - 1);
  EXPECT_TRUE(server_.WaitForLog(StrFormat("prompt %d tokens = %d reused + %d read",
                                           jb["usage"]["prompt_tokens"].get<int>(), cached,
                                           jb["usage"]["prompt_tokens"].get<int>() - cached)))
      << server_.Log();
}

TEST_F(ServeHttpTest, MaxTokensBeyondTheContextIsClampedAndSeedMinusOneIsRandom) {
  Start({"-c", "64"});
  auto r = Post("/v1/completions", R"({"prompt":"hi","max_tokens":1000,"ignore_eos":true})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  // The slot's 64 positions hold the prompt and all answer tokens but the
  // last, which is sampled from the last position and needs none.
  EXPECT_EQ(j["usage"]["total_tokens"].get<int>(), 65) << r->body;
  auto text = [&](const std::string& seed) {
    auto a = Post("/v1/completions", R"({"prompt":"hi","max_tokens":12,"temperature":1.5,"top_k":0,"top_p":1,)"
                                     R"("min_p":0,"ignore_eos":true,"seed":)" + seed + "}");
    EXPECT_TRUE(a && a->status == 200);
    return a ? json::parse(a->body)["choices"][0]["text"].get<std::string>() : std::string();
  };
  EXPECT_EQ(text("7"), text("7"));
  EXPECT_NE(text("-1"), text("-1"));  // 12 tokens at temperature 1.5: equal only by a vanishing chance
}

TEST_F(ServeHttpTest, AFullQueueAnswers503) {
  Start({"--parallel", "1", "--queue", "0", "--test-step-delay-ms", "20"});
  std::thread slow([&] { Post("/v1/completions", R"({"prompt":"slow","max_tokens":100,"ignore_eos":true})"); });
  ASSERT_TRUE(WaitMetric("requests_processing", 1));
  auto r = Post("/v1/completions", R"({"prompt":"more","max_tokens":1})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  json e = json::parse(r->body);
  EXPECT_EQ(e["error"]["code"], "server_busy");
  EXPECT_NE(e["error"]["message"].get<std::string>().find("--queue 0"), std::string::npos);
  slow.join();
  EXPECT_EQ(Metrics()["requests_rejected_total"], 1.0);
}

TEST_F(ServeHttpTest, AClientThatDisconnectsFreesItsSlotAtOnce) {
  // 20 ms a step: 200 tokens would take 4 s; the slot must be free well before.
  Start({"--parallel", "1", "--test-step-delay-ms", "20"});
  for (bool stream : {true, false}) {
    // ignore_eos: a random-weights model may sample end-of-text early, which
    // would finish the request before the disconnect is noticed.
    json body = {{"prompt", "a long answer"}, {"max_tokens", 200}, {"stream", stream}, {"ignore_eos", true}};
    const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                            "Content-Length: " + std::to_string(body.dump().size()) + "\r\n\r\n" + body.dump();
    const double cancelled_before = Metrics()["requests_cancelled_total"].get<double>();
    // Streaming: hang up after the first bytes; not streaming: after 100 ms of waiting.
    auto t0 = std::chrono::steady_clock::now();
    std::string got = testing::RawHttp(server_.port(), req, stream ? kLongMs : 100, stream ? 1 : 0);
    if (stream) {
      EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
    }
    ASSERT_TRUE(WaitMetric("requests_cancelled_total", cancelled_before + 1, 3000))
        << "stream=" << stream << "\n" << server_.Log();
    EXPECT_EQ(Metrics()["requests_processing"], 0.0);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(3500));
  }
  // The slot serves the next request.
  auto r = Post("/v1/completions", R"({"prompt":"next","max_tokens":2})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(server_.WaitForLog("cancelled"));
}

TEST_F(ServeHttpTest, SigtermFinishesRunningRequestsRefusesNewOnesAndExitsZero) {
  Start({"--parallel", "2", "--test-step-delay-ms", "20"});
  std::string body;
  std::thread running([&] {
    auto r = Post("/v1/chat/completions", ChatBody("go", R"("max_tokens":40,"stream":true,"ignore_eos":true)"));
    if (r) body = r->body;
  });
  ASSERT_TRUE(WaitMetric("requests_processing", 1));
  server_.Terminate();
  ASSERT_TRUE(server_.WaitForLog("strata serve: stopping"));
  // A request after SIGTERM is never served: a 503 when its connection was
  // accepted before the listener closed (the close is posted to the I/O
  // thread), else a refused connection, or one closed unanswered as idle:
  // the client then fails reading the answer, or still writing the request
  // (Windows resets a socket closed with unread bytes: seen under Wine).
  auto late = Post("/v1/completions", R"({"prompt":"late","max_tokens":1})");
  if (late) {
    EXPECT_EQ(late->status, 503) << late->body;
  } else {
    EXPECT_TRUE(late.error() == httplib::Error::Connection || late.error() == httplib::Error::Read ||
                late.error() == httplib::Error::Write)
        << httplib::to_string(late.error());
  }
  running.join();
  std::vector<std::string> ev = Events(body);
  ASSERT_GE(ev.size(), 3u) << body;
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_EQ(json::parse(ev[ev.size() - 2])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(server_.WaitExit(kLongMs), 0) << server_.Log();
  EXPECT_NE(server_.Log().find("strata serve: stopped:"), std::string::npos);
}

TEST_F(ServeHttpTest, ASecondSigintCancelsWhatRunsAndStillExitsZero) {
  Start({"--parallel", "1", "--test-step-delay-ms", "50"});
  std::string body;
  std::thread running([&] {
    auto r = Post("/v1/completions", R"({"prompt":"endless","max_tokens":250,"stream":true,"ignore_eos":true})");
    if (r) body = r->body;
  });
  ASSERT_TRUE(WaitMetric("requests_processing", 1));
  server_.Interrupt();
  ASSERT_TRUE(server_.WaitForLog("strata serve: stopping"));
  server_.Interrupt();
  EXPECT_EQ(server_.WaitExit(5000), 0) << server_.Log();  // 250 x 50 ms would be 12.5 s
  running.join();
  std::vector<std::string> ev = Events(body);
  ASSERT_FALSE(ev.empty()) << body;
  EXPECT_NE(ev.back().find("shutting down"), std::string::npos) << ev.back();
}

TEST_F(ServeHttpTest, ThePacksOwnJinjaTemplateRendersChatsAndItsRefusalsAre400s) {
  // Gemma 2's template (tests/chat/templates): its own turn markers, and it refuses system messages.
  ServerProcess server;
  ASSERT_NO_FATAL_FAILURE(StartOn(server, PackWithTemplate("google-gemma-2-2b-it")));
  httplib::Client c = ClientOf(server);
  auto ok = c.Post("/v1/chat/completions", ChatBody("Hello", R"("max_tokens":2)"), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  // The prompt is the template's: "<bos>"? + "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n".
  auto tok = c.Post("/tokenize", R"({"content":"<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n"})",
                    "application/json");
  ASSERT_TRUE(tok);
  const size_t expected = json::parse(tok->body)["tokens"].size();
  const int prompt_tokens = json::parse(ok->body)["usage"]["prompt_tokens"].get<int>();
  EXPECT_GE(prompt_tokens, static_cast<int>(expected));      // the BOS text is part of the template
  EXPECT_LE(prompt_tokens, static_cast<int>(expected) + 3);
  json sys = {{"messages", json::array({{{"role", "system"}, {"content", "x"}}, {{"role", "user"}, {"content", "y"}}})}};
  auto refused = c.Post("/v1/chat/completions", sys.dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_NE(refused->body.find("the chat template refused the conversation: System role not supported"),
            std::string::npos)
      << refused->body;
  EXPECT_NE(refused->body.find("template_error"), std::string::npos);
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_NE(models->body.find("the pack's (Jinja)"), std::string::npos) << models->body;
  server.Terminate();
  EXPECT_EQ(server.WaitExit(kLongMs), 0);
}

TEST_F(ServeHttpTest, ThinkingGoesToReasoningContentAndEnableThinkingIsHonoured) {
  // Qwen3.5's template opens <think> at the end of the generation prompt unless enable_thinking is false.
  ServerProcess server;
  ASSERT_NO_FATAL_FAILURE(StartOn(server, PackWithTemplate("Qwen3.5-4B")));
  httplib::Client c = ClientOf(server);
  // Thinking on (the default): a random model never closes the block, so all of its answer is reasoning.
  const std::string extra = R"("max_tokens":8,"ignore_eos":true,"temperature":0)";
  auto r = c.Post("/v1/chat/completions", ChatBody("Hi", extra), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json m = json::parse(r->body)["choices"][0]["message"];
  EXPECT_FALSE(m["reasoning_content"].get<std::string>().empty()) << r->body;
  EXPECT_EQ(m["content"], "");
  // Streamed: the same text arrives as reasoning_content deltas only.
  auto st = c.Post("/v1/chat/completions", ChatBody("Hi", extra + R"(,"stream":true)"), "application/json");
  ASSERT_TRUE(st);
  std::string streamed_reasoning;
  for (const std::string& e : Events(st->body)) {
    if (e == "[DONE]") continue;
    json d = json::parse(e)["choices"][0]["delta"];
    EXPECT_FALSE(d.contains("content") && d["content"].is_string() && !d["content"].get<std::string>().empty()) << e;
    if (d.contains("reasoning_content")) streamed_reasoning += d["reasoning_content"].get<std::string>();
  }
  EXPECT_EQ(streamed_reasoning, m["reasoning_content"].get<std::string>());
  // enable_thinking false: the template closes the block itself; the answer is content.
  auto off = c.Post("/v1/chat/completions",
                    ChatBody("Hi", extra + R"(,"chat_template_kwargs":{"enable_thinking":false})"), "application/json");
  ASSERT_TRUE(off);
  ASSERT_EQ(off->status, 200) << off->body;
  json mo = json::parse(off->body)["choices"][0]["message"];
  EXPECT_FALSE(mo.contains("reasoning_content")) << off->body;
  EXPECT_FALSE(mo["content"].get<std::string>().empty()) << off->body;
  EXPECT_GT(json::parse(off->body)["usage"]["prompt_tokens"].get<int>(),
            json::parse(r->body)["usage"]["prompt_tokens"].get<int>());  // "\n\n</think>\n\n" more
  // reasoning_format none: thinking stays in content.
  auto raw = c.Post("/v1/chat/completions", ChatBody("Hi", extra + R"(,"reasoning_format":"none")"), "application/json");
  ASSERT_TRUE(raw);
  json mr = json::parse(raw->body)["choices"][0]["message"];
  EXPECT_FALSE(mr.contains("reasoning_content"));
  EXPECT_FALSE(mr["content"].get<std::string>().empty());
  server.Terminate();
  EXPECT_EQ(server.WaitExit(kLongMs), 0);
}

TEST_F(ServeHttpTest, ToolsReachTheTemplateAndToolHistoryRenders) {
  ServerProcess server;
  ASSERT_NO_FATAL_FAILURE(StartOn(server, PackWithTemplate("Qwen-Qwen3-0.6B")));
  httplib::Client c = ClientOf(server);
  const json tools = json::parse(R"([{"type":"function","function":{"name":"get_weather","description":"Weather now",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])");
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}}})},
               {"max_tokens", 2}, {"tools", tools}};
  // The template writes the tool list and its instructions into the prompt: far more than the
  // tiny model's 256 positions (its vocabulary is nearly one token per byte), so the size shows.
  auto with = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(with);
  ASSERT_EQ(with->status, 400) << with->body;
  EXPECT_NE(with->body.find("context_length_exceeded"), std::string::npos) << with->body;
  std::smatch sm;
  const std::string message = json::parse(with->body)["error"]["message"].get<std::string>();
  ASSERT_TRUE(std::regex_search(message, sm, std::regex("the prompt is (\\d+) tokens"))) << message;
  EXPECT_GT(std::stoi(sm[1].str()), 500) << message;
  body.erase("tools");
  auto without = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(without);
  ASSERT_EQ(without->status, 200) << without->body;
  body["tools"] = tools;
  body["tool_choice"] = "none";  // none: the template gets no tools
  auto none = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(none);
  ASSERT_EQ(none->status, 200) << none->body;
  EXPECT_EQ(json::parse(none->body)["usage"]["prompt_tokens"], json::parse(without->body)["usage"]["prompt_tokens"]);
  // A round trip's history: the call and its result render (the template's <tool_response> turn).
  body = json::parse(R"({"max_tokens":2,"messages":[
      {"role":"user","content":"Weather in Oslo?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
      {"role":"tool","tool_call_id":"call_a","content":"-3C and snow"}]})");
  auto history = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(history);
  EXPECT_EQ(history->status, 200) << history->body;
  EXPECT_TRUE(server.WaitForLog("strata serve: request"));
  server.Terminate();
  EXPECT_EQ(server.WaitExit(kLongMs), 0);
  // A template without a tool-call format Strata reads, and without a system
  // role (Gemma's raises on one): the generic format, its description in the
  // first user turn, the call a constrained JSON answer.
  ServerProcess g;
  const std::string gemma = *dir_ + "/gemma-2048.strata";  // room for the tools' description
  ASSERT_TRUE(testing::RewriteManifest(PackWithTemplate("google-gemma-2-2b-it"), gemma,
                                       [](fb::ManifestT& pm) { pm.hparams->n_ctx_train = 2048; })
                  .ok());
  ASSERT_NO_FATAL_FAILURE(StartOn(g, gemma, {"-c", "2048"}));
  httplib::Client gc = ClientOf(g);
  json gb = {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"tools", tools},
             {"tool_choice", "required"}, {"max_tokens", 120}};
  auto called = gc.Post("/v1/chat/completions", gb.dump(), "application/json");
  ASSERT_TRUE(called);
  ASSERT_EQ(called->status, 200) << called->body;
  json gm = json::parse(called->body)["choices"][0];
  if (gm["finish_reason"] == "tool_calls") {
    EXPECT_EQ(gm["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  } else {
    EXPECT_EQ(gm["finish_reason"], "length") << called->body;
  }
  auto shown = gc.Post("/apply-template", gb.dump(), "application/json");
  ASSERT_TRUE(shown);
  ASSERT_EQ(shown->status, 200) << shown->body;
  const std::string gp = json::parse(shown->body)["prompt"].get<std::string>();
  EXPECT_NE(gp.find("<start_of_turn>user\nYou can call these tools:"), std::string::npos) << gp;
  g.Terminate();
  EXPECT_EQ(g.WaitExit(kLongMs), 0);
}

// Tools with any model (llama-server's generic format): a template without
// tool calls (here none: ChatML) gets the tools described in its system
// message and answers with one constrained JSON object. A required call's
// arguments follow the tool's schema; the call and its result render into
// the next prompt; auto may answer in text.
TEST_F(ServeHttpTest, ToolsWorkWithAModelWhoseTemplateHasNoToolCalls) {
  const std::string pack = *dir_ + "/tiny-2048.strata";  // room for the tools' description
  ASSERT_TRUE(
      testing::RewriteManifest(Pack(), pack, [](fb::ManifestT& pm) { pm.hparams->n_ctx_train = 2048; }).ok());
  ASSERT_NO_FATAL_FAILURE(StartOn(server_, pack, {"-c", "2048"}));
  const json tools = json::parse(R"([{"type":"function","function":{"name":"get_weather","description":"Weather now",
      "parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":12},
      "days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"]}}},
      {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}])");
  auto ask = [&](const json& messages, const json& choice, int max_tokens) {
    // One call per answer: the answer ends with it (a random model would go on calling until max_tokens).
    json body = {{"messages", messages}, {"tools", tools}, {"tool_choice", choice}, {"max_tokens", max_tokens},
                 {"seed", 3}, {"parallel_tool_calls", false}};
    auto r = Post("/v1/chat/completions", body.dump());
    EXPECT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body)["choices"][0];
  };
  const json user = json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}}});
  for (int attempt = 0; attempt < 3; ++attempt) {  // a random model may run out of tokens inside a string
    json c = ask(user, "required", 200);
    if (c["finish_reason"] == "length") continue;
    ASSERT_EQ(c["finish_reason"], "tool_calls") << c.dump();
    const json& call = c["message"]["tool_calls"][0];
    const std::string name = call["function"]["name"].get<std::string>();
    EXPECT_TRUE(name == "get_weather" || name == "get_time") << c.dump();
    EXPECT_TRUE(json::parse(call["function"]["arguments"].get<std::string>()).is_object()) << c.dump();
    break;
  }
  // Named: that function, with its arguments' schema.
  json named = ask(user, json::parse(R"({"type":"function","function":{"name":"get_weather"}})"), 200);
  if (named["finish_reason"] == "tool_calls") {
    const json& call = named["message"]["tool_calls"][0];
    EXPECT_EQ(call["function"]["name"], "get_weather");
    const json args = json::parse(call["function"]["arguments"].get<std::string>());
    ASSERT_TRUE(args.contains("city") && args["city"].is_string()) << args.dump();
    EXPECT_LE(args["city"].get<std::string>().size(), 12u * 4) << args.dump();
    ASSERT_TRUE(args.contains("days") && args["days"].is_number_integer()) << args.dump();
    EXPECT_GE(args["days"].get<int>(), 1);
    EXPECT_LE(args["days"].get<int>(), 7);
  } else {
    EXPECT_EQ(named["finish_reason"], "length") << named.dump();
  }
  // The round trip: the call and its result reach the next prompt as the generic format writes them.
  const json history = json::parse(R"([{"role":"user","content":"Weather in Oslo?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\",\"days\":1}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"-3C and snow"}])");
  auto shown = Post("/apply-template", json({{"messages", history}, {"tools", tools}}).dump());
  ASSERT_TRUE(shown);
  ASSERT_EQ(shown->status, 200) << shown->body;
  const std::string prompt = json::parse(shown->body)["prompt"].get<std::string>();
  EXPECT_NE(prompt.find("<|im_start|>system\nYou can call these tools:\n["), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("<|im_start|>assistant\n{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":"
                        "{\"city\":\"Oslo\",\"days\":1}}]}<|im_end|>"),
            std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("<|im_start|>user\n{\"tool_response\":{\"content\":\"-3C and snow\",\"tool_call_id\":"
                        "\"call_1\"}}<|im_end|>\n<|im_start|>assistant\n"),
            std::string::npos)
      << prompt;
  // The final answer (auto): a call or text, never the raw JSON when it finished.
  json final_answer = ask(history, "auto", 100);
  if (final_answer["finish_reason"] == "stop") {
    EXPECT_TRUE(final_answer["message"]["content"].is_string()) << final_answer.dump();
    EXPECT_EQ(final_answer["message"]["content"].get<std::string>().rfind("{\"response\"", 0), std::string::npos);
  } else if (final_answer["finish_reason"] == "tool_calls") {
    EXPECT_FALSE(final_answer["message"]["tool_calls"].empty());
  } else {
    EXPECT_EQ(final_answer["finish_reason"], "length") << final_answer.dump();
  }
  // A constraint of its own cannot be followed too.
  json both = {{"messages", user}, {"tools", tools}, {"response_format", {{"type", "json_object"}}}};
  auto refused = Post("/v1/chat/completions", both.dump());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400) << refused->body;
}

// A small template in the Hermes / Qwen3 tool-call style (<tool_call> JSON),
// short enough for the tiny model's 256 positions.
const char* kToolTemplate =
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n"
    "{%- if m.role == 'assistant' and m.tool_calls %}{% for tc in m.tool_calls %}<tool_call>\n"
    "{{ tc.function | tojson }}\n</tool_call>{% endfor %}"
    "{%- elif m.role == 'tool' %}<tool_response>{{ m.content }}</tool_response>"
    "{%- else %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
    "{%- if tools %}<|im_start|>system\ntools:{% for t in tools %} {{ t.function.name }}{% endfor %}<|im_end|>\n"
    "{% endif %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

// Whether `v` follows the schema of ConstrainedOutput's json_schema case.
bool FollowsPersonSchema(const json& v, std::string* why) {
  auto fail = [&](const std::string& w) { return *why = w, false; };
  if (!v.is_object()) return fail("not an object");
  for (const char* k : {"name", "age", "ok", "tags"})
    if (!v.contains(k)) return fail(std::string("missing ") + k);
  if (v.size() != 4) return fail("extra keys");
  if (!v["name"].is_string()) return fail("name is not a string");
  // maxLength counts characters (code points); the test's strings are ASCII or short.
  if (v["name"].get<std::string>().size() > 4 * 4) return fail("name too long");
  if (!v["age"].is_number_integer()) return fail("age is not an integer");
  if (!v["ok"].is_boolean()) return fail("ok is not a boolean");
  if (!v["tags"].is_array() || v["tags"].size() > 2) return fail("tags is not an array of at most 2");
  for (const json& t : v["tags"])
    if (t != "a" && t != "b") return fail("a tag outside the enum");
  return true;
}

TEST_F(ServeHttpTest, ConstrainedOutputAlwaysFollowsTheSchemaOrGrammar) {
  ASSERT_NO_FATAL_FAILURE(Start({"--parallel", "3"}));
  const json schema = json::parse(R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":4},"age":{"type":"integer"},"ok":{"type":"boolean"},
      "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":2}},
      "required":["name","age","ok","tags"],"additionalProperties":false})");
  // A random-weight model writes valid JSON of the schema only because sampling is constrained:
  // several seeds (one in the subset builds, tests/testing/test_matrix.h), three choices each,
  // sampled at temperature 1.
  const int seeds = testing::kMatrixSubset ? 1 : 3;
  int checked = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    json body = {{"messages", json::array({{{"role", "user"}, {"content", "A person, as JSON."}}})},
                 {"max_tokens", 200}, {"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0}, {"min_p", 0.0},
                 {"seed", seed}, {"n", 3},
                 {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"schema", schema}}}}}};
    auto r = Post("/v1/chat/completions", body.dump());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    json a = json::parse(r->body);
    ASSERT_EQ(a["choices"].size(), 3u);
    for (const json& c : a["choices"]) {
      EXPECT_EQ(c["finish_reason"], "stop") << c.dump();
      std::string text = c["message"]["content"].get<std::string>();
      json v = json::parse(text, nullptr, false);
      ASSERT_FALSE(v.is_discarded()) << "not JSON: " << text;
      std::string why;
      EXPECT_TRUE(FollowsPersonSchema(v, &why)) << why << ": " << text;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 * seeds);
  // llama-server's grammar parameter (GBNF).
  auto g = Post("/v1/chat/completions", ChatBody("Yes or no?", R"("grammar":"root ::= (\"yes\" | \"no\") \"!\"","temperature":1,"seed":5)"));
  ASSERT_TRUE(g);
  ASSERT_EQ(g->status, 200) << g->body;
  const std::string yn = json::parse(g->body)["choices"][0]["message"]["content"].get<std::string>();
  EXPECT_TRUE(yn == "yes!" || yn == "no!") << yn;
  // json_object: what it writes is a JSON object when it stops, and the
  // start of one when max_tokens cuts it (the grammar's matcher says which).
  auto json_object = grammar::Grammar::Parse(grammar::JsonObjectGbnf());
  ASSERT_TRUE(json_object.ok()) << json_object.status().message();
  for (int seed : {2, 3}) {
    auto o = Post("/v1/chat/completions",
                  ChatBody("JSON please", R"("response_format":{"type":"json_object"},"max_tokens":60,"seed":)" +
                                              std::to_string(seed)));
    ASSERT_TRUE(o);
    ASSERT_EQ(o->status, 200) << o->body;
    json oc = json::parse(o->body)["choices"][0];
    const std::string ot = oc["message"]["content"].get<std::string>();
    ASSERT_FALSE(ot.empty());
    EXPECT_EQ(ot[0], '{') << ot;
    grammar::Matcher m(*json_object);
    EXPECT_TRUE(m.Accept(ot)) << "not the start of a JSON object: " << ot;
    if (oc["finish_reason"] == "stop") {
      EXPECT_TRUE(m.CanEnd()) << ot;
      EXPECT_TRUE(json::parse(ot, nullptr, false).is_object()) << ot;
    } else {
      EXPECT_EQ(oc["finish_reason"], "length") << o->body;
      EXPECT_EQ(o->body.find("\"completion_tokens\":60") != std::string::npos, true) << o->body;
    }
  }
  // Streamed, the deltas add up to the constrained text too.
  auto st = Post("/v1/chat/completions", ChatBody("Yes or no?", R"("grammar":"root ::= \"maybe\"","stream":true)"));
  ASSERT_TRUE(st);
  std::string streamed;
  for (const std::string& e : Events(st->body)) {
    if (e == "[DONE]") continue;
    json d = json::parse(e)["choices"][0]["delta"];
    if (d.contains("content") && d["content"].is_string()) streamed += d["content"].get<std::string>();
  }
  EXPECT_EQ(streamed, "maybe");
  // Grammars and schemas that cannot be enforced are 400s that say why and where.
  auto bad = Post("/v1/chat/completions", ChatBody("x", R"("grammar":"root ::= item")"));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("'item' is used but never defined"), std::string::npos) << bad->body;
  EXPECT_NE(bad->body.find("invalid_grammar"), std::string::npos) << bad->body;
  // A grammar too ambiguous to follow ends its request with a 400 instead of stalling the server.
  json ambiguous = {{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}, {"max_tokens", 16},
                    {"grammar", "root ::= [a-z]" + std::string(40, '+')}};
  auto amb = Post("/v1/chat/completions", ambiguous.dump());
  ASSERT_TRUE(amb);
  EXPECT_EQ(amb->status, 400) << amb->body;
  EXPECT_NE(amb->body.find("too ambiguous"), std::string::npos) << amb->body;
  // One whose ambiguity lies deeper than the check walk on arrival (8 tokens:
  // bytes here) is found while answering; the answer ends with the error
  // (under a 200 if it had begun), and from then on the cached grammar is
  // refused on arrival: a repeat is a 400 before any prompt is read.
  json deep = ambiguous;
  deep["grammar"] = "root ::= \"abcdefghijklmnop\" [a-z]" + std::string(40, '+');
  deep["max_tokens"] = 40;
  deep["ignore_eos"] = true;  // the answer goes on past its first letters, where the grammar overflows
  auto first = Post("/v1/chat/completions", deep.dump());
  ASSERT_TRUE(first);
  EXPECT_NE(first->body.find("too ambiguous"), std::string::npos) << first->body;
  const double prompt_tokens = Metrics()["prompt_tokens_total"];
  auto repeat = Post("/v1/chat/completions", deep.dump());
  ASSERT_TRUE(repeat);
  EXPECT_EQ(Metrics()["prompt_tokens_total"], prompt_tokens);  // refused before its prompt was read
  EXPECT_EQ(repeat->status, 400) << repeat->body;
  EXPECT_NE(repeat->body.find("invalid_grammar"), std::string::npos) << repeat->body;
  auto after = Post("/v1/chat/completions", ChatBody("Yes or no?", R"("grammar":"root ::= \"ok\"")"));
  ASSERT_TRUE(after);
  EXPECT_EQ(json::parse(after->body)["choices"][0]["message"]["content"], "ok");
  auto unsupported = Post("/v1/chat/completions",
                          ChatBody("x", R"("response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"age":{"type":"number","minimum":0}}}}})"));
  ASSERT_TRUE(unsupported);
  EXPECT_EQ(unsupported->status, 400);
  EXPECT_NE(unsupported->body.find("minimum"), std::string::npos) << unsupported->body;
}

TEST_F(ServeHttpTest, ChoicesShareThePromptAndLogprobsAreReported) {
  ASSERT_NO_FATAL_FAILURE(Start({"--parallel", "3"}));
  // Greedy: three choices of one prompt must be identical, whether they read the
  // prompt or copied the cache of the choice that did.
  auto r = Post("/v1/chat/completions", ChatBody("Count with me", R"("n":3,"temperature":0,"max_tokens":12,"ignore_eos":true)"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json a = json::parse(r->body);
  ASSERT_EQ(a["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a["choices"][i]["index"], i);
    EXPECT_EQ(a["choices"][i]["message"]["content"], a["choices"][0]["message"]["content"]);
  }
  EXPECT_EQ(a["usage"]["completion_tokens"], 36);
  EXPECT_TRUE(server_.WaitForLog("reused + 0 read")) << server_.Log();  // the choices that copied the cache
  // Sampled: each choice draws its own.
  auto s = Post("/v1/chat/completions", ChatBody("Count with me", R"("n":3,"temperature":1.5,"top_k":0,"max_tokens":12,"ignore_eos":true,"seed":9)"));
  ASSERT_TRUE(s);
  json sa = json::parse(s->body);
  ASSERT_EQ(sa["choices"].size(), 3u);
  EXPECT_FALSE(sa["choices"][0]["message"]["content"] == sa["choices"][1]["message"]["content"] &&
               sa["choices"][1]["message"]["content"] == sa["choices"][2]["message"]["content"]);
  // Streamed choices carry their index.
  auto st = Post("/v1/chat/completions", ChatBody("Count", R"("n":2,"max_tokens":4,"ignore_eos":true,"stream":true)"));
  ASSERT_TRUE(st);
  std::set<int> indices;
  int finishes = 0;
  for (const std::string& e : Events(st->body)) {
    if (e == "[DONE]") continue;
    json c = json::parse(e)["choices"][0];
    indices.insert(c["index"].get<int>());
    if (!c["finish_reason"].is_null()) ++finishes;
  }
  EXPECT_EQ(indices, (std::set<int>{0, 1}));
  EXPECT_EQ(finishes, 2);

  // logprobs: one entry per token, the chosen one the most likely under greedy decoding.
  auto l = Post("/v1/chat/completions", ChatBody("Hi", R"("logprobs":true,"top_logprobs":3,"temperature":0,"max_tokens":5,"ignore_eos":true)"));
  ASSERT_TRUE(l);
  ASSERT_EQ(l->status, 200) << l->body;
  json lc = json::parse(l->body)["choices"][0];
  const json& content = lc["logprobs"]["content"];
  ASSERT_EQ(content.size(), 5u) << lc.dump();
  std::string joined;
  for (const json& e : content) {
    ASSERT_EQ(e["top_logprobs"].size(), 3u);
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    EXPECT_NEAR(e["logprob"].get<double>(), e["top_logprobs"][0]["logprob"].get<double>(), 1e-6);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
    EXPECT_GE(e["top_logprobs"][1]["logprob"].get<double>(), e["top_logprobs"][2]["logprob"].get<double>());
    for (const json& b : e["bytes"]) joined.push_back(static_cast<char>(b.get<int>()));
  }
  EXPECT_EQ(serve::SanitizeUtf8(joined), lc["message"]["content"].get<std::string>());  // the bytes are exact; text is UTF-8
  // The legacy completions form.
  auto lc2 = Post("/v1/completions", R"({"prompt":"Hi","logprobs":2,"max_tokens":4,"temperature":0,"ignore_eos":true})");
  ASSERT_TRUE(lc2);
  ASSERT_EQ(lc2->status, 200) << lc2->body;
  json clp = json::parse(lc2->body)["choices"][0]["logprobs"];
  EXPECT_EQ(clp["tokens"].size(), 4u);
  EXPECT_EQ(clp["token_logprobs"].size(), 4u);
  EXPECT_EQ(clp["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(clp["text_offset"][0], 0);
  // Without logprobs, none.
  auto none = Post("/v1/chat/completions", ChatBody("Hi", R"("max_tokens":2)"));
  ASSERT_TRUE(none);
  EXPECT_TRUE(json::parse(none->body)["choices"][0]["logprobs"].is_null());
}

// Completions with several prompts answer each one (n choices apiece, in
// OpenAI's order), each as it would be alone; echo puts the prompt first.
TEST_F(ServeHttpTest, CompletionsTakeSeveralPromptsAndEcho) {
  ASSERT_NO_FATAL_FAILURE(Start({"--parallel", "2"}));
  const std::string greedy = R"("temperature":0,"max_tokens":4,"ignore_eos":true)";
  auto text_of = [&](const std::string& body, size_t choice) {
    auto r = Post("/v1/completions", body);
    EXPECT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    const json j = json::parse(r->body);
    EXPECT_GT(j["choices"].size(), choice) << r->body;
    return j["choices"].size() > choice ? j["choices"][choice]["text"].get<std::string>() : std::string();
  };
  const std::string once = text_of(R"({"prompt":"Once",)" + greedy + "}", 0);
  const std::string twice = text_of(R"({"prompt":"Twice",)" + greedy + "}", 0);
  auto many = Post("/v1/completions", R"({"prompt":["Once","Twice"],"n":2,)" + greedy + "}");
  ASSERT_TRUE(many);
  ASSERT_EQ(many->status, 200) << many->body;
  const json mc = json::parse(many->body)["choices"];
  ASSERT_EQ(mc.size(), 4u) << many->body;
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(mc[i]["index"], i);
  EXPECT_EQ(mc[0]["text"], once);
  EXPECT_EQ(mc[1]["text"], once);
  EXPECT_EQ(mc[2]["text"], twice);
  EXPECT_EQ(mc[3]["text"], twice);
  EXPECT_EQ(json::parse(many->body)["usage"]["completion_tokens"], 16) << many->body;
  // echo: the prompt, then the answer; token ids echo as their text.
  EXPECT_EQ(text_of(R"({"prompt":"Once","echo":true,)" + greedy + "}", 0), "Once" + once);
  auto ids = Post("/tokenize", R"({"content":"Twice"})");
  ASSERT_TRUE(ids);
  const json id_list = json::parse(ids->body)["tokens"];
  EXPECT_EQ(text_of(R"({"prompt":)" + id_list.dump() + R"(,"echo":true,)" + greedy + "}", 0), "Twice" + twice);
  // Streamed: the prompt's chunk first.
  auto st = Post("/v1/completions", R"({"prompt":"Once","echo":true,"stream":true,)" + greedy + "}");
  ASSERT_TRUE(st);
  std::string joined, first;
  for (const std::string& e : Events(st->body)) {
    if (e == "[DONE]") continue;
    const std::string piece = json::parse(e)["choices"][0]["text"].get<std::string>();
    if (first.empty()) first = piece;
    joined += piece;
  }
  EXPECT_EQ(first, "Once");
  EXPECT_EQ(joined, "Once" + once);
}

// /infill (llama-server's, for editor plugins): the prompt is the
// repo-level FIM pattern with the vocabulary's FIM tokens (DeepSeek-Coder's
// here), the answer llama-server's own form, streamed without [DONE]; a line
// indented less than n_indent ends the answer; a model without FIM tokens is
// a 400.
TEST_F(ServeHttpTest, InfillWritesTheFimPromptAndHonoursNIndent) {
  const std::string vocab = testing::SharedFile("tokenizer/ggml-vocab-deepseek-coder.gguf");
  STRATA_REQUIRE_SHARED_FILE(vocab);
  const std::string gguf = *dir_ + "/coder.gguf", pack = *dir_ + "/coder.strata";
  auto made = testing::RunProgram("strata-make-gguf", {"--arch", "qwen3", "--tokenizer", vocab, "-o", gguf});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto packed = testing::RunProgram("strata-pack", {gguf, "-o", pack, "--no-probe"});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  ASSERT_NO_FATAL_FAILURE(StartOn(server_, pack));
  auto ids = [&](const std::string& text) {
    auto t = Post("/tokenize", json({{"content", text}, {"parse_special", false}}).dump());
    EXPECT_TRUE(t);
    return t ? json::parse(t->body)["tokens"].size() : 0u;
  };
  const std::string prefix = "def add(a, b):\n    ", suffix = "\n\nprint(add(1, 2))\n";
  const json body = {{"input_prefix", prefix}, {"input_suffix", suffix}, {"max_tokens", 6}, {"temperature", 0},
                     {"input_extra", {{{"filename", "util.py"}, {"text", "import os\n"}}}}};
  auto r = Post("/infill", body.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json a = json::parse(r->body);
  EXPECT_TRUE(a["content"].is_string());
  EXPECT_EQ(a["stop"], true);
  EXPECT_EQ(a["stop_type"], "limit");
  EXPECT_EQ(a["tokens_predicted"], 6);
  // No separator token: the extra file follows a snippet line; then BOS, the
  // FIM tokens around prefix and suffix.
  const size_t expected = ids("\n\n--- snippet ---\n\n") + ids("import os\n") + 1 + 1 + ids(prefix) + 1 + ids(suffix) + 1;
  EXPECT_EQ(a["tokens_evaluated"], expected) << r->body;
  // Streamed: the same text in chunks, the last with stop and the counts, no [DONE].
  json streamed_body = body;
  streamed_body["stream"] = true;
  auto st = Post("/infill", streamed_body.dump());
  ASSERT_TRUE(st);
  ASSERT_EQ(st->status, 200) << st->body;
  EXPECT_EQ(st->body.find("[DONE]"), std::string::npos) << st->body;
  std::string joined;
  json last;
  for (const std::string& e : Events(st->body)) {
    last = json::parse(e);
    joined += last["content"].get<std::string>();
  }
  EXPECT_EQ(last["stop"], true) << st->body;
  EXPECT_EQ(joined, a["content"]) << st->body;
  // n_indent 4: a newline forced at every step makes an empty line, indented
  // less than 4: the answer ends there (its newline kept), stop_type limit.
  auto nl = Post("/tokenize", R"({"content":"\n","parse_special":false})");
  ASSERT_TRUE(nl);
  const int newline = json::parse(nl->body)["tokens"][0].get<int>();
  json indent = body;
  indent["n_indent"] = 4;
  indent["max_tokens"] = 20;
  indent["logit_bias"] = {{std::to_string(newline), 100}};
  auto cut = Post("/infill", indent.dump());
  ASSERT_TRUE(cut);
  ASSERT_EQ(cut->status, 200) << cut->body;
  const json c = json::parse(cut->body);
  EXPECT_EQ(c["content"], "\n") << cut->body;
  EXPECT_EQ(c["stop_type"], "limit") << cut->body;
  EXPECT_LT(c["tokens_predicted"].get<int>(), 20) << cut->body;
  // Refusals name the field.
  for (const auto& [bad, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"input_suffix":"x"})", "input_prefix"},
           {R"({"input_prefix":"x","input_suffix":5})", "input_suffix"},
           {R"({"input_prefix":"x","input_suffix":"y","input_extra":[{"filename":"a"}]})", "input_extra[0].text"},
           {R"({"input_prefix":"x","input_suffix":"y","n_indent":-1})", "n_indent"},
           {R"({"input_prefix":"x","input_suffix":"y","n":2})", "n"}}) {
    auto e = Post("/infill", bad);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->status, 400) << bad;
    EXPECT_EQ(json::parse(e->body)["error"]["param"], field) << e->body;
  }
  server_.Terminate();
  EXPECT_EQ(server_.WaitExit(kLongMs), 0);
  // The random-weight test model has no FIM tokens.
  ASSERT_NO_FATAL_FAILURE(Start({}));
  auto none = Post("/infill", R"({"input_prefix":"x","input_suffix":"y"})");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 400);
  EXPECT_NE(none->body.find("no fill-in-the-middle tokens"), std::string::npos) << none->body;
}

// llama-server's read-only endpoints and id_slot: /props, /slots,
// /apply-template (the prompt a chat request would run), a request pinned to
// a slot runs there, and a slot past the server's count is a 400.
TEST_F(ServeHttpTest, PropsSlotsApplyTemplateAndIdSlot) {
  ASSERT_NO_FATAL_FAILURE(Start({"--parallel", "2"}));
  auto props = Client().Get("/props");
  ASSERT_TRUE(props);
  ASSERT_EQ(props->status, 200) << props->body;
  const json p = json::parse(props->body);
  EXPECT_EQ(p["total_slots"], 2);
  EXPECT_GT(p["default_generation_settings"]["n_ctx"].get<int>(), 0);
  EXPECT_TRUE(p["default_generation_settings"]["params"].contains("temperature")) << props->body;
  EXPECT_TRUE(p["chat_template"].is_string());
  auto slots = Client().Get("/slots");
  ASSERT_TRUE(slots);
  ASSERT_EQ(slots->status, 200) << slots->body;
  const json sl = json::parse(slots->body);
  ASSERT_EQ(sl.size(), 2u) << slots->body;
  EXPECT_EQ(sl[1]["id"], 1);
  EXPECT_EQ(sl[0]["is_processing"], false);
  auto applied = Post("/apply-template", json({{"messages", {{{"role", "user"}, {"content", "Hi there"}}}}}).dump());
  ASSERT_TRUE(applied);
  ASSERT_EQ(applied->status, 200) << applied->body;
  const std::string prompt = json::parse(applied->body)["prompt"].get<std::string>();
  EXPECT_NE(prompt.find("Hi there"), std::string::npos) << prompt;
  // The same text the chat endpoint runs: its prompt token count is the text's.
  auto tokens = Post("/tokenize", json({{"content", prompt}, {"add_special", true}}).dump());
  ASSERT_TRUE(tokens);
  auto chat = Post("/v1/chat/completions", ChatBody("Hi there", R"("max_tokens":1)"));
  ASSERT_TRUE(chat);
  EXPECT_EQ(json::parse(chat->body)["usage"]["prompt_tokens"], json::parse(tokens->body)["tokens"].size()) << chat->body;
  auto bad = Post("/apply-template", R"({"messages":"x"})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  // id_slot: the request runs in that slot; its cache is then that slot's.
  for (int slot : {1, 0, 1}) {
    auto r = Post("/v1/completions", R"({"prompt":"pinned","max_tokens":2,"id_slot":)" + std::to_string(slot) + "}");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(json::parse(r->body)["timings"]["slot"], slot) << r->body;
  }
  auto after = json::parse(Client().Get("/slots")->body);
  EXPECT_GT(after[1]["n_cached_tokens"].get<int>(), 0) << after.dump();
  auto past = Post("/v1/completions", R"({"prompt":"x","id_slot":2})");
  ASSERT_TRUE(past);
  EXPECT_EQ(past->status, 400);
  EXPECT_NE(past->body.find("'id_slot' is 2; this server has 2 slots (0..1)"), std::string::npos) << past->body;
  auto post_props = Post("/props", "{}");
  ASSERT_TRUE(post_props);
  EXPECT_EQ(post_props->status, 405);
}

// logit_bias bans and favours tokens (by id, and llama-server's text keys),
// penalty_last_n is taken, and n_probs reports the top N at each step.
TEST_F(ServeHttpTest, LogitBiasNProbsAndThePenaltyWindowAreHonoured) {
  ASSERT_NO_FATAL_FAILURE(Start({}));
  auto complete = [&](const std::string& extra) {
    auto r = Post("/v1/completions", R"({"prompt":"Once upon","max_tokens":3,"temperature":0,"ignore_eos":true)" +
                                         extra + "}");
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body, nullptr, false);
  };
  auto text_of = [&](int id) {
    auto d = Post("/detokenize", json({{"tokens", {id}}}).dump());
    EXPECT_TRUE(d);
    return d ? json::parse(d->body)["content"].get<std::string>() : std::string();
  };
  // Two tokens whose text reads back as that one token.
  std::vector<int> round_trip;
  for (int id = 3; id < 400 && round_trip.size() < 2; ++id) {
    const std::string text = text_of(id);
    if (text.empty()) continue;
    auto t = Post("/tokenize", json({{"content", text}, {"parse_special", false}}).dump());
    ASSERT_TRUE(t);
    if (json::parse(t->body)["tokens"] == json::array({id})) round_trip.push_back(id);
  }
  ASSERT_EQ(round_trip.size(), 2u);
  const int x = round_trip[0], y = round_trip[1];
  const std::string xs = std::to_string(x), ys = std::to_string(y);
  // Favoured: +100 on X (+99 on Y) makes every greedy step choose X.
  EXPECT_EQ(complete(R"(,"logit_bias":{")" + xs + R"(":100,")" + ys + R"(":99})")["choices"][0]["text"],
            text_of(x) + text_of(x) + text_of(x));
  // X banned, by id (llama-server's false) or by its text: Y, every step.
  const std::string yyy = text_of(y) + text_of(y) + text_of(y);
  EXPECT_EQ(complete(R"(,"logit_bias":[[)" + xs + ",100],[" + ys + ",99],[" + xs + ",false]]")["choices"][0]["text"], yyy);
  EXPECT_EQ(complete(R"(,"logit_bias":[[)" + xs + ",100],[" + ys + ",99],[" + json(text_of(x)).dump() + ",false]]")
                ["choices"][0]["text"],
            yyy);
  // OpenAI's -100 on X leaves X at 0: Y (+99) wins.
  EXPECT_EQ(complete(R"(,"logit_bias":{")" + xs + R"(":-100,")" + ys + R"(":99})")["choices"][0]["text"], yyy);
  // n_probs: the top 3 at each step (the chat form lists them by token: the
  // legacy form keys them by text, and byte pieces of one character share
  // one key); the penalty window is accepted with a penalty on.
  auto chat = Post("/v1/chat/completions",
                   ChatBody("Hi", R"("n_probs":3,"temperature":0,"max_tokens":3,"ignore_eos":true,)"
                                  R"("repeat_penalty":1.3,"penalty_last_n":2)"));
  ASSERT_TRUE(chat);
  ASSERT_EQ(chat->status, 200) << chat->body;
  const json content = json::parse(chat->body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 3u) << chat->body;
  for (const json& e : content) EXPECT_EQ(e["top_logprobs"].size(), 3u) << chat->body;
  const json legacy = complete(R"(,"n_probs":3)");
  const json& top0 = legacy["choices"][0]["logprobs"]["top_logprobs"][0];
  ASSERT_GE(top0.size(), 1u) << legacy.dump();
  // The chosen (greedy) token's logprob is the best of its step's alternatives.
  double best = -1e30;
  for (const auto& [k, v] : top0.items()) best = std::max(best, v.get<double>());
  EXPECT_NEAR(best, legacy["choices"][0]["logprobs"]["token_logprobs"][0].get<double>(), 1e-6) << legacy.dump();
}

TEST_F(ServeHttpTest, RequiredAndNamedToolChoicesAreConstrainedToTheToolsSchemas) {
  const std::string pack = *dir_ + "/tools.strata";
  ASSERT_TRUE(testing::RewriteManifest(Pack(), pack, [&](fb::ManifestT& m) { m.tokenizer->chat_template = kToolTemplate; })
                  .ok());
  ServerProcess server;
  ASSERT_NO_FATAL_FAILURE(StartOn(server, pack));
  httplib::Client c = ClientOf(server);
  const json tools = json::parse(R"([
      {"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
        "properties":{"city":{"type":"string","maxLength":5},"days":{"type":"integer"}},"required":["city"]}}},
      {"type":"function","function":{"name":"get_time","parameters":{"type":"object",
        "properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"]}}}])");
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Oslo?"}}})},
               {"tools", tools}, {"tool_choice", "required"}, {"max_tokens", 150}, {"temperature", 1.0},
               {"parallel_tool_calls", false}};
  for (int seed = 1; seed <= (testing::kMatrixSubset ? 1 : 3); ++seed) {  // one seed in the subset builds
    body["seed"] = seed;
    auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    json ch = json::parse(r->body)["choices"][0];
    EXPECT_EQ(ch["finish_reason"], "tool_calls") << ch.dump();
    ASSERT_EQ(ch["message"]["tool_calls"].size(), 1u) << ch.dump();
    const json& fn = ch["message"]["tool_calls"][0]["function"];
    json args = json::parse(fn["arguments"].get<std::string>());
    if (fn["name"] == "get_weather") {
      EXPECT_TRUE(args["city"].is_string()) << args;
    } else {
      EXPECT_EQ(fn["name"], "get_time");
      EXPECT_TRUE(args["zone"] == "UTC" || args["zone"] == "CET") << args;
    }
  }
  // Named: that function, whatever the model would rather do; streamed as a tool_calls delta.
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
  body["stream"] = true;
  auto st = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(st);
  json call;
  std::string finish;
  for (const std::string& e : Events(st->body)) {
    if (e == "[DONE]") continue;
    json ch = json::parse(e)["choices"][0];
    if (ch["delta"].contains("tool_calls")) call = ch["delta"]["tool_calls"][0];
    if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"].get<std::string>();
  }
  EXPECT_EQ(call["function"]["name"], "get_time") << st->body;
  EXPECT_EQ(finish, "tool_calls");
  // The round trip: the call and its result go back, and the model answers.
  body.erase("stream");
  body["tool_choice"] = "auto";
  body["max_tokens"] = 8;
  body["messages"].push_back({{"role", "assistant"}, {"content", nullptr},
                              {"tool_calls", json::array({{{"id", call["id"]}, {"type", "function"},
                                                           {"function", call["function"]}}})}});
  body["messages"].push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "12:00"}});
  auto answer = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 200) << answer->body;
  server.Terminate();
  EXPECT_EQ(server.WaitExit(kLongMs), 0);
}

TEST_F(ServeHttpTest, WithoutDashCTheContextIsTheLargestThePlanFits) {
  // A training context of 65,536: planned whole when it fits, else the largest multiple of 256 that does.
  const std::string pack = *dir_ + "/long-context.strata";
  ASSERT_TRUE(testing::RewriteManifest(Pack(), pack, [](fb::ManifestT& m) { m.hparams->n_ctx_train = 65536; }).ok());
  auto chosen = [](const std::string& log) -> int64_t {
    std::smatch sm;
    if (!std::regex_search(log, sm, std::regex("context per slot: (\\d+) \\(the largest the memory plan fits"))) return -1;
    return std::stoll(sm[1].str());
  };
  auto whole = testing::RunProgram("strata-run", {pack, "--serve", "--plan", "--reference"});
  EXPECT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(chosen(whole.err), 65536) << whole.err;
  // The plan's KV line at that context, to pick a budget that holds a quarter of it.
  std::smatch sm;
  ASSERT_TRUE(std::regex_search(whole.out, sm, std::regex("KV cache \\(F16\\)\\s+RAM\\s+([0-9.]+) MiB"))) << whole.out;
  const double kv_mib = std::stod(sm[1].str());
  const std::string budget = std::to_string(static_cast<int64_t>(kv_mib / 4) + 64) + "M";
  auto fitted = testing::RunProgram("strata-run", {pack, "--serve", "--plan", "--reference", "--ram-budget", budget});
  EXPECT_EQ(fitted.exit_code, 0) << fitted.out << fitted.err;
  const int64_t n = chosen(fitted.err);
  EXPECT_GE(n, 4096) << fitted.err;
  EXPECT_LT(n, 65536) << fitted.err;
  EXPECT_EQ(n % 256, 0) << n;
  // -c still wins.
  auto given = testing::RunProgram("strata-run", {pack, "--serve", "--plan", "--reference", "-c", "1024"});
  EXPECT_EQ(chosen(given.err), -1) << given.err;
  EXPECT_NE(given.out.find("context 1024 x 4"), std::string::npos) << given.out;
}

TEST_F(ServeHttpTest, StartRefusalsAreClear) {
  // A chat template Strata cannot read, or that cannot render one message, is refused at start, not mid-request.
  const std::string broken = *dir_ + "/broken-template.strata";
  ASSERT_TRUE(testing::RewriteManifest(Pack(), broken, [](fb::ManifestT& m) {
                m.tokenizer->chat_template = "{% for message in messages %}[INST] {{ message['content'] }} [/INST]";
              }).ok());
  auto r = testing::RunProgram("strata-run", {broken, "--serve", "--port", "0", "--reference"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("refusing to serve: the pack's chat template cannot be read: chat template, line 1: missing "
                       "{% endfor %}"),
            std::string::npos)
      << r.err;
  const std::string refusing = *dir_ + "/refusing-template.strata";
  ASSERT_TRUE(testing::RewriteManifest(Pack(), refusing, [](fb::ManifestT& m) {
                m.tokenizer->chat_template = "{{ raise_exception('this template renders nothing') }}";
              }).ok());
  r = testing::RunProgram("strata-run", {refusing, "--serve", "--port", "0", "--reference"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("cannot render a one-message chat: this template renders nothing"), std::string::npos) << r.err;
  // A pack without a template falls back to ChatML and says so.
  const std::string none = *dir_ + "/no-template.strata";
  ASSERT_TRUE(testing::RewriteManifest(Pack(), none, [](fb::ManifestT& m) { m.tokenizer->chat_template = ""; }).ok());
  ServerProcess ok;
  std::string error;
  ASSERT_TRUE(ok.Start({none, "--serve", "--reference"}, {}, &error)) << error;
  ASSERT_TRUE(ok.WaitReady(kLongMs));
  EXPECT_NE(ok.Log().find("the pack has no chat template; chats are rendered with ChatML"), std::string::npos);
  // The port is taken now.
  auto busy = testing::RunProgram("strata-run", {Pack(), "--serve", "--port", std::to_string(ok.port())});
  EXPECT_EQ(busy.exit_code, 1);
  EXPECT_NE(busy.err.find("cannot listen on 127.0.0.1:" + std::to_string(ok.port())), std::string::npos) << busy.err;
  // Bad options.
  auto bad = testing::RunProgram("strata-run", {Pack(), "--serve", "--parallel", "0"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--parallel 0: expected 1..256"), std::string::npos) << bad.err;
  auto negative = testing::RunProgram("strata-run", {Pack(), "--serve", "--parallel", "-1"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_NE(negative.err.find("--parallel -1: expected 1..256"), std::string::npos) << negative.err;
  auto both = testing::RunProgram("strata-run", {Pack(), "--serve", "-p", "hi"});
  EXPECT_EQ(both.exit_code, 2);
  auto ctx = testing::RunProgram("strata-run", {Pack(), "--serve", "--port", "0", "-c", "100000"});
  EXPECT_EQ(ctx.exit_code, 2);
  EXPECT_NE(ctx.err.find("training context"), std::string::npos) << ctx.err;
}

TEST_F(ServeHttpTest, PlansItsMemoryAndServesThroughExpertTiers) {
  // --plan with --serve prints the server's plan (slots, snapshots) and takes no port.
  auto plan = testing::RunProgram("strata-run", {Pack(), "--serve", "--plan", "--parallel", "2", "-c", "256"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("KV cache (F16)"), std::string::npos) << plan.out;  // the default cache type
  EXPECT_NE(plan.out.find("recurrent state snapshots (F32)"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("2 seq x"), std::string::npos) << plan.out;
  auto q8 = testing::RunProgram("strata-run", {Pack(), "--serve", "--plan", "--parallel", "2", "-c", "256",
                                               "--kv-type", "q8_0"});
  EXPECT_EQ(q8.exit_code, 0) << q8.err;
  EXPECT_NE(q8.out.find("KV cache (Q8_0)"), std::string::npos) << q8.out;
  // A budget the slots do not fit in: refused at start, naming what would fit.
  auto small = testing::RunProgram("strata-run", {Pack(), "--serve", "--port", "0", "--ram-budget", "64K"});
  EXPECT_NE(small.exit_code, 0);
  EXPECT_NE(small.err.find("refusing to start: the memory plan does not fit"), std::string::npos) << small.err;
  // Flags the server cannot honour are refused, not ignored.
  auto trace = testing::RunProgram("strata-run", {Pack(), "--serve", "--routing-trace-out", *dir_ + "/t.bin"});
  EXPECT_EQ(trace.exit_code, 2) << trace.err;
  // Through a device tier of 3 expert slots (the simulated device), the
  // greedy answer is the one the untiered server gives.
  const std::string body = ChatBody("Which experts?", R"("max_tokens":12,"temperature":0)");
  Start({"--parallel", "2"});
  auto plain = Post("/v1/chat/completions", body);
  ASSERT_TRUE(plain && plain->status == 200);
  ServerProcess tiered;
  std::string error;
  ASSERT_TRUE(tiered.Start({Pack(), "--serve", "--reference", "-t", "1", "--parallel", "2", "--expert-device", "cpu",
                            "--expert-slots", "3"},
                           {}, &error))
      << error;
  ASSERT_TRUE(tiered.WaitReady(kLongMs)) << tiered.Log();
  httplib::Client c("127.0.0.1", tiered.port());
  c.set_read_timeout(kLongMs / 1000, 0);
  auto r = c.Post("/v1/chat/completions", body, "application/json");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(json::parse(r->body)["choices"][0]["message"]["content"],
            json::parse(plain->body)["choices"][0]["message"]["content"]);
  EXPECT_NE(tiered.Log().find("memory: RAM"), std::string::npos) << tiered.Log();
  EXPECT_NE(tiered.Log().find("device tier: 3 slots"), std::string::npos) << tiered.Log();
  // /metrics carries the expert cache's counts and hit rate (the plain server has none).
  auto tm = c.Get("/metrics");
  ASSERT_TRUE(tm && tm->status == 200);
  EXPECT_NE(tm->body.find("strata:expert_cache_hit_ratio "), std::string::npos) << tm->body;
  std::smatch hm, mm;
  ASSERT_TRUE(std::regex_search(tm->body, hm, std::regex("\nstrata:expert_hits_total ([0-9]+)")));
  ASSERT_TRUE(std::regex_search(tm->body, mm, std::regex("\nstrata:expert_misses_total ([0-9]+)")));
  EXPECT_GT(std::stoull(hm[1].str()) + std::stoull(mm[1].str()), 0u);  // experts were routed
  auto pm = Client().Get("/metrics");
  ASSERT_TRUE(pm && pm->status == 200);
  EXPECT_EQ(pm->body.find("expert_cache_hit_ratio"), std::string::npos);
}

// ---------------------------------------------------------------------------
// Hostile clients: the limits of the HTTP layer (runtime/serve/http_server.h,
// docs/server.md "The HTTP layer"), each checked with a raw socket.

std::string HostLine(int port) { return "Host: 127.0.0.1:" + std::to_string(port) + "\r\n"; }

std::string StatusLine(const std::string& response) { return response.substr(0, response.find("\r\n")); }

TEST_F(ServeHttpTest, HeadsOfTooManyOrTooLongLinesGet431) {
  Start();
  const int port = server_.port();
  auto head_with = [&](int extra_lines, size_t line_bytes) {
    std::string h = "GET /health HTTP/1.1\r\n" + HostLine(port);
    for (int i = 0; i < extra_lines; ++i) {
      std::string line = "X-Filler-" + std::to_string(i) + ": ";
      line += std::string(line_bytes > line.size() ? line_bytes - line.size() : 1, 'v');
      h += line + "\r\n";
    }
    return h + "Connection: close\r\n\r\n";
  };
  // 100 lines (request line, Host, 97 fillers, Connection) pass; 101 do not.
  EXPECT_EQ(StatusLine(testing::RawHttp(port, head_with(97, 20), kLongMs)), "HTTP/1.1 200 OK");
  const std::string too_many = testing::RawHttp(port, head_with(98, 20), kLongMs);
  EXPECT_EQ(StatusLine(too_many), "HTTP/1.1 431 Request Header Fields Too Large") << too_many;
  EXPECT_NE(too_many.find("more than 100 lines"), std::string::npos) << too_many;
  // A line of 8 KiB passes; one byte more does not.
  EXPECT_EQ(StatusLine(testing::RawHttp(port, head_with(1, 8192), kLongMs)), "HTTP/1.1 200 OK");
  const std::string long_line = testing::RawHttp(port, head_with(1, 8193), kLongMs);
  EXPECT_EQ(StatusLine(long_line), "HTTP/1.1 431 Request Header Fields Too Large") << long_line;
  EXPECT_NE(long_line.find("at most 8192 per line"), std::string::npos) << long_line;
  // 64 KiB in all: nine lines of 8 KiB are too many bytes.
  EXPECT_EQ(StatusLine(testing::RawHttp(port, head_with(9, 8000), kLongMs)),
            "HTTP/1.1 431 Request Header Fields Too Large");
  // An endless head: the server answers 431 and stops reading long before
  // the client runs out of header lines to send (160 MB took 254 MB before).
  testing::RawConnection endless(port);
  ASSERT_TRUE(endless.connected());
  ASSERT_TRUE(endless.Send("GET /health HTTP/1.1\r\n" + HostLine(port)));
  const std::string line = "X-Endless: " + std::string(1000, 'x') + "\r\n";
  size_t sent = 0;
  std::string seen;
  while (sent < (160u << 20) && endless.Send(line)) {
    sent += line.size();
    if (sent % (1u << 20) < line.size() && endless.WaitClosed(1, &seen)) break;
  }
  endless.WaitClosed(5000, &seen);
  EXPECT_EQ(StatusLine(seen), "HTTP/1.1 431 Request Header Fields Too Large") << seen.substr(0, 200);
  EXPECT_LT(sent, 32u << 20) << "the server kept reading a head it had refused";
  auto health = Client().Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(ServeHttpTest, SlowHeadsAndBodiesMeetADeadlineNotAPerReadTimeout) {
  // The issue's attack: 16 connections trickling header bytes against
  // --parallel 2 --queue 4. Shortened deadlines; the default is checked below.
  Start({"--parallel", "2", "--queue", "4", "--test-head-deadline-ms", "1500", "--test-body-deadline-ms", "1500"});
  const int port = server_.port();
  const std::string head = "GET /health HTTP/1.1\r\n" + HostLine(port) + "X-Slow: " + std::string(200, 's') + "\r\n\r\n";
  const std::string body_head = "POST /tokenize HTTP/1.1\r\n" + HostLine(port) +
                                "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"content\":\"";
  std::vector<std::unique_ptr<testing::RawConnection>> slow;
  for (int i = 0; i < 16; ++i) {
    slow.push_back(std::make_unique<testing::RawConnection>(port));
    ASSERT_TRUE(slow.back()->connected());
    if (i % 2 == 1) {
      ASSERT_TRUE(slow.back()->Send(body_head));  // odd ones trickle a body
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<bool> stop{false};
  std::thread trickler([&] {  // one byte per connection every 50 ms: every read makes progress
    for (size_t i = 0; !stop.load() && i < head.size(); ++i) {
      for (auto& c : slow) c->Send(std::string(1, head[i]));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  // Meanwhile /health answers at once.
  for (int i = 0; i < 5; ++i) {
    const auto h0 = std::chrono::steady_clock::now();
    auto h = Client().Get("/health");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - h0, std::chrono::milliseconds(1000));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Every trickler is answered 408 and closed after its deadline, though it never stopped sending.
  for (size_t i = 0; i < slow.size(); ++i) {
    std::string seen;
    EXPECT_TRUE(slow[i]->WaitClosed(8000, &seen)) << i;
#ifdef _WIN32
    // Under Wine a connection closed with unread bytes may reach the client as a reset that drops the 408.
    if (seen.empty()) continue;
#endif
    EXPECT_EQ(StatusLine(seen), "HTTP/1.1 408 Request Timeout") << i << ": " << seen.substr(0, 200);
  }
  const auto waited = std::chrono::steady_clock::now() - t0;
  stop.store(true);
  trickler.join();
  EXPECT_GE(waited, std::chrono::milliseconds(1400));
  EXPECT_LT(waited, std::chrono::milliseconds(8000));
  EXPECT_GE(Metrics()["http_deadlines_total"].get<double>(), 16.0);
}

TEST_F(ServeHttpTest, TheDefaultHeadDeadlineIsTenSecondsFromTheConnection) {
  Start();
  testing::RawConnection c(server_.port());
  ASSERT_TRUE(c.connected());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string head = "GET /health HTTP/1.1\r\nX-Slow: " + std::string(100, 's');
  std::string seen;
  bool closed = false;
  for (size_t i = 0; i < head.size() && !closed; ++i) {  // a byte every 250 ms
    c.Send(std::string(1, head[i]));
    closed = c.WaitClosed(250, &seen);
  }
  if (!closed) closed = c.WaitClosed(kLongMs, &seen);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(closed);
  EXPECT_EQ(StatusLine(seen), "HTTP/1.1 408 Request Timeout") << seen;
  EXPECT_GE(waited, std::chrono::milliseconds(9500));
  EXPECT_LT(waited, std::chrono::milliseconds(13000));
}

TEST_F(ServeHttpTest, ConnectionsBeyondTheCapGet503AtOnceAndIdleOnesAreClosed) {
  Start({"--max-connections", "8", "--test-idle-ms", "600"});
  const int port = server_.port();
  std::vector<std::unique_ptr<testing::RawConnection>> held;
  for (int i = 0; i < 8; ++i) {
    held.push_back(std::make_unique<testing::RawConnection>(port));
    ASSERT_TRUE(held.back()->connected());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all eight accepted
  const auto t0 = std::chrono::steady_clock::now();
  const std::string over = testing::RawHttp(port, "GET /health HTTP/1.1\r\n" + HostLine(port) + "\r\n", 3000);
  EXPECT_EQ(StatusLine(over), "HTTP/1.1 503 Service Unavailable") << over;
  EXPECT_NE(over.find("maximum of 8 connections"), std::string::npos) << over;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2000));
  held.pop_back();  // one slot frees
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // A keep-alive request is answered, then the idle connection is closed
  // after the idle limit (600 ms here, 30 s by default), which responses announce.
  testing::RawConnection k(port);
  ASSERT_TRUE(k.Send("GET /health HTTP/1.1\r\n" + HostLine(port) + "\r\n"));
  const std::string first = k.Read(kLongMs, "\"ok\"}");
  EXPECT_EQ(StatusLine(first), "HTTP/1.1 200 OK") << first;
  EXPECT_NE(first.find("Keep-Alive: timeout=1\r\n"), std::string::npos) << first;  // 600 ms, at least 1 s said
  const auto idle0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(k.WaitClosed(5000));
  EXPECT_GE(std::chrono::steady_clock::now() - idle0, std::chrono::milliseconds(450));
  EXPECT_GE(Metrics()["http_connections_refused_total"].get<double>(), 1.0);
}

TEST_F(ServeHttpTest, SigtermClosesIdleAndTricklingConnectionsAndExitsSoonAfterTheLastRequest) {
  Start({"--parallel", "2", "--test-step-delay-ms", "40"});
  const int port = server_.port();
  // A running generation (about 30 x 40 ms), read by a patient client.
  json body = {{"prompt", "go"}, {"max_tokens", 30}, {"stream", true}, {"ignore_eos", true}};
  testing::RawConnection gen(port);
  ASSERT_TRUE(gen.Send("POST /v1/completions HTTP/1.1\r\n" + HostLine(port) +
                       "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.dump().size()) +
                       "\r\n\r\n" + body.dump()));
  ASSERT_TRUE(WaitMetric("requests_processing", 1));
  // Idle and trickling connections that would hold a naive server open.
  testing::RawConnection idle(port), trickle(port);
  ASSERT_TRUE(idle.connected() && trickle.connected());
  ASSERT_TRUE(trickle.Send("GET /health HTTP/1.1\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server_.Terminate();
  ASSERT_TRUE(server_.WaitForLog("strata serve: stopping"));
  // The idle and the trickling connections close at once, even if the trickler keeps sending.
  std::thread keep_trickling([&] {
    for (int i = 0; i < 40 && trickle.Send("X"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  EXPECT_TRUE(idle.WaitClosed(1500));
  EXPECT_TRUE(trickle.WaitClosed(1500));
  keep_trickling.join();
  // The running request finishes; the process ends within 2 s of its last byte.
  std::string streamed;
  EXPECT_TRUE(gen.WaitClosed(kLongMs, &streamed));
  const auto finished = std::chrono::steady_clock::now();
  EXPECT_NE(streamed.find("data: [DONE]"), std::string::npos) << streamed.substr(0, 400);
  EXPECT_EQ(server_.WaitExit(kLongMs), 0) << server_.Log();
  EXPECT_LT(std::chrono::steady_clock::now() - finished, std::chrono::milliseconds(2000)) << server_.Log();
}

TEST_F(ServeHttpTest, HostOriginAndContentTypeAreCheckedBeforeTheBody) {
  Start({"--allowed-host", "my.box"});
  const int port = server_.port();
  const std::string p = std::to_string(port);
  const std::string chat = ChatBody("hi", R"("max_tokens":2)");
  auto raw = [&](const std::string& host, const std::string& extra, const std::string& type) {
    return testing::RawHttp(port, "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host + "\r\n" + extra +
                                      (type.empty() ? "" : "Content-Type: " + type + "\r\n") +
                                      "Content-Length: " + std::to_string(chat.size()) + "\r\nConnection: close\r\n\r\n" +
                                      chat,
                            kLongMs);
  };
  const double before = Metrics()["requests_finished_total"].get<double>();
  // The DNS-rebinding request of the issue: a page on another site posts
  // text/plain (no preflight) with its own name as Host: refused, nothing runs.
  std::string r = raw("attacker.example:" + p, "Origin: http://attacker.example:" + p + "\r\n", "text/plain");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 403 Forbidden") << r;
  EXPECT_NE(r.find("host_not_allowed"), std::string::npos) << r;
  // Each check alone.
  r = raw("127.0.0.1:" + p, "Origin: http://attacker.example:" + p + "\r\n", "application/json");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 403 Forbidden") << r;
  EXPECT_NE(r.find("origin_not_allowed"), std::string::npos) << r;
  r = raw("127.0.0.1:" + p, "", "text/plain");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 415 Unsupported Media Type") << r;
  r = raw("127.0.0.1:" + p, "", "");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 415 Unsupported Media Type") << r;
  r = raw("127.0.0.1:" + std::to_string(port + 1), "", "application/json");  // another port: another server
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 403 Forbidden") << r;
  r = raw("", "", "application/json");
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 400 Bad Request") << r;
  EXPECT_EQ(Metrics()["requests_finished_total"].get<double>(), before);
  // What is allowed: loopback names, the page's own origin, --allowed-host.
  for (const std::string& host : std::vector<std::string>{"127.0.0.1:" + p, "localhost:" + p, "LocalHost", "my.box:" + p}) {
    r = raw(host, "Origin: http://" + host + "\r\n", "application/json; charset=utf-8");
    EXPECT_EQ(StatusLine(r), "HTTP/1.1 200 OK") << host << ": " << r;
  }
  // A preflight from a foreign origin is refused too.
  r = testing::RawHttp(port, "OPTIONS /v1/chat/completions HTTP/1.1\r\n" + HostLine(port) +
                                 "Origin: http://attacker.example\r\nAccess-Control-Request-Method: POST\r\n\r\n",
                       3000);
  EXPECT_EQ(StatusLine(r), "HTTP/1.1 403 Forbidden") << r;
}

TEST_F(ServeHttpTest, PromptsAreMeasuredBeforeTheyAreTokenized) {
  Start({"-c", "64"});
  // 8 MiB of prompt: refused from its size alone, without tokenizing it.
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Post("/v1/chat/completions", ChatBody(std::string(8u << 20, 'a')));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("bytes (at least"), std::string::npos) << r->body.substr(0, 300);
  EXPECT_NE(r->body.find("context_length_exceeded"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(kLongMs / 4));
  // /tokenize is bounded too.
  json big = {{"content", std::string((1u << 20) + 1, 'b')}};
  r = Post("/tokenize", big.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("/tokenize takes at most 1048576"), std::string::npos) << r->body;
}

TEST_F(ServeHttpTest, AnExceptionEndsOneRequestWithA500NotTheServer) {
  for (const char* site : {"serve-step:0", "serve-handler:0"}) {
    ServerProcess server;
    std::string error;
    ASSERT_TRUE(server.Start({Pack(), "--serve", "--reference", "-t", "1"}, {{"STRATA_FAULT", site}}, &error))
        << error;
    ASSERT_TRUE(server.WaitReady(kLongMs)) << server.Log();
    httplib::Client c = ClientOf(server);
    auto first = c.Post("/v1/chat/completions", ChatBody("hi", R"("max_tokens":2)"), "application/json");
    ASSERT_TRUE(first) << site;
    EXPECT_EQ(first->status, 500) << site << ": " << first->body;
    EXPECT_NE(first->body.find("injected fault"), std::string::npos) << first->body;
    EXPECT_NE(first->body.find("internal_error"), std::string::npos) << first->body;
    auto second = c.Post("/v1/chat/completions", ChatBody("hi", R"("max_tokens":2)"), "application/json");
    ASSERT_TRUE(second) << site;
    EXPECT_EQ(second->status, 200) << site << ": " << second->body;
    server.Terminate();
    EXPECT_EQ(server.WaitExit(kLongMs), 0) << server.Log();
  }
}

// Posts small requests until one fails (a fault armed somewhere in the
// first few forward passes); returns the failed response's status and body:
// 500, or 200 with an error object when the failure came after the server
// had sent its headers (a request not answered within 300 ms: docs/server.md).
std::pair<int, std::string> PostUntilOneFails(httplib::Client& c, int tries) {
  for (int i = 0; i < tries; ++i) {
    auto r = c.Post("/v1/chat/completions", ChatBody("hi", R"("max_tokens":3)"), "application/json");
    if (!r) return {-1, "no response"};
    if (r->status != 200) return {r->status, r->body};
    const json body = json::parse(r->body, nullptr, false);
    if (body.is_discarded() || body.contains("error")) return {500, r->body};
  }
  return {200, "every request succeeded"};
}

// A GPU fault that leaves the device usable ends one request with a 500 and
// the server goes on; one that poisons the device context (an illegal
// address) makes the server refuse work, say so on /health and exit 75.
// The faults fire in the software GPU (STRATA_FAULT) after the load's own
// launches (a request of a few tokens runs hundreds). Copy faults are
// gpu_faults_test's: one may land on a recurrent snapshot, which the
// scheduler drops without failing anything (the slot reads its prompt again).
TEST_F(ServeHttpTest, AGpuFaultEndsOneRequestAndAPoisonedDeviceStopsTheServer) {
  {
    const char* site = "gpu-launch:400";
    ServerProcess server;
    std::string error;
    ASSERT_TRUE(server.Start({Pack(), "--serve", "--backend", "software-gpu", "-c", "64"}, {{"STRATA_FAULT", site}},
                             &error))
        << error;
    ASSERT_TRUE(server.WaitReady(kLongMs)) << server.Log();
    httplib::Client c = ClientOf(server);
    auto [status, body] = PostUntilOneFails(c, 40);
    EXPECT_EQ(status, 500) << body << "\n" << server.Log();
    EXPECT_NE(body.find("the forward pass failed"), std::string::npos) << body;
    EXPECT_NE(body.find("injected fault"), std::string::npos) << body;
    auto health = c.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200) << health->body;
    auto next = c.Post("/v1/chat/completions", ChatBody("hi", R"("max_tokens":2)"), "application/json");
    ASSERT_TRUE(next);
    EXPECT_EQ(next->status, 200) << next->body;
    server.Terminate();
    EXPECT_EQ(server.WaitExit(kLongMs), 0) << server.Log();
  }
  ServerProcess server;
  std::string error;
  ASSERT_TRUE(server.Start({Pack(), "--serve", "--backend", "software-gpu", "-c", "64"},
                           {{"STRATA_FAULT", "gpu-poison:400"}}, &error))
      << error;
  ASSERT_TRUE(server.WaitReady(kLongMs)) << server.Log();
  httplib::Client c = ClientOf(server);
  auto [status, body] = PostUntilOneFails(c, 40);
  EXPECT_EQ(status, 500) << body;
  EXPECT_NE(body.find("illegal memory access"), std::string::npos) << body;
  // The scheduler marks the device lost before it answers the failed request.
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503) << health->body;
  EXPECT_NE(health->body.find("device_lost"), std::string::npos) << health->body;
  auto refused = c.Post("/v1/chat/completions", ChatBody("hi", R"("max_tokens":2)"), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503) << refused->body;
  EXPECT_NE(refused->body.find("device is lost"), std::string::npos) << refused->body;
  EXPECT_EQ(server.WaitExit(kLongMs), 75) << server.Log();
  EXPECT_NE(server.Log().find("so that its supervisor restarts it"), std::string::npos) << server.Log();
}

#if defined(__linux__)
// Resident memory of a process, from /proc.
int64_t ResidentBytes(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

TEST_F(ServeHttpTest, MemoryStaysBoundedUnderAThousandHostileConnections) {
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur < 1200 && rl.rlim_max >= 1200) {
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, 4096);
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur < 1200) GTEST_SKIP() << "needs 1200 file descriptors; the limit is " << rl.rlim_cur;
  Start();
  const int port = server_.port();
  const int64_t rss0 = ResidentBytes(server_.pid());
  ASSERT_GT(rss0, 0);
  // 1000 connections, each holding 48 KiB of a head it never finishes.
  std::string partial = "POST /v1/chat/completions HTTP/1.1\r\n" + HostLine(port);
  while (partial.size() < (48u << 10)) partial += "X-Pad: " + std::string(1000, 'p') + "\r\n";
  std::vector<std::unique_ptr<testing::RawConnection>> conns;
  for (int i = 0; i < 1000; ++i) {
    conns.push_back(std::make_unique<testing::RawConnection>(port));
    ASSERT_TRUE(conns.back()->connected()) << i;
    ASSERT_TRUE(conns.back()->Send(partial)) << i;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int64_t rss1 = ResidentBytes(server_.pid());
  // The server still answers.
  auto h = Client().Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  const double open = Metrics()["http_connections_open"].get<double>();  // theirs, this one's, maybe /health's
  EXPECT_GE(open, 1001.0);
  EXPECT_LE(open, 1002.0);
  // The bound (docs/server.md): 80 KiB of buffer and about 8 KiB of state
  // per connection. Sanitizer builds keep freed memory in quarantine.
  const int64_t grown = rss1 - rss0;
  std::printf("resident memory: %.1f MiB idle, %.1f MiB with 1000 hostile connections (+%.1f MiB)\n",
              static_cast<double>(rss0) / (1 << 20), static_cast<double>(rss1) / (1 << 20),
              static_cast<double>(grown) / (1 << 20));
#if !defined(__SANITIZE_ADDRESS__) && !STRATA_HAS_ASAN
  EXPECT_LT(grown, 1000 * (88 << 10)) << "grew " << grown << " bytes";
#endif
}
#endif

}  // namespace
}  // namespace strata
