// Replicas behind a load balancer, as docs/deploy.md sets them up: Debian's
// nginx with deploy/nginx/strata.conf (only its ports changed) in front of
// three `strata-run --serve` replicas on loopback. A conversation's turns
// stay on one replica (its prefix cache hits); when that replica dies the
// next turn is answered by another; a replica draining on SIGTERM finishes
// what it runs and the requests after it go elsewhere, none lost.
//
// nginx missing fails the test (apt-get install nginx), unless
// STRATA_ALLOW_MISSING_TOOLS=1 makes it skip, loudly.

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/strings.h"
#include "tests/testing/child_process.h"
#include "tests/testing/run_command.h"
#include "tests/testing/server_process.h"
#include "tests/testing/test_data.h"

namespace strata {
namespace {

using json = nlohmann::ordered_json;
using testing::ServerProcess;

constexpr int kReplicas = 3;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string Nginx() {
  const char* env = std::getenv("STRATA_NGINX");
  return env ? env : "/usr/sbin/nginx";
}

class DeployTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!FileExists(Nginx())) {
      const char* allow = std::getenv("STRATA_ALLOW_MISSING_TOOLS");
      if (allow && std::string(allow) == "1")
        GTEST_SKIP() << "SKIPPED (STRATA_ALLOW_MISSING_TOOLS=1): no nginx at " << Nginx();
      FAIL() << "no nginx at " << Nginx() << " (apt-get install nginx, or set STRATA_NGINX)";
    }
    dir_ = testing::ScratchDir("serve_deploy");
    const std::string gguf = dir_ + "/tiny.gguf";
    pack_ = dir_ + "/tiny.strata";
    auto made = testing::RunProgram("strata-make-gguf", {"--arch", "qwen3", "--context-length", "1024", "-o", gguf});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    auto packed = testing::RunProgram("strata-pack", {gguf, "-o", pack_, "--no-probe"});
    ASSERT_EQ(packed.exit_code, 0) << packed.err;
    for (int i = 0; i < kReplicas; ++i) {
      replicas_.push_back(std::make_unique<ServerProcess>());
      std::string error;
      ASSERT_TRUE(replicas_.back()->Start({pack_, "--serve", "--reference", "-t", "1", "--allowed-host", "strata",
                                          "--test-step-delay-ms", "5"},
                                         {}, &error))
          << error;
    }
    for (auto& r : replicas_) ASSERT_TRUE(r->WaitReady()) << r->Log();
    StartNginx();
  }
  void TearDown() override {
    if (nginx_.running()) {
      nginx_.Terminate();
      nginx_.Wait(10000);
    }
  }

  // deploy/nginx/strata.conf with this test's ports, in an http block of
  // its own (pid, logs and temp files in the scratch folder).
  void StartNginx() {
    std::string conf = ReadFile(std::string(STRATA_SOURCE_DIR) + "/deploy/nginx/strata.conf");
    ASSERT_FALSE(conf.empty());
    port_ = testing::FreeLoopbackPort();
    ASSERT_GT(port_, 0);
    for (int i = 0; i < kReplicas; ++i) {
      const std::string from = StrFormat("127.0.0.1:%d ", 8081 + i);
      const size_t at = conf.find(from);
      ASSERT_NE(at, std::string::npos) << "deploy/nginx/strata.conf no longer lists " << from;
      conf.replace(at, from.size(), StrFormat("127.0.0.1:%d ", replicas_[static_cast<size_t>(i)]->port()));
    }
    const std::string listen = "listen 127.0.0.1:8080;";
    const size_t at = conf.find(listen);
    ASSERT_NE(at, std::string::npos);
    conf.replace(at, listen.size(), StrFormat("listen 127.0.0.1:%d;", port_));
    std::ofstream(dir_ + "/strata.conf") << conf;
    std::ofstream(dir_ + "/nginx.conf")
        << "daemon off;\nworker_processes 1;\npid " << dir_ << "/nginx.pid;\nerror_log " << dir_
        << "/error.log info;\n"
        << "events { worker_connections 256; }\n"
        << "http {\n  access_log " << dir_ << "/access.log;\n"
        << "  client_body_temp_path " << dir_ << "/body;\n  proxy_temp_path " << dir_ << "/proxy;\n"
        << "  fastcgi_temp_path " << dir_ << "/fastcgi;\n  uwsgi_temp_path " << dir_ << "/uwsgi;\n"
        << "  scgi_temp_path " << dir_ << "/scgi;\n  include " << dir_ << "/strata.conf;\n}\n";
    std::string error;
    ASSERT_TRUE(nginx_.Start({Nginx(), "-p", dir_, "-c", dir_ + "/nginx.conf", "-e", dir_ + "/error.log"}, {}, "",
                             dir_ + "/nginx.out", dir_ + "/nginx.out", &error))
        << error;
    for (int waited = 0; waited < 10000; waited += 50) {
      httplib::Client c("127.0.0.1", port_);
      if (auto r = c.Get("/v1/models")) return;
      ASSERT_TRUE(nginx_.running()) << ReadFile(dir_ + "/nginx.out") << ReadFile(dir_ + "/error.log");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "nginx did not answer on port " << port_ << "\n" << ReadFile(dir_ + "/error.log");
  }

  httplib::Result Chat(const json& messages, bool stream = false, int max_tokens = 4) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120, 0);
    json body = {{"messages", messages}, {"max_tokens", max_tokens}, {"temperature", 0}, {"stream", stream}};
    if (stream) body["ignore_eos"] = true;
    return c.Post("/v1/chat/completions", httplib::Headers{{"X-Session-Id", "conversation-1"}}, body.dump(),
                  "application/json");
  }

  // Requests each replica has finished (its /metrics, asked directly).
  std::vector<double> Finished() {
    std::vector<double> out;
    for (auto& r : replicas_) {
      double v = -1;
      if (r->port() > 0) {
        httplib::Client c("127.0.0.1", r->port());
        if (auto m = c.Get("/metrics")) {
          std::smatch sm;
          if (std::regex_search(m->body, sm, std::regex("strata:requests_finished_total ([0-9.]+)")))
            v = std::stod(sm[1].str());
        }
      }
      out.push_back(v);
    }
    return out;
  }
  // The replica whose finished count went up since `before`; -1 if none or several.
  int Served(const std::vector<double>& before) {
    const std::vector<double> after = Finished();
    int who = -1;
    for (int i = 0; i < kReplicas; ++i)
      if (after[static_cast<size_t>(i)] > before[static_cast<size_t>(i)]) {
        if (who >= 0) return -1;
        who = i;
      }
    return who;
  }

  std::string dir_, pack_;
  std::vector<std::unique_ptr<ServerProcess>> replicas_;
  testing::ChildProcess nginx_;
  int port_ = -1;
};

