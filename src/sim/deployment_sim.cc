#include "sim/deployment_sim.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "base/file.h"
#include "base/mutex.h"
#include "base/text.h"
#include "fault_server.h"
#include "net/certificate.h"
#include "pod_model.h"
#include "sim/exporter_registry.h"
#include "sim_exporter.h"

namespace modelmetrics::sim {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

constexpr struct {
  PodFault fault;
  std::string_view name;
} kFaultNames[] = {
    {PodFault::kNone, "none"},         {PodFault::kHang, "hang"},
    {PodFault::kSlow, "slow"},         {PodFault::kSlowBody, "slow-body"},
    {PodFault::kOversize, "oversize"}, {PodFault::kGzipBomb, "gzip-bomb"},
    {PodFault::kHttp500, "http-500"},  {PodFault::kRedirect, "redirect"},
    {PodFault::kGarbage, "garbage"},   {PodFault::kCounterReset, "counter-reset"},
    {PodFault::kRestart, "restart"},   {PodFault::kUntrustedTls, "untrusted-tls"},
};

uint64_t Fnv1a(std::string_view text, uint64_t hash = 1469598103934665603ULL) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A UUID-shaped (version 4 layout) identifier derived from `key`: stable for the same input.
std::string Uuid(std::string_view key) {
  uint64_t a = Mix(Fnv1a(key)), b = Mix(a ^ Fnv1a(key, 7));
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

// Kubernetes' safe-encoding alphabet for generated name suffixes (pod-template-hash, Pod names).
std::string KubeSuffix(uint64_t value, size_t length) {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (size_t i = 0; i < length; ++i) {
    out += kAlphabet[value % kAlphabet.size()];
    value /= kAlphabet.size();
    if (value == 0) value = Mix(i + 1);
  }
  return out;
}

// A body that is not a valid exposition: an unterminated label set, then an HTML error page.
constexpr std::string_view kGarbageBody =
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"Qwen 1.0\n"
    "<html><head><title>502 Bad Gateway</title></head><body>upstream hiccup</body></html>\n";

constexpr size_t kOversizeBytes = (size_t{1} << 20) + 64 * 1024;
constexpr size_t kGzipBombDecodedBytes = size_t{8} << 20;

const std::string& GzipBomb() {
  // Comment lines: whatever a client decodes is still a valid exposition, just far too much.
  static const std::string bomb = GzipOfRepeated(
      "# padding padding padding padding padding padding padding padding\n", kGzipBombDecodedBytes);
  return bomb;
}

using base::EqualsIgnoreCase;

}  // namespace

std::optional<PodFault> ParsePodFault(std::string_view name) {
  std::string normalized(name);
  std::replace(normalized.begin(), normalized.end(), '_', '-');
  for (const auto& entry : kFaultNames) {
    if (EqualsIgnoreCase(entry.name, normalized)) return entry.fault;
  }
  return std::nullopt;
}

std::string PodFaultNames() {
  std::string names;
  for (const auto& entry : kFaultNames) {
    if (entry.fault == PodFault::kNone) continue;
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

std::string_view PodFaultName(PodFault fault) {
  for (const auto& entry : kFaultNames) {
    if (entry.fault == fault) return entry.name;
  }
  return "none";
}

// -----------------------------------------------------------------------------------------------

struct DeploymentSim::Impl {
  struct Pod {
    // Fixed at Start.
    std::string name;
    std::string component;  // role name; "" for a router
    bool router = false;
    const SimExporter* exporter = nullptr;
    SimContainer container;
    ExporterConfig config;
    std::unique_ptr<FaultServer> server;
    uint16_t port = 0;
    std::atomic<bool> tls{false};  // read per accepted connection

    mutable base::Mutex mu;
    std::optional<PodModel> model GUARDED_BY(mu);
    std::optional<PodModel> reset_snapshot GUARDED_BY(mu);  // counter-reset: last served counters
    // vLLM-Omni Pods: the pipeline simulation whose registry is the body (model then only keeps
    // the clock).
    std::unique_ptr<PipelineSimulation> pipeline GUARDED_BY(mu);
    PodFault fault GUARDED_BY(mu) = PodFault::kNone;
    int generation GUARDED_BY(mu) = 0;  // restarts as a new Pod
    std::string uid GUARDED_BY(mu);
    // When /metrics was last asked for, and the shortest time between two asks (load tests).
    std::optional<std::chrono::steady_clock::time_point> last_scrape GUARDED_BY(mu);
    std::chrono::steady_clock::duration shortest_gap GUARDED_BY(mu) =
        std::chrono::steady_clock::duration::max();
  };

  const DeploymentSimOptions* options = nullptr;
  std::string md_uid;
  std::string rs_name, rs_uid, deployment_uid;
  const SimExporter* engine = nullptr;     // resolved at Start
  const SimExporter* router = nullptr;     // null: no router
  std::vector<std::unique_ptr<Pod>> pods;  // sorted by name
  std::shared_ptr<InFlightStats> stats = std::make_shared<InFlightStats>();
  std::shared_ptr<const std::string> padding;
  std::map<const SimExporter*, std::shared_ptr<const std::string>> oversize_padding
      GUARDED_BY(oversize_mu);
  std::string cert_pem, key_pem;
  Clock::time_point start;
  base::Mutex file_mu;
  base::Mutex oversize_mu;
  std::atomic<bool> ready{false};  // set once every model, padding and the clock are in place
  bool started = false;

  Pod* Find(const std::string& name) const {
    for (const auto& pod : pods) {
      if (pod->name == name) return pod.get();
    }
    return nullptr;
  }

  uint64_t TickNow(const Pod& pod) const REQUIRES(pod.mu) {
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    return pod.model->start_tick() + static_cast<uint64_t>(elapsed / kTrafficTick);
  }

  std::string PodUid(const Pod& pod, int generation) const {
    return Uuid(md_uid + "/" + pod.name + "/" + std::to_string(generation));
  }

  // Under pod.mu: the restart fault's new process.
  void RestartLocked(Pod& pod) REQUIRES(pod.mu) {
    ++pod.generation;
    pod.uid = PodUid(pod, pod.generation);
    pod.model->Restart();
    pod.reset_snapshot.reset();
    if (pod.pipeline) StartPipelineLocked(pod);
  }

  // Under pod.mu: a vLLM-Omni Pod's (new) process, one speech or image pipeline.
  void StartPipelineLocked(Pod& pod) REQUIRES(pod.mu) {
    const ExporterConfig& c = pod.config;
    pod.pipeline.reset();
    pod.pipeline = std::make_unique<PipelineSimulation>(
        PipelineSimOptions{.seed = c.seed ^ c.pod_key ^ static_cast<uint64_t>(pod.generation),
                           .requests_per_second = c.requests_per_second,
                           .pipelines = options->omni_pipeline});
    if (!c.idle) pod.pipeline->Start();
  }

  // Under pod.mu: what the Pod serves.
  std::string BodyLocked(const Pod& pod) const REQUIRES(pod.mu) {
    return pod.pipeline ? pod.pipeline->Render() : pod.model->Render();
  }

  static void NoteScrapeLocked(Pod& pod) REQUIRES(pod.mu) {
    const auto now = std::chrono::steady_clock::now();
    if (pod.last_scrape) pod.shortest_gap = std::min(pod.shortest_gap, now - *pod.last_scrape);
    pod.last_scrape = now;
  }

  FaultReply Plan(Pod& pod, const FaultRequest& request) {
    FaultReply reply;
    reply.headers.emplace_back("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    if (request.path == "/moved") {
      reply.body = "the metrics are not here either\n";
      reply.status = 404;
      reply.reason = "Not Found";
      return reply;
    }
    if (!ready.load(std::memory_order_acquire)) {
      reply.status = 503;
      reply.reason = "Service Unavailable";
      reply.body = "starting\n";
      return reply;
    }
    if (request.path != "/metrics") {
      reply.status = 404;
      reply.reason = "Not Found";
      reply.body = "Not Found\n";
      return reply;
    }
    bool objects_changed = false;
    {
      base::MutexLock lock(&pod.mu);
      NoteScrapeLocked(pod);
      pod.model->AdvanceTo(TickNow(pod));
      switch (pod.fault) {
        case PodFault::kHang:
          reply.action = FaultReply::Action::kHang;
          return reply;
        case PodFault::kHttp500:
          reply.status = 500;
          reply.reason = "Internal Server Error";
          reply.body = "Internal Server Error";
          return reply;
        case PodFault::kRedirect:
          reply.status = 302;
          reply.reason = "Found";
          reply.headers.emplace_back("Location", request.base_url + "/moved");
          reply.body = "Found";
          return reply;
        case PodFault::kGarbage:
          reply.body = kGarbageBody;
          return reply;
        case PodFault::kGzipBomb:
          reply.headers.emplace_back("Content-Encoding", "gzip");
          reply.body_tail = std::shared_ptr<const std::string>(&GzipBomb(), [](auto*) {});
          return reply;
        case PodFault::kOversize: {
          reply.body = BodyLocked(pod);
          base::MutexLock padding_lock(&oversize_mu);
          auto& tail = oversize_padding[pod.exporter];
          if (!tail) tail = RenderPadding(*pod.exporter, kOversizeBytes);
          reply.body_tail = tail;
          return reply;
        }
        case PodFault::kSlowBody:
          reply.action = FaultReply::Action::kTrickle;
          reply.body = BodyLocked(pod);
          reply.body_tail = padding;
          reply.trickle_chunks = 30;
          reply.trickle_interval = std::chrono::milliseconds(100);
          return reply;
        case PodFault::kCounterReset:
          // The first faulted scrape already drops below what the last healthy one served.
          if (!pod.reset_snapshot) pod.reset_snapshot = *pod.model;
          pod.reset_snapshot->HalveCounters();
          pod.reset_snapshot->CopyGaugesFrom(*pod.model);
          reply.body = pod.reset_snapshot->Render();
          break;
        case PodFault::kRestart:
          reply.body = BodyLocked(pod);
          RestartLocked(pod);
          objects_changed = true;
          break;
        case PodFault::kSlow:
          reply.delay = std::chrono::milliseconds(300);
          reply.body = BodyLocked(pod);
          break;
        case PodFault::kNone:
        case PodFault::kUntrustedTls:
          reply.body = BodyLocked(pod);
          break;
      }
    }
    if (!pod.router) reply.body_tail = padding;
    // Best effort: the next change writes the file again, and Start() reported the first.
    if (objects_changed) (void)WriteObjectsFile();
    return reply;
  }

  deployment::ObjectSet BuildObjects() const;
  std::string BuildJson() const;

  // Every Pod's exporter configuration and container; the listeners run (ports are known).
  void ConfigurePods(const DeploymentSimOptions& o);

  // The Pods, sorted by name as the aggregator reads them.
  void CreatePods(const DeploymentSimOptions& o, uint64_t name_hash) {
    for (const SimRole& role : o.roles) {
      int count = role.replicas * role.size;
      for (int i = 0; i < count; ++i) {
        auto pod = std::make_unique<Impl::Pod>();
        pod->name = o.name + "-" + role.name + "-" + std::to_string(i);
        pod->component = role.name;
        pod->exporter = engine;
        pod->config.role = role.kind;
        pods.push_back(std::move(pod));
      }
    }
    if (!o.router.empty()) {
      for (int i = 0; i < std::max(1, o.router_replicas); ++i) {
        auto pod = std::make_unique<Impl::Pod>();
        pod->name = rs_name + "-" + KubeSuffix(Mix(name_hash + 1 + i), 5);
        pod->router = true;
        pod->exporter = router;
        pods.push_back(std::move(pod));
      }
    }
    std::sort(pods.begin(), pods.end(),
              [](const auto& a, const auto& b) { return a->name < b->name; });
  }

  // One fault server per Pod; "" when all listen, else why not.
  std::string StartListeners(const DeploymentSimOptions& o) {
    try {
      for (auto& pod : pods) {
        Impl::Pod* raw = pod.get();
        auto found = o.faults.find(pod->name);
        const PodFault fault = found == o.faults.end() ? PodFault::kNone : found->second;
        {
          base::MutexLock lock(&pod->mu);
          pod->fault = fault;
        }
        pod->tls = fault == PodFault::kUntrustedTls;
        FaultServerOptions server;
        server.cert_pem = cert_pem;
        server.key_pem = key_pem;
        server.tls_for_connection = [raw] { return raw->tls.load(); };
        server.planner = [impl = this, raw](const FaultRequest& request) {
          return impl->Plan(*raw, request);
        };
        server.stats = stats;
        pod->server = std::make_unique<FaultServer>(std::move(server));
        pod->port = pod->server->port();
      }
    } catch (const std::exception& e) {
      return std::string("cannot start a Pod listener: ") + e.what();
    }
    return "";
  }

  Status WriteObjectsFile() {
    if (options->objects_file.empty()) return Status::Ok();
    base::MutexLock lock(&file_mu);
    return base::WriteFileAtomically(options->objects_file, BuildJson() + "\n");
  }

  // Prometheus file_sd: one target group per Pod, labelled with its namespace and name (the
  // labels the Prometheus source selects by) and its role.
  Status WriteFileSd() const {
    if (options->file_sd_file.empty()) return Status::Ok();
    return base::WriteFileAtomically(options->file_sd_file,
                                     FileSdJson(*options, PodInfos()) + "\n");
  }

  std::vector<SimPodInfo> PodInfos() const;
};

deployment::ObjectSet DeploymentSim::Impl::BuildObjects() const {
  const DeploymentSimOptions& o = *options;
  deployment::ObjectSet set;
  deployment::ModelDeployment md;
  md.metadata.name = o.name;
  md.metadata.namespace_ = o.ns;
  md.metadata.uid = md_uid;
  md.engine = o.engine;
  md.kv_cache = o.kv_cache;
  for (const SimRole& role : o.roles) {
    deployment::Role r;
    r.name = role.name;
    r.kind = deployment::RoleKindName(role.kind);
    r.replicas = role.replicas;
    r.size = role.size;
    md.roles.push_back(std::move(r));
  }
  if (!o.router.empty()) md.router = deployment::Router{o.router, o.router_replicas};
  set.model_deployments.push_back(std::move(md));

  const deployment::OwnerReference md_owner{"worker.gpustack.ai/v1alpha1", "ModelDeployment",
                                            o.name, md_uid, true};
  for (const auto& pod : pods) {
    deployment::Pod p;
    p.metadata.name = pod->name;
    p.metadata.namespace_ = o.ns;
    {
      base::MutexLock lock(&pod->mu);
      p.metadata.uid = pod->uid;
    }
    p.metadata.labels[std::string(deployment::kLabelName)] = deployment::kLabelNameValue;
    p.metadata.labels[std::string(deployment::kLabelInstance)] = o.name;
    if (pod->router) {
      p.metadata.labels[std::string(deployment::kLabelRouter)] = o.router;
      p.metadata.owner_references.push_back({"apps/v1", "ReplicaSet", rs_name, rs_uid, true});
    } else {
      p.metadata.labels[std::string(deployment::kLabelComponent)] = pod->component;
      p.metadata.owner_references.push_back(md_owner);
    }
    p.metadata.annotations["prometheus.io/scrape"] = "true";
    p.metadata.annotations["prometheus.io/path"] = "/metrics";
    p.metadata.annotations["prometheus.io/port"] = std::to_string(pod->port);
    if (pod->tls.load()) p.metadata.annotations["prometheus.io/scheme"] = "https";
    deployment::Container c;
    c.name = pod->container.name;
    c.command = pod->container.command;
    c.args = pod->container.args;
    c.ports.push_back({pod->port, pod->router ? "metrics" : "http", "TCP"});
    p.containers.push_back(std::move(c));
    p.pod_ip = "127.0.0.1";
    p.phase = "Running";
    set.pods.push_back(std::move(p));
  }
  if (!o.router.empty()) {
    deployment::Deployment dep;
    dep.metadata.name = o.name + "-router";
    dep.metadata.namespace_ = o.ns;
    dep.metadata.uid = deployment_uid;
    dep.metadata.labels[std::string(deployment::kLabelName)] = deployment::kLabelNameValue;
    dep.metadata.labels[std::string(deployment::kLabelInstance)] = o.name;
    dep.metadata.owner_references.push_back(md_owner);
    deployment::ReplicaSet rs;
    rs.metadata.name = rs_name;
    rs.metadata.namespace_ = o.ns;
    rs.metadata.uid = rs_uid;
    rs.metadata.labels = dep.metadata.labels;
    rs.metadata.owner_references.push_back(
        {"apps/v1", "Deployment", dep.metadata.name, deployment_uid, true});
    set.replica_sets.push_back(std::move(rs));
    set.deployments.push_back(std::move(dep));
  }
  return set;
}

namespace {

Json MetaJson(const deployment::ObjectMeta& meta) {
  Json json = {{"name", meta.name}, {"namespace", meta.namespace_}, {"uid", meta.uid}};
  if (!meta.labels.empty()) json["labels"] = meta.labels;
  if (!meta.annotations.empty()) json["annotations"] = meta.annotations;
  if (!meta.owner_references.empty()) {
    Json owners = Json::array();
    for (const auto& ref : meta.owner_references) {
      owners.push_back({{"apiVersion", ref.api_version},
                        {"kind", ref.kind},
                        {"name", ref.name},
                        {"uid", ref.uid},
                        {"controller", ref.controller},
                        {"blockOwnerDeletion", true}});
    }
    json["ownerReferences"] = owners;
  }
  return json;
}

}  // namespace

std::string DeploymentSim::Impl::BuildJson() const {
  const DeploymentSimOptions& o = *options;
  deployment::ObjectSet set = BuildObjects();
  Json items = Json::array();
  for (const auto& md : set.model_deployments) {
    Json spec = {{"model", {{"name", o.model}}},
                 {"engine", {{"name", md.engine}, {"version", engine ? engine->version : ""}}}};
    if (md.kv_cache) {
      spec["kvCache"] = {{"poolRef", {{"name", o.name + "-kv-pool"}}},
                         {"connector", engine ? engine->kv_connector : ""}};
    }
    Json roles = Json::array();
    for (const auto& role : md.roles) {
      roles.push_back({{"name", role.name},
                       {"kind", role.kind},
                       {"replicas", role.replicas},
                       {"size", role.size},
                       {"instanceType", "gpu"}});
    }
    spec["roles"] = roles;
    if (md.router) spec["router"] = {{"name", md.router->name}, {"replicas", *md.router->replicas}};
    items.push_back({{"apiVersion", "worker.gpustack.ai/v1alpha1"},
                     {"kind", "ModelDeployment"},
                     {"metadata", MetaJson(md.metadata)},
                     {"spec", spec}});
  }
  for (size_t i = 0; i < set.pods.size(); ++i) {
    const deployment::Pod& pod = set.pods[i];
    Json containers = Json::array();
    for (const auto& c : pod.containers) {
      Json container = {{"name", c.name}, {"image", pods[i]->container.image}};
      if (!c.command.empty()) container["command"] = c.command;
      if (!c.args.empty()) container["args"] = c.args;
      Json ports = Json::array();
      for (const auto& port : c.ports) {
        ports.push_back({{"name", port.name},
                         {"containerPort", port.container_port},
                         {"protocol", port.protocol}});
      }
      container["ports"] = ports;
      containers.push_back(container);
    }
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata", MetaJson(pod.metadata)},
                     {"spec", {{"containers", containers}}},
                     {"status", {{"podIP", pod.pod_ip}, {"phase", pod.phase}}}});
  }
  for (const auto& rs : set.replica_sets) {
    items.push_back({{"apiVersion", "apps/v1"},
                     {"kind", "ReplicaSet"},
                     {"metadata", MetaJson(rs.metadata)},
                     {"spec", {{"replicas", o.router_replicas}}}});
  }
  for (const auto& dep : set.deployments) {
    items.push_back({{"apiVersion", "apps/v1"},
                     {"kind", "Deployment"},
                     {"metadata", MetaJson(dep.metadata)},
                     {"spec", {{"replicas", o.router_replicas}}}});
  }
  Json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
  return list.dump(2);
}

// -----------------------------------------------------------------------------------------------

DeploymentSim::DeploymentSim(DeploymentSimOptions options)
    : impl_(std::make_unique<Impl>()), options_(std::move(options)) {
  impl_->options = &options_;
  impl_->engine = FindSimEngine(options_.engine);  // null for an unknown one: Start() refuses
  if (options_.roles.empty()) options_.roles.push_back({"server", RoleKind::kServer, 1, 1, {}});
  if (options_.uid.empty()) {
    options_.uid = Uuid(options_.ns + "/" + options_.name + "/" + std::to_string(options_.seed));
  }
}

// The options' engine, router, roles and faults fit together; "" when they do, else why not.
std::string CheckOptions(const DeploymentSimOptions& o) {
  auto list = [](const std::vector<std::string>& names, std::string_view last) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) {
      if (i > 0) out += i + 1 == names.size() && last.empty() ? " or " : ", ";
      out += names[i];
    }
    if (!last.empty()) out += " or " + std::string(last);
    return out;
  };
  const SimExporter* engine = FindSimEngine(o.engine);
  if (engine == nullptr) {
    return "unknown engine \"" + o.engine + "\" (" + list(SimEngineNames(), "") + ")";
  }
  if (engine->check) {
    if (std::string why = engine->check(o); !why.empty()) return why;
  }
  if (!o.router.empty() && FindSimRouter(o.router) == nullptr) {
    return "unknown router \"" + o.router + "\" (" + list(SimRouterNames(), "none") + ")";
  }
  for (const SimRole& role : o.roles) {
    if (role.name.empty() || role.replicas < 1 || role.size < 1) {
      return "role \"" + role.name + "\": needs a name, replicas >= 1 and size >= 1";
    }
  }
  return "";
}

