// The observe types. See observe_types.h for the contract.
//
// Layout. Every type shares one object layout (MetricsObject) and one generic method body
// (Dispatch) driven by a constexpr MethodSpec row; a template instantiates one C entry point per
// row so PyMethodDef gets a plain function pointer. The two methods that touch two families
// (observe_tokens, request_succeeded) are written out.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "observe_types.h"

#include <structmember.h>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "fork_gate.h"
#include "handle_cache.h"
#include "pipeline/audio_metrics.h"
#include "pipeline/catalog.h"
#include "process_registry.h"
#include "py_args.h"

namespace modelmetrics::python {
namespace {

using pipeline::Bind;
using pipeline::FamilySpec;
using pipeline::Group;
using pipeline::Kind;
using OF = pipeline::OmniFamily;

constexpr size_t Index(OF family) { return static_cast<size_t>(family); }

constexpr size_t kFamilies = 64;  // >= OmniFamilies().size(), checked at module init

struct MetricsObject {
  PyObject_HEAD bool log_stats;
  PyObject* model_name;  // the str given
  std::string* model;    // its UTF-8 text
  std::array<AnyHandle, kFamilies>* eager;
  std::array<HandleCache*, kFamilies>* caches;
  PyObject* weakrefs;
};

// ---- Method rows ----

enum class Op : uint8_t { kObserve, kSet, kAdd, kInc, kDec };

enum class Source : uint8_t {
  kArg,           // str(arg)
  kArgOrUnknown,  // arg or "unknown" (falsy -> "unknown")
  kArgIntText,    // str(int(arg))
  kAbortReason,   // str(arg), bounded to the Speech abort reasons ("error" otherwise)
  kConstant,      // a fixed value
  kBounded,       // arg when it is a str in `allowed`, else `constant` (upstream's bounded sets)
};

struct LabelRule {
  Source source = Source::kArg;
  uint8_t arg = 0;
  std::string_view constant = {};
  std::span<const std::string_view> allowed = {};
};

struct MethodSpec {
  const char* name;
  const char* doc;
  std::array<const char*, kMaxParams> params;
  uint8_t nparams;
  uint8_t nrequired;
  pipeline::OmniFamily family;
  Op op;
  std::array<LabelRule, 4> labels;  // after model_name, in declaration order
  uint8_t nlabels;
  int8_t value;  // argument index of the value; -1: none (Inc / Dec)
  double scale = 1.0;
  double value_default = 1.0;  // for an optional value argument left out
};

constexpr LabelRule Arg(uint8_t i) { return {Source::kArg, i, {}}; }
constexpr LabelRule ArgOrUnknown(uint8_t i) { return {Source::kArgOrUnknown, i, {}}; }
constexpr LabelRule BoundedArg(uint8_t i, std::span<const std::string_view> allowed,
                               std::string_view fallback) {
  return {Source::kBounded, i, fallback, allowed};
}

// stage and replica of OmniModalityMetrics: both str (callers pass str(id)), used as given.
#define MM_STAGE_REPLICA_HISTOGRAM(method, value_name, family_name, doc_text)            \
  MethodSpec {                                                                           \
    method, doc_text, {"stage", "replica", value_name}, 3, 3, family_name, Op::kObserve, \
        {Arg(0), Arg(1)}, 2, 2                                                           \
  }

// ---- OmniPrometheusMetrics (prometheus.py) ----
constexpr MethodSpec kPrometheusMethods[] = {
    {"set_running",
     "num_requests_running.set(n)",
     {"n"},
     1,
     1,
     OF::kNumRequestsRunning,
     Op::kSet,
     {},
     0,
     0},
    {"set_waiting",
     "num_requests_waiting.set(n)",
     {"n"},
     1,
     1,
     OF::kNumRequestsWaiting,
     Op::kSet,
     {},
     0,
     0},
    {"request_failed",
     "requests_success_total{finished_reason=\"abort\"} += 1",
     {},
     0,
     0,
     OF::kRequestsSuccess,
     Op::kInc,
     {LabelRule{Source::kConstant, 0, "abort"}},
     1,
     -1},
    {"observe_stage_gen_time",
     "stage_gen_time_s{stage, stage_type}.observe(max(gen_time_s, 0))",
     {"stage", "stage_type", "gen_time_s"},
     3,
     3,
     OF::kStageGenTimeS,
     Op::kObserve,
     {Arg(0), Arg(1)},
     2,
     2},
    {"observe_stage_in_queue",
     "stage_in_queue_s{stage}.observe(max(in_queue_s, 0))",
     {"stage", "in_queue_s"},
     2,
     2,
     OF::kStageInQueueS,
     Op::kObserve,
     {Arg(0)},
     1,
     1},
    {"observe_queue_wait",
     "request_queue_wait_s.observe(max(queue_wait_s, 0))",
     {"queue_wait_s"},
     1,
     1,
     OF::kRequestQueueWaitS,
     Op::kObserve,
     {},
     0,
     0},
    {"set_stage_waiting_requests",
     "stage_waiting_requests{stage}.set(max(n_waiting, 0))",
     {"stage", "n_waiting"},
     2,
     2,
     OF::kStageWaitingRequests,
     Op::kSet,
     {Arg(0)},
     1,
     1},
    {"observe_num_inference_steps",
     "num_inference_steps.observe(n_steps) when n_steps > 0",
     {"n_steps"},
     1,
     1,
     OF::kNumInferenceSteps,
     Op::kObserve,
     {},
     0,
     0},
    {"inc_image_count",
     "image_count_total += n_images when n_images > 0",
     {"n_images"},
     1,
     0,
     OF::kImageCount,
     Op::kAdd,
     {},
     0,
     0},
    {"observe_image_pixels",
     "image_pixels.observe(n_pixels) when n_pixels > 0",
     {"n_pixels"},
     1,
     1,
     OF::kImagePixels,
     Op::kObserve,
     {},
     0,
     0},
    {"set_peak_memory",
     "peak_memory_mb{stage}.set(max(peak_memory_mb, 0))",
     {"stage", "peak_memory_mb"},
     2,
     2,
     OF::kPeakMemoryMb,
     Op::kSet,
     {Arg(0)},
     1,
     1},
    {"inc_requests_failed",
     "requests_failed_total{reason=reason or \"unknown\"} += 1",
     {"reason"},
     1,
     1,
     OF::kRequestsFailed,
     Op::kInc,
     {ArgOrUnknown(0)},
     1,
     -1},
    {"observe_kv_wait",
     "kv_wait_s{connector_type or \"unknown\"}.observe(kv_wait_s) when >= 0",
     {"connector_type", "kv_wait_s"},
     2,
     2,
     OF::kKvWaitS,
     Op::kObserve,
     {ArgOrUnknown(0)},
     1,
     1},
    // Duplex (pipeline-behaviour.md §3.9); the multi-gauge setters are kDuplexSetters below.
    {.name = "observe_duplex_control_queue_wait",
     .doc = "duplex_control_queue_wait_s{operation (bounded, else \"unknown\")}"
            ".observe(max(queue_wait_s, 0))",
     .params = {"operation", "queue_wait_s"},
     .nparams = 2,
     .nrequired = 2,
     .family = OF::kDuplexControlQueueWaitS,
     .op = Op::kObserve,
     .labels = {BoundedArg(0, pipeline::kDuplexControlOperations,
                           pipeline::kDuplexControlOperationFallback)},
     .nlabels = 1,
     .value = 1},
    {.name = "inc_duplex_replica_affinity_loss",
     .doc = "duplex_replica_affinity_loss_total += count when count > 0",
     .params = {"count"},
     .nparams = 1,
     .nrequired = 0,
     .family = OF::kDuplexReplicaAffinityLoss,
     .op = Op::kAdd,
     .labels = {},
     .nlabels = 0,
     .value = 0},
    {.name = "inc_duplex_kv_recovery",
     .doc = "duplex_kv_rebuilds_total{reason (else \"other\"), outcome (else \"failure\")} += "
            "count when count > 0",
     .params = {"reason", "outcome", "count"},
     .nparams = 3,
     .nrequired = 2,
     .family = OF::kDuplexKvRebuilds,
     .op = Op::kAdd,
     .labels = {BoundedArg(0, pipeline::kDuplexKvRebuildReasons,
                           pipeline::kDuplexKvRebuildReasonFallback),
                BoundedArg(1, pipeline::kDuplexKvRebuildOutcomes,
                           pipeline::kDuplexKvRebuildOutcomeFallback)},
     .nlabels = 2,
     .value = 2},
};

// ---- OmniModalityMetrics (modality.py) ----
constexpr MethodSpec kModalityMethods[] = {
    MM_STAGE_REPLICA_HISTOGRAM("observe_audio_ttfp", "ttfp_seconds", OF::kAudioTtfpS,
                               "audio_ttfp_s{stage, replica}.observe(ttfp_seconds)"),
    MM_STAGE_REPLICA_HISTOGRAM("observe_audio_duration", "duration_seconds", OF::kAudioDurationS,
                               "audio_duration_s{stage, replica}.observe(duration_seconds)"),
    MM_STAGE_REPLICA_HISTOGRAM("observe_audio_rtf", "rtf", OF::kAudioRtf,
                               "audio_rtf{stage, replica}.observe(rtf)"),
    {"inc_audio_frames",
     "audio_frames_total{stage, replica} += n_frames when n_frames > 0",
     {"stage", "replica", "n_frames"},
     3,
     3,
     OF::kAudioFrames,
     Op::kAdd,
     {Arg(0), Arg(1)},
     2,
     2},
    MM_STAGE_REPLICA_HISTOGRAM("observe_audio_underrun", "underrun_s", OF::kAudioUnderrunS,
                               "audio_underrun_s{stage, replica}.observe(max(underrun_s, 0))"),
    {"inc_audio_continuity_ok",
     "audio_continuity_ok_total{stage, replica, threshold_ms=str(int(threshold_ms))} += 1",
     {"stage", "replica", "threshold_ms"},
     3,
     3,
     OF::kAudioContinuityOk,
     Op::kInc,
     {Arg(0), Arg(1), LabelRule{Source::kArgIntText, 2, {}}},
     3,
     -1},
    {"inc_audio_skipped",
     "audio_skipped_requests_total{stage, replica, reason=reason or \"unknown\"} += 1",
     {"stage", "replica", "reason"},
     3,
     3,
     OF::kAudioSkippedRequests,
     Op::kInc,
     {Arg(0), Arg(1), ArgOrUnknown(2)},
     3,
     -1},
    MM_STAGE_REPLICA_HISTOGRAM("observe_diffusion_exec", "seconds", OF::kDiffusionExecS,
                               "diffusion_exec_s{stage, replica}.observe(seconds)"),
    MM_STAGE_REPLICA_HISTOGRAM("observe_diffusion_exec_per_step", "seconds",
                               OF::kDiffusionExecPerStepS,
                               "diffusion_exec_per_step_s{stage, replica}.observe(seconds)"),
    MM_STAGE_REPLICA_HISTOGRAM("observe_diffusion_preprocess", "seconds", OF::kDiffusionPreprocessS,
                               "diffusion_preprocess_s{stage, replica}.observe(seconds)"),
    MM_STAGE_REPLICA_HISTOGRAM("observe_diffusion_postprocess", "seconds",
                               OF::kDiffusionPostprocessS,
                               "diffusion_postprocess_s{stage, replica}.observe(seconds)"),
    MM_STAGE_REPLICA_HISTOGRAM("observe_vae_decode", "seconds", OF::kVaeDecodeS,
                               "vae_decode_s{stage, replica}.observe(seconds) when >= 0"),
    MM_STAGE_REPLICA_HISTOGRAM("observe_diffusion_forward", "seconds", OF::kDiffusionForwardS,
                               "diffusion_forward_s{stage, replica}.observe(seconds) when >= 0"),
    MM_STAGE_REPLICA_HISTOGRAM("observe_diffusion_kv_load", "seconds", OF::kDiffusionKvLoadS,
                               "diffusion_kv_load_s{stage, replica}.observe(seconds) when >= 0"),
    MM_STAGE_REPLICA_HISTOGRAM("observe_image_ttfp", "seconds", OF::kImageTtfpS,
                               "image_ttfp_s{stage, replica}.observe(seconds) when >= 0"),
    MM_STAGE_REPLICA_HISTOGRAM("observe_denoise_step_latency", "seconds", OF::kDenoiseStepLatencyS,
                               "denoise_step_latency_s{stage, replica}.observe(seconds) when > 0"),
    {"inc_speech_stream_completed",
     "speech_stream_completed_total += 1",
     {},
     0,
     0,
     OF::kSpeechStreamCompleted,
     Op::kInc,
     {},
     0,
     -1},
    {"inc_speech_stream_aborted",
     "speech_stream_aborted_total{reason} += 1 (cancelled, closed, engine_dead; else error)",
     {"reason"},
     1,
     1,
     OF::kSpeechStreamAborted,
     Op::kInc,
     {LabelRule{Source::kAbortReason, 0, {}}},
     1,
     -1},
};

// ---- OmniTransferMetrics (transfer.py) ----
#define MM_TRANSFER(method, value_name, family_name, doc_text)                                    \
  MethodSpec {                                                                                    \
    method, doc_text, {"from_stage", "from_replica", "to_stage", "to_replica", value_name}, 5, 5, \
        family_name, Op::kObserve, {Arg(0), Arg(1), Arg(2), Arg(3)}, 4, 4                         \
  }
constexpr MethodSpec kTransferMethods[] = {
    MM_TRANSFER("observe_size", "size_bytes", OF::kTransferSizeBytes,
                "transfer_size_bytes{edge}.observe(size_bytes)"),
    MM_TRANSFER("observe_tx_time", "tx_time_s", OF::kTransferTxS,
                "transfer_tx_s{edge}.observe(tx_time_s)"),
    MM_TRANSFER("observe_rx_time", "rx_time_s", OF::kTransferRxS,
                "transfer_rx_s{edge}.observe(rx_time_s)"),
    MM_TRANSFER("observe_in_flight_time", "in_flight_time_s", OF::kTransferInFlightS,
                "transfer_in_flight_s{edge}.observe(in_flight_time_s)"),
};

// ---- RealtimeVADMetrics (realtime.py) ----
constexpr MethodSpec kRealtimeMethods[] = {
    {"session_started",
     "realtime_vad_active_sessions.inc()",
     {},
     0,
     0,
     OF::kRealtimeVadActiveSessions,
     Op::kInc,
     {},
     0,
     -1},
    {"session_finished",
     "realtime_vad_active_sessions.dec()",
     {},
     0,
     0,
     OF::kRealtimeVadActiveSessions,
     Op::kDec,
     {},
     0,
     -1},
    {"observe_inference",
     "realtime_vad_inference_latency_s.observe(latency_ms / 1000)",
     {"latency_ms"},
     1,
     1,
     OF::kRealtimeVadInferenceLatencyS,
     Op::kObserve,
     {},
     0,
     0,
     0.001},
    {"observe_endpoint_delay",
     "realtime_vad_endpoint_delay_s.observe(delay_ms / 1000)",
     {"delay_ms"},
     1,
     1,
     OF::kRealtimeVadEndpointDelayS,
     Op::kObserve,
     {},
     0,
     0,
     0.001},
    {"error",
     "realtime_vad_errors_total{reason} += 1 (reason as given)",
     {"reason"},
     1,
     1,
     OF::kRealtimeVadErrors,
     Op::kInc,
     {Arg(0)},
     1,
     -1},
};

#undef MM_STAGE_REPLICA_HISTOGRAM
#undef MM_TRANSFER

// ---- Classes ----

struct ClassDef {
  const char* key;        // RegisterClassGroups name
  const char* type_name;  // modelmetrics._native.<Name>
  const char* doc;
  std::span<const Group> groups;
};

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

const FamilySpec& Row(size_t index) { return pipeline::OmniSpec(static_cast<OF>(index)); }

// ---- The generic method body ----

AnyHandle MakeHandle(size_t index, std::span<const std::string_view> values, bool eager) {
  AnyHandle h;  // inert while the family's group is not registered
  const pipeline::AnyFamily& family = RegisteredFamily(static_cast<OF>(index));
  // A new child of a shared family may wait for the segment's directory lock: without the GIL.
  const auto bind = [&](auto* f) {
    return WithoutGilIf(f->shared(), [&] { return eager ? f->Bind(values) : f->Labels(values); });
  };
  if (auto* const* f = std::get_if<Family<Counter>*>(&family)) h.counter = bind(*f);
  if (auto* const* f = std::get_if<Family<Gauge>*>(&family)) h.gauge = bind(*f);
  if (auto* const* f = std::get_if<Family<Histogram>*>(&family)) h.histogram = bind(*f);
  return h;
}

// The handle of the child with label values (model, extra...): the object's cache, else
// Family::Labels (Family::Bind when `eager`: the child exists even while the registry is off).
const AnyHandle* LazyHandle(MetricsObject* self, size_t index,
                            std::span<const std::string_view> extra, bool eager = false) {
  char buf[256];
  std::string spill;
  std::string_view key;
  size_t size = 0;
  for (std::string_view v : extra) size += v.size() + 1;
  char* out = buf;
  if (size > sizeof(buf)) {
    spill.resize(size);
    out = spill.data();
  }
  char* p = out;
  for (std::string_view v : extra) {
    for (char c : v) *p++ = c;
    *p++ = '\xff';
  }
  key = std::string_view(out, static_cast<size_t>(p - out));
  if (HandleCache* cache = (*self->caches)[index]) {
    if (const AnyHandle* h = cache->Find(key)) return h;
  }
  // A miss: the child is made, perhaps without the GIL (MakeHandle), so nothing of this object
  // is held across it (a copy of the model; the cache slot read again after).
  const std::string model = *self->model;
  std::array<std::string_view, 5> values;
  values[0] = model;
  for (size_t i = 0; i < extra.size(); ++i) values[i + 1] = extra[i];
  const AnyHandle made = MakeHandle(index, std::span(values.data(), extra.size() + 1), eager);
  if (!made.live() && !eager) {
    // Refused (a label value over its bound, a full shared segment): this call records
    // nothing, and the next one tries again rather than a cached refusal.
    static const AnyHandle kInert;
    return &kInert;
  }
  HandleCache*& cache = (*self->caches)[index];
  if (cache == nullptr) cache = new HandleCache();
  return &cache->Insert(key, made);
}

bool LabelFrom(const LabelRule& rule, PyObject* const* a, LabelValue* out) {
  PyObject* o = a[rule.arg];
  switch (rule.source) {
    case Source::kArg:
      return out->Set(o);
    case Source::kArgOrUnknown:
      return out->SetOr(o, pipeline::kUnknownReason);
    case Source::kArgIntText: {
      PyRef as_int(PyNumber_Long(o));  // int(threshold_ms): truncates floats, parses strings
      return as_int && out->Set(as_int.get());
    }
    case Source::kAbortReason: {
      if (!out->Set(o)) return false;
      out->SetView(pipeline::AudioMetrics::NormalizeAbortReason(out->view()));
      return true;
    }
    case Source::kConstant:
      out->SetView(rule.constant);
      return true;
    case Source::kBounded:
      // A non-str is never in upstream's set of str (an object whose str() matches included).
      // The str is compared in place, never copied, so any length is fine; one that cannot be
      // UTF-8 (lone surrogates) is in no set either.
      Py_ssize_t size = 0;
      const char* text = PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &size) : nullptr;
      if (text == nullptr) PyErr_Clear();
      const std::string_view value =
          text != nullptr ? std::string_view(text, static_cast<size_t>(size)) : std::string_view();
      out->SetView(text != nullptr ? pipeline::Bounded(value, rule.allowed, rule.constant)
                                   : rule.constant);
      return true;
  }
  return true;
}

// An object whose __init__ never ran (cls.__new__(cls), a subclass skipping super().__init__).
PyObject* NotInitialised() {
  PyErr_SetString(PyExc_RuntimeError, "metrics object used before __init__(model_name, log_stats)");
  return nullptr;
}

// Counter amounts: exact non-negative ints take the integer path (exact past 2^53).
struct Amount {
  double value = 1;
  bool integral = true;
  uint64_t count = 1;
};

bool ReadAmount(PyObject* o, Amount* out) {
  if (PyLong_CheckExact(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow == 0 && !(v == -1 && PyErr_Occurred())) {
      out->value = static_cast<double>(v);
      out->integral = v >= 0;
      out->count = v >= 0 ? static_cast<uint64_t>(v) : 0;
      return true;
    }
    PyErr_Clear();
  }
  out->integral = false;
  return ToDouble(o, &out->value);
}

// A row's family, resolved once per method (the catalog look-up stays off the hot path).
struct Target {
  size_t index;
  const FamilySpec* spec;
};

// Inlined into each row's entry point, so the row's constants fold away (a few ns per call).
[[gnu::always_inline]] inline PyObject* Dispatch(MetricsObject* self, const MethodSpec& m,
                                                 const Target& target, PyObject* const* args,
                                                 Py_ssize_t nargs, PyObject* kwnames) {
  const size_t index = target.index;
  std::array<PyObject*, kMaxParams> a;
  if (nargs == m.nparams && kwnames == nullptr) {
    for (size_t i = 0; i < m.nparams; ++i) a[i] = args[i];  // the common, fast case
  } else if (!BindArgs(m.name, std::span(m.params.data(), m.nparams), m.nrequired, args, nargs,
                       kwnames, a)) {
    return nullptr;
  }
  if (!self->log_stats) Py_RETURN_NONE;
  if (self->model_name == nullptr) return NotInitialised();
  const FamilySpec& spec = *target.spec;
  Amount amount;
  if (m.value >= 0) {
    PyObject* o = a[static_cast<size_t>(m.value)];
    if (o == nullptr) {
      amount.value = m.value_default;
      amount.count = static_cast<uint64_t>(m.value_default);
    } else if (m.op == Op::kAdd) {
      if (!ReadAmount(o, &amount)) return nullptr;
    } else {
      amount.integral = false;
      if (!ToDouble(o, &amount.value)) return nullptr;
    }
    amount.value *= m.scale;
    if (!pipeline::ApplyGuard(spec.guard, amount.value)) Py_RETURN_NONE;
  }
  const AnyHandle* h;
  if (spec.bind == Bind::kEager && spec.eager_values.empty()) {
    h = &(*self->eager)[index];
  } else {
    std::array<LabelValue, 4> labels;
    std::array<std::string_view, 4> views;
    for (size_t i = 0; i < m.nlabels; ++i) {
      if (!LabelFrom(m.labels[i], a.data(), &labels[i])) return nullptr;
      views[i] = labels[i].view();
    }
    h = LazyHandle(self, index, std::span(views.data(), m.nlabels));
  }
  switch (m.op) {
    case Op::kObserve:
      h->histogram.Observe(amount.value);
      break;
    case Op::kSet:
      h->gauge.Set(amount.value);
      break;
    case Op::kAdd:
      if (amount.integral) {
        h->counter.Add(amount.count);
      } else {
        h->counter.Add(amount.value);
      }
      break;
    case Op::kInc:
      if (spec.kind == Kind::kGauge) {
        h->gauge.Inc();
      } else {
        h->counter.Inc();
      }
      break;
    case Op::kDec:
      h->gauge.Dec();
      break;
  }
  Py_RETURN_NONE;
}

template <const auto& Table, size_t I>
PyObject* Method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const Target target = [] {
    const size_t index = Index(Table[I].family);
    return Target{index, &Row(index)};
  }();
  return Guarded([&] {
    return Dispatch(reinterpret_cast<MetricsObject*>(self), Table[I], target, args, nargs, kwnames);
  });
}

