#include "net/fault_server.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <charconv>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace modelmetrics::net::testing {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    size_t end = path.find('/');
    parts.push_back(path.substr(0, end));
    path = end == std::string_view::npos ? std::string_view() : path.substr(end);
  }
  return parts;
}

size_t ToSize(std::string_view s) {
  size_t value = 0;
  std::from_chars(s.data(), s.data() + s.size(), value);
  return value;
}

std::string Gzip(size_t decoded_size) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::string input(64 * 1024, 'x');
  std::string out;
  char buf[64 * 1024];
  size_t left = decoded_size;
  int flush = Z_NO_FLUSH;
  do {
    size_t n = std::min(left, input.size());
    left -= n;
    flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    zs.next_in = reinterpret_cast<Bytef*>(input.data());
    zs.avail_in = static_cast<uInt>(n);
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof(buf);
      deflate(&zs, flush);
      out.append(buf, sizeof(buf) - zs.avail_out);
    } while (zs.avail_out == 0);
  } while (flush != Z_FINISH);
  deflateEnd(&zs);
  return out;
}

std::string Response(int status, std::string_view reason, std::string_view body,
                     std::string_view extra_headers = "") {
  std::string r = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
  r += extra_headers;
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  r += body;
  return r;
}

}  // namespace

struct FaultServer::Impl {
  FaultServerOptions options;
  std::string scheme;
  uint16_t port = 0;

  mutable std::mutex mu;
  std::map<std::string, int, std::less<>> hits;  // Guarded by mu.
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::atomic<int> connections{0};

  std::unique_ptr<ssl::context> tls;
  // Declared after the state above so it is destroyed first: destroying it destroys the pending
  // coroutine frames (acceptor, sockets), which refer to that state.
  asio::io_context io;
  std::thread thread;

  // Counts one request as in flight for its lifetime.
  class InFlight {
   public:
    explicit InFlight(Impl* impl) : impl_(impl) {
      int now = ++impl_->in_flight;
      int seen = impl_->max_in_flight.load();
      while (now > seen && !impl_->max_in_flight.compare_exchange_weak(seen, now)) {
      }
    }
    ~InFlight() { --impl_->in_flight; }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

   private:
    Impl* impl_;
  };

  awaitable<void> Accept(tcp::acceptor acceptor) {
    for (;;) {
      tcp::socket socket = co_await acceptor.async_accept(use_awaitable);
      ++connections;
      asio::co_spawn(io, Connection(std::move(socket)), asio::detached);
    }
  }

  awaitable<void> Connection(tcp::socket socket) {
    try {
      if (tls) {
        ssl::stream<tcp::socket> stream(std::move(socket), *tls);
        co_await stream.async_handshake(ssl::stream_base::server, use_awaitable);
        co_await Serve(stream);
      } else {
        co_await Serve(socket);
      }
    } catch (const std::exception&) {
      // Client went away, handshake failed, etc.: just drop the connection.
    }
  }

