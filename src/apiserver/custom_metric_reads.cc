// See custom_metric_reads.h.
#include "custom_metric_reads.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "api_responses.h"
#include "base/mutex.h"

namespace modelmetrics::deployment {
namespace {

StatusDetails Details(const CustomMetricsRequest& request) {
  return {
      .name = request.name, .group = std::string(kCustomMetricsGroup), .kind = request.resource};
}

// prometheus-adapter's words: "the server could not find the metric M for RESOURCE[ NAME]".
// `named`: the object is named (not for a metric the resource does not have at all).
Status MetricNotFound(const CustomMetricsRequest& request, std::string_view why = "",
                      bool named = true) {
  std::string message = fmt::format("the server could not find the metric {} for {}",
                                    request.metric, request.resource);
  if (named && request.name != "*") message += " " + request.name;
  if (!why.empty()) fmt::format_to(std::back_inserter(message), ": {}", why);
  return Status::NotFound(std::move(message));
}

MetricItem Item(std::string_view kind, const CustomMetricsRequest& request, std::string name,
                const MetricScope& scope, const MetricReading& reading) {
  return {.kind = std::string(kind),
          .ns = request.ns,
          .name = std::move(name),
          .metric = request.metric,
          .scope = scope,
          .reading = reading};
}

}  // namespace

// The items of several reads, answered when the last one is in. A pods metric fails as a whole
// when a read of one of its Pods' deployments failed (other than NotFound): the HPA would count
// those Pods as 0 on a scale-up, so it gets the error instead (and holds). An object list leaves
// such a deployment out.
struct CustomMetricReads::Gather {
  Gather(CustomMetricsVersion v, net::Responder r, size_t reads, StatusDetails d)
      : version(v), respond(std::move(r)), details(std::move(d)), remaining(reads) {}

  void Done(std::vector<MetricItem> found) {
    base::MutexLock lock(&mu);
    std::move(found.begin(), found.end(), std::back_inserter(items));
    if (--remaining > 0) return;
    if (failure) {
      const net::HttpResponse response = *failure;
      lock.Unlock();
      return respond(response);
    }
    std::sort(items.begin(), items.end(),
              [](const MetricItem& a, const MetricItem& b) { return a.name < b.name; });
    const std::string body = MetricValueListJson(version, items);
    lock.Unlock();
    respond(JsonResponse(200, body));
  }

  // The first failed read's answer (pods metrics only), then Done({}).
  void Failed(net::HttpResponse response) {
    {
      base::MutexLock lock(&mu);
      if (!failure) failure = std::move(response);
    }
    Done({});
  }

