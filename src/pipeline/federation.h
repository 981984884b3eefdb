// Federation of external vLLM engine processes: scrape their `/metrics`, keep every `vllm:*`
// family, replace the `engine` label by the (`stage`, `replica`) pair the pipeline knows the
// engine as, and re-expose the result on the pipeline's own `/metrics` through the registry.
// This is the out-of-process counterpart of vLLM-Omni's OmniPrometheusStatLogger wrap
// (docs/pipeline-behaviour.md §3.6, §4.12).
//
// EngineMap. Flat engine indexes are assigned stage by stage, replica by replica, from 0: pools
// {1, 2, 1} give 0:(0,0) 1:(1,0) 2:(1,1) 3:(2,0). Label values are the decimal ids ("1"). The
// map is static once built.
//
// Relabel contract (RelabelEngines). Given several engines' scrape bodies:
//   * Each body is parsed strictly in the format its Content-Type names (detected when absent).
//     A body that does not parse contributes nothing at all (EngineReport::parsed is false).
//   * Every family whose name starts with `vllm:` is kept, whatever the vLLM version; other
//     families are ignored. Each kept family is written ONCE (one HELP/TYPE, contiguous) with
//     the series of all engines, in order of first appearance (engines in input order).
//   * Labels of each series: `engine` is removed and `stage`, `replica` are added; existing
//     `stage`/`replica` labels are replaced. Labels are then sorted by name (`le` and `quantile`
//     among them), which is what prometheus_client - and so vLLM-Omni - exposes. Label values,
//     sample values (shortest round-trip), timestamps and exemplars are unchanged; `le` and
//     `quantile` are rendered canonically by the writer.
//   * Which (stage, replica) a series gets (EngineLabelRule): kEndpoint (default) - the pair
//     configured for the body, whatever `engine` value the series carries (an external engine
//     process numbers its engines locally, usually "0"); kFlatIndex - the `engine` value is a flat
//     index into the EngineMap (the reference's rule); a value not in the map drops the series
//     (reason unknown_engine), a series without `engine` gets the configured pair.
//   * Text and OpenMetrics inputs are merged into one model and written in the writer's format:
//     a counter `x` is `x_total` (TYPE `x_total counter` in text, `x counter` in OpenMetrics);
//     `_created` samples are kept, in text as their own `x_created` gauge family right after the
//     family (client_python's layout, i.e. what vLLM itself serves), in OpenMetrics inside the
//     family after each series' samples. A text gauge `x_created` is recognised as the created
//     series of `x` when the same body has a counter, histogram or summary `x`.
//   * Conflicts never produce invalid output; the loser's samples are dropped and counted per
//     engine: a family already typed differently by an earlier engine (or earlier in the same
//     body) - type_conflict, first type wins; a family whose sample or family names would
//     collide with another family's - name_clash; a series (name and labels) already written -
//     duplicate, first one wins.
//   * Samples of one series (labels apart from `le`/`quantile`) are written together, so
//     histograms stay grouped even when a body interleaves them.
//
// Federation. Configured with endpoints {url, stage, replica}, it registers a collector on a
// Registry; at each render it fetches every endpoint concurrently (HttpClient::FetchAll, deadline
// = now + timeout, default 1 s), asking for the format being rendered, then relabels and writes.
// Nothing is cached: a render shows what the engines said during that render. An endpoint that
// fails (any FetchError, or a body that does not parse) contributes nothing and increments
// `vllm_omni:federation_scrape_errors_total{stage,replica,reason}` (reason: FetchErrorName, or
// "parse"); dropped samples increment `vllm_omni:federation_dropped_samples_total{stage,replica,
// reason}`. The registry renders its families before its collectors, so a render's failures show
// in the counters from the next render on. The collector never throws and never writes a partial
// family unless memory runs out while writing. The registry must not also hold in-process
// families of the federated names (e.g. the catalog's `vllm:*` engine families): the collector
// cannot see them, and the exposition would carry the family twice.
//
// One live Federation per registry: two would both write their families (a Federation destroyed
// earlier detaches, so a new one may take its place and share its counter families).
//
// Thread-safety: EngineMap is immutable after construction; RelabelEngines is a pure function
// (the writer is the caller's). Federation's collector may run concurrently from any number of
// threads (concurrent renders fetch independently). The Registry must outlive the Federation; the
// Federation may be destroyed while renders run: it detaches (later renders write nothing from
// it) and its HTTP client is released when the last render using it returns; its counter families
// stay registered.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_FEDERATION_H_
#define MODELMETRICS_PIPELINE_FEDERATION_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "modelmetrics/exposition.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/parser.h"
#include "modelmetrics/writer.h"
#include "net/http_client.h"
#include "pipeline/engine_map.h"

