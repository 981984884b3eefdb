// Federation of external vLLM engines' `vllm:*` families; see federation.h for the contract.
//
// RelabelEngines works in two phases so that a failure (memory) while building never leaves a
// half-written family behind: (1) each body is parsed into owned raw families, with labels already
// relabelled; bodies that fail the strict parse are discarded whole; the raw families are then
// merged into one model keyed by the OpenMetrics family name ("base": `x` for the counter whose
// samples are `x_total`), which is what lets text and OpenMetrics inputs meet; (2) the model is
// written in the writer's format.
//
// Model invariants: every family claims the names it can render (its base, and each sample and
// text family name its type allows); no name is claimed twice, so any output is free of
// duplicate or colliding families. Within a family, samples are grouped by their labels without
// `le`/`quantile` (one group per series), groups in order of first appearance, samples within a
// group in arrival order; a (name, labels) pair appears at most once.
#include "federation.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "base/mutex.h"
#include "format/number.h"

namespace modelmetrics::pipeline {

std::string_view DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kTypeConflict:
      return "type_conflict";
    case DropReason::kNameClash:
      return "name_clash";
    case DropReason::kDuplicate:
      return "duplicate";
    case DropReason::kUnknownEngine:
      return "unknown_engine";
  }
  return "unknown";
}

size_t EngineReport::dropped_total() const {
  size_t total = 0;
  for (const size_t n : dropped) total += n;
  return total;
}

// ---------------------------------------------------------------------------------------------
// RelabelEngines

namespace {

constexpr char kSep = '\xff';  // never in a UTF-8 name or label value (the parser validates)

struct OutSample {
  std::string name;
  std::vector<LabelPair> labels;  // relabelled, sorted by name
  double value = 0;
  std::optional<int64_t> timestamp_ms;
  std::optional<Exemplar> exemplar;
};

struct RawFamily {
  std::string name;
  MetricType type = MetricType::kUntyped;
  std::string help;
  bool has_help = false;
  std::string unit;
  std::vector<OutSample> samples;
};

struct Group {
  std::vector<OutSample> samples;
};

struct OutFamily {
  std::string base;  // the OpenMetrics family name
  MetricType type = MetricType::kUntyped;
  std::string help;
  bool has_help = false;
  std::string unit;
  std::vector<Group> groups;
  std::unordered_map<std::string, size_t> group_index;  // series key -> groups index
  std::unordered_set<std::string> series;               // sample name + labels, for duplicates
};

bool Foldable(MetricType type) {
  return type == MetricType::kCounter || type == MetricType::kHistogram ||
         type == MetricType::kSummary;
}

// The label that distinguishes samples within one series of `type`, if any.
std::string_view InnerLabel(MetricType type) {
  switch (type) {
    case MetricType::kHistogram:
    case MetricType::kGaugeHistogram:
      return "le";
    case MetricType::kSummary:
      return "quantile";
    default:
      return {};
  }
}

// Every name a family of `type` named `base` may render, in either format.
std::vector<std::string> ClaimedNames(const std::string& base, MetricType type) {
  std::vector<std::string> names{base};
  auto add = [&](std::initializer_list<std::string_view> suffixes) {
    for (std::string_view s : suffixes) names.push_back(base + std::string(s));
  };
  switch (type) {
    case MetricType::kCounter:
      add({"_total", "_created"});
      break;
    case MetricType::kHistogram:
      add({"_bucket", "_count", "_sum", "_created"});
      break;
    case MetricType::kGaugeHistogram:
      add({"_bucket", "_gcount", "_gsum"});
      break;
    case MetricType::kSummary:
      add({"_count", "_sum", "_created"});
      break;
    case MetricType::kInfo:
      add({"_info"});
      break;
    case MetricType::kUntyped:
    case MetricType::kGauge:
    case MetricType::kStateSet:
      break;
  }
  return names;
}

class Model {
 public:
  // The family (base, type), created with `meta`'s HELP/UNIT when new; -1 and *reason when it
  // cannot exist (typed differently, or its names collide with another family's).
  int Resolve(const std::string& base, MetricType type, const RawFamily* meta, DropReason* reason) {
    if (auto it = by_base_.find(base); it != by_base_.end()) {
      if (families_[it->second].type == type) return static_cast<int>(it->second);
      *reason = DropReason::kTypeConflict;
      return -1;
    }
    std::vector<std::string> names = ClaimedNames(base, type);
    for (const std::string& n : names) {
      if (claimed_.contains(n)) {
        *reason = DropReason::kNameClash;
        return -1;
      }
    }
    for (std::string& n : names) claimed_.insert(std::move(n));
    OutFamily& f = families_.emplace_back();
    f.base = base;
    f.type = type;
    if (meta != nullptr) {
      f.help = meta->help;
      f.has_help = meta->has_help;
      f.unit = meta->unit;
    }
    by_base_.emplace(base, families_.size() - 1);
    return static_cast<int>(families_.size() - 1);
  }

