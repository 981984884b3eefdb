// Agreement with real stores: Debian's `prometheus` and `victoria-metrics` scrape loopback Pods
// that answer one body, then switch to a second at a known instant; the snapshot read from each
// store must equal the direct-scrape snapshot of the same two bodies taken at the same two
// instants, byte for byte in the JSON (gauges, cache hits, latency, traffic, transfer, missing[]),
// for vLLM, SGLang P/D, the vLLM router and the SGLang gateway, with an idle Pod and a counter
// reset among them. The instants come from the store's own `up` samples, so rates compare too.
//
// Each store runs as a child process on 127.0.0.1, scraping every second; every wait is bounded.

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "aggregation/prometheus_query.h"
#include "aggregation/prometheus_source.h"
#include "aggregation/real_store.h"
#include "aggregation/source_compare.h"
#include "aggregation/test_builders.h"
#include "cli/cli_runner.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;
using testing::Fixture;
using testing::MetricsEnginePod;
using testing::MetricsModelDeployment;
using testing::MetricsPDModelDeployment;
using testing::MetricsRouterPod;
using testing::SetSample;
using testing::SGLangPDResponse;

using testing::Ms;

// One Pod's /metrics, answering whichever body it was last given.
class BodyServer {
 public:
  BodyServer() : server_(net::ServerOptions{}) {
    server_.Route("GET", "/metrics", [this](const net::HttpRequest&) {
      std::lock_guard lock(mu_);
      return net::HttpResponse{200, "text/plain; version=0.0.4", {}, body_};
    });
    std::string error;
    EXPECT_OK(server_.Start());
  }
  ~BodyServer() { server_.Stop(); }
  void Set(std::string body) {
    std::lock_guard lock(mu_);
    body_ = std::move(body);
  }
  uint16_t port() const { return server_.port(); }

 private:
  net::HttpServer server_;
  std::mutex mu_;
  std::string body_;
};

struct StorePod {
  size_t deployment;
  Pod pod;
  std::string first;
  std::string second;
  std::unique_ptr<BodyServer> server;
};

// Equal JSON documents, numbers within `relative` of each other (0: exactly equal).
void ExpectSameJson(const nlohmann::json& a, const nlohmann::json& b, double relative,
                    const std::string& path = "") {
  if (a.is_number() && b.is_number() && relative > 0) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    EXPECT_LE(std::abs(x - y), relative * std::max(std::abs(x), std::abs(y))) << path;
    return;
  }
  ASSERT_EQ(a.type(), b.type()) << path;
  if (a.is_object()) {
    ASSERT_EQ(a.size(), b.size()) << path << "\n" << a.dump() << "\n" << b.dump();
    for (auto it = a.begin(); it != a.end(); ++it) {
      ASSERT_TRUE(b.contains(it.key())) << path << "." << it.key();
      ExpectSameJson(*it, b.at(it.key()), relative, path + "." + it.key());
    }
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << path << "\n" << a.dump() << "\n" << b.dump();
    for (size_t i = 0; i < a.size(); ++i) {
      ExpectSameJson(a[i], b[i], relative, fmt::format("{}[{}]", path, i));
    }
  } else {
    EXPECT_EQ(a, b) << path;
  }
}

