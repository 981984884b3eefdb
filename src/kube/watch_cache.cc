// See watch_cache.h.
#include "kube/watch_cache.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "base/text.h"
#include "kube/label_selector.h"

namespace modelmetrics::deployment {
namespace {

using json = nlohmann::json;

std::string Key(std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", ns, name);
}

// Where a resource lives and how its objects decode.
template <typename T>
struct Resource {
  std::string name;        // pods
  std::string collection;  // /api/v1/pods
  std::string selector;    // a labelSelector for the whole watch, or ""
  std::string not_found;   // `pods` in `pods "x" not found`
  Status (*decode)(const json&, T*);
  // Drops what a snapshot never reads of a cached object (an owner's annotations, which can
  // hold a whole last-applied configuration), as client-go's store transforms do.
  void (*trim)(T*) = nullptr;
};

// One resource's list+watch loop and its store.
class ReflectorBase {
 public:
  virtual ~ReflectorBase() = default;
  virtual void Run() = 0;
  virtual std::string Ready() const = 0;
};

template <typename T>
class Reflector : public ReflectorBase {
 public:
  Reflector(Resource<T> resource, KubeApiClient* client, const WatchCache::Options& options,
            const std::atomic<bool>* stop, base::Mutex* stop_mu, std::condition_variable* stop_cv)
      : resource_(std::move(resource)),
        client_(client),
        options_(options),
        stop_(stop),
        stop_mu_(stop_mu),
        stop_cv_(stop_cv) {}

  // List, watch, and on any failure relist: every relist waits the back-off first (0.8 s
  // doubling to 30 s), which resets only after a watch has run for a while, so an API server that
  // answers every watch with 410 or an error is listed at most every 30 s, never in a loop.
  void Run() override {
    std::chrono::milliseconds backoff = options_.backoff_min;
    bool first = true;
    std::string reason;
    while (!stop_->load()) {
      if (!first) {
        if (options_.on_relist) options_.on_relist(resource_.name, reason);
        base::MutexLock lock(stop_mu_);
        if (stop_cv_->wait_for(lock.native(), backoff, [this] { return stop_->load(); })) break;
        backoff = std::min(options_.backoff_max, backoff * 2);
      }
      first = false;
      Status status;
      const auto started = std::chrono::steady_clock::now();
      try {
        std::string rv;
        status = List(&rv);
        if (status.ok()) status = WatchFrom(&rv);
      } catch (const std::exception& e) {  // a value of the wrong JSON type, say
        status = Status::Internal(resource_.name + ": " + e.what());
      }
      if (stop_->load()) break;
      if (std::chrono::steady_clock::now() - started > std::chrono::minutes(2)) {
        backoff = options_.backoff_min;  // it ran well for a while: this failure is news
      }
      SetProblem(status.message());
      reason = status.code() == 410 ? "expired" : "error";
    }
  }

  std::string Ready() const override {
    base::MutexLock lock(&mu_);
    if (synced_) return "";
    return fmt::format("{} not listed yet{}{}", resource_.name, problem_.empty() ? "" : ": ",
                       problem_);
  }

  bool Get(std::string_view ns, std::string_view name, T* out) const {
    base::MutexLock lock(&mu_);
    const auto it = objects_.find(Key(ns, name));
    if (it == objects_.end()) return false;
    *out = it->second;
    return true;
  }

  // Every object in `ns` ("" for all) that `keep` accepts, in key order.
  template <typename Keep>
  std::vector<T> List(std::string_view ns, Keep keep) const {
    std::vector<T> out;
    base::MutexLock lock(&mu_);
    const std::string prefix = ns.empty() ? "" : std::string(ns) + "/";
    for (auto it = objects_.lower_bound(prefix);
         it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      if (keep(it->second)) out.push_back(it->second);
    }
    return out;
  }

  const std::string& not_found() const { return resource_.not_found; }

 private:
  std::string Query(std::initializer_list<std::pair<std::string_view, std::string>> params) const {
    std::string query;
    if (!resource_.selector.empty()) {
      query = "labelSelector=" + base::PercentEncode(resource_.selector);
    }
    for (const auto& [key, value] : params) {
      if (value.empty()) continue;
      query += fmt::format("{}{}={}", query.empty() ? "" : "&", key, base::PercentEncode(value));
    }
    return resource_.collection + (query.empty() ? "" : "?" + query);
  }

