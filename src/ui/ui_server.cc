// See ui_server.h.
#include "ui/ui_server.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "aggregation/snapshot.h"
#include "assets.h"
#include "base/mutex.h"
#include "base/random_token.h"
#include "base/text.h"
#include "history.h"
#include "net/http_server.h"

namespace modelmetrics::ui {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kApiPrefix = "/api/v1/deployments";

// The page's own code only: no inline script, no other origin.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

net::HttpResponse WithHeaders(net::HttpResponse response) {
  response.headers.emplace_back("Cache-Control", "no-store");
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Content-Security-Policy", std::string(kContentSecurityPolicy));
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
  return response;
}

net::HttpResponse JsonResponse(int status, std::string body) {
  net::HttpResponse response;
  response.status = status;
  response.content_type = "application/json";
  response.body = std::move(body);
  return WithHeaders(std::move(response));
}

// JSON text with any byte that is not UTF-8 written as U+FFFD: one bad byte from one Pod must not
// fail the page for every deployment (texts are made valid where they are made; this is the net).
std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

net::HttpResponse Error(int status, std::string_view message) {
  return JsonResponse(status, Dump(Json{{"error", message}}));
}

bool IsLoopback(std::string_view address) {
  return address == "::1" || address == "localhost" || address.starts_with("127.");
}

}  // namespace

struct UiServer::Impl {
  struct Entry {
    deployment::ModelDeployment md;
    std::optional<deployment::Snapshot> snapshot;  // the last good read
    std::string snapshot_json;
    DeploymentHistory history;
    std::optional<deployment::WallTime> last_ok;
    Clock::time_point last_ok_steady;
    std::string last_error;  // of the last read; "" when it succeeded
    bool listed = true;
  };

  Impl(deployment::ObjectSource* o, deployment::SnapshotReader* r, UiOptions opts)
      : objects(o), snapshots(r), options(std::move(opts)) {
    if (options.token.empty()) options.token = base::RandomToken();
    if (options.interval.count() <= 0) options.interval = std::chrono::seconds(5);
    options.max_in_flight = std::max<size_t>(1, options.max_in_flight);
  }

  deployment::ObjectSource* objects;
  deployment::SnapshotReader* snapshots;
  UiOptions options;
  std::unique_ptr<net::HttpServer> server;

  base::Mutex mu;
  std::condition_variable wake;
  bool stopping GUARDED_BY(mu) = false;
  std::map<std::pair<std::string, std::string>, Entry> entries GUARDED_BY(mu);  // by (ns, name)
  std::string list_error GUARDED_BY(mu);  // the last listing's failure
  size_t left_out GUARDED_BY(mu) = 0;
  std::thread poller;

  bool Stale(const Entry& e, Clock::time_point now) const {
    return !e.last_error.empty() || !e.last_ok || now - e.last_ok_steady > 3 * options.interval;
  }

