#include "net/http_server.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "base/mutex.h"
#include "base/text.h"

namespace modelmetrics::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

using base::EqualsIgnoreCase;

// RFC 9110 token characters.
bool IsToken(std::string_view s) {
  if (s.empty() || s.size() > 1024) return false;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) continue;
    if (std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

bool IsSafeValue(std::string_view s) {
  return s.size() <= 32 * 1024 && s.find_first_of(std::string_view("\r\n\0", 3)) == s.npos;
}

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

// Fills the caches OpenSSL keeps inside a certificate (SHA-1, key identifiers, purpose and CA
// flags), which it otherwise fills on the certificate's first use by a handshake or a chain
// check. Every certificate the connection threads share goes through this before the first of
// them starts, so from then on they only read it.
//
// Why: the first use writes the cache under the certificate's lock, and every later one skips the
// lock after an acquire load of a "cached" flag that the writer sets with a release store
// (ossl_x509v3_cache_extensions, crypto/x509/v3_purp.c, OpenSSL 3.0). That is correct, but in an
// uninstrumented libcrypto ThreadSanitizer sees neither atomic, only the intercepted memcpy that
// wrote a key identifier and the memcmp that reads it on another thread: two first handshakes
// at once were reported as a race (issue 35). Filled at start, no handshake writes shared state.
void FillCertificateCache(X509* cert) {
  if (cert != nullptr) X509_check_purpose(cert, -1, 0);
}

void FillCertificateCaches(STACK_OF(X509) * certs) {
  for (int i = 0; i < sk_X509_num(certs); ++i) FillCertificateCache(sk_X509_value(certs, i));
}

// Every certificate a server context holds: its own (each key type's) with their chains, and the
// trust store's, which the handshake uses to build the server's chain and check a client's.
void FillCertificateCaches(SSL_CTX* ctx) {
  for (long more = SSL_CTX_set_current_cert(ctx, SSL_CERT_SET_FIRST); more == 1;
       more = SSL_CTX_set_current_cert(ctx, SSL_CERT_SET_NEXT)) {
    FillCertificateCache(SSL_CTX_get0_certificate(ctx));
    STACK_OF(X509)* chain = nullptr;
    if (SSL_CTX_get0_chain_certs(ctx, &chain) == 1) FillCertificateCaches(chain);
  }
  STACK_OF(X509)* extra = nullptr;
  if (SSL_CTX_get_extra_chain_certs_only(ctx, &extra) == 1) FillCertificateCaches(extra);
  STACK_OF(X509_OBJECT)* objects = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx));
  for (int i = 0; i < sk_X509_OBJECT_num(objects); ++i) {
    FillCertificateCache(X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objects, i)));
  }
  ERR_clear_error();
}

// Drains OpenSSL's (thread-local) error queue into a message.
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

// Every PEM certificate in `pem` (none when it holds none).
std::vector<X509Ptr> ParseCertificates(std::string_view pem) {
  std::vector<X509Ptr> out;
  if (pem.empty()) return out;
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  if (!bio) return out;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    FillCertificateCache(cert);  // shared by the connection threads from here on
    out.emplace_back(cert);
  }
  ERR_clear_error();  // the loop ends on a "no start line" error
  return out;
}

bool LoadCertificates(const std::string& path, std::vector<X509Ptr>* out, std::string* error) {
  BIO* bio = BIO_new_file(path.c_str(), "r");
  if (bio == nullptr) {
    *error = "cannot read " + path + ": " + OpenSslErrors();
    return false;
  }
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    FillCertificateCache(cert);  // shared by the connection threads from here on
    out->emplace_back(cert);
  }
  ERR_clear_error();  // the loop ends on a "no start line" error
  BIO_free(bio);
  if (out->empty()) {
    *error = "no PEM certificate in " + path;
    return false;
  }
  return true;
}

std::vector<std::string> NameEntries(const X509_NAME* name, int nid) {
  std::vector<std::string> out;
  if (name == nullptr) return out;
  for (int i = X509_NAME_get_index_by_NID(name, nid, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(name, nid, i)) {
    const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
    unsigned char* utf8 = nullptr;
    int len = ASN1_STRING_to_UTF8(&utf8, data);
    if (len < 0) continue;
    out.emplace_back(reinterpret_cast<const char*>(utf8), static_cast<size_t>(len));
    OPENSSL_free(utf8);
  }
  return out;
}

std::string FirstNameEntry(const X509_NAME* name, int nid) {
  std::vector<std::string> all = NameEntries(name, nid);
  return all.empty() ? std::string() : std::move(all.front());
}

// Whether `leaf` (with the intermediates the client sent) chains to a certificate of `bundle`
// alone. The handshake verifies against every bundle at once; this tells them apart, so a
// certificate only the client CA vouches for can never pass as the front proxy's, whatever the
// bundles share (Kubernetes verifies against the request-header pool the same way).
bool VerifiesAgainst(const std::vector<X509Ptr>& bundle, X509* leaf, STACK_OF(X509) * untrusted) {
  if (bundle.empty()) return false;
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      X509_STORE_CTX_free);
  if (!store || !ctx) return false;
  for (const X509Ptr& ca : bundle) X509_STORE_add_cert(store.get(), ca.get());
  bool ok = X509_STORE_CTX_init(ctx.get(), store.get(), leaf, untrusted) == 1 &&
            X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_CLIENT) == 1 &&
            X509_verify_cert(ctx.get()) == 1;
  ERR_clear_error();
  return ok;
}

