// Autoscalers on the custom metrics API at fleet scale: one HPA per deployment of the fleet test's
// fleet (32 deployments of 16 Pods, 512 Pods), each reading two object metrics (`waiting`,
// `kv-cache-usage`) every `--sync` seconds at its own phase, those of the first 8 deployments also
// a pods metric (`waiting` of each Pod), for `--seconds`, against `modelmetrics serve`
// (custom_metrics_api: true) started as a child process on the fleet's objects. `--callers N`
// puts N HPAs on each deployment. Prints the metric calls' latency percentiles and errors, how
// often each Pod was scraped and the shortest time between two scrapes of one Pod (reads are
// shared between callers: at most once per `metrics_reuse_ms`, 5 s), and the server's CPU and
// peak memory. Each HPA sync runs on its own thread and connection (its handshake counted), so a
// slow answer does not thin out the others' calls. Exits 1 on a failed call or a Pod scraped twice
// within 5 s; latency is reported, not judged.
//
// With --api URL (and --token, --ca, --objects, --serve-pid), the same callers ask an already
// running server instead, e.g. scripts/fleet.sh --bench's, which reads a Prometheus-compatible
// store; scrapes are then the store agents' and not counted here.
//   hpa_load_bench [--seconds 120] [--sync 15] [--deployments 32] [--pods 16] [--callers 1]
//                  [--pods-metrics 8] [--api URL --token T --ca FILE --objects FILE --serve-pid P]
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "kube/object_file.h"
#include "net/http_client.h"
#include "process_stats.h"
#include "sim/fleet_sim.h"
#include "test_paths.h"

namespace {

using namespace modelmetrics;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kPath = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/";

// Another process's CPU time and peak memory, from /proc: the server under load. 0 for pid 0.
class ProcessWatch {
 public:
  explicit ProcessWatch(pid_t pid) : pid_(pid) {}

  // User + system CPU seconds so far.
  double CpuSeconds() const {
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    const std::string text((std::istreambuf_iterator<char>(stat)), {});
    const size_t paren = text.rfind(')');  // the command name may hold spaces
    if (pid_ <= 0 || paren == std::string::npos || paren + 2 > text.size()) return 0;
    std::istringstream fields(text.substr(paren + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
    }
    return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
  }

  // VmHWM: the peak resident set, MiB.
  double PeakRssMiB() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; pid_ > 0 && std::getline(status, line);) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    }
    return 0;
  }

 private:
  pid_t pid_;
};

// The URL `serve` prints on its first line, once it has ("" when it did not in time).
std::string ServeUrl(const testing::CliProcess& serve) {
  if (!serve.WaitForOutput("serving ModelDeploymentMetrics on ")) return "";
  std::smatch match;
  const std::string out = serve.StdoutSoFar();
  const std::regex url(R"(serving ModelDeploymentMetrics on (https://127\.0\.0\.1:\d+))");
  return std::regex_search(out, match, url) ? match[1].str() : "";
}

struct Call {
  std::string path;
  std::string kind;  // object or pods
};

// One HPA's calls at each of its syncs.
std::vector<Call> HpaCalls(const std::string& ns, const std::string& name, bool pods_metric) {
  const std::string object = kPath + ns + "/modeldeployments.worker.gpustack.ai/" + name + "/";
  std::vector<Call> calls = {{object + "waiting", "object"}, {object + "kv-cache-usage", "object"}};
  if (pods_metric) {
    calls.push_back(
        {kPath + ns + "/pods/%2A/waiting?labelSelector=app.kubernetes.io%2Finstance%3D" + name,
         "pods"});
  }
  return calls;
}

struct Results {
  std::vector<double> latencies_ms;
  std::map<std::string, std::vector<double>> by_kind;
  std::map<int, int> errors;  // status (0: no response) -> count
  std::string first_error;
  int calls = 0;
};

// Every HPA syncs every `sync`, HPA i first at i/n of it. Each HPA's sync runs on its own thread,
// as the controller's workers do, so a slow answer delays no other HPA's calls (the offered load
// stays the same however slow the server is).
Results RunHpas(const std::string& base, const std::string& token, const std::string& ca,
                const std::vector<std::vector<Call>>& hpas, std::chrono::seconds sync,
                std::chrono::seconds duration) {
  net::ClientOptions options;
  options.ca_file = ca;
  options.fetch_timeout = 10s;
  Results results;
  std::mutex mu;
  auto one_sync = [&](const std::vector<Call>& calls) {
    net::HttpClient client(options);
    std::vector<net::FetchRequest> batch;
    for (const Call& call : calls) {
      batch.push_back({base + call.path, {{"Authorization", "Bearer " + token}}});
    }
    const std::vector<net::FetchResult> done = client.FetchAll(batch, Clock::now() + 15s);
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < done.size(); ++i) {
      const double ms = std::chrono::duration<double, std::milli>(done[i].elapsed).count();
      ++results.calls;
      results.latencies_ms.push_back(ms);
      results.by_kind[calls[i].kind].push_back(ms);
      if (done[i].status == 200) continue;
      ++results.errors[done[i].status];
      if (results.first_error.empty()) {
        results.first_error = std::to_string(done[i].status) + " " + done[i].message + " " +
                              done[i].body.substr(0, 300);
      }
    }
  };
  const Clock::time_point start = Clock::now();
  std::vector<Clock::time_point> next(hpas.size());
  for (size_t i = 0; i < hpas.size(); ++i) next[i] = start + sync * i / hpas.size();
  std::vector<std::thread> running;
  while (Clock::now() - start < duration) {
    for (size_t i = 0; i < hpas.size(); ++i) {
      if (Clock::now() < next[i]) continue;
      next[i] += sync;
      running.emplace_back(one_sync, std::cref(hpas[i]));
    }
    std::this_thread::sleep_for(20ms);
  }
  for (std::thread& t : running) t.join();
  return results;
}

