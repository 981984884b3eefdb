// Test-only loopback HTTP/1.1 (optionally TLS) server that misbehaves on request, for client tests.
//
// It binds <bind_address>:0 (loopback only), serves keep-alive connections on one background
// thread, and stops (closing every connection) in its destructor. Routes, by path (query ignored):
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
// A connection opening with a TLS record on a plain server gets a 400 and is closed.
// Every request counts as a hit of its path and as in flight from the end of its head until its
// response has been written (or the connection ends); MaxConcurrent() is the most seen at once.
// Thread-safety: the accessors may be called from any thread.
#ifndef MODELMETRICS_TESTS_NET_FAULT_SERVER_H_
#define MODELMETRICS_TESTS_NET_FAULT_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace modelmetrics::net::testing {

struct FaultServerOptions {
  std::string bind_address = "127.0.0.1";
  std::string cert_file;       // Non-empty: serve HTTPS with this PEM certificate chain...
  std::string key_file;        // ...and this PEM key.
  std::string client_ca_file;  // Non-empty: require a client certificate signed by this CA.
};

class FaultServer {
 public:
  explicit FaultServer(FaultServerOptions options = {});
  ~FaultServer();

  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

  uint16_t port() const;
  // "http(s)://<bind_address>:<port><path>".
  std::string Url(std::string_view path) const;
  // Requests received whose path (without query) is exactly `path`.
  int Hits(std::string_view path) const;
  int MaxConcurrent() const;
  int Connections() const;  // Accepted TCP connections.

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A loopback port that nothing listens on (bound, then closed), for "connection refused".
uint16_t UnusedLoopbackPort();

}  // namespace modelmetrics::net::testing

#endif  // MODELMETRICS_TESTS_NET_FAULT_SERVER_H_
