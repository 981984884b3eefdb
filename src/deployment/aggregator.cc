// See aggregator.h. Step numbers refer to §2.2 of the reference.
#include "deployment/aggregator.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "deployment/baseline_store.h"
#include "deployment/exporter_registry.h"
#include "deployment/merge.h"
#include "deployment/metrics_parse.h"
#include "deployment/shared_reads.h"
#include "net/http_client.h"

namespace modelmetrics::deployment {
namespace {

// Kubernetes' error for a lookup that failed for a reason other than absence.
ApiStatus OwnershipError(const ApiStatus& status) {
  return status.code >= 400 ? status : ApiStatus::Internal(status.message);
}

// One request's view of the object source: every ReplicaSet and Deployment is read once, however
// many router Pods name it (a router's replicas share both), so discovery costs a bounded number
// of API calls.
class MemoizedOwners {
 public:
  explicit MemoizedOwners(ObjectSource* source) : source_(source) {}

  ApiStatus GetReplicaSet(std::string_view ns, std::string_view name, ReplicaSet* out) {
    return Get(&replica_sets_, ns, name, out, &ObjectSource::GetReplicaSet);
  }
  ApiStatus GetDeployment(std::string_view ns, std::string_view name, Deployment* out) {
    return Get(&deployments_, ns, name, out, &ObjectSource::GetDeployment);
  }

 private:
  template <typename T>
  using Cache = std::map<std::string, std::pair<ApiStatus, T>, std::less<>>;

  template <typename T, typename Getter>
  ApiStatus Get(Cache<T>* cache, std::string_view ns, std::string_view name, T* out,
                Getter getter) {
    auto it = cache->find(name);
    if (it == cache->end()) {
      T object;
      ApiStatus status = (source_->*getter)(ns, name, &object);
      it = cache->emplace(std::string(name), std::make_pair(std::move(status), std::move(object)))
               .first;
    }
    *out = it->second.second;
    return it->second.first;
  }

  ObjectSource* source_;
  Cache<ReplicaSet> replica_sets_;
  Cache<Deployment> deployments_;
};

// Step 3, router Pods: Pod -> ReplicaSet -> `<md>-router` Deployment -> ModelDeployment, every
// link a controller reference whose UID matches the object it names.
ApiStatus RouterPodOwned(MemoizedOwners* source, const ModelDeployment& md, const Pod& pod,
                         bool* owned) {
  *owned = false;
  if (!md.router || pod.metadata.Label(kLabelRouter) != md.router->name) return ApiStatus::Ok();
  const OwnerReference* rs_ref = pod.metadata.Controller();
  if (rs_ref == nullptr || rs_ref->kind != "ReplicaSet") return ApiStatus::Ok();
  ReplicaSet rs;
  ApiStatus status = source->GetReplicaSet(md.metadata.namespace_, rs_ref->name, &rs);
  if (status.not_found()) return ApiStatus::Ok();
  if (!status.ok()) return OwnershipError(status);
  if (rs.metadata.uid != rs_ref->uid) return ApiStatus::Ok();
  const OwnerReference* deployment_ref = rs.metadata.Controller();
  if (deployment_ref == nullptr || deployment_ref->kind != "Deployment" ||
      deployment_ref->name != md.metadata.name + "-router") {
    return ApiStatus::Ok();
  }
  Deployment deployment;
  status = source->GetDeployment(md.metadata.namespace_, deployment_ref->name, &deployment);
  if (status.not_found()) return ApiStatus::Ok();
  if (!status.ok()) return OwnershipError(status);
  if (deployment.metadata.uid != deployment_ref->uid) return ApiStatus::Ok();
  const OwnerReference* md_ref = deployment.metadata.Controller();
  *owned = md_ref != nullptr && md_ref->kind == "ModelDeployment" && md_ref->uid == md.metadata.uid;
  return ApiStatus::Ok();
}

// Step 3, engine Pods: a role with no command, and the ModelDeployment as controller.
bool EnginePodOwned(const ModelDeployment& md, const Pod& pod) {
  const Role* role = md.FindRole(pod.metadata.Label(kLabelComponent));
  if (role == nullptr || !role->command.empty()) return false;
  const OwnerReference* ref = pod.metadata.Controller();
  return ref != nullptr && ref->kind == "ModelDeployment" && ref->uid == md.metadata.uid;
}

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

}  // namespace

struct Aggregator::Impl {
  ObjectSource* source;
  AggregatorOptions options;
  BaselineStore* store;
  net::HttpClient client;

  Impl(ObjectSource* s, AggregatorOptions o)
      : source(s),
        options(std::move(o)),
        store(options.baselines != nullptr ? options.baselines : BaselineStore::Global()),
        client(ClientOptionsFrom(options)) {}

