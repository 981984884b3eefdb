// See metrics_parse.h. The series tables are §3 of the reference.
#include "deployment/metrics_parse.h"

#include <charconv>
#include <cmath>
#include <vector>

#include "deployment/objects.h"
#include "modelmetrics/scrape.h"

namespace modelmetrics::deployment {
namespace {

struct Series {
  std::string_view key;
  std::string_view name;
};

struct PairSeries {
  std::string_view scope;
  std::string_view hits;
  std::string_view queries;
};

// What each exporter carries. Histograms and counters both land in PodMetrics::windows.
struct ExporterSeries {
  std::vector<Series> gauges;
  std::vector<PairSeries> pairs;
  std::vector<Series> histograms;
  std::vector<Series> counters;
};

const ExporterSeries& SeriesOf(Exporter exporter) {
  static const ExporterSeries kVllm{
      .gauges = {{"running", "vllm:num_requests_running"},
                 {"waiting", "vllm:num_requests_waiting"}},
      .pairs = {{"local-prefix", "vllm:prefix_cache_hits", "vllm:prefix_cache_queries"},
                {"external-store", "vllm:external_prefix_cache_hits",
                 "vllm:external_prefix_cache_queries"}},
      .histograms = {{"ttft", "vllm:time_to_first_token_seconds"},
                     {"tpot", "vllm:request_time_per_output_token_seconds"},
                     {"itl", "vllm:inter_token_latency_seconds"}},
  };
  static const ExporterSeries kSglang{
      .gauges = {{"running", "sglang:num_running_reqs"},
                 {"waiting", "sglang:num_queue_reqs"},
                 {"decode-transfer-waiting", "sglang:num_decode_transfer_queue_reqs"}},
      .histograms = {{"ttft", "sglang:time_to_first_token_seconds"},
                     {"itl", "sglang:inter_token_latency_seconds"},
                     {"transfer-latency", "sglang:kv_transfer_latency_ms"},
                     {"transfer-speed", "sglang:kv_transfer_speed_gb_s"},
                     {"transfer-size", "sglang:kv_transfer_total_mb"}},
      .counters = {{"transfer-failures", "sglang:num_transfer_failed_reqs_total"}},
  };
  static const ExporterSeries kLlmd{
      .gauges = {{"router-running", "llm_d_epp_request_running"},
                 {"router-backends", "llm_d_epp_ready_endpoints"}},
      .histograms = {{"ttft", "llm_d_epp_request_ttft_seconds"},
                     {"tpot", "llm_d_epp_request_streaming_tpot_seconds"}},
      .counters = {{"requests", "llm_d_epp_request_total"},
                   {"request-errors", "llm_d_epp_request_error_total"}},
  };
  static const ExporterSeries kVllmRouter{
      .gauges = {{"router-running", "vllm_router_running_requests"},
                 {"router-reported-workers", "vllm_router_active_workers"}},
      .counters = {{"successful-requests", "vllm_router_requests_total"},
                   {"errors", "vllm_router_request_errors_total"},
                   {"retries-exhausted", "vllm_router_retries_exhausted_total"},
                   {"pd-requests", "vllm_router_pd_requests_total"},
                   {"pd-errors", "vllm_router_pd_errors_total"}},
  };
  static const ExporterSeries kGateway{
      .gauges = {{"router-running", "smg_worker_requests_active"},
                 {"router-backends", "smg_worker_pool_size"}},
      .counters = {{"requests", "smg_router_requests_total"},
                   {"errors", "smg_router_request_errors_total"}},
  };
  static const ExporterSeries kNone{};
  switch (exporter) {
    case Exporter::kVllm:
      return kVllm;
    case Exporter::kSglang:
      return kSglang;
    case Exporter::kLlmdRouter:
      return kLlmd;
    case Exporter::kVllmRouter:
      return kVllmRouter;
    case Exporter::kSglangGateway:
      return kGateway;
    case Exporter::kUnknownRouter:
    case Exporter::kUnknownEngine:
      return kNone;
  }
  return kNone;
}

constexpr std::string_view kSglangEffectiveTokens = "sglang:prefill_effective_tokens_total";
constexpr std::string_view kSmgHttpResponses = "smg_http_responses_total";

// SGLang's tiers share one denominator: input plus every hit mode; all four modes must exist.
void ReadSglangTiers(const Scrape& scrape, PodMetrics* out) {
  static constexpr std::string_view kModes[] = {"input", "device_hit", "host_hit", "storage_hit"};
  double values[4];
  for (int i = 0; i < 4; ++i) {
    const LabelMatch match[] = {{"mode", kModes[i]}};
    const std::optional<double> value = scrape.Sum(kSglangEffectiveTokens, match);
    if (!value) return;
    values[i] = *value;
  }
  const double queries = values[0] + values[1] + values[2] + values[3];
  out->cache["device-prefix"] = {values[1], queries};
  out->cache["host-prefix"] = {values[2], queries};
  out->cache["storage-prefix"] = {values[3], queries};
}

// The gateway's 5xx responses: the family counts as observed once one sample carries a valid
// status code (its first `status_code` label, 100..599) and a valid value.
void ReadGatewayHttp5xx(const Scrape& scrape, PodMetrics* out) {
  const MetricFamily* family = scrape.Find(kSmgHttpResponses);
  if (family == nullptr || family->type != MetricType::kCounter) return;
  bool observed = false;
  double errors = 0;
  for (const MetricSample& sample : family->samples) {
    if (sample.name != kSmgHttpResponses && sample.name != "smg_http_responses") continue;
    for (const LabelPair& label : sample.labels) {
      if (label.first != "status_code") continue;
      int code = 0;
      const auto [end, ec] =
          std::from_chars(label.second.data(), label.second.data() + label.second.size(), code);
      const bool valid_code = ec == std::errc() &&
                              end == label.second.data() + label.second.size() && code >= 100 &&
                              code <= 599;
      if (valid_code && std::isfinite(sample.value) && sample.value >= 0) {
        observed = true;
        if (code >= 500) errors += sample.value;
      }
      break;  // only the first status_code label counts
    }
  }
  if (observed) out->windows["http-5xx-responses"] = {0, errors};
}

std::vector<std::string> WantedFamilies(Exporter exporter) {
  const ExporterSeries& series = SeriesOf(exporter);
  std::vector<std::string> names;
  for (const Series& s : series.gauges) names.emplace_back(s.name);
  for (const PairSeries& p : series.pairs) {
    names.emplace_back(p.hits);
    names.emplace_back(p.queries);
  }
  for (const Series& s : series.histograms) names.emplace_back(s.name);
  for (const Series& s : series.counters) names.emplace_back(s.name);
  if (exporter == Exporter::kSglang) names.emplace_back(kSglangEffectiveTokens);
  if (exporter == Exporter::kSglangGateway) names.emplace_back(kSmgHttpResponses);
  return names;
}

}  // namespace

Exporter EngineExporter(std::string_view engine) {
  if (IsVllmEngine(engine)) return Exporter::kVllm;
  if (IsSglangEngine(engine)) return Exporter::kSglang;
  return Exporter::kUnknownEngine;
}

Exporter RouterExporter(std::string_view router) {
  if (router == kRouterLlmd) return Exporter::kLlmdRouter;
  if (router == kRouterVllm) return Exporter::kVllmRouter;
  if (router == kRouterSglangGateway) return Exporter::kSglangGateway;
  return Exporter::kUnknownRouter;
}

bool ParsePodMetrics(std::string_view body, Exporter exporter, PodMetrics* out,
                     std::string* error) {
  static const auto kWanted = [] {
    std::vector<std::vector<std::string>> wanted;
    for (int e = 0; e <= static_cast<int>(Exporter::kUnknownEngine); ++e) {
      wanted.push_back(WantedFamilies(static_cast<Exporter>(e)));
    }
    return wanted;
  }();
  *out = PodMetrics{};
  ScrapeOptions options;
  options.families = kWanted[static_cast<int>(exporter)];
  if (options.families.empty()) options.families.emplace_back("");  // read nothing, check all
  Scrape scrape;
  std::string parse_error;
  if (!scrape.Parse(body, options, &parse_error)) {
    *error = "parse Prometheus metrics: " + parse_error;
    return false;
  }
  const ExporterSeries& series = SeriesOf(exporter);
  for (const Series& gauge : series.gauges) {
    if (const std::optional<double> value = scrape.Sum(gauge.name)) {
      out->gauges.emplace(gauge.key, *value);
    }
  }
  for (const PairSeries& pair : series.pairs) {
    const std::optional<double> hits = scrape.Sum(pair.hits);
    const std::optional<double> queries = scrape.Sum(pair.queries);
    if (hits && queries) out->cache.emplace(pair.scope, CounterPair{*hits, *queries});
  }
  for (const Series& histogram : series.histograms) {
    if (const std::optional<HistogramTotals> totals = scrape.Histogram(histogram.name)) {
      out->windows.emplace(histogram.key, WindowValue{totals->sum, totals->count});
    }
  }
  for (const Series& counter : series.counters) {
    if (const std::optional<double> value = scrape.Sum(counter.name)) {
      out->windows.emplace(counter.key, WindowValue{0, *value});
    }
  }
  if (exporter == Exporter::kSglang) ReadSglangTiers(scrape, out);
  if (exporter == Exporter::kSglangGateway) ReadGatewayHttp5xx(scrape, out);
  // Each sample is finite, but a sum of huge ones can overflow: such a key reads as absent.
  std::erase_if(out->gauges, [](const auto& g) { return !std::isfinite(g.second); });
  std::erase_if(out->cache, [](const auto& c) {
    return !std::isfinite(c.second.hits) || !std::isfinite(c.second.queries);
  });
  std::erase_if(out->windows, [](const auto& w) {
    return !std::isfinite(w.second.sum) || !std::isfinite(w.second.count);
  });
  return true;
}

}  // namespace modelmetrics::deployment
