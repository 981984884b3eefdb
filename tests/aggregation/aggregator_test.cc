// The whole request (reference §2.1-§2.2) against loopback HTTP servers playing the Pods: the
// HTTP-level upstream cases of §4.1, ownership, coverage, the Pod limit, scrape errors, deadlines
// and the concurrency bound. Every Pod has its own server on 127.0.0.1 (port 0); the wall clock is
// a fake one the test advances, so no test sleeps through a window.
#include "aggregation/aggregator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "aggregation/baseline_store.h"
#include "aggregation/merge.h"
#include "aggregation/test_builders.h"
#include "net/http_server.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using namespace std::chrono_literals;
using testing::FindCacheHit;
using testing::FindGauge;
using testing::FindWindow;
using testing::Fixture;
using testing::GpuStackMissing;
using testing::M;
using testing::MetricsEnginePod;
using testing::MetricsModelDeployment;
using testing::MetricsRouterPod;
using testing::MetricsVLLMFixture;
using testing::MetricsVLLMResponse;
using testing::T0;
using testing::UpstreamBody;
using testing::WindowKeys;
using Missings = std::vector<Missing>;
using SteadyClock = std::chrono::steady_clock;

std::string TlsFile(const char* name) { return test_paths::Tls(name); }

// Server-side concurrency across many Pods' servers.
struct Probe {
  std::atomic<int> in_flight{0};
  std::atomic<int> peak{0};
  std::atomic<int> served{0};
};

// One Pod's /metrics endpoint.
class PodServer {
 public:
  explicit PodServer(std::optional<net::TlsOptions> tls = std::nullopt)
      : server_(Options(std::move(tls))) {
    server_.RouteAsync("GET", "/metrics",
                       [this](const net::HttpRequest& request, net::Responder respond) {
                         {
                           std::lock_guard lock(mu_);
                           last_accept_ = std::string(request.headers.Get("Accept"));
                         }
                         Handle(std::move(respond));
                       });
    std::string error;
    started_ = Ok(server_.Start(), &error);
    EXPECT_TRUE(started_) << error;
  }
  ~PodServer() {
    Release();
    server_.Stop();
  }

  int port() const { return server_.port(); }
  void Set(std::string body, int status = 200) {
    std::lock_guard lock(mu_);
    body_ = std::move(body);
    status_ = status;
  }
  void SetHeader(std::string name, std::string value) {
    std::lock_guard lock(mu_);
    headers_.emplace_back(std::move(name), std::move(value));
  }
  void SetDelay(std::chrono::milliseconds delay) {
    std::lock_guard lock(mu_);
    delay_ = delay;
  }
  void SetHang() {
    std::lock_guard lock(mu_);
    hang_ = true;
  }
  void SetContentType(std::string content_type) {
    std::lock_guard lock(mu_);
    content_type_ = std::move(content_type);
  }
  std::string last_accept() {
    std::lock_guard lock(mu_);
    return last_accept_;
  }
  void SetProbe(Probe* probe) {
    std::lock_guard lock(mu_);
    probe_ = probe;
  }
  int served() const { return served_.load(); }

  // Answers every request held by SetHang().
  void Release() {
    std::vector<net::Responder> held;
    {
      std::lock_guard lock(mu_);
      held.swap(held_);
      hang_ = false;
    }
    for (const net::Responder& respond : held) respond(net::HttpResponse::Text(503, "released"));
  }

 private:
  static net::ServerOptions Options(std::optional<net::TlsOptions> tls) {
    net::ServerOptions options;
    options.shutdown_timeout = 500ms;
    options.tls = std::move(tls);
    return options;
  }

  void Handle(net::Responder respond) {
    net::HttpResponse response;
    std::chrono::milliseconds delay;
    Probe* probe;
    bool hang;
    {
      std::lock_guard lock(mu_);
      response.status = status_;
      response.body = body_;
      response.headers = headers_;
      response.content_type = content_type_;
      delay = delay_;
      probe = probe_;
      hang = hang_;
    }
    ++served_;
    if (probe != nullptr) {
      const int now = ++probe->in_flight;
      int peak = probe->peak.load();
      while (now > peak && !probe->peak.compare_exchange_weak(peak, now)) {
      }
    }
    if (delay > 0ms) std::this_thread::sleep_for(delay);
    if (probe != nullptr) {
      --probe->in_flight;
      ++probe->served;
    }
    if (hang) {
      std::lock_guard lock(mu_);
      held_.push_back(std::move(respond));
      return;
    }
    respond(std::move(response));
  }

  net::HttpServer server_;
  bool started_ = false;
  std::mutex mu_;
  std::string body_;
  std::string content_type_ = "text/plain; version=0.0.4; charset=utf-8";
  std::string last_accept_;
  int status_ = 200;
  std::vector<std::pair<std::string, std::string>> headers_;
  std::chrono::milliseconds delay_{0};
  bool hang_ = false;
  Probe* probe_ = nullptr;
  std::vector<net::Responder> held_;
  std::atomic<int> served_{0};
};

// An in-memory ObjectSource with Kubernetes' NotFound messages.
class FakeObjects : public ObjectSource {
 public:
  std::vector<ModelDeployment> model_deployments;
  std::vector<Pod> pods;
  std::vector<ReplicaSet> replica_sets;
  std::vector<Deployment> deployments;
  Status list_status = Status::Ok();
  Status replica_set_status = Status::Ok();
  int replica_set_reads = 0;
  int deployment_reads = 0;

  Status GetModelDeployment(std::string_view ns, std::string_view name,
                            ModelDeployment* out) override {
    for (const ModelDeployment& md : model_deployments) {
      if (md.metadata.namespace_ == ns && md.metadata.name == name) {
        *out = md;
        return Status::Ok();
      }
    }
    return Status::NotFound(
        fmt::format("modeldeployments.worker.gpustack.ai \"{}\" not found", name));
  }
  Status ListPods(std::string_view ns, std::string_view selector, std::vector<Pod>* out) override {
    if (!list_status.ok()) return list_status;
    out->clear();
    for (const Pod& pod : pods) {
      if (pod.metadata.namespace_ == ns && MatchesSelector(pod.metadata, selector)) {
        out->push_back(pod);
      }
    }
    return Status::Ok();
  }
  Status GetReplicaSet(std::string_view ns, std::string_view name, ReplicaSet* out) override {
    ++replica_set_reads;
    if (!replica_set_status.ok()) return replica_set_status;
    for (const ReplicaSet& rs : replica_sets) {
      if (rs.metadata.namespace_ == ns && rs.metadata.name == name) {
        *out = rs;
        return Status::Ok();
      }
    }
    return Status::NotFound(fmt::format("replicasets.apps \"{}\" not found", name));
  }
  Status GetDeployment(std::string_view ns, std::string_view name, Deployment* out) override {
    ++deployment_reads;
    for (const Deployment& d : deployments) {
      if (d.metadata.namespace_ == ns && d.metadata.name == name) {
        *out = d;
        return Status::Ok();
      }
    }
    return Status::NotFound(fmt::format("deployments.apps \"{}\" not found", name));
  }
};