const beast::error_category& HttpErrorCategory() {
  static const beast::error_category& category =
      http::make_error_code(http::error::bad_method).category();
  return category;
}

constexpr std::size_t kReadChunk = 16 * 1024;
constexpr std::chrono::milliseconds kLingerTimeout{1000};
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

// ---------------------------------------------------------------------------------------------
// HttpHeaders, HttpResponse, Responder

void HttpHeaders::Add(std::string name, std::string value) {
  entries_.emplace_back(std::move(name), std::move(value));
}

std::string_view HttpHeaders::Get(std::string_view name) const {
  for (const auto& [n, v] : entries_) {
    if (EqualsIgnoreCase(n, name)) return v;
  }
  return {};
}

std::vector<std::string_view> HttpHeaders::GetAll(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const auto& [n, v] : entries_) {
    if (EqualsIgnoreCase(n, name)) out.push_back(v);
  }
  return out;
}

bool HttpHeaders::Has(std::string_view name) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [name](const auto& e) { return EqualsIgnoreCase(e.first, name); });
}

HttpResponse HttpResponse::Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  return r;
}

struct Responder::State {
  explicit State(std::function<void(HttpResponse)> d) : deliver(std::move(d)) {}
  ~State() {
    if (done.exchange(true)) return;
    try {
      deliver(HttpResponse::Text(500, "500 internal server error: no response\n"));
    } catch (...) {
    }
  }
  std::function<void(HttpResponse)> deliver;
  std::atomic<bool> done{false};
};

Responder::Responder(std::function<void(HttpResponse)> deliver)
    : state_(std::make_shared<State>(std::move(deliver))) {}

void Responder::operator()(HttpResponse response) const {
  if (state_->done.exchange(true)) return;
  state_->deliver(std::move(response));
}

// ---------------------------------------------------------------------------------------------
// Server internals

namespace internal {

// Lets Responders outlive the server: they post to a connection only while `open`.
struct ResponseGate {
  base::Mutex mu;
  bool open GUARDED_BY(mu) = true;
};

struct RouteEntry {
  std::string method;  // "" = any
  std::string path;
  bool prefix = false;
  HttpServer::Handler sync;
  HttpServer::AsyncHandler async;
};

class ConnectionBase : public std::enable_shared_from_this<ConnectionBase> {
 public:
  explicit ConnectionBase(asio::io_context* ioc) : ioc_(ioc) {}
  virtual ~ConnectionBase() = default;

  // Each of these runs on the connection's own io_context thread.
  virtual void Start() = 0;
  virtual void OnServerStop() = 0;  // close if idle, else finish the request in flight and close
  virtual void ForceClose() = 0;
  virtual void EvictIfIdle() = 0;  // close unless a request has begun since it was chosen
  virtual void OnAsyncResponse(uint64_t id, HttpResponse response) = 0;

  asio::io_context* ioc() const { return ioc_; }

  // Written on the connection's thread, read by the acceptor: no whole request is being handled
  // or answered (evictable).
  std::atomic<bool> idle{true};
  std::atomic<bool> evicting{false};  // chosen for eviction; not chosen twice
  // The server's activity tick when it was accepted or last finished a request: the eviction
  // order (lowest first), so a kept-alive client that keeps asking outlives a flood of
  // connections that never do. Written on the connection's thread, read by the acceptor.
  std::atomic<uint64_t> last_active{0};
  std::string remote_address;  // set before Start(), then read-only: for the per-address limit

 private:
  asio::io_context* const ioc_;  // fixed at construction: safe to read from any thread
};

class ServerImpl {
 public:
  explicit ServerImpl(ServerOptions options) : options_(std::move(options)) {}
  ~ServerImpl() { Stop(); }

  void AddRoute(RouteEntry entry);
  Status Start();
  void Stop();
  uint16_t port() const { return port_.load(std::memory_order_acquire); }
  size_t open_connections() const;

  // For connections (read-only after Start unless noted).
  const ServerOptions& options() const { return options_; }
  asio::ssl::context& ssl() { return *ssl_; }
  const std::shared_ptr<ResponseGate>& gate() const { return gate_; }
  // The route for `method` and `path`; nullptr with `*allow` the methods of the most specific
  // path match (empty when nothing matched the path).
  const RouteEntry* FindRoute(std::string_view method, std::string_view path,
                              std::string* allow) const;
  TlsPeer PeerOf(SSL* ssl) const;
  bool dynamic_cas() const { return options_.tls && options_.tls->dynamic_client_cas != nullptr; }
  void Unregister(ConnectionBase* connection);  // any IO thread
  // Any thread: increasing ticks that order connections' last activity.
  uint64_t NextActivityTick() { return activity_.fetch_add(1, std::memory_order_relaxed) + 1; }

 private:
  enum class State { kNew, kRunning, kStopped };