// Both a prefill and a decode role: the engines run as P/D pairs.
bool IsPrefillDecode(const DeploymentSimOptions& o) {
  auto has = [&](RoleKind kind) {
    return std::any_of(o.roles.begin(), o.roles.end(),
                       [&](const SimRole& role) { return role.kind == kind; });
  };
  return has(RoleKind::kPrefill) && has(RoleKind::kDecode);
}

DeploymentSim::~DeploymentSim() { Stop(); }

Status DeploymentSim::Start() {
  auto fail = [&](std::string message) {
    Stop();
    return Status::InvalidArgument(std::move(message));
  };
  if (impl_->started) return fail("the deployment simulator was already started");
  impl_->started = true;
  const DeploymentSimOptions& o = options_;
  if (std::string why = CheckOptions(o); !why.empty()) return fail(why);
  impl_->router = o.router.empty() ? nullptr : FindSimRouter(o.router);
  impl_->md_uid = o.uid;
  const uint64_t name_hash = Mix(Fnv1a(o.ns + "/" + o.name) ^ o.seed);
  impl_->rs_name = o.name + "-router-" + KubeSuffix(name_hash, 10);
  impl_->rs_uid = Uuid(impl_->md_uid + "/replicaset/" + impl_->rs_name);
  impl_->deployment_uid = Uuid(impl_->md_uid + "/deployment/" + o.name + "-router");
  impl_->CreatePods(o, name_hash);
  for (const auto& [name, fault] : o.faults) {
    if (!impl_->Find(name)) return fail("fault for unknown Pod " + name);
  }

  // Certificates for untrusted-tls, which any Pod may be switched to at runtime.
  if (!o.tls_cert_file.empty()) {
    if (!base::ReadFile(o.tls_cert_file, &impl_->cert_pem).ok() ||
        !base::ReadFile(o.tls_key_file, &impl_->key_pem).ok()) {
      return fail("cannot read " + o.tls_cert_file + " / " + o.tls_key_file);
    }
  } else if (Status made = net::SelfSignedCertificate("modelmetrics-sim-pod", {"127.0.0.1"},
                                                      &impl_->cert_pem, &impl_->key_pem);
             !made.ok()) {
    Stop();
    return made;
  }
  // Listeners first: the Pods' arguments and the routers' worker lists name the ports.
  if (std::string why = impl_->StartListeners(o); !why.empty()) return fail(why);

  impl_->ConfigurePods(o);
  impl_->padding = RenderPadding(*impl_->engine, o.padding_bytes);
  impl_->start = Clock::now();
  impl_->ready.store(true, std::memory_order_release);
  if (Status written = impl_->WriteObjectsFile(); !written.ok()) return fail(written.message());
  if (Status written = impl_->WriteFileSd(); !written.ok()) return fail(written.message());
  return Status::Ok();
}

