// See aggregator.h. Step numbers refer to §2.2.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#include "aggregation/aggregator.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "aggregation/baseline_store.h"
#include "merge.h"
#include "scrape_source.h"

namespace modelmetrics::deployment {
namespace {

// Kubernetes' error for a lookup that failed for a reason other than absence.
Status OwnershipError(const Status& status) {
  return status.code() >= 400 ? status : Status::Internal(status.message());
}

// One request's view of the object source: every ReplicaSet and Deployment is read once, however
// many router Pods name it (a router's replicas share both), so discovery costs a bounded number
// of API calls.
class MemoizedOwners {
 public:
  explicit MemoizedOwners(ObjectSource* source) : source_(source) {}

  Status GetReplicaSet(std::string_view ns, std::string_view name, ReplicaSet* out) {
    return Get(&replica_sets_, ns, name, out, &ObjectSource::GetReplicaSet);
  }
  Status GetDeployment(std::string_view ns, std::string_view name, Deployment* out) {
    return Get(&deployments_, ns, name, out, &ObjectSource::GetDeployment);
  }

 private:
  template <typename T>
  using Cache = std::map<std::string, std::pair<Status, T>, std::less<>>;

  template <typename T, typename Getter>
  Status Get(Cache<T>* cache, std::string_view ns, std::string_view name, T* out, Getter getter) {
    auto it = cache->find(name);
    if (it == cache->end()) {
      T object;
      Status status = (source_->*getter)(ns, name, &object);
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
Status RouterPodOwned(MemoizedOwners* source, const ModelDeployment& md, const Pod& pod,
                      bool* owned) {
  *owned = false;
  if (!md.router || pod.metadata.Label(kLabelRouter) != md.router->name) return Status::Ok();
  const OwnerReference* rs_ref = pod.metadata.Controller();
  if (rs_ref == nullptr || rs_ref->kind != "ReplicaSet") return Status::Ok();
  ReplicaSet rs;
  Status status = source->GetReplicaSet(md.metadata.namespace_, rs_ref->name, &rs);
  if (status.not_found()) return Status::Ok();
  if (!status.ok()) return OwnershipError(status);
  if (rs.metadata.uid != rs_ref->uid) return Status::Ok();
  const OwnerReference* deployment_ref = rs.metadata.Controller();
  if (deployment_ref == nullptr || deployment_ref->kind != "Deployment" ||
      deployment_ref->name != md.metadata.name + "-router") {
    return Status::Ok();
  }
  Deployment deployment;
  status = source->GetDeployment(md.metadata.namespace_, deployment_ref->name, &deployment);
  if (status.not_found()) return Status::Ok();
  if (!status.ok()) return OwnershipError(status);
  if (deployment.metadata.uid != deployment_ref->uid) return Status::Ok();
  const OwnerReference* md_ref = deployment.metadata.Controller();
  *owned = md_ref != nullptr && md_ref->kind == "ModelDeployment" && md_ref->uid == md.metadata.uid;
  return Status::Ok();
}

// Step 3, engine Pods: a role with no command, and the ModelDeployment as controller.
bool EnginePodOwned(const ModelDeployment& md, const Pod& pod) {
  const Role* role = md.FindRole(pod.metadata.Label(kLabelComponent));
  if (role == nullptr || !role->command.empty()) return false;
  const OwnerReference* ref = pod.metadata.Controller();
  return ref != nullptr && ref->kind == "ModelDeployment" && ref->uid == md.metadata.uid;
}

// Steps 2-3 of Get: the deployment's Pods by the name labels, sorted by name, owned ones only.
Status OwnedPods(ObjectSource* source, const ModelDeployment& md, std::string_view ns,
                 std::vector<Pod>* owned) {
  std::vector<Pod> pods;
  const std::string selector =
      fmt::format("{}={},{}={}", kLabelName, kLabelNameValue, kLabelInstance, md.metadata.name);
  Status status = source->ListPods(ns, selector, &pods);
  if (!status.ok()) return Status::Internal("list ModelDeployment Pods: " + status.message());
  std::sort(pods.begin(), pods.end(),
            [](const Pod& a, const Pod& b) { return a.metadata.name < b.metadata.name; });

  // Owned Pods only.
  MemoizedOwners owners(source);
  for (Pod& pod : pods) {
    bool is_owned = false;
    if (!pod.metadata.Label(kLabelRouter).empty()) {
      status = RouterPodOwned(&owners, md, pod, &is_owned);
      if (!status.ok()) return status;
    } else {
      is_owned = EnginePodOwned(md, pod);
    }
    if (is_owned) owned->push_back(std::move(pod));
  }
  return Status::Ok();
}

// Steps 5-6 of Get: a missing[] entry per role (and the router) with fewer owned Pods than it
// declares.
void CheckCoverage(const ModelDeployment& md, const std::vector<Pod>& owned,
                   SnapshotBuilder* builder) {
  auto check_coverage = [builder](std::string source_name, size_t found, size_t expected) {
    if (found == 0) {
      builder->AddMissing("", std::move(source_name), std::string(reason::kNoOwnedPod));
    } else if (found < expected) {
      builder->AddMissing("", std::move(source_name), CoverageReason(found, expected));
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
}

std::shared_ptr<PodMetricsSource> DirectScrape(const AggregatorOptions& o) {
  return std::make_shared<ScrapeSource>(ScrapeOptions{.pod_limit = o.pod_limit,
                                                      .max_in_flight = o.max_in_flight,
                                                      .fetch_timeout = o.fetch_timeout,
                                                      .max_body_bytes = o.max_body_bytes,
                                                      .ca_file = o.ca_file,
                                                      .now = o.now,
                                                      .steady_now = o.steady_now});
}

}  // namespace

struct Aggregator::Impl {
  ObjectSource* source;
  AggregatorOptions options;
  BaselineStore* store;
  std::shared_ptr<PodMetricsSource> pods;

  Impl(ObjectSource* s, AggregatorOptions o)
      : source(s),
        options(std::move(o)),
        store(options.baselines != nullptr ? options.baselines : BaselineStore::Global()),
        pods(options.pod_source != nullptr ? options.pod_source : DirectScrape(options)) {}
};

Aggregator::Aggregator(ObjectSource* source, AggregatorOptions options)
    : impl_(std::make_unique<Impl>(source, std::move(options))) {}

Aggregator::~Aggregator() = default;

Status Aggregator::Get(std::string_view ns, std::string_view name, Snapshot* out,
                       std::optional<SteadyClock::time_point> request_deadline) {
  const AggregatorOptions& options = impl_->options;
  SteadyClock::time_point deadline = SteadyClock::now() + options.request_timeout;
  if (request_deadline) deadline = std::min(deadline, *request_deadline);
  ObjectSource* source = impl_->source;

  // 1. The ModelDeployment; NotFound and every other error pass through unchanged.
  ModelDeployment md;
  Status status = source->GetModelDeployment(ns, name, &md);
  if (!status.ok()) return status;

  // 2-3. Its owned Pods, by name.
  std::vector<Pod> owned;
  status = OwnedPods(source, md, ns, &owned);
  if (!status.ok()) return status;
  // 4.
  if (owned.empty()) return Status::Unavailable("ModelDeployment has no owned metrics Pods");
  // The 8 s cover discovery too; a slow API server must not turn into a snapshot of timeouts.
  if (SteadyClock::now() >= deadline) {
    return {504, "Timeout",
            "ModelDeployment metrics request exceeded its time limit while reading objects"};
  }

  // 5-6. Coverage, before truncation; extra Pods are not reported.
  SnapshotBuilder builder(md, impl_->store);
  CheckCoverage(md, owned, &builder);

  // 7. The Pod limit (the source's: 64 for direct scraping).
  if (owned.size() > impl_->pods->pod_limit()) {
    builder.ForcePartial();
    builder.AddMissing("", std::string(source::kPodDiscovery), std::string(reason::kPodLimit));
    owned.resize(impl_->pods->pod_limit());
  }

  // 8. One read per Pod, from the Pods themselves or from a store.
  std::vector<PodRead> reads = impl_->pods->Read(md, owned, deadline);
  if (impl_->options.on_pod_read) {
    for (const PodRead& read : reads) impl_->options.on_pod_read(PodOutcomeName(read));
  }

  // 9. Merge in Pod name order.
  size_t readable = 0;
  for (size_t i = 0; i < owned.size(); ++i) {
    if (!reads[i].metrics) {
      builder.AddFailedPod(owned[i], reads[i].error);
      continue;
    }
    ++readable;
    builder.MergePod(owned[i], *reads[i].metrics, reads[i].at, reads[i].baselines.get());
  }
  // 10.
  if (readable == 0) {
    return Status::Unavailable("all ModelDeployment metrics Pods are unreadable: " +
                               reads[0].error.str());
  }
  // 11-12.
  *out = builder.Finish(options.now());
  return Status::Ok();
}

}  // namespace modelmetrics::deployment
