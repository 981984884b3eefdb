// Tests of the Beast/Asio HTTP server, talking to it over loopback with raw Asio/Beast clients.
// Every client operation is bounded by a timeout, so a broken server fails a test instead of
// hanging it.
#include "net/http_server.h"
#include "net/certificate.h"
#include "status_matchers.h"
#include "test_certificates.h"
#include "test_deadlines.h"
#include "test_paths.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

namespace modelmetrics::net {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using Response = http::response<http::string_body>;
using namespace std::chrono_literals;
using modelmetrics::testing::kEventually;
using modelmetrics::testing::LetTimePass;
using modelmetrics::testing::WaitUntil;

// A client operation that will complete: as long as any wait for an event (test_deadlines.h).
constexpr auto kIoTimeout = kEventually;

std::string TlsFile(const char* name) { return test_paths::Tls(name); }

int64_t MillisSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

::testing::AssertionResult Started(HttpServer& server) {
  std::string error;
  if (::modelmetrics::testing::Ok(server.Start(), &error)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "Start: " << error;
}

// Runs one asynchronous operation, started by `initiate(handler)`, to completion on `ioc`.
template <class Initiate>
beast::error_code Await(asio::io_context& ioc, Initiate&& initiate) {
  beast::error_code result = asio::error::would_block;
  initiate([&result](const beast::error_code& ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

// A blocking-style client over its own io_context; every operation times out after `timeout`.
template <bool kTls>
class TestClient {
 public:
  using Stream = std::conditional_t<kTls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;

  TestClient() requires(!kTls) : stream_(ioc_) {}
  explicit TestClient(ssl::context& ctx) requires(kTls) : stream_(ioc_, ctx) {
    stream_.set_verify_callback(ssl::host_name_verification("127.0.0.1"));
  }

  // Connects to 127.0.0.1:port, from `from` (another loopback address) when given.
  beast::error_code Connect(uint16_t port, const char* from = nullptr) {
    lowest().expires_after(kIoTimeout);
    tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
    if (from != nullptr) {
      beast::error_code bind_error;
      lowest().socket().open(tcp::v4(), bind_error);
      if (!bind_error) lowest().socket().bind({asio::ip::make_address(from), 0}, bind_error);
      if (bind_error) return bind_error;
    }
    beast::error_code ec =
        Await(ioc_, [&](auto handler) { lowest().async_connect(endpoint, std::move(handler)); });
    if (ec) return ec;
    if constexpr (kTls) {
      lowest().expires_after(kIoTimeout);
      ec = Await(ioc_, [&](auto handler) {
        stream_.async_handshake(ssl::stream_base::client, std::move(handler));
      });
    }
    return ec;
  }

  beast::error_code Write(std::string_view data) {
    lowest().expires_after(kIoTimeout);
    return Await(ioc_, [&](auto handler) {
      asio::async_write(stream_, asio::buffer(data.data(), data.size()), std::move(handler));
    });
  }

  beast::error_code Read(Response* response, std::chrono::milliseconds timeout = kIoTimeout) {
    *response = {};
    lowest().expires_after(timeout);
    return Await(ioc_,
                 [&](auto handler) { http::async_read(stream_, buffer_, *response, handler); });
  }

  // Reads the response to a HEAD request: headers only, whatever Content-Length says.
  beast::error_code ReadHead(Response* response) {
    http::response_parser<http::string_body> parser;
    parser.skip(true);
    lowest().expires_after(kIoTimeout);
    beast::error_code ec =
        Await(ioc_, [&](auto handler) { http::async_read(stream_, buffer_, parser, handler); });
    *response = parser.release();
    return ec;
  }

  // Writes `request` and reads the response; status 0 when either fails.
  Response RoundTrip(std::string_view request) {
    Response response;
    if (Write(request) || Read(&response)) response.result(0);
    return response;
  }
  Response Get(std::string_view target) {
    return RoundTrip("GET " + std::string(target) + " HTTP/1.1\r\nHost: test\r\n\r\n");
  }

  // Reads (and drops) until the server closes; true if it did within `timeout`.
  bool WaitClosed(std::chrono::milliseconds timeout) {
    lowest().expires_after(timeout);
    for (;;) {
      beast::error_code ec = Await(ioc_, [&](auto handler) {
        stream_.async_read_some(buffer_.prepare(4096), std::move(handler));
      });
      if (ec == beast::error::timeout) return false;
      if (ec) return true;  // eof, reset, TLS truncation
      buffer_.consume(buffer_.size());
    }
  }

  Stream& stream() { return stream_; }

 private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  asio::io_context ioc_;
  Stream stream_;
  beast::flat_buffer buffer_;
};
using Client = TestClient<false>;
using TlsClient = TestClient<true>;

HttpResponse Ok(std::string body = "ok") { return HttpResponse::Text(200, std::move(body)); }

// ---------------------------------------------------------------------------------------------
// Routing and HTTP basics

TEST(HttpServerTest, RoutesGetTo404And405) {
  HttpServer server({});
  server.Route("GET", "/metrics", [](const HttpRequest& req) {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.headers.emplace_back("X-Accept-Seen", std::string(req.headers.Get("accept")));
    r.body = "up 1\n";
    return r;
  });
  ASSERT_TRUE(Started(server));
  ASSERT_NE(server.port(), 0);

  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  Response r = client.RoundTrip(
      "GET /metrics HTTP/1.1\r\nHost: t\r\nAccept: application/openmetrics-text\r\n\r\n");
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "up 1\n");
  EXPECT_EQ(r[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r[http::field::content_length], "5");
  EXPECT_EQ(r["X-Accept-Seen"], "application/openmetrics-text");
  EXPECT_TRUE(r.keep_alive());

  r = client.Get("/nope");
  EXPECT_EQ(r.result_int(), 404);
  EXPECT_FALSE(r.body().empty());

  r = client.RoundTrip("POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_EQ(r.result_int(), 405);
  EXPECT_EQ(r[http::field::allow], "GET");

  r = client.Get("/metrics%2Fx?%zz");  // odd escapes are not decoded, and do not hurt
  EXPECT_EQ(r.result_int(), 404);
}

TEST(HttpServerTest, SplitsQueryAndMatchesPrefixes) {
  HttpServer server({});
  auto echo = [](std::string tag) {
    return [tag](const HttpRequest& req) {
      return Ok(tag + " " + req.method + " " + req.target + " " + req.path + " " + req.query);
    };
  };
  server.Route("GET", "/apis", echo("exact"));
  server.RoutePrefix("GET", "/apis/", echo("apis"));
  server.RoutePrefix("", "/apis/metrics.k8s.io/", echo("metrics"));
  server.RoutePrefix("GET", "/", echo("root"));
  ASSERT_TRUE(Started(server));

  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  EXPECT_EQ(client.Get("/apis?x=1&y=%20").body(), "exact GET /apis?x=1&y=%20 /apis x=1&y=%20");
  EXPECT_EQ(client.Get("/apis/").body(), "apis GET /apis/ /apis/ ");
  EXPECT_EQ(client.Get("/apis/metrics.k8s.io/v1beta1/pods?a=b").body(),
            "metrics GET /apis/metrics.k8s.io/v1beta1/pods?a=b /apis/metrics.k8s.io/v1beta1/pods "
            "a=b");
  EXPECT_EQ(client.Get("/other?").body(), "root GET /other? /other ");
  Response r = client.RoundTrip("DELETE /apis/metrics.k8s.io/x HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.body(), "metrics DELETE /apis/metrics.k8s.io/x /apis/metrics.k8s.io/x ");
  r = client.RoundTrip("DELETE /apis/x HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.result_int(), 405);
}

TEST(HttpServerTest, ExposesHeadersCaseInsensitivelyAndMultiValued) {
  HttpServer server({});
  server.Route("GET", "/whoami", [](const HttpRequest& req) {
    std::string out = std::string(req.headers.Get("x-remote-user")) + "|" +
                      std::string(req.headers.Get("AUTHORIZATION")) + "|";
    for (std::string_view g : req.headers.GetAll("X-Remote-Group")) out += std::string(g) + ",";
    out += req.headers.Has("x-missing") ? "|has" : "|none";
    out += "|" + req.remote_address + "|" + (req.peer.tls ? "tls" : "plain");
    return Ok(out);
  });
  ASSERT_TRUE(Started(server));
  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  Response r = client.RoundTrip(
      "GET /whoami HTTP/1.1\r\nHost: t\r\nX-Remote-User: alice\r\nx-remote-group: a\r\n"
      "Authorization: Bearer tok\r\nX-REMOTE-GROUP: b, c\r\n\r\n");
  EXPECT_EQ(r.body(), "alice|Bearer tok|a,b, c,|none|127.0.0.1|plain");
}

TEST(HttpServerTest, KeepAliveServesTwoRequestsOnOneConnectionAndPipelines) {
  HttpServer server({});
  std::atomic<int> calls{0};
  server.Route("GET", "/n", [&](const HttpRequest& req) {
    return Ok(std::to_string(++calls) + " " + std::to_string(req.remote_port));
  });
  ASSERT_TRUE(Started(server));
  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  Response a = client.Get("/n");
  Response b = client.Get("/n");
  ASSERT_EQ(a.result_int(), 200);
  ASSERT_EQ(b.result_int(), 200);
  // Same remote port: the same connection.
  EXPECT_EQ(a.body().substr(2), b.body().substr(2));
  EXPECT_EQ(a.body().substr(0, 1), "1");
  EXPECT_EQ(b.body().substr(0, 1), "2");

  // Two requests in one write are answered in order.
  ASSERT_FALSE(
      client.Write("GET /n HTTP/1.1\r\nHost: t\r\n\r\nGET /n HTTP/1.1\r\nHost: t\r\n\r\n"));
  Response c, d;
  ASSERT_FALSE(client.Read(&c));
  ASSERT_FALSE(client.Read(&d));
  EXPECT_EQ(c.body().substr(0, 1), "3");
  EXPECT_EQ(d.body().substr(0, 1), "4");
}

// Pipelined requests to a handler that answers later, from another thread (as the API server's
// do): each is answered, in order, on the same connection.
TEST(HttpServerTest, PipelinedRequestsToAnAsyncHandlerAreAnsweredInOrder) {
  HttpServer server({});
  std::atomic<int> calls{0};
  std::mutex mu;
  std::vector<std::thread> later;
  server.RouteAsync("GET", "/n", [&](const HttpRequest&, Responder respond) {
    const int n = ++calls;
    std::lock_guard lock(mu);
    later.emplace_back([n, respond = std::move(respond)]() mutable {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      respond(Ok(std::to_string(n)));
    });
  });
  ASSERT_TRUE(Started(server));
  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  ASSERT_FALSE(
      client.Write("GET /n HTTP/1.1\r\nHost: t\r\n\r\nGET /n HTTP/1.1\r\nHost: t\r\n\r\n"
                   "GET /n HTTP/1.1\r\nHost: t\r\n\r\n"));
  Response a, b, c;
  ASSERT_FALSE(client.Read(&a));
  ASSERT_FALSE(client.Read(&b));
  ASSERT_FALSE(client.Read(&c));
  EXPECT_EQ(a.body(), "1");
  EXPECT_EQ(b.body(), "2");
  EXPECT_EQ(c.body(), "3");
  server.Stop();
  std::lock_guard lock(mu);
  for (std::thread& t : later) t.join();
}

TEST(HttpServerTest, HeadGetsHeadersWithoutBody) {
  HttpServer server({});
  server.RoutePrefix("", "/", [](const HttpRequest& req) { return Ok("body of " + req.method); });
  ASSERT_TRUE(Started(server));
  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  ASSERT_FALSE(client.Write("HEAD /x HTTP/1.1\r\nHost: t\r\n\r\n"));
  Response head;
  ASSERT_FALSE(client.ReadHead(&head));
  EXPECT_EQ(head.result_int(), 200);
  EXPECT_EQ(head[http::field::content_length], "12");
  EXPECT_EQ(head.body(), "");
  EXPECT_EQ(client.Get("/x").body(), "body of GET");  // the connection is still in step
}

TEST(HttpServerTest, ClosesWhenTheClientAsks) {
  HttpServer server({});
  server.Route("GET", "/", [](const HttpRequest&) { return Ok(); });
  ASSERT_TRUE(Started(server));
  {
    Client client;
    ASSERT_FALSE(client.Connect(server.port()));
    Response r = client.RoundTrip("GET / HTTP/1.0\r\n\r\n");
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_EQ(r.version(), 10u);
    EXPECT_FALSE(r.keep_alive());
    EXPECT_TRUE(client.WaitClosed(kEventually));
  }
  {
    Client client;
    ASSERT_FALSE(client.Connect(server.port()));
    Response r = client.RoundTrip("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_EQ(r[http::field::connection], "close");
    EXPECT_TRUE(client.WaitClosed(kEventually));
  }
}

TEST(HttpServerTest, AnswersExpectContinue) {
  HttpServer server({});
  server.Route("POST", "/echo", [](const HttpRequest& req) { return Ok(req.body); });
  ASSERT_TRUE(Started(server));
  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  ASSERT_FALSE(client.Write(
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  Response interim;
  ASSERT_FALSE(client.Read(&interim));
  EXPECT_EQ(interim.result_int(), 100);
  ASSERT_FALSE(client.Write("hello"));
  Response r;
  ASSERT_FALSE(client.Read(&r));
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "hello");
}

TEST(HttpServerTest, MalformedRequestGets400AndClose) {
  HttpServer server({});
  std::atomic<int> calls{0};
  server.RoutePrefix("", "/", [&](const HttpRequest&) {
    ++calls;
    return Ok();
  });
  ASSERT_TRUE(Started(server));
  for (const char* bad : {"GET / HTTP/1.1\r\nBad Header\r\n\r\n", "GET / HTTP/9\r\n\r\n",
                          "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", "\x01\x02\r\n\r\n"}) {
    Client client;
    ASSERT_FALSE(client.Connect(server.port()));
    Response r = client.RoundTrip(bad);
    EXPECT_EQ(r.result_int(), 400) << bad;
    EXPECT_FALSE(r.keep_alive());
    EXPECT_TRUE(client.WaitClosed(kEventually));
  }
  EXPECT_EQ(calls.load(), 0);
}

// ---------------------------------------------------------------------------------------------
// Limits and timeouts

TEST(HttpServerTest, OversizedHeaderIsRefused) {
  ServerOptions options;
  options.max_header_bytes = 1024;
  HttpServer server(options);
  std::atomic<int> calls{0};
  server.Route("GET", "/", [&](const HttpRequest&) {
    ++calls;
    return Ok();
  });
  ASSERT_TRUE(Started(server));
  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  Response r = client.RoundTrip("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(4096, 'a') +
                                "\r\n\r\n");
  // 431 when the client could read it before the close, a failed read otherwise.
  if (r.result_int() != 0) {
    EXPECT_EQ(r.result_int(), 431);
  }
  EXPECT_TRUE(client.WaitClosed(kEventually));
  EXPECT_EQ(calls.load(), 0);

  Client ok;  // a header just under the limit passes
  ASSERT_FALSE(ok.Connect(server.port()));
  EXPECT_EQ(
      ok.RoundTrip("GET / HTTP/1.1\r\nX-Big: " + std::string(900, 'a') + "\r\n\r\n").result_int(),
      200);
}

TEST(HttpServerTest, OversizedBodyGets413) {
  ServerOptions options;
  options.max_body_bytes = 1000;
  HttpServer server(options);
  std::atomic<int> calls{0};
  server.Route("POST", "/", [&](const HttpRequest& req) {
    ++calls;
    return Ok(std::to_string(req.body.size()));
  });
  ASSERT_TRUE(Started(server));
  {  // Declared too long: refused before the body is read.
    Client client;
    ASSERT_FALSE(client.Connect(server.port()));
    Response r = client.RoundTrip("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n" +
                                  std::string(5000, 'b'));
    EXPECT_EQ(r.result_int(), 413);
    EXPECT_FALSE(r.keep_alive());
    EXPECT_TRUE(client.WaitClosed(kEventually));
  }
  {  // Chunked past the limit.
    Client client;
    ASSERT_FALSE(client.Connect(server.port()));
    std::string chunk = "3e8\r\n" + std::string(1000, 'c') + "\r\n";
    Response r =
        client.RoundTrip("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" +
                         chunk + chunk + "0\r\n\r\n");
    EXPECT_EQ(r.result_int(), 413);
  }
  {  // At the limit: fine.
    Client client;
    ASSERT_FALSE(client.Connect(server.port()));
    Response r = client.RoundTrip("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n" +
                                  std::string(1000, 'b'));
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_EQ(r.body(), "1000");
  }
  EXPECT_EQ(calls.load(), 1);
}

TEST(HttpServerTest, SilentClientIsCutOffAtReadTimeoutWhileOthersAreServed) {
  ServerOptions options;
  options.read_timeout = 300ms;
  HttpServer server(options);
  std::atomic<int> slow_calls{0};
  server.Route("GET", "/slow", [&](const HttpRequest&) {
    ++slow_calls;
    return Ok();
  });
  server.Route("GET", "/ok", [](const HttpRequest&) { return Ok(); });
  ASSERT_TRUE(Started(server));

  Client slow;
  auto t0 = Clock::now();
  ASSERT_FALSE(slow.Connect(server.port()));
  ASSERT_FALSE(slow.Write("GET /slow HTT"));

  Client other;
  ASSERT_FALSE(other.Connect(server.port()));
  EXPECT_EQ(other.Get("/ok").result_int(), 200);
  int64_t other_done = MillisSince(t0);

  EXPECT_TRUE(slow.WaitClosed(kEventually));
  int64_t cut = MillisSince(t0);
  EXPECT_GE(cut, 280);
  EXPECT_LT(other_done, cut);
  EXPECT_EQ(slow_calls.load(), 0);
}

TEST(HttpServerTest, TricklingClientIsCutOffAtReadTimeout) {
  ServerOptions options;
  options.read_timeout = 300ms;
  HttpServer server(options);
  std::atomic<int> calls{0};
  server.Route("GET", "/slow", [&](const HttpRequest&) {
    ++calls;
    return Ok();
  });
  ASSERT_TRUE(Started(server));

  Client client;
  auto t0 = Clock::now();
  ASSERT_FALSE(client.Connect(server.port()));
  ASSERT_FALSE(client.Write("GET /slow HTTP/1.1\r\nX-Pad: "));
  // One byte every 50 ms, each well inside read_timeout: a deadline reset by every byte would
  // never cut it, so being cut at all within kEventually is the check; no upper bound on when.
  bool cut = false;
  while (!cut && Clock::now() - t0 < kEventually) {
    LetTimePass(50ms);
    cut = static_cast<bool>(client.Write("a"));
  }
  int64_t elapsed = MillisSince(t0);
  EXPECT_TRUE(cut);
  EXPECT_GE(elapsed, 280);
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpServerTest, IdleKeepAliveConnectionIsClosedAfterIdleTimeout) {
  ServerOptions options;
  options.idle_timeout = 1s;
  options.read_timeout = 30s;  // so a close well before it is the idle timeout's
  HttpServer server(options);
  server.Route("GET", "/", [](const HttpRequest&) { return Ok(); });
  ASSERT_TRUE(Started(server));

  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  ASSERT_EQ(client.Get("/").result_int(), 200);
  // Idle, but under idle_timeout: still usable. 100 ms against 1 s leaves 900 ms for this
  // thread to be descheduled on a loaded machine (tens of ms at worst).
  LetTimePass(100ms);
  ASSERT_EQ(client.Get("/").result_int(), 200);
  auto t0 = Clock::now();
  EXPECT_TRUE(client.WaitClosed(kEventually));
  EXPECT_GE(MillisSince(t0), 900);
}

// The limit is exactly what the contract says: request line plus headers, final CRLF included.
TEST(HttpServerTest, HeaderLimitIsExactlyMaxHeaderBytes) {
  ServerOptions options;  // max_header_bytes 16 KiB
  HttpServer server(options);
  server.Route("GET", "/", [](const HttpRequest&) { return Ok(); });
  ASSERT_TRUE(Started(server));
  const auto request_of = [](size_t total) {
    const std::string head = "GET / HTTP/1.1\r\nHost: t\r\nX-Pad: ";
    const std::string tail = "\r\n\r\n";
    return head + std::string(total - head.size() - tail.size(), 'a') + tail;
  };
  {
    Client client;
    ASSERT_FALSE(client.Connect(server.port()));
    const std::string request = request_of(options.max_header_bytes);
    ASSERT_EQ(request.size(), options.max_header_bytes);
    EXPECT_EQ(client.RoundTrip(request).result_int(), 200);
  }
  {
    Client client;
    ASSERT_FALSE(client.Connect(server.port()));
    const Response r = client.RoundTrip(request_of(options.max_header_bytes + 1));
    if (r.result_int() != 0) {
      EXPECT_EQ(r.result_int(), 431);
    }
    EXPECT_TRUE(client.WaitClosed(kEventually));
  }
}

TEST(HttpServerTest, AtMaxConnectionsTheOldestIdleConnectionMakesRoom) {
  ServerOptions options;
  options.max_connections = 2;
  HttpServer server(options);
  server.Route("GET", "/", [](const HttpRequest&) { return Ok(); });
  std::mutex mu;
  std::vector<Responder> held;
  server.RouteAsync("GET", "/hold", [&](const HttpRequest&, Responder respond) {
    std::lock_guard lock(mu);
    held.push_back(std::move(respond));
  });
  ASSERT_TRUE(Started(server));

  Client a;
  Client b;
  ASSERT_FALSE(a.Connect(server.port()));
  ASSERT_EQ(a.Get("/").result_int(), 200);
  ASSERT_FALSE(b.Connect(server.port()));
  ASSERT_EQ(b.Get("/").result_int(), 200);
  // Both are kept alive and idle: a new client pushes out the oldest (a), not itself.
  Client c;
  ASSERT_FALSE(c.Connect(server.port()));
  EXPECT_EQ(c.Get("/").result_int(), 200);
  EXPECT_TRUE(a.WaitClosed(kEventually));
  EXPECT_EQ(b.Get("/").result_int(), 200);

  // With every connection inside a request, there is nothing to evict: a new one is closed.
  ASSERT_FALSE(b.Write("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_FALSE(c.Write("GET /hold HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard lock(mu);
    return held.size() == 2;
  }));
  Client d;
  ASSERT_FALSE(d.Connect(server.port()));
  EXPECT_TRUE(d.WaitClosed(kEventually));
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(held.size(), 2u);
    for (Responder& respond : held) respond(Ok());
  }
  Response r;
  EXPECT_FALSE(b.Read(&r));
  EXPECT_EQ(r.result_int(), 200);
}

// Eviction goes by last activity, not accept order: a client that keeps asking (kube-apiserver's
// pooled connection) outlives newer connections that never ask.
TEST(HttpServerTest, AtMaxConnectionsAnActiveKeptAliveClientOutlivesNewerSilentOnes) {
  ServerOptions options;
  options.max_connections = 4;
  HttpServer server(options);
  server.Route("GET", "/", [](const HttpRequest&) { return Ok(); });
  ASSERT_TRUE(Started(server));
  Client regular;  // the first accepted, so the oldest
  ASSERT_FALSE(regular.Connect(server.port()));
  ASSERT_EQ(regular.Get("/").result_int(), 200);
  std::vector<std::unique_ptr<Client>> silent;
  for (int i = 0; i < 3; ++i) {
    silent.push_back(std::make_unique<Client>());
    ASSERT_FALSE(silent.back()->Connect(server.port(), "127.0.0.2"));
  }
  ASSERT_TRUE(WaitUntil([&] { return server.open_connections() == 4; }));
  for (int round = 0; round < 6; ++round) {
    ASSERT_EQ(regular.Get("/").result_int(), 200) << "round " << round;  // active again
    // At the limit, a newcomer pushes out the silent connection longest without activity.
    auto newcomer = std::make_unique<Client>();
    ASSERT_FALSE(newcomer->Connect(server.port(), "127.0.0.2"));
    EXPECT_TRUE(silent.front()->WaitClosed(kEventually)) << "round " << round;
    silent.erase(silent.begin());
    silent.push_back(std::move(newcomer));
    ASSERT_TRUE(WaitUntil([&] { return server.open_connections() == 4; }));  // the evicted gone
  }
  EXPECT_EQ(regular.Get("/").result_int(), 200);
}

TEST(HttpServerTest, PerAddressLimitKeepsOneAddressFromTakingEverySlot) {
  ServerOptions options;
  options.max_connections_per_address = 2;
  HttpServer server(options);
  server.Route("GET", "/", [](const HttpRequest&) { return Ok(); });
  ASSERT_TRUE(Started(server));
  Client a, b, c;
  ASSERT_FALSE(a.Connect(server.port(), "127.0.0.2"));
  ASSERT_EQ(a.Get("/").result_int(), 200);
  ASSERT_FALSE(b.Connect(server.port(), "127.0.0.2"));
  ASSERT_EQ(b.Get("/").result_int(), 200);
  ASSERT_FALSE(c.Connect(server.port(), "127.0.0.2"));
  EXPECT_TRUE(c.WaitClosed(kEventually));  // a third from the same address
  Client other;
  ASSERT_FALSE(other.Connect(server.port()));
  EXPECT_EQ(other.Get("/").result_int(), 200);
  EXPECT_EQ(a.Get("/").result_int(), 200);  // the first two keep theirs
}

// Raw sockets from `from` that connect to `port` and send `first` (or nothing) and no more.
std::vector<int> HoldIdleConnections(uint16_t port, const char* from, int n,
                                     std::string_view first = {}) {
  std::vector<int> fds;
  sockaddr_in source{};
  source.sin_family = AF_INET;
  inet_pton(AF_INET, from, &source.sin_addr);
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &target.sin_addr);
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    if (bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof(source)) != 0 ||
        connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target)) != 0) {
      close(fd);
      break;
    }
    if (!first.empty() && send(fd, first.data(), first.size(), MSG_NOSIGNAL) < 0) {
      close(fd);
      break;
    }
    fds.push_back(fd);
  }
  return fds;
}

// Enough descriptors for both ends of ~1,100 connections in this one process.
bool RaiseFileLimit(rlim_t want) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur >= want) return true;
  limit.rlim_cur = std::min(want, limit.rlim_max);
  return setrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur >= want;
}

// Clients that open connections and send nothing (no request, no TLS ClientHello) cannot lock
// others out: at the limit each new connection pushes out the oldest idle one.
template <bool kTls>
void IdleFloodLeavesRoomForOthers(std::string_view first = {}) {
  ASSERT_TRUE(RaiseFileLimit(4096)) << "needs 4096 file descriptors";
  ServerOptions options;  // max_connections 1024
  options.threads = 2;
  if constexpr (kTls) {
    options.tls.emplace();
    options.tls->cert_file = TlsFile("server.pem");
    options.tls->key_file = TlsFile("server-key.pem");
  }
  HttpServer server(options);
  server.Route("GET", "/", [](const HttpRequest&) { return Ok(); });
  ASSERT_TRUE(Started(server));
  std::vector<int> idle = HoldIdleConnections(server.port(), "127.0.0.2", 1100, first);
  ASSERT_EQ(idle.size(), 1100u);
  // The server is full: from here every new client needs an eviction.
  ASSERT_TRUE(WaitUntil([&] { return server.open_connections() >= options.max_connections; }));
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_verify_mode(ssl::verify_peer);
  ctx.load_verify_file(TlsFile("ca.pem"));
  int served = 0;
  for (int i = 0; i < 100; ++i) {
    if constexpr (kTls) {
      TlsClient client(ctx);
      if (!client.Connect(server.port())) served += client.Get("/").result_int() == 200;
    } else {
      Client client;
      if (!client.Connect(server.port())) served += client.Get("/").result_int() == 200;
    }
  }
  for (int fd : idle) close(fd);
  EXPECT_GE(served, 99);
}

TEST(HttpServerTest, IdleConnectionFloodLeavesRoomForOthers) {
  IdleFloodLeavesRoomForOthers<false>();
}

// One byte of a request does not make a connection unevictable.
TEST(HttpServerTest, OneByteConnectionFloodLeavesRoomForOthers) {
  IdleFloodLeavesRoomForOthers<false>("G");
}

TEST(HttpServerTest, SilentTlsConnectionFloodLeavesRoomForOthers) {
  IdleFloodLeavesRoomForOthers<true>();
}

TEST(HttpServerTest, TlsHandshakeHasItsOwnDeadline) {
  ServerOptions options;
  options.handshake_timeout = 300ms;
  options.read_timeout = 30s;
  options.tls.emplace();
  options.tls->cert_file = TlsFile("server.pem");
  options.tls->key_file = TlsFile("server-key.pem");
  HttpServer server(options);
  ASSERT_TRUE(Started(server));
  Client silent;  // plain TCP: never sends a ClientHello
  ASSERT_FALSE(silent.Connect(server.port()));
  // Closed by the 300 ms handshake deadline, not the 30 s read timeout: anything under 10 s.
  EXPECT_TRUE(silent.WaitClosed(kEventually));
}

// Opens `n` connections at once, then sends one request on each; returns how many got their answer.
int ConcurrentClients(uint16_t port, int n) {
  struct Conn {
    explicit Conn(asio::io_context& ioc) : stream(ioc) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    std::string request;
    Response response;
    bool ok = false;
  };
  asio::io_context ioc;
  std::vector<std::unique_ptr<Conn>> conns;
  tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
  int connected = 0;
  for (int i = 0; i < n; ++i) {
    conns.push_back(std::make_unique<Conn>(ioc));
    Conn* c = conns.back().get();
    c->stream.expires_after(10s);
    c->stream.async_connect(endpoint, [&connected](const beast::error_code& ec) {
      if (!ec) ++connected;
    });
  }
  ioc.run();
  if (connected != n) return -connected;
  for (int i = 0; i < n; ++i) {
    Conn* c = conns[i].get();
    c->request = "GET /echo?" + std::to_string(i) + " HTTP/1.1\r\nHost: t\r\n\r\n";
    c->stream.expires_after(10s);
    asio::async_write(c->stream, asio::buffer(c->request),
                      [c, i](const beast::error_code& ec, size_t) {
                        if (ec) return;
                        http::async_read(c->stream, c->buffer, c->response,
                                         [c, i](const beast::error_code& e, size_t) {
                                           c->ok = !e && c->response.body() == std::to_string(i);
                                         });
                      });
  }
  ioc.restart();
  ioc.run();
  int ok = 0;
  for (auto& c : conns) ok += c->ok;
  return ok;
}

TEST(HttpServerTest, ServesManyConcurrentConnectionsWithOneThread) {
  ServerOptions options;
  options.threads = 1;
  HttpServer server(options);
  server.Route("GET", "/echo", [](const HttpRequest& req) { return Ok(req.query); });
  ASSERT_TRUE(Started(server));
  EXPECT_EQ(ConcurrentClients(server.port(), 200), 200);
}

TEST(HttpServerTest, ServesConcurrentConnectionsWithSeveralThreads) {
  ServerOptions options;
  options.threads = 3;
  HttpServer server(options);
  server.Route("GET", "/echo", [](const HttpRequest& req) { return Ok(req.query); });
  ASSERT_TRUE(Started(server));
  EXPECT_EQ(ConcurrentClients(server.port(), 60), 60);
}

// ---------------------------------------------------------------------------------------------
// Async handlers and failures

// Threads that answer async requests; joined by the destructor.
class Workers {
 public:
  ~Workers() { JoinAll(); }
  void Run(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back(std::move(fn));
  }
  void JoinAll() {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

// Holds a worker's answer until the test opens it, so "still pending" is a fact of the test, not
// a race against a sleep. Opens at the latest when it goes out of scope: declared after the
// Workers it holds, a failed assertion never leaves a worker waiting at their join.
class Gate {
 public:
  ~Gate() { Open(); }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(HttpServerTest, AsyncHandlerAnswersLaterWhileTheIoThreadServesOthers) {
  Workers workers;
  Gate gate;
  ServerOptions options;
  options.threads = 1;
  HttpServer server(options);
  server.RouteAsync("GET", "/async", [&](const HttpRequest& req, Responder respond) {
    // `req` stays valid while `respond` lives: read it from the worker once the gate opens.
    workers.Run([&req, respond, &gate] {
      gate.Wait();
      respond(Ok("late " + req.query + " " + std::string(req.headers.Get("x-id"))));
    });
  });
  server.Route("GET", "/fast", [](const HttpRequest&) { return Ok("fast"); });
  ASSERT_TRUE(Started(server));

  Client slow;
  ASSERT_FALSE(slow.Connect(server.port()));
  ASSERT_FALSE(slow.Write("GET /async?q=1 HTTP/1.1\r\nHost: t\r\nX-Id: 7\r\n\r\n"));
  Client fast;
  ASSERT_FALSE(fast.Connect(server.port()));
  EXPECT_EQ(fast.Get("/fast").body(), "fast");  // served while the slow one is pending
  gate.Open();

  Response r;
  ASSERT_FALSE(slow.Read(&r));
  EXPECT_EQ(r.result_int(), 200);
  EXPECT_EQ(r.body(), "late q=1 7");
  EXPECT_TRUE(r.keep_alive());
  EXPECT_EQ(slow.Get("/fast").body(), "fast");  // the connection goes on
  workers.JoinAll();
}

TEST(HttpServerTest, AsyncResponderCalledTwiceOrNeverIsHandled) {
  HttpServer server({});
  server.RouteAsync("GET", "/twice", [](const HttpRequest&, Responder respond) {
    respond(Ok("one"));
    respond(Ok("two"));  // ignored
  });
  server.RouteAsync("GET", "/never", [](const HttpRequest&, Responder) {});
  server.Route("GET", "/ok", [](const HttpRequest&) { return Ok(); });
  ASSERT_TRUE(Started(server));
  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  EXPECT_EQ(client.Get("/twice").body(), "one");
  EXPECT_EQ(client.Get("/ok").body(), "ok");
  EXPECT_EQ(client.Get("/never").result_int(), 500);
  EXPECT_EQ(client.Get("/ok").body(), "ok");
}

TEST(HttpServerTest, ThrowingHandlersGet500AndServingGoesOn) {
  HttpServer server({});
  server.Route("GET", "/throw",
               [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); });
  server.Route("GET", "/throw-int", [](const HttpRequest&) -> HttpResponse { throw 42; });
  server.RouteAsync("GET", "/throw-async",
                    [](const HttpRequest&, Responder) { throw std::runtime_error("boom"); });
  server.Route("GET", "/bad-status", [](const HttpRequest&) {
    HttpResponse r;
    r.status = 1000;
    r.headers.emplace_back("X-Evil", "a\r\nInjected: yes");
    r.headers.emplace_back("Bad Name", "x");
    return r;
  });
  server.Route("GET", "/ok", [](const HttpRequest&) { return Ok(); });
  ASSERT_TRUE(Started(server));
  Client client;
  ASSERT_FALSE(client.Connect(server.port()));
  EXPECT_EQ(client.Get("/throw").result_int(), 500);
  EXPECT_EQ(client.Get("/ok").result_int(), 200);
  EXPECT_EQ(client.Get("/throw-int").result_int(), 500);
  EXPECT_EQ(client.Get("/throw-async").result_int(), 500);
  Response r = client.Get("/bad-status");
  EXPECT_EQ(r.result_int(), 500);
  EXPECT_EQ(r.count("Injected"), 0u);
  EXPECT_EQ(r.count("X-Evil"), 0u);
  Client other;
  ASSERT_FALSE(other.Connect(server.port()));
  EXPECT_EQ(other.Get("/ok").result_int(), 200);
}

TEST(HttpServerResponderTest, DeliversOnceAnd500WhenDropped) {
  std::vector<HttpResponse> got;
  {
    Responder r([&got](HttpResponse response) { got.push_back(std::move(response)); });
    Responder copy = r;
    copy(Ok("first"));
    r(Ok("second"));
  }
  {
    Responder dropped([&got](HttpResponse response) { got.push_back(std::move(response)); });
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body, "first");
  EXPECT_EQ(got[1].status, 500);
}

TEST(HttpServerHeadersTest, LooksUpCaseInsensitively) {
  HttpHeaders h;
  h.Add("Content-Type", "a");
  h.Add("X-Remote-Group", "g1");
  h.Add("x-remote-group", "g2");
  EXPECT_EQ(h.Get("content-type"), "a");
  EXPECT_EQ(h.Get("X-REMOTE-GROUP"), "g1");
  EXPECT_EQ(h.GetAll("x-Remote-group"), (std::vector<std::string_view>{"g1", "g2"}));
  EXPECT_EQ(h.Get("nope"), "");
  EXPECT_FALSE(h.Has("x-remote-grou"));
  EXPECT_TRUE(h.GetAll("nope").empty());
  EXPECT_EQ(h.entries().size(), 3u);
}

// ---------------------------------------------------------------------------------------------
// Lifecycle

TEST(HttpServerTest, StartReportsBadAddressAndPortInUse) {
  HttpServer first({});
  ASSERT_TRUE(Started(first));
  std::string error;
  EXPECT_FALSE(::modelmetrics::testing::Ok(first.Start(), &error));  // once only
  EXPECT_FALSE(error.empty());

  ServerOptions taken;
  taken.port = first.port();
  HttpServer second(taken);
  error.clear();
  EXPECT_FALSE(::modelmetrics::testing::Ok(second.Start(), &error));
  EXPECT_NE(error.find(std::to_string(first.port())), std::string::npos) << error;
  EXPECT_EQ(second.port(), 0);
  second.Stop();  // fine on a server that never started

  ServerOptions bad;
  bad.address = "not-an-address";
  HttpServer third(bad);
  error.clear();
  EXPECT_FALSE(::modelmetrics::testing::Ok(third.Start(), &error));
  EXPECT_NE(error.find("not-an-address"), std::string::npos) << error;
  EXPECT_FALSE(third.Start().ok());
}

TEST(HttpServerTest, StopIsGracefulAndIdempotent) {
  Workers workers;
  Gate gate;
  std::mutex mu;
  std::condition_variable cv;
  bool received = false;
  ServerOptions options;
  options.shutdown_timeout = 30s;
  HttpServer server(options);
  server.RouteAsync("GET", "/slow", [&](const HttpRequest&, Responder respond) {
    {
      std::lock_guard<std::mutex> lock(mu);
      received = true;
    }
    cv.notify_all();
    workers.Run([respond, &gate] {
      gate.Wait();
      respond(Ok("finished"));
    });
  });
  server.Route("GET", "/", [](const HttpRequest&) { return Ok(); });
  ASSERT_TRUE(Started(server));
  uint16_t port = server.port();

  Client idle;
  ASSERT_FALSE(idle.Connect(port));
  ASSERT_EQ(idle.Get("/").result_int(), 200);
  Client busy;
  ASSERT_FALSE(busy.Connect(port));
  ASSERT_FALSE(busy.Write("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kEventually, [&] { return received; }));
  }

  std::thread stopper([&server] { server.Stop(); });
  EXPECT_TRUE(idle.WaitClosed(kEventually));  // idle connections go at once, the other waits
  gate.Open();
  auto t0 = Clock::now();
  Response r;
  ASSERT_FALSE(busy.Read(&r));  // ...the request in flight is answered
  EXPECT_EQ(r.body(), "finished");
  EXPECT_FALSE(r.keep_alive());
  stopper.join();
  // Stop ends with the last request, not at the 30 s shutdown deadline; under 10 s (kEventually)
  // tells them apart on any machine.
  EXPECT_LT(MillisSince(t0), 10000);
  server.Stop();
  server.Stop();

  Client late;
  EXPECT_TRUE(late.Connect(port));  // nobody listens any more
}

TEST(HttpServerTest, StopClosesRequestsStillPendingAtTheDeadline) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Responder> kept;
  ServerOptions options;
  options.shutdown_timeout = 200ms;
  auto server = std::make_unique<HttpServer>(options);
  server->RouteAsync("GET", "/stuck", [&](const HttpRequest&, Responder respond) {
    {
      std::lock_guard<std::mutex> lock(mu);
      kept.emplace(std::move(respond));
    }
    cv.notify_all();
  });
  ASSERT_TRUE(Started(*server));
  Client client;
  ASSERT_FALSE(client.Connect(server->port()));
  ASSERT_FALSE(client.Write("GET /stuck HTTP/1.1\r\nHost: t\r\n\r\n"));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kEventually, [&] { return kept.has_value(); }));
  }
  auto t0 = Clock::now();
  server->Stop();  // the handler never answers: without the deadline this would not return
  EXPECT_GE(MillisSince(t0), 150);
  EXPECT_TRUE(client.WaitClosed(kEventually));
  (*kept)(Ok("too late"));  // ignored, no crash
  server.reset();
  kept.reset();
}

