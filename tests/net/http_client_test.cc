// Tests for HttpClient against the loopback FaultServer (src/sim/fault_server.h).
#include "net/http_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "net/http_server.h"
#include "sim/fault_server.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::net {

namespace {

using namespace std::chrono_literals;
using sim::FaultServer;
using sim::FaultServerOptions;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr size_t kMiB = size_t{1} << 20;

std::string Tls(const std::string& file) { return test_paths::Tls(file); }

milliseconds Since(Clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

FetchResult FetchOne(HttpClient& client, std::string url, milliseconds budget = 5s,
                     std::vector<std::pair<std::string, std::string>> headers = {}) {
  std::vector<FetchRequest> batch{{std::move(url), std::move(headers)}};
  return client.FetchAll(batch, Clock::now() + budget).at(0);
}

std::string Describe(const FetchResult& r) {
  return std::string(FetchErrorName(r.error)) + " status=" + std::to_string(r.status) + " " +
         r.message;
}

TEST(HttpClientTest, FetchesStatusBodyAndContentType) {
  FaultServer server;
  HttpClient client;
  const Clock::time_point start = Clock::now();
  FetchResult r = FetchOne(client, server.Url("/ok"));
  const milliseconds took = Since(start);
  ASSERT_TRUE(r.ok()) << Describe(r);
  EXPECT_EQ(r.error, FetchError::kNone);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok\n");
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4");
  EXPECT_TRUE(r.message.empty());
  EXPECT_TRUE(r.location.empty());
  EXPECT_LE(r.elapsed, took);  // the fetch's own time, inside the caller's
}

TEST(HttpClientTest, EmptyBatchReturnsNothing) {
  HttpClient client;
  EXPECT_TRUE(client.FetchAll({}, Clock::now() + 1s).empty());
}

TEST(HttpClientTest, SendsUserAgentAndRequestHeaders) {
  FaultServer server;
  HttpClient client;
  const std::string accept =
      "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
  FetchResult r =
      FetchOne(client, server.Url("/echo"), 5s,
               {{"Accept", accept}, {"Authorization", "Bearer t0ken"}, {"X-Empty", ""}});
  ASSERT_TRUE(r.ok()) << Describe(r);
  EXPECT_NE(r.body.find("GET /echo HTTP/1.1\r\n"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\r\nUser-Agent: modelmetrics/0.1\r\n"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\r\nAccept: " + accept + "\r\n"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("Accept: */*"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\r\nAuthorization: Bearer t0ken\r\n"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\r\nX-Empty:"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\r\nAccept-Encoding: "), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("gzip"), std::string::npos) << r.body;
}

TEST(HttpClientTest, NeverMoreThanMaxInFlight) {
  FaultServer server;
  ClientOptions options;
  options.max_in_flight = 32;
  HttpClient client(options);
  std::vector<FetchRequest> batch(36, FetchRequest{server.Url("/hold/200"), {}});
  Clock::time_point start = Clock::now();
  std::vector<FetchResult> results = client.FetchAll(batch, Clock::now() + 10s);
  milliseconds took = Since(start);
  ASSERT_EQ(results.size(), 36u);
  for (const FetchResult& r : results) {
    EXPECT_TRUE(r.ok()) << Describe(r);
    EXPECT_EQ(r.body, "held");
  }
  EXPECT_EQ(server.Hits("/hold/200"), 36);
  EXPECT_LE(server.MaxConcurrent(), 32);
  EXPECT_GE(server.MaxConcurrent(), 16);  // They did run concurrently...
  EXPECT_GE(took, 390ms);                 // ...and the last 4 had to wait for a free slot.
}

TEST(HttpClientTest, SilentServerTimesOutAtFetchTimeout) {
  FaultServer server;
  ClientOptions options;
  options.fetch_timeout = 300ms;
  HttpClient client(options);
  Clock::time_point start = Clock::now();
  FetchResult r = FetchOne(client, server.Url("/hang"), 5s);
  milliseconds took = Since(start);
  EXPECT_EQ(r.error, FetchError::kTimeout) << Describe(r);
  EXPECT_EQ(r.status, 0);
  // kTimeout, not kDeadline, says it ended at fetch_timeout: no upper bound on a loaded machine.
  EXPECT_GE(r.elapsed, 290ms);
  EXPECT_LE(r.elapsed, took);
  EXPECT_FALSE(r.message.empty());
}

TEST(HttpClientTest, FetchTimeoutCoversATrickledBody) {
  FaultServer server;
  ClientOptions options;
  options.fetch_timeout = 300ms;
  HttpClient client(options);
  // Headers arrive at once, then 1 byte per 50 ms for 100 bytes: 5 s in all.
  FetchResult r = FetchOne(client, server.Url("/trickle/100/50"), 5s);
  EXPECT_EQ(r.error, FetchError::kTimeout) << Describe(r);
  EXPECT_EQ(r.status, 200);  // The status line had arrived.
  EXPECT_TRUE(r.body.empty());
  EXPECT_GE(r.elapsed, 290ms);  // kTimeout: ended by fetch_timeout, not the 5 s deadline
}

TEST(HttpClientTest, DeadlineCancelsRunningAndQueuedFetches) {
  FaultServer server;
  ClientOptions options;
  options.max_in_flight = 2;
  options.fetch_timeout = 60s;
  HttpClient client(options);
  std::vector<FetchRequest> batch(4, FetchRequest{server.Url("/hang"), {}});
  Clock::time_point start = Clock::now();
  std::vector<FetchResult> results = client.FetchAll(batch, start + 500ms);
  milliseconds took = Since(start);
  EXPECT_GE(took, 500ms);
  // Returned at the deadline, not at fetch_timeout: under 10 s (kEventually) on any machine.
  EXPECT_LT(took, 10s);
  ASSERT_EQ(results.size(), 4u);
  for (const FetchResult& r : results) EXPECT_EQ(r.error, FetchError::kDeadline) << Describe(r);
  // The first two ran until the deadline; the last two never started.
  EXPECT_GE(results[0].elapsed, 450ms);
  EXPECT_GE(results[1].elapsed, 450ms);
  EXPECT_EQ(results[2].elapsed, 0ms);
  EXPECT_EQ(results[3].elapsed, 0ms);
  EXPECT_EQ(server.Hits("/hang"), 2);
}

TEST(HttpClientTest, DeadlineKeepsFinishedResults) {
  FaultServer server;
  HttpClient client;
  std::vector<FetchRequest> batch{
      {server.Url("/ok"), {}}, {server.Url("/hang"), {}}, {server.Url("/size/10"), {}}};
  std::vector<FetchResult> results = client.FetchAll(batch, Clock::now() + 300ms);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok()) << Describe(results[0]);
  EXPECT_EQ(results[1].error, FetchError::kDeadline) << Describe(results[1]);
  EXPECT_TRUE(results[2].ok()) << Describe(results[2]);
  EXPECT_EQ(results[2].body, "xxxxxxxxxx");
}

TEST(HttpClientTest, PastDeadlineStartsNothing) {
  FaultServer server;
  HttpClient client;
  std::vector<FetchRequest> batch(3, FetchRequest{server.Url("/ok"), {}});
  std::vector<FetchResult> results = client.FetchAll(batch, Clock::now() - 1ms);
  ASSERT_EQ(results.size(), 3u);
  for (const FetchResult& r : results) EXPECT_EQ(r.error, FetchError::kDeadline) << Describe(r);
  EXPECT_EQ(server.Hits("/ok"), 0);
}

TEST(HttpClientTest, BodyCapIsExact) {
  FaultServer server;
  ClientOptions options;
  options.max_body_bytes = kMiB;
  HttpClient client(options);
  std::vector<FetchRequest> batch{{server.Url("/size/" + std::to_string(kMiB)), {}},
                                  {server.Url("/size/" + std::to_string(kMiB + 1)), {}}};
  std::vector<FetchResult> results = client.FetchAll(batch, Clock::now() + 5s);
  ASSERT_TRUE(results[0].ok()) << Describe(results[0]);
  EXPECT_EQ(results[0].body.size(), kMiB);
  EXPECT_EQ(results[1].error, FetchError::kTooLarge) << Describe(results[1]);
  EXPECT_TRUE(results[1].body.empty());
}

TEST(HttpClientTest, BodyCapAppliesToDecodedGzip) {
  FaultServer server;
  ClientOptions options;
  options.max_body_bytes = kMiB;
  HttpClient client(options);
  std::vector<FetchRequest> batch{
      {server.Url("/gzip/100000"), {}},                        // Decodes under the cap.
      {server.Url("/gzip/" + std::to_string(kMiB)), {}},       // Decodes to exactly the cap.
      {server.Url("/gzip/" + std::to_string(kMiB + 1)), {}},   // One byte over.
      {server.Url("/gzip/" + std::to_string(64 * kMiB)), {}},  // ~64 KiB inflating to 64 MiB.
  };
  std::vector<FetchResult> results = client.FetchAll(batch, Clock::now() + 10s);
  ASSERT_TRUE(results[0].ok()) << Describe(results[0]);
  EXPECT_EQ(results[0].body, std::string(100000, 'x'));
  ASSERT_TRUE(results[1].ok()) << Describe(results[1]);
  EXPECT_EQ(results[1].body.size(), kMiB);
  EXPECT_EQ(results[2].error, FetchError::kTooLarge) << Describe(results[2]);
  EXPECT_EQ(results[3].error, FetchError::kTooLarge) << Describe(results[3]);
  EXPECT_TRUE(results[3].body.empty());
}

TEST(HttpClientTest, RedirectIsReturnedNotFollowed) {
  FaultServer server;
  HttpClient client;
  FetchResult r = FetchOne(client, server.Url("/redirect"));
  EXPECT_EQ(r.error, FetchError::kHttpStatus) << Describe(r);
  EXPECT_EQ(r.status, 302);
  EXPECT_EQ(r.location, server.Url("/target"));
  EXPECT_EQ(server.Hits("/redirect"), 1);
  EXPECT_EQ(server.Hits("/target"), 0);
}

TEST(HttpClientTest, ServerErrorKeepsStatusAndBody) {
  FaultServer server;
  HttpClient client;
  std::vector<FetchRequest> batch{{server.Url("/status/500"), {}}, {server.Url("/nope"), {}}};
  std::vector<FetchResult> results = client.FetchAll(batch, Clock::now() + 5s);
  EXPECT_EQ(results[0].error, FetchError::kHttpStatus) << Describe(results[0]);
  EXPECT_EQ(results[0].status, 500);
  EXPECT_EQ(results[0].body, "status 500");
  EXPECT_NE(results[0].message.find("500"), std::string::npos);
  EXPECT_EQ(results[1].error, FetchError::kHttpStatus) << Describe(results[1]);
  EXPECT_EQ(results[1].status, 404);
}

TEST(HttpClientTest, ConnectionRefused) {
  uint16_t port = sim::UnusedLoopbackPort();
  HttpClient client;
  FetchResult r = FetchOne(client, "http://127.0.0.1:" + std::to_string(port) + "/metrics");
  EXPECT_EQ(r.error, FetchError::kConnectionRefused) << Describe(r);
  EXPECT_EQ(r.status, 0);
}

TEST(HttpClientTest, BadRequestsAreRejectedAndOthersStillRun) {
  FaultServer server;
  HttpClient client;
  std::vector<FetchRequest> batch{
      {"", {}},
      {"ftp://127.0.0.1/metrics", {}},
      {"file:///etc/passwd", {}},
      {"gopher://127.0.0.1/", {}},
      {"127.0.0.1:9/metrics", {}},  // No scheme: never guessed.
      {"http://", {}},
      {"not a url", {}},
      {"http://127.0.0.1:99999/", {}},
      {std::string("http://127.0.0.1/\0x", 19), {}},
      {server.Url("/ok"), {{"X-Evil", "a\r\nInjected: 1"}}},
      {server.Url("/ok"), {{"Bad Name", "v"}}},
      {server.Url("/ok"), {}},
  };
  std::vector<FetchResult> results = client.FetchAll(batch, Clock::now() + 5s);
  ASSERT_EQ(results.size(), batch.size());
  for (size_t i = 0; i + 1 < results.size(); ++i) {
    EXPECT_EQ(results[i].error, FetchError::kBadUrl) << i << ": " << Describe(results[i]);
    EXPECT_FALSE(results[i].message.empty()) << i;
  }
  EXPECT_TRUE(results.back().ok()) << Describe(results.back());
  EXPECT_EQ(server.Hits("/ok"), 1);
}

TEST(HttpClientTest, TlsWithConfiguredCa) {
  FaultServer server({.cert_file = Tls("server.pem"), .key_file = Tls("server-key.pem")});
  ClientOptions options;
  options.ca_file = Tls("ca.pem");
  HttpClient client(options);
  FetchResult r = FetchOne(client, server.Url("/ok"));
  ASSERT_TRUE(r.ok()) << Describe(r);
  EXPECT_EQ(r.body, "ok\n");
  // "localhost" is in the certificate too.
  FetchResult by_name =
      FetchOne(client, "https://localhost:" + std::to_string(server.port()) + "/ok");
  if (by_name.error != FetchError::kConnectionRefused) {  // localhost may resolve to ::1 only.
    EXPECT_TRUE(by_name.ok()) << Describe(by_name);
  }
}

TEST(HttpClientTest, TlsUntrustedCertificateFailsUnlessItsCaIsConfigured) {
  FaultServer server(
      {.cert_file = Tls("untrusted-server.pem"), .key_file = Tls("untrusted-server-key.pem")});
  {
    ClientOptions options;
    options.ca_file = Tls("ca.pem");
    HttpClient client(options);
    FetchResult r = FetchOne(client, server.Url("/ok"));
    EXPECT_EQ(r.error, FetchError::kTls) << Describe(r);
  }
  {
    HttpClient client;  // System CA bundle.
    FetchResult r = FetchOne(client, server.Url("/ok"));
    EXPECT_EQ(r.error, FetchError::kTls) << Describe(r);
  }
  {
    ClientOptions options;
    options.ca_file = Tls("untrusted-ca.pem");
    HttpClient client(options);
    FetchResult r = FetchOne(client, server.Url("/ok"));
    EXPECT_TRUE(r.ok()) << Describe(r);
  }
  EXPECT_EQ(server.Hits("/ok"), 1);
}

TEST(HttpClientTest, TlsHostNameIsVerified) {
  // A valid certificate, but for 127.0.0.1/::1/localhost, served on 127.0.0.2.
  FaultServer server({.bind_address = "127.0.0.2",
                      .cert_file = Tls("server.pem"),
                      .key_file = Tls("server-key.pem")});
  ClientOptions options;
  options.ca_file = Tls("ca.pem");
  HttpClient client(options);
  FetchResult r = FetchOne(client, server.Url("/ok"));
  EXPECT_EQ(r.error, FetchError::kTls) << Describe(r);
  EXPECT_EQ(server.Hits("/ok"), 0);
}

TEST(HttpClientTest, TlsMissingCaFileAndPlainServer) {
  FaultServer plain;
  ClientOptions options;
  options.ca_file = "/nonexistent/ca.pem";
  HttpClient client(options);
  std::string https_to_plain = "https://127.0.0.1:" + std::to_string(plain.port()) + "/ok";
  FetchResult r = FetchOne(client, https_to_plain);
  EXPECT_EQ(r.error, FetchError::kTls) << Describe(r);

  ClientOptions good;
  good.ca_file = Tls("ca.pem");
  HttpClient good_client(good);
  r = FetchOne(good_client, https_to_plain);
  EXPECT_EQ(r.error, FetchError::kTls) << Describe(r);
}

TEST(HttpClientTest, TlsClientCertificate) {
  FaultServer server({.cert_file = Tls("server.pem"),
                      .key_file = Tls("server-key.pem"),
                      .client_ca_file = Tls("ca.pem")});
  {
    ClientOptions options;
    options.ca_file = Tls("ca.pem");
    options.client_cert_file = Tls("client.pem");
    options.client_key_file = Tls("client-key.pem");
    HttpClient client(options);
    FetchResult r = FetchOne(client, server.Url("/ok"));
    EXPECT_TRUE(r.ok()) << Describe(r);
  }
  {
    ClientOptions options;
    options.ca_file = Tls("ca.pem");
    HttpClient client(options);
    FetchResult r = FetchOne(client, server.Url("/ok"));
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error, FetchError::kTls) << Describe(r);
  }
  EXPECT_EQ(server.Hits("/ok"), 1);
}

// Sets proxy variables for its lifetime, restoring what was there before.
class ScopedProxyEnv {
 public:
  ScopedProxyEnv() {
    for (const char* name : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                             "ALL_PROXY", "no_proxy", "NO_PROXY"}) {
      const char* old = std::getenv(name);
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      if (std::string_view(name).find("no_") == 0 || std::string_view(name).find("NO_") == 0) {
        unsetenv(name);
      } else {
        setenv(name, "http://127.0.0.1:1", 1);
      }
    }
  }
  ~ScopedProxyEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(HttpClientTest, ProxyEnvironmentIsIgnored) {
  ScopedProxyEnv env;  // Before any thread starts: setenv is not thread-safe.
  FaultServer server;
  FaultServer tls_server({.cert_file = Tls("server.pem"), .key_file = Tls("server-key.pem")});
  ClientOptions options;
  options.ca_file = Tls("ca.pem");
  HttpClient client(options);
  std::vector<FetchRequest> batch{{server.Url("/ok"), {}}, {tls_server.Url("/ok"), {}}};
  std::vector<FetchResult> results = client.FetchAll(batch, Clock::now() + 5s);
  EXPECT_TRUE(results[0].ok()) << Describe(results[0]);
  EXPECT_TRUE(results[1].ok()) << Describe(results[1]);
  EXPECT_EQ(server.Hits("/ok"), 1);
  EXPECT_EQ(tls_server.Hits("/ok"), 1);
}

TEST(HttpClientTest, ReusesConnectionsAcrossBatches) {
  FaultServer server;
  HttpClient client;
  for (int i = 0; i < 3; ++i) {
    FetchResult r = FetchOne(client, server.Url("/ok"));
    ASSERT_TRUE(r.ok()) << Describe(r);
  }
  EXPECT_EQ(server.Hits("/ok"), 3);
  EXPECT_EQ(server.Connections(), 1);
}

TEST(HttpClientTest, PerBatchBoundHoldsAndConcurrentBatchesKeepTheirShare) {
  // Two callers, each with 6 held requests: the per-batch bound of 3 caps each, while the
  // client-wide bound (8) would have let one caller take more. Both take two rounds.
  FaultServer first_server;
  FaultServer second_server;
  ClientOptions options;
  options.max_in_flight = 8;
  options.max_in_flight_per_batch = 3;
  HttpClient client(options);
  auto run = [&client](FaultServer* server, milliseconds* took) {
    std::vector<FetchRequest> batch(6, FetchRequest{server->Url("/hold/200"), {}});
    const Clock::time_point start = Clock::now();
    for (const FetchResult& r : client.FetchAll(batch, Clock::now() + 10s)) {
      EXPECT_TRUE(r.ok()) << Describe(r);
    }
    *took = Since(start);
  };
  milliseconds first_took{};
  milliseconds second_took{};
  std::thread other(run, &second_server, &second_took);
  run(&first_server, &first_took);
  other.join();
  EXPECT_EQ(first_server.MaxConcurrent(), 3);
  EXPECT_EQ(second_server.MaxConcurrent(), 3);
  EXPECT_GE(first_took, 390ms);
  EXPECT_GE(second_took, 390ms);
}

TEST(HttpClientTest, OnResultHandsEachResultOverAsItArrives) {
  FaultServer server;
  HttpClient client;
  const std::vector<FetchRequest> batch = {
      {server.Url("/hold/600"), {}}, {server.Url("/size/5"), {}}, {"ftp://example.invalid/", {}}};
  const std::thread::id caller = std::this_thread::get_id();
  const Clock::time_point start = Clock::now();
  std::vector<std::pair<size_t, milliseconds>> seen;
  std::vector<FetchResult> results =
      client.FetchAll(batch, Clock::now() + 10s, [&](size_t index, FetchResult& result) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        seen.emplace_back(index, Since(start));
        if (index == 1) {
          EXPECT_EQ(result.body, "xxxxx");
          result.body = "taken";  // the callback may change what FetchAll returns
        }
      });
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].first, 2u);  // rejected up front
  EXPECT_EQ(seen[1].first, 1u);  // the quick one, long before the held one finished
  EXPECT_LT(seen[1].second, 400ms);
  EXPECT_EQ(seen[2].first, 0u);
  EXPECT_GE(seen[2].second, 590ms);
  EXPECT_EQ(results[1].body, "taken");
  EXPECT_EQ(results[2].error, FetchError::kBadUrl);
}

