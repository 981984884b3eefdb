// See api_load.h.
#include "api_load.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "base/mutex.h"
#include "net/http_client.h"

namespace modelmetrics::sim {

uint64_t LoadReport::Count(int status) const {
  const auto it = by_status.find(status);
  return it == by_status.end() ? 0 : it->second;
}

double LoadReport::LatencyMs(double p) const {
  if (latencies_ms.empty()) return 0;
  std::vector<double> sorted = latencies_ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

LoadReport RunLoad(const LoadOptions& options) {
  const int threads = std::clamp(options.threads, 1, std::max(options.clients, 1));
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + options.duration;
  LoadReport report;
  base::Mutex mu;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    // Spread the clients: the first (clients % threads) workers take one more.
    const int clients = options.clients / threads + (t < options.clients % threads ? 1 : 0);
    if (clients == 0) continue;
    workers.emplace_back([&, clients] {
      net::ClientOptions client_options;
      client_options.max_in_flight = static_cast<size_t>(clients);
      client_options.max_idle_connections = static_cast<size_t>(clients);
      client_options.fetch_timeout = options.fetch_timeout;
      client_options.connect_timeout =
          std::min(options.fetch_timeout, std::chrono::milliseconds(5000));
      client_options.ca_file = options.ca_file;
      net::HttpClient client(client_options);
      const std::vector<net::FetchRequest> batch(static_cast<size_t>(clients),
                                                 net::FetchRequest{options.url, options.headers});
      LoadReport local;
      while (std::chrono::steady_clock::now() < end) {
        const auto results =
            client.FetchAll(batch, std::chrono::steady_clock::now() + options.fetch_timeout);
        for (const net::FetchResult& r : results) {
          ++local.requests;
          ++local.by_status[r.status];
          local.latencies_ms.push_back(static_cast<double>(r.elapsed.count()));
          if (r.status == 0) ++local.transport_errors;
          if (r.status != 200 && local.first_error.empty()) {
            local.first_error =
                r.status == 0 ? r.message : fmt::format("HTTP {}: {}", r.status, r.body);
          }
        }
      }
      base::MutexLock lock(&mu);
      report.requests += local.requests;
      for (const auto& [status, count] : local.by_status) report.by_status[status] += count;
      report.transport_errors += local.transport_errors;
      if (report.first_error.empty()) report.first_error = local.first_error;
      report.latencies_ms.insert(report.latencies_ms.end(), local.latencies_ms.begin(),
                                 local.latencies_ms.end());
    });
  }
  for (std::thread& worker : workers) worker.join();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

int ConnectionFlood::Open(int n) {
  sockaddr_in source{};
  source.sin_family = AF_INET;
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(port_);
  if (inet_pton(AF_INET, from_.c_str(), &source.sin_addr) != 1 ||
      inet_pton(AF_INET, "127.0.0.1", &target.sin_addr) != 1) {
    return 0;
  }
  int opened = 0;
  for (; opened < n; ++opened) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&source), sizeof(source)) != 0 ||
        ::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof(target)) != 0) {
      ::close(fd);
      break;
    }
    fds_.push_back(fd);
  }
  return opened;
}

void ConnectionFlood::CloseOldest(size_t n) {
  for (; n > 0 && !fds_.empty(); --n) {
    ::close(fds_.front());
    fds_.pop_front();
  }
}

bool RaiseFileLimit(uint64_t want) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur >= want) return true;
  limit.rlim_cur = std::min<rlim_t>(want, limit.rlim_max);
  return ::setrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur >= want;
}

}  // namespace modelmetrics::sim
