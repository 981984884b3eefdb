// A closed-loop HTTP(S) load generator: `clients` keep-alive connections asking one URL over and
// over for `duration`, for the load tests and the API load benchmark. Loopback targets only (the
// caller's URL; nothing else is contacted).
//
// Each of `threads` workers drives clients/threads connections through its own HttpClient, in
// rounds: a round sends one request per connection and waits for all of them. A result's latency
// is its transfer time (HttpClient's `elapsed`).
//
// Thread-safety: RunLoad is reentrant; it blocks until the load is over.
#ifndef MODELMETRICS_SIM_API_LOAD_H_
#define MODELMETRICS_SIM_API_LOAD_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace modelmetrics::sim {

struct LoadOptions {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. Authorization
  int clients = 200;
  int threads = 4;
  std::chrono::milliseconds duration{20000};
  std::chrono::milliseconds fetch_timeout{15000};
  std::string ca_file;  // trust for an https:// URL
};

struct LoadReport {
  uint64_t requests = 0;
  std::map<int, uint64_t> by_status;  // HTTP status -> count (0: no response)
  uint64_t transport_errors = 0;      // no HTTP response at all
  std::string first_error;            // the first non-200's status/body or transport message
  double seconds = 0;
  std::vector<double> latencies_ms;  // one per request

  uint64_t Count(int status) const;
  uint64_t Non200() const { return requests - Count(200); }
  // The p-quantile (0..1) of latencies_ms, nearest rank; 0 when empty.
  double LatencyMs(double p) const;
};

LoadReport RunLoad(const LoadOptions& options);

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_API_LOAD_H_
