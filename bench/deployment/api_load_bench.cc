// The aggregated API's throughput and latency under load, over TLS on loopback: `--clients`
// keep-alive clients ask for one healthy simulated deployment for `--seconds`; then 64 clients
// hammer a deployment with a hung Pod while a probe asks for the healthy one once every 100 ms;
// then the connection-exhaustion cases from 127.0.0.2 (1,100 connections held silent, and the
// same number kept open while reconnecting 200 times a second for `--seconds`) while a probe on
// 127.0.0.1 opens a new TLS connection for each request.
// Prints snapshots/s, p50/p99 latency and the non-2xx count of each phase.
//   api_load_bench [--clients 200] [--seconds 20] [--reuse-ms 1000]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "kube/object_file.h"
#include "net/http_client.h"
#include "sim/api_load.h"
#include "sim/deployment_sim.h"
#include "sim/loopback_api.h"
#include "test_paths.h"

namespace {

using namespace modelmetrics;
using namespace std::chrono_literals;

std::string TlsFile(const char* name) { return modelmetrics::test_paths::Tls(name); }

sim::DeploymentSimOptions Pods(const std::string& name, int count) {
  sim::DeploymentSimOptions options;
  options.name = name;
  options.ns = "team";
  options.roles = {{.name = "server", .kind = deployment::RoleKind::kServer, .replicas = count}};
  options.requests_per_second = 20;
  return options;
}

void Print(const char* phase, const sim::LoadReport& r) {
  std::printf("%-28s %8.0f snapshots/s  p50 %6.1f ms  p99 %7.1f ms  requests %llu  non-2xx %llu\n",
              phase, static_cast<double>(r.requests) / r.seconds, r.LatencyMs(0.5),
              r.LatencyMs(0.99), static_cast<unsigned long long>(r.requests),
              static_cast<unsigned long long>(r.Non200()));
  if (r.Non200() > 0) std::printf("  first non-2xx: %s\n", r.first_error.substr(0, 200).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int clients = 200;
  int seconds = 20;
  int reuse_ms = 1000;
  CLI::App app("The aggregated API under load and connection floods, over TLS on loopback");
  app.add_option("--clients", clients, "keep-alive clients on the healthy deployment")
      ->check(CLI::Range(1, 1000));
  app.add_option("--seconds", seconds, "length of the load and reconnect phases")
      ->check(CLI::Range(1, 600));
  app.add_option("--reuse-ms", reuse_ms, "how long a read's result answers later requests")
      ->check(CLI::Range(0, 60000));
  CLI11_PARSE(app, argc, argv);
  sim::DeploymentSimOptions stuck_options = Pods("stuck", 2);
  stuck_options.faults["stuck-server-0"] = sim::PodFault::kHang;
  sim::DeploymentSim chat(Pods("chat", 2));
  sim::DeploymentSim stuck(stuck_options);
  base::Status started = chat.Start();
  if (started.ok()) started = stuck.Start();
  if (!started.ok()) {
    std::fprintf(stderr, "simulator: %s\n", started.message().c_str());
    return 1;
  }
  deployment::ObjectSet objects = chat.Objects();
  for (auto& md : stuck.Objects().model_deployments) objects.model_deployments.push_back(md);
  for (auto& pod : stuck.Objects().pods) objects.pods.push_back(pod);
  deployment::FileObjectSource source;
  source.Set(std::move(objects));
  sim::LoopbackApiOptions options;
  options.namespaces = {"team"};
  options.tls_cert_file = TlsFile("server.pem");
  options.tls_key_file = TlsFile("server-key.pem");
  options.api.reuse_for = std::chrono::milliseconds(reuse_ms);
  sim::LoopbackApi api(&source, options);
  if (const base::Status api_started = api.Start(); !api_started.ok()) {
    std::fprintf(stderr, "api: %s\n", api_started.message().c_str());
    return 1;
  }
  sim::LoadOptions load;
  load.url = api.MetricsUrl("team", "chat");
  load.headers = {{"Authorization", "Bearer " + api.token()}};
  load.clients = clients;
  load.duration = std::chrono::seconds(seconds);
  load.ca_file = TlsFile("ca.pem");
  std::printf("%d keep-alive TLS clients, %d s, reuse %d ms, 2 simulated vLLM Pods\n", clients,
              seconds, reuse_ms);
  Print("healthy deployment", sim::RunLoad(load));

  // 64 clients on the hung deployment; a probe on the healthy one.
  sim::LoadOptions hammer = load;
  hammer.url = api.MetricsUrl("team", "stuck");
  hammer.clients = 64;
  sim::LoadReport hammered;
  std::thread hammering([&] { hammered = sim::RunLoad(hammer); });
  sim::LoadReport probe;
  net::ClientOptions client_options;
  client_options.ca_file = load.ca_file;
  net::HttpClient client(client_options);
  const net::FetchRequest request{load.url, load.headers};
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < load.duration) {
    const net::FetchResult r =
        client.FetchAll(std::span(&request, 1), std::chrono::steady_clock::now() + 10s).at(0);
    ++probe.requests;
    ++probe.by_status[r.status];
    probe.latencies_ms.push_back(static_cast<double>(r.elapsed.count()));
    std::this_thread::sleep_for(100ms);
  }
  probe.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  hammering.join();
  Print("hung deployment (64 clients)", hammered);
  Print("healthy probe beside it", probe);

  // A probe that is a new client each time: a new connection must be admitted.
  const auto fresh_probe = [&](sim::LoadReport* report) {
    net::HttpClient fresh(client_options);
    const net::FetchResult r =
        fresh.FetchAll(std::span(&request, 1), std::chrono::steady_clock::now() + 10s).at(0);
    ++report->requests;
    ++report->by_status[r.status];
    if (r.status != 200 && report->first_error.empty()) {
      report->first_error = std::to_string(r.status) + " " + r.message;
    }
    report->latencies_ms.push_back(static_cast<double>(r.elapsed.count()));
  };
  constexpr int kFlood = 1100;  // over the server's 1,024-connection limit
  if (!sim::RaiseFileLimit(4 * kFlood)) {
    std::printf("connection floods skipped: cannot raise the file limit to %d\n", 4 * kFlood);
    return 0;
  }
  {
    sim::ConnectionFlood flood("127.0.0.2", api.port());
    const int held = flood.Open(kFlood);
    std::this_thread::sleep_for(300ms);  // accepted
    sim::LoadReport idle;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; ++i) fresh_probe(&idle);
    idle.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%d silent connections held from 127.0.0.2:\n", held);
    Print("new client per request", idle);
  }
  {
    sim::ConnectionFlood flood("127.0.0.2", api.port());
    flood.Open(kFlood);
    sim::LoadReport churn;
    uint64_t reconnects = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto next_probe = t0;
    while (std::chrono::steady_clock::now() - t0 < load.duration) {
      // 200 reconnects a second, in steps of 10 every 50 ms; the probe every 500 ms.
      flood.CloseOldest(10);
      reconnects += static_cast<uint64_t>(flood.Open(10));
      if (std::chrono::steady_clock::now() >= next_probe) {
        fresh_probe(&churn);
        next_probe += 500ms;
      }
      std::this_thread::sleep_for(50ms);
    }
    churn.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%d connections from 127.0.0.2, %.0f reconnects/s:\n", kFlood,
                static_cast<double>(reconnects) / churn.seconds);
    Print("new client per request", churn);
  }
  return 0;
}
