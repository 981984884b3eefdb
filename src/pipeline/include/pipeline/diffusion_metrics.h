// Upstream's OmniModalityMetrics, diffusion part: the per-(stage, replica) execution breakdown
// (§3.3 of docs/pipeline-behaviour.md) and its finalize (§4.17 observe_diffusion_finalize). The
// audio and Speech part is AudioMetrics (audio_metrics.h).
//
// Contract.
// - The constructor registers the kDiffusion catalog families (all lazy: a child appears on its
//   first observation that passes the family's Guard). One DiffusionMetrics per registry.
// - Each Observe* method is its row of observe_table.h (kModalityMethods), carried out by an
//   ObserveRecorder; stage and replica labels are the decimal ids. With the registry disabled
//   nothing is recorded.
// - ObserveFinalize reads the request's diffusion metrics: nothing without a replica or with no
//   metrics; exec (and exec per step when steps > 0), pre/post-processing, VAE decode, forward
//   (and the denoise step latency for image outputs with steps), kv load, each when its key is
//   present.
//
// Thread-safety: every method may be called from any thread at once (ObserveRecorder).
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_DIFFUSION_METRICS_H_
#define MODELMETRICS_PIPELINE_DIFFUSION_METRICS_H_

#include <string>

#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"
#include "pipeline/observe_recorder.h"
#include "pipeline/stats_tables.h"

namespace modelmetrics::pipeline {

class DiffusionMetrics {
 public:
  DiffusionMetrics(Registry& registry, std::string model_name);
  DiffusionMetrics(const DiffusionMetrics&) = delete;
  DiffusionMetrics& operator=(const DiffusionMetrics&) = delete;

  bool ok() const { return families_.Complete(); }

  void ObserveDiffusionExec(int stage, int replica, double seconds) const;
  void ObserveDiffusionExecPerStep(int stage, int replica, double seconds) const;
  void ObserveDiffusionPreprocess(int stage, int replica, double seconds) const;
  void ObserveDiffusionPostprocess(int stage, int replica, double seconds) const;
  void ObserveVaeDecode(int stage, int replica, double seconds) const;
  void ObserveDiffusionForward(int stage, int replica, double seconds) const;
  void ObserveDiffusionKvLoad(int stage, int replica, double seconds) const;
  void ObserveImageTtfp(int stage, int replica, double seconds) const;
  void ObserveDenoiseStepLatency(int stage, int replica, double seconds) const;
  // §4.17 observe_diffusion_finalize: needs a non-empty stats.diffusion_metrics and a replica.
  void ObserveFinalize(const StageRequestStats& stats) const;

 private:
  FamilySet<OmniFamily> families_;
  ObserveRecorder recorder_;
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_DIFFUSION_METRICS_H_