void DeploymentSim::Impl::ConfigurePods(const DeploymentSimOptions& o) {
  const bool pd = IsPrefillDecode(o);
  std::vector<WorkerRef> workers;
  std::map<std::string, int> role_pods;
  for (const auto& pod : pods) {
    if (pod->router) continue;
    workers.push_back({"http://127.0.0.1:" + std::to_string(pod->port), pod->config.role});
    ++role_pods[pod->component];
  }
  for (auto& pod : pods) {
    ExporterConfig& c = pod->config;
    c.model = o.model;
    c.pool_name = o.name;
    c.seed = o.seed;
    c.pod_key = Fnv1a(pod->name);
    c.idle = o.idle;
    c.warm_seconds = o.warm_seconds;
    c.prefill_decode = pd;
    c.kv_pool = o.kv_cache;
    c.variants = o.variants;
    const SimRole* role = nullptr;
    for (const SimRole& r : o.roles) {
      if (!pod->router && r.name == pod->component) role = &r;
    }
    const int sharing =
        pod->router ? std::max(1, o.router_replicas) : std::max(1, role_pods[pod->component]);
    if (pod->router) c.workers = workers;
    c.requests_per_second = o.requests_per_second / sharing;
    for (const DeploymentSimOptions::RateStep& step : o.rate_steps) {
      c.rate_steps.push_back({.tick = static_cast<uint64_t>(step.after / kTrafficTick),
                              .requests_per_second = step.requests_per_second / sharing});
    }
    c.max_running = o.max_running;
    const SimPodContext context{.options = o,
                                .role = role,
                                .role_kind = c.role,
                                .prefill_decode = pd,
                                .port = std::to_string(pod->port),
                                .workers = workers};
    pod->exporter->container(context, &pod->container, &c);
    base::MutexLock lock(&pod->mu);
    pod->model.emplace(*pod->exporter, c);
    pod->uid = PodUid(*pod, 0);
    if (pod->exporter->pipeline) StartPipelineLocked(*pod);
    if (pod->fault == PodFault::kRestart) RestartLocked(*pod);
  }
}