class RealStoreAgreement : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ModelDeployment chat = MetricsModelDeployment();
    ModelDeployment pd = MetricsPDModelDeployment("sglang");
    pd.metadata.name = "pd";
    ModelDeployment gateway = MetricsModelDeployment();
    gateway.metadata.name = "gw";
    gateway.router = Router{.name = "sglang-gateway", .replicas = 1};
    ModelDeployment vllm_router = MetricsModelDeployment();
    vllm_router.metadata.name = "vr";
    vllm_router.router = Router{.name = "vllm-router", .replicas = 1};
    deployments_ = {chat, pd, gateway, vllm_router};
    const std::string busy_first = Fixture("vllm_server_busy_first.prom");
    const std::string busy_second = Fixture("vllm_server_busy_second.prom");
    const std::string idle = Fixture("vllm_server_idle_first.prom");
    const std::string gw = Fixture("sglang_gateway_no_workers.prom");
    Add(0, MetricsEnginePod("chat-0", "c0"), busy_first, busy_second);
    Add(0, MetricsEnginePod("chat-1", "c1"), idle, idle);
    Add(0, MetricsEnginePod("chat-2", "c2"), busy_second, busy_first);  // a counter reset
    Add(1, MetricsEnginePod("pd-prefill-0", "p0", "prompt"), SGLangPDResponse(1),
        SGLangPDResponse(2));
    Add(1, MetricsEnginePod("pd-decode-0", "d0", "generation"), SGLangPDResponse(1),
        SGLangPDResponse(2));
    Add(2, MetricsRouterPod("gw-router-a", "g0", "sglang-gateway"), gw,
        SetSample(gw, "smg_router_requests_total", "9"));
    Add(3, MetricsRouterPod("vr-router-a", "v0", "vllm-router"),
        Fixture("vllm_router_server_first.prom"), Fixture("vllm_router_server_second.prom"));
  }

  void Add(size_t deployment, Pod pod, std::string first, std::string second) {
    auto server = std::make_unique<BodyServer>();
    server->Set(first);
    pods_.push_back(
        {deployment, std::move(pod), std::move(first), std::move(second), std::move(server)});
  }

  std::vector<testing::StoreTarget> Targets() const {
    std::vector<testing::StoreTarget> targets;
    for (const StorePod& p : pods_) targets.push_back({p.server->port(), p.pod.metadata.name});
    return targets;
  }

  modelmetrics::testing::ScratchDir dir_;
  std::vector<ModelDeployment> deployments_;
  std::vector<StorePod> pods_;
};

TEST_P(RealStoreAgreement, SnapshotsEqualDirectReadsOfTheSameBodies) {
  testing::RealStore store(GetParam(), dir_, Targets());
  const std::string url = store.url();
  store.WaitFor([](const std::vector<int64_t>& instants) { return !instants.empty(); });
  const int64_t switched = Ms(WallClock::now());
  for (StorePod& p : pods_) p.server->Set(p.second);
  const auto [at, instants] = store.WaitFor(
      [switched](const std::vector<int64_t>& i) { return i.back() > switched + 100; });
  ASSERT_FALSE(instants.empty());

  PrometheusSourceOptions options;
  options.url = url;
  options.window = 10min;
  options.now = [at = at] { return at; };
  PrometheusSource source(options);
  for (size_t d = 0; d < deployments_.size(); ++d) {
    const ModelDeployment& md = deployments_[d];
    SCOPED_TRACE(md.metadata.name);
    std::vector<Pod> pods;
    std::vector<std::string> first, second;
    std::vector<WallTime> t0, t1;
    for (const StorePod& p : pods_) {
      if (p.deployment != d) continue;
      const std::vector<int64_t>& pod_instants = instants.at(p.pod.metadata.name);
      ASSERT_LT(pod_instants.front(), switched) << p.pod.metadata.name;
      pods.push_back(p.pod);
      first.push_back(p.first);
      second.push_back(p.second);
      t0.push_back(WallTime(std::chrono::milliseconds(pod_instants.front())));
      t1.push_back(WallTime(std::chrono::milliseconds(pod_instants.back())));
    }
    const Snapshot stored = testing::FromSource(source, md, pods, at);
    const Snapshot direct = testing::DirectReads(md, pods, first, second, t0, t1, at);
    if (GetParam() == "prometheus") {
      EXPECT_EQ(SnapshotToJson(stored), SnapshotToJson(direct));
    } else {
      // VictoriaMetrics keeps 12 significant decimal digits of a float sample (its documented
      // precision); everything else is equal.
      ExpectSameJson(nlohmann::json::parse(SnapshotToJson(stored)),
                     nlohmann::json::parse(SnapshotToJson(direct)), 1e-11);
    }
    EXPECT_FALSE(stored.latency.empty() && stored.traffic.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, RealStoreAgreement,
                         ::testing::Values("prometheus", "victoria-metrics"), [](const auto& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace modelmetrics::deployment