TEST(HttpClientTest, ConcurrentFetchAllFromFourThreads) {
  FaultServer server;
  ClientOptions options;
  options.max_in_flight = 8;
  HttpClient client(options);
  constexpr int kThreads = 4;
  constexpr int kRounds = 3;
  constexpr int kPerBatch = 12;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        std::vector<FetchRequest> batch;
        for (int i = 0; i < kPerBatch; ++i) {
          int size = 1 + t * 1000 + round * 100 + i;  // Unique per request: checks the order.
          batch.push_back(
              {server.Url(i % 4 == 0 ? "/hold/30" : "/size/" + std::to_string(size)), {}});
        }
        std::vector<FetchResult> results = client.FetchAll(batch, Clock::now() + 10s);
        if (results.size() != batch.size()) {
          ++failures[t];
          continue;
        }
        for (int i = 0; i < kPerBatch; ++i) {
          size_t want = i % 4 == 0 ? 4 : static_cast<size_t>(1 + t * 1000 + round * 100 + i);
          if (!results[i].ok() || results[i].body.size() != want) ++failures[t];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_LE(server.MaxConcurrent(), 8);
}

// A loopback HttpServer answering every request with what it received: method, Content-Type,
// Content-Length, Expect, and the body (a body over 100 bytes as its size and last 12 bytes), one
// per line.
class RequestEchoServer {
 public:
  RequestEchoServer() : server_(Options()) {
    server_.RoutePrefix("", "/", [](const HttpRequest& request) {
      auto header = [&](std::string_view name) {
        return request.headers.Has(name) ? std::string(request.headers.Get(name)) : "(none)";
      };
      return HttpResponse::Text(200, request.method + "\n" + header("Content-Type") + "\n" +
                                         header("Content-Length") + "\n" + header("Expect") + "\n" +
                                         Summary(request.body));
    });
    std::string error;
    if (!::modelmetrics::testing::Ok(server_.Start(), &error)) throw std::runtime_error(error);
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(server_.port()) + "/x"; }

  static std::string Summary(const std::string& body) {
    if (body.size() <= 100) return body;
    return "<" + std::to_string(body.size()) + " bytes ending " + body.substr(body.size() - 12) +
           ">";
  }

 private:
  static ServerOptions Options() {
    ServerOptions options;
    options.max_body_bytes = 4 * kMiB;
    return options;
  }

  HttpServer server_;
};

FetchResult Send(HttpClient& client, FetchRequest request) {
  std::vector<FetchRequest> batch{std::move(request)};
  return client.FetchAll(batch, Clock::now() + 5s).at(0);
}

TEST(HttpClientTest, PostSendsTheBodyWithoutExpectContinue) {
  RequestEchoServer server;
  HttpClient client;
  FetchRequest post;
  post.url = server.Url();
  post.method = "POST";
  // Above curl's 100-continue threshold (1 MiB in curl 7.88, 1 KiB in older ones).
  post.body = std::string(kMiB + 1, 'b') + "{\"end\":true}";
  post.headers = {{"Content-Type", "application/json"}};
  FetchResult r = Send(client, post);
  ASSERT_TRUE(r.ok()) << Describe(r);
  EXPECT_EQ(r.body,
            "POST\napplication/json\n1048589\n(none)\n<1048589 bytes ending {\"end\":true}>");

  // The same client (and its reused handles) goes back to a plain GET with no body.
  FetchResult get = Send(client, {server.Url(), {}});
  ASSERT_TRUE(get.ok()) << Describe(get);
  EXPECT_EQ(get.body, "GET\n(none)\n(none)\n(none)\n");
}

TEST(HttpClientTest, OtherMethodsAndEmptyBodies) {
  RequestEchoServer server;
  HttpClient client;
  FetchRequest put{server.Url(), {{"Content-Type", "text/plain"}}, "PUT", "new value"};
  FetchResult r = Send(client, put);
  ASSERT_TRUE(r.ok()) << Describe(r);
  EXPECT_EQ(r.body, "PUT\ntext/plain\n9\n(none)\nnew value");

  r = Send(client, {server.Url(), {}, "DELETE"});
  ASSERT_TRUE(r.ok()) << Describe(r);
  EXPECT_EQ(r.body.substr(0, 7), "DELETE\n");

  r = Send(client, {server.Url(), {}, "POST"});  // an empty POST still says Content-Length: 0
  ASSERT_TRUE(r.ok()) << Describe(r);
  EXPECT_EQ(r.body.substr(0, 5), "POST\n");
  EXPECT_NE(r.body.find("\n0\n"), std::string::npos) << r.body;

  r = Send(client, {server.Url(), {}, "HEAD"});  // headers only; no body to wait for
  ASSERT_TRUE(r.ok()) << Describe(r);
  EXPECT_TRUE(r.body.empty());
}

TEST(HttpClientTest, InvalidMethodsAreRejected) {
  RequestEchoServer server;
  HttpClient client;
  for (const char* method : {"", "GE T", "GET\r\nX: y"}) {
    FetchResult r = Send(client, {server.Url(), {}, method});
    EXPECT_EQ(r.error, FetchError::kBadUrl) << method << ": " << Describe(r);
  }
  FetchResult r = Send(client, {server.Url(), {}, "HEAD", "body"});
  EXPECT_EQ(r.error, FetchError::kBadUrl) << Describe(r);
}

TEST(HttpClientTest, ErrorNamesAreDistinct) {
  std::set<std::string_view> names;
  for (FetchError e :
       {FetchError::kNone, FetchError::kTimeout, FetchError::kDeadline, FetchError::kTooLarge,
        FetchError::kTls, FetchError::kConnectionRefused, FetchError::kResolve, FetchError::kBadUrl,
        FetchError::kHttpStatus, FetchError::kProtocol, FetchError::kOther}) {
    names.insert(FetchErrorName(e));
  }
  EXPECT_EQ(names.size(), 11u);
  EXPECT_EQ(FetchErrorName(FetchError::kTooLarge), "too_large");
}

}  // namespace
}  // namespace modelmetrics::net