  // One round: list, then read every deployment, at most max_in_flight at once.
  void Poll() {
    std::vector<deployment::ModelDeployment> mds;
    const deployment::Status listed = objects->ListModelDeployments(options.ns, &mds);
    std::sort(mds.begin(), mds.end(), [](const auto& a, const auto& b) {
      return std::tie(a.metadata.namespace_, a.metadata.name) <
             std::tie(b.metadata.namespace_, b.metadata.name);
    });
    {
      base::MutexLock lock(&mu);
      list_error = listed.ok() ? "" : listed.message();
      if (!listed.ok()) return;  // keep what was read before; every entry goes stale
      left_out = mds.size() > options.max_deployments ? mds.size() - options.max_deployments : 0;
      mds.resize(std::min(mds.size(), options.max_deployments));
      for (auto& [key, entry] : entries) entry.listed = false;
      for (const auto& md : mds) {
        auto [it, inserted] = entries.try_emplace({md.metadata.namespace_, md.metadata.name});
        if (inserted) it->second.history = DeploymentHistory({.span = options.history});
        it->second.md = md;
        it->second.listed = true;
      }
      std::erase_if(entries, [](const auto& e) { return !e.second.listed; });
    }
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < mds.size(); i = next++) {
        if (Stopping()) return;
        Read(mds[i]);
      }
    };
    std::vector<std::thread> workers;
    for (size_t w = 1; w < std::min(options.max_in_flight, mds.size()); ++w) {
      workers.emplace_back(work);
    }
    work();
    for (std::thread& t : workers) t.join();
  }

  void Read(const deployment::ModelDeployment& md) {
    deployment::Snapshot snapshot;
    const deployment::Status status = snapshots->Get(
        md.metadata.namespace_, md.metadata.name, &snapshot, Clock::now() + options.read_timeout);
    base::MutexLock lock(&mu);
    auto it = entries.find({md.metadata.namespace_, md.metadata.name});
    if (it == entries.end()) return;
    Entry& e = it->second;
    if (!status.ok()) {
      e.last_error = base::ValidUtf8(
          fmt::format("{} {}: {}", status.code(), status.reason(), status.message()));
      return;
    }
    e.last_error.clear();
    e.history.Add(snapshot);
    e.snapshot_json = deployment::SnapshotToJson(snapshot);
    e.snapshot = std::move(snapshot);
    e.last_ok = e.snapshot->timestamp;
    e.last_ok_steady = Clock::now();
  }

  bool Stopping() {
    base::MutexLock lock(&mu);
    return stopping;
  }

  void Run() {
    for (;;) {
      const auto round = Clock::now();
      Poll();
      base::MutexLock lock(&mu);
      if (wake.wait_until(lock.native(), round + options.interval,
                          [this]() REQUIRES(mu) { return stopping; })) {
        return;
      }
    }
  }

  Json Status(const Entry& e, Clock::time_point now) const {
    Json status = {{"stale", Stale(e, now)}, {"error", e.last_error}};
    status["lastRead"] = e.last_ok ? Json(deployment::FormatTime(*e.last_ok)) : Json(nullptr);
    return status;
  }

  net::HttpResponse List() {
    base::MutexLock lock(&mu);
    const auto now = Clock::now();
    Json items = Json::array();
    for (const auto& [key, e] : entries) {
      Json item = {{"namespace", key.first}, {"name", key.second}, {"engine", e.md.engine}};
      item["status"] = Status(e, now);
      if (e.snapshot) {
        const deployment::Snapshot& s = *e.snapshot;
        // Requests by role: the engine-scoped gauges (stage and router ones are finer views).
        std::optional<double> running, waiting;
        for (const deployment::Gauge& g : s.processing) {
          if (g.name == "running" && g.scope.starts_with("engine/"))
            running = running.value_or(0) + g.value;
        }
        for (const deployment::Gauge& g : s.queueing) {
          if (g.name == "waiting" && g.scope.starts_with("engine/"))
            waiting = waiting.value_or(0) + g.value;
        }
        item["partial"] = s.partial;
        item["missing"] = s.missing.size();
        item["running"] = running ? Json(*running) : Json(nullptr);
        item["waiting"] = waiting ? Json(*waiting) : Json(nullptr);
        item["timestamp"] = deployment::FormatTime(s.timestamp);
      }
      items.push_back(std::move(item));
    }
    Json body = {{"items", std::move(items)},
                 {"pollIntervalMs", options.interval.count()},
                 {"namespace", options.ns},
                 {"leftOut", left_out},
                 {"listError", list_error}};
    return JsonResponse(200, Dump(body));
  }

  net::HttpResponse Detail(std::string_view rest) {
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 >= rest.size() ||
        rest.find('/', slash + 1) != std::string_view::npos) {
      return Error(404, "not found");
    }
    // The page encodes each part (encodeURIComponent): a name may hold any character.
    std::string ns, name;
    if (!base::PercentDecode(rest.substr(0, slash), &ns) ||
        !base::PercentDecode(rest.substr(slash + 1), &name)) {
      return Error(400, "malformed percent-encoding in the deployment's path");
    }
    base::MutexLock lock(&mu);
    const auto it = entries.find({ns, name});
    if (it == entries.end()) return Error(404, "no such deployment");
    const Entry& e = it->second;
    std::string body = "{\"engine\":" + Dump(Json(e.md.engine));
    body += ",\"status\":" + Dump(Status(e, Clock::now()));
    body += ",\"snapshot\":" + (e.snapshot ? e.snapshot_json : std::string("null"));
    body += ",\"history\":" + Dump(e.history.ToJson());
    body += ",\"pollIntervalMs\":" + std::to_string(options.interval.count()) + "}";
    return JsonResponse(200, std::move(body));
  }

  // 401 without a token, 403 with a wrong one; nullopt when it is the one.
  std::optional<net::HttpResponse> Denied(const net::HttpRequest& request) const {
    if (!request.headers.Has("Authorization")) return Error(401, "an access token is required");
    const std::string_view value = request.headers.Get("Authorization");
    if (!value.starts_with("Bearer ")) return Error(401, "an access token is required");
    if (!base::ConstantTimeEquals(value.substr(7), options.token)) {
      return Error(403, "wrong access token");
    }
    return std::nullopt;
  }
};

