// The aggregated API server for ModelDeploymentMetrics and the serve configuration (see
// api_server.h).
#include "apiserver/api_server.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api_discovery.h"
#include "api_responses.h"
#include "base/duration.h"
#include "base/file.h"
#include "base/mutex.h"
#include "base/text.h"
#include "base/worker_pool.h"
#include "custom_metric_reads.h"
#include "custom_metrics_api.h"
#include "json_dump.h"
#include "kube/kube_names.h"
#include "kube/yaml.h"

namespace modelmetrics::deployment {
namespace {

using OrderedJson = nlohmann::ordered_json;

net::HttpResponse Unauthorized() {
  return StatusResponse({401, "Unauthorized", "Unauthorized"}, nullptr, /*with_details=*/false);
}

net::HttpResponse UnknownPath() {
  return StatusResponse(Status::NotFound("the server could not find the requested resource"),
                        nullptr);
}

net::HttpResponse MethodNotAllowed(const StatusDetails* details) {
  net::HttpResponse response = StatusResponse(
      {405, "MethodNotAllowed", "the server does not allow this method on the requested resource"},
      details);
  response.headers.emplace_back("Allow", "GET");
  return response;
}

std::string VersionJson() {
  OrderedJson info{{"major", "0"},    {"minor", "1"},       {"gitVersion", "v0.1.0"},
                   {"gitCommit", ""}, {"gitTreeState", ""}, {"buildDate", ""},
                   {"goVersion", ""}, {"compiler", "c++"},  {"platform", "linux/amd64"}};
  return DumpJson(info);
}

// Kubernetes' forbidden message: `modeldeployments.worker.gpustack.ai "chat" is forbidden: User
// "bob" cannot get resource "modeldeployments/metrics" in API group "worker.gpustack.ai" in the
// namespace "team"[: reason]`.
std::string ForbiddenMessage(const AuthorizationRequest& request, std::string_view reason) {
  const std::string resource =
      request.subresource.empty() ? request.resource : request.resource + "/" + request.subresource;
  std::string message = fmt::format(
      "{}.{} \"{}\" is forbidden: User \"{}\" cannot {} resource \"{}\" in API group \"{}\" in "
      "the namespace \"{}\"",
      request.resource, request.api_group, request.name, request.user.name, request.verb, resource,
      request.api_group, request.ns);
  if (!reason.empty()) fmt::format_to(std::back_inserter(message), ": {}", reason);
  return message;
}

// `NotFound` -> `not_found`: a Status reason as a metric label value.
std::string SnakeCase(std::string_view reason) {
  std::string out;
  for (char c : reason) {
    if (c >= 'A' && c <= 'Z') {
      if (!out.empty()) out.push_back('_');
      out.push_back(static_cast<char>(c - 'A' + 'a'));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// A value echoed in an error message, cut so a long path cannot make a long answer.
std::string Echo(std::string_view value) {
  constexpr size_t kMax = 100;
  if (value.size() <= kMax) return std::string(value);
  return std::string(value.substr(0, kMax)) + "...";
}

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> segments;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (true) {
    const size_t slash = path.find('/');
    segments.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return segments;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Status

std::string StatusJson(const Status& status, const StatusDetails* details, bool with_details,
                       int retry_after_seconds) {
  const int code = ErrorCode(status.code());
  std::string reason = status.reason().empty() || code != status.code()
                           ? std::string(ReasonForCode(code))
                           : status.reason();
  std::string message = status.message().empty() ? reason : status.message();
  OrderedJson json{{"kind", "Status"},
                   {"apiVersion", "v1"},
                   {"metadata", OrderedJson::object()},
                   {"status", "Failure"},
                   {"message", std::move(message)}};
  if (!reason.empty()) json["reason"] = std::move(reason);
  if (with_details) {
    OrderedJson json_details = OrderedJson::object();
    if (details != nullptr) {
      json_details["name"] = details->name;
      json_details["group"] = details->group;
      json_details["kind"] = details->kind;
    }
    if (code == 429 && retry_after_seconds == 0) retry_after_seconds = 1;
    if (retry_after_seconds > 0) json_details["retryAfterSeconds"] = retry_after_seconds;
    json["details"] = std::move(json_details);
  }
  json["code"] = code;
  return DumpJson(json);
}

// ---------------------------------------------------------------------------------------------
// ApiServer

struct ApiServer::Impl {
  ApiServerOptions options;
  SnapshotFunction snapshot;
  std::unique_ptr<Authenticator> authenticator;
  std::unique_ptr<Authorizer> authorizer;
  std::unique_ptr<net::HttpServer> http;
  std::unique_ptr<base::WorkerPool> authorizing;   // requests whose sender is known locally
  std::unique_ptr<base::WorkerPool> reviewing;     // requests waiting for a TokenReview or SAR
  std::atomic<int64_t> last_review_refusal_ms{0};  // steady ms of the last review refused
  std::unique_ptr<SharedReads> reads;
  std::unique_ptr<CustomMetricReads> custom;  // with options.custom_metrics
  std::unique_ptr<OpenApiDocuments> openapi;
  std::shared_ptr<ServerMetrics> metrics;
  HealthChecks livez{"livez"}, readyz{"readyz"}, healthz{"healthz"};
  std::atomic<bool> stopping{false};
  bool started = false;

  void AddHealthChecks();
  // Counts the request in the server's metrics when `respond` answers it.
  net::Responder Counted(const net::HttpRequest& request, net::Responder respond);
  // A GET route (a prefix when it ends in '/') whose answers are counted.
  void Route(const std::string& path_or_prefix,
             std::function<net::HttpResponse(const net::HttpRequest&)> handler);

  void Serve(const net::HttpRequest& request, net::Responder respond);
  // Queues `job` on the review pool within the share of `source`; false (counted, and shown by
  // /readyz) when the share or the pool is full.
  bool SubmitReview(const std::string& source, std::function<void()> job);
  // Whether `request` waited in a queue past its budget (it is then not reviewed late).
  bool WaitedTooLong(const net::HttpRequest& request) const {
    return request.received_at != SteadyTime() &&
           SteadyClock::now() - request.received_at > options.request_timeout;
  }
  // Calls `then` with the authoriser's decision on `access`: here when the authoriser needs no
  // other server or this already is a review job (`reviewing`); else from a review job, so
  // requests decided locally never wait behind a SubjectAccessReview. 429 when refused there.
  using Decided = std::function<void(const AuthorizationRequest&, const AuthorizationDecision&)>;
  void Decide(const net::HttpRequest& request, bool reviewing, AuthorizationRequest access,
              Decided then, const net::Responder& respond, const StatusDetails* details);
  // Authorises `access` (a non-resource path), then answers with `answer()` (403 / 500 / 429
  // as for a resource request).
  void AuthorizeNonResource(const net::HttpRequest& request, bool reviewing,
                            AuthorizationRequest access, std::function<net::HttpResponse()> answer,
                            const net::Responder& respond);
  // On a request pool: authenticates (unless `known` already names the sender), then routes.
  void Dispatch(const net::HttpRequest& request, const net::Responder& respond,
                const UserInfo* known);
  // The readiness line of the review queue: "" when it keeps up, else how it is saturated.
  std::string ReviewsDegraded() const;
  // Discovery, the OpenAPI documents and /metrics, once authorised.
  net::HttpResponse NonResource(const net::HttpRequest& request);
  // `resource`/`subresource` as authorised: modeldeployments/metrics or modeldeploymentmetrics.
  void ServeMetrics(const net::HttpRequest& request, bool reviewing, UserInfo user,
                    std::string_view resource, std::string_view subresource, std::string ns,
                    std::string name, const net::Responder& respond);
  // Once `access` is decided: 500 / 403, or the shared read of its deployment.
  void ReadIfAllowed(const AuthorizationRequest& access, const AuthorizationDecision& decision,
                     const StatusDetails& details, SteadyTime deadline,
                     const net::Responder& respond);
  SharedReads::Result Read(const std::string& ns, const std::string& name, SteadyTime deadline);
  // A custom metrics API metric path (custom_metrics_api.h), authorised as `get` on
  // RESOURCE/METRIC in custom.metrics.k8s.io, as kube-apiserver's RBAC sees it.
  void ServeCustomMetric(const net::HttpRequest& request, bool reviewing, UserInfo user,
                         CustomMetricsRequest custom_request, const net::Responder& respond);
};

namespace {

// Runs `fn`, answering 500 for what it throws (a pool job must not end its thread).
template <typename F>
void AnswerErrors(const net::Responder& respond, F&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    respond(StatusResponse(Status::Internal(e.what()), nullptr));
  } catch (...) {
    respond(StatusResponse(Status::Internal("unknown error"), nullptr));
  }
}

net::HttpResponse ServerBusy() {
  return StatusResponse({503, "ServiceUnavailable", "the server is busy; try again"}, nullptr,
                        /*with_details=*/true, /*retry_after_seconds=*/1);
}

net::HttpResponse ReadResponse(const SharedReads::Result& result, const StatusDetails& details) {
  if (!result.status.ok() || result.body == nullptr) {
    return StatusResponse(result.status, &details, /*with_details=*/true, result.retry ? 1 : 0);
  }
  return JsonResponse(200, *result.body);
}

// A resource request the authoriser did not allow: 500 when it could not decide, else 403 with
// Kubernetes' message; nullopt when allowed.
std::optional<net::HttpResponse> Refusal(const AuthorizationRequest& access,
                                         const AuthorizationDecision& decision,
                                         const StatusDetails& details) {
  if (!decision.error.ok()) {
    return StatusResponse(
        Status::Internal(fmt::format("Internal error occurred: {}", decision.error.message())),
        &details);
  }
  if (!decision.allowed) {
    return StatusResponse({403, "Forbidden", ForbiddenMessage(access, decision.reason)}, &details);
  }
  return std::nullopt;
}

net::HttpResponse NotStartedInTime(const StatusDetails& details) {
  return ReadResponse({.status = SharedReads::NotStartedInTime(), .body = nullptr, .retry = true},
                      details);
}

}  // namespace

void ApiServer::Impl::Serve(const net::HttpRequest& request, net::Responder respond) {
  // Who sent it, when that needs nobody else (certificates, the front proxy's headers, a cached
  // token): those requests never queue behind reviews; the rest go to the review pool,
  // where one client address holds at most its share.
  UserInfo user;
  std::optional<bool> local;
  try {
    local = authenticator->AuthenticateLocally(request, &user);
  } catch (const std::exception& e) {
    return respond(StatusResponse(Status::Internal(e.what()), nullptr));
  }
  if (local && !*local) return respond(Unauthorized());
  auto job = [this, &request, respond,
              known = local ? std::optional<UserInfo>(std::move(user)) : std::nullopt] {
    AnswerErrors(respond, [&] { Dispatch(request, respond, known ? &*known : nullptr); });
  };
  // A token to review: the share of its client's address.
  const bool queued = local ? authorizing->TrySubmit(std::move(job))
                            : SubmitReview(request.remote_address, std::move(job));
  if (!queued) respond(TooManyRequests(nullptr));
}

bool ApiServer::Impl::SubmitReview(const std::string& source, std::function<void()> job) {
  if (reviewing->TrySubmit(std::move(job), source,
                           std::max<size_t>(1, options.max_reviewing / kReviewShares))) {
    return true;
  }
  metrics->ReviewRefused();
  last_review_refusal_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now().time_since_epoch())
          .count();
  return false;
}

void ApiServer::Impl::Decide(const net::HttpRequest& request, bool reviewing,
                             AuthorizationRequest access, Decided then,
                             const net::Responder& respond, const StatusDetails* details) {
  if (!reviewing) {
    if (std::optional<AuthorizationDecision> decision = authorizer->AuthorizeLocally(access)) {
      return then(access, *decision);
    }
    const std::string source_user = access.user.name;
    auto job = [this, &request, respond, then, access = std::move(access)] {
      if (WaitedTooLong(request)) return respond(ServerBusy());
      AnswerErrors(respond, [&] { then(access, authorizer->Authorize(access)); });
    };
    // An access to review: the share of its user (every front-proxy request comes from
    // kube-apiserver's address, so one user's misses must not take every user's places).
    if (!SubmitReview("user:" + source_user, std::move(job))) respond(TooManyRequests(details));
    return;
  }
  then(access, authorizer->Authorize(access));
}

std::string ApiServer::Impl::ReviewsDegraded() const {
  const size_t waiting = reviewing ? reviewing->in_flight() : 0;
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now().time_since_epoch())
          .count();
  const int64_t last = last_review_refusal_ms.load();
  const bool refused_lately = last != 0 && now_ms - last < 10000;
  if (!refused_lately && waiting < options.max_reviewing / 2) return "";
  return "degraded: " + std::to_string(waiting) +
         " requests waiting for a TokenReview or SubjectAccessReview" +
         (refused_lately ? ", some refused in the last 10 s" : "") +
         " (requests needing no review are not delayed)";
}

void ApiServer::Impl::Dispatch(const net::HttpRequest& request, const net::Responder& respond,
                               const UserInfo* known) {
  // A request that waited out its budget in the queue is not authenticated (a TokenReview) late.
  if (WaitedTooLong(request)) return respond(ServerBusy());
  UserInfo user;
  if (known != nullptr) {
    user = *known;
  } else if (!authenticator->Authenticate(request, &user)) {
    return respond(Unauthorized());
  }

  std::string_view path = request.path;
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  CustomMetricsRequest custom_request;
  if (options.custom_metrics) {
    if (Status parsed = ParseCustomMetricsPath(path, &custom_request); !parsed.ok()) {
      return respond(StatusResponse(parsed, nullptr));
    }
    if (custom_request.kind == CustomMetricsPath::kObjectMetric ||
        custom_request.kind == CustomMetricsPath::kPodsMetric) {
      return ServeCustomMetric(request, known == nullptr, std::move(user),
                               std::move(custom_request), respond);
    }
  }
  const bool discovery = path == "/apis" || path == options.api.GroupPath() ||
                         path == options.api.VersionPath() ||
                         custom_request.kind != CustomMetricsPath::kNone;
  const bool document = path.starts_with("/openapi/") && openapi->Serve(request).has_value();
  if (discovery || document || path == "/metrics") {
    if (request.method != "GET") return respond(MethodNotAllowed(nullptr));
    AuthorizationRequest access{.user = std::move(user), .verb = "get", .path = std::string(path)};
    return AuthorizeNonResource(
        request, known == nullptr, std::move(access),
        [this, &request] { return NonResource(request); }, respond);
  }
  // /apis/GROUP/VERSION/namespaces/{ns}/modeldeployments/{name}/metrics, or  //
  // /apis/GROUP/VERSION/namespaces/{ns}/modeldeployments/{name}/metrics, or
  // /apis/GROUP/VERSION/namespaces/{ns}/modeldeploymentmetrics/{name}
  const std::vector<std::string_view> segments = SplitPath(request.path);  // no trailing '/' here
  const bool in_api = segments.size() >= 7 && segments[0] == "apis" &&
                      segments[1] == options.api.group && segments[2] == options.api.version &&
                      segments[3] == "namespaces";
  if (in_api && segments.size() == 8 && segments[5] == kMetricsResource &&
      segments[7] == kMetricsSubresource) {
    return ServeMetrics(request, known == nullptr, std::move(user), kMetricsResource,
                        kMetricsSubresource, std::string(segments[4]), std::string(segments[6]),
                        respond);
  }
  if (in_api && segments.size() == 7 && segments[5] == kMetricsObjectResource) {
    return ServeMetrics(request, known == nullptr, std::move(user), kMetricsObjectResource, "",
                        std::string(segments[4]), std::string(segments[6]), respond);
  }
  respond(UnknownPath());
}

net::HttpResponse ApiServer::Impl::NonResource(const net::HttpRequest& request) {
  if (std::optional<net::HttpResponse> document = openapi->Serve(request)) return *document;
  std::string_view path = request.path;
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (path == "/metrics") {
    net::HttpResponse response;
    response.content_type = std::string(kTextContentType);
    response.body = metrics->Render(Format::kText);
    return response;
  }
  // Discovery, with an ETag as kube-apiserver's: kube-aggregator re-fetches /apis every minute.
  net::HttpResponse response = JsonResponse(200, "");
  CustomMetricsRequest custom_request;
  if (options.custom_metrics) (void)ParseCustomMetricsPath(path, &custom_request);
  if (path == "/apis") {
    const DiscoveryForm form = NegotiateDiscovery(request.headers.Get("Accept"));
    response.body = ApisJson(options.api, form, options.custom_metrics);
    response.content_type = DiscoveryContentType(form);
  } else if (custom_request.kind == CustomMetricsPath::kGroup) {
    response.body = CustomMetricsGroupJson();
  } else if (custom_request.kind == CustomMetricsPath::kResourceList) {
    response.body = CustomMetricsResourceListJson(custom_request.version);
  } else {
    response.body = path == options.api.GroupPath() ? ApiGroupJson(options.api)
                                                    : ApiResourceListJson(options.api);
  }
  const std::string etag = "\"" + DocumentHash(response.body) + "\"";
  if (request.headers.Get("If-None-Match") == etag) {
    response.status = 304;
    response.body.clear();
  }
  response.headers.emplace_back("ETag", etag);
  response.headers.emplace_back("Vary", "Accept");
  return response;
}

void ApiServer::Impl::AuthorizeNonResource(const net::HttpRequest& request, bool reviewing,
                                           AuthorizationRequest access,
                                           std::function<net::HttpResponse()> answer,
                                           const net::Responder& respond) {
  auto then = [respond, answer = std::move(answer)](const AuthorizationRequest& access,
                                                    const AuthorizationDecision& decision) {
    if (!decision.error.ok()) {
      return respond(StatusResponse(
          Status::Internal(fmt::format("Internal error occurred: {}", decision.error.message())),
          nullptr));
    }
    if (!decision.allowed) {
      // Kubernetes' words for a non-resource path.
      std::string message = fmt::format("forbidden: User \"{}\" cannot get path \"{}\"",
                                        access.user.name, Echo(access.path));
      if (!decision.reason.empty()) message += ": " + decision.reason;
      return respond(StatusResponse({403, "Forbidden", std::move(message)}, nullptr));
    }
    respond(answer());
  };
  Decide(request, reviewing, std::move(access), std::move(then), respond, nullptr);
}

void ApiServer::Impl::ServeMetrics(const net::HttpRequest& request, bool reviewing, UserInfo user,
                                   std::string_view resource, std::string_view subresource,
                                   std::string ns, std::string name,
                                   const net::Responder& respond) {
  const StatusDetails details{
      .name = name, .group = options.api.group, .kind = std::string(resource)};
  if (request.method != "GET") return respond(MethodNotAllowed(&details));
  // Names are checked before anything (authoriser, API, Pods) sees them.
  if (std::string problem = ValidateDns1123Label(ns); !problem.empty()) {
    return respond(StatusResponse(
        Status::BadRequest(fmt::format("invalid namespace \"{}\": {}", Echo(ns), problem)),
        &details));
  }
  if (std::string problem = ValidateDns1123Subdomain(name); !problem.empty()) {
    return respond(StatusResponse(
        Status::BadRequest(fmt::format("invalid name \"{}\": {}", Echo(name), problem)), &details));
  }
  // The budget counts from the request's arrival, not from when a thread gets to it.
  const SteadyTime arrived =
      request.received_at == SteadyTime() ? SteadyClock::now() : request.received_at;
  const SteadyTime deadline = arrived + options.request_timeout;
  AuthorizationRequest access{.user = std::move(user),
                              .verb = "get",
                              .api_group = options.api.group,
                              .api_version = options.api.version,
                              .resource = std::string(resource),
                              .subresource = std::string(subresource),
                              .ns = std::move(ns),
                              .name = std::move(name)};
  if (deadline - SteadyClock::now() < options.min_read_budget) {
    return respond(NotStartedInTime(details));
  }
  auto then = [this, details, deadline, respond](const AuthorizationRequest& access,
                                                 const AuthorizationDecision& decision) {
    ReadIfAllowed(access, decision, details, deadline, respond);
  };
  Decide(request, reviewing, std::move(access), std::move(then), respond, &details);
}

void ApiServer::Impl::ServeCustomMetric(const net::HttpRequest& request, bool reviewing,
                                        UserInfo user, CustomMetricsRequest custom_request,
                                        const net::Responder& respond) {
  const StatusDetails details{.name = custom_request.name,
                              .group = std::string(kCustomMetricsGroup),
                              .kind = custom_request.resource};
  if (request.method != "GET") return respond(MethodNotAllowed(&details));
  const std::string& ns = custom_request.ns;
  const std::string& name = custom_request.name;
  std::string problem = ValidateDns1123Label(ns);
  if (problem.empty() && name != "*") problem = ValidateDns1123Subdomain(name);
  MetricScope scope;
  std::vector<std::string> selectors = base::QueryValues(request.query, "metricLabelSelector");
  Status bad = problem.empty()
                   ? Status::Ok()
                   : Status::BadRequest(fmt::format("invalid namespace or name \"{}/{}\": {}",
                                                    Echo(ns), Echo(name), problem));
  if (bad.ok() && selectors.size() > 1) bad = Status::BadRequest("metricLabelSelector given twice");
  if (bad.ok() && !selectors.empty()) bad = MetricSelector(selectors.front(), &scope);
  if (!bad.ok()) return respond(StatusResponse(bad, &details));
  const std::vector<std::string> pods = base::QueryValues(request.query, "labelSelector");
  std::string label_selector = pods.empty() ? "" : pods.front();
  const SteadyTime arrived =
      request.received_at == SteadyTime() ? SteadyClock::now() : request.received_at;
  const SteadyTime deadline = arrived + options.request_timeout;
  if (deadline - SteadyClock::now() < options.min_read_budget) {
    return respond(NotStartedInTime(details));
  }
  AuthorizationRequest access{.user = std::move(user),
                              .verb = "get",
                              .api_group = std::string(kCustomMetricsGroup),
                              .api_version = std::string(VersionName(custom_request.version)),
                              .resource = custom_request.resource,
                              .subresource = custom_request.metric,
                              .ns = ns,
                              .name = name};
  auto then = [this, custom_request = std::move(custom_request), scope = std::move(scope),
               label_selector = std::move(label_selector), details, deadline,
               respond](const AuthorizationRequest& access, const AuthorizationDecision& decision) {
    if (std::optional<net::HttpResponse> refused = Refusal(access, decision, details)) {
      return respond(std::move(*refused));
    }
    custom->Serve(custom_request, scope, label_selector, deadline, respond);
  };
  Decide(request, reviewing, std::move(access), std::move(then), respond, &details);
}

void ApiServer::Impl::ReadIfAllowed(const AuthorizationRequest& access,
                                    const AuthorizationDecision& decision,
                                    const StatusDetails& details, SteadyTime deadline,
                                    const net::Responder& respond) {
  if (std::optional<net::HttpResponse> refused = Refusal(access, decision, details)) {
    return respond(std::move(*refused));
  }
  // A slow review may have used the budget up.
  if (deadline - SteadyClock::now() < options.min_read_budget) {
    return respond(NotStartedInTime(details));
  }
  const SharedReads::Admission admission = reads->Submit(
      access.ns, access.name, deadline, [respond, details](const SharedReads::Result& result) {
        respond(ReadResponse(result, details));
      });
  metrics->SharedRead(SharedReads::AdmissionName(admission));
  if (admission == SharedReads::Admission::kBusy) respond(TooManyRequests(&details));
}

SharedReads::Result ApiServer::Impl::Read(const std::string& ns, const std::string& name,
                                          SteadyTime deadline) {
  Snapshot result;
  const SteadyTime started = SteadyClock::now();
  const Status status = snapshot(ns, name, deadline, &result);
  const std::string outcome = status.ok()            ? (result.partial ? "partial" : "ok")
                              : status.code() == 504 ? "timeout"
                                                     : SnakeCase(status.reason());
  metrics->SnapshotRead(outcome,
                        std::chrono::duration<double>(SteadyClock::now() - started).count());
  if (!status.ok()) return {.status = status};
  // Rendered once per read: every request sharing it gets the same bytes.
  auto body =
      std::make_shared<const std::string>(SnapshotToJson(result, options.api.GroupVersion()));
  return {.status = status,
          .body = std::move(body),
          .snapshot = std::make_shared<const Snapshot>(std::move(result))};
}

ApiServer::ApiServer(ApiServerOptions options, SnapshotFunction snapshot,
                     std::unique_ptr<Authenticator> authenticator,
                     std::unique_ptr<Authorizer> authorizer)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->snapshot = std::move(snapshot);
  impl_->authenticator = std::move(authenticator);
  impl_->authorizer = std::move(authorizer);
}

ApiServer::~ApiServer() { Stop(); }

Status ApiServer::Start() {
  Impl& impl = *impl_;
  if (impl.started) return Status::Internal("the API server was already started");
  if (!impl.authenticator || !impl.authorizer || !impl.snapshot) {
    return Status::InvalidArgument(
        "the API server needs an authenticator, an authoriser and a snapshot");
  }
  if (impl.options.request_timeout <= impl.options.min_read_budget) {
    return Status::InvalidArgument("request_timeout must be longer than min_read_budget");
  }
  if (std::string why = impl.options.api.Validate(); !why.empty()) {
    return Status::InvalidArgument(std::move(why));
  }
  impl.started = true;
  impl.openapi = std::make_unique<OpenApiDocuments>(impl.options.api);
  impl.metrics = impl.options.metrics ? impl.options.metrics : std::make_shared<ServerMetrics>();
  impl.http = std::make_unique<net::HttpServer>(impl.options.http);
  impl.AddHealthChecks();
  impl.Route("/version", [](const net::HttpRequest&) { return JsonResponse(200, VersionJson()); });
  impl.http->RoutePrefixAsync("", "/",
                              [&impl](const net::HttpRequest& request, net::Responder respond) {
                                impl.Serve(request, impl.Counted(request, std::move(respond)));
                              });
  impl.authorizing = std::make_unique<base::WorkerPool>(impl.options.authorizer_threads,
                                                        impl.options.max_authorizing);
  impl.reviewing =
      std::make_unique<base::WorkerPool>(impl.options.review_threads, impl.options.max_reviewing);
  SharedReads::Options reads;
  reads.threads = impl.options.worker_threads;
  reads.max_reads = impl.options.max_in_flight;
  reads.max_waiters = impl.options.max_waiting;
  reads.reuse_for = impl.options.reuse_for;
  reads.min_read_budget = impl.options.min_read_budget;
  if (impl.options.custom_metrics) reads.keep_for = impl.options.metrics_reuse_for;
  impl.reads = std::make_unique<SharedReads>(
      reads, [&impl](const std::string& ns, const std::string& name, SteadyTime deadline) {
        return impl.Read(ns, name, deadline);
      });
  if (impl.options.custom_metrics) {
    impl.custom = std::make_unique<CustomMetricReads>(
        impl.reads.get(), impl.options.objects, impl.options.metrics_reuse_for,
        [metrics = impl.metrics](SharedReads::Admission admission) {
          metrics->SharedRead(SharedReads::AdmissionName(admission));
        });
  }
  if (Status started = impl.http->Start(); !started.ok()) {
    impl.authorizing->Shutdown();
    impl.reviewing->Shutdown();
    impl.reads->Shutdown();
    return started;
  }
  return Status::Ok();
}

void ApiServer::Impl::AddHealthChecks() {
  const auto ping = [] { return std::string(); };
  for (HealthChecks* checks : {&livez, &readyz, &healthz}) checks->Add("ping", ping);
  for (const auto& [name, check] : options.readiness_checks) {
    readyz.Add(name, check);
    healthz.Add(name, check);
  }
  // Reports saturated TokenReviews without failing: requests needing no review still pass.
  for (HealthChecks* checks : {&readyz, &healthz}) {
    checks->AddInformational("reviews", [this] { return ReviewsDegraded(); });
  }
  // Fails from the moment Stop() begins (a probe that reaches a stopping server sees why).
  readyz.Add("shutdown", [this] {
    return stopping.load() ? std::string("the server is shutting down") : std::string();
  });
  for (HealthChecks* checks : {&livez, &readyz, &healthz}) {
    const std::string root = "/" + checks->endpoint();
    Route(root,
          [checks](const net::HttpRequest& request) { return checks->Serve("", request.query); });
    Route(root + "/", [checks, root](const net::HttpRequest& request) {
      return checks->Serve(std::string_view(request.path).substr(root.size() + 1), request.query);
    });
  }
}

net::Responder ApiServer::Impl::Counted(const net::HttpRequest& request, net::Responder respond) {
  metrics->RequestStarted();
  const SteadyTime arrived =
      request.received_at == SteadyTime() ? SteadyClock::now() : request.received_at;
  return net::Responder([metrics = metrics, respond = std::move(respond), arrived,
                         method = request.method,
                         path_class = ClassifyPath(request.path)](net::HttpResponse response) {
    metrics->RequestFinished(method, path_class, response.status,
                             std::chrono::duration<double>(SteadyClock::now() - arrived).count());
    respond(std::move(response));
  });
}

void ApiServer::Impl::Route(const std::string& path_or_prefix,
                            std::function<net::HttpResponse(const net::HttpRequest&)> handler) {
  auto counted = [this, handler = std::move(handler)](const net::HttpRequest& request,
                                                      net::Responder respond) {
    Counted(request, std::move(respond))(handler(request));
  };
  if (path_or_prefix.ends_with('/')) {
    http->RoutePrefixAsync("GET", path_or_prefix, std::move(counted));
  } else {
    http->RouteAsync("GET", path_or_prefix, std::move(counted));
  }
}

uint16_t ApiServer::port() const { return impl_->http ? impl_->http->port() : 0; }

std::string ApiServer::url() const {
  const std::string& address = impl_->options.http.address;
  const bool ipv6 = address.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}", impl_->options.http.tls ? "https" : "http", ipv6 ? "[" : "",
                     address, ipv6 ? "]" : "", port());
}

void ApiServer::Stop() {
  impl_->stopping = true;
  if (impl_->http) impl_->http->Stop();
  if (impl_->authorizing) impl_->authorizing->Shutdown();
  if (impl_->reviewing) impl_->reviewing->Shutdown();
  if (impl_->reads) impl_->reads->Shutdown();
}

}  // namespace modelmetrics::deployment