void PrintLatencies(const char* what, const std::vector<double>& ms) {
  if (ms.empty()) return;
  std::printf("  %-14s %6zu calls  p50 %6.1f ms  p90 %6.1f ms  p99 %6.1f ms  max %6.1f ms\n", what,
              ms.size(), bench::Percentile(ms, 0.5), bench::Percentile(ms, 0.9),
              bench::Percentile(ms, 0.99), bench::Percentile(ms, 1.0));
}

// How often the fleet's Pods were read during the run; false when some Pod was read twice within
// the reuse window (5 s).
bool PrintScrapes(const sim::FleetSim& fleet, const std::map<std::string, size_t>& before,
                  int seconds) {
  size_t total = 0, total_pods = 0;
  double worst = 0;  // scrapes per Pod per minute, the most scraped deployment's
  auto gap = std::chrono::milliseconds::max();
  for (const auto& d : fleet.deployments()) {
    gap = std::min(gap, d->ShortestScrapeGap());
    const size_t delta = d->ScrapesServed() - before.at(d->options().name);
    const size_t n = d->PodNames().size();
    total += delta;
    total_pods += n;
    worst = std::max(worst, static_cast<double>(delta) / n * 60.0 / seconds);
  }
  std::printf("  scrapes: %zu of %zu Pods, %.2f per Pod per minute (most: %.2f; target <= 12)\n",
              total, total_pods, static_cast<double>(total) / total_pods * 60.0 / seconds, worst);
  std::printf("  shortest time between two scrapes of one Pod: %.2f s  (target >= 5 s)\n",
              gap.count() / 1000.0);
  return gap >= std::chrono::seconds(5);
}

// The ModelDeployments of `objects_file`, by name, and their namespace.
std::vector<std::string> DeploymentNames(const std::string& objects_file, std::string* ns) {
  deployment::FileObjectSource source;
  std::vector<deployment::ModelDeployment> found;
  if (!source.Load(objects_file, 64 << 20).ok() || !source.ListModelDeployments("", &found).ok()) {
    return {};
  }
  std::vector<std::string> names;
  for (const deployment::ModelDeployment& md : found) {
    names.push_back(md.metadata.name);
    *ns = md.metadata.namespace_;
  }
  return names;
}