// ---- The two methods that record into two families ----

constexpr size_t kPromptTokens = Index(OF::kPromptTokens);
constexpr size_t kGenerationTokens = Index(OF::kGenerationTokens);
constexpr size_t kSuccess = Index(OF::kRequestsSuccess);
constexpr size_t kE2e = Index(OF::kE2eRequestLatencyS);

PyObject* ObserveTokensBody(PyObject* obj, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kwnames) {
  static constexpr const char* kNames[] = {"prompt_tokens", "generation_tokens"};
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  std::array<PyObject*, kMaxParams> a;
  if (!BindArgs("observe_tokens", kNames, 2, args, nargs, kwnames, a)) return nullptr;
  if (!self->log_stats) Py_RETURN_NONE;
  if (self->model_name == nullptr) return NotInitialised();
  Amount prompt, generation;
  if (!ReadAmount(a[0], &prompt) || !ReadAmount(a[1], &generation)) return nullptr;
  for (auto [amount, index] : {std::pair{prompt, kPromptTokens}, {generation, kGenerationTokens}}) {
    if (!pipeline::ApplyGuard(Row(index).guard, amount.value)) continue;  // each only if > 0
    const Counter& c = (*self->eager)[index].counter;
    if (amount.integral) {
      c.Add(amount.count);
    } else {
      c.Add(amount.value);
    }
  }
  Py_RETURN_NONE;
}

