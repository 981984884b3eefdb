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
// Thread-safety: RunPipelineSimulator blocks until the duration has passed.
#ifndef MODELMETRICS_SIM_PIPELINE_SIM_H_
#define MODELMETRICS_SIM_PIPELINE_SIM_H_

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace modelmetrics::sim {

struct PipelineSimOptions {
  std::string listen = "127.0.0.1:9400";  // HOST:PORT; port 0 picks a free one
  bool log_stats = true;
  std::chrono::milliseconds duration{60000};
  std::chrono::milliseconds log_interval{10000};  // 0: no periodic tables
  uint64_t seed = 1;
  double requests_per_second = 3;  // per pipeline
  std::ostream* out = nullptr;     // tables and the listening line; null: std::cout
};

// Runs the simulation; returns a process exit code (0, or 1 when the server cannot start).
int RunPipelineSimulator(const PipelineSimOptions& options);

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_PIPELINE_SIM_H_
