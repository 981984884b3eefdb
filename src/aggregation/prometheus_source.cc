// See prometheus_source.h.
#include "aggregation/prometheus_source.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "base/base64.h"
#include "base/file.h"
#include "exporter_registry.h"
#include "metrics_parse.h"
#include "modelmetrics/scrape.h"
#include "net/http_client.h"
#include "store_copies.h"

namespace modelmetrics::deployment {
namespace {

constexpr std::string_view kTotal = "_total";

// How a stored series is read: the family it belongs to, typed by the profile, and the row family
// whose windows a decrease in it resets ("" for gauges).
struct SeriesRole {
  std::string family;
  MetricType type = MetricType::kGauge;
  std::string reset_id;
};
using SeriesRoles = std::unordered_map<std::string, SeriesRole>;

SeriesRoles RolesOf(const ExporterProfile* profile) {
  SeriesRoles roles;
  if (profile == nullptr) return roles;
  // `family` read under the row family `id` (its current name, which keys its resets).
  auto counter = [&roles](std::string_view family, std::string_view row) {
    const std::string name(family), id(row);
    roles.try_emplace(name, SeriesRole{name, MetricType::kCounter, id});
    roles.try_emplace(name + std::string(kTotal),
                      SeriesRole{name + std::string(kTotal), MetricType::kCounter, id});
    if (family.ends_with(kTotal)) {
      const std::string bare(family.substr(0, family.size() - kTotal.size()));
      roles.try_emplace(bare, SeriesRole{bare, MetricType::kCounter, id});
    }
  };
  auto histogram = [&roles](std::string_view family, std::string_view row) {
    const std::string name(family), id(row);
    for (const char* suffix : {"_sum", "_count"}) {
      roles.try_emplace(name + suffix, SeriesRole{name, MetricType::kHistogram, id});
    }
  };
  auto gauge = [&roles](std::string_view family) {
    roles.try_emplace(std::string(family), SeriesRole{std::string(family), MetricType::kGauge, ""});
  };
  for (const GaugeRow& row : profile->gauges) {
    gauge(row.family);
    for (const OlderName& older : row.older) gauge(older.family);
  }
  for (const UtilizationRow& row : profile->utilization) {
    gauge(row.family);
    for (const OlderName& older : row.older) gauge(older.family);
  }
  for (const WindowRow& row : profile->windows) {
    if (row.from_reader) continue;
    auto add = [&](std::string_view family) {
      row.kind == WindowKind::kHistogram ? histogram(family, row.family)
                                         : counter(family, row.family);
    };
    add(row.family);
    for (const OlderName& older : row.older) add(older.family);
  }
  for (const CacheRow& row : profile->cache) {
    if (row.from_reader) continue;
    counter(row.hits, row.hits);
    counter(row.queries, row.queries);
    for (const OlderCounters& older : row.older) {
      counter(older.hits, row.hits);
      counter(older.queries, row.queries);
    }
  }
  for (const ReaderFamily& family : profile->reader_families) {
    if (family.type == MetricType::kHistogram) {
      histogram(family.name, family.name);
    } else if (family.type == MetricType::kCounter) {
      counter(family.name, family.name);
    } else {
      roles.try_emplace(std::string(family.name),
                        SeriesRole{std::string(family.name), family.type, ""});
    }
  }
  return roles;
}

// The previous read of a Pod from the store: its oldest scrape in the window, and the row
// families a decrease reset.
class RangeBaselines : public Baselines {
 public:
  RangeBaselines(const ExporterProfile& profile, std::optional<PodMetrics> first, ReadTime first_at,
                 std::set<std::string, std::less<>> resets)
      : profile_(profile), first_(std::move(first)), at_(first_at), resets_(std::move(resets)) {}