  bool BuildTls(std::string* error);
  void DoAccept();
  void OnAccept(const beast::error_code& ec, tcp::socket socket, asio::io_context* ioc);
  std::vector<std::shared_ptr<ConnectionBase>> Snapshot() REQUIRES(conns_mu_);
  // Under conns_mu_: the idle connection longest without activity not already being evicted,
  // or null.
  std::shared_ptr<ConnectionBase> LeastRecentlyActiveIdleLocked() REQUIRES(conns_mu_);

  ServerOptions options_;
  std::vector<RouteEntry> routes_;
  std::shared_ptr<ResponseGate> gate_ = std::make_shared<ResponseGate>();
  std::atomic<uint16_t> port_{0};
  State state_ = State::kNew;
  bool asks_client_cert_ = false;

  // Declared before the io_contexts so they outlive the streams destroyed with them.
  std::vector<X509Ptr> client_cas_;
  std::vector<X509Ptr> requestheader_cas_;
  // With a ClientCaSource: the bundles last parsed, and what they were parsed from.
  struct ParsedCas {
    std::vector<X509Ptr> client;
    std::vector<X509Ptr> requestheader;
  };
  std::shared_ptr<const ParsedCas> CurrentCas() const;
  mutable base::Mutex cas_mu_;
  mutable std::shared_ptr<const ClientCaSource::Bundles> cas_from_ GUARDED_BY(cas_mu_);
  mutable std::shared_ptr<const ParsedCas> cas_ GUARDED_BY(cas_mu_);
  std::optional<asio::ssl::context> ssl_;

  std::vector<std::unique_ptr<asio::io_context>> iocs_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::optional<tcp::acceptor> acceptor_;          // on iocs_[0]
  std::optional<asio::steady_timer> retry_timer_;  // on iocs_[0]
  size_t next_ioc_ = 0;                            // iocs_[0]'s thread only
  std::vector<std::thread> threads_;

  mutable base::Mutex conns_mu_;
  std::condition_variable conns_cv_;
  bool stopping_ GUARDED_BY(conns_mu_) = false;
  std::unordered_map<ConnectionBase*, std::shared_ptr<ConnectionBase>> conns_ GUARDED_BY(conns_mu_);
  std::unordered_map<std::string, size_t> per_address_ GUARDED_BY(conns_mu_);
  std::atomic<uint64_t> activity_{0};
};

// One connection, plain (kTls = false) or TLS. Everything runs on the thread of its io_context.
template <bool kTls>
class Connection final : public ConnectionBase {
 public:
  using Stream = std::conditional_t<kTls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;

  Connection(ServerImpl* server, asio::io_context* ioc, tcp::socket socket) requires(!kTls)
      : ConnectionBase(ioc), server_(server), stream_(std::move(socket)) {}
  Connection(ServerImpl* server, asio::io_context* ioc, tcp::socket socket) requires(kTls)
      : ConnectionBase(ioc), server_(server), stream_(std::move(socket), server->ssl()) {}

  void Start() override {
    beast::error_code ec;
    tcp::endpoint remote = lowest().socket().remote_endpoint(ec);
    if (ec) {
      Close();
      return;
    }
    remote_address_ = remote.address().to_string();
    remote_port_ = remote.port();
    if constexpr (kTls) {
      state_ = kHandshake;
      lowest().expires_after(opts().handshake_timeout);
      stream_.async_handshake(
          asio::ssl::stream_base::server,
          [self = Self()](const beast::error_code& e) { self->OnHandshake(e); });
    } else {
      BeginRequest();
    }
  }

  void OnServerStop() override {
    stopping_ = true;
    if (state_ == kNew || state_ == kHandshake || state_ == kIdle || state_ == kClosing) Close();
  }

  void ForceClose() override { Close(); }

  void EvictIfIdle() override {
    // Not yet holding a whole request: one byte sent must not make a connection unevictable.
    if (state_ == kNew || state_ == kHandshake || state_ == kIdle || state_ == kReading) {
      Close();
    } else {
      evicting.store(false, std::memory_order_relaxed);  // busy again: may be chosen later
    }
  }

  void OnAsyncResponse(uint64_t id, HttpResponse response) override {
    if (state_ != kHandling || id != request_id_) return;
    WriteResponse(std::move(response), /*error_close=*/false);
  }

 private:
  enum ConnState { kNew, kHandshake, kIdle, kReading, kHandling, kWriting, kClosing, kClosed };

  std::shared_ptr<Connection> Self() {
    return std::static_pointer_cast<Connection>(shared_from_this());
  }
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }
  const ServerOptions& opts() const { return server_->options(); }

  void OnHandshake(const beast::error_code& ec) {
    if (state_ == kClosed) return;
    if (ec) {
      Close();
      return;
    }
    if constexpr (kTls) peer_ = server_->PeerOf(stream_.native_handle());
    BeginRequest();
  }

