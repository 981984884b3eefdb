// Reading one Pod's /metrics body into the keyed values the merge needs (reference §3).
//
// Keys are the snapshot's field names: gauges (`running`, `router-backends`, ...), cache counter
// pairs by scope (`local-prefix`, `device-prefix`, ...) and window values by window name (`ttft`,
// `requests`, `transfer-size`, ...). A key is present only when its series were found with at
// least one valid sample: untyped families are absent, histograms must be TYPE histogram, NaN,
// infinite and negative values are skipped, `name` and `name_total` both resolve. Every series an
// exporter kind could carry is read whatever the Pod's role; the merge decides what it uses.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_DEPLOYMENT_METRICS_PARSE_H_
#define MODELMETRICS_DEPLOYMENT_METRICS_PARSE_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace modelmetrics::deployment {

// Which exporter a Pod runs: the engine for engine Pods, the router for router Pods. The unknown
// ones read nothing: their Pods are scraped (so a broken one still shows its scrape error) and
// reported with an `unsupported source` entry instead of being read by another exporter's rules.
enum class Exporter {
  kVllm,
  kSglang,
  kLlmdRouter,
  kVllmRouter,
  kSglangGateway,
  kUnknownRouter,
  kUnknownEngine,
};

// `vllm` and `sglang` in any case. Upstream reads every other name as SGLang; that silently
// applies SGLang's rules to an engine nobody checked, so here it is kUnknownEngine.
Exporter EngineExporter(std::string_view engine);
Exporter RouterExporter(std::string_view router);

struct CounterPair {
  double hits = 0;
  double queries = 0;
};

// A histogram's `_sum`/`_count` totals, or a counter's value in `count` (sum 0).
struct WindowValue {
  double sum = 0;
  double count = 0;
};

struct PodMetrics {
  std::map<std::string, double, std::less<>> gauges;
  std::map<std::string, CounterPair, std::less<>> cache;
  std::map<std::string, WindowValue, std::less<>> windows;
};

// Parses `body` (text format, or OpenMetrics when it ends in `# EOF`) strictly. On a syntax error
// returns false with `*error` = "parse Prometheus metrics: <line:column: message>".
bool ParsePodMetrics(std::string_view body, Exporter exporter, PodMetrics* out, std::string* error);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_DEPLOYMENT_METRICS_PARSE_H_