  // Adds `s` to family `index`; false when that series was already added.
  bool Add(size_t index, OutSample&& s) {
    OutFamily& f = families_[index];
    const std::string_view inner = InnerLabel(f.type);
    std::string group_key;
    std::string inner_value;
    for (const LabelPair& l : s.labels) {
      if (!inner.empty() && l.first == inner) {
        double bound;
        if (format::ParseValue(l.second, &bound)) {
          AppendCanonicalDouble(&inner_value, bound);  // `1` and `1.0` render the same
        } else {
          inner_value = l.second;
        }
        continue;
      }
      group_key.append(l.first).push_back(kSep);
      group_key.append(l.second).push_back(kSep);
    }
    std::string series_key = s.name;
    series_key.push_back(kSep);
    series_key.append(inner_value).push_back(kSep);
    series_key.append(group_key);
    if (!f.series.insert(std::move(series_key)).second) return false;
    auto [it, inserted] = f.group_index.try_emplace(std::move(group_key), f.groups.size());
    if (inserted) f.groups.emplace_back();
    f.groups[it->second].samples.push_back(std::move(s));
    return true;
  }

  const std::vector<OutFamily>& families() const { return families_; }

 private:
  std::vector<OutFamily> families_;
  std::unordered_map<std::string, size_t> by_base_;
  std::unordered_set<std::string> claimed_;
};

// Relabels one series' labels into `out` (sorted by name). False when the series names an engine
// the map does not have (kFlatIndex).
bool RelabelLabels(std::span<const LabelView> in, const EngineScrape& scrape,
                   std::string_view stage, std::string_view replica, const EngineMap& map,
                   std::vector<LabelPair>* out) {
  out->clear();
  out->reserve(in.size() + 1);
  for (const LabelView& l : in) {
    if (l.name == "engine") {
      if (scrape.rule == EngineLabelRule::kFlatIndex) {
        const std::optional<size_t> flat = map.FromEngineLabel(l.value);
        if (!flat) return false;
        stage = map.StageLabel(*flat);
        replica = map.ReplicaLabel(*flat);
      }
      continue;
    }
    if (l.name == "stage" || l.name == "replica") continue;  // replaced
    out->emplace_back(std::string(l.name), std::string(l.value));
  }
  out->emplace_back("stage", std::string(stage));
  out->emplace_back("replica", std::string(replica));
  // Insertion sort: a handful of labels, nearly sorted, and stable.
  for (size_t i = 1; i < out->size(); ++i) {
    for (size_t j = i; j > 0 && (*out)[j].first < (*out)[j - 1].first; --j) {
      std::swap((*out)[j], (*out)[j - 1]);
    }
  }
  return true;
}

// Parses one body into raw families of the kept prefix. False (with report->error) when the body
// does not parse strictly.
bool ParseBody(const EngineScrape& scrape, const EngineMap& map, const RelabelOptions& options,
               std::vector<RawFamily>* families, Format* format, EngineReport* report) {
  ParseOptions popts;
  popts.strict = true;
  popts.limits = options.limits;
  std::optional<Format> f = FormatFromContentType(scrape.content_type);
  popts.format = f ? *f : DetectFormat(scrape.body);
  *format = *popts.format;

  const std::string stage = std::to_string(scrape.target.stage);
  const std::string replica = std::to_string(scrape.target.replica);
  std::unordered_map<std::string, size_t> index;
  RawFamily* last = nullptr;
  auto get = [&](std::string_view name) -> RawFamily& {
    if (last != nullptr && last->name == name) return *last;
    auto [it, inserted] = index.try_emplace(std::string(name), families->size());
    if (inserted) families->emplace_back().name = std::string(name);
    last = &(*families)[it->second];
    return *last;
  };
  auto kept = [&](std::string_view name) { return name.starts_with(options.prefix); };

  Parser parser(scrape.body, popts);
  std::vector<LabelPair> labels;
  for (Event e = parser.Next(); e != Event::kEnd && e != Event::kError; e = parser.Next()) {
    if (e == Event::kSample) {
      const SampleView& sv = parser.sample();
      if (!kept(sv.family)) continue;
      RawFamily& fam = get(sv.family);
      fam.type = sv.type;
      if (!RelabelLabels(sv.labels, scrape, stage, replica, map, &labels)) {
        ++report->dropped[static_cast<size_t>(DropReason::kUnknownEngine)];
        continue;
      }
      OutSample& s = fam.samples.emplace_back();
      s.name = std::string(sv.name);
      s.labels = labels;
      s.value = sv.value;
      if (sv.has_timestamp) s.timestamp_ms = sv.timestamp_ms;
      if (sv.has_exemplar) {
        Exemplar& x = s.exemplar.emplace();
        for (const LabelView& l : sv.exemplar_labels) {
          x.labels.emplace_back(std::string(l.name), std::string(l.value));
        }
        x.value = sv.exemplar_value;
        if (sv.exemplar_has_timestamp) x.timestamp_ms = sv.exemplar_timestamp_ms;
      }
      continue;
    }
    const MetadataView& m = parser.metadata();
    if (!kept(m.name)) continue;
    RawFamily& fam = get(m.name);
    if (e == Event::kType) {
      fam.type = m.type;
    } else if (e == Event::kHelp) {
      fam.help = std::string(m.text);
      fam.has_help = true;
    } else if (e == Event::kUnit) {
      fam.unit = std::string(m.text);
    }
  }
  if (!parser.ok()) {
    report->error = parser.last_error().ToString();
    return false;
  }
  return true;
}

std::string StripSuffix(std::string_view name, std::string_view suffix) {
  if (name.size() > suffix.size() && name.ends_with(suffix)) {
    name.remove_suffix(suffix.size());
  }
  return std::string(name);
}

// Merges one parsed body into the model.
void Merge(std::vector<RawFamily>& raws, Format format, bool keep_created, Model* model,
           EngineReport* report) {
  const bool text = format == Format::kText;
  // A text counter whose samples are all bare (`x` under `# TYPE x counter`, which no vLLM
  // writes) cannot be an OpenMetrics counter: it becomes an untyped family, so both output
  // formats carry the same series.
  for (RawFamily& r : raws) {
    if (text && r.type == MetricType::kCounter && !r.name.ends_with("_total") &&
        !r.samples.empty() &&
        std::all_of(r.samples.begin(), r.samples.end(),
                    [&](const OutSample& s) { return s.name == r.name; })) {
      r.type = MetricType::kUntyped;
    }
  }
  // The base a raw family's main samples go to.
  auto base_of = [&](const RawFamily& r) {
    return text && r.type == MetricType::kCounter ? StripSuffix(r.name, "_total") : r.name;
  };
  // Families that `x_created` gauges of this body fold into.
  std::unordered_map<std::string, MetricType> foldable;
  for (RawFamily& r : raws) {
    if (!Foldable(r.type)) continue;
    const std::string base = base_of(r);
    if (!keep_created) {
      const std::string created = base + "_created";
      std::erase_if(r.samples, [&](const OutSample& s) { return s.name == created; });
    }
    foldable.emplace(base, r.type);
  }
  auto drop = [&](DropReason reason, size_t n) {
    report->dropped[static_cast<size_t>(reason)] += n;
  };
  auto add_all = [&](int index, std::vector<OutSample>& samples) {
    for (OutSample& s : samples) {
      if (model->Add(static_cast<size_t>(index), std::move(s))) {
        ++report->samples;
      } else {
        drop(DropReason::kDuplicate, 1);
      }
    }
  };

  for (RawFamily& r : raws) {
    DropReason reason{};
    // A `_created` gauge of a counter, histogram or summary of this body.
    if (r.type == MetricType::kGauge && r.name.ends_with("_created")) {
      const std::string base = StripSuffix(r.name, "_created");
      if (auto it = foldable.find(base); it != foldable.end()) {
        if (!keep_created) continue;
        const int index = model->Resolve(base, it->second, nullptr, &reason);
        if (index < 0) {
          drop(reason, r.samples.size());
        } else {
          add_all(index, r.samples);
        }
        continue;
      }
    }
    const std::string base = base_of(r);
    const int index = model->Resolve(base, r.type, &r, &reason);
    if (index < 0) {
      drop(reason, r.samples.size());
      continue;
    }
    if (!text || r.type != MetricType::kCounter) {
      add_all(index, r.samples);
      continue;
    }
    // A text counter: `base_total` and `base_created` samples are the counter's; any other (a
    // bare `x` among `x_total` samples) would be an untyped family of its own name, which then
    // conflicts with the counter unless the names differ.
    const std::string total = base + "_total";
    const std::string created = base + "_created";
    for (OutSample& s : r.samples) {
      int target = index;
      if (s.name != total && s.name != created) {
        target = model->Resolve(s.name, MetricType::kUntyped, nullptr, &reason);
        if (target < 0) {
          drop(reason, 1);
          continue;
        }
      }
      if (model->Add(static_cast<size_t>(target), std::move(s))) {
        ++report->samples;
      } else {
        drop(DropReason::kDuplicate, 1);
      }
    }
  }
}

void WriteSample(ExpositionWriter& writer, const OutSample& s, std::vector<LabelView>* labels,
                 std::vector<LabelView>* exemplar_labels) {
  labels->clear();
  for (const LabelPair& l : s.labels) labels->push_back({l.first, l.second});
  if (s.exemplar && writer.format() == Format::kOpenMetrics) {
    exemplar_labels->clear();
    for (const LabelPair& l : s.exemplar->labels) exemplar_labels->push_back({l.first, l.second});
    writer.SampleWithExemplar(s.name, *labels, s.value, s.timestamp_ms, *exemplar_labels,
                              s.exemplar->value, s.exemplar->timestamp_ms);
  } else {
    writer.Sample(s.name, *labels, s.value, s.timestamp_ms);
  }
}

// Text 0.0.4 has no info, stateset or gaugehistogram, and no `_created`/`_gsum`/`_gcount` inside
// a family: client_python writes them as gauges (info as `x_info`) and histograms, with the
// samples text cannot hold moved to gauge families of their own names after the family.
MetricType TextType(MetricType type) {
  switch (type) {
    case MetricType::kInfo:
    case MetricType::kStateSet:
      return MetricType::kGauge;
    case MetricType::kGaugeHistogram:
      return MetricType::kHistogram;
    default:
      return type;
  }
}

std::string TextName(const OutFamily& f) {
  if (f.type == MetricType::kCounter) return f.base + "_total";
  if (f.type == MetricType::kInfo) return f.base + "_info";
  return f.base;
}

bool TextNative(MetricType type, std::string_view suffix) {
  switch (type) {
    case MetricType::kCounter:
      return suffix == "_total";
    case MetricType::kInfo:
      return suffix == "_info";
    case MetricType::kHistogram:
      return suffix == "_bucket" || suffix == "_count" || suffix == "_sum";
    case MetricType::kGaugeHistogram:
      return suffix == "_bucket";
    case MetricType::kSummary:
      return suffix.empty() || suffix == "_count" || suffix == "_sum";
    default:
      return suffix.empty();
  }
}

void WriteModel(const Model& model, ExpositionWriter& writer) {
  std::vector<LabelView> labels;
  std::vector<LabelView> exemplar_labels;
  const bool om = writer.format() == Format::kOpenMetrics;
  for (const OutFamily& f : model.families()) {
    if (om) {
      writer.BeginFamily(f.base, f.type, f.help, f.has_help, f.unit);
      for (const Group& g : f.groups) {
        for (const OutSample& s : g.samples) WriteSample(writer, s, &labels, &exemplar_labels);
      }
      continue;
    }
    writer.BeginFamily(TextName(f), TextType(f.type), f.help, f.has_help);
    std::vector<std::string_view> trailing;  // suffixes moved out, in order of appearance
    for (const Group& g : f.groups) {
      for (const OutSample& s : g.samples) {
        const std::string_view suffix = std::string_view(s.name).substr(f.base.size());
        if (TextNative(f.type, suffix)) {
          WriteSample(writer, s, &labels, &exemplar_labels);
        } else if (std::find(trailing.begin(), trailing.end(), suffix) == trailing.end()) {
          trailing.push_back(suffix);
        }
      }
    }
    for (const std::string_view suffix : trailing) {
      writer.BeginFamily(f.base + std::string(suffix), MetricType::kGauge, f.help, f.has_help);
      for (const Group& g : f.groups) {
        for (const OutSample& s : g.samples) {
          if (std::string_view(s.name).substr(f.base.size()) == suffix) {
            WriteSample(writer, s, &labels, &exemplar_labels);
          }
        }
      }
    }
  }
}

}  // namespace

