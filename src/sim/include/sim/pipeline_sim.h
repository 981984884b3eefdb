// The pipeline simulator: a seeded synthetic workload through two multi-stage pipelines, driving
// every pipeline-metrics family through the public observe API, served on `/metrics`.
//
//   speech: thinker AR (2 replicas) -> talker AR (1) -> code2wav audio (2), streaming PCM chunks
//           whose arrival jitter sometimes causes underruns;
//   image:  AR (1) -> diffusion (2).
//
// Requests arrive as a Poisson process; stages take random times; transfers, kv-transfer waits,
// waiting-queue snapshots and per-engine scheduler/iteration stats are reported as a real
// orchestrator would; small rates of failures (stage errors), client aborts and disconnects.
// Everything runs in real time on one simulation thread (so Prometheus rates are real), and the
// log tables are printed every `log_interval`.
//
// Coverage: at the default rate every catalog family (vllm_omni:* and vllm:*) has a non-zero
// sample within 10 s, so a demo shows the whole catalog. Sparse events therefore also come on a
// fixed cadence, not only by chance: a Speech-API stream interrupted by the client, an empty
// codec output (200 OK, no audio), diffusion stages receiving the AR stage's KV, NIXL transfer
// failures, preemptions (tests/sim/pipeline_sim_test.cc holds this).
//
// Thread-safety: RunPipelineSimulator blocks until the duration has passed.
#ifndef MODELMETRICS_SIM_PIPELINE_SIM_H_
#define MODELMETRICS_SIM_PIPELINE_SIM_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "sim/stop_wait.h"

namespace modelmetrics {
class Registry;
}

namespace modelmetrics::sim {

// Which of the two pipelines run (a vLLM-Omni Pod serves one model, so one pipeline).
enum class SimPipelines { kBoth, kSpeech, kImage };

struct PipelineSimOptions {
  std::string listen = "127.0.0.1:9400";  // HOST:PORT; port 0 picks a free one
  bool log_stats = true;
  std::chrono::milliseconds duration{60000};
  std::chrono::milliseconds log_interval{10000};  // 0: no periodic tables
  uint64_t seed = 1;
  double requests_per_second = 3;  // per pipeline
  SimPipelines pipelines = SimPipelines::kBoth;
  std::ostream* out = nullptr;  // tables and the listening line; null: std::cout
  // Called on the simulation thread once the duration has passed, while /metrics is still
  // served on `port` (tests scrape the final state here).
  std::function<void(uint16_t port)> before_stop;
  // Waits out `duration`; a stop it reports ends the run early (tables still printed).
  StopWait wait;
};

// Runs the simulation; returns a process exit code (0, or 1 when the server cannot start).
int RunPipelineSimulator(const PipelineSimOptions& options);

// One simulation on its own thread with its own registry and no server or tables (`listen`,
// `duration` and `log_interval` are ignored): a vLLM-Omni Pod of the deployment simulator, which
// serves Render() as the Pod's body. Runs from Start() until Stop() or destruction.
//
// Thread-safety: every method may be called from any thread.
class PipelineSimulation {
 public:
  explicit PipelineSimulation(PipelineSimOptions options);
  ~PipelineSimulation();  // Stop()s
  PipelineSimulation(const PipelineSimulation&) = delete;
  PipelineSimulation& operator=(const PipelineSimulation&) = delete;

  void Start();
  void Stop();
  // Pause() returns once no simulation event runs, and none runs until Resume(): a read of
  // Render() (or a scrape of it) then sees the same values as registry() (tests).
  void Pause();
  void Resume();

  std::string Render() const;  // the registry's text exposition
  const Registry& registry() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_PIPELINE_SIM_H_
