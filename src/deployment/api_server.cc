// The aggregated API server for ModelDeploymentMetrics and the serve configuration (see
// api_server.h).
#include "deployment/api_server.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api_discovery.h"
#include "base/duration.h"
#include "base/file.h"
#include "json_dump.h"
#include "kube_names.h"
#include "yaml.h"

namespace modelmetrics::deployment {
namespace {

using OrderedJson = nlohmann::ordered_json;

net::HttpResponse JsonResponse(int code, std::string body) {
  net::HttpResponse response;
  response.status = code;
  response.content_type = "application/json";
  response.body = std::move(body);
  return response;
}

// An error code as sent: a status that is not an HTTP error (a source's bug) is a 500.
int ErrorCode(int code) { return code >= 400 && code <= 599 ? code : 500; }

// Errors: the deployment named in details; 401 without details, as Kubernetes sends it.
net::HttpResponse StatusResponse(const ApiStatus& status, const StatusDetails* details,
                                 bool with_details = true, int retry_after_seconds = 0) {
  net::HttpResponse response = JsonResponse(
      ErrorCode(status.code), StatusJson(status, details, with_details, retry_after_seconds));
  if (retry_after_seconds > 0) {
    response.headers.emplace_back("Retry-After", std::to_string(retry_after_seconds));
  }
  return response;
}

net::HttpResponse Unauthorized() {
  return StatusResponse({401, "Unauthorized", "Unauthorized"}, nullptr, /*with_details=*/false);
}

net::HttpResponse UnknownPath() {
  return StatusResponse(ApiStatus::NotFound("the server could not find the requested resource"),
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

// A bounded pool: at most `capacity` jobs running or queued.
class WorkerPool {
 public:
  WorkerPool(int threads, size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {
    for (int i = 0; i < std::max(threads, 1); ++i) {
      threads_.emplace_back([this] { Run(); });
    }
  }
  ~WorkerPool() { Shutdown(); }

  // False when full (or shut down): the caller answers 429.
  bool TrySubmit(std::function<void()> job) {
    std::lock_guard lock(mu_);
    if (stopping_ || in_flight_ >= capacity_) return false;
    ++in_flight_;
    queue_.push_back(std::move(job));
    cv_.notify_one();
    return true;
  }

  // Drops queued jobs (their Responders then answer 500 or are ignored by a stopped server),
  // waits for running ones, joins.
  void Shutdown() {
    std::deque<std::function<void()>> dropped;
    {
      std::lock_guard lock(mu_);
      if (stopping_ && threads_.empty()) return;
      stopping_ = true;
      dropped.swap(queue_);
      cv_.notify_all();
    }
    dropped.clear();
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }

 private:
  void Run() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
      job = nullptr;  // release the Responder before the slot frees
      std::lock_guard lock(mu_);
      --in_flight_;
    }
  }

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t in_flight_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Status

std::string StatusJson(const ApiStatus& status, const StatusDetails* details, bool with_details,
                       int retry_after_seconds) {
  const int code = ErrorCode(status.code);
  std::string reason = status.reason.empty() || code != status.code
                           ? std::string(ReasonForCode(code))
                           : status.reason;
  std::string message = status.message.empty() ? reason : status.message;
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
  std::unique_ptr<WorkerPool> authorizing;
  std::unique_ptr<SharedReads> reads;
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
  // Authorises `access` (a non-resource path) on the authorisation pool, then answers with
  // `answer()` (403 / 500 / 429 as for a resource request).
  void AuthorizeNonResource(const AuthorizationRequest& access,
                            const std::function<net::HttpResponse()>& answer,
                            const net::Responder& respond);
  // On the request pool: authenticates, then routes.
  void Dispatch(const net::HttpRequest& request, const net::Responder& respond);
  // Discovery, the OpenAPI documents and /metrics, once authorised.
  net::HttpResponse NonResource(const net::HttpRequest& request);
  // `resource`/`subresource` as authorised: modeldeployments/metrics or modeldeploymentmetrics.
  void ServeMetrics(const net::HttpRequest& request, UserInfo user, std::string_view resource,
                    std::string_view subresource, std::string ns, std::string name,
                    const net::Responder& respond);
  void Authorize(const AuthorizationRequest& access, const StatusDetails& details,
                 SteadyTime deadline, const net::Responder& respond);
  SharedReads::Result Read(const std::string& ns, const std::string& name, SteadyTime deadline);
};

namespace {

net::HttpResponse Busy(const StatusDetails& details) {
  return StatusResponse({429, "TooManyRequests", "Too many requests, please try again later."},
                        &details, /*with_details=*/true, /*retry_after_seconds=*/1);
}

net::HttpResponse ReadResponse(const SharedReads::Result& result, const StatusDetails& details) {
  if (!result.status.ok() || result.body == nullptr) {
    return StatusResponse(result.status, &details, /*with_details=*/true, result.retry ? 1 : 0);
  }
  return JsonResponse(200, *result.body);
}

net::HttpResponse NotStartedInTime(const StatusDetails& details) {
  return ReadResponse({.status = SharedReads::NotStartedInTime(), .body = nullptr, .retry = true},
                      details);
}

}  // namespace

void ApiServer::Impl::Serve(const net::HttpRequest& request, net::Responder respond) {
  // Authentication may ask kube-apiserver (a TokenReview), so it never runs on an IO thread.
  auto job = [this, &request, respond] {
    try {
      Dispatch(request, respond);
    } catch (const std::exception& e) {
      respond(StatusResponse(ApiStatus::Internal(e.what()), nullptr));
    } catch (...) {
      respond(StatusResponse(ApiStatus::Internal("unknown error"), nullptr));
    }
  };
  if (!authorizing->TrySubmit(std::move(job))) {
    respond(StatusResponse({429, "TooManyRequests", "Too many requests, please try again later."},
                           nullptr, /*with_details=*/true, /*retry_after_seconds=*/1));
  }
}

void ApiServer::Impl::Dispatch(const net::HttpRequest& request, const net::Responder& respond) {
  // A request that waited out its budget in the queue is not authenticated (a TokenReview) late.
  if (request.received_at != SteadyTime() &&
      SteadyClock::now() - request.received_at > options.request_timeout) {
    return respond(StatusResponse({503, "ServiceUnavailable", "the server is busy; try again"},
                                  nullptr, /*with_details=*/true, /*retry_after_seconds=*/1));
  }
  UserInfo user;
  if (!authenticator->Authenticate(request, &user)) return respond(Unauthorized());

  std::string_view path = request.path;
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const bool discovery =
      path == "/apis" || path == options.api.GroupPath() || path == options.api.VersionPath();
  const bool document = path.starts_with("/openapi/") && openapi->Serve(request).has_value();
  if (discovery || document || path == "/metrics") {
    if (request.method != "GET") return respond(MethodNotAllowed(nullptr));
    AuthorizationRequest access{.user = std::move(user), .verb = "get", .path = std::string(path)};
    return AuthorizeNonResource(
        access, [this, &request] { return NonResource(request); }, respond);
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
    return ServeMetrics(request, std::move(user), kMetricsResource, kMetricsSubresource,
                        std::string(segments[4]), std::string(segments[6]), respond);
  }
  if (in_api && segments.size() == 7 && segments[5] == kMetricsObjectResource) {
    return ServeMetrics(request, std::move(user), kMetricsObjectResource, "",
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
  if (path == "/apis") {
    const DiscoveryForm form = NegotiateDiscovery(request.headers.Get("Accept"));
    response.body = ApisJson(options.api, form);
    response.content_type = DiscoveryContentType(form);
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

void ApiServer::Impl::AuthorizeNonResource(const AuthorizationRequest& access,
                                           const std::function<net::HttpResponse()>& answer,
                                           const net::Responder& respond) {
  const AuthorizationDecision decision = authorizer->Authorize(access);
  if (!decision.error.ok()) {
    return respond(StatusResponse(
        ApiStatus::Internal(fmt::format("Internal error occurred: {}", decision.error.message)),
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
}

void ApiServer::Impl::ServeMetrics(const net::HttpRequest& request, UserInfo user,
                                   std::string_view resource, std::string_view subresource,
                                   std::string ns, std::string name,
                                   const net::Responder& respond) {
  const StatusDetails details{
      .name = name, .group = options.api.group, .kind = std::string(resource)};
  if (request.method != "GET") return respond(MethodNotAllowed(&details));
  // Names are checked before anything (authoriser, API, Pods) sees them.
  if (std::string problem = ValidateDns1123Label(ns); !problem.empty()) {
    return respond(StatusResponse(
        ApiStatus::BadRequest(fmt::format("invalid namespace \"{}\": {}", Echo(ns), problem)),
        &details));
  }
  if (std::string problem = ValidateDns1123Subdomain(name); !problem.empty()) {
    return respond(StatusResponse(
        ApiStatus::BadRequest(fmt::format("invalid name \"{}\": {}", Echo(name), problem)),
        &details));
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
  Authorize(access, details, deadline, respond);
}

void ApiServer::Impl::Authorize(const AuthorizationRequest& access, const StatusDetails& details,
                                SteadyTime deadline, const net::Responder& respond) {
  if (deadline - SteadyClock::now() < options.min_read_budget) {
    return respond(NotStartedInTime(details));
  }
  const AuthorizationDecision decision = authorizer->Authorize(access);
  if (!decision.error.ok()) {
    return respond(StatusResponse(
        ApiStatus::Internal(fmt::format("Internal error occurred: {}", decision.error.message)),
        &details));
  }
  if (!decision.allowed) {
    return respond(
        StatusResponse({403, "Forbidden", ForbiddenMessage(access, decision.reason)}, &details));
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
  if (admission == SharedReads::Admission::kBusy) respond(Busy(details));
}

SharedReads::Result ApiServer::Impl::Read(const std::string& ns, const std::string& name,
                                          SteadyTime deadline) {
  Snapshot result;
  const SteadyTime started = SteadyClock::now();
  const ApiStatus status = snapshot(ns, name, deadline, &result);
  const std::string outcome = status.ok()          ? (result.partial ? "partial" : "ok")
                              : status.code == 504 ? "timeout"
                                                   : SnakeCase(status.reason);
  metrics->SnapshotRead(outcome,
                        std::chrono::duration<double>(SteadyClock::now() - started).count());
  if (!status.ok()) return {.status = status};
  // Rendered once per read: every request sharing it gets the same bytes.
  return {.status = status,
          .body = std::make_shared<const std::string>(
              SnapshotToJson(result, options.api.GroupVersion()))};
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

bool ApiServer::Start(std::string* error) {
  Impl& impl = *impl_;
  if (impl.started) {
    if (error) *error = "the API server was already started";
    return false;
  }
  if (!impl.authenticator || !impl.authorizer || !impl.snapshot) {
    if (error) *error = "the API server needs an authenticator, an authoriser and a snapshot";
    return false;
  }
  if (impl.options.request_timeout <= impl.options.min_read_budget) {
    if (error) *error = "request_timeout must be longer than min_read_budget";
    return false;
  }
  if (std::string why = impl.options.api.Validate(); !why.empty()) {
    if (error) *error = why;
    return false;
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
  impl.authorizing =
      std::make_unique<WorkerPool>(impl.options.authorizer_threads, impl.options.max_authorizing);
  SharedReads::Options reads;
  reads.threads = impl.options.worker_threads;
  reads.max_reads = impl.options.max_in_flight;
  reads.max_waiters = impl.options.max_waiting;
  reads.reuse_for = impl.options.reuse_for;
  reads.min_read_budget = impl.options.min_read_budget;
  impl.reads = std::make_unique<SharedReads>(
      reads, [&impl](const std::string& ns, const std::string& name, SteadyTime deadline) {
        return impl.Read(ns, name, deadline);
      });
  std::string start_error;
  if (!impl.http->Start(&start_error)) {
    if (error) *error = start_error;
    impl.authorizing->Shutdown();
    impl.reads->Shutdown();
    return false;
  }
  return true;
}

void ApiServer::Impl::AddHealthChecks() {
  const auto ping = [] { return std::string(); };
  for (HealthChecks* checks : {&livez, &readyz, &healthz}) checks->Add("ping", ping);
  for (const auto& [name, check] : options.readiness_checks) {
    readyz.Add(name, check);
    healthz.Add(name, check);
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
  if (impl_->reads) impl_->reads->Shutdown();
}

// ---------------------------------------------------------------------------------------------
// Serve configuration

bool ParseServeConfig(std::string_view yaml, const std::string& base_dir, ServeConfig* out,
                      std::string* error) {
  std::vector<nlohmann::json> docs;
  std::string problem;
  if (!ParseYaml(yaml, &docs, &problem)) {
    *error = fmt::format("invalid YAML: {}", problem);
    return false;
  }
  if (docs.size() > 1) {
    *error = fmt::format("expected one YAML document, found {}", docs.size());
    return false;
  }
  if (docs.empty() || !docs.front().is_object()) {
    *error = "expected a YAML mapping of settings";
    return false;
  }
  const nlohmann::json& root = docs.front();
  ServeConfig config;
  const auto fail = [error](std::string message) {
    *error = std::move(message);
    return false;
  };
  const auto resolve = [&base_dir](const std::string& path) {
    if (path.empty() || base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
    return (std::filesystem::path(base_dir) / path).lexically_normal().string();
  };
  using Json = nlohmann::json;
  const auto scalar = [&](const std::string& key, const Json& node, std::string* value) {
    if (!YamlScalarText(node, value)) return fail(fmt::format("{}: expected a string", key));
    return true;
  };
  const auto path_field = [&](const std::string& key, const Json& node, std::string* value) {
    if (!scalar(key, node, value)) return false;
    *value = resolve(*value);
    return true;
  };
  const auto integer = [&](const std::string& key, const Json& node, int64_t min, int64_t max,
                           int64_t* value) {
    if (!node.is_number_integer()) return fail(fmt::format("{}: expected an integer", key));
    if (node.is_number_unsigned() && node.get<uint64_t>() > static_cast<uint64_t>(max)) {
      return fail(
          fmt::format("{}: {} is out of range [{}, {}]", key, node.get<uint64_t>(), min, max));
    }
    *value = node.get<int64_t>();
    if (*value < min || *value > max) {
      return fail(fmt::format("{}: {} is out of range [{}, {}]", key, *value, min, max));
    }
    return true;
  };

  for (const auto& [key, node] : root.items()) {
    int64_t number = 0;
    bool ok = true;
    if (key == "address") {
      ok = scalar(key, node, &config.address);
    } else if (key == "port") {
      ok = integer(key, node, 0, 65535, &number);
      config.port = static_cast<uint16_t>(number);
    } else if (key == "api_group") {
      ok = scalar(key, node, &config.api.group);
    } else if (key == "api_version") {
      ok = scalar(key, node, &config.api.version);
    } else if (key == "tls_cert_file") {
      ok = path_field(key, node, &config.tls_cert_file);
    } else if (key == "tls_key_file") {
      ok = path_field(key, node, &config.tls_key_file);
    } else if (key == "client_ca_file") {
      ok = path_field(key, node, &config.client_ca_file);
    } else if (key == "requestheader_ca_file") {
      ok = path_field(key, node, &config.requestheader_ca_file);
    } else if (key == "tls_self_signed") {
      if (!node.is_boolean()) return fail("tls_self_signed: expected true or false");
      config.tls_self_signed = node.get<bool>();
    } else if (key == "tls_self_signed_hosts") {
      if (!node.is_array() || node.empty()) {
        return fail(fmt::format("{}: expected a non-empty list of host names", key));
      }
      config.tls_self_signed_hosts.clear();
      for (const Json& item : node) {
        std::string host;
        if (!YamlScalarText(item, &host) || host.empty() || host.find(',') != std::string::npos) {
          return fail(fmt::format("{}: expected a non-empty list of host names", key));
        }
        config.tls_self_signed_hosts.push_back(std::move(host));
      }
    } else if (key == "requestheader_allowed_names") {
      if (node.is_null()) continue;
      if (!node.is_array()) return fail(fmt::format("{}: expected a list of names", key));
      for (const Json& item : node) {
        std::string name;
        if (!YamlScalarText(item, &name) || name.empty()) {
          return fail(fmt::format("{}: expected a list of names", key));
        }
        config.requestheader_allowed_names.push_back(std::move(name));
      }
    } else if (key == "token_file") {
      ok = path_field(key, node, &config.token_file);
    } else if (key == "delegated_authentication") {
      if (!node.is_boolean()) return fail("delegated_authentication: expected true or false");
      config.delegated_authentication = node.get<bool>();
    } else if (key == "authentication_refresh" || key == "token_review_cache_ttl") {
      std::string text;
      std::chrono::milliseconds value{};
      if (!scalar(key, node, &text)) return false;
      // Bounded both ways: the ConfigMap is not re-read a thousand times a second, and a
      // revoked token is not trusted for an hour.
      const bool refresh = key == "authentication_refresh";
      const std::chrono::milliseconds most =
          refresh ? std::chrono::milliseconds(std::chrono::hours(1)) : std::chrono::minutes(10);
      if (!base::ParseDuration(text, &value) || value < std::chrono::milliseconds(100) ||
          value > most) {
        return fail(fmt::format("{}: `{}` is not a duration between 100ms and {} (e.g. 10s)", key,
                                text, refresh ? "1h" : "10m"));
      }
      (key == "authentication_refresh" ? config.authentication_refresh
                                       : config.token_review_cache_ttl) = value;
    } else if (key == "authorization") {
      std::string mode;
      ok = scalar(key, node, &mode);
      if (ok && mode == "policy") {
        config.authorization = ServeConfig::Authorization::kPolicy;
      } else if (ok && mode == "subjectaccessreview") {
        config.authorization = ServeConfig::Authorization::kSubjectAccessReview;
      } else if (ok) {
        return fail(
            fmt::format("authorization: `{}` is neither `policy` nor `subjectaccessreview`", mode));
      }
    } else if (key == "policy_file") {
      ok = path_field(key, node, &config.policy_file);
    } else if (key == "objects_file") {
      ok = path_field(key, node, &config.objects_file);
    } else if (key == "max_objects_bytes") {
      ok = integer(key, node, 1, kMaxObjectsBytesSetting, &number);
      config.max_objects_bytes = static_cast<size_t>(number);
    } else if (key == "kubeconfig") {
      ok = path_field(key, node, &config.kubeconfig);
    } else if (key == "context") {
      ok = scalar(key, node, &config.context);
    } else if (key == "in_cluster") {
      if (!node.is_boolean()) return fail("in_cluster: expected true or false");
      config.in_cluster = node.get<bool>();
    } else if (key == "watch_objects") {
      if (!node.is_boolean()) return fail("watch_objects: expected true or false");
      config.watch_objects = node.get<bool>();
    } else if (key == "pod_ca_file") {
      ok = path_field(key, node, &config.pod_ca_file);
    } else if (key == "max_in_flight") {
      ok = integer(key, node, 1, 100000, &number);
      config.max_in_flight = static_cast<size_t>(number);
    } else if (key == "workers") {
      ok = integer(key, node, 1, 256, &number);
      config.workers = static_cast<int>(number);
    } else if (key == "snapshot_reuse_ms") {
      ok = integer(key, node, 0, 60000, &number);
      config.snapshot_reuse_ms = static_cast<int>(number);
    } else if (key == "max_connections_per_address") {
      ok = integer(key, node, 0, 100000, &number);
      config.max_connections_per_address = static_cast<size_t>(number);
    } else if (key == "source") {
      std::string name;
      ok = scalar(key, node, &name);
      if (ok && name == kSampleSourceScrape) {
        config.source = SampleSource::kScrape;
      } else if (ok && name == kSampleSourcePrometheus) {
        config.source = SampleSource::kPrometheus;
      } else if (ok) {
        return fail(fmt::format("source: `{}` is neither `{}` nor `{}`", name, kSampleSourceScrape,
                                kSampleSourcePrometheus));
      }
    } else if (key == "prometheus") {
      if (!node.is_object()) return fail("prometheus: expected a mapping");
      PrometheusSourceOptions& p = config.prometheus;
      for (const auto& item : node.items()) {
        // Named, not structured bindings: lambdas below capture them (clang 14 refuses those).
        const std::string& sub = item.key();
        const Json& value = item.value();
        const std::string field = "prometheus." + sub;
        std::string text;
        const auto duration = [&](std::chrono::milliseconds* out, bool zero_allowed = false) {
          if (!scalar(field, value, &text)) return false;
          if (!base::ParseDuration(text, out) || (out->count() == 0 && !zero_allowed)) {
            return fail(zero_allowed
                            ? fmt::format("{}: `{}` is not a duration (e.g. 5s)", field, text)
                            : fmt::format("{}: `{}` is not a positive duration (e.g. 90s, 2m)",
                                          field, text));
          }
          return true;
        };
        const auto count = [&](int64_t max, size_t* out) {
          if (!integer(field, value, 1, max, &number)) return false;
          *out = static_cast<size_t>(number);
          return true;
        };
        bool sub_ok = true;
        if (sub == "url") {
          sub_ok = scalar(field, value, &p.url);
        } else if (sub == "window") {
          sub_ok = duration(&p.window);
        } else if (sub == "stale_after") {
          sub_ok = duration(&p.stale_after);
        } else if (sub == "settle") {
          sub_ok = duration(&p.settle, /*zero_allowed=*/true);
        } else if (sub == "query_timeout") {
          sub_ok = duration(&p.query_timeout);
        } else if (sub == "namespace_label") {
          sub_ok = scalar(field, value, &p.namespace_label);
        } else if (sub == "pod_label") {
          sub_ok = scalar(field, value, &p.pod_label);
        } else if (sub == "selector") {
          sub_ok = scalar(field, value, &p.selector);
        } else if (sub == "replica_labels") {
          // A list, possibly empty (no deduplication).
          if (!value.is_array() && !value.is_null()) {
            return fail(fmt::format("{}: expected a list of label names", field));
          }
          p.replica_labels.clear();
          for (const Json& label : value.is_array() ? value : Json::array()) {
            std::string name;
            if (!YamlScalarText(label, &name) || name.empty()) {
              return fail(fmt::format("{}: expected a list of label names", field));
            }
            p.replica_labels.push_back(std::move(name));
          }
        } else if (sub == "pod_limit") {
          sub_ok = count(100000, &p.pod_limit);
        } else if (sub == "max_in_flight") {
          sub_ok = count(256, &p.max_in_flight);
        } else if (sub == "max_response_bytes") {
          sub_ok = count(int64_t{1} << 30, &p.max_response_bytes);
        } else if (sub == "ca_file") {
          sub_ok = path_field(field, value, &p.ca_file);
        } else if (sub == "bearer_token_file") {
          sub_ok = path_field(field, value, &config.prometheus_bearer_token_file);
        } else if (sub == "basic_auth_username") {
          sub_ok = scalar(field, value, &p.basic_user);
        } else if (sub == "basic_auth_password_file") {
          sub_ok = path_field(field, value, &config.prometheus_basic_password_file);
        } else {
          return fail(fmt::format("unknown setting `{}`", field));
        }
        if (!sub_ok) return false;
      }
    } else {
      return fail(fmt::format("unknown setting `{}`", key));
    }
    if (!ok) return false;
  }

  if (std::string why = config.api.Validate(); !why.empty()) return fail(why);
  if (config.tls_self_signed) {
    if (!config.tls_cert_file.empty() || !config.tls_key_file.empty()) {
      return fail(
          "tls_self_signed makes its own certificate: remove tls_cert_file and tls_key_file");
    }
  } else if (config.tls_cert_file.empty() || config.tls_key_file.empty()) {
    return fail(
        "tls_cert_file and tls_key_file are required (tokens never travel in the clear), or "
        "tls_self_signed: true");
  }
  if (config.token_file.empty() && config.client_ca_file.empty() &&
      config.requestheader_ca_file.empty() && !config.delegated_authentication) {
    return fail(
        "no authentication: set token_file, client_ca_file, requestheader_ca_file and/or "
        "delegated_authentication");
  }
  if (config.delegated_authentication) {
    if (!config.client_ca_file.empty() || !config.requestheader_ca_file.empty()) {
      return fail(
          "delegated_authentication takes the CAs from kube-system/extension-apiserver-"
          "authentication: remove client_ca_file and requestheader_ca_file");
    }
    if (!config.UsesKubeApi()) {
      return fail("delegated_authentication needs kubeconfig or in_cluster: true");
    }
  }
  if (!config.requestheader_allowed_names.empty() && config.requestheader_ca_file.empty()) {
    return fail("requestheader_allowed_names needs requestheader_ca_file");
  }
  if (!config.kubeconfig.empty() && config.in_cluster) {
    return fail("kubeconfig and in_cluster: true exclude each other");
  }
  if (config.objects_file.empty() && !config.UsesKubeApi()) {
    return fail("no object source: set objects_file, kubeconfig or in_cluster: true");
  }
  if (config.authorization == ServeConfig::Authorization::kPolicy) {
    if (config.policy_file.empty()) {
      return fail("authorization: policy needs policy_file");
    }
  } else {
    if (!config.policy_file.empty()) {
      return fail("policy_file is for authorization: policy, not subjectaccessreview");
    }
    if (!config.UsesKubeApi()) {
      return fail("authorization: subjectaccessreview needs kubeconfig or in_cluster: true");
    }
  }
  if (!config.context.empty() && config.kubeconfig.empty()) {
    return fail("context needs kubeconfig");
  }
  if (config.source == SampleSource::kPrometheus) {
    if (const std::string why = ValidatePrometheusSourceOptions(config.prometheus); !why.empty()) {
      return fail("prometheus: " + why);
    }
    if (!config.prometheus_bearer_token_file.empty() && !config.prometheus.basic_user.empty()) {
      return fail("prometheus: bearer_token_file and basic_auth_username exclude each other");
    }
  }
  const std::pair<const char*, const std::string*> files[] = {
      {"tls_cert_file", &config.tls_cert_file},
      {"tls_key_file", &config.tls_key_file},
      {"client_ca_file", &config.client_ca_file},
      {"requestheader_ca_file", &config.requestheader_ca_file},
      {"token_file", &config.token_file},
      {"policy_file", &config.policy_file},
      {"objects_file", &config.objects_file},
      {"kubeconfig", &config.kubeconfig},
      {"pod_ca_file", &config.pod_ca_file},
      {"prometheus.ca_file", &config.prometheus.ca_file},
      {"prometheus.bearer_token_file", &config.prometheus_bearer_token_file},
      {"prometheus.basic_auth_password_file", &config.prometheus_basic_password_file}};
  for (const auto& [key, path] : files) {
    std::error_code ignored;
    if (!path->empty() && !std::filesystem::is_regular_file(*path, ignored)) {
      // A device or FIFO named by mistake would block or never end when read.
      const bool exists = std::filesystem::exists(*path, ignored);
      return fail(
          fmt::format("{}: {}: {}", key, exists ? "not a regular file" : "no such file", *path));
    }
    // Certificates and keys are read by OpenSSL, not base::ReadFile: bound them here too. The
    // objects file and the kubeconfig have caps of their own, checked when they are loaded.
    const uintmax_t size = path->empty() ? 0 : std::filesystem::file_size(*path, ignored);
    const bool own_cap = path == &config.objects_file || path == &config.kubeconfig;
    if (!own_cap && !ignored && size > base::kDefaultMaxFileBytes) {
      return fail(fmt::format("{}: {}: file is {} bytes, over the {}-byte limit", key, *path, size,
                              base::kDefaultMaxFileBytes));
    }
  }
  *out = std::move(config);
  return true;
}

bool LoadServeConfig(const std::string& path, ServeConfig* out, std::string* error,
                     size_t max_bytes) {
  std::string text;
  if (!base::ReadFile(path, &text, error, max_bytes)) return false;
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  if (!ParseServeConfig(text, base_dir, out, error)) {
    *error = fmt::format("{}: {}", path, *error);
    return false;
  }
  return true;
}

std::unique_ptr<Authenticator> BuildAuthenticator(
    const ServeConfig& config, std::string* error, KubeApiClient* kube,
    std::shared_ptr<const AuthenticationConfigWatcher> watcher,
    std::shared_ptr<ServerMetrics> metrics) {
  auto authenticator = std::make_unique<UnionAuthenticator>();
  if (config.delegated_authentication && (kube == nullptr || watcher == nullptr)) {
    *error = "delegated authentication needs a Kubernetes API client and the ConfigMap watcher";
    return nullptr;
  }
  // Kubernetes' order: front proxy, client certificate, bearer token (file, then TokenReview).
  if (config.delegated_authentication) {
    authenticator->Add(std::make_unique<DelegatedRequestHeaderAuthenticator>(watcher));
    authenticator->Add(std::make_unique<ClientCertAuthenticator>());
  }
  if (!config.requestheader_ca_file.empty()) {
    RequestHeaderOptions options;
    options.allowed_names = config.requestheader_allowed_names;
    authenticator->Add(std::make_unique<RequestHeaderAuthenticator>(std::move(options)));
  }
  if (!config.client_ca_file.empty()) {
    authenticator->Add(std::make_unique<ClientCertAuthenticator>());
  }
  if (!config.token_file.empty()) {
    auto tokens = TokenFileAuthenticator::Load(config.token_file, error);
    if (!tokens) return nullptr;
    authenticator->Add(std::move(tokens));
  }
  if (config.delegated_authentication) {
    TokenReviewAuthenticator::Options options{.ttl = config.token_review_cache_ttl};
    if (metrics) options.on_cache = [metrics](bool hit) { metrics->TokenReviewCache(hit); };
    authenticator->Add(std::make_unique<TokenReviewAuthenticator>(kube, std::move(options)));
  }
  if (authenticator->empty()) {
    *error = "no authentication method configured";
    return nullptr;
  }
  return authenticator;
}

std::unique_ptr<Authorizer> BuildAuthorizer(const ServeConfig& config, KubeApiClient* kube,
                                            std::string* error,
                                            std::shared_ptr<ServerMetrics> metrics) {
  if (config.authorization == ServeConfig::Authorization::kPolicy) {
    auto policy = PolicyAuthorizer::Load(config.policy_file, error);
    if (!policy) return nullptr;
    return policy;
  }
  if (kube == nullptr) {
    *error = "subjectaccessreview needs a Kubernetes API client";
    return nullptr;
  }
  SubjectAccessReviewAuthorizer::Options options;
  if (metrics) options.on_cache = [metrics](bool hit) { metrics->AccessReviewCache(hit); };
  return std::make_unique<SubjectAccessReviewAuthorizer>(kube, std::move(options));
}

ApiServerOptions BuildApiServerOptions(const ServeConfig& config,
                                       std::shared_ptr<const AuthenticationConfigWatcher> watcher) {
  ApiServerOptions options;  // keeps the small body cap
  options.api = config.api;
  options.http.address = config.address;
  options.http.port = config.port;
  options.http.threads = 2;
  net::TlsOptions tls;
  tls.cert_file = config.tls_cert_file;
  tls.key_file = config.tls_key_file;
  tls.client_ca_file = config.client_ca_file;
  tls.requestheader_ca_file = config.requestheader_ca_file;
  tls.require_client_cert = false;  // tokens authenticate too
  if (watcher) {
    tls.dynamic_client_cas = watcher;
    options.readiness_checks.emplace_back("authentication-configmap",
                                          [watcher] { return watcher->Ready(); });
  }
  options.http.tls = std::move(tls);
  options.max_in_flight = config.max_in_flight;
  options.reuse_for = std::chrono::milliseconds(config.snapshot_reuse_ms);
  options.http.max_connections_per_address = config.max_connections_per_address;
  options.worker_threads = config.workers;
  return options;
}

}  // namespace modelmetrics::deployment
