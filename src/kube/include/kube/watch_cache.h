// List+watch caches of the objects a snapshot reads (ModelDeployments, their Pods, ReplicaSets
// and Deployments), kept as client-go's reflectors keep an informer's store, so a snapshot makes
// no request to kube-apiserver.
//
// One thread per resource, over the whole cluster (Pods: only those labelled
// app.kubernetes.io/name=model-deployment, the label every Pod a snapshot reads carries):
//   list   GET COLLECTION?limit=500[&continue=TOKEN], page by page; the list's resourceVersion
//          starts the watch. The new set replaces the old one at once when the list is whole.
//   watch  GET COLLECTION?watch=true&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=N
//          ADDED and MODIFIED put the object, DELETED removes it, BOOKMARK moves RV on. A normal
//          end of the stream (its timeout) watches again from RV. An ERROR event with code 410
//          (resourceVersion too old: Expired or Gone), or an HTTP 410, relists.
//   errors every relist (after a 410, a failed list or watch, a value of the wrong JSON type, a
//          watch that ends at once with no event) waits a back-off of 0.8 s doubling to 30 s,
//          reset only after a watch ran for two minutes (client-go's numbers), so no API server
//          answer makes it list in a loop; objects that do not decode are skipped; more than
//          `max_objects` of a resource or an event line over `max_event_bytes` is a failure (and
//          a relist). ReplicaSets and Deployments are kept without labels and annotations (only
//          their names and owners are read), bounding what a large cluster's owners cost.
// Ready() says why not until every resource has listed once (`/readyz`'s informer-sync).
//
// Thread-safety: the ObjectSource methods may be called concurrently with each other and with
// the watch threads (a mutex per resource). Start() and Stop() from one controlling thread.
#ifndef MODELMETRICS_KUBE_WATCH_CACHE_H_
#define MODELMETRICS_KUBE_WATCH_CACHE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kube/kube_api.h"
#include "kube/objects.h"

namespace modelmetrics::deployment {

class WatchCache : public ObjectSource {
 public:
  struct Options {
    // The watch's timeoutSeconds (kube-apiserver ends the stream then; client-go picks 5-10 min).
    std::chrono::seconds watch_timeout{300};
    // Nothing for this long, not even a bookmark (kube-apiserver sends one a minute): reconnect.
    std::chrono::seconds idle_timeout{150};
    size_t page_size = 500;
    size_t max_objects = 100000;               // per resource
    size_t max_event_bytes = size_t{4} << 20;  // one watch event (one object)
    std::chrono::milliseconds backoff_min{800};
    std::chrono::milliseconds backoff_max{30000};
    // Told each resource's object count after each change, and each relist after the first list
    // with its reason (expired, error): the server's own metrics.
    std::function<void(std::string_view resource, size_t count)> on_objects;
    std::function<void(std::string_view resource, std::string_view reason)> on_relist;
  };

  // `client` must outlive the cache.
  WatchCache(KubeApiClient* client, Options options);
  ~WatchCache() override;  // Stop()s

  void Start();
  // Ends every watch within about a second (a list page in flight: its request timeout) and
  // joins the threads. Idempotent.
  void Stop();
  // "" once every resource has listed once; else which have not, and why.
  std::string Ready() const;

  Status GetModelDeployment(std::string_view ns, std::string_view name,
                            ModelDeployment* out) override;
  Status ListModelDeployments(std::string_view ns, std::vector<ModelDeployment>* out) override;
  Status ListPods(std::string_view ns, std::string_view label_selector,
                  std::vector<Pod>* out) override;
  Status GetReplicaSet(std::string_view ns, std::string_view name, ReplicaSet* out) override;
  Status GetDeployment(std::string_view ns, std::string_view name, Deployment* out) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_KUBE_WATCH_CACHE_H_
