// /metrics over a real loopback server and client: negotiation, exact Content-Type, HEAD, and a
// slow collector not holding up other connections.
#include "pipeline/metrics_endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "net/http_client.h"
#include "status_matchers.h"
#include "test_deadlines.h"

namespace modelmetrics::pipeline {
namespace {

using modelmetrics::testing::kEventually;
using modelmetrics::testing::WaitUntil;
using ::testing::HasSubstr;

std::vector<net::FetchResult> Get(const std::string& url, const std::string& accept) {
  net::HttpClient client;
  net::FetchRequest request{url, {}};
  if (!accept.empty()) request.headers.emplace_back("Accept", accept);
  return client.FetchAll(std::span(&request, 1), std::chrono::steady_clock::now() + kEventually);
}

class MetricsEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.AddCounter({.name = "vllm_omni:requests", .help = "Requests.", .labels = {"m"}})
        ->Labels({"x"})
        .Add(uint64_t{3});
    endpoint_ = std::make_unique<MetricsEndpoint>(registry_);
    endpoint_->Install(server_);
    std::string error;
    ASSERT_OK(server_.Start());
    url_ = "http://127.0.0.1:" + std::to_string(server_.port()) + "/metrics";
  }
  void TearDown() override { server_.Stop(); }

  Registry registry_;
  net::HttpServer server_{net::ServerOptions{}};
  std::unique_ptr<MetricsEndpoint> endpoint_;
  std::string url_;
};

TEST_F(MetricsEndpointTest, TextByDefaultWithTheExactContentType) {
  auto r = Get(url_, "");
  ASSERT_TRUE(r[0].ok()) << r[0].message;
  EXPECT_EQ(r[0].content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(r[0].body, HasSubstr("# TYPE vllm_omni:requests_total counter\n"
                                   "vllm_omni:requests_total{m=\"x\"} 3.0\n"));
}

TEST_F(MetricsEndpointTest, OpenMetricsWhenTheScraperAsks) {
  auto r = Get(
      url_, "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1");
  ASSERT_TRUE(r[0].ok()) << r[0].message;
  EXPECT_EQ(r[0].content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_THAT(r[0].body, HasSubstr("# TYPE vllm_omni:requests counter\n"));
  EXPECT_TRUE(r[0].body.ends_with("# EOF\n"));
}

TEST(MetricsEndpoint, SlowCollectorDoesNotBlockOtherRoutes) {
  // The collector holds /metrics until /healthz has been answered, which can only happen if
  // that one is not queued behind it: an order the test sets, not a race against a sleep.
  std::atomic<bool> health_answered{false};
  std::atomic<bool> collector_saw_it{false};
  Registry registry;
  registry.AddCollector("slow", [&](ExpositionWriter&) {
    collector_saw_it = WaitUntil([&] { return health_answered.load(); });
  });
  MetricsEndpoint endpoint(registry);
  net::HttpServer server{net::ServerOptions{}};
  endpoint.Install(server);
  server.Route("GET", "/healthz", [&](const net::HttpRequest&) {
    health_answered = true;
    return net::HttpResponse::Text(200, "ok");
  });
  std::string error;
  ASSERT_OK(server.Start());
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  net::HttpClient client;
  std::vector<net::FetchRequest> batch = {{base + "/metrics", {}}, {base + "/healthz", {}}};
  auto results = client.FetchAll(batch, std::chrono::steady_clock::now() + 2 * kEventually);
  ASSERT_TRUE(results[0].ok()) << results[0].message;
  ASSERT_TRUE(results[1].ok()) << results[1].message;
  EXPECT_TRUE(collector_saw_it.load());  // /healthz answered while /metrics was collecting
  server.Stop();
}

}  // namespace
}  // namespace modelmetrics::pipeline