PyObject* RequestSucceededBody(PyObject* obj, PyObject* const* args, Py_ssize_t nargs,
                               PyObject* kwnames) {
  static constexpr const char* kNames[] = {"e2e_seconds", "finished_reason"};
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  std::array<PyObject*, kMaxParams> a;
  if (!BindArgs("request_succeeded", kNames, 1, args, nargs, kwnames, a)) return nullptr;
  if (!self->log_stats) Py_RETURN_NONE;
  if (self->model_name == nullptr) return NotInitialised();
  double e2e = 0;
  if (!ToDouble(a[0], &e2e)) return nullptr;
  LabelValue reason;
  if (a[1] == nullptr) {
    reason.SetView(pipeline::kDefaultFinishedReason);
  } else if (!reason.Set(a[1])) {
    return nullptr;
  }
  const std::string_view extra[] = {reason.view()};
  LazyHandle(self, kSuccess, extra)->counter.Inc();
  if (pipeline::ApplyGuard(Row(kE2e).guard, e2e)) (*self->eager)[kE2e].histogram.Observe(e2e);
  Py_RETURN_NONE;
}

// duplex_append_requests_total{outcome} += 1 and duplex_append_latency_s{outcome}: one bounded
// label, two families.
PyObject* ObserveDuplexAppendBody(PyObject* obj, PyObject* const* args, Py_ssize_t nargs,
                                  PyObject* kwnames) {
  static constexpr const char* kNames[] = {"outcome", "latency_s"};
  static constexpr LabelRule kOutcome =
      BoundedArg(0, pipeline::kDuplexAppendOutcomes, pipeline::kDuplexAppendOutcomeFallback);
  constexpr size_t kRequests = Index(OF::kDuplexAppendRequests);
  constexpr size_t kLatency = Index(OF::kDuplexAppendLatencyS);
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  std::array<PyObject*, kMaxParams> a;
  if (!BindArgs("observe_duplex_append", kNames, 2, args, nargs, kwnames, a)) return nullptr;
  if (!self->log_stats) Py_RETURN_NONE;
  if (self->model_name == nullptr) return NotInitialised();
  double latency = 0;
  LabelValue outcome;
  if (!ToDouble(a[1], &latency) || !LabelFrom(kOutcome, a.data(), &outcome)) return nullptr;
  const std::string_view extra[] = {outcome.view()};
  LazyHandle(self, kRequests, extra)->counter.Inc();
  if (pipeline::ApplyGuard(Row(kLatency).guard, latency)) {
    LazyHandle(self, kLatency, extra)->histogram.Observe(latency);
  }
  Py_RETURN_NONE;
}