// The objects, servers, fake clock and baseline store of one test.
class Harness {
 public:
  explicit Harness(ModelDeployment md = MetricsModelDeployment()) {
    objects.model_deployments.push_back(std::move(md));
  }

  ModelDeployment& md() { return objects.model_deployments[0]; }

  AggregatorOptions Options() {
    AggregatorOptions options;
    options.now = [this] { return T0() + std::chrono::nanoseconds(offset_ns_.load()); };
    options.steady_now = [this] { return ReadTime::Replay(Now()).steady; };
    options.baselines = &store;
    return options;
  }
  void Advance(std::chrono::nanoseconds d) { offset_ns_ += d.count(); }
  WallTime Now() const { return T0() + std::chrono::nanoseconds(offset_ns_.load()); }

  // A Pod whose endpoint is a new loopback server answering `body`.
  PodServer* AddPod(Pod pod, std::string body) {
    servers.push_back(std::make_unique<PodServer>());
    PodServer* server = servers.back().get();
    server->Set(std::move(body));
    SetPort(&pod, server->port());
    objects.pods.push_back(std::move(pod));
    return server;
  }
  PodServer* AddEnginePod(const std::string& name, std::string body,
                          std::string component = "server") {
    return AddPod(MetricsEnginePod(name, name + "-uid", std::move(component)), std::move(body));
  }

  // The router's ownership chain: ReplicaSet chat-router-5d8f -> Deployment chat-router -> md.
  void AddRouterChain() {
    ReplicaSet rs;
    rs.metadata.name = "chat-router-5d8f";
    rs.metadata.namespace_ = "team";
    rs.metadata.uid = "rs-one";
    rs.metadata.owner_references = {OwnerReference{.api_version = "apps/v1",
                                                   .kind = "Deployment",
                                                   .name = "chat-router",
                                                   .uid = "dep-one",
                                                   .controller = true}};
    objects.replica_sets.push_back(rs);
    Deployment deployment;
    deployment.metadata.name = "chat-router";
    deployment.metadata.namespace_ = "team";
    deployment.metadata.uid = "dep-one";
    deployment.metadata.owner_references = {
        OwnerReference{.api_version = "worker.gpustack.ai/v1alpha1",
                       .kind = "ModelDeployment",
                       .name = "chat",
                       .uid = "md-one",
                       .controller = true}};
    objects.deployments.push_back(deployment);
  }

  static void SetPort(Pod* pod, int port) {
    pod->metadata.annotations["prometheus.io/port"] = std::to_string(port);
    pod->containers.at(0).ports = {ContainerPort{.container_port = port}};
  }

  Status Get(Aggregator& aggregator, Snapshot* out, std::string_view name = "chat") {
    return aggregator.Get("team", name, out);
  }

  FakeObjects objects;
  BaselineStore store;
  std::vector<std::unique_ptr<PodServer>> servers;

 private:
  std::atomic<int64_t> offset_ns_{0};
};

std::string LlmdRouterBody(double running, double ttft_sum, double ttft_count, double tpot_sum,
                           double tpot_count, double requests, double errors) {
  return fmt::format(
      "# TYPE llm_d_epp_request_running gauge\n"
      "llm_d_epp_request_running{{model_name=\"m\"}} {0}\n"
      "# TYPE llm_d_epp_ready_endpoints gauge\n"
      "llm_d_epp_ready_endpoints{{name=\"chat\"}} 2\n"
      "# TYPE llm_d_epp_request_ttft_seconds histogram\n"
      "llm_d_epp_request_ttft_seconds_bucket{{le=\"+Inf\"}} {2}\n"
      "llm_d_epp_request_ttft_seconds_sum {1}\n"
      "llm_d_epp_request_ttft_seconds_count {2}\n"
      "# TYPE llm_d_epp_request_streaming_tpot_seconds histogram\n"
      "llm_d_epp_request_streaming_tpot_seconds_bucket{{le=\"+Inf\"}} {4}\n"
      "llm_d_epp_request_streaming_tpot_seconds_sum {3}\n"
      "llm_d_epp_request_streaming_tpot_seconds_count {4}\n"
      "# TYPE llm_d_epp_request_total counter\n"
      "llm_d_epp_request_total{{model_name=\"m\"}} {5}\n"
      "# TYPE llm_d_epp_request_error_total counter\n"
      "llm_d_epp_request_error_total{{model_name=\"m\",error_code=\"x\"}} {6}\n",
      running, ttft_sum, ttft_count, tpot_sum, tpot_count, requests, errors);
}

// ---------------------------------------------------------------------------------------------
// §4.1 HTTP-level upstream cases.

