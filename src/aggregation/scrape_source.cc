// See scrape_source.h. Step numbers refer to §2.2.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#include "scrape_source.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "exporter_registry.h"
#include "metrics_parse.h"
#include "reasons.h"

namespace modelmetrics::deployment {
namespace {

// Go's strconv.ParseInt(s, 10, 32): optional sign, decimal digits.
std::optional<int64_t> ParsePort(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < INT32_MIN || value > INT32_MAX) return std::nullopt;
  return value;
}

std::string_view Annotation(const Pod& pod, std::string_view key) {
  const auto it = pod.metadata.annotations.find(std::string(key));
  return it == pod.metadata.annotations.end() ? std::string_view() : std::string_view(it->second);
}

// Steps 8.2-8.6: the Pod's advertised endpoint, or the reason it has none.
bool MetricsUrl(const Pod& pod, std::string* url, std::string* error) {
  if (pod.pod_ip.empty() || Annotation(pod, "prometheus.io/scrape") != "true" ||
      Annotation(pod, "prometheus.io/path") != "/metrics") {
    *error = reason::kNoEndpoint;
    return false;
  }
  const std::optional<int64_t> port = ParsePort(Annotation(pod, "prometheus.io/port"));
  if (!port || *port < 1 || *port > 65535) {
    *error = reason::kInvalidPort;
    return false;
  }
  bool declared = false;
  for (const auto* containers : {&pod.containers, &pod.init_containers}) {
    for (const Container& container : *containers) {
      for (const ContainerPort& p : container.ports) declared |= p.container_port == *port;
    }
  }
  if (!declared) {
    *error = reason::kUndeclaredPort;
    return false;
  }
  std::string_view scheme = Annotation(pod, "prometheus.io/scheme");
  if (scheme.empty()) scheme = "http";
  if (scheme != "http" && scheme != "https") {
    *error = reason::kInvalidScheme;
    return false;
  }
  const bool ipv6 = pod.pod_ip.find(':') != std::string::npos;
  *url = fmt::format("{}://{}{}{}:{}/metrics", scheme, ipv6 ? "[" : "", pod.pod_ip, ipv6 ? "]" : "",
                     *port);
  return true;
}

// A failed fetch in the words of Go's net/http, which is what SREs reading upstream output know.
std::string FetchErrorText(const std::string& url, const net::FetchResult& result) {
  switch (result.error) {
    case net::FetchError::kHttpStatus:
      return fmt::format("metrics endpoint returned HTTP {}", result.status);
    case net::FetchError::kTooLarge:
      return std::string(reason::kTooLarge);
    case net::FetchError::kTimeout:
      return fmt::format("Get \"{}\": context deadline exceeded ({})", url,
                         result.status == 0
                             ? "Client.Timeout exceeded while awaiting headers"
                             : "Client.Timeout or context cancellation while reading body");
    case net::FetchError::kDeadline:
      return fmt::format("Get \"{}\": context deadline exceeded", url);
    case net::FetchError::kTls:
      return fmt::format("Get \"{}\": tls: failed to verify certificate: {}", url, result.message);
    default:
      return fmt::format("Get \"{}\": {}", url, result.message);
  }
}

net::ClientOptions ClientOptionsFrom(const ScrapeOptions& options) {
  net::ClientOptions client;
  // The bound is per request, as upstream's per-request semaphore: concurrent snapshots must
  // not shrink each other's share and miss the two-rounds-in-half-the-budget guarantee. The
  // client-wide ceiling only caps sockets when many requests overlap.
  client.max_in_flight_per_batch = options.max_in_flight;
  client.max_in_flight = options.max_in_flight * 4;
  client.fetch_timeout = options.fetch_timeout;
  client.connect_timeout = std::min(options.fetch_timeout, std::chrono::milliseconds(2000));
  client.max_body_bytes = options.max_body_bytes;
  client.ca_file = options.ca_file;
  client.max_idle_connections = std::max<size_t>(2 * options.max_in_flight, options.pod_limit);
  return client;
}

}  // namespace

ScrapeSource::ScrapeSource(ScrapeOptions options)
    : options_(std::move(options)), client_(ClientOptionsFrom(options_)) {}

std::vector<PodRead> ScrapeSource::Read(const ModelDeployment& md, std::span<const Pod> pods,
                                        SteadyTime deadline) {
  std::vector<PodRead> reads(pods.size());
  // Steps 8.2-8.6, then every advertised endpoint at once; the client bounds concurrency.
  std::vector<std::string> urls(pods.size());
  std::vector<net::FetchRequest> requests;
  std::vector<size_t> request_pod;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (std::string error; !MetricsUrl(pods[i], &urls[i], &error)) {
      reads[i].error = error;
      reads[i].outcome = PodOutcome::kNoEndpoint;
      continue;
    }
    requests.push_back({.url = urls[i], .headers = {{"Accept", "text/plain;version=0.0.4"}}});
    request_pod.push_back(i);
  }
  auto on_result = [&](size_t r, net::FetchResult& result) {
    const size_t i = request_pod[r];
    if (!result.ok() || result.status != 200) {
      if (result.ok()) result.error = net::FetchError::kHttpStatus;
      reads[i].error = FetchErrorText(urls[i], result);
      reads[i].outcome = PodOutcome::kFetch;
      reads[i].fetch_error = result.error;
      return;
    }
    const ExporterProfile* profile =
        SelectExporter(md, !pods[i].metadata.Label(kLabelRouter).empty());
    PodMetrics read;
    const Status parsed = ParsePodMetrics(result.body, profile, &read, &pods[i]);
    std::string().swap(result.body);  // the body is no longer needed: free it now
    if (!parsed.ok()) {
      reads[i].error = parsed.message();
      reads[i].outcome = PodOutcome::kParseError;
      return;
    }
    reads[i].metrics = std::move(read);
    reads[i].outcome = PodOutcome::kOk;
    reads[i].at = {options_.now(), options_.steady_now()};  // step 8.10
  };
  client_.FetchAll(requests, deadline, on_result);
  return reads;
}

}  // namespace modelmetrics::deployment