// ---- Methods that set several eager gauges, one per parameter, each through its row's guard ----

struct GaugeTarget {
  OF family;
  int8_t eager_value = -1;  // index into the row's eager_values; -1: the model's one child
};

struct GaugeSetSpec {
  const char* name;
  const char* doc;  // the text signature and the doc
  std::array<const char*, kMaxParams> params;
  uint8_t nparams;
  std::array<GaugeTarget, kMaxParams> targets;  // by parameter
};

constexpr GaugeSetSpec kDuplexSetters[] = {
    {.name = "set_duplex_sessions",
     .doc = "set_duplex_sessions($self, /, active, closing)\n--\n\n"
            "duplex_sessions{state=\"active\"|\"closing\"}.set(max(n, 0))",
     .params = {"active", "closing"},
     .nparams = 2,
     .targets = {GaugeTarget{OF::kDuplexSessions, 0}, GaugeTarget{OF::kDuplexSessions, 1}}},
    {.name = "set_duplex_context",
     .doc = "set_duplex_context($self, /, max_tokens, max_limit_tokens, max_utilization, "
            "max_receipts)\n--\n\n"
            "duplex_context_tokens, duplex_context_limit_tokens, duplex_context_utilization and "
            "duplex_append_receipts .set(max(x, 0))",
     .params = {"max_tokens", "max_limit_tokens", "max_utilization", "max_receipts"},
     .nparams = 4,
     .targets = {GaugeTarget{OF::kDuplexContextTokens}, GaugeTarget{OF::kDuplexContextLimitTokens},
                 GaugeTarget{OF::kDuplexContextUtilization},
                 GaugeTarget{OF::kDuplexAppendReceipts}}},
    {.name = "set_duplex_recovery_state",
     .doc = "set_duplex_recovery_state($self, /, max_journal_tokens, max_journal_bytes, "
            "max_resource_generation)\n--\n\n"
            "duplex_replay_journal_tokens, duplex_replay_journal_bytes and "
            "duplex_resource_generation .set(max(x, 0))",
     .params = {"max_journal_tokens", "max_journal_bytes", "max_resource_generation"},
     .nparams = 3,
     .targets = {GaugeTarget{OF::kDuplexReplayJournalTokens},
                 GaugeTarget{OF::kDuplexReplayJournalBytes},
                 GaugeTarget{OF::kDuplexResourceGeneration}}},
};

