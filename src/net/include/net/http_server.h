// An embedded HTTP/1.1 server on Boost.Beast/Asio: Prometheus /metrics and, later, a
// Kubernetes-style aggregated API.
//
// Contract:
//  - Asynchronous: `ServerOptions::threads` IO threads (one io_context each) serve every
//    connection; there is no thread per connection. Connections are spread round-robin.
//  - Limits: the request line plus headers may be at most `max_header_bytes` (else 431 and close),
//    the body at most `max_body_bytes` (else 413 and close); a malformed request gets 400 and
//    close. A whole request (first byte to last body byte) must arrive within `read_timeout`,
//    whatever the client trickles; for a connection's first request the clock starts when the
//    connection is ready (accepted, or TLS handshake done; the handshake must finish within
//    `handshake_timeout`). A kept-alive connection with no new request within `idle_timeout` is
//    closed; a response must be written within `write_timeout`.
//  - Connection exhaustion: at `max_connections`, a new connection is admitted by closing the
//    connection longest without activity (accepted, or last finished a request, longest ago) that
//    holds no whole request (still in its TLS handshake, waiting for or still reading a request,
//    or kept alive and idle), so a kept-alive client that keeps asking (kube-apiserver's pooled
//    connection) outlives a flood of newer ones that never ask; only when every connection is
//    handling or answering a request is the new one closed at once. A connection chosen for
//    eviction that completes a request first is kept, so the count may briefly exceed the limit by
//    one. So clients that open connections and send nothing cannot lock others out: they only push
//    out each other. With `max_connections_per_address` > 0, one client address holds at most that
//    many (more are closed at once); off by default because behind kube-apiserver every request
//    comes from the same address.
//  - HTTP/1.1 keep-alive and pipelining (answered in order, one request at a time per
//    connection). Every response carries Content-Length, and `Connection: close` when the server
//    closes after it (HTTP/1.1). `Expect: 100-continue` is answered. A HEAD request reaching a
//    handler gets its headers without the body. No gzip.
//  - Routes: exact paths and path prefixes, each for one method or any (""). A request goes to the
//    most specific route that accepts its method: an exact path beats any prefix, a longer prefix
//    a shorter one, and at one path a route for the method beats one for any method. No route for
//    the path: 404. Routes for the path but none for the method: 405, with `Allow` naming the
//    methods of the most specific of them. `target` is split at the first '?' into `path` and
//    `query`; no percent-decoding.
//  - Handlers: a sync Handler runs on an IO thread and must be fast. An AsyncHandler gets a
//    Responder it may call later from any thread; the IO thread is free meanwhile. A handler that
//    throws gets a 500 (the exception is swallowed). The server adds no Date/Server headers.
//  - TLS (optional): the server presents `cert_file`/`key_file`. With a client CA and/or a
//    request-header CA bundle it asks for a client certificate and verifies it against both
//    bundles (a certificate presented but not verified fails the handshake); with
//    `require_client_cert` a client without one is refused. HttpRequest::peer tells which bundle
//    verified the certificate. With a ClientCaSource instead, the bundles may change at any
//    time and are applied per connection after the handshake (TlsOptions::dynamic_client_cas).
//    Session resumption is off when client certificates are asked for, so every connection carries
//    its verified chain.
//  - Stop() is graceful: it stops accepting, closes idle connections at once, lets requests in
//    flight finish (their responses get `Connection: close`) up to `shutdown_timeout`, then closes
//    the rest. A Responder called after that is ignored.
//
// Thread-safety: register routes before Start(); after Start() the route table is read-only.
// Start(), Stop() and the destructor may be called from any thread but not concurrently with each
// other, and never from a handler (an IO thread): Stop() joins the IO threads. port() is safe
// from any thread after Start(). A Responder may be copied, moved and called from any thread.
// Handlers may run concurrently with each other when `threads` > 1.
#ifndef MODELMETRICS_NET_HTTP_SERVER_H_
#define MODELMETRICS_NET_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace modelmetrics::net {

using base::Status;

// Request headers in arrival order, with case-insensitive lookup. A header sent on several lines
// has several entries; values are not split on commas.
class HttpHeaders {
 public:
  void Add(std::string name, std::string value);

