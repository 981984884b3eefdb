// vLLM-Omni's four observe classes. See observe_types.h for the contract; the generic type is
// observe_type.h, the rows pipeline/observe_table.h.
#include "observe_types.h"

#include <iterator>
#include <string_view>

#include "observe_type.h"

namespace modelmetrics::python {
namespace {

using observe_type::ClassDef;
using pipeline::Group;

constexpr Group kPrometheusGroups[] = {Group::kPipeline, Group::kImage, Group::kDuplex};
constexpr Group kModalityGroups[] = {Group::kDiffusion, Group::kAudio, Group::kSpeech};
constexpr Group kTransferGroups[] = {Group::kTransfer};
constexpr Group kRealtimeGroups[] = {Group::kRealtime};

// The types are upstream's classes themselves (named for the modules that re-export them), not
// bases of Python subclasses: a Python subclass adds about 9 ns to every call (measured in
// bench/python/observe_bench.py), a tenth of a hot method's budget.
constexpr ClassDef kPrometheusClass{
    "prometheus", "modelmetrics.vllm_omni.metrics.prometheus.OmniPrometheusMetrics",
    "OmniPrometheusMetrics(model_name, log_stats=True)\n--\n\n"
    "Pipeline-level vllm_omni:* families for one model. Binds running, waiting, "
    "e2e_request_latency_s, prompt_tokens, generation_tokens, request_queue_wait_s, "
    "num_inference_steps, image_count and image_pixels for model_name at once (zeros from the "
    "start); the other children appear on first observation. With log_stats=False every method "
    "returns at once.",
    kPrometheusGroups};
constexpr ClassDef kModalityClass{
    "modality", "modelmetrics.vllm_omni.metrics.modality.OmniModalityMetrics",
    "OmniModalityMetrics(model_name, log_stats=True)\n--\n\n"
    "Per-(stage, replica) audio, diffusion breakdown and Speech stream families for one model; "
    "every child is bound on first observation. stage and replica are str label values.",
    kModalityGroups};
constexpr ClassDef kTransferClass{
    "transfer", "modelmetrics.vllm_omni.metrics.transfer.OmniTransferMetrics",
    "OmniTransferMetrics(model_name, log_stats=True)\n--\n\n"
    "transfer_size_bytes, transfer_tx_s, transfer_rx_s and transfer_in_flight_s by (from_stage, "
    "from_replica, to_stage, to_replica); one observation per physical hop.",
    kTransferGroups};
constexpr ClassDef kRealtimeClass{
    "realtime", "modelmetrics.vllm_omni.metrics.realtime.RealtimeVADMetrics",
    "RealtimeVADMetrics(model_name, log_stats=True)\n--\n\n"
    "Realtime sessions with server-side VAD: active sessions, inference latency and endpoint "
    "delay (given in ms, recorded in s), errors by reason (as given).",
    kRealtimeGroups};
constexpr const ClassDef* kClasses[] = {&kPrometheusClass, &kModalityClass, &kTransferClass,
                                        &kRealtimeClass};

}  // namespace

bool RegisterClassGroups(const char* class_key) {
  for (const ClassDef* cls : kClasses) {
    if (std::string_view(cls->key) != class_key) continue;
    return observe_type::RegisterGroups(cls->groups);
  }
  PyErr_Format(PyExc_ValueError, "unknown metrics class %s", class_key);
  return false;
}

bool AddObserveTypes(PyObject* module) {
  if (pipeline::OmniFamilies().size() > observe_type::kFamilies) {
    PyErr_SetString(PyExc_RuntimeError, "catalog larger than kFamilies");
    return false;
  }
  PyMethodDef* prometheus = observe_type::BuildMethods<pipeline::kPrometheusMethods>();
  PyMethodDef* modality = observe_type::BuildMethods<pipeline::kModalityMethods>();
  PyMethodDef* transfer = observe_type::BuildMethods<pipeline::kTransferMethods>();
  PyMethodDef* realtime = observe_type::BuildMethods<pipeline::kRealtimeMethods>();
  using observe_type::AddType;
  return AddType(module, kPrometheusClass, prometheus) &&
         AddType(module, kModalityClass, modality) && AddType(module, kTransferClass, transfer) &&
         AddType(module, kRealtimeClass, realtime);
}

}  // namespace modelmetrics::python