// §4.1 case 9.
TEST(SnapshotUpstream, EngineSnapshot) {
  Harness h;
  h.md().roles[0].replicas = 2;
  PodServer* a = h.AddEnginePod("server-a", MetricsVLLMResponse(5, 10, 2));
  PodServer* b = h.AddEnginePod("server-b", MetricsVLLMResponse(5, 10, 2));
  Pod other = MetricsEnginePod("other-owner", "other-uid");
  other.metadata.owner_references[0].uid = "md-two";
  PodServer* stranger = h.AddPod(other, MetricsVLLMResponse(5, 10, 2));
  Aggregator aggregator(&h.objects, h.Options());

  Snapshot first;
  ASSERT_TRUE(h.Get(aggregator, &first).ok());
  EXPECT_TRUE(first.partial);
  ASSERT_EQ(first.processing.size(), 1u);
  EXPECT_EQ(first.processing[0].name, "running");
  EXPECT_EQ(first.processing[0].value, 4);
  EXPECT_EQ(first.processing[0].pod_count, 2);
  EXPECT_EQ(first.processing[0].unit, "requests");
  EXPECT_EQ(first.processing[0].observed_at, T0());
  ASSERT_EQ(first.queueing.size(), 1u);
  EXPECT_EQ(first.queueing[0].name, "waiting");
  EXPECT_EQ(first.queueing[0].value, 0);  // a measured zero, kept
  EXPECT_TRUE(first.cache_hits.empty());
  ASSERT_EQ(GpuStackMissing(first).size(), 8u);
  for (const Missing& m : GpuStackMissing(first)) {
    EXPECT_EQ(m.reason, "awaiting a second counter sample") << m.pod << " " << m.source;
    EXPECT_NE(m.pod, "other-owner");
  }
  EXPECT_EQ(first.timestamp, T0());

  h.Advance(30s);
  a->Set(MetricsVLLMResponse(10, 20, 4));
  b->Set(MetricsVLLMResponse(10, 20, 4));
  Snapshot second;
  ASSERT_TRUE(h.Get(aggregator, &second).ok());
  EXPECT_FALSE(second.partial);
  EXPECT_TRUE(GpuStackMissing(second).empty());
  ASSERT_EQ(second.latency.size(), 6u);
  for (const Window& w : second.latency) {
    EXPECT_EQ(w.samples, 2) << w.pod << "/" << w.name;
    EXPECT_EQ(w.scope, "engine/server");
    EXPECT_EQ(w.window_seconds, 30);
  }
  EXPECT_EQ(WindowKeys(second.latency),
            (std::vector<std::string>{"server-a/itl", "server-a/tpot", "server-a/ttft",
                                      "server-b/itl", "server-b/tpot", "server-b/ttft"}));
  ASSERT_EQ(second.cache_hits.size(), 2u);
  for (const CacheHit& hit : second.cache_hits) {
    EXPECT_EQ(hit.hits, 5);
    EXPECT_EQ(hit.queries, 10);
    EXPECT_EQ(hit.rate, 0.5);
    EXPECT_GT(hit.window_seconds, 0);
    EXPECT_NE(hit.pod, "other-owner");
  }
  EXPECT_EQ(stranger->served(), 0);
  EXPECT_EQ(second.timestamp, T0() + 30s);
  const std::string json = SnapshotToJson(second);
  EXPECT_NE(json.find("\"timestamp\":\"2026-11-29T16:13:45Z\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"partial\":false"), std::string::npos);
}

// A body that repeats a series (same name and labels) is unreadable, as Prometheus rejects such
// a scrape: the Pod is in missing[] with the duplicate named, and its values are not added up.
TEST(Aggregator, DuplicateSeriesMakeAPodUnreadable) {
  Harness h;
  h.md().roles[0].replicas = 2;
  h.AddEnginePod("server-a", MetricsVLLMResponse(5, 10, 2));
  std::string doubled = MetricsVLLMResponse(5, 10, 2);
  const size_t at = doubled.find("\nvllm:num_requests_running");
  ASSERT_NE(at, std::string::npos);
  const size_t end = doubled.find('\n', at + 1);
  const std::string line = doubled.substr(at, end - at);  // "\n<the series line>"
  doubled.insert(end, line + line);
  h.AddEnginePod("server-b", doubled);
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_TRUE(snapshot.partial);
  const auto b = std::find_if(snapshot.missing.begin(), snapshot.missing.end(),
                              [](const Missing& m) { return m.pod == "server-b"; });
  ASSERT_NE(b, snapshot.missing.end());
  EXPECT_EQ(b->source, "scrape");
  EXPECT_EQ(b->reason,
            "parse Prometheus metrics: duplicate series "
            "vllm:num_requests_running{engine=\"0\",model_name=\"m\"}");
  // The gauges are server-a's alone, as if server-b had not answered.
  Harness alone;
  alone.AddEnginePod("server-a", MetricsVLLMResponse(5, 10, 2));
  Aggregator reference(&alone.objects, alone.Options());
  Snapshot expected;
  ASSERT_TRUE(alone.Get(reference, &expected).ok());
  ASSERT_FALSE(snapshot.processing.empty());
  EXPECT_EQ(SnapshotToJson(Snapshot{.processing = snapshot.processing}),
            SnapshotToJson(Snapshot{.processing = expected.processing}));
}

// §4.1 case 10.
TEST(SnapshotUpstream, UnreadableAndMissingDeployment) {
  Harness h;
  Pod pod = MetricsEnginePod("server-0", "server-0-uid");
  pod.metadata.annotations.erase("prometheus.io/path");
  h.objects.pods.push_back(pod);
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  const Status unreadable = h.Get(aggregator, &snapshot);
  EXPECT_EQ(unreadable.code(), 503);
  EXPECT_EQ(unreadable.reason(), "ServiceUnavailable");
  EXPECT_NE(unreadable.message().find("unreadable"), std::string::npos);
  EXPECT_EQ(unreadable.message(),
            "all ModelDeployment metrics Pods are unreadable: pod has no ready advertised "
            "metrics endpoint");

  const Status absent = h.Get(aggregator, &snapshot, "absent");
  EXPECT_TRUE(absent.not_found());
  EXPECT_EQ(absent.message(), "modeldeployments.worker.gpustack.ai \"absent\" not found");
}

// §4.1 case 11.
TEST(SnapshotUpstream, PartialScrape) {
  Harness h;
  h.md().roles[0].replicas = 2;
  h.AddEnginePod("good", MetricsVLLMFixture(0, 0));
  h.AddEnginePod("bad", "internal error")->Set("internal error", 500);
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_TRUE(snapshot.partial);
  ASSERT_EQ(snapshot.processing.size(), 1u);
  EXPECT_EQ(snapshot.processing[0].pod_count, 1);
  EXPECT_EQ(snapshot.processing[0].value, 2);
  ASSERT_FALSE(snapshot.missing.empty());
  EXPECT_EQ(snapshot.missing[0].pod, "bad");
  EXPECT_EQ(snapshot.missing[0], M("bad", "scrape", "metrics endpoint returned HTTP 500"));
}

// Each Pod read's outcome reaches the server's metrics as a bounded class, not the reason text.
TEST(Aggregator, PodReadOutcomesAreBoundedClasses) {
  Harness h;
  h.md().roles[0].replicas = 3;
  h.AddEnginePod("good", MetricsVLLMFixture(0, 0));
  h.AddEnginePod("bad", "internal error")->Set("internal error", 500);
  h.AddEnginePod("garbled", "vllm:num_requests_running{ 1\n");
  std::vector<std::string> outcomes;
  AggregatorOptions options = h.Options();
  options.on_pod_read = [&outcomes](std::string_view outcome) { outcomes.emplace_back(outcome); };
  Aggregator aggregator(&h.objects, options);
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  std::sort(outcomes.begin(), outcomes.end());
  EXPECT_EQ(outcomes, (std::vector<std::string>{"http_status", "ok", "parse_error"}));
}