  void BeginRequest() {
    if (stopping_) {
      Close();
      return;
    }
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(
        std::min<size_t>(opts().max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
    parser_->body_limit(opts().max_body_bytes);
    if (buffer_.size() > 0) {  // pipelined
      state_ = kReading;
      lowest().expires_after(opts().read_timeout);
      ReadHeader();
      return;
    }
    if (buffer_.capacity() > 4 * kReadChunk) buffer_.shrink_to_fit();  // after a big request
    // Wait for the first byte: a new connection's first request must arrive whole within
    // read_timeout; a kept-alive one may first idle for idle_timeout.
    state_ = kIdle;
    // The first wait keeps the tick taken at accept: a handshake is not activity.
    if (requests_ > 0) last_active.store(server_->NextActivityTick(), std::memory_order_relaxed);
    idle.store(true, std::memory_order_release);  // publishes the tick to the evicting acceptor
    lowest().expires_after(requests_ == 0 ? opts().read_timeout : opts().idle_timeout);
    stream_.async_read_some(
        buffer_.prepare(kReadChunk),
        [self = Self()](const beast::error_code& ec, size_t n) { self->OnFirstBytes(ec, n); });
  }

  void OnFirstBytes(const beast::error_code& ec, size_t n) {
    if (state_ == kClosed) return;
    if (ec) {
      Close();
      return;
    }
    buffer_.commit(n);
    state_ = kReading;
    if (requests_ > 0) lowest().expires_after(opts().read_timeout);
    ReadHeader();
  }

  void ReadHeader() {
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = Self()](const beast::error_code& ec, size_t n) { self->OnHeader(ec, n); });
  }

  // `n`: the bytes of the request line and headers. Beast limits the request line and the
  // fields separately (each to header_limit), so the sum is checked here against the contract.
  void OnHeader(const beast::error_code& ec, size_t n) {
    if (state_ == kClosed) return;
    if (ec) {
      OnReadError(ec);
      return;
    }
    if (n > opts().max_header_bytes) {
      OnReadError(http::error::header_limit);
      return;
    }
    if (parser_->is_done()) {
      Dispatch();
      return;
    }
    const auto& req = parser_->get();
    if (req.version() >= 11 && EqualsIgnoreCase(req[http::field::expect], "100-continue")) {
      asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                        [self = Self()](const beast::error_code& e, size_t) {
                          if (self->state_ == kClosed) return;
                          if (e) {
                            self->Close();
                          } else {
                            self->ReadBody();
                          }
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = Self()](const beast::error_code& ec, size_t) {
                       if (self->state_ == kClosed) return;
                       if (ec) {
                         self->OnReadError(ec);
                       } else {
                         self->Dispatch();
                       }
                     });
  }

