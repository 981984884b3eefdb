#include "fault_server.h"

#include <zlib.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <charconv>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "base/mutex.h"

namespace modelmetrics::sim {
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

FaultReply Reply(int status, std::string reason, std::string body) {
  FaultReply reply;
  reply.status = status;
  reply.reason = std::move(reason);
  reply.body = std::move(body);
  return reply;
}

// The routes of the header comment, for client tests.
FaultReply TestRoute(const FaultRequest& request) {
  auto parts = SplitPath(request.path);
  std::string_view route = parts.empty() ? std::string_view() : parts[0];
  auto arg = [&](size_t i) { return i < parts.size() ? ToSize(parts[i]) : size_t{0}; };
  if (route == "ok") {
    FaultReply reply = Reply(200, "OK", "ok\n");
    reply.headers.emplace_back("Content-Type", "text/plain; version=0.0.4");
    return reply;
  }
  if (route == "echo") {
    FaultReply reply = Reply(200, "OK", request.head);
    reply.headers.emplace_back("Content-Type", "text/plain");
    return reply;
  }
  if (route == "hang") {
    FaultReply reply;
    reply.action = FaultReply::Action::kHang;
    return reply;
  }
  if (route == "hold") {
    FaultReply reply = Reply(200, "OK", "held");
    reply.delay = std::chrono::milliseconds(arg(1));
    return reply;
  }
  if (route == "size") return Reply(200, "OK", std::string(arg(1), 'x'));
  if (route == "gzip") {
    FaultReply reply = Reply(200, "OK", GzipOfRepeated("x", arg(1)));
    reply.headers.emplace_back("Content-Encoding", "gzip");
    return reply;
  }
  if (route == "trickle") {
    FaultReply reply = Reply(200, "OK", std::string(arg(1), 'x'));
    reply.action = FaultReply::Action::kTrickle;
    reply.trickle_chunks = arg(1);
    reply.trickle_interval = std::chrono::milliseconds(arg(2));
    return reply;
  }
  if (route == "status") {
    int code = static_cast<int>(arg(1));
    return Reply(code, "Status", "status " + std::to_string(code));
  }
  if (route == "redirect") {
    FaultReply reply = Reply(302, "Found", "moved");
    reply.headers.emplace_back("Location", request.base_url + "/target");
    return reply;
  }
  return Reply(404, "Not Found", "not found");
}

std::string Head(const FaultReply& reply, size_t content_length) {
  std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " + reply.reason + "\r\n";
  for (const auto& [name, value] : reply.headers) head += name + ": " + value + "\r\n";
  head += "Content-Length: " + std::to_string(content_length) + "\r\n\r\n";
  return head;
}

}  // namespace

std::string GzipOfRepeated(std::string_view fill, size_t decoded_size) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::string input;
  if (!fill.empty()) {
    while (input.size() < 64 * 1024) input += fill;
  }
  std::string out;
  char buf[64 * 1024];
  size_t left = fill.empty() ? 0 : decoded_size;
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

struct FaultServer::Impl {
  FaultServerOptions options;
  uint16_t port = 0;

  mutable base::Mutex mu;
  std::map<std::string, int, std::less<>> hits GUARDED_BY(mu);
  std::shared_ptr<InFlightStats> stats;
  std::atomic<int> connections{0};

  std::unique_ptr<ssl::context> tls;
  // Declared after the state above so it is destroyed first: destroying it destroys the pending
  // coroutine frames (acceptor, sockets), which refer to that state.
  asio::io_context io;
  std::thread thread;

  std::string BaseUrl(bool over_tls) const {
    return std::string(over_tls ? "https" : "http") + "://" + options.bind_address + ":" +
           std::to_string(port);
  }

  // Counts one request as in flight for its lifetime.
  class InFlight {
   public:
    explicit InFlight(InFlightStats* stats) : stats_(stats) {
      int now = ++stats_->current;
      int seen = stats_->peak.load();
      while (now > seen && !stats_->peak.compare_exchange_weak(seen, now)) {
      }
    }
    ~InFlight() { Release(); }
    // Ends the count early: a complete answer is about to be written, so the client may see it
    // and start its next request before this coroutine resumes (a Go handler's deferred
    // decrement runs at the same point).
    void Release() {
      if (stats_ != nullptr) --stats_->current;
      stats_ = nullptr;
    }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