template <size_t I>
PyObject* SetGaugesBody(PyObject* obj, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const GaugeSetSpec& m = kDuplexSetters[I];
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  std::array<PyObject*, kMaxParams> a;
  const std::span<const char* const> names(m.params.data(), m.nparams);
  if (!BindArgs(m.name, names, m.nparams, args, nargs, kwnames, a)) return nullptr;
  if (!self->log_stats) Py_RETURN_NONE;
  if (self->model_name == nullptr) return NotInitialised();
  std::array<double, kMaxParams> values{};
  for (size_t i = 0; i < m.nparams; ++i) {
    if (!ToDouble(a[i], &values[i])) return nullptr;
  }
  for (size_t i = 0; i < m.nparams; ++i) {
    const size_t index = Index(m.targets[i].family);
    const FamilySpec& row = Row(index);
    if (!pipeline::ApplyGuard(row.guard, values[i])) continue;
    const int8_t k = m.targets[i].eager_value;
    const AnyHandle* h = k < 0 ? &(*self->eager)[index]
                               : LazyHandle(self, index, row.eager_values.subspan(k, 1), true);
    h->gauge.Set(values[i]);
  }
  Py_RETURN_NONE;
}

template <size_t I>
PyObject* SetGauges(PyObject* obj, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return Guarded([&] { return SetGaugesBody<I>(obj, args, nargs, kwnames); });
}