  void OnReadError(const beast::error_code& ec) {
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      SendError(431, "431 request header fields too large\n");
    } else if (ec == http::error::body_limit) {
      SendError(413, "413 request entity too large\n");
    } else if (ec.category() == HttpErrorCategory() && ec != http::error::end_of_stream &&
               ec != http::error::partial_message && ec != http::error::short_read) {
      SendError(400, "400 bad request\n");
    } else {
      Close();  // timeout, reset, EOF mid-request, aborted by Stop()
    }
  }

  void SendError(int status, std::string body) {
    version_ = 11;
    keep_alive_ = false;
    head_ = false;
    WriteResponse(HttpResponse::Text(status, std::move(body)), /*error_close=*/true);
  }

  void Dispatch() {
    idle.store(false, std::memory_order_relaxed);  // a whole request: no longer evictable
    auto msg = parser_->release();
    parser_.reset();
    ++requests_;
    version_ = msg.version();
    keep_alive_ = msg.keep_alive();
    head_ = msg.method() == http::verb::head;

    auto request = std::make_shared<HttpRequest>();
    request->received_at = std::chrono::steady_clock::now();
    request->method = std::string(msg.method_string());
    request->target = std::string(msg.target());
    size_t q = request->target.find('?');
    request->path = request->target.substr(0, q);
    if (q != std::string::npos) request->query = request->target.substr(q + 1);
    request->version = msg.version();
    for (const auto& field : msg) {
      request->headers.Add(std::string(field.name_string()), std::string(field.value()));
    }
    request->body = std::move(msg.body());
    request->remote_address = remote_address_;
    request->remote_port = remote_port_;
    // With CAs that rotate, each request is judged by the CAs (and the clock) of its moment, as
    // Kubernetes verifies a client certificate per request: a kept-alive connection from a
    // rotated-out CA must not keep its trust.
    if constexpr (kTls) {
      if (server_->dynamic_cas()) peer_ = server_->PeerOf(stream_.native_handle());
    }
    request->peer = peer_;

    std::string allow;
    const RouteEntry* route = server_->FindRoute(request->method, request->path, &allow);
    if (route == nullptr) {
      if (allow.empty()) {
        WriteResponse(HttpResponse::Text(404, "404 page not found\n"), false);
      } else {
        HttpResponse r = HttpResponse::Text(405, "405 method not allowed\n");
        r.headers.emplace_back("Allow", std::move(allow));
        WriteResponse(std::move(r), false);
      }
      return;
    }

    if (route->sync) {
      HttpResponse response;
      try {
        response = route->sync(*request);
      } catch (...) {
        response = HttpResponse::Text(500, "500 internal server error\n");
      }
      WriteResponse(std::move(response), false);
      return;
    }

    state_ = kHandling;
    uint64_t id = ++request_id_;
    Responder responder(
        [gate = server_->gate(), weak = weak_from_this(), request, id](HttpResponse response) {
          base::MutexLock lock(&gate->mu);
          if (!gate->open) return;  // the server is gone or going
          std::shared_ptr<ConnectionBase> c = weak.lock();
          if (!c) return;
          asio::io_context* ioc = c->ioc();
          asio::post(*ioc, [c = std::move(c), id, r = std::move(response)]() mutable {
            c->OnAsyncResponse(id, std::move(r));
          });
        });
    try {
      route->async(*request, responder);
    } catch (...) {
      responder(HttpResponse::Text(500, "500 internal server error\n"));
    }
  }

  void WriteResponse(HttpResponse response, bool error_close) {
    close_after_ = error_close || !keep_alive_ || stopping_;
    linger_ = error_close;
    res_ = {};
    try {
      int status = response.status;
      if (status < 200 || status > 599) {
        status = 500;
        response = HttpResponse::Text(500, "500 internal server error: bad status\n");
      }
      res_.result(static_cast<unsigned>(status));
      res_.version(version_ == 10 ? 10 : 11);
      if (!response.content_type.empty() && IsSafeValue(response.content_type)) {
        res_.set(http::field::content_type, response.content_type);
      }
      for (const auto& [name, value] : response.headers) {
        if (!IsToken(name) || !IsSafeValue(value) || EqualsIgnoreCase(name, "content-length") ||
            EqualsIgnoreCase(name, "transfer-encoding") || EqualsIgnoreCase(name, "connection")) {
          continue;
        }
        res_.insert(name, value);
      }
      if (status != 204 && status != 304) res_.body() = std::move(response.body);
      res_.keep_alive(!close_after_);
      res_.prepare_payload();
      if (head_) res_.body().clear();  // keeps the Content-Length of the GET
    } catch (...) {
      res_ = {};
      res_.result(http::status::internal_server_error);
      res_.version(11);
      res_.set(http::field::content_type, "text/plain; charset=utf-8");
      res_.body() = "500 internal server error\n";
      res_.keep_alive(!close_after_);
      res_.prepare_payload();
    }
    state_ = kWriting;
    lowest().expires_after(opts().write_timeout);
    http::async_write(stream_, res_,
                      [self = Self()](const beast::error_code& ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(const beast::error_code& ec) {
    if (state_ == kClosed) return;
    res_ = {};
    if (ec) {
      Close();
    } else if (close_after_ || stopping_) {
      Shutdown();
    } else {
      BeginRequest();
    }
  }

  // Closes after a response: TLS sends close_notify; plain TCP half-closes and, after an error
  // response, drains what the client still sends so that its unread bytes do not turn our close
  // into a reset that could destroy the response before the client reads it.
  void Shutdown() {
    if (stopping_) {
      Close();
      return;
    }
    state_ = kClosing;
    idle.store(false, std::memory_order_relaxed);  // lingering keeps an error response intact
    if constexpr (kTls) {
      lowest().expires_after(std::min(opts().write_timeout, kLingerTimeout));
      stream_.async_shutdown([self = Self()](const beast::error_code&) { self->Close(); });
    } else {
      beast::error_code ec;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
      if (ec || !linger_) {
        Close();
        return;
      }
      lowest().expires_after(std::min(opts().read_timeout, kLingerTimeout));
      Drain();
    }
  }

  void Drain() {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = Self()](const beast::error_code& ec, size_t) {
                              if (self->state_ == kClosed) return;
                              if (ec) {
                                self->Close();
                              } else {
                                self->Drain();
                              }
                            });
  }

  void Close() {
    if (state_ == kClosed) return;
    state_ = kClosed;
    lowest().close();  // cancels whatever is pending
    server_->Unregister(this);
  }

  ServerImpl* const server_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  ConnState state_ = kNew;
  bool stopping_ = false;
  bool keep_alive_ = true;
  bool close_after_ = false;
  bool linger_ = false;
  bool head_ = false;  // the request being answered is a HEAD
  unsigned version_ = 11;
  uint64_t requests_ = 0;
  uint64_t request_id_ = 0;
  std::string remote_address_;
  uint16_t remote_port_ = 0;
  TlsPeer peer_;
};

void ServerImpl::AddRoute(RouteEntry entry) {
  for (RouteEntry& r : routes_) {
    if (r.method == entry.method && r.path == entry.path && r.prefix == entry.prefix) {
      r = std::move(entry);
      return;
    }
  }
  routes_.push_back(std::move(entry));
}

