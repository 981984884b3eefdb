// See server_metrics.h.
#include "apiserver/server_metrics.h"

#include <algorithm>
#include <array>
#include <initializer_list>

namespace modelmetrics::deployment {
namespace {

// kube-apiserver's request latency buckets (seconds), cut at the 8 s request budget's next step.
const std::vector<double> kRequestBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                             0.5,   1,    2.5,   5,    10,  30};

// `value` when it is one of `allowed`, else `other`: a label a client can influence stays bounded.
std::string_view Bounded(std::string_view value, std::initializer_list<std::string_view> allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end() ? value : "other";
}

template <typename T>
Family<T>* Must(Family<T>* family) {
  // The definitions below are constants; a failure is a programming error caught by any test.
  if (family == nullptr) std::abort();
  return family;
}

}  // namespace

std::string_view PathClassName(PathClass path_class) {
  static constexpr std::array<std::string_view, 7> kNames = {
      "snapshot", "discovery", "openapi", "health", "version", "metrics", "other"};
  return kNames[static_cast<size_t>(path_class)];
}

PathClass ClassifyPath(std::string_view path) {
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const auto under = [path](std::string_view root) {
    return path == root || (path.starts_with(root) && path[root.size()] == '/');
  };
  if (under("/livez") || under("/readyz") || under("/healthz")) return PathClass::kHealth;
  if (path == "/version") return PathClass::kVersion;
  if (path == "/metrics") return PathClass::kMetrics;
  if (under("/openapi")) return PathClass::kOpenApi;
  if (path.starts_with("/apis/") && path.find("/namespaces/") != std::string_view::npos) {
    return PathClass::kSnapshot;
  }
  if (under("/apis")) return PathClass::kDiscovery;
  return PathClass::kOther;
}

ServerMetrics::ServerMetrics() {
  requests_ = Must(registry_.AddCounter(
      {.name = "modelmetrics_apiserver_requests",
       .help = "Requests answered, by HTTP method, path class and status code.",
       .labels = {"verb", "path", "code"}}));
  request_duration_ = Must(registry_.AddHistogram(
      {.name = "modelmetrics_apiserver_request_duration_seconds",
       .help = "Time from a request's arrival to its answer, by HTTP method and path class.",
       .labels = {"verb", "path"},
       .buckets = kRequestBuckets}));
  in_flight_ = Must(registry_.AddGauge({.name = "modelmetrics_apiserver_requests_in_flight",
                                        .help = "Requests received and not yet answered."}))
                   ->Bind({});
  snapshot_duration_ = Must(registry_.AddHistogram(
      {.name = "modelmetrics_snapshot_read_duration_seconds",
       .help = "Time one shared deployment read took, by result (ok, partial, or the error).",
       .labels = {"result"},
       .buckets = kRequestBuckets}));
  shared_reads_ = Must(registry_.AddCounter(
      {.name = "modelmetrics_shared_read_requests",
       .help = "Snapshot requests by how they were admitted: started a read, joined a running "
               "one, reused a finished one, or refused as busy.",
       .labels = {"admission"}}));
  pod_reads_ =
      Must(registry_.AddCounter({.name = "modelmetrics_pod_reads",
                                 .help = "Pod reads (one per Pod per deployment read) by outcome.",
                                 .labels = {"outcome"}}));
  watch_objects_ = Must(registry_.AddGauge({.name = "modelmetrics_watch_cache_objects",
                                            .help = "Objects held by the watch cache, by resource.",
                                            .labels = {"resource"}}));
  watch_relists_ = Must(registry_.AddCounter(
      {.name = "modelmetrics_watch_relists",
       .help = "Full lists made by the watch cache after its first, by resource and reason.",
       .labels = {"resource", "reason"}}));
  token_cache_ = Must(registry_.AddCounter(
      {.name = "modelmetrics_token_review_cache",
       .help = "Bearer tokens looked up in the TokenReview cache, by hit or miss.",
       .labels = {"result"}}));
  access_cache_ = Must(registry_.AddCounter(
      {.name = "modelmetrics_access_review_cache",
       .help =
           "Authorisation decisions looked up in the SubjectAccessReview cache, by hit or miss.",
       .labels = {"result"}}));
  reviews_refused_ =
      Must(registry_.AddCounter({.name = "modelmetrics_reviews_refused",
                                 .help = "Requests answered 429 because the review queue "
                                         "(TokenReview, SubjectAccessReview), or their "
                                         "client's share of it, was full."}))
          ->Bind({});
}

void ServerMetrics::RequestStarted() { in_flight_.Add(1); }

void ServerMetrics::RequestFinished(std::string_view method, PathClass path_class, int code,
                                    double seconds) {
  in_flight_.Add(-1);
  const std::string_view verb =
      Bounded(method, {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"});
  const std::string_view path = PathClassName(path_class);
  const std::string code_text = std::to_string(code >= 100 && code <= 599 ? code : 500);
  requests_->Labels({verb, path, code_text}).Inc();
  request_duration_->Labels({verb, path}).Observe(seconds);
}

void ServerMetrics::SnapshotRead(std::string_view result, double seconds) {
  snapshot_duration_
      ->Labels({Bounded(result, {"ok", "partial", "not_found", "service_unavailable", "timeout",
                                 "internal_error", "bad_request", "forbidden"})})
      .Observe(seconds);
}

void ServerMetrics::SharedRead(std::string_view admission) {
  shared_reads_->Labels({Bounded(admission, {"started", "joined", "reused", "busy"})}).Inc();
}

void ServerMetrics::PodRead(std::string_view outcome) { pod_reads_->Labels({outcome}).Inc(); }

void ServerMetrics::WatchObjects(std::string_view resource, size_t count) {
  watch_objects_->Labels({resource}).Set(static_cast<double>(count));
}

void ServerMetrics::WatchRelist(std::string_view resource, std::string_view reason) {
  watch_relists_->Labels({resource, reason}).Inc();
}

void ServerMetrics::TokenReviewCache(bool hit) {
  token_cache_->Labels({hit ? "hit" : "miss"}).Inc();
}

void ServerMetrics::ReviewRefused() { reviews_refused_.Inc(); }

void ServerMetrics::AccessReviewCache(bool hit) {
  access_cache_->Labels({hit ? "hit" : "miss"}).Inc();
}

}  // namespace modelmetrics::deployment
