// What one exporter (an engine or a router) carries, as data: the gauges, windows and cache scopes
// the deployment metrics read from its Pods, the pairing and P/D rules that decide which of them a
// Pod reports, and the few readers that need more than a sum (SGLang's tiers, the gateway's 5xx).
//
// One profile per exporter, each in its own file under exporters/; exporter_registry.h selects the
// profile for a Pod. Parsing (metrics_parse.h) and merging (merge.h) are generic loops over these
// rows, so a new exporter is one new profile file plus one registry line, and both sources (direct
// scrapes, a Prometheus-compatible store) read it the same way.
//
// Row order is meaningful: windows are merged in order and the idle rule consults the idle key's
// delta, so that row comes before every histogram row; a lazy row that appears is windowed from
// the previous read that an earlier row's delta proves; gauges and scopes report in order.
//
// Thread-safety: profiles are immutable after static initialisation.
#ifndef MODELMETRICS_AGGREGATION_EXPORTER_PROFILE_H_
#define MODELMETRICS_AGGREGATION_EXPORTER_PROFILE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aggregation/pod_metrics.h"
#include "modelmetrics/exposition.h"
#include "modelmetrics/scrape.h"

namespace modelmetrics::deployment {

struct ModelDeployment;
struct Pod;

// Units the built-in rows share.
inline constexpr std::string_view kUnitSeconds = "seconds";
inline constexpr std::string_view kUnitRequests = "requests";
inline constexpr std::string_view kUnitRequestsPerSecond = "requests/second";
inline constexpr std::string_view kUnitErrorsPerSecond = "errors/second";
inline constexpr std::string_view kUnitFraction = "fraction";
// The utilization rows' key: the fraction of the engine's KV cache in use.
inline constexpr std::string_view kKvCacheUsage = "kv-cache-usage";

// The flag name of an argv entry: cut at the first '=' (for profiles' Pod checks).
std::string_view FlagName(std::string_view entry);

// Whether a container of the Pod passes `flag` (exactly, bare or as `flag=value`) in its command or
// arguments.
bool PassesFlag(const Pod& pod, std::string_view flag);

// Which Pods of a deployment a profile reads.
enum class PodRole { kEngine, kRouter };

// Which deployments a profile applies to (the vLLM router reads other series in P/D mode).
enum class DeploymentShape { kAny, kAggregated, kPrefillDecode };

// Where a window is reported in the snapshot.
enum class Area { kLatency, kTraffic, kTransfer };

enum class WindowKind { kHistogram, kCounter };

// When a row applies, by the deployment's shape and the Pod's role kind. A row that does not
// apply is skipped without a missing[] entry.
enum class Applies {
  kAlways,
  kUnlessPdPrefill,  // not on the prefill half of a P/D pair (it emits no decode tokens)
  kPdPrefillOnly,    // only on the prefill half of a P/D pair (it sends the KV transfer)
  kPdDecodeOnly,     // only on the decode half of a P/D pair
};

// Rows that report one entry per label group rather than one sum per Pod; the group becomes the
// entry's scope (vLLM-Omni's pipelines):
//   kStage         stage/<stage>
//   kStageReplica  stage/<stage>.<replica>
//   kEdge          edge/<from_stage>.<from_replica>-><to_stage>.<to_replica>
//   kLabel         <split_label>/<value>, e.g. reason/stage_error
enum class Split { kNone, kStage, kStageReplica, kEdge, kLabel };

// Which series of a family hold a row's value, as PromQL matchers that must all hold; empty: every
// series. For an exporter that writes a total beside its parts (SGLang's queue gauges: the total
// under priority="", one series per priority beside it) or splits a quantity into parts the row
// must not mix. Unsplit rows only.
using Select = std::vector<LabelMatch>;

// A name a row's family had in older versions of the exporter (vLLM's
// vllm:time_per_output_token_seconds, llm-d's inference_pool_ready_pods): read only when no series
// of the current name is there, so an exporter that writes both during a deprecation is read once,
// by the current name. Where neither is there, the missing[] reason names both.
struct OlderName {
  std::string_view family;
  std::string_view until;  // the versions that write it, e.g. "vLLM before 0.9.2"
};

// The labels an exporter writes on a row's family, the only ones the row combines (its `select`
// and rank-copies labels count as known): a series split by any other label, with two or more
// values, leaves the row unread, its reason naming the label, for a label the profile has not met
// may hold parts, a total beside them or copies, and a sum could count twice. A label with one
// value on every series splits nothing. Empty: every label is summed, as rows of families whose
// new labels have only ever split parts do (docs/deployment-metrics.md says which rows are strict).
using KnownLabels = std::vector<std::string_view>;

struct GaugeRow {
  std::string_view key;     // PodMetrics::gauges key and the snapshot's gauge name
  std::string_view family;  // read by sum over the selected series; reported as the source
  std::string_view unit;
  bool queueing = false;  // reported under queueing, else processing
  Applies applies = Applies::kAlways;
  Split split = Split::kNone;
  // The exporter creates the family at its first observation: absence is not a fault.
  bool lazy = false;
  Select select;
  std::vector<OlderName> older;  // unsplit rows only
  KnownLabels known_labels;      // unsplit rows only
};

// A fraction of a per-Pod resource in use (KV-cache blocks or tokens), reported under
// `utilization` (a modelmetrics extension beside GPUStack's fields) as the mean and the max over a
// role's Pods. A Pod's value is the mean of its series: each series is one data-parallel rank's
// fraction of its own cache (equal in size), or a copy of one. Absent, it is a missing[] entry
// with a not-partial reason: the GPUStack fields do not depend on it.
struct UtilizationRow {
  std::string_view key;     // PodMetrics::utilization key and the snapshot's entry name
  std::string_view family;  // a gauge in [0, 1]; reported as the source
  std::vector<OlderName> older;
};

struct WindowRow {
  std::string_view key;     // PodMetrics::windows key and the snapshot's window name
  std::string_view family;  // histogram or counter; reported as the source
  WindowKind kind = WindowKind::kHistogram;
  Area area = Area::kLatency;
  std::string_view unit;
  // The window key this one pairs with: when this one is absent, the pair decides whether the
  // absence is the labelled-series rule (not partial) or a plain absence.
  std::string_view pair;
  Applies applies = Applies::kAlways;
  bool from_reader = false;  // the profile's reader sets the value, not the generic sum
  Split split = Split::kNone;
  std::string_view split_label;  // kLabel: the label that names the group
  // The exporter creates the family (or a group's series) at its first observation: absence is
  // not a fault, and a family or group that appears between two reads of the Pod is windowed from
  // zero.
  bool lazy = false;
  Select select;
  // A lazy row's missing[] reason while absent (a not-partial one); "": reason::kNotYetObserved.
  std::string_view lazy_reason;
  std::vector<OlderName> older;  // unsplit rows only
  KnownLabels known_labels;      // unsplit rows only
};

// A ratio of two windows' deltas over the same sampling window, reported under traffic:
// numerator / denominator, or numerator / (numerator + denominator) with add_numerator.
// With per_scope, one ratio per scope the numerator has (the denominator's same scope); else the
// scopes of each are summed into one ratio at the Pod's scope.
struct RatioRow {
  std::string_view key;  // the snapshot's window name
  std::string_view numerator;
  std::string_view denominator;
  bool add_numerator = false;
  bool per_scope = false;
  std::string_view no_denominator;  // the missing[] reason when the denominator did not move
};

// The names a cache scope's counters had in older versions of the exporter (OlderName's rule:
// read only when neither current counter is there).
struct OlderCounters {
  std::string_view hits;
  std::string_view queries;
  std::string_view until;
};

struct CacheRow {
  std::string_view scope;    // PodMetrics::cache key and the snapshot's scope
  std::string_view hits;     // counter families; with from_reader, the families the reader uses
  std::string_view queries;  //   (named so a store source can detect their resets)
  std::string_view source;   // the snapshot's `source` for this scope
  bool from_reader = false;
  std::vector<OlderCounters> older;
};

// A missing[] entry every Pod of the profile reports (a series the exporter cannot provide).
struct FixedMissing {
  std::string_view source;
  std::string_view reason;
};

// The Pod a scope check looks at.
struct PodView {
  const Pod& pod;
  const ModelDeployment& md;
  bool pd = false;  // the deployment is a prefill/decode pair
  bool prefill = false;
  bool decode = false;
};

// Why a scope's hit ratio is not the one the snapshot reports (a not-partial reason), or nullopt.
// Called after the scope's baseline is stored and before its delta is computed.
using ScopeCheck = std::optional<std::string_view> (*)(std::string_view scope,
                                                       const CounterPair& current,
                                                       const PodView& pod);

// Extra reading beyond sums and histogram totals; writes the rows marked from_reader.
using Reader = void (*)(const Scrape& scrape, PodMetrics* out);

// A family the reader needs, with its type (a store keeps no TYPE lines; this types its samples).
struct ReaderFamily {
  std::string_view name;
  MetricType type = MetricType::kCounter;
};

// A mode in which the exporter writes one copy of each value per rank, switched on by a Pod
// argument (SGLang's --enable-metrics-for-all-schedulers: every attention-TP rank logs the batch
// they all run). In that mode, of the series that differ only in `labels`, the one whose `order`
// label is numerically lowest is read: the copy the exporter writes with the mode off.
struct RankCopies {
  std::string_view flag;
  std::vector<std::string_view> labels;
  std::string_view order;
};

struct ErrorRatio {
  std::string_view requests;  // window keys
  std::string_view errors;
};

struct ExporterProfile {
  std::string_view name;  // as the ModelDeployment names it (engines: any case; routers: exact)
  PodRole role = PodRole::kEngine;
  DeploymentShape shape = DeploymentShape::kAny;