std::string WriteServeFiles(const std::filesystem::path& dir, const std::string& objects,
                            const std::string& ns) {
  std::ofstream(dir / "tokens.csv") << "hpa-token,hpa,uid-hpa\n";
  std::ofstream(dir / "policy.yaml")
      << "rules:\n  - {users: [hpa], namespaces: [" << ns
      << "], verbs: [get], apiGroups: [custom.metrics.k8s.io], resources: [\"*\"]}\n";
  std::ofstream(dir / "serve.yaml") << "port: 0\n"
                                    << "tls_cert_file: " << test_paths::Tls("server.pem") << "\n"
                                    << "tls_key_file: " << test_paths::Tls("server-key.pem") << "\n"
                                    << "token_file: " << (dir / "tokens.csv").string() << "\n"
                                    << "policy_file: " << (dir / "policy.yaml").string() << "\n"
                                    << "objects_file: " << objects << "\n"
                                    << "max_objects_bytes: 67108864\n"
                                    << "custom_metrics_api: true\n"
                                    << "metrics_reuse_ms: 5000\n";
  return (dir / "serve.yaml").string();
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 120, sync = 15, deployments = 32, pods = 16, pods_metrics = 8, callers = 1;
  std::string api, token = "hpa-token", ca = test_paths::Tls("ca.pem"), objects;
  std::string binary = test_paths::Modelmetrics();
  CLI::App app("HPAs on the custom metrics API at fleet scale");
  app.add_option("--seconds", seconds, "how long the HPAs run")->check(CLI::Range(1, 3600));
  app.add_option("--sync", sync, "each HPA's sync period, seconds")->check(CLI::Range(1, 600));
  app.add_option("--deployments", deployments, "fleet deployments")->check(CLI::Range(1, 256));
  app.add_option("--pods", pods, "Pods per deployment")->check(CLI::Range(1, 64));
  app.add_option("--pods-metrics", pods_metrics, "deployments whose HPAs also read a pods metric");
  app.add_option("--callers", callers, "HPAs per deployment, each at its own phase")
      ->check(CLI::Range(1, 16));
  app.add_option("--api", api, "an already running server's base URL (then no fleet here)");
  app.add_option("--token", token, "its bearer token");
  app.add_option("--ca", ca, "its CA");
  app.add_option("--objects", objects, "its objects file (the deployments' names)");
  app.add_option("--modelmetrics", binary, "the binary to start `serve` from");
  int serve_pid = 0;
  app.add_option("--serve-pid", serve_pid,
                 "with --api: the server's process, for its CPU and memory");
  CLI11_PARSE(app, argc, argv);

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hpa_load_bench." + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  sim::FleetSim fleet([&] {
    sim::FleetSimOptions o;
    o.deployments = deployments;
    o.pods = pods;
    o.objects_file = (dir / "objects.json").string();
    return o;
  }());
  std::optional<testing::CliProcess> serve;
  if (api.empty()) {
    if (sim::Status started = fleet.Start(); !started.ok()) {
      std::fprintf(stderr, "fleet: %s\n", started.message().c_str());
      return 1;
    }
    objects = (dir / "objects.json").string();
  }
  if (objects.empty()) {
    std::fprintf(stderr, "--api needs --objects (the deployments' names)\n");
    return 2;
  }
  std::string ns;
  const std::vector<std::string> names = DeploymentNames(objects, &ns);
  if (names.empty()) {
    std::fprintf(stderr, "%s: no ModelDeployment read\n", objects.c_str());
    return 2;
  }
  if (api.empty()) {
    serve.emplace(binary,
                  std::vector<std::string>{"serve", "--config", WriteServeFiles(dir, objects, ns),
                                           "--duration", "1h"},
                  (dir / "serve.out").string(), (dir / "serve.err").string());
    api = ServeUrl(*serve);
    if (api.empty()) {
      std::fprintf(stderr, "%s serve did not start\n", binary.c_str());
      return 1;
    }
    serve_pid = serve->pid();
  }
  const ProcessWatch watch(serve_pid);
  std::vector<std::vector<Call>> hpas;
  for (int c = 0; c < callers; ++c) {
    for (size_t i = 0; i < names.size() && static_cast<int>(i) < deployments; ++i) {
      hpas.push_back(HpaCalls(ns, names[i], static_cast<int>(i) < pods_metrics));
    }
  }
  // A first read of each deployment, so every window exists when the HPAs start.
  RunHpas(api, token, ca, hpas, std::chrono::seconds(1), std::chrono::seconds(1));
  std::this_thread::sleep_for(std::chrono::seconds(5));

  std::map<std::string, size_t> scrapes_before;
  for (const auto& d : fleet.deployments()) scrapes_before[d->options().name] = d->ScrapesServed();
  const double cpu_before = watch.CpuSeconds();
  const Results r =
      RunHpas(api, token, ca, hpas, std::chrono::seconds(sync), std::chrono::seconds(seconds));
  const double cpu = watch.CpuSeconds() - cpu_before;

  std::printf(
      "%zu HPAs (%d per deployment, %d deployments' with a pods metric), sync %d s, %d s: "
      "%d metric calls, %.1f/s\n",
      hpas.size(), callers, std::min<int>(pods_metrics, deployments), sync, seconds, r.calls,
      r.calls / static_cast<double>(seconds));
  PrintLatencies("all", r.latencies_ms);
  for (const auto& [kind, ms] : r.by_kind) PrintLatencies(kind.c_str(), ms);
  int errors = 0;
  for (const auto& [status, count] : r.errors) errors += count;
  std::printf("  errors: %d%s%s  (target 0)\n", errors, errors ? "; first: " : "",
              r.first_error.c_str());
  std::printf("  p99 of metric calls: %.1f ms  (target <= 250 ms)\n",
              r.latencies_ms.empty() ? 0.0 : bench::Percentile(r.latencies_ms, 0.99));
  bool ok = errors == 0;
  if (!fleet.deployments().empty()) ok = PrintScrapes(fleet, scrapes_before, seconds) && ok;
  if (watch.PeakRssMiB() > 0) {
    std::printf("  serve: CPU %.2f s over %d s (%.1f%% of one core), peak RSS %.1f MiB\n", cpu,
                seconds, 100.0 * cpu / seconds, watch.PeakRssMiB());
  }
  std::fflush(stdout);
  if (serve) {
    serve->Signal(SIGTERM);
    serve->Wait(std::chrono::seconds(10));
  }
  fleet.Stop();
  std::filesystem::remove_all(dir);
  return ok ? 0 : 1;  // latency is reported, not judged: this machine's load is not the server's
}