std::vector<EngineReport> RelabelEngines(std::span<const EngineScrape> scrapes,
                                         const EngineMap& map, ExpositionWriter& writer,
                                         const RelabelOptions& options) {
  std::vector<EngineReport> reports(scrapes.size());
  Model model;
  for (size_t i = 0; i < scrapes.size(); ++i) {
    std::vector<RawFamily> raws;
    Format format = Format::kText;
    EngineReport& report = reports[i];
    if (!ParseBody(scrapes[i], map, options, &raws, &format, &report)) {
      report.dropped = {};
      continue;
    }
    report.parsed = true;
    Merge(raws, format, options.keep_created, &model, &report);
  }
  WriteModel(model, writer);
  return reports;
}

// ---------------------------------------------------------------------------------------------
// Federation

struct Federation::State {
  FederationOptions options;
  Family<Counter>* scrape_errors = nullptr;
  Family<Counter>* dropped_samples = nullptr;
  std::vector<net::FetchRequest> requests[2];  // by Accept: [0] text, [1] OpenMetrics
  std::vector<std::string> stage_labels;       // per endpoint
  std::vector<std::string> replica_labels;

  base::Mutex mu;
  std::shared_ptr<net::HttpClient> client GUARDED_BY(mu);  // null when inert or detached

  std::shared_ptr<net::HttpClient> Client() {
    base::MutexLock lock(&mu);
    return client;
  }

