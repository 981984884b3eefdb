// A closed-loop HTTP(S) load generator: `clients` keep-alive connections asking one URL over and
// over for `duration`, for the load tests and the API load benchmark. Loopback targets only (the
// caller's URL; nothing else is contacted).
//
// Each of `threads` workers drives clients/threads connections through its own HttpClient, in
// rounds: a round sends one request per connection and waits for all of them. A result's latency
// is its transfer time (HttpClient's `elapsed`).
//
// ConnectionFlood is the attacker of the connection-exhaustion cases: raw TCP connections from
// another loopback address that never send a byte (no request, no TLS ClientHello).
//
// Thread-safety: RunLoad is reentrant; it blocks until the load is over. A ConnectionFlood is
// used from one thread.
#ifndef MODELMETRICS_SIM_API_LOAD_H_
#define MODELMETRICS_SIM_API_LOAD_H_

#include <chrono>
#include <cstdint>
#include <deque>
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

class ConnectionFlood {
 public:
  // Connections from `from` (a loopback address such as 127.0.0.2) to 127.0.0.1:`port`.
  ConnectionFlood(std::string from, uint16_t port) : from_(std::move(from)), port_(port) {}
  ~ConnectionFlood() { CloseAll(); }
  ConnectionFlood(const ConnectionFlood&) = delete;
  ConnectionFlood& operator=(const ConnectionFlood&) = delete;

  // Opens `n` more; returns how many opened (fewer when out of descriptors or refused).
  int Open(int n);
  // Closes the `n` oldest (all when fewer are open).
  void CloseOldest(size_t n);
  void CloseAll() { CloseOldest(fds_.size()); }
  size_t open() const { return fds_.size(); }

 private:
  std::string from_;
  uint16_t port_;
  std::deque<int> fds_;
};

// Raises the soft RLIMIT_NOFILE to at least `want` (up to the hard limit); false if it cannot.
bool RaiseFileLimit(uint64_t want);

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_API_LOAD_H_
