// A concurrent HTTP(S) client for scraping many /metrics endpoints at once (GET), and for the few
// other requests a Kubernetes API client makes (a POST with a JSON body).
//
// Contract:
//   * HttpClient owns one libcurl multi handle and ONE driver thread that runs every transfer
//     (curl_multi_poll); callers hand it batches and block until the batch is done.
//   * FetchAll(batch, deadline) returns exactly one FetchResult per request, in request order,
//     no later than `deadline` (plus scheduling slack): whatever is still running at the deadline
//     is aborted, and whatever has not started yet is not started; both get kDeadline.
//   * At most ClientOptions::max_in_flight transfers run at once, counted over the whole client
//     (all concurrent FetchAll calls together); queued requests of concurrent batches are started
//     round-robin, so one large batch cannot starve another. With max_in_flight_per_batch, each
//     FetchAll call also runs at most that many at once.
//   * Each transfer is limited by fetch_timeout (connect + TLS + headers + body, measured from the
//     moment the transfer starts, not from when it was queued) -> kTimeout.
//   * The body is capped at max_body_bytes of *decoded* bytes (after gzip/deflate/br/zstd), so a
//     compression bomb fails with kTooLarge once it decodes past the cap; a body of exactly the
//     cap is accepted.
//   * Redirects are never followed: a 3xx is returned as a result (kHttpStatus, status, location).
//   * Only http:// and https:// URLs; proxies (and proxy environment variables) are never used;
//     TLS peer and host verification are always on, against ca_file if set, else the system
//     bundle. Requests send "User-Agent: modelmetrics/0.1" unless a request header overrides it.
//   * Requests are HTTP/1.1 (no HTTP/2), GET unless FetchRequest::method says otherwise; a
//     non-empty body is sent with Content-Length (no `Expect: 100-continue` round trip).
//     Connections (and TLS sessions) are kept and reused across batches by the same client.
//
// Thread-safety: FetchAll may be called concurrently from any number of threads. The destructor
// must not run concurrently with FetchAll (every FetchAll must have returned); it stops the driver
// thread and closes all connections.
#ifndef MODELMETRICS_NET_HTTP_CLIENT_H_
#define MODELMETRICS_NET_HTTP_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace modelmetrics::net {

// Why a fetch did not produce a 2xx response. FetchErrorName gives a stable snake_case name
// suitable for a metric label.
enum class FetchError {
  kNone,               // 2xx response, body within the cap.
  kTimeout,            // The per-fetch timeout (or connect timeout) expired.
  kDeadline,           // The batch deadline passed before the fetch finished (or started).
  kTooLarge,           // The decoded body exceeded max_body_bytes.
  kTls,                // TLS handshake or certificate verification failed (either side).
  kConnectionRefused,  // Could not connect: refused, unreachable (see message for the errno).
  kResolve,            // The host name could not be resolved.
  kBadUrl,             // Unusable request: malformed URL, scheme not http/https, bad header.
  kHttpStatus,         // A complete non-2xx response (status, body and location are set).
  kProtocol,           // Malformed or truncated HTTP response, connection reset mid-transfer.
  kOther,              // Anything else (see message).
};

std::string_view FetchErrorName(FetchError error);

struct FetchRequest {
  std::string url;  // http:// or https:// only.
  // Extra request headers, e.g. {"Accept", "..."}, {"Authorization", "Bearer ..."}. Names and
  // values must not contain CR, LF or NUL (else kBadUrl); an empty value sends an empty header.
  std::vector<std::pair<std::string, std::string>> headers;
  // An HTTP method token (GET, POST, PUT, DELETE, PATCH, HEAD, ...; else kBadUrl). HEAD reads no
  // body.
  std::string method = "GET";
  // Sent as the request body when non-empty (give its Content-Type in `headers`). Must stay
  // alive and unchanged until FetchAll returns.
  std::string body{};
};

struct FetchResult {
  FetchError error = FetchError::kOther;
  int status = 0;            // HTTP status, 0 if no response was received.
  std::string body;          // Decoded body (also for kHttpStatus); empty on other errors.
  std::string content_type;  // Response Content-Type, if any.
  std::string location;      // Response Location header (as sent), if any.
  std::string retry_after;   // Response Retry-After header (as sent), if any.
  std::string message;       // Human-readable description; empty when ok().
  std::chrono::milliseconds elapsed{};  // From the transfer's start to its end; 0 if never run.

  bool ok() const { return error == FetchError::kNone; }
};

struct ClientOptions {
  size_t max_in_flight = 32;  // Transfers running at once (client-wide); 0 is treated as 1.
  // Transfers one FetchAll call may run at once; 0: only the client-wide bound. A per-request
  // bound, so concurrent callers do not shrink each other's concurrency below it.
  size_t max_in_flight_per_batch = 0;
  std::chrono::milliseconds fetch_timeout{2000};    // Whole transfer.
  std::chrono::milliseconds connect_timeout{1000};  // TCP connect + TLS handshake.
  size_t max_body_bytes = size_t{1} << 20;          // Decoded bytes.
  size_t max_idle_connections = 64;                 // Connection cache size for reuse.
  std::string ca_file;           // PEM CA bundle to trust (only it); empty: system bundle.
  std::string client_cert_file;  // PEM client certificate, sent if the server asks.
  std::string client_key_file;   // PEM key for client_cert_file.
  bool accept_encoding = true;   // Ask for and decode gzip/deflate/br/zstd.
};

class HttpClient {
 public:
  // Starts the driver thread. Throws std::runtime_error if libcurl cannot be initialised.
  explicit HttpClient(ClientOptions options = {});
  ~HttpClient();

  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Called on the calling thread, once per request, as soon as that request has its result
  // (index into the batch); it may change the result, e.g. move the body out. Runs while other
  // transfers of the batch are still in flight, so a caller can process bodies as they arrive.
  using OnResult = std::function<void(size_t index, FetchResult& result)>;

  // Runs `batch` (see the file comment) and blocks until every request has a result; with
  // `on_result`, hands each result to it first.
  std::vector<FetchResult> FetchAll(std::span<const FetchRequest> batch,
                                    std::chrono::steady_clock::time_point deadline,
                                    const OnResult& on_result = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace modelmetrics::net

#endif  // MODELMETRICS_NET_HTTP_CLIENT_H_