  const CustomMetricsVersion version;
  const net::Responder respond;
  const StatusDetails details;
  base::Mutex mu;
  size_t remaining GUARDED_BY(mu);
  std::vector<MetricItem> items GUARDED_BY(mu);
  std::optional<net::HttpResponse> failure GUARDED_BY(mu);
};

CustomMetricReads::CustomMetricReads(SharedReads* reads, ObjectSource* objects,
                                     std::chrono::milliseconds reuse,
                                     std::function<void(SharedReads::Admission)> on_admission)
    : reads_(reads), objects_(objects), reuse_(reuse), on_admission_(std::move(on_admission)) {}

SharedReads::Admission CustomMetricReads::Submit(const std::string& ns, const std::string& name,
                                                 SteadyTime deadline, SharedReads::Callback done) {
  const SharedReads::Admission admission =
      reads_->Submit(ns, name, deadline, std::move(done), reuse_);
  if (on_admission_) on_admission_(admission);
  return admission;
}

void CustomMetricReads::Serve(const CustomMetricsRequest& request, const MetricScope& scope,
                              const std::string& label_selector, SteadyTime deadline,
                              const net::Responder& respond) {
  const StatusDetails details = Details(request);
  const SnapshotMetric* metric = FindSnapshotMetric(request.metric);
  const bool pods = request.kind == CustomMetricsPath::kPodsMetric;
  if (metric == nullptr || (pods && !metric->PerPod())) {
    return respond(StatusResponse(MetricNotFound(request, "", /*named=*/false), &details));
  }
  if (!pods && request.name != "*") return ServeOne(request, *metric, scope, deadline, respond);
  if (objects_ == nullptr) {
    return respond(StatusResponse(
        {501, "NotImplemented", "this server has no object source to list objects from"},
        &details));
  }
  ServeMany(request, *metric, scope, label_selector, deadline, respond);
}

void CustomMetricReads::ServeOne(const CustomMetricsRequest& request, const SnapshotMetric& metric,
                                 const MetricScope& scope, SteadyTime deadline,
                                 const net::Responder& respond) {
  const StatusDetails details = Details(request);
  auto done = [request, metric = &metric, scope, details,
               respond](const SharedReads::Result& result) {
    if (!result.status.ok() || result.snapshot == nullptr) {
      return respond(
          StatusResponse(result.status, &details, /*with_details=*/true, result.retry ? 1 : 0));
    }
    MetricReading reading;
    if (Status read = ReadMetric(*result.snapshot, *metric, scope.scope, &reading); !read.ok()) {
      return respond(StatusResponse(MetricNotFound(request, read.message()), &details));
    }
    respond(JsonResponse(
        200, MetricValueListJson(request.version, {Item(kModelDeploymentKind, request, request.name,
                                                        scope, reading)})));
  };
  if (Submit(request.ns, request.name, deadline, std::move(done)) ==
      SharedReads::Admission::kBusy) {
    respond(TooManyRequests(&details));
  }
}

void CustomMetricReads::ServeMany(const CustomMetricsRequest& request, const SnapshotMetric& metric,
                                  const MetricScope& scope, const std::string& label_selector,
                                  SteadyTime deadline, const net::Responder& respond) {
  const StatusDetails details = Details(request);
  const bool pods = request.kind == CustomMetricsPath::kPodsMetric;
  // Deployment name -> the Pods asked about (pods metrics) or none (object metrics).
  std::map<std::string, std::vector<std::string>> wanted;
  if (pods) {
    std::vector<Pod> selected;
    if (Status listed = objects_->ListPods(request.ns, label_selector, &selected); !listed.ok()) {
      return respond(StatusResponse(listed, &details));
    }
    for (const Pod& pod : selected) {
      const std::string_view instance = pod.metadata.Label(kLabelInstance);
      if (pod.metadata.Label(kLabelName) != kLabelNameValue || instance.empty()) continue;
      wanted[std::string(instance)].push_back(pod.metadata.name);
    }
    if (wanted.empty()) return respond(StatusResponse(MetricNotFound(request), &details));
  } else {
    std::vector<ModelDeployment> deployments;
    if (Status listed = objects_->ListModelDeployments(request.ns, &deployments); !listed.ok()) {
      return respond(StatusResponse(listed, &details));
    }
    for (const ModelDeployment& md : deployments) wanted[md.metadata.name];
  }
  auto gather = std::make_shared<Gather>(request.version, respond, wanted.size() + 1, details);
  for (auto& [name, pod_names] : wanted) {
    auto done = [gather, request, metric = &metric, scope, name = name, pods,
                 pod_names = pod_names](const SharedReads::Result& result) {
      std::vector<MetricItem> found;
      // A deployment that is not there (a Pod's instance label names none) has no Pods to add.
      if (pods && !result.status.ok() && !result.status.not_found()) {
        return gather->Failed(StatusResponse(result.status, &gather->details,
                                             /*with_details=*/true, result.retry ? 1 : 0));
      }
      if (result.status.ok() && result.snapshot != nullptr) {
        MetricReading reading;
        if (pod_names.empty() &&
            ReadMetric(*result.snapshot, *metric, scope.scope, &reading).ok()) {
          found.push_back(Item(kModelDeploymentKind, request, name, scope, reading));
        }
        for (const std::string& pod : pod_names) {
          const Status read = ReadPodMetric(*result.snapshot, *metric, pod, scope.scope, &reading);
          if (read.ok()) {
            found.push_back(Item("Pod", request, pod, scope, reading));
          } else if (!read.not_found()) {
            return gather->Failed(StatusResponse(read, &gather->details));
          }
        }
      }
      gather->Done(std::move(found));
    };
    // A refused read (the server is busy) leaves its objects out, as one without a value; a pods
    // metric fails with 429.
    if (Submit(request.ns, name, deadline, done) == SharedReads::Admission::kBusy) {
      if (pods) {
        gather->Failed(TooManyRequests(&gather->details));
      } else {
        gather->Done({});
      }
    }
  }
  gather->Done({});  // the count's extra one: no answer before every read is submitted
}

}  // namespace modelmetrics::deployment
