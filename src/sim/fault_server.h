// A raw-socket loopback HTTP/1.1 (optionally TLS) server that can misbehave: answer, hang, hold,
// trickle a body, or send any status, headers and (even gzip-bomb) body. net::HttpServer cannot
// trickle a body or hang on purpose, so the net tests (as a misbehaving peer) and the deployment
// simulator (as Pods with faults) both use this one.
//
// It binds <bind_address>:0, serves keep-alive connections on one background thread, and stops
// (closing every connection) in its destructor. What each request gets comes from a FaultPlanner,
// called on the server thread with the request head; without one, the test routes below apply
// (by path, query ignored):
//   /ok                  200 "ok\n", Content-Type "text/plain; version=0.0.4"
//   /echo                200, body = the raw request head as received
//   /hang                never answers (holds the connection until the client closes it)
//   /hold/<ms>           answers 200 "held" after <ms> milliseconds
//   /size/<n>            200 with a body of <n> 'x' bytes
//   /gzip/<n>            200, Content-Encoding: gzip, body = gzip of <n> 'x' bytes
//   /trickle/<n>/<ms>    200, Content-Length <n>, then one byte every <ms> milliseconds
//   /status/<code>       <code> with body "status <code>"
//   /redirect            302, Location: <this server>/target
//   anything else        404
// TLS: with a certificate (file or PEM text) connections are TLS, unless `tls_for_connection` is
// set, which decides per accepted connection (a simulated Pod can switch to TLS at runtime). A
// connection opening with a TLS record on a plain connection gets a 400 and is closed.
// Every request counts as a hit of its path and as in flight from the end of its head until its
// response has been written (or the connection ends); MaxConcurrent() is the most seen at once.
// Servers may share one InFlightStats to count across them.
//
// Thread-safety: the accessors may be called from any thread. The planner and
// `tls_for_connection` run on the server thread and must be thread-safe with respect to whatever
// they read.
#ifndef MODELMETRICS_SIM_FAULT_SERVER_H_
#define MODELMETRICS_SIM_FAULT_SERVER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace modelmetrics::sim {

struct FaultRequest {
  std::string method;
  std::string target;    // as sent
  std::string path;      // target before '?'
  std::string head;      // the raw request head, CRLFs included
  std::string base_url;  // "http(s)://<bind_address>:<port>" of the connection's scheme
};

struct FaultReply {
  enum class Action {
    kRespond,  // status line, headers, Content-Length, body (after `delay`)
    kHang,     // never answer; read until the client closes
    kTrickle,  // status line and headers at once, then the body in `trickle_chunks` pieces,
               // each after `trickle_interval`
  };
  Action action = Action::kRespond;
  int status = 200;
  std::string reason = "OK";
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Length is added
  std::string body;
  // Sent after `body` without copying: large static parts (padding series) shared by replies.
  std::shared_ptr<const std::string> body_tail;
  std::chrono::milliseconds delay{0};
  size_t trickle_chunks = 1;
  std::chrono::milliseconds trickle_interval{0};
};

using FaultPlanner = std::function<FaultReply(const FaultRequest&)>;

// Requests in flight, counted over every server sharing it.
struct InFlightStats {
  std::atomic<int> current{0};
  std::atomic<int> peak{0};
  std::atomic<uint64_t> requests{0};  // request heads received
};

struct FaultServerOptions {
  std::string bind_address = "127.0.0.1";
  std::string cert_file;       // Non-empty: serve HTTPS with this PEM certificate chain...
  std::string key_file;        // ...and this PEM key.
  std::string client_ca_file;  // Non-empty: require a client certificate signed by this CA.
  std::string cert_pem;        // Alternatives to cert_file/key_file: the PEM text itself.
  std::string key_pem;
  // Set: called per accepted connection; true serves it over TLS (needs a certificate).
  std::function<bool()> tls_for_connection;
  FaultPlanner planner;                  // null: the test routes of the file comment
  std::shared_ptr<InFlightStats> stats;  // null: the server's own
};

class FaultServer {
 public:
  // Binds and starts serving; throws std::exception when the address or certificate is unusable.
  explicit FaultServer(FaultServerOptions options = {});
  ~FaultServer();

  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

  uint16_t port() const;
  // "http(s)://<bind_address>:<port><path>", https when a certificate is configured.
  std::string Url(std::string_view path) const;
  // Requests received whose path (without query) is exactly `path`.
  int Hits(std::string_view path) const;
  int MaxConcurrent() const;
  int Connections() const;  // Accepted TCP connections.

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The gzip (RFC 1952) encoding of `decoded_size` bytes of `fill`, repeated.
std::string GzipOfRepeated(std::string_view fill, size_t decoded_size);

// A loopback port that nothing listens on (bound, then closed), for "connection refused".
uint16_t UnusedLoopbackPort();

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_FAULT_SERVER_H_
