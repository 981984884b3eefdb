// Families, children and the registry; rendering.
//
// Invariants:
//   - a child's series is never freed before the registry: Family::Remove and
//     Registry::RemovePrefix move them to a graveyard, so handles stay valid;
//   - each child's label text (escaped, sorted by label name as prometheus_client does, without
//     `le`) is built once when the child is created; rendering only splices `le` in;
//   - the registry's reserved names hold every family name and every sample name a family
//     renders, so no two families can emit the same series name.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <variant>

#include "base/mutex.h"
#include "family_state.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/shared_segment.h"
#include "names.h"
#include "pending_shares.h"
#include "series.h"

namespace modelmetrics {
namespace metrics_internal {
namespace {

// The sample names a family renders (the registry reserves them).
std::vector<std::string> SampleNames(const FamilyOptions& o, MetricType type) {
  switch (type) {
    // `_created` too, as prometheus_client reserves it: rendered with created series on.
    case MetricType::kCounter:
      return {o.name + "_total", o.name + "_created"};
    case MetricType::kHistogram:
      return {o.name + "_bucket", o.name + "_sum", o.name + "_count", o.name + "_created"};
    default:
      return {o.name};
  }
}

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

FamilyBase::FamilyBase(FamilyOptions options, MetricType type, bool enabled)
    : options_(std::move(options)), type_(type), enabled_(enabled), state_(new State) {
  State& st = *state_;
  st.sorted_labels.resize(options_.labels.size());
  for (size_t i = 0; i < st.sorted_labels.size(); ++i) st.sorted_labels[i] = i;
  std::sort(st.sorted_labels.begin(), st.sorted_labels.end(),
            [&](size_t a, size_t b) { return options_.labels[a] < options_.labels[b]; });
  for (size_t i : st.sorted_labels) st.le_position += options_.labels[i] < "le";
  if (type_ == MetricType::kHistogram) {
    for (double bound : options_.buckets) {
      std::string text = "le=\"";
      AppendPythonClientDouble(&text, bound);  // floatToGoString, as prometheus_client writes `le`
      st.le_text.push_back(text + "\"");
    }
    st.le_text.push_back("le=\"+Inf\"");
  }
}

FamilyBase::~FamilyBase() {
  if (shared_ != nullptr) pending_shares::Remove(this);
}

void* FamilyBase::Find(std::span<const std::string_view> values, bool create, double created,
                       std::string* refused) {
  if (values.size() != options_.labels.size()) return nullptr;
  for (std::string_view v : values) {
    if (v.size() > kMaxLabelValueBytes) {
      base::MutexLock lock(&state_->mu);
      state_->Refuse(options_.name, &State::warned_long, "a label value over the 4096-byte bound",
                     refused);
      return nullptr;
    }
  }
  std::string key;
  for (std::string_view v : values) {
    key.append(v);
    key.push_back('\xff');  // never in UTF-8 text: keys are unambiguous
  }
  bool deferred = false;
  void* series = FindOrMake(std::move(key), values, create, created, refused, &deferred);
  // Outside the family's lock: the pending-shares thread takes its own lock, then this one.
  if (deferred) pending_shares::Add(this);
  return series;
}

void* FamilyBase::FindOrMake(std::string key, std::span<const std::string_view> values, bool create,
                             double created, std::string* refused, bool* deferred) {
  State& st = *state_;
  base::MutexLock lock(&st.mu);
  if (auto it = st.by_key.find(key); it != st.by_key.end()) return it->second->raw();
  if (!create) return nullptr;
  if (st.children.size() >= kMaxChildrenPerFamily) {
    st.Refuse(options_.name, &State::warned_full,
              "more than 1048576 label sets (is a label value unbounded?)", refused);
    return nullptr;
  }
  SharedCell cell;
  *deferred = st.join == State::Join::kWaiting;
  if (st.join == State::Join::kJoined) {
    std::string error;
    bool busy = false;
    cell = shared_->RegisterSeries(st.shared_family, type_, options_.buckets.size(), values, &error,
                                   &busy);
    if (cell.base == nullptr && !busy) {
      st.Refuse(options_.name, &State::warned_shared, error, refused);
      return nullptr;
    }
    if (cell.base == nullptr) {  // a stopped process holds the directory: record, join later
      *deferred = true;
      if (!std::exchange(st.warned_waiting, true)) {
        std::fprintf(stderr,
                     "modelmetrics: %s: %s; new label sets record in this process and join the "
                     "segment once it is released\n",
                     options_.name.c_str(), error.c_str());
      }
    }
  }
  State::Child* child =
      st.Insert(st.MakeChild(options_, type_, std::move(key), values, created, cell));
  if (*deferred) st.deferred.push_back({.child = child});
  return child->raw();
}

std::unique_ptr<FamilyBase::State::Child> FamilyBase::State::MakeChild(
    const FamilyOptions& options, MetricType type, std::string key,
    std::span<const std::string_view> values, double created, SharedCell cell) const {
  auto child = std::make_unique<Child>();
  child->key = std::move(key);
  child->created = std::isnan(created) ? WallNow() : created;
  switch (type) {
    case MetricType::kCounter:
      child->series = std::make_unique<CounterSeries>();
      std::get<0>(child->series)->shared = cell;
      break;
    case MetricType::kGauge:
      child->series = std::make_unique<GaugeSeries>();
      std::get<1>(child->series)->shared = cell;
      std::get<1>(child->series)->stamped =
          options.multiprocess_mode == MultiprocessMode::kMostRecent ||
          options.multiprocess_mode == MultiprocessMode::kLiveMostRecent;
      break;
    default:
      child->series = std::make_unique<HistogramSeries>(&options.buckets);
      std::get<2>(child->series)->shared = cell;
      break;
  }
  for (size_t rank = 0; rank < sorted_labels.size(); ++rank) {
    const size_t i = sorted_labels[rank];
    std::string& text = rank < le_position ? child->before_le : child->after_le;
    if (!text.empty()) text.push_back(',');
    text.append(options.labels[i]);
    text.append("=\"");
    AppendEscapedLabelValue(&text, values[i]);
    text.push_back('"');
  }
  return child;
}

FamilyBase::State::Child* FamilyBase::State::Insert(std::unique_ptr<Child> child) {
  // Owner first, index second: if either throws, no index entry points at a freed child.
  children.push_back(std::move(child));
  try {
    by_key.emplace(children.back()->key, children.back().get());
  } catch (...) {
    children.pop_back();
    throw;
  }
  return children.back().get();
}

bool FamilyBase::RemoveChild(std::span<const std::string_view> values) {
  std::string key;
  for (std::string_view v : values) {
    key.append(v);
    key.push_back('\xff');
  }
  State& st = *state_;
  base::MutexLock lock(&st.mu);
  auto it = st.by_key.find(key);
  if (it == st.by_key.end()) return false;
  State::Child* child = it->second;
  st.by_key.erase(it);
  auto pos = std::find_if(st.children.begin(), st.children.end(),
                          [&](const auto& c) { return c.get() == child; });
  st.graveyard.push_back(std::move(*pos));
  st.children.erase(pos);
  return true;
}

namespace {

// A child's whole label text without `le`.
std::string JoinedLabels(const std::string& before_le, const std::string& after_le) {
  std::string labels = before_le;
  if (!labels.empty() && !after_le.empty()) labels.push_back(',');
  labels.append(after_le);
  return labels;
}

}  // namespace

void FamilyBase::Render(ExpositionWriter& writer, const RenderOptions& render) const {
  const bool om = writer.format() == Format::kOpenMetrics;
  const std::string& name = options_.name;
  const bool counter = type_ == MetricType::kCounter;
  const std::string total = name + "_total";
  const std::string created_name = name + "_created";
  const bool created = render.created_series && type_ != MetricType::kGauge;
  // Text counters carry `_total` in HELP/TYPE (prometheus_client's 0.0.4 output); OpenMetrics
  // names the family without it.
  writer.BeginFamily(counter && !om ? total : name, type_, options_.help, !options_.help.empty(),
                     options_.unit);

  State& st = *state_;
  base::MutexLock lock(&st.mu);
  std::string labels;
  for (const auto& child : st.children) {
    if (type_ != MetricType::kHistogram) {
      labels = JoinedLabels(child->before_le, child->after_le);
      const double value = counter ? Counter(std::get<0>(child->series).get()).Value()
                                   : Gauge(std::get<1>(child->series).get()).Value();
      writer.SampleWithLabelText(counter ? total : name, labels, value);
      if (created && om) writer.SampleWithLabelText(created_name, labels, child->created);
      continue;
    }
    const Histogram::Snapshot snap = Histogram(std::get<2>(child->series).get()).Read();
    uint64_t cumulative = 0;
    const std::string bucket_name = name + "_bucket";
    for (size_t b = 0; b < snap.buckets.size(); ++b) {
      cumulative += snap.buckets[b];
      labels = child->before_le;
      if (!labels.empty()) labels.push_back(',');
      labels.append(st.le_text[b]);
      if (!child->after_le.empty()) {
        labels.push_back(',');
        labels.append(child->after_le);
      }
      writer.SampleWithLabelText(bucket_name, labels, static_cast<double>(cumulative));
    }
    labels = JoinedLabels(child->before_le, child->after_le);
    writer.SampleWithLabelText(name + "_count", labels, static_cast<double>(snap.count));
    writer.SampleWithLabelText(name + "_sum", labels, snap.sum);
    if (created && om) writer.SampleWithLabelText(created_name, labels, child->created);
  }
  // prometheus_client's text output moves `_created` samples into a gauge family of their own
  // after the family, and writes that family only when it has samples.
  if (created && !om && !st.children.empty()) {
    writer.BeginFamily(created_name, MetricType::kGauge, options_.help, !options_.help.empty());
    for (const auto& child : st.children) {
      writer.SampleWithLabelText(created_name, JoinedLabels(child->before_le, child->after_le),
                                 child->created);
    }
  }
}

std::vector<CollectedChild> FamilyBase::Collect() const {
  State& st = *state_;
  base::MutexLock lock(&st.mu);
  std::vector<CollectedChild> out;
  out.reserve(st.children.size());
  for (const auto& child : st.children) {
    CollectedChild c;
    c.created = child->created;
    c.label_values.reserve(options_.labels.size());
    for (std::string_view v : KeyValues(child->key)) c.label_values.emplace_back(v);
    switch (type_) {
      case MetricType::kCounter:
        c.value = Counter(std::get<0>(child->series).get()).Value();
        break;
      case MetricType::kGauge:
        c.value = Gauge(std::get<1>(child->series).get()).Value();
        break;
      default: {
        Histogram::Snapshot snap = Histogram(std::get<2>(child->series).get()).Read();
        c.buckets = std::move(snap.buckets);
        c.count = snap.count;
        c.sum = snap.sum;
        break;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace metrics_internal

template <>
Counter Family<Counter>::Make(void* s) const {
  return MakeCounter(s);
}
template <>
Gauge Family<Gauge>::Make(void* s) const {
  return MakeGauge(s);
}
template <>
Histogram Family<Histogram>::Make(void* s) const {
  return MakeHistogram(s);
}

struct Registry::State {
  mutable base::Mutex mu;
  std::vector<std::unique_ptr<metrics_internal::FamilyBase>> families GUARDED_BY(mu);
  std::vector<std::unique_ptr<metrics_internal::FamilyBase>> removed GUARDED_BY(mu);
  std::set<std::string, std::less<>> reserved GUARDED_BY(mu);
  std::vector<std::pair<std::string, Collector>> collectors GUARDED_BY(mu);
};

Registry::Registry(RegistryOptions options) : options_(options), state_(new State) {}
Registry::~Registry() = default;

template <typename F>
F* Registry::Add(FamilyOptions options, MetricType type, std::string* error) {
  auto fail = [&](std::string message) -> F* {
    if (error != nullptr) *error = options.name + ": " + message;
    return nullptr;
  };
  if (type == MetricType::kCounter && options.name.ends_with("_total")) {
    options.name.resize(options.name.size() - 6);  // `_total` is added exactly once, on render
  }
  if (!metrics_internal::ValidMetricName(options.name)) return fail("invalid metric name");
  std::set<std::string_view> seen;
  for (const std::string& label : options.labels) {
    if (!metrics_internal::ValidLabelName(label)) return fail("invalid label name " + label);
    if (type == MetricType::kHistogram && label == "le") return fail("`le` is reserved");
    if (!seen.insert(label).second) return fail("repeated label name " + label);
  }
  if (type == MetricType::kHistogram) {
    for (size_t i = 0; i < options.buckets.size(); ++i) {
      if (!std::isfinite(options.buckets[i]) ||
          (i > 0 && !(options.buckets[i] > options.buckets[i - 1]))) {
        return fail("buckets must be finite and strictly increasing");
      }
    }
  } else if (!options.buckets.empty()) {
    return fail("buckets are for histograms only");
  }
  if (!options.unit.empty() && !options.name.ends_with("_" + options.unit)) {
    return fail("unit must be a suffix of the name");
  }
  std::vector<std::string> names = metrics_internal::SampleNames(options, type);
  names.push_back(options.name);
  base::MutexLock lock(&state_->mu);
  // Registering an identical family again returns the existing one, so several owners (e.g. two
  // models' observe layers) share it; any other overlap is a collision.
  for (const auto& existing : state_->families) {
    const FamilyOptions& o = existing->options();
    if (o.name == options.name && existing->type() == type && o.help == options.help &&
        o.labels == options.labels && o.buckets == options.buckets && o.unit == options.unit &&
        o.multiprocess_mode == options.multiprocess_mode) {
      return static_cast<F*>(existing.get());
    }
  }
  for (const std::string& n : names) {
    if (state_->reserved.count(n) != 0) return fail("name collides with a registered family");
  }
  auto family = std::make_unique<F>(std::move(options), type, options_.enabled);
  std::string shared_error;
  if (options_.shared != nullptr && !family->Share(options_.shared, &shared_error)) {
    if (error != nullptr) *error = family->options().name + ": " + shared_error;
    return nullptr;
  }
  F* raw = family.get();
  state_->families.push_back(std::move(family));
  state_->reserved.insert(names.begin(), names.end());  // after the family is in place
  return raw;
}

Family<Counter>* Registry::AddCounter(FamilyOptions options, std::string* error) {
  return Add<Family<Counter>>(std::move(options), MetricType::kCounter, error);
}
Family<Gauge>* Registry::AddGauge(FamilyOptions options, std::string* error) {
  return Add<Family<Gauge>>(std::move(options), MetricType::kGauge, error);
}
Family<Histogram>* Registry::AddHistogram(FamilyOptions options, std::string* error) {
  return Add<Family<Histogram>>(std::move(options), MetricType::kHistogram, error);
}

void Registry::AddCollector(std::string name, Collector collector) {
  base::MutexLock lock(&state_->mu);
  state_->collectors.emplace_back(std::move(name), std::move(collector));
}

size_t Registry::RemovePrefix(std::string_view prefix) {
  base::MutexLock lock(&state_->mu);
  size_t removed = 0;
  auto& families = state_->families;
  for (auto it = families.begin(); it != families.end();) {
    if (!(*it)->options().name.starts_with(prefix)) {
      ++it;
      continue;
    }
    std::vector<std::string> names = metrics_internal::SampleNames((*it)->options(), (*it)->type());
    names.push_back((*it)->options().name);
    for (const std::string& n : names) state_->reserved.erase(n);
    state_->removed.push_back(std::move(*it));
    it = families.erase(it);
    ++removed;
  }
  return removed;
}

std::vector<const metrics_internal::FamilyBase*> Registry::Families() const {
  base::MutexLock lock(&state_->mu);
  std::vector<const metrics_internal::FamilyBase*> families;
  families.reserve(state_->families.size());
  for (const auto& family : state_->families) families.push_back(family.get());
  return families;
}

void Registry::Render(ExpositionWriter& writer, const RenderOptions& options) const {
  // Copy the lists and render outside the registry lock: a collector may take its time (it may
  // fetch over the network), and families are never freed while the registry lives.
  std::vector<const metrics_internal::FamilyBase*> families;
  std::vector<Collector> collectors;
  {
    base::MutexLock lock(&state_->mu);
    for (const auto& family : state_->families) families.push_back(family.get());
    for (const auto& entry : state_->collectors) collectors.push_back(entry.second);
  }
  for (const auto* family : families) family->Render(writer, options);
  for (const auto& collector : collectors) collector(writer);
}

void Registry::Render(Format format, std::string* out, const RenderOptions& options) const {
  // One allocation per scrape: reserve what the last render needed, plus room to grow.
  const size_t hint = last_render_bytes_.load(std::memory_order_relaxed);
  out->reserve(out->size() + hint + hint / 8 + 4096);
  const size_t start = out->size();
  ExpositionWriter writer(out, format, FloatStyle::kPython);
  Render(writer, options);
  writer.Finish();
  last_render_bytes_.store(out->size() - start, std::memory_order_relaxed);
}

std::string Registry::Render(Format format, const RenderOptions& options) const {
  std::string out;
  Render(format, &out, options);
  return out;
}

}  // namespace modelmetrics