// §4.1 case 12.
TEST(SnapshotUpstream, RouterOwnershipAndScope) {
  ModelDeployment md = MetricsModelDeployment();
  md.router = Router{.name = "llm-d-router", .replicas = 1};
  Harness h(md);
  h.AddRouterChain();
  PodServer* router =
      h.AddPod(MetricsRouterPod("chat-router-5d8f-x2p4q", "router-uid", "llm-d-router"),
               LlmdRouterBody(1, 0, 0, 0, 0, 0, 0));
  Aggregator aggregator(&h.objects, h.Options());

  Snapshot first;
  ASSERT_TRUE(h.Get(aggregator, &first).ok());
  EXPECT_TRUE(first.partial);
  EXPECT_NE(std::find(first.missing.begin(), first.missing.end(),
                      M("", "engine/server", "no owned metrics Pod")),
            first.missing.end());
  ASSERT_EQ(first.processing.size(), 2u);
  for (const Gauge& g : first.processing) EXPECT_EQ(g.scope, "router");
  EXPECT_EQ(FindGauge(first.processing, "router-running", "router")->value, 1);
  EXPECT_EQ(FindGauge(first.processing, "router-backends", "router")->value, 2);
  EXPECT_EQ(FindGauge(first.processing, "router-backends", "router")->source,
            "llm_d_epp_ready_endpoints");

  h.Advance(30s);
  router->Set(LlmdRouterBody(0, 6, 3, 3, 3, 3, 1));
  Snapshot second;
  ASSERT_TRUE(h.Get(aggregator, &second).ok());
  EXPECT_EQ(WindowKeys(second.latency), (std::vector<std::string>{"chat-router-5d8f-x2p4q/tpot",
                                                                  "chat-router-5d8f-x2p4q/ttft"}));
  EXPECT_EQ(FindWindow(second.latency, "chat-router-5d8f-x2p4q", "ttft")->value, 2);
  EXPECT_EQ(FindWindow(second.latency, "chat-router-5d8f-x2p4q", "ttft")->scope, "router");
  ASSERT_EQ(second.traffic.size(), 2u);
  EXPECT_EQ(second.traffic[0].name, "request-errors");
  EXPECT_EQ(second.traffic[0].source, "llm_d_epp_request_error_total");
  EXPECT_EQ(second.traffic[0].samples, 1);
  EXPECT_EQ(second.traffic[0].unit, "errors/second");
  EXPECT_EQ(second.traffic[1].name, "requests");
  EXPECT_EQ(second.traffic[1].source, "llm_d_epp_request_total");
  EXPECT_EQ(second.traffic[1].samples, 3);
  EXPECT_EQ(second.traffic[1].value, 0.1);
  EXPECT_EQ(second.missing, (Missings{M("", "engine/server", "no owned metrics Pod")}));
  EXPECT_TRUE(second.partial);
}

// Router replicas share their ReplicaSet and Deployment: each is read once per request, so a
// deployment with many router Pods costs no more API calls than one with a single Pod.
TEST(SnapshotAggregator, RouterOwnersAreReadOncePerRequest) {
  ModelDeployment md = MetricsModelDeployment();
  md.router = Router{.name = "llm-d-router", .replicas = 3};
  Harness h(md);
  h.AddRouterChain();
  for (const char* suffix : {"a1", "b2", "c3"}) {
    h.AddPod(MetricsRouterPod(std::string("chat-router-5d8f-") + suffix,
                              std::string("router-") + suffix, "llm-d-router"),
             LlmdRouterBody(1, 0, 0, 0, 0, 0, 0));
  }
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_EQ(h.objects.replica_set_reads, 1);
  EXPECT_EQ(h.objects.deployment_reads, 1);
  EXPECT_EQ(FindGauge(snapshot.processing, "router-running", "router")->pod_count, 3);
}

// §4.1 case 13.
TEST(SnapshotUpstream, RejectsUndeclaredPort) {
  Harness h;
  Pod pod = MetricsEnginePod("server-0", "server-0-uid");  // containerPort 8000
  pod.metadata.annotations["prometheus.io/port"] = "1234";
  h.objects.pods.push_back(pod);
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  const Status status = h.Get(aggregator, &snapshot);
  EXPECT_EQ(status.code(), 503);
  EXPECT_NE(status.message().find("port"), std::string::npos);
  EXPECT_EQ(status.message(),
            "all ModelDeployment metrics Pods are unreadable: pod advertises a metrics port absent "
            "from its containers");
}

// §4.1 case 14.
TEST(SnapshotUpstream, UsesAdvertisedHTTPSWithoutSkippingVerification) {
  Harness h;
  h.servers.push_back(std::make_unique<PodServer>(
      net::TlsOptions{.cert_file = TlsFile("server.pem"), .key_file = TlsFile("server-key.pem")}));
  PodServer* server = h.servers.back().get();
  server->Set(MetricsVLLMFixture(0, 0));
  Pod pod = MetricsEnginePod("server-0", "server-0-uid");
  Harness::SetPort(&pod, server->port());
  pod.metadata.annotations["prometheus.io/scheme"] = "https";
  h.objects.pods.push_back(pod);

  {
    Aggregator system_roots(&h.objects, h.Options());
    Snapshot snapshot;
    const Status status = h.Get(system_roots, &snapshot);
    EXPECT_EQ(status.code(), 503);
    EXPECT_NE(status.message().find("unreadable: Get \"https://127.0.0.1:"), std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find("tls: failed to verify certificate"), std::string::npos)
        << status.message();
  }
  AggregatorOptions options = h.Options();
  options.ca_file = TlsFile("ca.pem");
  Aggregator trusted(&h.objects, options);
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(trusted, &snapshot).ok());
  ASSERT_EQ(snapshot.processing.size(), 1u);
  EXPECT_EQ(snapshot.processing[0].value, 2);

  // Plain HTTP against the TLS endpoint fails.
  h.objects.pods[0].metadata.annotations["prometheus.io/scheme"] = "http";
  const Status plain = h.Get(trusted, &snapshot);
  EXPECT_EQ(plain.code(), 503) << plain.message();

  // A certificate from another CA fails even with the cluster CA configured.
  Harness untrusted_h;
  untrusted_h.servers.push_back(std::make_unique<PodServer>(
      net::TlsOptions{.cert_file = TlsFile("untrusted-server.pem"),
                      .key_file = TlsFile("untrusted-server-key.pem")}));
  untrusted_h.servers.back()->Set(MetricsVLLMFixture(0, 0));
  Pod untrusted_pod = MetricsEnginePod("server-0", "server-0-uid");
  Harness::SetPort(&untrusted_pod, untrusted_h.servers.back()->port());
  untrusted_pod.metadata.annotations["prometheus.io/scheme"] = "https";
  untrusted_h.objects.pods.push_back(untrusted_pod);
  AggregatorOptions untrusted_options = untrusted_h.Options();
  untrusted_options.ca_file = TlsFile("ca.pem");
  Aggregator untrusted(&untrusted_h.objects, untrusted_options);
  const Status refused = untrusted_h.Get(untrusted, &snapshot);
  EXPECT_EQ(refused.code(), 503);
  EXPECT_NE(refused.message().find("tls: failed to verify certificate"), std::string::npos)
      << refused.message();
}