  template <typename Stream>
  awaitable<void> Serve(Stream& stream) {
    std::string buffer;
    for (;;) {
      size_t head_end;
      while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        if (!buffer.empty() && buffer[0] == '\x16') {
          // A TLS ClientHello sent to plain HTTP: answer like real servers do, then hang up.
          co_await asio::async_write(stream, asio::buffer(Response(400, "Bad Request", "")),
                                     use_awaitable);
          co_return;
        }
        if (buffer.size() > 64 * 1024) co_return;
        char chunk[4096];
        size_t n = co_await stream.async_read_some(asio::buffer(chunk), use_awaitable);
        buffer.append(chunk, n);
      }
      head_end += 4;
      std::string head = buffer.substr(0, head_end);
      buffer.erase(0, head_end);
      // "GET /path?query HTTP/1.1"
      size_t sp1 = head.find(' ');
      size_t sp2 = head.find(' ', sp1 + 1);
      std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
      std::string path = target.substr(0, target.find('?'));
      {
        std::lock_guard lock(mu);
        ++hits[path];
      }
      InFlight counted(this);
      co_await Respond(stream, path, head);
    }
  }

  template <typename Stream>
  awaitable<void> Respond(Stream& stream, const std::string& path, const std::string& head) {
    auto parts = SplitPath(path);
    std::string_view route = parts.empty() ? std::string_view() : parts[0];
    auto arg = [&](size_t i) { return i < parts.size() ? ToSize(parts[i]) : size_t{0}; };
    auto send = [&](std::string response) -> awaitable<void> {
      co_await asio::async_write(stream, asio::buffer(response), use_awaitable);
    };
    auto sleep = [](size_t ms) -> awaitable<void> {
      asio::steady_timer timer(co_await asio::this_coro::executor);
      timer.expires_after(std::chrono::milliseconds(ms));
      co_await timer.async_wait(use_awaitable);
    };

    if (route == "ok") {
      co_await send(Response(200, "OK", "ok\n", "Content-Type: text/plain; version=0.0.4\r\n"));
    } else if (route == "echo") {
      co_await send(Response(200, "OK", head, "Content-Type: text/plain\r\n"));
    } else if (route == "hang") {
      char sink[512];
      for (;;) co_await stream.async_read_some(asio::buffer(sink), use_awaitable);  // Until EOF.
    } else if (route == "hold") {
      co_await sleep(arg(1));
      co_await send(Response(200, "OK", "held"));
    } else if (route == "size") {
      co_await send(Response(200, "OK", std::string(arg(1), 'x')));
    } else if (route == "gzip") {
      co_await send(Response(200, "OK", Gzip(arg(1)), "Content-Encoding: gzip\r\n"));
    } else if (route == "trickle") {
      size_t n = arg(1);
      co_await send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(n) + "\r\n\r\n");
      for (size_t i = 0; i < n; ++i) {
        co_await sleep(arg(2));
        co_await send("x");
      }
    } else if (route == "status") {
      int code = static_cast<int>(arg(1));
      co_await send(Response(code, "Status", "status " + std::to_string(code)));
    } else if (route == "redirect") {
      std::string location =
          scheme + "://" + options.bind_address + ":" + std::to_string(port) + "/target";
      co_await send(Response(302, "Found", "moved", "Location: " + location + "\r\n"));
    } else {
      co_await send(Response(404, "Not Found", "not found"));
    }
  }
};

FaultServer::FaultServer(FaultServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  const FaultServerOptions& o = impl_->options;
  impl_->scheme = o.cert_file.empty() ? "http" : "https";
  if (!o.cert_file.empty()) {
    impl_->tls = std::make_unique<ssl::context>(ssl::context::tls_server);
    impl_->tls->use_certificate_chain_file(o.cert_file);
    impl_->tls->use_private_key_file(o.key_file, ssl::context::pem);
    if (!o.client_ca_file.empty()) {
      impl_->tls->load_verify_file(o.client_ca_file);
      impl_->tls->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    }
  }
  tcp::acceptor acceptor(impl_->io,
                         tcp::endpoint(asio::ip::make_address(o.bind_address), /*port=*/0));
  impl_->port = acceptor.local_endpoint().port();
  asio::co_spawn(impl_->io, impl_->Accept(std::move(acceptor)), asio::detached);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

FaultServer::~FaultServer() {
  impl_->io.stop();
  impl_->thread.join();
  // ~Impl destroys io, and with it every pending coroutine (closing all sockets).
}

uint16_t FaultServer::port() const { return impl_->port; }

std::string FaultServer::Url(std::string_view path) const {
  return impl_->scheme + "://" + impl_->options.bind_address + ":" + std::to_string(impl_->port) +
         std::string(path);
}

int FaultServer::Hits(std::string_view path) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->hits.find(path);
  return it == impl_->hits.end() ? 0 : it->second;
}

int FaultServer::MaxConcurrent() const { return impl_->max_in_flight.load(); }

int FaultServer::Connections() const { return impl_->connections.load(); }

uint16_t UnusedLoopbackPort() {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  uint16_t port = acceptor.local_endpoint().port();
  acceptor.close();
  return port;
}

}  // namespace modelmetrics::net::testing
