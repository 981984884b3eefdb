// A real store for tests: Debian's `prometheus` or `victoria-metrics` as a child process on
// 127.0.0.1, scraping given loopback targets every second (labels `namespace`, `pod`), with the
// helpers the store tests wait and compare with: every successful scrape time per Pod, and a
// bounded wait for a condition on them.
#ifndef MODELMETRICS_TESTS_DEPLOYMENT_REAL_STORE_H_
#define MODELMETRICS_TESTS_DEPLOYMENT_REAL_STORE_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "aggregation/prometheus_query.h"
#include "aggregation/snapshot.h"
#include "aggregation/source_compare.h"
#include "cli/cli_runner.h"
#include "net/http_client.h"
#include "status_matchers.h"

namespace modelmetrics::deployment::testing {

using ::modelmetrics::testing::Ok;

inline uint16_t FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

struct StoreTarget {
  uint16_t port;
  std::string pod;
};

class RealStore {
 public:
  using Instants = std::map<std::string, std::vector<int64_t>>;

  // `kind` is "prometheus" or "victoria-metrics"; files go under `dir`.
  RealStore(std::string kind, const modelmetrics::testing::ScratchDir& dir,
            const std::vector<StoreTarget>& targets, std::string ns = "team")
      : kind_(std::move(kind)), dir_(dir), ns_(std::move(ns)) {
    for (const StoreTarget& t : targets) pods_.push_back(t.pod);
    url_ = Start(targets);
  }

  const std::string& url() const { return url_; }

  // Every successful scrape time the store holds per Pod of the namespace, evaluated at `at`.
  Instants UpInstants(WallTime at) {
    const int64_t ms = Ms(at);
    const std::string body = fmt::format(
        "query={}&time={}.{:03}", FormEncode(fmt::format("up{{namespace=\"{}\"}}[10m]", ns_)),
        ms / 1000, ms % 1000);
    const std::vector<net::FetchResult> results = client_.FetchAll(
        std::vector<net::FetchRequest>{
            {.url = url_ + "/api/v1/query",
             .headers = {{"Content-Type", "application/x-www-form-urlencoded"}},
             .method = "POST",
             .body = body}},
        SteadyClock::now() + std::chrono::seconds(5));
    Instants out;
    std::vector<StoreSeries> series;
    std::string error;
    if (!results[0].ok() || !Ok(DecodeMatrix(results[0].body, MatrixLimits{}, &series), &error)) {
      return out;
    }
    for (const StoreSeries& s : series) {
      std::string pod;
      for (const auto& [k, v] : s.labels) {
        if (k == "pod") pod = v;
      }
      for (const StoreSample& sample : s.samples) {
        if (sample.value == 1) out[pod].push_back(sample.ms);
      }
    }
    for (auto& [pod, instants] : out) std::sort(instants.begin(), instants.end());
    return out;
  }

  // Waits (at most 30 s) until every target's scrape times satisfy `done`, evaluated 2 s in the
  // past so that no scrape still being written lands before the evaluation time; returns that
  // time and the scrape times.
  template <typename Done>
  std::pair<WallTime, Instants> WaitFor(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      const WallTime at = WallClock::now() - std::chrono::seconds(2);
      Instants instants = UpInstants(at);
      const bool all = std::all_of(pods_.begin(), pods_.end(), [&](const std::string& pod) {
        const auto it = instants.find(pod);
        return it != instants.end() && done(it->second);
      });
      if (all) return {at, std::move(instants)};
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    ADD_FAILURE() << kind_ << " did not scrape every Pod in time";
    return {};
  }

 private:
  std::string Start(const std::vector<StoreTarget>& pods) {
    std::string targets;
    for (const StoreTarget& p : pods) {
      targets += fmt::format(
          "      - targets: ['127.0.0.1:{}']\n        labels: {{namespace: {}, pod: {}}}\n", p.port,
          ns_, p.pod);
    }
    const std::string config =
        dir_.Write("scrape.yml",
                   "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
                   "  - job_name: pods\n    static_configs:\n" +
                       targets);
    const uint16_t port = FreePort();
    const std::string listen = fmt::format("127.0.0.1:{}", port);
    std::vector<std::string> args;
    std::string program;
    std::string ready_path;
    if (kind_ == "prometheus") {
      program = "/usr/bin/prometheus";
      args = {"--config.file=" + config, "--storage.tsdb.path=" + dir_.File("data"),
              "--web.listen-address=" + listen};
      ready_path = "/-/ready";
    } else {
      program = "/usr/bin/victoria-metrics";
      // Samples become visible to queries 1 s after their scrape (30 s by default).
      args = {"-promscrape.config=" + config, "-storageDataPath=" + dir_.File("data"),
              "-httpListenAddr=" + listen,    "-search.latencyOffset=1s",
              "-search.disableCache",         "-loggerLevel=WARN"};
      ready_path = "/health";
    }
    process_ = std::make_unique<modelmetrics::testing::CliProcess>(
        program, args, dir_.File("store.out"), dir_.File("store.err"));
    EXPECT_TRUE(process_->started()) << program;
    const std::string url = "http://" + listen;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::vector<net::FetchResult> results =
          client_.FetchAll(std::vector<net::FetchRequest>{{.url = url + ready_path}},
                           SteadyClock::now() + std::chrono::seconds(1));
      if (results[0].ok() && results[0].status == 200) return url;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << kind_ << " did not become ready:\n"
                  << process_->Wait(std::chrono::milliseconds(0)).err;
    return url;
  }

  std::string kind_;
  const modelmetrics::testing::ScratchDir& dir_;
  std::string ns_;
  std::vector<std::string> pods_;
  std::string url_;
  net::HttpClient client_;
  std::unique_ptr<modelmetrics::testing::CliProcess> process_;
};

}  // namespace modelmetrics::deployment::testing

#endif  // MODELMETRICS_TESTS_DEPLOYMENT_REAL_STORE_H_
