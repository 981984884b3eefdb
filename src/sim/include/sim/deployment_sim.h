// The deployment simulator: loopback HTTP servers playing the Pods of one ModelDeployment (engine
// roles and an optional router), each serving /metrics exactly as its exporter does (see
// sim/exporter_model.h), plus the Kubernetes objects that describe them (ModelDeployment, Pods, the
// router's ReplicaSet and Deployment) in the shape `kubectl get -o json` prints and the
// deployment aggregator reads: scrape annotations, container ports and args, owner references.
//
// Every Pod listens on its own 127.0.0.1 port (port 0 at Start); all Pods' objects carry podIP
// 127.0.0.1. Traffic evolves in 100 ms ticks from the seed (sim/pod_model.h); a scrape brings the
// Pod's model up to the elapsed time, so what a Pod serves depends only on the options and the
// time elapsed since Start.
//
// A vllm-omni deployment's Pods each run one pipeline simulation (sim/pipeline_sim.h: the speech
// or the image pipeline, in real time, with its own registry) and serve its registry, as a
// vLLM-Omni server serves its orchestrator's; they are not deterministic, have no router or P/D
// halves, and take every fault but counter-reset (restart starts a new pipeline).
//
// Faults, per Pod, at start (options.faults) or at runtime (SetFault), take effect on the next
// request or connection:
//   hang            accepts and reads the request, never answers
//   slow            answers in full, but only after 300 ms (a loaded Pod)
//   slow-body       sends the headers at once, then trickles the body over about 3 s
//   oversize        a valid exposition of more than 1 MiB
//   gzip-bomb       Content-Encoding: gzip, ~9 KiB that decode to 8 MiB
//   http-500        500 Internal Server Error
//   redirect        302 to another path on the same loopback listener
//   garbage         200 with a body that is not a valid exposition
//   counter-reset   every scrape, the first one included, finds every counter and histogram
//                   halved from the value before
//                   (exporter restarts that keep the Pod UID)
//   restart         the Pod restarts as a new Pod (new UID, counters from zero) when the fault is
//                   set and again after every scrape it serves while set
//   untrusted-tls   the listener speaks TLS with a certificate no CA trusts; the Pod's
//                   annotations switch to scheme https
// Objects() always describes the current Pods (UIDs, schemes); with `objects_file` set the file
// is rewritten (atomically) whenever they change.
//
// Thread-safety: after Start(), every method may be called from any thread concurrently with
// scrapes. Start() and Stop() must not run concurrently with each other.
#ifndef MODELMETRICS_SIM_DEPLOYMENT_SIM_H_
#define MODELMETRICS_SIM_DEPLOYMENT_SIM_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "kube/object_file.h"
#include "kube/objects.h"
#include "sim/pipeline_sim.h"
#include "sim/sim_variant.h"
#include "sim/stop_wait.h"

namespace modelmetrics::sim {

using base::Status;

enum class PodFault {
  kNone,
  kHang,
  kSlow,
  kSlowBody,
  kOversize,
  kGzipBomb,
  kHttp500,
  kRedirect,
  kGarbage,
  kCounterReset,
  kRestart,
  kUntrustedTls,
};

// "none", "hang", "slow", "slow-body", "oversize", "gzip-bomb", "http-500", "redirect", "garbage",
// "counter-reset", "restart", "untrusted-tls" (underscores accepted when parsing).
std::optional<PodFault> ParsePodFault(std::string_view name);
std::string_view PodFaultName(PodFault fault);
// Every fault's name but none's, comma-separated, for messages: "hang, slow, ...".
std::string PodFaultNames();

struct SimRole {
  std::string name;  // e.g. "server", "prompt"
  deployment::RoleKind kind = deployment::RoleKind::kServer;
  int replicas = 1;
  int size = 1;                         // Pods per replica
  std::vector<std::string> extra_args;  // appended to each Pod's container args
};

struct DeploymentSimOptions {
  std::string name = "chat";
  std::string ns = "default";
  std::string uid;  // empty: derived from namespace, name and seed
  // The names a ModelDeployment gives them, resolved through sim/exporter_registry.h (the engine
  // when the simulator is made, the router at Start).
  std::string engine = "vllm";  // vllm | sglang | vllm-omni (any case)
  // vllm-omni: the pipeline every Pod runs (sim/pipeline_sim.h; one model per Pod).
  SimPipelines omni_pipeline = SimPipelines::kSpeech;
  std::string model = "Qwen/Qwen2.5-0.5B-Instruct";
  std::vector<SimRole> roles;  // empty: one "server" role with one Pod
  std::string router;          // "" | llm-d-router | vllm-router | sglang-gateway
  int router_replicas = 1;
  bool kv_cache = false;      // attach a KV cache pool (vLLM: connector; SGLang: tiers)
  bool kv_connector = false;  // vLLM: render --kv-transfer-config even without a pool
  uint64_t seed = 1;
  bool idle = false;
  double requests_per_second = 8;  // offered to the deployment
  // Later rates offered to the deployment: from `after` the start on, `requests_per_second`.
  struct RateStep {
    std::chrono::milliseconds after{0};
    double requests_per_second = 0;
  };
  std::vector<RateStep> rate_steps;
  int max_running = 0;                     // each engine's batch (ExporterConfig); 0: no limit
  double warm_seconds = 30;                // busy Pods' history before Start
  size_t padding_bytes = 0;                // extra realistic series per engine scrape (benchmarks)
  std::map<std::string, PodFault> faults;  // by Pod name
  // The untrusted-tls certificate; empty: a self-signed one is generated at Start.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string objects_file;  // non-empty: written at Start and on every change
  // Non-empty: Prometheus file_sd targets for every Pod (FileSdJson), written at Start.
  std::string file_sd_file;
  std::vector<SimVariant> variants;  // upstream variants the exporters write (sim_variant.h)
};

// A Pod as the simulator runs it.
struct SimPodInfo {
  std::string name;
  std::string uid;
  std::string component;  // role name, or "" for a router Pod
  bool router = false;
  uint16_t port = 0;
  std::string url;  // http(s)://127.0.0.1:<port>/metrics
  PodFault fault = PodFault::kNone;
};

class DeploymentSim {
 public:
  explicit DeploymentSim(DeploymentSimOptions options);
  ~DeploymentSim();  // Stop()s