// §4.1 case 15.
TEST(SnapshotUpstream, RejectsOversizedScrape) {
  constexpr size_t kCap = size_t{1} << 20;
  auto padded = [](size_t total) {
    std::string body = MetricsVLLMFixture(0, 0);
    while (body.size() + 100 <= total) body += "# " + std::string(97, 'x') + "\n";
    body += "#" + std::string(total - body.size() - 2, 'y') + "\n";
    EXPECT_EQ(body.size(), total);
    return body;
  };
  Harness h;
  PodServer* server = h.AddEnginePod("server-0", padded(kCap + 1));
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  const Status status = h.Get(aggregator, &snapshot);
  EXPECT_EQ(status.code(), 503);
  EXPECT_NE(status.message().find("exceeds"), std::string::npos);
  EXPECT_EQ(status.message(),
            "all ModelDeployment metrics Pods are unreadable: metrics response exceeds 1048576 "
            "bytes");

  server->Set(padded(kCap));  // exactly the cap is read
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_EQ(snapshot.processing.at(0).value, 2);
}

// §4.1 case 16: a hanging endpoint with a 100 ms request deadline (upstream's context), and with a
// 100 ms per-fetch timeout (the client's).
TEST(SnapshotUpstream, RespectsScrapeDeadline) {
  Harness h;
  PodServer* server = h.AddEnginePod("server-0", MetricsVLLMFixture(0, 0));
  server->SetHang();
  {
    AggregatorOptions options = h.Options();
    options.request_timeout = 100ms;
    Aggregator aggregator(&h.objects, options);
    Snapshot snapshot;
    const auto start = SteadyClock::now();
    const Status status = h.Get(aggregator, &snapshot);
    EXPECT_LT(SteadyClock::now() - start, 1500ms);
    EXPECT_EQ(status.code(), 503);
    EXPECT_NE(status.message().find("context deadline exceeded"), std::string::npos)
        << status.message();
  }
  {
    AggregatorOptions options = h.Options();
    options.fetch_timeout = 100ms;
    Aggregator aggregator(&h.objects, options);
    Snapshot snapshot;
    const auto start = SteadyClock::now();
    const Status status = h.Get(aggregator, &snapshot);
    EXPECT_LT(SteadyClock::now() - start, 1500ms);
    EXPECT_EQ(status.code(), 503);
    EXPECT_NE(status.message().find("context deadline exceeded"), std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find("Client.Timeout"), std::string::npos) << status.message();
  }
  server->Release();
}

// §4.1 case 17.
TEST(SnapshotUpstream, BoundsConcurrentScrapes) {
  Harness h;
  h.md().roles[0].replicas = 36;
  Probe probe;
  for (int i = 0; i < 36; ++i) {
    PodServer* server = h.AddEnginePod(fmt::format("server-{:02}", i), MetricsVLLMFixture(0, 0));
    server->SetDelay(30ms);
    server->SetProbe(&probe);
  }
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  ASSERT_EQ(snapshot.processing.size(), 1u);
  EXPECT_EQ(snapshot.processing[0].pod_count, 36);
  EXPECT_EQ(snapshot.processing[0].value, 72);
  EXPECT_EQ(probe.served.load(), 36);
  EXPECT_LE(probe.peak.load(), 32);
  EXPECT_GE(probe.peak.load(), 2);  // they did run concurrently
  for (const Missing& m : snapshot.missing) EXPECT_NE(m.source, "scrape") << m.reason;
}

// §4.1 case 18.
TEST(SnapshotUpstream, ScrapeBudgetFitsTheRequest) {
  const AggregatorOptions options;
  EXPECT_EQ(options.pod_limit, 64u);
  EXPECT_EQ(options.max_in_flight, 32u);
  EXPECT_EQ(options.fetch_timeout, 2s);
  EXPECT_EQ(options.request_timeout, 8s);
  EXPECT_EQ(options.max_body_bytes, 1048576u);
  const size_t rounds = (options.pod_limit + options.max_in_flight - 1) / options.max_in_flight;
  EXPECT_LE(rounds * options.fetch_timeout, options.request_timeout / 2);
  EXPECT_EQ(BaselineStore::kMaxAge, 5min);
  EXPECT_EQ(BaselineStore::kPurgeAge, 10min);
}

// §4.1 case 20.
TEST(SnapshotUpstream, ReportsMissingRoleReplica) {
  Harness h;
  h.md().roles[0].replicas = 2;
  PodServer* server = h.AddEnginePod("server-0", MetricsVLLMResponse(5, 10, 2));
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  h.Advance(30s);
  server->Set(MetricsVLLMResponse(10, 20, 4));
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_TRUE(snapshot.partial);
  EXPECT_EQ(GpuStackMissing(snapshot),
            (Missings{M("", "engine/server", "1 of 2 owned metrics Pods present")}));
}