TEST(HttpServerTest, DestructorWithoutStopIsFine) {
  Workers workers;
  Gate gate;  // the worker answers after the server is gone
  std::atomic<bool> received{false};
  Client client;
  Client pending;
  {
    ServerOptions options;
    options.shutdown_timeout = 100ms;
    options.threads = 2;
    HttpServer server(options);
    server.Route("GET", "/", [](const HttpRequest&) { return Ok(); });
    server.RouteAsync("GET", "/later", [&](const HttpRequest&, Responder respond) {
      received = true;
      workers.Run([respond, &gate] {
        gate.Wait();
        respond(Ok("after the server is gone"));
      });
    });
    ASSERT_TRUE(Started(server));
    ASSERT_FALSE(client.Connect(server.port()));
    ASSERT_EQ(client.Get("/").result_int(), 200);
    ASSERT_FALSE(pending.Connect(server.port()));
    ASSERT_FALSE(pending.Write("GET /later HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(WaitUntil([&] { return received.load(); }));
  }
  gate.Open();
  EXPECT_TRUE(client.WaitClosed(kEventually));
  EXPECT_TRUE(pending.WaitClosed(kEventually));
  workers.JoinAll();  // the responder runs after the server is destroyed
}

// ---------------------------------------------------------------------------------------------
// TLS

ServerOptions TlsServerOptions() {
  ServerOptions options;
  options.tls.emplace();
  options.tls->cert_file = TlsFile("server.pem");
  options.tls->key_file = TlsFile("server-key.pem");
  return options;
}

ServerOptions MutualTlsOptions(bool require) {
  ServerOptions options = TlsServerOptions();
  options.tls->client_ca_file = TlsFile("ca.pem");
  options.tls->requestheader_ca_file = TlsFile("requestheader-ca.pem");
  options.tls->require_client_cert = require;
  return options;
}

std::unique_ptr<ssl::context> ClientContext(const char* trust, const char* cert = nullptr,
                                            const char* key = nullptr) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->load_verify_file(TlsFile(trust));
  ctx->set_verify_mode(ssl::verify_peer);
  if (cert != nullptr) {
    ctx->use_certificate_chain_file(TlsFile(cert));
    ctx->use_private_key_file(TlsFile(key), ssl::context::pem);
  }
  return ctx;
}

// Records the TlsPeer of the requests it serves.
class PeerRecorder {
 public:
  HttpServer::Handler Handler() {
    return [this](const HttpRequest& req) {
      std::lock_guard<std::mutex> lock(mu_);
      peers_.push_back(req.peer);
      return Ok("peer");
    };
  }
  std::vector<TlsPeer> peers() {
    std::lock_guard<std::mutex> lock(mu_);
    return peers_;
  }

 private:
  std::mutex mu_;
  std::vector<TlsPeer> peers_;
};

// Connects and sends GET /peer; true when a 200 came back.
bool TlsGet(uint16_t port, ssl::context& ctx) {
  TlsClient client(ctx);
  if (client.Connect(port)) return false;
  return client.Get("/peer").result_int() == 200;
}

// Pipelining over TLS: requests written in one go, some in one TLS record and one in a later
// record, all answered in order.
TEST(HttpServerTlsTest, PipelinedRequestsOverTlsAreAnsweredInOrder) {
  HttpServer server(TlsServerOptions());
  std::atomic<int> calls{0};
  server.Route("GET", "/n", [&](const HttpRequest&) { return Ok(std::to_string(++calls)); });
  ASSERT_TRUE(Started(server));
  auto ctx = ClientContext("ca.pem");
  TlsClient client(*ctx);
  ASSERT_FALSE(client.Connect(server.port()));
  ASSERT_FALSE(
      client.Write("GET /n HTTP/1.1\r\nHost: t\r\n\r\nGET /n HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_FALSE(client.Write("GET /n HTTP/1.1\r\nHost: t\r\n\r\n"));
  Response a, b, c;
  ASSERT_FALSE(client.Read(&a));
  ASSERT_FALSE(client.Read(&b));
  ASSERT_FALSE(client.Read(&c));
  EXPECT_EQ(a.body() + b.body() + c.body(), "123");
}

TEST(HttpServerTlsTest, ServesOverTlsToAClientTrustingTheCa) {
  PeerRecorder recorder;
  HttpServer server(TlsServerOptions());
  server.Route("GET", "/peer", recorder.Handler());
  ASSERT_TRUE(Started(server));

  auto ctx = ClientContext("ca.pem");
  TlsClient client(*ctx);
  ASSERT_FALSE(client.Connect(server.port()));
  EXPECT_EQ(client.Get("/peer").result_int(), 200);
  EXPECT_EQ(client.Get("/peer").result_int(), 200);  // keep-alive over TLS
  auto peers = recorder.peers();
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_TRUE(peers[0].tls);
  EXPECT_FALSE(peers[0].cert_presented);
  EXPECT_FALSE(peers[0].cert_verified);

  auto wrong = ClientContext("untrusted-ca.pem");
  EXPECT_FALSE(TlsGet(server.port(), *wrong));
  Client plain;  // plain HTTP to a TLS port gets nowhere
  ASSERT_FALSE(plain.Connect(server.port()));
  EXPECT_NE(plain.Get("/peer").result_int(), 200);
}

TEST(HttpServerTlsTest, RequiredClientCertRejectsClientsWithoutOrWithUntrustedOnes) {
  PeerRecorder recorder;
  HttpServer server(MutualTlsOptions(/*require=*/true));
  server.Route("GET", "/peer", recorder.Handler());
  ASSERT_TRUE(Started(server));

  auto none = ClientContext("ca.pem");
  EXPECT_FALSE(TlsGet(server.port(), *none));
  auto untrusted = ClientContext("ca.pem", "untrusted-server.pem", "untrusted-server-key.pem");
  EXPECT_FALSE(TlsGet(server.port(), *untrusted));
  EXPECT_TRUE(recorder.peers().empty());

  auto good = ClientContext("ca.pem", "client.pem", "client-key.pem");
  EXPECT_TRUE(TlsGet(server.port(), *good));
}

TEST(HttpServerTlsTest, RecordsWhichCaVerifiedTheClientCert) {
  PeerRecorder recorder;
  HttpServer server(MutualTlsOptions(/*require=*/true));
  server.Route("GET", "/peer", recorder.Handler());
  ASSERT_TRUE(Started(server));

  auto client = ClientContext("ca.pem", "client.pem", "client-key.pem");
  ASSERT_TRUE(TlsGet(server.port(), *client));
  auto proxy = ClientContext("ca.pem", "proxy-client.pem", "proxy-client-key.pem");
  ASSERT_TRUE(TlsGet(server.port(), *proxy));

  auto peers = recorder.peers();
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_TRUE(peers[0].tls);
  EXPECT_TRUE(peers[0].cert_presented);
  EXPECT_TRUE(peers[0].cert_verified);
  EXPECT_EQ(peers[0].subject_cn, "test-client");
  EXPECT_EQ(peers[0].issuer_cn, "modelmetrics test CA");
  EXPECT_TRUE(peers[0].subject_organizations.empty());
  EXPECT_TRUE(peers[0].verified_by_client_ca);
  EXPECT_FALSE(peers[0].verified_by_requestheader_ca);

  EXPECT_TRUE(peers[1].cert_verified);
  EXPECT_EQ(peers[1].subject_cn, "front-proxy");
  EXPECT_EQ(peers[1].issuer_cn, "modelmetrics test request-header CA");
  EXPECT_FALSE(peers[1].verified_by_client_ca);
  EXPECT_TRUE(peers[1].verified_by_requestheader_ca);
}

// The ConfigMap's CAs rotate under a running server: each connection is judged by the bundles of
// its moment, and an untrusted certificate only fails to authenticate, never the handshake.
class SwappableCas : public ClientCaSource {
 public:
  void Set(std::string client_file, std::string requestheader_file) {
    auto bundles = std::make_shared<Bundles>();
    const auto read = [](const std::string& name) {
      std::ifstream in(TlsFile(name.c_str()));
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    if (!client_file.empty()) bundles->client_ca_pem = read(client_file);
    if (!requestheader_file.empty()) bundles->requestheader_ca_pem = read(requestheader_file);
    std::lock_guard lock(mu_);
    current_ = std::move(bundles);
  }
  std::shared_ptr<const Bundles> Current() const override {
    std::lock_guard lock(mu_);
    return current_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Bundles> current_;
};

TEST(HttpServerTlsTest, DynamicClientCasApplyToEachNewConnection) {
  auto cas = std::make_shared<SwappableCas>();
  cas->Set("ca.pem", "requestheader-ca.pem");
  PeerRecorder recorder;
  ServerOptions options = TlsServerOptions();
  options.tls->dynamic_client_cas = cas;
  HttpServer server(options);
  server.Route("GET", "/peer", recorder.Handler());
  ASSERT_TRUE(Started(server));

  auto client = ClientContext("ca.pem", "client.pem", "client-key.pem");
  auto proxy = ClientContext("ca.pem", "proxy-client.pem", "proxy-client-key.pem");
  auto untrusted = ClientContext("ca.pem", "untrusted-server.pem", "untrusted-server-key.pem");
  auto none = ClientContext("ca.pem");
  ASSERT_TRUE(TlsGet(server.port(), *client));
  ASSERT_TRUE(TlsGet(server.port(), *proxy));
  ASSERT_TRUE(TlsGet(server.port(), *untrusted));  // served, as nobody
  ASSERT_TRUE(TlsGet(server.port(), *none));
  // Both rotate: the old front-proxy certificate is no longer trusted, and the new request-header
  // CA vouches for what the old client CA signed.
  cas->Set("untrusted-ca.pem", "ca.pem");
  ASSERT_TRUE(TlsGet(server.port(), *proxy));
  ASSERT_TRUE(TlsGet(server.port(), *client));

  // A kept-alive connection is judged per request: rotated out, its next request is nobody's.
  TlsClient kept(*client);
  ASSERT_FALSE(kept.Connect(server.port()));
  EXPECT_EQ(kept.Get("/peer").result_int(), 200);
  cas->Set("untrusted-ca.pem", "untrusted-ca.pem");
  EXPECT_EQ(kept.Get("/peer").result_int(), 200);
  const auto kept_peers = recorder.peers();
  ASSERT_EQ(kept_peers.size(), 8u);
  EXPECT_TRUE(kept_peers[6].cert_verified);
  EXPECT_FALSE(kept_peers[7].cert_verified);

  auto peers = recorder.peers();
  ASSERT_EQ(peers.size(), 8u);
  EXPECT_TRUE(peers[0].verified_by_client_ca);
  EXPECT_FALSE(peers[0].verified_by_requestheader_ca);
  EXPECT_TRUE(peers[1].verified_by_requestheader_ca);
  EXPECT_FALSE(peers[1].verified_by_client_ca);
  EXPECT_TRUE(peers[2].cert_presented);
  EXPECT_FALSE(peers[2].cert_verified);
  EXPECT_FALSE(peers[3].cert_presented);
  EXPECT_FALSE(peers[4].cert_verified);  // the rotated-out CA's certificate
  EXPECT_TRUE(peers[5].verified_by_requestheader_ca);
  EXPECT_FALSE(peers[5].verified_by_client_ca);
}

// A certificate made at start (`serve`'s tls_self_signed) serves TLS that verifies for its names.
TEST(HttpServerTlsTest, SelfSignedCertificateVerifiesForItsNames) {
  std::string cert, key, error;
  ASSERT_OK(SelfSignedCertificate("modelmetrics", {"localhost", "127.0.0.1"}, &cert, &key));
  EXPECT_FALSE(::modelmetrics::testing::Ok(SelfSignedCertificate("x", {""}, &cert, &key), &error));
  ASSERT_OK(SelfSignedCertificate("modelmetrics", {"localhost", "127.0.0.1"}, &cert, &key));
  const std::string cert_file = test_paths::ScratchFile("self-signed.pem");
  const std::string key_file = test_paths::ScratchFile("self-signed-key.pem");
  std::ofstream(cert_file) << cert;
  std::ofstream(key_file) << key;
  ServerOptions options;
  options.tls.emplace();
  options.tls->cert_file = cert_file;
  options.tls->key_file = key_file;
  HttpServer server(options);
  server.Route("GET", "/peer", [](const HttpRequest&) { return Ok("peer"); });
  ASSERT_TRUE(Started(server));
  ssl::context ctx(ssl::context::tls_client);
  ctx.load_verify_file(cert_file);
  ctx.set_verify_mode(ssl::verify_peer);
  ctx.set_verify_callback(ssl::host_name_verification("127.0.0.1"));
  EXPECT_TRUE(TlsGet(server.port(), ctx));
  std::remove(cert_file.c_str());
  std::remove(key_file.c_str());
  // Its names, and only those.
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(cert.data(), -1), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> x509(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  ASSERT_NE(x509, nullptr);
  EXPECT_EQ(X509_check_host(x509.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(x509.get(), "127.0.0.1", 0), 1);
  EXPECT_NE(X509_check_host(x509.get(), "other.example.com", 0, 0, nullptr), 1);
}

TEST(HttpServerTlsTest, OptionalClientCertMayBeAbsent) {
  PeerRecorder recorder;
  HttpServer server(MutualTlsOptions(/*require=*/false));
  server.Route("GET", "/peer", recorder.Handler());
  ASSERT_TRUE(Started(server));
  auto none = ClientContext("ca.pem");
  EXPECT_TRUE(TlsGet(server.port(), *none));
  auto untrusted = ClientContext("ca.pem", "untrusted-server.pem", "untrusted-server-key.pem");
  EXPECT_FALSE(TlsGet(server.port(), *untrusted));  // presented but unverifiable: refused
  auto peers = recorder.peers();
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_TRUE(peers[0].tls);
  EXPECT_FALSE(peers[0].cert_presented);
  EXPECT_FALSE(peers[0].verified_by_client_ca);
}

// A client certificate with two Organizations (Kubernetes groups), signed by ca.pem at run time.
test_paths::TestCertificate MakeClientCert() {
  return test_paths::ClientCertificate("alice", {"system:masters", "team-é"}, 4242);
}

TEST(HttpServerTlsTest, ExposesSubjectOrganizations) {
  PeerRecorder recorder;
  HttpServer server(MutualTlsOptions(/*require=*/true));
  server.Route("GET", "/peer", recorder.Handler());
  ASSERT_TRUE(Started(server));

  test_paths::TestCertificate generated = MakeClientCert();
  ssl::context ctx(ssl::context::tls_client);
  ctx.load_verify_file(TlsFile("ca.pem"));
  ctx.set_verify_mode(ssl::verify_peer);
  ctx.use_certificate(asio::buffer(generated.cert_pem), ssl::context::pem);
  ctx.use_private_key(asio::buffer(generated.key_pem), ssl::context::pem);
  ASSERT_TRUE(TlsGet(server.port(), ctx));
  auto peers = recorder.peers();
  ASSERT_EQ(peers.size(), 1u);
  EXPECT_EQ(peers[0].subject_cn, "alice");
  EXPECT_EQ(peers[0].subject_organizations, (std::vector<std::string>{"system:masters", "team-é"}));
  EXPECT_TRUE(peers[0].verified_by_client_ca);
}

TEST(HttpServerTlsTest, StartReportsTlsConfigurationErrors) {
  auto start_error = [](ServerOptions options) {
    HttpServer server(options);
    std::string error;
    EXPECT_FALSE(::modelmetrics::testing::Ok(server.Start(), &error));
    return error;
  };
  ServerOptions missing = TlsServerOptions();
  missing.tls->cert_file = TlsFile("no-such.pem");
  EXPECT_NE(start_error(missing).find("no-such.pem"), std::string::npos);

  ServerOptions mismatched = TlsServerOptions();
  mismatched.tls->key_file = TlsFile("untrusted-server-key.pem");
  EXPECT_NE(start_error(mismatched).find("untrusted-server-key.pem"), std::string::npos);

  ServerOptions no_ca = TlsServerOptions();
  no_ca.tls->require_client_cert = true;
  EXPECT_NE(start_error(no_ca).find("require_client_cert"), std::string::npos);

  ServerOptions bad_ca = MutualTlsOptions(true);
  bad_ca.tls->requestheader_ca_file = TlsFile("missing-ca.pem");
  EXPECT_NE(start_error(bad_ca).find("missing-ca.pem"), std::string::npos);
}

}  // namespace
}  // namespace modelmetrics::net