  DeploymentSim(const DeploymentSim&) = delete;
  DeploymentSim& operator=(const DeploymentSim&) = delete;

  // Validates the options, starts every Pod's listener and writes the objects file. False with
  // `*error` on bad options (unknown engine or router, a fault for an unknown Pod) or
  // when a listener or the certificate cannot be set up. Once only.
  Status Start();
  // Closes every listener and connection (hanging and trickling ones included). Idempotent.
  void Stop();

  const DeploymentSimOptions& options() const { return options_; }

  // Pod names, sorted: engines `<name>-<role>-<i>`, routers `<name>-router-<hash>-<suffix>`.
  std::vector<std::string> PodNames() const;
  std::vector<SimPodInfo> Pods() const;
  // The Pod's metrics URL, or "" for an unknown Pod.
  std::string PodUrl(const std::string& pod) const;

  // Sets (kNone clears) a Pod's fault; false for an unknown Pod.
  bool SetFault(const std::string& pod, PodFault fault);

  deployment::ObjectSet Objects() const;
  // A `kubectl get -o json` List of the same objects.
  std::string ObjectsJson() const;

  // What `pod` would serve at `elapsed` after Start with no fault, computed on a fresh model
  // (it does not disturb the served state). "" for an unknown Pod or a vLLM-Omni one (its
  // pipeline runs in real time). For determinism tests.
  std::string MetricsAt(const std::string& pod, std::chrono::milliseconds elapsed) const;

  // A vLLM-Omni Pod's running pipeline (null for other Pods); valid until its next restart.
  PipelineSimulation* Pipeline(const std::string& pod) const;

  size_t ScrapesServed() const;          // requests answered or attempted, every Pod
  size_t PeakConcurrentScrapes() const;  // the most requests in flight at once, every Pod
  // The shortest time between two /metrics requests to one Pod, over every Pod and the whole
  // run (milliseconds::max() before any Pod was asked twice).
  std::chrono::milliseconds ShortestScrapeGap() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  DeploymentSimOptions options_;
};

// Prometheus `file_sd` target groups, one per Pod: its 127.0.0.1 address, and the labels
// `namespace`, `pod` (what the Prometheus source selects by), `model_deployment`, `component`
// (role name or `router`) and `__scheme__`.
std::string FileSdJson(const DeploymentSimOptions& options, const std::vector<SimPodInfo>& pods);

// Removes a run's objects and file_sd files ("" paths are skipped): they name Pods that are gone.
void RemoveOutputFiles(const std::string& objects_file, const std::string& file_sd_file);

// `modelmetrics simulate deployment`: starts the simulator, prints each Pod's URL (and where the
// objects file is) to `out`, serves for `duration` (or until `wait` says stop), stops and removes
// the objects and file_sd files (their Pods are gone). Returns a process exit code.
int RunDeploymentSimulator(const DeploymentSimOptions& options, std::chrono::milliseconds duration,
                           std::ostream& out, std::ostream& err, const StopWait& wait = {});

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_DEPLOYMENT_SIM_H_