// §4.1 case 32, from the fixtures, with the §4.2 golden values.
TEST(SnapshotUpstream, RoutedServersWithOneIdleAreComplete) {
  ModelDeployment md = MetricsModelDeployment();
  md.roles[0].replicas = 2;
  md.router = Router{.name = "vllm-router", .replicas = 1};
  Harness h(md);
  h.AddRouterChain();
  PodServer* router = h.AddPod(MetricsRouterPod("chat-router-pod", "router-uid", "vllm-router"),
                               Fixture("vllm_router_server_first.prom"));
  PodServer* busy = h.AddEnginePod("chat-server-busy", Fixture("vllm_server_busy_first.prom"));
  PodServer* idle = h.AddEnginePod("chat-server-idle", Fixture("vllm_server_idle_first.prom"));
  Aggregator aggregator(&h.objects, h.Options());

  Snapshot first;
  ASSERT_TRUE(h.Get(aggregator, &first).ok());
  EXPECT_TRUE(first.partial);

  h.Advance(30s);
  router->Set(Fixture("vllm_router_server_second.prom"));
  busy->Set(Fixture("vllm_server_busy_second.prom"));
  idle->Set(Fixture("vllm_server_idle_second.prom"));
  Snapshot second;
  ASSERT_TRUE(h.Get(aggregator, &second).ok());
  EXPECT_EQ(
      GpuStackMissing(second),
      (Missings{
          M("chat-router-pod", "vllm_router_request_errors_total",
            reason::kLabeledCounterUnexported),
          M("chat-router-pod", "vllm_router_retries_exhausted_total",
            reason::kLabeledCounterUnexported),
          M("chat-server-busy", "external-store", reason::kVllmNoKvConnector),
          M("chat-server-idle", "external-store", reason::kVllmNoKvConnector),
          M("chat-server-idle", "local-prefix", reason::kIdleWindow),
          M("chat-server-idle", "vllm:inter_token_latency_seconds", reason::kIdleWindow),
          M("chat-server-idle", "vllm:request_time_per_output_token_seconds", reason::kIdleWindow),
          M("chat-server-idle", "vllm:time_to_first_token_seconds", reason::kIdleWindow),
      }));
  EXPECT_FALSE(second.partial);
  ASSERT_EQ(second.cache_hits.size(), 1u);
  EXPECT_EQ(second.cache_hits[0].pod, "chat-server-busy");
  EXPECT_EQ(WindowKeys(second.latency),
            (std::vector<std::string>{"chat-server-busy/itl", "chat-server-busy/tpot",
                                      "chat-server-busy/ttft"}));

  // §4.2 golden values through the whole request.
  const CacheHit& local = second.cache_hits[0];
  EXPECT_EQ(local.hits, 26656);
  EXPECT_EQ(local.queries, 37842);
  EXPECT_EQ(local.rate, 0.7044025157232704);
  EXPECT_EQ(local.window_seconds, 30);
  EXPECT_EQ(FindWindow(second.latency, "chat-server-busy", "ttft")->samples, 238);
  EXPECT_EQ(FindWindow(second.latency, "chat-server-busy", "ttft")->value, 0.01955626391563095);
  EXPECT_EQ(FindWindow(second.latency, "chat-server-busy", "tpot")->samples, 239);
  EXPECT_EQ(FindWindow(second.latency, "chat-server-busy", "tpot")->value, 0.005745277962966269);
  EXPECT_EQ(FindWindow(second.latency, "chat-server-busy", "itl")->samples, 11210);
  EXPECT_EQ(FindWindow(second.latency, "chat-server-busy", "itl")->value, 0.005745471810437156);
  const Window* requests = FindWindow(second.traffic, "chat-router-pod", "successful-requests");
  ASSERT_NE(requests, nullptr);
  EXPECT_EQ(requests->samples, 246);
  EXPECT_EQ(requests->value, 8.2);
  EXPECT_EQ(requests->window_seconds, 30);
  EXPECT_EQ(FindGauge(second.processing, "router-running", "router")->value, 0);
  EXPECT_EQ(FindGauge(second.processing, "router-reported-workers", "router")->value, 2);
  EXPECT_EQ(FindGauge(second.processing, "running", "engine/server")->value, 0);
  EXPECT_EQ(FindGauge(second.processing, "running", "engine/server")->pod_count, 2);

  const std::string json = SnapshotToJson(second);
  EXPECT_NE(json.find("\"rate\":0.7044025157232704"), std::string::npos);
  EXPECT_NE(json.find("\"value\":8.2,\"samples\":246,\"windowSeconds\":30"), std::string::npos);
}

// vLLM's Rust frontend answers OpenMetrics whatever the scraper's Accept asks for (GPUStack issue
// 6215): the snapshot reads it, to the reference's golden values, complete.
TEST(SnapshotUpstream, VllmRustFrontendServesOpenMetricsWhateverAcceptSays) {
  Harness h;
  PodServer* pod = h.AddEnginePod("chat-server-0", UpstreamBody("vllm_rust_frontend_first.om"));
  pod->SetContentType("application/openmetrics-text; version=1.0.0; charset=utf-8");
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot first;
  ASSERT_TRUE(h.Get(aggregator, &first).ok());
  EXPECT_NE(pod->last_accept().find("text/plain"), std::string::npos);
  h.Advance(30s);
  pod->Set(UpstreamBody("vllm_rust_frontend_second.om"));
  Snapshot second;
  ASSERT_TRUE(h.Get(aggregator, &second).ok());
  EXPECT_TRUE(GpuStackMissing(second).empty()) << SnapshotToJson(second);
  EXPECT_FALSE(second.partial);
  EXPECT_EQ(FindWindow(second.latency, "chat-server-0", "ttft")->value, 0.01955626391563095);
  EXPECT_EQ(FindWindow(second.latency, "chat-server-0", "itl")->samples, 11210);
  ASSERT_EQ(second.cache_hits.size(), 1u);
  EXPECT_EQ(second.cache_hits[0].rate, 0.7044025157232704);
}

// ---------------------------------------------------------------------------------------------
// Discovery, ownership, coverage and scrape rules (§2.2).