template <size_t... I>
auto SetterDefs(std::index_sequence<I...>) {
  return std::array<PyMethodDef, sizeof...(I)>{
      PyMethodDef{kDuplexSetters[I].name, AsCFunction(&SetGauges<I>), METH_FASTCALL | METH_KEYWORDS,
                  kDuplexSetters[I].doc}...};
}

PyObject* ObserveDuplexAppend(PyObject* obj, PyObject* const* args, Py_ssize_t nargs,
                              PyObject* kwnames) {
  return Guarded([&] { return ObserveDuplexAppendBody(obj, args, nargs, kwnames); });
}

PyObject* ObserveTokens(PyObject* obj, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return Guarded([&] { return ObserveTokensBody(obj, args, nargs, kwnames); });
}

PyObject* RequestSucceeded(PyObject* obj, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kwnames) {
  return Guarded([&] { return RequestSucceededBody(obj, args, nargs, kwnames); });
}

// ---- Method tables ----

// "name($self, /, a, b=1)\n--\n\ndoc": the text signature inspect.signature() reads. Kept
// for the process (PyMethodDef points at it).
const char* SignatureDoc(const MethodSpec& m) {
  static auto* docs = new std::deque<std::string>();
  std::string doc = std::string(m.name) + "($self, /";
  for (size_t i = 0; i < m.nparams; ++i) {
    doc += std::string(", ") + m.params[i];
    if (i >= m.nrequired) doc += "=" + std::to_string(static_cast<long long>(m.value_default));
  }
  doc += std::string(")\n--\n\n") + m.doc;
  return docs->emplace_back(std::move(doc)).c_str();
}