TEST_F(DeployTest, AConversationStaysOnOneReplicaAndFailsOverWithoutLosingRequests) {
  // Turn 1 and turn 2 of one conversation: one replica, and the second turn reuses the first's prefix.
  json messages = json::array({{{"role", "user"}, {"content", "Hello there, how are you today?"}}});
  std::vector<double> before = Finished();
  auto t1 = Chat(messages);
  ASSERT_TRUE(t1);
  ASSERT_EQ(t1->status, 200) << t1->body;
  const int home = Served(before);
  ASSERT_GE(home, 0);
  messages.push_back({{"role", "assistant"}, {"content", json::parse(t1->body)["choices"][0]["message"]["content"]}});
  messages.push_back({{"role", "user"}, {"content", "And tomorrow?"}});
  before = Finished();
  auto t2 = Chat(messages);
  ASSERT_TRUE(t2);
  ASSERT_EQ(t2->status, 200) << t2->body;
  EXPECT_EQ(Served(before), home) << "the second turn went to another replica";
  EXPECT_GT(json::parse(t2->body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0) << t2->body;

  // The home replica dies: the next turn is answered by another, no client error.
  replicas_[static_cast<size_t>(home)]->Kill();
  messages.push_back({{"role", "assistant"}, {"content", json::parse(t2->body)["choices"][0]["message"]["content"]}});
  messages.push_back({{"role", "user"}, {"content", "Thanks."}});
  before = Finished();
  auto t3 = Chat(messages);
  ASSERT_TRUE(t3);
  EXPECT_EQ(t3->status, 200) << t3->body;
  const int second = Served(before);
  EXPECT_GE(second, 0);
  EXPECT_NE(second, home);

  // The new home drains on SIGTERM while it streams a long answer: that
  // answer completes, and a turn sent meanwhile is answered by the third
  // replica (the draining one has closed its listener: nginx moves on).
  ASSERT_GE(second, 0);
  std::string streamed;
  int stream_status = 0;
  std::thread running([&] {
    auto r = Chat(messages, /*stream=*/true, /*max_tokens=*/60);
    if (r) stream_status = r->status, streamed = r->body;
  });
  ServerProcess& draining = *replicas_[static_cast<size_t>(second)];
  bool began = false;  // the stream runs on the replica
  for (int waited = 0; waited < 10000 && !began; waited += 20) {
    httplib::Client c("127.0.0.1", draining.port());
    auto m = c.Get("/metrics");
    began = m && m->body.find("strata:requests_processing 1") != std::string::npos;
    if (!began) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(began) << "the streamed turn did not reach replica " << second;
  draining.Terminate();
  ASSERT_TRUE(draining.WaitForLog("strata serve: stopping"));
  auto t4 = Chat(messages);
  ASSERT_TRUE(t4);
  EXPECT_EQ(t4->status, 200) << t4->body;
  running.join();
  EXPECT_EQ(stream_status, 200);
  EXPECT_NE(streamed.find("data: [DONE]"), std::string::npos) << streamed.substr(0, 400);
  EXPECT_NE(streamed.find("\"finish_reason\":\"length\""), std::string::npos) << streamed.substr(0, 400);
  EXPECT_EQ(draining.WaitExit(30000), 0) << draining.Log();
  const std::string log = ReadFile(dir_ + "/error.log");
  EXPECT_EQ(log.find("[crit]"), std::string::npos) << log;
}

}  // namespace
}  // namespace strata