  Previous Window(std::string_view, std::string_view id, const BaselineSample&) override {
    // A split row's id is `family{scope}` (merge.cc).
    std::string_view family = id, scope;
    if (const size_t brace = id.find('{'); brace != std::string_view::npos && id.ends_with('}')) {
      family = id.substr(0, brace);
      scope = id.substr(brace + 1, id.size() - brace - 2);
    }
    if (resets_.contains(family)) return {std::nullopt, true};
    if (!first_) return {};
    for (const WindowRow& row : profile_.windows) {
      if (row.family != family) continue;
      const WindowValue* value = nullptr;
      if (scope.empty()) {
        const auto found = first_->windows.find(row.key);
        if (found != first_->windows.end()) value = &found->second;
      } else if (const auto rows = first_->scoped_windows.find(row.key);
                 rows != first_->scoped_windows.end()) {
        const auto found = rows->second.find(std::string(scope));
        if (found != rows->second.end()) value = &found->second;
      }
      if (value == nullptr) return {};
      return {BaselineSample{value->sum, value->count, at_}};
    }
    return {};
  }

  Previous Counter(std::string_view, std::string_view scope, const BaselineSample&) override {
    for (const CacheRow& row : profile_.cache) {
      if (row.scope != scope) continue;
      if (resets_.contains(row.hits) || resets_.contains(row.queries)) return {std::nullopt, true};
      if (!first_) return {};
      const auto value = first_->cache.find(row.scope);
      if (value == first_->cache.end()) return {};
      return {BaselineSample{value->second.hits, value->second.queries, at_}};
    }
    return {};
  }