template <const auto& Table, size_t... I>
auto MethodDefs(std::index_sequence<I...>) {
  return std::array<PyMethodDef, sizeof...(I)>{
      PyMethodDef{Table[I].name, AsCFunction(&Method<Table, I>), METH_FASTCALL | METH_KEYWORDS,
                  SignatureDoc(Table[I])}...};
}

template <const auto& Table, size_t Extra>
PyMethodDef* BuildMethods(std::array<PyMethodDef, Extra> extra) {
  constexpr size_t n = std::size(Table);
  static std::array<PyMethodDef, n + Extra + 1> defs{};
  const auto generated = MethodDefs<Table>(std::make_index_sequence<n>());
  for (size_t i = 0; i < n; ++i) defs[i] = generated[i];
  for (size_t i = 0; i < Extra; ++i) defs[n + i] = extra[i];
  defs[n + Extra] = PyMethodDef{nullptr, nullptr, 0, nullptr};
  return defs.data();
}

// ---- Type slots ----

// "OmniPrometheusMetrics" of "modelmetrics.vllm_omni.metrics.prometheus.OmniPrometheusMetrics".
const char* ShortName(const ClassDef& cls) {
  const std::string_view full(cls.type_name);
  return cls.type_name + full.rfind('.') + 1;
}

// The type objects AddType made, beside kClasses (identity, not names: a type's name can be
// reassigned from Python).
PyTypeObject* g_types[std::size(kClasses)] = {};

// The class a (sub)type was built from: walk to the _native base, which owns the layout.
const ClassDef* ClassOf(PyTypeObject* type) {
  for (PyTypeObject* t = type; t != nullptr; t = t->tp_base) {
    for (size_t i = 0; i < std::size(kClasses); ++i) {
      if (t == g_types[i]) return kClasses[i];
    }
  }
  return nullptr;
}

PyObject* New(PyTypeObject* type, PyObject*, PyObject*) {
  auto* self = reinterpret_cast<MetricsObject*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->log_stats = false;
  self->model_name = nullptr;
  self->model = new std::string();
  self->eager = new std::array<AnyHandle, kFamilies>();
  self->caches = new std::array<HandleCache*, kFamilies>();
  self->caches->fill(nullptr);
  self->weakrefs = nullptr;
  return reinterpret_cast<PyObject*>(self);
}

int InitBody(PyObject* obj, PyObject* args, PyObject* kwargs) {
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  static const char* kKeywords[] = {"model_name", "log_stats", nullptr};
  PyObject* model = nullptr;
  int log_stats = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:__init__", const_cast<char**>(kKeywords),
                                   &model, &log_stats)) {
    return -1;
  }
  const ClassDef* cls = ClassOf(Py_TYPE(obj));
  if (cls == nullptr) {
    PyErr_SetString(PyExc_TypeError, "not a modelmetrics metrics type");
    return -1;
  }
  LabelValue model_text;  // str(model_name), as prometheus_client's labels() does
  if (!model_text.Set(model)) return -1;
  if (!RegisterClassGroups(cls->key)) return -1;
  *self->model = std::string(model_text.view());
  Py_INCREF(model);
  Py_XSETREF(self->model_name, model);
  self->log_stats = log_stats != 0;
  // A re-init may change the model: drop handles cached for the old one.
  for (HandleCache*& cache : *self->caches) {
    delete cache;
    cache = nullptr;
  }
  // Eager children (§4.11) exist from construction, also with log_stats off; a row with
  // eager_values has one per value, kept in its cache.
  const auto rows = pipeline::OmniFamilies();
  for (size_t i = 0; i < rows.size(); ++i) {
    bool owned = false;
    for (Group g : cls->groups) owned = owned || rows[i].group == g;
    if (!owned || rows[i].bind != Bind::kEager) continue;
    for (std::string_view value : rows[i].eager_values) LazyHandle(self, i, {&value, 1}, true);
    const std::string_view values[] = {*self->model};
    if (rows[i].eager_values.empty()) (*self->eager)[i] = MakeHandle(i, values, true);
  }
  return 0;
}

int Init(PyObject* obj, PyObject* args, PyObject* kwargs) {
  PyObject* ok = Guarded([&]() -> PyObject* {
    if (InitBody(obj, args, kwargs) != 0) return nullptr;
    Py_RETURN_NONE;
  });
  if (ok == nullptr) return -1;
  Py_DECREF(ok);
  return 0;
}

int Traverse(PyObject* obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  Py_VISIT(self->model_name);
  Py_VISIT(Py_TYPE(obj));
  return 0;
}

int Clear(PyObject* obj) {
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  Py_CLEAR(self->model_name);
  return 0;
}