  // The first value of `name`, or "" when absent.
  std::string_view Get(std::string_view name) const;
  // Every value of `name`, in arrival order.
  std::vector<std::string_view> GetAll(std::string_view name) const;
  bool Has(std::string_view name) const;

  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

// What TLS said about the client. All false/empty on a plain connection.
struct TlsPeer {
  bool tls = false;             // the connection is TLS
  bool cert_presented = false;  // the client sent a certificate
  bool cert_verified = false;   // it chains to a configured CA bundle (always, when presented)
  bool verified_by_client_ca = false;         // ...to a certificate of TlsOptions::client_ca_file
  bool verified_by_requestheader_ca = false;  // ...to one of TlsOptions::requestheader_ca_file
  std::string subject_cn;                     // first CN of the subject
  std::vector<std::string> subject_organizations;  // every O of the subject, in order
  std::string issuer_cn;                           // first CN of the issuer
};

struct HttpRequest {
  std::string method;     // as sent, e.g. "GET"
  std::string target;     // as sent, e.g. "/metrics?x=1"
  std::string path;       // target before the first '?'
  std::string query;      // target after the first '?', without it
  unsigned version = 11;  // 10 for HTTP/1.0, 11 for HTTP/1.1
  HttpHeaders headers;
  std::string body;
  std::string remote_address;  // the client's IP address
  uint16_t remote_port = 0;
  TlsPeer peer;
  // When the whole request (headers and body) had arrived; time budgets count from here.
  std::chrono::steady_clock::time_point received_at;
};

struct HttpResponse {
  int status = 200;          // 200..599; anything else is sent as 500
  std::string content_type;  // sent verbatim as Content-Type when non-empty
  // Extra headers. Content-Length, Transfer-Encoding and Connection are the server's and are
  // ignored here, as are names that are not tokens and values with CR, LF or NUL.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // A text/plain; charset=utf-8 response.
  static HttpResponse Text(int status, std::string body);
};

// Answers one request of an AsyncHandler, from any thread. Copies share one state: the first call
// wins, later calls are ignored; when the last copy is destroyed uncalled the request gets a 500.
class Responder {
 public:
  // Delivers the response to `deliver` (exactly once, as above). The server builds its own; tests
  // may build one to drive an AsyncHandler without a server.
  explicit Responder(std::function<void(HttpResponse)> deliver);

  void operator()(HttpResponse response) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Client CA bundles that change while the server runs: Kubernetes' extension-apiserver-
// authentication ConfigMap carries them, and a rotation must take effect without a restart.
class ClientCaSource {
 public:
  struct Bundles {
    std::string client_ca_pem;         // PEM certificates; empty: no client CA
    std::string requestheader_ca_pem;  // PEM certificates; empty: no request-header CA
  };
  virtual ~ClientCaSource() = default;
  // The bundles now; a different pointer once they change. Called once per TLS connection, from
  // IO threads, so it must be cheap and thread-safe.
  virtual std::shared_ptr<const Bundles> Current() const = 0;
};

struct TlsOptions {
  std::string cert_file;  // PEM chain, leaf first
  std::string key_file;   // PEM private key
  // PEM CA bundles for client certificates; either or both may be empty. Kubernetes' front proxy
  // presents certificates signed by the request-header CA.
  std::string client_ca_file;
  std::string requestheader_ca_file;
  bool require_client_cert = false;  // needs at least one CA bundle
  // When set, the two CA files above are not used: every client is asked for a certificate, the
  // handshake accepts any, and each connection's certificate is verified after the handshake
  // against the bundles the source holds then (TlsPeer tells which verified it; an unverified
  // one authenticates nobody). As k8s.io/apiserver's dynamic CA verification.
  std::shared_ptr<const ClientCaSource> dynamic_client_cas;
};

struct ServerOptions {
  std::string address = "127.0.0.1";  // IPv4 or IPv6 literal; "0.0.0.0" / "::" for all
  uint16_t port = 0;                  // 0 picks a free port; see HttpServer::port()
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 1 << 20;
  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds handshake_timeout{3000};  // TLS handshake, from accept
  std::chrono::milliseconds idle_timeout{60000};
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::milliseconds shutdown_timeout{5000};  // how long Stop() lets requests finish
  size_t max_connections = 1024;
  size_t max_connections_per_address = 0;  // 0: no per-address limit
  int threads = 1;
  std::optional<TlsOptions> tls;
};

namespace internal {
class ServerImpl;
}  // namespace internal

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // The request stays valid while any copy of its Responder exists.
  using AsyncHandler = std::function<void(const HttpRequest&, Responder)>;

  explicit HttpServer(ServerOptions options);
  ~HttpServer();  // Stop()s

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes `method` ("" = any) requests for exactly `path`, or for every path starting with
  // `prefix`. Registering the same method, path and kind again replaces the handler. Before
  // Start() only.
  void Route(std::string method, std::string path, Handler handler);
  void RoutePrefix(std::string method, std::string prefix, Handler handler);
  void RouteAsync(std::string method, std::string path, AsyncHandler handler);
  void RoutePrefixAsync(std::string method, std::string prefix, AsyncHandler handler);

  // Binds, listens and starts the IO threads. On failure (bad options or address, port in use,
  // unreadable or mismatched certificate/key/CA) a status saying which. Once only: a stopped
  // server does not restart.
  Status Start();

  // The bound port, after a successful Start(); 0 before.
  uint16_t port() const;

  // Connections accepted and not yet closed (any thread). Tests wait on it instead of sleeping
  // until the server has accepted what they opened.
  size_t open_connections() const;

  // Graceful stop (see above); blocks up to about shutdown_timeout. Idempotent.
  void Stop();

 private:
  std::unique_ptr<internal::ServerImpl> impl_;
};

}  // namespace modelmetrics::net

#endif  // MODELMETRICS_NET_HTTP_SERVER_H_