const RouteEntry* ServerImpl::FindRoute(std::string_view method, std::string_view path,
                                        std::string* allow) const {
  // Specificity: an exact match beats every prefix; a longer prefix beats a shorter one.
  auto specificity = [path](const RouteEntry& r) -> std::optional<size_t> {
    if (r.prefix) {
      if (path.substr(0, r.path.size()) == r.path) return r.path.size();
      return std::nullopt;
    }
    if (path == r.path) return std::numeric_limits<size_t>::max();
    return std::nullopt;
  };
  const RouteEntry* best = nullptr;
  size_t best_score = 0;
  bool best_exact_method = false;
  std::optional<size_t> top_path_score;
  for (const RouteEntry& r : routes_) {
    std::optional<size_t> score = specificity(r);
    if (!score) continue;
    if (!top_path_score || *score > *top_path_score) top_path_score = score;
    bool exact_method = !r.method.empty() && r.method == method;
    if (!exact_method && !r.method.empty()) continue;
    if (best == nullptr || *score > best_score ||
        (*score == best_score && exact_method && !best_exact_method)) {
      best = &r;
      best_score = *score;
      best_exact_method = exact_method;
    }
  }
  allow->clear();
  if (best != nullptr || !top_path_score) return best;
  std::vector<std::string_view> methods;  // of the most specific path match; none is ""
  for (const RouteEntry& r : routes_) {
    if (specificity(r) != top_path_score) continue;
    if (std::find(methods.begin(), methods.end(), r.method) != methods.end()) continue;
    methods.push_back(r.method);
    if (!allow->empty()) *allow += ", ";
    *allow += r.method;
  }
  return nullptr;
}

TlsPeer ServerImpl::PeerOf(SSL* ssl) const {
  TlsPeer peer;
  peer.tls = true;
  X509Ptr cert(SSL_get1_peer_certificate(ssl));
  if (!cert) return peer;
  peer.cert_presented = true;
  peer.subject_cn = FirstNameEntry(X509_get_subject_name(cert.get()), NID_commonName);
  peer.subject_organizations = NameEntries(X509_get_subject_name(cert.get()), NID_organizationName);
  peer.issuer_cn = FirstNameEntry(X509_get_issuer_name(cert.get()), NID_commonName);
  const TlsOptions& tls = *options_.tls;
  if (tls.dynamic_client_cas) {
    // The handshake accepted any certificate; the bundles of this moment decide.
    const std::shared_ptr<const ParsedCas> cas = CurrentCas();
    STACK_OF(X509)* sent = SSL_get_peer_cert_chain(ssl);
    peer.verified_by_client_ca = VerifiesAgainst(cas->client, cert.get(), sent);
    peer.verified_by_requestheader_ca = VerifiesAgainst(cas->requestheader, cert.get(), sent);
    peer.cert_verified = peer.verified_by_client_ca || peer.verified_by_requestheader_ca;
  } else if (asks_client_cert_ && SSL_get_verify_result(ssl) == X509_V_OK) {
    STACK_OF(X509)* sent = SSL_get_peer_cert_chain(ssl);  // the client's intermediates
    peer.verified_by_client_ca = VerifiesAgainst(client_cas_, cert.get(), sent);
    peer.verified_by_requestheader_ca = VerifiesAgainst(requestheader_cas_, cert.get(), sent);
    peer.cert_verified = peer.verified_by_client_ca || peer.verified_by_requestheader_ca;
  }
  return peer;
}

std::shared_ptr<const ServerImpl::ParsedCas> ServerImpl::CurrentCas() const {
  std::shared_ptr<const ClientCaSource::Bundles> now = options_.tls->dynamic_client_cas->Current();
  base::MutexLock lock(&cas_mu_);
  if (!cas_ || now != cas_from_) {
    auto parsed = std::make_shared<ParsedCas>();
    if (now) {
      parsed->client = ParseCertificates(now->client_ca_pem);
      parsed->requestheader = ParseCertificates(now->requestheader_ca_pem);
    }
    cas_ = std::move(parsed);
    cas_from_ = std::move(now);
  }
  return cas_;
}