  // The whole collection, page by page; replaces the store when complete.
  Status List(std::string* rv) {
    std::map<std::string, T, std::less<>> fresh;
    std::string next;
    do {
      std::string body;
      Status status = client_->Request(
          "GET", Query({{"limit", std::to_string(options_.page_size)}, {"continue", next}}), "",
          &body);
      if (!status.ok()) return status;
      const json page = json::parse(body, nullptr, /*allow_exceptions=*/false);
      if (!page.is_object()) return Status::Internal(resource_.name + " list: not a JSON object");
      const json meta = page.value("metadata", json::object());
      *rv = meta.is_object() ? meta.value("resourceVersion", "") : "";
      next = meta.is_object() ? meta.value("continue", "") : "";
      const json items = page.value("items", json::array());
      if (!items.is_array()) return Status::Internal(resource_.name + " list: items: not a list");
      for (const json& item : items) {
        T object;
        std::string ignored;
        if (!resource_.decode(item, &object).ok()) continue;  // as a failed event: skipped
        if (resource_.trim != nullptr) resource_.trim(&object);
        fresh[Key(object.metadata.namespace_, object.metadata.name)] = std::move(object);
      }
      if (fresh.size() > options_.max_objects) {
        return Status::Internal(
            fmt::format("{}: more than {} objects", resource_.name, options_.max_objects));
      }
    } while (!next.empty() && !stop_->load());
    if (stop_->load()) return Status::Ok();  // a list cut short never replaces the store
    size_t count = 0;
    {
      base::MutexLock lock(&mu_);
      objects_ = std::move(fresh);
      count = objects_.size();
      synced_ = true;
      problem_.clear();
    }
    if (options_.on_objects) options_.on_objects(resource_.name, count);
    return Status::Ok();
  }

  // Watches from `*rv` until stopped or a relist is needed (then the reason as a non-Ok status).
  Status WatchFrom(std::string* rv) {
    while (!stop_->load()) {
      Status event_error;
      size_t events = 0;
      const auto started = std::chrono::steady_clock::now();
      const auto on_line = [&](std::string_view line) {
        ++events;
        return Apply(line, rv, &event_error);
      };
      const Status status = client_->Stream(
          Query({{"watch", "true"},
                 {"resourceVersion", *rv},
                 {"allowWatchBookmarks", "true"},
                 {"timeoutSeconds", std::to_string(options_.watch_timeout.count())}}),
          on_line, stop_, options_.watch_timeout + std::chrono::seconds(30), options_.idle_timeout,
          options_.max_event_bytes);
      if (!event_error.ok()) return event_error;
      if (!status.ok()) return status;
      // A stream that ends at once with nothing in it is a broken server, not a timeout
      // (client-go's very short watch): relist after the back-off rather than spin.
      if (events == 0 && !stop_->load() &&
          std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) {
        return Status::Unavailable(resource_.name + " watch: ended at once without an event");
      }
    }
    return Status::Ok();
  }

  // One watch event; false ends the stream with `*error` set.
  bool Apply(std::string_view line, std::string* rv, Status* error) {
    const json event = json::parse(line, nullptr, /*allow_exceptions=*/false);
    const json object = event.is_object() ? event.value("object", json()) : json();
    const std::string type = event.is_object() ? event.value("type", "") : "";
    if (!object.is_object()) {
      *error = Status::Internal(resource_.name + " watch: an event without an object");
      return false;
    }
    if (type == "ERROR") {
      const int code = object.value("code", 500);
      *error = {code == 410 ? 410 : 500, object.value("reason", ""),
                resource_.name + " watch: " + object.value("message", std::string("error"))};
      return false;
    }
    const json meta = object.value("metadata", json::object());
    if (meta.is_object() && meta.contains("resourceVersion") &&
        meta["resourceVersion"].is_string()) {
      *rv = meta["resourceVersion"].get<std::string>();
    }
    if (type == "BOOKMARK") return true;
    T decoded;
    std::string ignored;
    if (!resource_.decode(object, &decoded).ok()) return true;  // skipped, as in a list
    if (resource_.trim != nullptr) resource_.trim(&decoded);
    const std::string key = Key(decoded.metadata.namespace_, decoded.metadata.name);
    size_t count = 0;
    {
      base::MutexLock lock(&mu_);
      if (type == "DELETED") {
        objects_.erase(key);
      } else if (type == "ADDED" || type == "MODIFIED") {
        if (objects_.size() >= options_.max_objects && !objects_.contains(key)) {
          *error = Status::Internal(
              fmt::format("{}: more than {} objects", resource_.name, options_.max_objects));
          return false;
        }
        objects_[key] = std::move(decoded);
      }
      count = objects_.size();
    }
    if (options_.on_objects) options_.on_objects(resource_.name, count);
    return true;
  }

  void SetProblem(const std::string& problem) {
    base::MutexLock lock(&mu_);
    problem_ = problem.substr(0, 512);
  }

  const Resource<T> resource_;
  KubeApiClient* const client_;
  const WatchCache::Options& options_;
  const std::atomic<bool>* const stop_;
  base::Mutex* const stop_mu_;
  std::condition_variable* const stop_cv_;