  void Count(Family<Counter>* family, size_t endpoint, std::string_view reason, uint64_t n) {
    if (family == nullptr || n == 0) return;
    family->Labels({stage_labels[endpoint], replica_labels[endpoint], reason}).Add(n);
  }

  void Collect(ExpositionWriter& writer) noexcept {
    try {
      std::shared_ptr<net::HttpClient> c = Client();
      if (c == nullptr) return;
      const auto& batch = requests[writer.format() == Format::kOpenMetrics ? 1 : 0];
      const auto deadline = std::chrono::steady_clock::now() + options.timeout;
      std::vector<net::FetchResult> results = c->FetchAll(batch, deadline);
      std::vector<EngineScrape> scrapes;
      std::vector<size_t> endpoint_of;
      for (size_t i = 0; i < results.size() && i < options.endpoints.size(); ++i) {
        if (!results[i].ok()) {
          Count(scrape_errors, i, net::FetchErrorName(results[i].error), 1);
          continue;
        }
        const FederationEndpoint& ep = options.endpoints[i];
        scrapes.push_back({results[i].body, results[i].content_type, ep.target, ep.rule});
        endpoint_of.push_back(i);
      }
      std::vector<EngineReport> reports =
          RelabelEngines(scrapes, options.engine_map, writer, options.relabel);
      for (size_t k = 0; k < reports.size(); ++k) {
        const size_t i = endpoint_of[k];
        if (!reports[k].parsed) Count(scrape_errors, i, "parse", 1);
        for (size_t r = 0; r < kDropReasonCount; ++r) {
          Count(dropped_samples, i, DropReasonName(static_cast<DropReason>(r)),
                reports[k].dropped[r]);
        }
      }
    } catch (...) {
      // Never out of a render: at worst this render has no federated families.
    }
  }
};