bool ServerImpl::BuildTls(std::string* error) {
  const TlsOptions& tls = *options_.tls;
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    *error = "tls: cert_file and key_file are required";
    return false;
  }
  ssl_.emplace(asio::ssl::context::tls_server);
  SSL_CTX* ctx = ssl_->native_handle();
  ERR_clear_error();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  ssl_->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::single_dh_use);
  beast::error_code ec;
  ssl_->use_certificate_chain_file(tls.cert_file, ec);
  if (ec) {
    *error = "tls: cannot load certificate " + tls.cert_file + ": " + ec.message();
    return false;
  }
  ssl_->use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
  if (ec) {
    *error = "tls: cannot load private key " + tls.key_file + ": " + ec.message();
    return false;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    *error = "tls: private key " + tls.key_file + " does not match certificate " + tls.cert_file;
    ERR_clear_error();
    return false;
  }
  if (tls.dynamic_client_cas) {
    // Asked of every client, checked after the handshake against the bundles of the moment.
    static constexpr unsigned char kContext[] = "modelmetrics";
    SSL_CTX_set_session_id_context(ctx, kContext, sizeof(kContext) - 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_verify(
        ctx, SSL_VERIFY_PEER | (tls.require_client_cert ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
        [](int, X509_STORE_CTX*) { return 1; });
    asks_client_cert_ = true;
    return true;
  }
  if (!tls.client_ca_file.empty() && !LoadCertificates(tls.client_ca_file, &client_cas_, error)) {
    *error = "tls: client CA: " + *error;
    return false;
  }
  if (!tls.requestheader_ca_file.empty() &&
      !LoadCertificates(tls.requestheader_ca_file, &requestheader_cas_, error)) {
    *error = "tls: request-header CA: " + *error;
    return false;
  }
  asks_client_cert_ = !client_cas_.empty() || !requestheader_cas_.empty();
  if (tls.require_client_cert && !asks_client_cert_) {
    *error = "tls: require_client_cert needs client_ca_file or requestheader_ca_file";
    return false;
  }
  if (!asks_client_cert_) {
    ssl_->set_verify_mode(asio::ssl::verify_none);
    return true;
  }
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  for (const auto* bundle : {&client_cas_, &requestheader_cas_}) {
    for (const X509Ptr& ca : *bundle) {
      X509_STORE_add_cert(store, ca.get());  // a duplicate is harmless
      SSL_CTX_add_client_CA(ctx, ca.get());  // advertised in CertificateRequest
    }
  }
  ERR_clear_error();
  // No resumption: a resumed session has no verified chain to tell which CA signed it.
  static constexpr unsigned char kSessionContext[] = "modelmetrics";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(ctx, 0);
  ssl_->set_verify_mode(asio::ssl::verify_peer |
                        (tls.require_client_cert ? asio::ssl::verify_fail_if_no_peer_cert : 0));
  return true;
}

Status ServerImpl::Start() {
  if (state_ != State::kNew) {
    return Status::Internal(state_ == State::kRunning ? "already started"
                                                      : "stopped servers do not restart");
  }
  if (options_.threads < 1 || options_.max_connections < 1 || options_.max_header_bytes < 64) {
    return Status::InvalidArgument(
        "bad options: threads, max_connections must be >= 1, max_header_bytes >= 64");
  }
  beast::error_code ec;
  asio::ip::address address = asio::ip::make_address(options_.address, ec);
  if (ec) {
    return Status::InvalidArgument("bad address '" + options_.address + "': " + ec.message());
  }
  if (std::string error; options_.tls && !BuildTls(&error)) {
    return Status::InvalidArgument(std::move(error));
  }
  if (ssl_) FillCertificateCaches(ssl_->native_handle());  // before any connection thread

  for (int i = 0; i < options_.threads; ++i) iocs_.push_back(std::make_unique<asio::io_context>(1));
  tcp::endpoint endpoint(address, options_.port);
  std::string where = endpoint.address().to_string() + " port " + std::to_string(options_.port);
  acceptor_.emplace(*iocs_[0]);
  retry_timer_.emplace(*iocs_[0]);
  auto fail = [&](const char* what) {
    acceptor_.reset();
    retry_timer_.reset();
    iocs_.clear();
    return Status::Unavailable(std::string(what) + " " + where + ": " + ec.message());
  };
  acceptor_->open(endpoint.protocol(), ec);
  if (ec) return fail("cannot open socket for");
  acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (ec) return fail("cannot set SO_REUSEADDR for");
  acceptor_->bind(endpoint, ec);
  if (ec) return fail("cannot bind");
  acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("cannot listen on");
  port_.store(acceptor_->local_endpoint(ec).port(), std::memory_order_release);

  for (auto& ioc : iocs_) guards_.push_back(asio::make_work_guard(*ioc));
  asio::post(*iocs_[0], [this] { DoAccept(); });
  for (auto& ioc : iocs_) {
    threads_.emplace_back([ctx = ioc.get()] {
      for (;;) {
        try {
          ctx->run();
          return;
        } catch (...) {  // nothing here throws on purpose; keep serving if something does
        }
      }
    });
  }
  state_ = State::kRunning;
  return Status::Ok();
}

void ServerImpl::DoAccept() {
  asio::io_context* target = iocs_[next_ioc_++ % iocs_.size()].get();
  acceptor_->async_accept(*target, [this, target](const beast::error_code& ec, tcp::socket socket) {
    OnAccept(ec, std::move(socket), target);
  });
}

void ServerImpl::OnAccept(const beast::error_code& ec, tcp::socket socket, asio::io_context* ioc) {
  if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
  if (ec) {  // e.g. out of file descriptors: back off instead of spinning
    retry_timer_->expires_after(std::chrono::milliseconds(50));
    retry_timer_->async_wait([this](const beast::error_code& e) {
      if (!e && acceptor_->is_open()) DoAccept();
    });
    return;
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  const tcp::endpoint remote = socket.remote_endpoint(ignored);
  std::string address = ignored ? std::string() : remote.address().to_string();
  std::shared_ptr<ConnectionBase> connection;
  std::shared_ptr<ConnectionBase> evicted;
  {
    base::MutexLock lock(&conns_mu_);
    bool admit = !stopping_;
    const size_t per_address_limit = options_.max_connections_per_address;
    if (admit && per_address_limit > 0) {
      const auto it = per_address_.find(address);
      admit = it == per_address_.end() || it->second < per_address_limit;
    }
    if (admit && conns_.size() >= options_.max_connections) {
      evicted = LeastRecentlyActiveIdleLocked();
      admit = evicted != nullptr;
    }
    if (admit) {
      if (ssl_) {
        connection = std::make_shared<Connection<true>>(this, ioc, std::move(socket));
      } else {
        connection = std::make_shared<Connection<false>>(this, ioc, std::move(socket));
      }
      connection->last_active.store(NextActivityTick(), std::memory_order_relaxed);
      connection->remote_address = std::move(address);
      conns_.emplace(connection.get(), connection);
      ++per_address_[connection->remote_address];
    }
  }
  if (evicted) {
    asio::post(*evicted->ioc(), [evicted] { evicted->EvictIfIdle(); });
  }
  if (connection) {
    asio::post(*ioc, [connection] { connection->Start(); });
  } else {
    socket.close(ignored);  // over a limit (or stopping)
  }
  DoAccept();
}

std::shared_ptr<ConnectionBase> ServerImpl::LeastRecentlyActiveIdleLocked() {
  // A scan, only at the limit: at most max_connections atomic loads per admitted connection.
  ConnectionBase* pick = nullptr;
  uint64_t pick_tick = 0;
  for (const auto& [raw, owned] : conns_) {
    if (!raw->idle.load(std::memory_order_acquire)) continue;  // then its tick is current
    if (raw->evicting.load(std::memory_order_relaxed)) continue;
    const uint64_t tick = raw->last_active.load(std::memory_order_relaxed);
    if (pick == nullptr || tick < pick_tick) {
      pick = raw;
      pick_tick = tick;
    }
  }
  if (pick == nullptr) return nullptr;
  pick->evicting.store(true, std::memory_order_relaxed);  // conns_mu_ held: not chosen twice
  return conns_.at(pick);
}

size_t ServerImpl::open_connections() const {
  base::MutexLock lock(&conns_mu_);
  return conns_.size();
}

void ServerImpl::Unregister(ConnectionBase* connection) {
  std::shared_ptr<ConnectionBase> keep;  // released outside the lock
  base::MutexLock lock(&conns_mu_);
  auto it = conns_.find(connection);
  if (it == conns_.end()) return;
  keep = std::move(it->second);
  conns_.erase(it);
  if (auto count = per_address_.find(keep->remote_address); count != per_address_.end()) {
    if (--count->second == 0) per_address_.erase(count);
  }
  if (conns_.empty()) conns_cv_.notify_all();
}

std::vector<std::shared_ptr<ConnectionBase>> ServerImpl::Snapshot() {
  std::vector<std::shared_ptr<ConnectionBase>> out;
  out.reserve(conns_.size());
  for (auto& [raw, c] : conns_) out.push_back(c);
  return out;
}

void ServerImpl::Stop() {
  if (state_ != State::kRunning) return;
  state_ = State::kStopped;

  std::vector<std::shared_ptr<ConnectionBase>> conns;
  {
    base::MutexLock lock(&conns_mu_);
    stopping_ = true;
    conns = Snapshot();
  }
  asio::post(*iocs_[0], [this] {
    beast::error_code ignored;
    acceptor_->close(ignored);
    retry_timer_->cancel();
  });
  for (auto& c : conns) {
    asio::post(*c->ioc(), [c] { c->OnServerStop(); });
  }
  conns.clear();

  auto drained = [this]() REQUIRES(conns_mu_) { return conns_.empty(); };
  {
    base::MutexLock lock(&conns_mu_);
    if (!conns_cv_.wait_for(lock.native(), options_.shutdown_timeout, drained)) conns = Snapshot();
  }
  for (auto& c : conns) {
    asio::post(*c->ioc(), [c] { c->ForceClose(); });
  }
  conns.clear();
  {
    base::MutexLock lock(&conns_mu_);
    conns_cv_.wait_for(lock.native(), std::chrono::seconds(1), drained);
  }

  guards_.clear();
  for (auto& ioc : iocs_) ioc->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  {
    base::MutexLock lock(&gate_->mu);
    gate_->open = false;
  }
  base::MutexLock lock(&conns_mu_);
  conns = Snapshot();
  conns_.clear();
  per_address_.clear();
  // `conns` dies here, with the io_contexts still alive and no thread running them; handlers still
  // queued in them keep their connections until the io_contexts are destroyed.
}

}  // namespace internal

// ---------------------------------------------------------------------------------------------
// HttpServer

HttpServer::HttpServer(ServerOptions options)
    : impl_(std::make_unique<internal::ServerImpl>(std::move(options))) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Route(std::string method, std::string path, Handler handler) {
  impl_->AddRoute({std::move(method), std::move(path), false, std::move(handler), nullptr});
}

void HttpServer::RoutePrefix(std::string method, std::string prefix, Handler handler) {
  impl_->AddRoute({std::move(method), std::move(prefix), true, std::move(handler), nullptr});
}

void HttpServer::RouteAsync(std::string method, std::string path, AsyncHandler handler) {
  impl_->AddRoute({std::move(method), std::move(path), false, nullptr, std::move(handler)});
}

void HttpServer::RoutePrefixAsync(std::string method, std::string prefix, AsyncHandler handler) {
  impl_->AddRoute({std::move(method), std::move(prefix), true, nullptr, std::move(handler)});
}

Status HttpServer::Start() { return impl_->Start(); }

uint16_t HttpServer::port() const { return impl_->port(); }

size_t HttpServer::open_connections() const { return impl_->open_connections(); }

void HttpServer::Stop() { impl_->Stop(); }

}  // namespace modelmetrics::net