  mutable base::Mutex mu_;
  std::map<std::string, T, std::less<>> objects_ GUARDED_BY(mu_);  // key ns/name
  bool synced_ GUARDED_BY(mu_) = false;
  std::string problem_ GUARDED_BY(mu_);
};

}  // namespace

struct WatchCache::Impl {
  KubeApiClient* client;
  Options options;
  std::atomic<bool> stop{false};
  base::Mutex stop_mu;
  std::condition_variable stop_cv;
  std::unique_ptr<Reflector<ModelDeployment>> deployments;
  std::unique_ptr<Reflector<Pod>> pods;
  std::unique_ptr<Reflector<ReplicaSet>> replica_sets;
  std::unique_ptr<Reflector<Deployment>> apps_deployments;
  std::vector<std::thread> threads;

  template <typename T>
  std::unique_ptr<Reflector<T>> Make(Resource<T> resource) {
    return std::make_unique<Reflector<T>>(std::move(resource), client, options, &stop, &stop_mu,
                                          &stop_cv);
  }
  std::vector<ReflectorBase*> All() const {
    return {deployments.get(), pods.get(), replica_sets.get(), apps_deployments.get()};
  }
};

WatchCache::WatchCache(KubeApiClient* client, Options options) : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.client = client;
  impl.options = std::move(options);
  impl.deployments = impl.Make<ModelDeployment>(
      {"modeldeployments", "/apis/worker.gpustack.ai/v1alpha1/modeldeployments", "",
       "modeldeployments.worker.gpustack.ai", &DecodeModelDeployment});
  impl.pods =
      impl.Make<Pod>({"pods", "/api/v1/pods", fmt::format("{}={}", kLabelName, kLabelNameValue),
                      "pods", &DecodePod});
  // Owners are read for their names, uids and owner references only.
  impl.replica_sets = impl.Make<ReplicaSet>(
      {"replicasets", "/apis/apps/v1/replicasets", "", "replicasets.apps", &DecodeReplicaSet,
       [](ReplicaSet* rs) { rs->metadata.annotations.clear(), rs->metadata.labels.clear(); }});
  impl.apps_deployments = impl.Make<Deployment>(
      {"deployments", "/apis/apps/v1/deployments", "", "deployments.apps", &DecodeDeployment,
       [](Deployment* d) { d->metadata.annotations.clear(), d->metadata.labels.clear(); }});
}

WatchCache::~WatchCache() { Stop(); }

void WatchCache::Start() {
  for (ReflectorBase* reflector : impl_->All()) {
    impl_->threads.emplace_back([reflector] { reflector->Run(); });
  }
}

void WatchCache::Stop() {
  {
    base::MutexLock lock(&impl_->stop_mu);
    impl_->stop = true;
    impl_->stop_cv.notify_all();
  }
  for (std::thread& thread : impl_->threads) thread.join();
  impl_->threads.clear();
}

std::string WatchCache::Ready() const {
  std::string why;
  for (const ReflectorBase* reflector : impl_->All()) {
    const std::string one = reflector->Ready();
    if (!one.empty()) why += (why.empty() ? "" : "; ") + one;
  }
  return why;
}

namespace {

template <typename T>
Status GetFrom(const Reflector<T>& reflector, std::string_view ns, std::string_view name, T* out) {
  if (!reflector.Ready().empty()) {
    return Status::Unavailable("the object cache is not synced yet: " + reflector.Ready());
  }
  if (reflector.Get(ns, name, out)) return Status::Ok();
  return Status::NotFound(fmt::format("{} \"{}\" not found", reflector.not_found(), name));
}

}  // namespace

Status WatchCache::GetModelDeployment(std::string_view ns, std::string_view name,
                                      ModelDeployment* out) {
  return GetFrom(*impl_->deployments, ns, name, out);
}

Status WatchCache::ListModelDeployments(std::string_view ns, std::vector<ModelDeployment>* out) {
  if (std::string why = impl_->deployments->Ready(); !why.empty()) {
    return Status::Unavailable("the object cache is not synced yet: " + why);
  }
  *out = impl_->deployments->List(ns, [](const ModelDeployment&) { return true; });
  return Status::Ok();
}

Status WatchCache::ListPods(std::string_view ns, std::string_view label_selector,
                            std::vector<Pod>* out) {
  if (std::string why = impl_->pods->Ready(); !why.empty()) {
    return Status::Unavailable("the object cache is not synced yet: " + why);
  }
  LabelSelector selector;
  if (Status parsed = LabelSelector::Parse(label_selector, &selector); !parsed.ok()) return parsed;
  *out =
      impl_->pods->List(ns, [&selector](const Pod& pod) { return selector.Matches(pod.metadata); });
  return Status::Ok();
}

Status WatchCache::GetReplicaSet(std::string_view ns, std::string_view name, ReplicaSet* out) {
  return GetFrom(*impl_->replica_sets, ns, name, out);
}

Status WatchCache::GetDeployment(std::string_view ns, std::string_view name, Deployment* out) {
  return GetFrom(*impl_->apps_deployments, ns, name, out);
}

}  // namespace modelmetrics::deployment
