// The aggregated API server's own metrics, on the project's metrics core, served on its
// `/metrics` (authorised as the non-resource path `/metrics`, as kube-apiserver's is):
//
//   modelmetrics_apiserver_requests_total{verb,path,code}          counter
//   modelmetrics_apiserver_request_duration_seconds{verb,path}     histogram, arrival to answer
//   modelmetrics_apiserver_requests_in_flight                      gauge
//   modelmetrics_snapshot_read_duration_seconds{result}            histogram, one per shared read
//   modelmetrics_shared_read_requests_total{admission}             counter: started, joined,
//                                                                  reused, busy
//   modelmetrics_pod_reads_total{outcome}                          counter, one per Pod per read
//   modelmetrics_watch_cache_objects{resource}                     gauge
//   modelmetrics_watch_relists_total{resource,reason}              counter
//   modelmetrics_token_review_cache_total{result}                  counter: hit, miss
//   modelmetrics_access_review_cache_total{result}                 counter: hit, miss
//   modelmetrics_reviews_refused_total                             counter: 429s of a full review
//                                                                  queue (or a client's share)
//
// `path` is a bounded class (PathClass), never the path itself, and every label value comes from
// a fixed set, so no client can grow the series count. Families are members, bound once; call
// sites never look one up by name.
//
// Thread-safety: every method is safe from any thread.
#ifndef MODELMETRICS_APISERVER_SERVER_METRICS_H_
#define MODELMETRICS_APISERVER_SERVER_METRICS_H_

#include <string>
#include <string_view>

#include "modelmetrics/metrics.h"

namespace modelmetrics::deployment {

// What a request asked for, as the requests' `path` label says it.
enum class PathClass { kSnapshot, kDiscovery, kOpenApi, kHealth, kVersion, kMetrics, kOther };
std::string_view PathClassName(PathClass path_class);
// The class of a request path (any group: a request for another group's path is `discovery` or
// `other` by its shape).
PathClass ClassifyPath(std::string_view path);

class ServerMetrics {
 public:
  ServerMetrics();

  // In flight from RequestStarted() to RequestFinished().
  void RequestStarted();
  void RequestFinished(std::string_view method, PathClass path_class, int code, double seconds);
  // `result`: ok, partial, or the error's reason in lower case (not_found, service_unavailable,
  // timeout, ...; anything else is `error`).
  void SnapshotRead(std::string_view result, double seconds);
  void SharedRead(std::string_view admission);
  // `outcome`: ok, or a bounded failure class (pod_source.h PodRead::outcome).
  void PodRead(std::string_view outcome);
  void WatchObjects(std::string_view resource, size_t count);
  void WatchRelist(std::string_view resource, std::string_view reason);
  void TokenReviewCache(bool hit);
  void AccessReviewCache(bool hit);
  void ReviewRefused();

  std::string Render(::modelmetrics::Format format) const { return registry_.Render(format); }

 private:
  // Qualified: deployment::Gauge is the snapshot's gauge (snapshot.h), not an instrument.
  ::modelmetrics::Registry registry_;
  ::modelmetrics::Family<::modelmetrics::Counter>* requests_;
  ::modelmetrics::Family<::modelmetrics::Histogram>* request_duration_;
  ::modelmetrics::Gauge in_flight_;
  ::modelmetrics::Family<::modelmetrics::Histogram>* snapshot_duration_;
  ::modelmetrics::Family<::modelmetrics::Counter>* shared_reads_;
  ::modelmetrics::Family<::modelmetrics::Counter>* pod_reads_;
  ::modelmetrics::Family<::modelmetrics::Gauge>* watch_objects_;
  ::modelmetrics::Family<::modelmetrics::Counter>* watch_relists_;
  ::modelmetrics::Family<::modelmetrics::Counter>* token_cache_;
  ::modelmetrics::Family<::modelmetrics::Counter>* access_cache_;
  ::modelmetrics::Counter reviews_refused_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_SERVER_METRICS_H_