namespace modelmetrics::pipeline {

using base::Status;

enum class EngineLabelRule : uint8_t {
  kEndpoint,   // every series gets the body's configured (stage, replica)
  kFlatIndex,  // `engine="k"` -> EngineMap::At(k); no `engine` -> the configured pair
};

// One engine process's scrape.
struct EngineScrape {
  std::string_view body;
  std::string_view content_type;  // the reply's Content-Type; empty: detect (DetectFormat)
  StageReplica target;            // the configured (stage, replica)
  EngineLabelRule rule = EngineLabelRule::kEndpoint;
};

enum class DropReason : uint8_t { kTypeConflict, kNameClash, kDuplicate, kUnknownEngine };
inline constexpr size_t kDropReasonCount = 4;
// "type_conflict", "name_clash", "duplicate", "unknown_engine".
std::string_view DropReasonName(DropReason reason);

struct EngineReport {
  bool parsed = false;  // false: the body did not parse strictly and nothing of it was written
  std::string error;    // "line:column: message" when !parsed
  size_t samples = 0;   // samples written
  std::array<size_t, kDropReasonCount> dropped{};  // samples dropped, by DropReason
  size_t dropped_total() const;
};

struct RelabelOptions {
  std::string prefix = "vllm:";  // families kept
  // Keep the `_created` series of counters, histograms and summaries (what vLLM serves). Off:
  // they are left out (not counted as dropped), as the in-process `vllm:*` catalog has none.
  bool keep_created = true;
  ParseLimits limits;
};

// Parses every scrape, merges the kept families and writes them through `writer` (see the file
// comment). Returns one report per scrape, in order. Writes nothing (and propagates) when
// building the merged model throws (memory); does not call writer.Finish().
std::vector<EngineReport> RelabelEngines(std::span<const EngineScrape> scrapes,
                                         const EngineMap& map, ExpositionWriter& writer,
                                         const RelabelOptions& options = {});

struct FederationEndpoint {
  std::string url;  // http(s)://host:port/metrics
  StageReplica target;
  EngineLabelRule rule = EngineLabelRule::kEndpoint;
  // Extra request headers (e.g. Authorization); an Accept header here overrides the negotiated
  // one.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct FederationOptions {
  std::vector<FederationEndpoint> endpoints;
  EngineMap engine_map;  // for kFlatIndex endpoints
  net::ClientOptions client;
  std::chrono::milliseconds timeout{1000};  // per render: the FetchAll deadline
  RelabelOptions relabel;
  std::string collector_name = "vllm_federation";
};

inline constexpr std::string_view kScrapeErrorsFamily = "vllm_omni:federation_scrape_errors";
inline constexpr std::string_view kDroppedSamplesFamily = "vllm_omni:federation_dropped_samples";

class Federation {
 public:
  // Registers the two counter families and the collector on `registry`, into `*out`. An error
  // when a family cannot be added (e.g. its names are taken by different definitions) or the HTTP
  // client cannot start. A disabled registry (log_stats off) gets nothing registered, as
  // the reference then never builds its wrap: the Federation is inert and /metrics has no `vllm:*`.
  static Status Create(Registry& registry, FederationOptions options,
                       std::unique_ptr<Federation>* out);
  ~Federation();
  Federation(const Federation&) = delete;
  Federation& operator=(const Federation&) = delete;

  // One collection into `writer`: what the registered collector does at each render.
  void Collect(ExpositionWriter& writer) const;

  // The counter families (nullptr when the registry was disabled).
  Family<Counter>* scrape_errors() const;
  Family<Counter>* dropped_samples() const;

  struct State;  // shared with the registered collector

 private:
  explicit Federation(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_FEDERATION_H_