  static net::ClientOptions ClientOptionsFrom(const AggregatorOptions& options) {
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
};

Aggregator::Aggregator(ObjectSource* source, AggregatorOptions options)
    : impl_(std::make_unique<Impl>(source, std::move(options))) {}

Aggregator::~Aggregator() = default;

ApiStatus Aggregator::Get(std::string_view ns, std::string_view name, Snapshot* out,
                          std::optional<SteadyClock::time_point> request_deadline) {
  const AggregatorOptions& options = impl_->options;
  SteadyClock::time_point deadline = SteadyClock::now() + options.request_timeout;
  if (request_deadline) deadline = std::min(deadline, *request_deadline);
  ObjectSource* source = impl_->source;

  // 1. The ModelDeployment; NotFound and every other error pass through unchanged.
  ModelDeployment md;
  ApiStatus status = source->GetModelDeployment(ns, name, &md);
  if (!status.ok()) return status;

  // 2. Its Pods, by name.
  std::vector<Pod> pods;
  const std::string selector =
      fmt::format("{}={},{}={}", kLabelName, kLabelNameValue, kLabelInstance, md.metadata.name);
  status = source->ListPods(ns, selector, &pods);
  if (!status.ok()) return ApiStatus::Internal("list ModelDeployment Pods: " + status.message);
  std::sort(pods.begin(), pods.end(),
            [](const Pod& a, const Pod& b) { return a.metadata.name < b.metadata.name; });

  // 3. Owned Pods only.
  std::vector<Pod> owned;
  MemoizedOwners owners(source);
  for (Pod& pod : pods) {
    bool is_owned = false;
    if (!pod.metadata.Label(kLabelRouter).empty()) {
      status = RouterPodOwned(&owners, md, pod, &is_owned);
      if (!status.ok()) return status;
    } else {
      is_owned = EnginePodOwned(md, pod);
    }
    if (is_owned) owned.push_back(std::move(pod));
  }
  // 4.
  if (owned.empty()) return ApiStatus::Unavailable("ModelDeployment has no owned metrics Pods");
  // The 8 s cover discovery too; a slow API server must not turn into a snapshot of timeouts.
  if (SteadyClock::now() >= deadline) {
    return {504, "Timeout",
            "ModelDeployment metrics request exceeded its time limit while reading objects"};
  }

  // 5-6. Coverage, before truncation; extra Pods are not reported.
  SnapshotBuilder builder(md, impl_->store);
  auto check_coverage = [&builder](std::string source_name, size_t found, size_t expected) {
    if (found == 0) {
      builder.AddMissing("", std::move(source_name), std::string(reason::kNoOwnedPod));
    } else if (found < expected) {
      builder.AddMissing("", std::move(source_name), CoverageReason(found, expected));
    }
  };
  for (const Role& role : md.roles) {
    if (!role.command.empty()) continue;
    const size_t found = std::count_if(owned.begin(), owned.end(), [&role](const Pod& pod) {
      return pod.metadata.Label(kLabelComponent) == role.name;
    });
    const size_t expected = static_cast<size_t>(std::max(role.replicas, 1)) *
                            static_cast<size_t>(std::max(role.size, 1));
    check_coverage("engine/" + role.name, found, expected);
  }
  if (md.router) {
    const size_t found = std::count_if(owned.begin(), owned.end(), [&md](const Pod& pod) {
      return pod.metadata.Label(kLabelRouter) == md.router->name;
    });
    check_coverage("router", found,
                   static_cast<size_t>(std::max(md.router->replicas.value_or(1), 1)));
  }

  // 7. The Pod limit.
  if (owned.size() > options.pod_limit) {
    builder.ForcePartial();
    builder.AddMissing("", "pod-discovery", std::string(reason::kPodLimit));
    owned.resize(options.pod_limit);
  }

  // 8. Scrape every advertised endpoint at once; the client bounds concurrency.
  std::vector<std::string> errors(owned.size());
  std::vector<std::string> urls(owned.size());
  std::vector<net::FetchRequest> requests;
  std::vector<size_t> request_pod;
  for (size_t i = 0; i < owned.size(); ++i) {
    if (!MetricsUrl(owned[i], &urls[i], &errors[i])) continue;
    requests.push_back({.url = urls[i], .headers = {{"Accept", "text/plain;version=0.0.4"}}});
    request_pod.push_back(i);
  }
  // Each body is parsed as soon as it arrives, while the other fetches run, and its read time is
  // taken right after its own parse (step 8.10): a slow Pod does not shift a fast one's window.
  std::vector<std::optional<PodMetrics>> reads(owned.size());
  std::vector<ReadTime> read_at(owned.size());
  auto on_result = [&](size_t r, net::FetchResult& result) {
    const size_t i = request_pod[r];
    if (!result.ok() || result.status != 200) {
      if (result.ok()) result.error = net::FetchError::kHttpStatus;
      errors[i] = FetchErrorText(urls[i], result);
      return;
    }
    const Pod& pod = owned[i];
    const ExporterProfile* profile = SelectExporter(md, !pod.metadata.Label(kLabelRouter).empty());
    PodMetrics read;
    const bool parsed = ParsePodMetrics(result.body, profile, &read, &errors[i]);
    std::string().swap(result.body);  // the body is no longer needed: free it now
    if (!parsed) return;
    reads[i] = std::move(read);
    read_at[i] = {options.now(), options.steady_now()};
  };
  impl_->client.FetchAll(requests, deadline, on_result);

  // 9. Merge in Pod name order.
  size_t readable = 0;
  for (size_t i = 0; i < owned.size(); ++i) {
    if (!reads[i]) {
      builder.AddMissing(owned[i].metadata.name, "scrape", errors[i]);
      continue;
    }
    ++readable;
    builder.MergePod(owned[i], *reads[i], read_at[i]);
  }
  // 10.
  if (readable == 0) {
    return ApiStatus::Unavailable("all ModelDeployment metrics Pods are unreadable: " + errors[0]);
  }
  // 11-12.
  *out = builder.Finish(options.now());
  return ApiStatus::Ok();
}

}  // namespace modelmetrics::deployment
