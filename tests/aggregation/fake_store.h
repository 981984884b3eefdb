// A loopback fake of a Prometheus-compatible store's /api/v1/query for the Prometheus source's
// tests: it holds the samples of real exposition bodies at known instants (as a store that scraped
// them would) and answers every query with all of them, or with a fixed answer.
#ifndef MODELMETRICS_TESTS_DEPLOYMENT_FAKE_STORE_H_
#define MODELMETRICS_TESTS_DEPLOYMENT_FAKE_STORE_H_

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "aggregation/prometheus_source.h"
#include "aggregation/snapshot.h"
#include "aggregation/source_compare.h"
#include "aggregation/test_builders.h"
#include "modelmetrics/parser.h"
#include "modelmetrics/writer.h"
#include "net/http_server.h"
#include "status_matchers.h"

namespace modelmetrics::deployment::testing {

// /api/v1/query over a fixed set of series, answering every query with all of them (the source
// must pick its own Pods' series out).
class FakeStore {
 public:
  FakeStore() : server_(net::ServerOptions{}) {
    server_.Route("POST", "/api/v1/query", [this](const net::HttpRequest& request) {
      std::lock_guard lock(mu_);
      bodies_.push_back(request.body);
      authorization_ = std::string(request.headers.Get("Authorization"));
      if (!answer_.empty()) return net::HttpResponse{status_, "application/json", {}, answer_};
      return net::HttpResponse{200, "application/json", {}, Answer()};
    });
    std::string error;
    EXPECT_OK(server_.Start());
  }
  ~FakeStore() { server_.Stop(); }

  std::string url() const { return fmt::format("http://127.0.0.1:{}", server_.port()); }

  // Every sample of `body`, and up == 1, stamped `at` for Pod `pod` of namespace `ns`, with
  // `extra` labels on every series (an HA replica's `prometheus_replica`, an external label).
  void AddScrape(const std::string& pod, WallTime at, const std::string& body,
                 const std::string& instance = "127.0.0.1:1", const std::string& ns = "team",
                 const std::string& job = "pods",
                 const std::map<std::string, std::string>& extra = {}) {
    std::lock_guard lock(mu_);
    const std::vector<MetricFamily> families = ParseFamilies(body, ParseOptions{});
    for (const MetricFamily& family : families) {
      for (const MetricSample& sample : family.samples) {
        std::vector<LabelPair> labels = sample.labels;
        labels.insert(labels.end(), extra.begin(), extra.end());
        Add(sample.name, labels, pod, ns, instance, Ms(at), sample.value, job);
      }
    }
    std::vector<LabelPair> up(extra.begin(), extra.end());
    Add("up", up, pod, ns, instance, Ms(at), 1, job);
  }
  void AddUp(const std::string& pod, WallTime at, double value) {
    std::lock_guard lock(mu_);
    Add("up", {}, pod, "team", "127.0.0.1:1", Ms(at), value);
  }
  // Every answer is `answer` with HTTP `status` (200: a success with a hostile body).
  void Fail(int status, std::string answer) {
    std::lock_guard lock(mu_);
    status_ = status;
    answer_ = std::move(answer);
  }
  // Answers each series' samples newest first (a store that does not sort them).
  void ReverseSamples() {
    std::lock_guard lock(mu_);
    reverse_samples_ = true;
  }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  std::string authorization() {
    std::lock_guard lock(mu_);
    return authorization_;
  }

 private:
  struct Series {
    std::string name;
    std::map<std::string, std::string> labels;
    std::map<int64_t, double> samples;
  };

  void Add(const std::string& name, const std::vector<LabelPair>& labels, const std::string& pod,
           const std::string& ns, const std::string& instance, int64_t ms, double value,
           const std::string& job = "pods") {
    std::map<std::string, std::string> all(labels.begin(), labels.end());
    all["namespace"] = ns;
    all["pod"] = pod;
    all["instance"] = instance;
    all["job"] = job;
    for (Series& s : series_) {
      if (s.name == name && s.labels == all) {
        s.samples[ms] = value;
        return;
      }
    }
    series_.push_back({name, all, {{ms, value}}});
  }

  std::string Answer() const {
    nlohmann::json result = nlohmann::json::array();
    for (const Series& s : series_) {
      nlohmann::json metric = s.labels;
      metric["__name__"] = s.name;
      nlohmann::json values = nlohmann::json::array();
      for (const auto& [ms, value] : s.samples) {
        std::string text;
        AppendDouble(&text, value);  // NaN and +Inf as a store spells them
        values.push_back({static_cast<double>(ms) / 1000.0, text});
      }
      if (reverse_samples_) std::reverse(values.begin(), values.end());
      result.push_back({{"metric", metric}, {"values", values}});
    }
    return nlohmann::json{{"status", "success"},
                          {"data", {{"resultType", "matrix"}, {"result", result}}}}
        .dump();
  }

  net::HttpServer server_;
  std::mutex mu_;
  std::vector<Series> series_;
  std::vector<std::string> bodies_;
  std::string authorization_;
  int status_ = 200;
  bool reverse_samples_ = false;
  std::string answer_;
};

inline PrometheusSourceOptions StoreOptions(const FakeStore& store, WallTime now) {
  PrometheusSourceOptions options;
  options.url = store.url();
  options.now = [now] { return now; };
  return options;
}

// The snapshot of `pods` read from a store with `options`.
inline Snapshot FromStore(const ModelDeployment& md, const std::vector<Pod>& pods,
                          PrometheusSourceOptions options, WallTime timestamp) {
  PrometheusSource source(std::move(options));
  return testing::FromSource(source, md, pods, timestamp);
}

}  // namespace modelmetrics::deployment::testing

#endif  // MODELMETRICS_TESTS_DEPLOYMENT_FAKE_STORE_H_