 private:
  const ExporterProfile& profile_;
  std::optional<PodMetrics> first_;
  ReadTime at_;
  std::set<std::string, std::less<>> resets_;
};

WallTime FromMs(int64_t ms) { return WallTime(std::chrono::milliseconds(ms)); }

std::string Seconds(std::chrono::milliseconds d) {
  return d.count() % 1000 == 0 ? fmt::format("{}s", d.count() / 1000)
                               : fmt::format("{}ms", d.count());
}

const StoreSample* SampleAt(const StoreSeries& series, int64_t ms) {
  const auto it = std::lower_bound(series.samples.begin(), series.samples.end(), ms,
                                   [](const StoreSample& s, int64_t t) { return s.ms < t; });
  return it != series.samples.end() && it->ms == ms ? &*it : nullptr;
}

// The scrape model of one instant: every series' sample at exactly `ms`, typed by its role,
// without the labels that name the target (constant within it). False, with the reason, when a
// series is there twice: the check a direct read makes.
bool ScrapeAt(std::span<const StoreSeries* const> series, const SeriesRoles& roles,
              std::span<const std::string> target_labels, int64_t ms, Scrape* scrape,
              std::string* error) {
  std::map<std::string, MetricFamily> families;
  for (const StoreSeries* s : series) {
    const auto role = roles.find(s->name);
    if (role == roles.end()) continue;
    const StoreSample* sample = SampleAt(*s, ms);
    if (sample == nullptr) continue;
    MetricFamily& family = families[role->second.family];
    family.name = role->second.family;
    family.type = role->second.type;
    MetricSample& out = family.samples.emplace_back();
    out.name = s->name;
    out.value = sample->value;
    for (const LabelPair& label : s->labels) {
      if (std::find(target_labels.begin(), target_labels.end(), label.first) ==
          target_labels.end()) {
        out.labels.push_back(label);
      }
    }
  }
  std::vector<MetricFamily> list;
  list.reserve(families.size());
  for (auto& [name, family] : families) list.push_back(std::move(family));
  if (scrape->Assign(std::move(list), error)) return true;
  *error = fmt::format("the store holds a series of the Pod twice at {} ({})",
                       FormatTime(FromMs(ms)), *error);
  return false;
}

// The newest scrape the store holds in full: the newest instant at which every series read at
// the instant before it has a sample too. A store fed by remote write can show part of a scrape
// (its batches arrive apart); such an instant is passed over, back to one that is whole. A series
// the exporter really dropped costs one scrape of delay, once.
int64_t NewestCompleteScrape(std::span<const StoreSeries* const> series, const SeriesRoles& roles,
                             const std::set<int64_t>& instants) {
  for (auto it = instants.rbegin(); it != instants.rend(); ++it) {
    const auto before = std::next(it);
    if (before == instants.rend()) return *it;
    const bool whole = std::all_of(series.begin(), series.end(), [&](const StoreSeries* s) {
      if (s->name != "up" && !roles.contains(s->name)) return true;
      return SampleAt(*s, *before) == nullptr || SampleAt(*s, *it) != nullptr;
    });
    if (whole) return *it;
  }
  return *instants.rbegin();
}

std::string_view LabelOf(const StoreSeries& series, std::string_view name) {
  for (const auto& [key, value] : series.labels) {
    if (key == name) return value;
  }
  return {};
}

std::string NoSampleText(std::chrono::milliseconds range) {
  return fmt::format("the store has no sample of the Pod in the last {}", Seconds(range));
}

std::string DownText(int64_t up_ms) {
  return fmt::format("the store's newest scrape of the Pod failed (up == 0 at {})",
                     FormatTime(FromMs(up_ms)));
}

// The Pods of one query: they share an exporter profile.
struct Chunk {
  const ExporterProfile* profile;
  SeriesRoles roles;
  std::vector<std::string_view> exporter_labels;  // the profile's split labels
  std::vector<size_t> pods;
  std::string body;
};

// The Pod's metrics at T1 and its baselines at T0, from one copy of its series.
PodRead ReadMetrics(std::span<const StoreSeries* const> own, const Chunk& chunk, const Pod& pod,
                    std::span<const std::string> target_labels, int64_t t0, int64_t t1) {
  std::set<std::string, std::less<>> resets;
  for (const StoreSeries* s : own) {
    const auto role = chunk.roles.find(s->name);
    if (role == chunk.roles.end() || role->second.reset_id.empty()) continue;
    std::optional<double> previous;
    for (const StoreSample& sample : s->samples) {
      if (sample.ms < t0 || sample.ms > t1 || std::isnan(sample.value)) continue;
      if (previous && sample.value < *previous) resets.insert(role->second.reset_id);
      previous = sample.value;
    }
  }
  Scrape last, first_scrape;
  std::string error;
  if (!ScrapeAt(own, chunk.roles, target_labels, t1, &last, &error) ||
      (t0 < t1 && !ScrapeAt(own, chunk.roles, target_labels, t0, &first_scrape, &error))) {
    return {.error = error, .outcome = PodOutcome::kCopies};
  }
  PodRead read;
  read.outcome = PodOutcome::kOk;
  read.at = ReadTime::Replay(FromMs(t1));
  read.metrics.emplace();
  ReadPodMetrics(last, *chunk.profile, &*read.metrics, &pod);
  std::optional<PodMetrics> first;
  if (t0 < t1) {
    first.emplace();
    ReadPodMetrics(first_scrape, *chunk.profile, &*first, &pod);
  }
  read.baselines = std::make_unique<RangeBaselines>(
      *chunk.profile, std::move(first), ReadTime::Replay(FromMs(t0)), std::move(resets));
  return read;
}

// One Pod's read from its series in the answer (see the header for T0, T1 and the reasons).
PodRead ReadPod(std::span<const StoreSeries* const> all, const Chunk& chunk, const Pod& pod,
                int64_t now_ms, const PrometheusSourceOptions& options) {
  PodCopy copy;
  const CopyRules rules{options.replica_labels, chunk.exporter_labels, options.namespace_label,
                        options.pod_label};
  if (std::string targets = SelectCopy(all, rules, now_ms, &copy); !targets.empty()) {
    return {.error = targets, .outcome = PodOutcome::kCopies};
  }
  const std::span<const StoreSeries* const> own = copy.series;
  // Scrape instants: every sample of a family series, and every successful `up`.
  std::optional<StoreSample> last_up;
  std::set<int64_t> instants;
  for (const StoreSeries* s : own) {
    const bool up = s->name == "up";
    if (!up && !chunk.roles.contains(s->name)) continue;
    for (const StoreSample& sample : s->samples) {
      if (sample.ms > now_ms) continue;
      if (up && (!last_up || sample.ms >= last_up->ms)) last_up = sample;
      if (!up || sample.value == 1) instants.insert(sample.ms);
    }
  }
  if (instants.empty()) {
    return last_up ? PodRead{.error = DownText(last_up->ms), .outcome = PodOutcome::kDown}
                   : PodRead{.error = NoSampleText(options.window + options.stale_after),
                             .outcome = PodOutcome::kNoSample};
  }
  const int64_t t1 = NewestCompleteScrape(own, chunk.roles, instants);
  if (last_up && last_up->value == 0 && last_up->ms > t1) {
    return {.error = DownText(last_up->ms), .outcome = PodOutcome::kDown};
  }
  if (now_ms - t1 > options.stale_after.count()) {
    return {.error = fmt::format("the store's newest sample of the Pod is older than {} (at {})",
                                 Seconds(options.stale_after), FormatTime(FromMs(t1))),
            .outcome = PodOutcome::kStale};
  }
  const int64_t t0 = *instants.lower_bound(t1 - options.window.count());
  if (chunk.profile == nullptr) {  // merged as an unsupported engine or router
    return {
        .metrics = PodMetrics{}, .outcome = PodOutcome::kOk, .at = ReadTime::Replay(FromMs(t1))};
  }
  return ReadMetrics(own, chunk, pod, copy.target_labels, t0, t1);
}

// A failed query in the words an SRE reading the store's own logs knows.
std::string QueryErrorText(const std::string& url, const net::FetchResult& result) {
  switch (result.error) {
    case net::FetchError::kHttpStatus: {
      std::vector<StoreSeries> none;
      if (const Status decoded = DecodeMatrix(result.body, MatrixLimits{}, &none); !decoded.ok()) {
        return fmt::format("query {}: HTTP {}: {}", url, result.status, decoded.message());
      }
      return fmt::format("query {}: HTTP {}", url, result.status);
    }
    case net::FetchError::kTooLarge:
      return fmt::format("query {}: the answer exceeds the response size cap", url);
    case net::FetchError::kTimeout:
      return fmt::format("query {}: timed out", url);
    case net::FetchError::kDeadline:
      return fmt::format("query {}: the request's deadline passed", url);
    default:
      return fmt::format("query {}: {}", url, result.message);
  }
}

}  // namespace

Status LoadPrometheusCredentials(const std::string& bearer_token_file,
                                 const std::string& basic_password_file,
                                 PrometheusSourceOptions* options) {
  for (const auto& [path, value] : {std::pair{&bearer_token_file, &options->bearer_token},
                                    std::pair{&basic_password_file, &options->basic_password}}) {
    if (path->empty()) continue;
    if (Status read = base::ReadFile(*path, value); !read.ok()) return read;
    while (!value->empty() && std::isspace(static_cast<unsigned char>(value->back()))) {
      value->pop_back();
    }
  }
  return Status::Ok();
}

std::string ValidatePrometheusSourceOptions(const PrometheusSourceOptions& o) {
  if (!o.url.starts_with("http://") && !o.url.starts_with("https://")) {
    return fmt::format("prometheus URL \"{}\" is not an http:// or https:// URL", o.url);
  }
  if (o.window.count() <= 0) return "the window must be positive";
  if (o.stale_after.count() <= 0) return "the staleness bound must be positive";
  if (o.settle.count() < 0) return "the settle time must not be negative";
  if (o.pod_limit == 0 || o.pods_per_query == 0 || o.max_in_flight == 0) {
    return "the Pod limit, Pods per query and queries in flight must be positive";
  }
  auto valid_label = [](const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
  };
  if (!valid_label(o.namespace_label) || !valid_label(o.pod_label)) {
    return "the namespace and pod label names must be Prometheus label names";
  }
  return "";
}

PrometheusSource::PrometheusSource(PrometheusSourceOptions options) : options_(std::move(options)) {
  while (options_.url.ends_with('/')) options_.url.pop_back();
  net::ClientOptions client;
  client.max_in_flight = options_.max_in_flight;
  client.max_in_flight_per_batch = options_.max_in_flight;
  client.fetch_timeout = options_.query_timeout;
  client.connect_timeout = std::min(options_.query_timeout, std::chrono::milliseconds(2000));
  client.max_body_bytes = options_.max_response_bytes;
  client.ca_file = options_.ca_file;
  client.max_idle_connections = options_.max_in_flight * 2;
  client_ = std::make_unique<net::HttpClient>(client);
}

PrometheusSource::~PrometheusSource() = default;

std::vector<PodRead> PrometheusSource::Read(const ModelDeployment& md, std::span<const Pod> pods,
                                            SteadyTime deadline) {
  std::vector<PodRead> reads(pods.size());
  const WallTime now = options_.now() - options_.settle;
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::chrono::milliseconds range = options_.window + options_.stale_after;
  const std::string url = options_.url + "/api/v1/query";

  // Chunks of Pods sharing a profile.
  std::vector<Chunk> chunks;
  std::map<const ExporterProfile*, std::vector<size_t>> by_profile;
  for (size_t i = 0; i < pods.size(); ++i) {
    by_profile[SelectExporter(md, !pods[i].metadata.Label(kLabelRouter).empty())].push_back(i);
  }
  for (auto& [profile, indices] : by_profile) {
    const SeriesRoles roles = RolesOf(profile);
    std::vector<std::string> names{"up"};
    for (const auto& [name, role] : roles) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (size_t start = 0; start < indices.size(); start += options_.pods_per_query) {
      Chunk chunk{profile, roles, {}, {}, ""};
      if (profile != nullptr) chunk.exporter_labels = profile->SplitLabelsOfRows();
      std::vector<std::string> pod_names;
      for (size_t k = start; k < std::min(indices.size(), start + options_.pods_per_query); ++k) {
        chunk.pods.push_back(indices[k]);
        pod_names.push_back(pods[indices[k]].metadata.name);
      }
      std::string selector = fmt::format(
          "{{__name__=~{},{}={},{}=~{}{}{}}}[{}]", PromqlString(RegexAlternation(names)),
          options_.namespace_label, PromqlString(md.metadata.namespace_), options_.pod_label,
          PromqlString(RegexAlternation(pod_names)), options_.selector.empty() ? "" : ",",
          options_.selector, Seconds(range));
      chunk.body =
          fmt::format("query={}&time={}.{:03}", FormEncode(selector), now_ms / 1000, now_ms % 1000);
      chunks.push_back(std::move(chunk));
    }
  }

  std::vector<std::pair<std::string, std::string>> headers = {
      {"Content-Type", "application/x-www-form-urlencoded"}, {"Accept", "application/json"}};
  if (!options_.bearer_token.empty()) {
    headers.emplace_back("Authorization", "Bearer " + options_.bearer_token);
  } else if (!options_.basic_user.empty()) {
    headers.emplace_back("Authorization", "Basic " + base::EncodeBase64(options_.basic_user + ":" +
                                                                        options_.basic_password));
  }
  std::vector<net::FetchRequest> requests;
  requests.reserve(chunks.size());
  for (const Chunk& chunk : chunks) {
    requests.push_back({.url = url, .headers = headers, .method = "POST", .body = chunk.body});
  }

  // Each answer is decoded and turned into its Pods' reads as soon as it arrives.
  auto on_result = [&](size_t c, net::FetchResult& result) {
    const Chunk& chunk = chunks[c];
    // One text per query, shared by its Pods' missing[] entries.
    auto fail_all = [&](const Reason& error) {
      for (size_t i : chunk.pods) {
        reads[i].error = error;
        reads[i].outcome = PodOutcome::kStoreError;
      }
    };
    if (!result.ok() || result.status != 200) {
      if (result.ok()) result.error = net::FetchError::kHttpStatus;
      return fail_all(QueryErrorText(url, result));
    }
    // An answer that arrives as the budget ends is not decoded: the request has gone.
    if (SteadyClock::now() >= deadline) {
      result.error = net::FetchError::kDeadline;
      return fail_all(QueryErrorText(url, result));
    }
    std::vector<StoreSeries> series;
    const Status decoded = DecodeMatrix(result.body, options_.limits, &series);
    std::string().swap(result.body);
    if (!decoded.ok()) return fail_all(fmt::format("query {}: {}", url, decoded.message()));

    std::unordered_map<std::string_view, std::vector<const StoreSeries*>> by_pod;
    for (const StoreSeries& s : series) {
      by_pod[LabelOf(s, options_.pod_label)].push_back(&s);
    }
    for (size_t i : chunk.pods) {
      const auto found = by_pod.find(pods[i].metadata.name);
      reads[i] = found == by_pod.end()
                     ? PodRead{.error = NoSampleText(range), .outcome = PodOutcome::kNoSample}
                     : ReadPod(found->second, chunk, pods[i], now_ms, options_);
    }
  };
  client_->FetchAll(requests, deadline, on_result);
  return reads;
}

}  // namespace modelmetrics::deployment
