// One long-lived HTTP GET whose body is handed over as it arrives: a Kubernetes watch, which
// streams one JSON event per line for minutes. HttpClient (http_client.h) buffers whole bodies
// under a cap and is the wrong tool for that.
//
// Contract: runs on the caller's thread and returns when the server ends the body, when
// `on_data` returns false, when `*stop` becomes true (checked at least every 100 ms, also while
// nothing arrives), after `timeout` in all, or when nothing at all arrives for `idle_timeout`.
// TLS verified as HttpClient does (only `ca_file` when set; client certificate optional), no
// proxy, no redirects. A non-2xx answer is not streamed: its body (up to 64 KiB) comes back in the
// result for the caller to decode (a Kubernetes Status).
//
// Thread-safety: a plain function; calls on different threads are independent.
#ifndef MODELMETRICS_NET_HTTP_STREAM_H_
#define MODELMETRICS_NET_HTTP_STREAM_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace modelmetrics::net {

struct StreamOptions {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string ca_file;
  std::string client_cert_file;
  std::string client_key_file;
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(2)};
};

struct StreamResult {
  int status = 0;          // HTTP status; 0 when none arrived
  bool completed = false;  // the server ended the body (2xx)
  bool stopped = false;    // on_data returned false or *stop was set
  std::string error;       // transport failure (connect, TLS, timeout), empty otherwise
  std::string error_body;  // a non-2xx answer's body (bounded)
};

StreamResult Stream(const StreamOptions& options,
                    const std::function<bool(std::string_view data)>& on_data,
                    const std::atomic<bool>* stop);

}  // namespace modelmetrics::net

#endif  // MODELMETRICS_NET_HTTP_STREAM_H_