TEST(Aggregator, RouterOwnershipChain) {
  ModelDeployment md = MetricsModelDeployment();
  md.router = Router{.name = "llm-d-router"};  // replicas nil: expected 1
  struct Case {
    const char* name;
    void (*mutate)(Harness*, Pod*);
  };
  const Case cases[] = {
      {"owned", [](Harness*, Pod*) {}},
      {"router label differs from spec.router.name",
       [](Harness*, Pod* pod) { pod->metadata.labels[std::string(kLabelRouter)] = "vllm-router"; }},
      {"controller is not a ReplicaSet",
       [](Harness*, Pod* pod) { pod->metadata.owner_references[0].kind = "StatefulSet"; }},
      {"ReplicaSet UID mismatch",
       [](Harness*, Pod* pod) { pod->metadata.owner_references[0].uid = "rs-two"; }},
      {"ReplicaSet not found", [](Harness* h, Pod*) { h->objects.replica_sets.clear(); }},
      {"Deployment not named <md>-router",
       [](Harness* h, Pod*) {
         h->objects.replica_sets[0].metadata.owner_references[0].name = "chat-gateway";
         h->objects.deployments[0].metadata.name = "chat-gateway";
       }},
      {"Deployment not found", [](Harness* h, Pod*) { h->objects.deployments.clear(); }},
      {"Deployment UID mismatch",
       [](Harness* h, Pod*) { h->objects.deployments[0].metadata.uid = "dep-two"; }},
      {"Deployment owned by another ModelDeployment",
       [](Harness* h, Pod*) {
         h->objects.deployments[0].metadata.owner_references[0].uid = "md-two";
       }},
      {"ReplicaSet's owner is not the controller",
       [](Harness* h, Pod*) {
         h->objects.replica_sets[0].metadata.owner_references[0].controller = false;
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Harness h(md);
    h.AddRouterChain();
    Pod pod = MetricsRouterPod("chat-router-5d8f-x2p4q", "router-uid", "llm-d-router");
    c.mutate(&h, &pod);
    h.AddPod(pod, LlmdRouterBody(1, 0, 0, 0, 0, 0, 0));
    Aggregator aggregator(&h.objects, h.Options());
    Snapshot snapshot;
    const Status status = h.Get(aggregator, &snapshot);
    if (std::string_view(c.name) == "owned") {
      EXPECT_TRUE(status.ok()) << status.message();
      EXPECT_EQ(FindGauge(snapshot.processing, "router-running", "router")->pod_count, 1);
    } else {
      EXPECT_EQ(status.code(), 503);
      EXPECT_EQ(status.reason(), "ServiceUnavailable");
      EXPECT_EQ(status.message(), "ModelDeployment has no owned metrics Pods");
    }
  }
}

TEST(Aggregator, OwnershipLookupErrorsAbortTheRequest) {
  ModelDeployment md = MetricsModelDeployment();
  md.router = Router{.name = "llm-d-router"};
  Harness h(md);
  h.AddRouterChain();
  h.AddPod(MetricsRouterPod("chat-router-5d8f-x2p4q", "router-uid", "llm-d-router"),
           LlmdRouterBody(1, 0, 0, 0, 0, 0, 0));
  h.objects.replica_set_status = Status{403, "Forbidden", "replicasets.apps is forbidden"};
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  const Status status = h.Get(aggregator, &snapshot);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.code(), 503);
  EXPECT_NE(status.message().find("forbidden"), std::string::npos) << status.message();

  h.objects.replica_set_status = Status::Ok();
  h.objects.list_status = Status::Internal("etcd is gone");
  const Status list = h.Get(aggregator, &snapshot);
  EXPECT_EQ(list.code(), 500);
  EXPECT_EQ(list.message(), "list ModelDeployment Pods: etcd is gone");
}

TEST(Aggregator, EngineOwnershipAndCoverage) {
  ModelDeployment md = MetricsModelDeployment();
  md.roles = {Role{.name = "server", .kind = "server", .replicas = 1, .size = 2},
              Role{.name = "custom", .kind = "server", .replicas = 3, .command = {"my-server"}},
              Role{.name = "spare", .kind = "server"}};
  md.router = Router{.name = "vllm-router", .replicas = 2};
  Harness h(md);
  h.AddEnginePod("chat-server-0", MetricsVLLMFixture(0, 0));
  // A role with a command is the user's: its Pods are not owned metrics Pods.
  h.AddEnginePod("chat-custom-0", MetricsVLLMFixture(0, 0), "custom");
  // No role of that name.
  h.AddEnginePod("chat-unknown-0", MetricsVLLMFixture(0, 0), "unknown");
  // Another deployment's instance label: not listed.
  Pod foreign = MetricsEnginePod("foreign-0", "foreign-uid");
  foreign.metadata.labels[std::string(kLabelInstance)] = "other";
  h.AddPod(foreign, MetricsVLLMFixture(0, 0));
  // The controller is not a ModelDeployment.
  Pod orphan = MetricsEnginePod("chat-orphan-0", "orphan-uid");
  orphan.metadata.owner_references[0].kind = "ReplicaSet";
  h.AddPod(orphan, MetricsVLLMFixture(0, 0));
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_EQ(FindGauge(snapshot.processing, "running", "engine/server")->pod_count, 1);
  EXPECT_EQ(snapshot.processing.size(), 1u);
  Missings deployment_level;
  for (const Missing& m : snapshot.missing) {
    if (m.pod.empty()) deployment_level.push_back(m);
  }
  EXPECT_EQ(deployment_level, (Missings{M("", "engine/server", "1 of 2 owned metrics Pods present"),
                                        M("", "engine/spare", "no owned metrics Pod"),
                                        M("", "router", "no owned metrics Pod")}));
  for (const Missing& m : snapshot.missing) {
    EXPECT_NE(m.pod, "chat-custom-0");
    EXPECT_NE(m.pod, "chat-unknown-0");
    EXPECT_NE(m.pod, "chat-orphan-0");
    EXPECT_NE(m.source, "engine/custom");
  }
}

TEST(Aggregator, ExtraPodsAreNotReported) {
  Harness h;  // one server replica expected
  h.AddEnginePod("chat-server-0", MetricsVLLMFixture(0, 0));
  h.AddEnginePod("chat-server-1", MetricsVLLMFixture(0, 0));
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_EQ(snapshot.processing.at(0).pod_count, 2);
  for (const Missing& m : snapshot.missing) EXPECT_FALSE(m.pod.empty()) << m.source;
}

TEST(Aggregator, PodLimitKeepsTheFirst64ByName) {
  Harness h;
  h.md().roles[0].replicas = 65;
  h.AddEnginePod("a-server", MetricsVLLMFixture(0, 0));
  for (int i = 0; i < 64; ++i) {
    Pod pod = MetricsEnginePod(fmt::format("b-{:02}", i), fmt::format("b-{:02}-uid", i));
    pod.pod_ip.clear();  // no endpoint: a cheap scrape error
    h.objects.pods.push_back(pod);
  }
  std::reverse(h.objects.pods.begin(), h.objects.pods.end());  // the source's order is irrelevant
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_TRUE(snapshot.partial);
  size_t scrape_errors = 0;
  bool limit = false;
  for (const Missing& m : snapshot.missing) {
    if (m.source == "scrape") {
      ++scrape_errors;
      EXPECT_EQ(m.reason, "pod has no ready advertised metrics endpoint");
      EXPECT_NE(m.pod, "b-63");
    }
    if (m == M("", "pod-discovery", "Pod count exceeds the bounded scrape limit")) limit = true;
  }
  EXPECT_TRUE(limit);
  EXPECT_EQ(scrape_errors, 63u);
  EXPECT_EQ(snapshot.processing.at(0).pod_count, 1);
  // Coverage counts before truncation: 65 of 65 present, no coverage entry.
  for (const Missing& m : snapshot.missing) EXPECT_NE(m.source, "engine/server");
}

TEST(Aggregator, AnnotationRulesGiveExactErrors) {
  struct Case {
    const char* name;
    void (*mutate)(Pod*);
    const char* error;
  };
  const Case cases[] = {
      {"no podIP", [](Pod* p) { p->pod_ip.clear(); },
       "pod has no ready advertised metrics endpoint"},
      {"scrape not true", [](Pod* p) { p->metadata.annotations["prometheus.io/scrape"] = "True"; },
       "pod has no ready advertised metrics endpoint"},
      {"path not exactly /metrics",
       [](Pod* p) { p->metadata.annotations["prometheus.io/path"] = "/metrics/"; },
       "pod has no ready advertised metrics endpoint"},
      {"port 0", [](Pod* p) { p->metadata.annotations["prometheus.io/port"] = "0"; },
       "pod advertises an invalid metrics port"},
      {"port 65536", [](Pod* p) { p->metadata.annotations["prometheus.io/port"] = "65536"; },
       "pod advertises an invalid metrics port"},
      {"port text", [](Pod* p) { p->metadata.annotations["prometheus.io/port"] = "http"; },
       "pod advertises an invalid metrics port"},
      {"port overflows 32 bits",
       [](Pod* p) { p->metadata.annotations["prometheus.io/port"] = "4294975296"; },
       "pod advertises an invalid metrics port"},
      {"port absent", [](Pod* p) { p->metadata.annotations.erase("prometheus.io/port"); },
       "pod advertises an invalid metrics port"},
      {"scheme ftp", [](Pod* p) { p->metadata.annotations["prometheus.io/scheme"] = "ftp"; },
       "pod advertises an invalid metrics scheme"},
      {"scheme HTTP", [](Pod* p) { p->metadata.annotations["prometheus.io/scheme"] = "HTTP"; },
       "pod advertises an invalid metrics scheme"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Harness h;
    Pod pod = MetricsEnginePod("server-0", "server-0-uid");
    c.mutate(&pod);
    h.objects.pods.push_back(pod);
    Aggregator aggregator(&h.objects, h.Options());
    Snapshot snapshot;
    const Status status = h.Get(aggregator, &snapshot);
    EXPECT_EQ(status.code(), 503);
    EXPECT_EQ(status.message(),
              std::string("all ModelDeployment metrics Pods are unreadable: ") + c.error);
  }
}

TEST(Aggregator, PortDeclaredByAnInitContainerIsAccepted) {
  Harness h;
  h.servers.push_back(std::make_unique<PodServer>());
  PodServer* server = h.servers.back().get();
  server->Set(MetricsVLLMFixture(0, 0));
  Pod pod = MetricsEnginePod("server-0", "server-0-uid");
  pod.metadata.annotations["prometheus.io/port"] = std::to_string(server->port());
  pod.init_containers = {
      Container{.name = "sidecar", .ports = {ContainerPort{.container_port = server->port()}}}};
  h.objects.pods.push_back(pod);
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_EQ(snapshot.processing.at(0).value, 2);
}

TEST(Aggregator, ScrapeFailuresAreReportedPerPod) {
  Harness h;
  h.md().roles[0].replicas = 4;
  h.AddEnginePod("a-good", MetricsVLLMFixture(0, 0));
  PodServer* redirect = h.AddEnginePod("b-redirect", "");
  redirect->Set("moved", 302);
  redirect->SetHeader("Location", "http://127.0.0.1:1/metrics");
  h.AddEnginePod("c-garbage", "this is { not prometheus\n");
  h.AddEnginePod("d-missing", "")->Set("not found", 404);
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_TRUE(snapshot.partial);
  Missings scrape;
  for (const Missing& m : snapshot.missing) {
    if (m.source == "scrape") scrape.push_back(m);
  }
  ASSERT_EQ(scrape.size(), 3u);
  EXPECT_EQ(scrape[0], M("b-redirect", "scrape", "metrics endpoint returned HTTP 302"));
  EXPECT_EQ(scrape[1].pod, "c-garbage");
  EXPECT_TRUE(scrape[1].reason.str().starts_with("parse Prometheus metrics: ")) << scrape[1].reason;
  EXPECT_EQ(scrape[2], M("d-missing", "scrape", "metrics endpoint returned HTTP 404"));
  EXPECT_EQ(snapshot.processing.at(0).pod_count, 1);
}

TEST(Aggregator, AllUnreadableReportsTheFirstPodsError) {
  Harness h;
  h.md().roles[0].replicas = 2;
  h.AddEnginePod("b-server", "")->Set("", 500);
  Pod pod = MetricsEnginePod("a-server", "a-uid");
  pod.metadata.annotations["prometheus.io/scheme"] = "gopher";
  h.objects.pods.push_back(pod);
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  const Status status = h.Get(aggregator, &snapshot);
  EXPECT_EQ(status.code(), 503);
  EXPECT_EQ(status.message(),
            "all ModelDeployment metrics Pods are unreadable: pod advertises an invalid metrics "
            "scheme");
}

// windowSeconds is the fake clock's delta at full precision; observedAt serializes at seconds.
TEST(Aggregator, WindowSecondsAtFullPrecision) {
  Harness h;
  PodServer* server = h.AddEnginePod("server-0", MetricsVLLMResponse(5, 10, 2));
  Aggregator aggregator(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  h.Advance(30s + 250ms);
  server->Set(MetricsVLLMResponse(10, 20, 4));
  ASSERT_TRUE(h.Get(aggregator, &snapshot).ok());
  EXPECT_EQ(snapshot.cache_hits.at(0).window_seconds, 30.25);
  EXPECT_EQ(FindWindow(snapshot.latency, "server-0", "ttft")->window_seconds, 30.25);
  EXPECT_EQ(snapshot.timestamp, T0() + 30s + 250ms);
  const std::string json = SnapshotToJson(snapshot);
  EXPECT_NE(json.find("\"windowSeconds\":30.25,\"observedAt\":\"2026-11-29T16:13:45Z\""),
            std::string::npos)
      << json;
}

// The store is shared by every caller: two aggregators over one store see one window.
TEST(Aggregator, BaselinesAreSharedBetweenCallers) {
  Harness h;
  PodServer* server = h.AddEnginePod("server-0", MetricsVLLMResponse(5, 10, 2));
  Aggregator one(&h.objects, h.Options());
  Aggregator two(&h.objects, h.Options());
  Snapshot snapshot;
  ASSERT_TRUE(h.Get(one, &snapshot).ok());
  h.Advance(10s);
  server->Set(MetricsVLLMResponse(10, 20, 4));
  ASSERT_TRUE(h.Get(two, &snapshot).ok());
  EXPECT_FALSE(snapshot.partial);
  EXPECT_EQ(snapshot.cache_hits.at(0).window_seconds, 10);
  // A GET at the same instant has no valid window (age 0) and restarts the baselines.
  ASSERT_TRUE(h.Get(one, &snapshot).ok());
  EXPECT_TRUE(snapshot.partial);
  for (const Missing& m : GpuStackMissing(snapshot)) EXPECT_EQ(m.reason, reason::kAwaiting);
}

}  // namespace
}  // namespace modelmetrics::deployment