  std::vector<GaugeRow> gauges;
  std::vector<UtilizationRow> utilization;
  std::vector<FixedMissing> unsupported;
  std::vector<WindowRow> windows;
  // A zero delta of this window marks the Pod's sampling window idle (latency and cache entries
  // then carry the idle-window reason); "" for none.
  std::string_view idle_key;
  std::string_view idle_reason;  // the idle entries' reason; "": reason::kIdleWindow
  // The idle rule covers every histogram row, not only latency (an idle pipeline transfers
  // nothing either).
  bool idle_all_areas = false;
  std::optional<ErrorRatio> error_ratio;
  std::vector<RatioRow> ratios;
  // Empty: the profile reports no cache hits at all (routers).
  std::vector<CacheRow> cache;
  bool cache_on_pd_decode = true;  // false: the decode half of a pair reports no cache entries
  ScopeCheck scope_check = nullptr;

  Reader reader = nullptr;
  std::vector<ReaderFamily> reader_families;  // the families the reader needs parsed

  std::optional<RankCopies> rank_copies;
  // Whether the Pod runs the exporter in its rank-copies mode.
  bool WritesRankCopies(const Pod& pod) const;

  // Every family name the rows and the reader read, each once, in row order.
  std::vector<std::string> Families() const;
  // The labels the split rows group by, each once: the exporter's own, never a store's replica
  // or target label.
  std::vector<std::string_view> SplitLabelsOfRows() const;
  // The labels a split row groups by, in scope order, and the scope of one group's values.
  static std::vector<std::string_view> SplitLabels(Split split, std::string_view split_label);
  static std::string SplitScope(Split split, std::string_view split_label,
                                const std::vector<std::string>& values);
  // Whether a row applies to a Pod of this shape and role kind.
  static bool AppliesTo(Applies applies, bool pd, bool prefill, bool decode);
};

// The missing[] reason of an absent row that has older names: "metric is absent: looked for
// <family>, then <older> (<until>), ...". `family` may name two ("a and b").
std::string AbsentUnderAnyName(std::string_view family, const std::vector<OlderName>& older);

// The references between a profile's rows that name nothing: an idle_key, a window's `pair`, an
// error ratio's or a ratio's windows that are not window keys of the profile, idle or
// no-denominator reasons that would set `partial` (they must be not-partial reasons, reasons.h),
// a `select`, `older` or `known_labels` on a split row (which reads every series of one name), and
// a rank-copies order label that is not one of its copy labels. One line each
// ("ratios[0].denominator: no window `x`"); empty for a sound profile. A profile is data the
// compiler cannot check: tests run this over every registered one.
std::vector<std::string> DanglingReferences(const ExporterProfile& profile);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_EXPORTER_PROFILE_H_