UiServer::UiServer(deployment::ObjectSource* objects, deployment::SnapshotReader* snapshots,
                   UiOptions options)
    : impl_(std::make_unique<Impl>(objects, snapshots, std::move(options))) {}

UiServer::~UiServer() { Stop(); }

Status UiServer::Start() {
  if (!IsLoopback(impl_->options.address)) {
    return Status::InvalidArgument("the page listens on loopback only, not " +
                                   impl_->options.address);
  }
  net::ServerOptions server_options;
  server_options.address =
      impl_->options.address == "localhost" ? "127.0.0.1" : impl_->options.address;
  server_options.port = impl_->options.port;
  server_options.max_body_bytes = 4096;  // GET only
  server_options.threads = 2;
  impl_->server = std::make_unique<net::HttpServer>(server_options);
  Impl* impl = impl_.get();
  for (const Asset& asset : Assets()) {
    impl_->server->Route("GET", std::string(asset.path), [asset](const net::HttpRequest&) {
      net::HttpResponse response;
      response.content_type = std::string(asset.content_type);
      response.body = std::string(asset.body);
      return WithHeaders(std::move(response));
    });
  }
  impl_->server->Route("GET", std::string(kApiPrefix), [impl](const net::HttpRequest& request) {
    if (auto denied = impl->Denied(request)) return *denied;
    return impl->List();
  });
  impl_->server->RoutePrefix(
      "GET", std::string(kApiPrefix) + "/", [impl](const net::HttpRequest& request) {
        if (auto denied = impl->Denied(request)) return *denied;
        return impl->Detail(std::string_view(request.path).substr(kApiPrefix.size() + 1));
      });
  if (Status started = impl_->server->Start(); !started.ok()) return started;
  impl_->poller = std::thread([impl] { impl->Run(); });
  return Status::Ok();
}

void UiServer::Stop() {
  {
    base::MutexLock lock(&impl_->mu);
    impl_->stopping = true;
    impl_->wake.notify_all();
  }
  if (impl_->poller.joinable()) impl_->poller.join();
  if (impl_->server) impl_->server->Stop();
}

uint16_t UiServer::port() const { return impl_->server ? impl_->server->port() : 0; }

const std::string& UiServer::token() const { return impl_->options.token; }

std::string UiServer::url() const {
  const std::string host = impl_->options.address == "::1"         ? "[::1]"
                           : impl_->options.address == "localhost" ? "127.0.0.1"
                                                                   : impl_->options.address;
  return fmt::format("http://{}:{}/#token={}", host, port(), token());
}

}  // namespace modelmetrics::ui