void Dealloc(PyObject* obj) {
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  PyTypeObject* type = Py_TYPE(obj);
  PyObject_GC_UnTrack(obj);
  if (self->weakrefs != nullptr) PyObject_ClearWeakRefs(obj);
  Clear(obj);
  if (self->caches != nullptr) {
    for (HandleCache* cache : *self->caches) delete cache;
  }
  delete self->caches;
  delete self->eager;
  delete self->model;
  type->tp_free(obj);
  Py_DECREF(type);
}

PyObject* GetModelName(PyObject* obj, void*) {
  auto* self = reinterpret_cast<MetricsObject*>(obj);
  if (self->model_name == nullptr) Py_RETURN_NONE;
  Py_INCREF(self->model_name);
  return self->model_name;
}

PyObject* GetLogStats(PyObject* obj, void*) {
  return PyBool_FromLong(reinterpret_cast<MetricsObject*>(obj)->log_stats);
}

int SetLogStats(PyObject* obj, PyObject* value, void*) {
  if (value == nullptr) {
    PyErr_SetString(PyExc_AttributeError, "log_stats cannot be deleted");
    return -1;
  }
  const int truthy = PyObject_IsTrue(value);
  if (truthy < 0) return -1;
  reinterpret_cast<MetricsObject*>(obj)->log_stats = truthy != 0;
  return 0;
}

PyGetSetDef kGetSet[] = {
    {"model_name", GetModelName, nullptr, "The model_name label value.", nullptr},
    {"log_stats", GetLogStats, SetLogStats, "False: every method returns at once.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef kMembers[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(MetricsObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

bool AddType(PyObject* module, const ClassDef& cls, PyMethodDef* methods) {
  PyType_Slot slots[] = {
      {Py_tp_doc, const_cast<char*>(cls.doc)},
      {Py_tp_new, reinterpret_cast<void*>(New)},
      {Py_tp_init, reinterpret_cast<void*>(Init)},
      {Py_tp_dealloc, reinterpret_cast<void*>(Dealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(Traverse)},
      {Py_tp_clear, reinterpret_cast<void*>(Clear)},
      {Py_tp_methods, methods},
      {Py_tp_getset, kGetSet},
      {Py_tp_members, kMembers},
      {0, nullptr},
  };
  PyType_Spec spec{cls.type_name, sizeof(MetricsObject), 0,
                   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, slots};
  PyObject* type = PyType_FromModuleAndSpec(module, &spec, nullptr);
  if (type == nullptr) return false;
  for (size_t i = 0; i < std::size(kClasses); ++i) {
    if (kClasses[i] == &cls) g_types[i] = reinterpret_cast<PyTypeObject*>(type);  // module-owned
  }
  if (PyModule_AddObject(module, ShortName(cls), type) == 0) return true;
  Py_DECREF(type);
  return false;
}

}  // namespace

bool RegisterClassGroups(const char* class_key) {
  for (const ClassDef* cls : kClasses) {
    if (std::string_view(cls->key) != class_key) continue;
    for (Group g : cls->groups) {
      std::string error;
      if (!RegisterGroup(g, &error)) {
        PyErr_SetString(PyExc_ValueError, error.c_str());
        return false;
      }
    }
    return true;
  }
  PyErr_Format(PyExc_ValueError, "unknown metrics class %s", class_key);
  return false;
}

bool AddObserveTypes(PyObject* module) {
  if (pipeline::OmniFamilies().size() > kFamilies) {
    PyErr_SetString(PyExc_RuntimeError, "catalog larger than kFamilies");
    return false;
  }
  const auto setters = SetterDefs(std::make_index_sequence<std::size(kDuplexSetters)>());
  PyMethodDef* prometheus = BuildMethods<kPrometheusMethods, 6>(
      {setters[0], setters[1], setters[2],
       PyMethodDef{"observe_duplex_append", AsCFunction(&ObserveDuplexAppend),
                   METH_FASTCALL | METH_KEYWORDS,
                   "observe_duplex_append($self, /, outcome, latency_s)\n--\n\n"
                   "duplex_append_requests_total{outcome (bounded, else \"error\")} += 1 and "
                   "duplex_append_latency_s{outcome}.observe(max(latency_s, 0))"},
       PyMethodDef{"observe_tokens", AsCFunction(&ObserveTokens), METH_FASTCALL | METH_KEYWORDS,
                   "observe_tokens($self, /, prompt_tokens, generation_tokens)\n--\n\n"
                   "prompt_tokens_total += prompt_tokens and generation_tokens_total += "
                   "generation_tokens, each only if > 0"},
       PyMethodDef{"request_succeeded", AsCFunction(&RequestSucceeded),
                   METH_FASTCALL | METH_KEYWORDS,
                   "request_succeeded($self, /, e2e_seconds, finished_reason='stop')\n--\n\n"
                   "requests_success_total{finished_reason} += 1 and "
                   "e2e_request_latency_s.observe(e2e_seconds)"}});
  PyMethodDef* modality = BuildMethods<kModalityMethods, 0>({});
  PyMethodDef* transfer = BuildMethods<kTransferMethods, 0>({});
  PyMethodDef* realtime = BuildMethods<kRealtimeMethods, 0>({});
  return AddType(module, kPrometheusClass, prometheus) &&
         AddType(module, kModalityClass, modality) && AddType(module, kTransferClass, transfer) &&
         AddType(module, kRealtimeClass, realtime);
}

}  // namespace modelmetrics::python