Status Federation::Create(Registry& registry, FederationOptions options,
                          std::unique_ptr<Federation>* out) {
  auto state = std::make_shared<State>();
  state->options = std::move(options);
  const FederationOptions& o = state->options;
  if (!registry.enabled()) {
    out->reset(new Federation(state));
    return Status::Ok();
  }

  for (const FederationEndpoint& ep : o.endpoints) {
    state->stage_labels.push_back(std::to_string(ep.target.stage));
    state->replica_labels.push_back(std::to_string(ep.target.replica));
    for (int om = 0; om < 2; ++om) {
      net::FetchRequest& req = state->requests[om].emplace_back();
      req.url = ep.url;
      req.headers = ep.headers;
      const bool has_accept = std::any_of(ep.headers.begin(), ep.headers.end(), [](const auto& h) {
        return h.first.size() == 6 && std::equal(h.first.begin(), h.first.end(), "accept",
                                                 [](char a, char b) { return (a | 0x20) == b; });
      });
      if (!has_accept) {
        req.headers.emplace_back(
            "Accept", om != 0 ? "application/openmetrics-text; version=1.0.0, text/plain; "
                                "version=0.0.4; q=0.5"
                              : "text/plain; version=0.0.4");
      }
    }
  }

  std::string err;
  try {
    auto client = std::make_shared<net::HttpClient>(o.client);
    base::MutexLock lock(&state->mu);
    state->client = std::move(client);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("federation: HTTP client: ") + e.what());
  }
  state->scrape_errors = registry.AddCounter(
      {.name = std::string(kScrapeErrorsFamily),
       .help = "Federated engine /metrics scrapes that failed and were left out, by reason.",
       .labels = {"stage", "replica", "reason"}},
      &err);
  if (state->scrape_errors == nullptr) return Status::InvalidArgument("federation: " + err);
  state->dropped_samples =
      registry.AddCounter({.name = std::string(kDroppedSamplesFamily),
                           .help = "Samples of federated engines left out of /metrics, by reason.",
                           .labels = {"stage", "replica", "reason"}},
                          &err);
  if (state->dropped_samples == nullptr) {
    registry.RemovePrefix(kScrapeErrorsFamily);
    return Status::InvalidArgument("federation: " + err);
  }
  registry.AddCollector(o.collector_name,
                        [state](ExpositionWriter& writer) { state->Collect(writer); });
  out->reset(new Federation(state));
  return Status::Ok();
}

Federation::~Federation() {
  std::shared_ptr<net::HttpClient> client;
  {
    base::MutexLock lock(&state_->mu);
    client.swap(state_->client);
  }
  // `client` is destroyed here unless a render still holds it; then that render releases it.
}

void Federation::Collect(ExpositionWriter& writer) const { state_->Collect(writer); }

Family<Counter>* Federation::scrape_errors() const { return state_->scrape_errors; }
Family<Counter>* Federation::dropped_samples() const { return state_->dropped_samples; }

}  // namespace modelmetrics::pipeline