   private:
    InFlightStats* stats_;
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
      bool over_tls = tls != nullptr;
      if (tls && options.tls_for_connection) over_tls = options.tls_for_connection();
      if (over_tls) {
        ssl::stream<tcp::socket> stream(std::move(socket), *tls);
        co_await stream.async_handshake(ssl::stream_base::server, use_awaitable);
        co_await Serve(stream, true);
      } else {
        co_await Serve(socket, false);
      }
    } catch (const std::exception&) {
      // Client went away, handshake failed, etc.: just drop the connection.
    }
  }

  template <typename Stream>
  awaitable<void> Serve(Stream& stream, bool over_tls) {
    std::string buffer;
    for (;;) {
      size_t head_end;
      while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        if (!over_tls && !buffer.empty() && buffer[0] == '\x16') {
          // A TLS ClientHello sent to plain HTTP: answer like real servers do, then hang up.
          co_await asio::async_write(stream, asio::buffer(Head(Reply(400, "Bad Request", ""), 0)),
                                     use_awaitable);
          co_return;
        }
        if (buffer.size() > 64 * 1024) co_return;
        char chunk[4096];
        size_t n = co_await stream.async_read_some(asio::buffer(chunk), use_awaitable);
        buffer.append(chunk, n);
      }
      head_end += 4;
      FaultRequest request;
      request.head = buffer.substr(0, head_end);
      buffer.erase(0, head_end);
      // "GET /path?query HTTP/1.1"
      size_t sp1 = request.head.find(' ');
      size_t sp2 = request.head.find(' ', sp1 + 1);
      request.method = request.head.substr(0, sp1);
      request.target = request.head.substr(sp1 + 1, sp2 - sp1 - 1);
      request.path = request.target.substr(0, request.target.find('?'));
      request.base_url = BaseUrl(over_tls);
      {
        base::MutexLock lock(&mu);
        ++hits[request.path];
      }
      ++stats->requests;
      InFlight counted(stats.get());
      FaultReply reply = options.planner ? options.planner(request) : TestRoute(request);
      co_await Respond(stream, reply, counted);
    }
  }

  template <typename Stream>
  awaitable<void> Respond(Stream& stream, const FaultReply& reply, InFlight& counted) {
    auto sleep = [](std::chrono::milliseconds ms) -> awaitable<void> {
      asio::steady_timer timer(co_await asio::this_coro::executor);
      timer.expires_after(ms);
      co_await timer.async_wait(use_awaitable);
    };
    const std::string_view tail = reply.body_tail ? std::string_view(*reply.body_tail) : "";
    const size_t length = reply.body.size() + tail.size();
    switch (reply.action) {
      case FaultReply::Action::kHang: {
        char sink[512];
        for (;;) co_await stream.async_read_some(asio::buffer(sink), use_awaitable);  // To EOF.
      }
      case FaultReply::Action::kRespond: {
        if (reply.delay.count() > 0) co_await sleep(reply.delay);
        std::string head = Head(reply, length);
        counted.Release();
        std::array<asio::const_buffer, 3> buffers{asio::buffer(head), asio::buffer(reply.body),
                                                  asio::buffer(tail.data(), tail.size())};
        co_await asio::async_write(stream, buffers, use_awaitable);
        break;
      }
      case FaultReply::Action::kTrickle: {
        co_await asio::async_write(stream, asio::buffer(Head(reply, length)), use_awaitable);
        std::string body = reply.body;
        body.append(tail);
        const size_t chunks = std::max<size_t>(1, std::min(reply.trickle_chunks, body.size()));
        size_t sent = 0;
        for (size_t i = 0; i < chunks && !body.empty(); ++i) {
          size_t end = i + 1 == chunks ? body.size() : body.size() * (i + 1) / chunks;
          co_await sleep(reply.trickle_interval);
          co_await asio::async_write(stream, asio::buffer(body.data() + sent, end - sent),
                                     use_awaitable);
          sent = end;
        }
        break;
      }
    }
  }
};

FaultServer::FaultServer(FaultServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  const FaultServerOptions& o = impl_->options;
  impl_->stats = o.stats ? o.stats : std::make_shared<InFlightStats>();
  if (!o.cert_file.empty() || !o.cert_pem.empty()) {
    impl_->tls = std::make_unique<ssl::context>(ssl::context::tls_server);
    if (!o.cert_pem.empty()) {
      impl_->tls->use_certificate_chain(asio::buffer(o.cert_pem));
      impl_->tls->use_private_key(asio::buffer(o.key_pem), ssl::context::pem);
    } else {
      impl_->tls->use_certificate_chain_file(o.cert_file);
      impl_->tls->use_private_key_file(o.key_file, ssl::context::pem);
    }
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
  return impl_->BaseUrl(impl_->tls != nullptr) + std::string(path);
}

int FaultServer::Hits(std::string_view path) const {
  base::MutexLock lock(&impl_->mu);
  auto it = impl_->hits.find(path);
  return it == impl_->hits.end() ? 0 : it->second;
}

int FaultServer::MaxConcurrent() const { return impl_->stats->peak.load(); }

int FaultServer::Connections() const { return impl_->connections.load(); }

uint16_t UnusedLoopbackPort() {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  uint16_t port = acceptor.local_endpoint().port();
  acceptor.close();
  return port;
}

}  // namespace modelmetrics::sim