void DeploymentSim::Stop() {
  for (auto& pod : impl_->pods) pod->server.reset();
}

std::vector<std::string> DeploymentSim::PodNames() const {
  std::vector<std::string> names;
  for (const auto& pod : impl_->pods) names.push_back(pod->name);
  return names;
}

std::vector<SimPodInfo> DeploymentSim::Impl::PodInfos() const {
  std::vector<SimPodInfo> out;
  for (const auto& pod : pods) {
    SimPodInfo info;
    info.name = pod->name;
    info.component = pod->component;
    info.router = pod->router;
    info.port = pod->port;
    info.url = std::string(pod->tls.load() ? "https" : "http") +
               "://127.0.0.1:" + std::to_string(pod->port) + "/metrics";
    base::MutexLock lock(&pod->mu);
    info.uid = pod->uid;
    info.fault = pod->fault;
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<SimPodInfo> DeploymentSim::Pods() const { return impl_->PodInfos(); }

std::string FileSdJson(const DeploymentSimOptions& options, const std::vector<SimPodInfo>& pods) {
  nlohmann::json groups = nlohmann::json::array();
  for (const SimPodInfo& pod : pods) {
    groups.push_back({{"targets", {"127.0.0.1:" + std::to_string(pod.port)}},
                      {"labels",
                       {{"namespace", options.ns},
                        {"pod", pod.name},
                        {"model_deployment", options.name},
                        {"component", pod.router ? std::string("router") : pod.component},
                        {"__scheme__", pod.url.starts_with("https") ? "https" : "http"}}}});
  }
  return groups.dump(2);
}

std::string DeploymentSim::PodUrl(const std::string& pod) const {
  const Impl::Pod* found = impl_->Find(pod);
  if (!found) return "";
  return std::string(found->tls.load() ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(found->port) + "/metrics";
}

bool DeploymentSim::SetFault(const std::string& pod, PodFault fault) {
  Impl::Pod* found = impl_->Find(pod);
  if (!found) return false;
  {
    base::MutexLock lock(&found->mu);
    if (!found->model) return false;
    if (found->pipeline && fault == PodFault::kCounterReset) return false;
    found->fault = fault;
    found->reset_snapshot.reset();
    if (fault == PodFault::kRestart) impl_->RestartLocked(*found);
  }
  found->tls = fault == PodFault::kUntrustedTls;
  (void)impl_->WriteObjectsFile();  // best effort, as in Serve
  return true;
}

deployment::ObjectSet DeploymentSim::Objects() const { return impl_->BuildObjects(); }

std::string DeploymentSim::ObjectsJson() const { return impl_->BuildJson(); }

std::string DeploymentSim::MetricsAt(const std::string& pod,
                                     std::chrono::milliseconds elapsed) const {
  const Impl::Pod* found = impl_->Find(pod);
  if (!found) return "";
  {
    base::MutexLock lock(&found->mu);
    if (!found->model || found->pipeline) return "";
  }
  PodModel model(*found->exporter, found->config);
  model.AdvanceTo(model.start_tick() + static_cast<uint64_t>(elapsed / kTrafficTick));
  return model.Render();
}

PipelineSimulation* DeploymentSim::Pipeline(const std::string& pod) const {
  Impl::Pod* found = impl_->Find(pod);
  if (!found) return nullptr;
  base::MutexLock lock(&found->mu);
  return found->pipeline.get();
}

size_t DeploymentSim::ScrapesServed() const { return impl_->stats->requests.load(); }

std::chrono::milliseconds DeploymentSim::ShortestScrapeGap() const {
  auto shortest = std::chrono::steady_clock::duration::max();
  for (const auto& pod : impl_->pods) {
    base::MutexLock lock(&pod->mu);
    shortest = std::min(shortest, pod->shortest_gap);
  }
  if (shortest == std::chrono::steady_clock::duration::max())
    return std::chrono::milliseconds::max();
  return std::chrono::duration_cast<std::chrono::milliseconds>(shortest);
}

size_t DeploymentSim::PeakConcurrentScrapes() const {
  return static_cast<size_t>(impl_->stats->peak.load());
}

void RemoveOutputFiles(const std::string& objects_file, const std::string& file_sd_file) {
  for (const std::string* path : {&objects_file, &file_sd_file}) {
    if (!path->empty()) std::remove(path->c_str());
  }
}

int RunDeploymentSimulator(const DeploymentSimOptions& options, std::chrono::milliseconds duration,
                           std::ostream& out, std::ostream& err, const StopWait& wait) {
  DeploymentSim sim(options);
  if (const base::Status started = sim.Start(); !started.ok()) {
    err << "simulate deployment: " << started.message() << "\n";
    return 1;
  }
  out << "deployment " << options.ns << "/" << options.name << " (" << options.engine
      << (options.router.empty() ? "" : ", router " + options.router) << ", seed " << options.seed
      << (options.idle ? ", idle" : "") << ")\n";
  for (const SimPodInfo& pod : sim.Pods()) {
    out << "  " << pod.name << "  " << pod.url;
    if (pod.fault != PodFault::kNone) out << "  fault=" << PodFaultName(pod.fault);
    out << "\n";
  }
  if (!options.objects_file.empty()) out << "objects: " << options.objects_file << "\n";
  if (!options.file_sd_file.empty()) out << "file_sd targets: " << options.file_sd_file << "\n";
  out.flush();
  WaitOut(wait, duration);
  sim.Stop();
  RemoveOutputFiles(options.objects_file, options.file_sd_file);
  out << "served " << sim.ScrapesServed() << " scrapes\n";
  return 0;
}

}  // namespace modelmetrics::sim
