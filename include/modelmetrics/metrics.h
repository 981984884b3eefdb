// Instruments and the registry: lock-free counters, gauges and fixed-bound histograms, grouped
// in labelled families, rendered through the format core's ExpositionWriter.
//
//   Registry registry(RegistryOptions{.enabled = log_stats});
//   auto* family = registry.AddCounter({.name = "vllm_omni:requests_success",
//                                        .help = "...", .labels = {"model_name", "reason"}});
//   Counter ok = family->Labels({"m", "stop"});   // label look-up once, when the handle is made
//   ok.Inc();                                    // nanoseconds, lock-free, allocation-free
//   std::string text = registry.Render(Format::kText);
//
// Hot path. A handle is a pointer to its series. Counters and histograms keep one cache-line
// padded shard per thread slot (see src/metrics/thread_slot.h): a thread owns its slot, so an
// observation is a plain load/add/store on memory no other thread writes; threads beyond the
// slot count share one overflow shard guarded by a spin lock. A histogram shard is written under
// a per-shard sequence counter, so a scrape copies each shard consistently without ever making an
// observer wait: `_count` is the sum of the buckets (always equal to the `+Inf` bucket) and
// `_sum` covers exactly the same observations. Gauges are one atomic double (set wins).
//
// Gating. A registry built with `enabled = false` hands out inert handles: every observation is a
// single predictable branch. Children bound eagerly (Family::Bind) still exist and render as
// zeros; lazily bound ones (Family::Labels) are never created.
//
// Shared across processes. A registry built with `RegistryOptions::shared` (a SharedSegment,
// modelmetrics/shared_segment.h) keeps every value in that segment, in this process's slot: handles
// write there with atomic operations instead of thread shards, Render() shows this process's
// values, and SharedSegment::Render() the whole service's.
//
// Thread-safety: handles may be used from any thread. Registry and Family methods are
// thread-safe (a mutex guards the series maps; observers never take it). A series outlives its
// handles: removing families (RemovePrefix) stops rendering them but keeps their memory until
// the registry is destroyed, so stale handles stay safe to call.
#ifndef MODELMETRICS_METRICS_H_
#define MODELMETRICS_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "modelmetrics/exposition.h"
#include "modelmetrics/writer.h"

namespace modelmetrics {

class SharedSegment;

// How a gauge's values from several processes merge (prometheus_client's `multiprocess_mode`):
// every process's value with a `pid` label (kAll), or the min, max, sum, or the value set most
// recently; the `Live` modes count only processes that are alive. Used only in a SharedSegment.
enum class MultiprocessMode : uint8_t {
  kAll,
  kLiveAll,
  kMin,
  kLiveMin,
  kMax,
  kLiveMax,
  kSum,
  kLiveSum,
  kMostRecent,
  kLiveMostRecent,
};

namespace metrics_internal {
struct CounterSeries;
struct HistogramSeries;
struct Recorded;
class FamilyBase;

// A series' cells in a SharedSegment: `offset` words into this process's slot, whose base the
// segment moves when a fork gives the child a slot of its own. Null base: not shared.
struct SharedCell {
  std::atomic<std::atomic<uint64_t>*>* base = nullptr;
  uint32_t offset = 0;
  std::atomic<uint64_t>* get() const { return base->load(std::memory_order_relaxed) + offset; }
};

// A gauge is one atomic double, on a cache line of its own; defined here so Set() inlines.
struct alignas(64) GaugeSeries {
  std::atomic<double> value{0};
  SharedCell shared;
  bool stamped = false;  // shared, most-recent mode: each write records its wall time
};
void SetShared(const GaugeSeries& series, double value);
}  // namespace metrics_internal

// A monotonically increasing count. Inc()/Add(uint64) take the integer path; Add(double) keeps a
// separate floating-point sum. Negative, NaN and infinite double amounts are ignored (counters
// never go down; upstream's `inc(-1)` crash is a documented bug).
class Counter {
 public:
  Counter() = default;  // inert
  // The inert check is inline so a gated-off observation costs one predictable branch.
  void Inc() const {
    if (series_ != nullptr) AddLive(uint64_t{1});
  }
  void Add(uint64_t amount) const {
    if (series_ != nullptr) AddLive(amount);
  }
  void Add(double amount) const {
    if (series_ != nullptr) AddLive(amount);
  }
  // prometheus_client's float accumulator: any amount > 0 is added on the double path, NaN and
  // +Inf included (the value then reads NaN or +Inf, as `_value += amount` would make it); the
  // caller refuses negative amounts. For the drop-in instruments (modelmetrics.prometheus_client).
  void AddFloat(double amount) const {
    if (series_ != nullptr) AddFloatLive(amount);
  }
  double Value() const;  // sum over all shards; 0 for an inert handle
  bool live() const { return series_ != nullptr; }

 private:
  friend class metrics_internal::FamilyBase;
  explicit Counter(metrics_internal::CounterSeries* s) : series_(s) {}
  void AddLive(uint64_t amount) const;
  void AddLive(double amount) const;
  void AddFloatLive(double amount) const;
  metrics_internal::CounterSeries* series_ = nullptr;
};

class Gauge {
 public:
  Gauge() = default;  // inert
  void Set(double value) const {
    if (series_ == nullptr) return;
    if (!shared_) {
      series_->value.store(value, std::memory_order_relaxed);
    } else {
      metrics_internal::SetShared(*series_, value);
    }
  }
  void Add(double amount) const {
    if (series_ != nullptr) AddLive(amount);
  }
  void Inc() const { Add(1.0); }
  void Dec() const { Add(-1.0); }
  double Value() const;
  bool live() const { return series_ != nullptr; }

 private:
  friend class metrics_internal::FamilyBase;
  explicit Gauge(metrics_internal::GaugeSeries* s)
      : series_(s), shared_(s != nullptr && s->shared.base != nullptr) {}
  void AddLive(double amount) const;
  metrics_internal::GaugeSeries* series_ = nullptr;
  // Fixed when the series is made; kept here because Set() would otherwise read the series'
  // cache line, which another thread setting the same gauge keeps taking away (measured: two
  // threads setting one gauge, 0.29 ns a set with the flag here, 0.9 ns reading it there).
  bool shared_ = false;
};

// Fixed upper bounds (strictly increasing, finite); `+Inf` is implicit. A value lands in the first
// bucket whose bound is >= value (Prometheus `le`); NaN lands in `+Inf` and makes `_sum` NaN.
class Histogram {
 public:
  Histogram() = default;  // inert
  void Observe(double value) const {
    if (series_ != nullptr) ObserveLive(value);
  }
  // prometheus_client's observe: as Observe, except that NaN reaches `_sum` and no bucket (so
  // `_count` does not count it). For the drop-in instruments.
  void ObserveFloat(double value) const {
    if (series_ != nullptr) ObserveFloatLive(value);
  }
  bool live() const { return series_ != nullptr; }

  struct Snapshot {
    std::vector<uint64_t> buckets;  // per bucket (not cumulative), last one is +Inf
    uint64_t count = 0;             // == sum of buckets
    double sum = 0;
  };
  Snapshot Read() const;

 private:
  friend class metrics_internal::FamilyBase;
  explicit Histogram(metrics_internal::HistogramSeries* s) : series_(s) {}
  void ObserveLive(double value) const;
  void ObserveFloatLive(double value) const;
  metrics_internal::HistogramSeries* series_ = nullptr;
};

// What a render adds beyond the samples themselves.
struct RenderOptions {
  // prometheus_client's `<name>_created` series (wall seconds each counter and histogram child
  // was created): in text as one `<name>_created` gauge family after the family, in OpenMetrics
  // inside it after each child's samples. Off by default; the Python package turns it on unless
  // PROMETHEUS_DISABLE_CREATED_SERIES is set, as prometheus_client does.
  bool created_series = false;
};

// One family's children as values, for consumers that build their own objects (the Python
// bridge hands them to prometheus_client). Label values are in declaration order.
struct CollectedChild {
  std::vector<std::string> label_values;
  double created = 0;             // wall seconds the child was created
  double value = 0;               // counters and gauges
  std::vector<uint64_t> buckets;  // histograms: per bucket, not cumulative; last is +Inf
  uint64_t count = 0;             // histograms
  double sum = 0;                 // histograms
};

struct FamilyOptions {
  std::string name;  // counters without `_total` (it is added when rendering, exactly once)
  std::string help;
  std::vector<std::string> labels;  // label names, in declaration order
  std::vector<double> buckets;      // histograms only
  std::string unit;                 // OpenMetrics UNIT (must be a suffix of the name)
  MultiprocessMode multiprocess_mode = MultiprocessMode::kAll;  // gauges in a SharedSegment
};

// Bounds on what label values can make a family hold. A label set past either gets an inert
// handle (its observations are not recorded) and one line on stderr per family; the Python
// package raises ValueError for a too-long value. Real label values (model names, stages,
// reasons, LoRA names) are far shorter and far fewer; an unbounded one (a request id, a prompt)
// would otherwise grow the process without end.
inline constexpr size_t kMaxLabelValueBytes = 4096;
inline constexpr size_t kMaxChildrenPerFamily = size_t{1} << 20;  // 1,048,576 label sets

namespace metrics_internal {

// Shared machinery of the three family kinds; see Family<T>.
class FamilyBase {
 public:
  virtual ~FamilyBase();
  const FamilyOptions& options() const { return options_; }
  MetricType type() const { return type_; }
  // A child's `created` argument meaning "now" (the wall clock when it is made).
  static constexpr double kNow = __builtin_nan("");
  // Renders this family (all its children, in creation order) to `writer`.
  void Render(ExpositionWriter& writer, const RenderOptions& options = {}) const;
  // Its live children as values, in creation order.
  std::vector<CollectedChild> Collect() const;
  // Keeps this family's values in `segment` from now on (call before its first child): false
  // (and *error) when the segment is full or holds the name with another definition. While a
  // stopped process holds the segment's directory, the family (or a new child) records in this
  // process and joins the segment once it is released, with what it recorded meanwhile.
  bool Share(std::shared_ptr<SharedSegment> segment, std::string* error);
  // Whether its values are kept in a shared segment (a new child may then wait, boundedly, for
  // the segment's directory lock).
  bool shared() const { return shared_ != nullptr; }

  // For the pending-shares thread (src/metrics/pending_shares.h). Joins what waits to join the
  // segment and copies what waiting children recorded since the last call: kDone once nothing
  // is left to do, kAgain while children record here, kBusy when the directory lock was still
  // held (other families would wait for it too).
  enum class SyncResult : uint8_t { kDone, kAgain, kBusy };
  SyncResult SyncShared();
  // In a fork child: what waiting children recorded before fork() is the parent's to copy, and
  // a gauge starts at 0 as joined ones do. False when a thread that is not in the child held the
  // family's lock at fork() (the family is then left as it is).
  bool RebaseAfterFork();

 protected:
  FamilyBase(FamilyOptions options, MetricType type, bool enabled);
  // The series for `values`, created if `create` (with `_created` = `created` wall seconds, or now
  // when NaN); nullptr when absent, when values mismatch, or when a value or the family is past
  // its bound (kMaxLabelValueBytes, kMaxChildrenPerFamily); then *refused (when given) says why.
  void* Find(std::span<const std::string_view> values, bool create, double created = kNow,
             std::string* refused = nullptr);
  bool RemoveChild(std::span<const std::string_view> values);

  Counter MakeCounter(void* s) const { return Counter(static_cast<CounterSeries*>(s)); }
  Gauge MakeGauge(void* s) const { return Gauge(static_cast<GaugeSeries*>(s)); }
  Histogram MakeHistogram(void* s) const { return Histogram(static_cast<HistogramSeries*>(s)); }
  bool enabled() const { return enabled_; }

 private:
  struct State;
  // Find's series of `key`, made when absent and `create`; *deferred when it records in this
  // process until it can join the shared segment.
  void* FindOrMake(std::string key, std::span<const std::string_view> values, bool create,
                   double created, std::string* refused, bool* deferred);
  // What the series `s` (of this family's type, kept in this process) recorded.
  Recorded RecordedIn(const void* s) const;

  FamilyOptions options_;
  MetricType type_;
  bool enabled_;
  std::unique_ptr<State> state_;
  std::shared_ptr<SharedSegment> shared_;  // set once by Share(), before any child
};

}  // namespace metrics_internal

// A labelled family of instruments T (Counter, Gauge or Histogram).
template <typename T>
class Family : public metrics_internal::FamilyBase {
 public:
  // Lazily bound child: created on first use, only when the registry is enabled; when disabled
  // the handle is inert, even for a child bound eagerly.
  // Values are given in the order of FamilyOptions::labels; a wrong count gives an inert handle.
  T Labels(std::initializer_list<std::string_view> values) {
    return Labels(std::span(values.begin(), values.size()));
  }
  T Labels(std::span<const std::string_view> values) {
    return enabled() ? Make(Find(values, true)) : T();
  }
  // The same with the child's `_created` given (wall seconds), for callers that take the time
  // from their own clock (the Python instruments read `time.time()`, as prometheus_client does).
  T Labels(std::span<const std::string_view> values, double created) {
    return enabled() ? Make(Find(values, true, created)) : T();
  }
  // The same, with why a label set was refused (the handle is then inert) in *refused: a value
  // over kMaxLabelValueBytes, kMaxChildrenPerFamily reached, or a full shared segment. For
  // callers that report the refusal themselves (the Python instruments raise it).
  T Labels(std::span<const std::string_view> values, double created, std::string* refused) {
    return enabled() ? Make(Find(values, true, created, refused)) : T();
  }
  // Eagerly bound child: created now even when disabled (it then renders as zero); the handle is
  // inert when disabled.
  T Bind(std::initializer_list<std::string_view> values) {
    return Bind(std::span(values.begin(), values.size()));
  }
  T Bind(std::span<const std::string_view> values) {
    void* s = Find(values, true);
    return enabled() ? Make(s) : T();
  }
  // Drops a child (e.g. a dead replica's gauge); its handles stay safe and become invisible.
  bool Remove(std::initializer_list<std::string_view> values) {
    return RemoveChild(std::span(values.begin(), values.size()));
  }
  bool Remove(std::span<const std::string_view> values) { return RemoveChild(values); }

  Family(FamilyOptions options, MetricType type, bool enabled)
      : FamilyBase(std::move(options), type, enabled) {}

 private:
  T Make(void* s) const;
};

// Defined in registry.cc; declared here so every user sees the explicit specialisations.
template <>
Counter Family<Counter>::Make(void* s) const;
template <>
Gauge Family<Gauge>::Make(void* s) const;
template <>
Histogram Family<Histogram>::Make(void* s) const;

struct RegistryOptions {
  bool enabled = true;  // `--log-stats`: false makes every instrument inert
  // Every family's values in this segment (modelmetrics/shared_segment.h); null: in this process.
  std::shared_ptr<SharedSegment> shared;
};

class Registry {
 public:
  explicit Registry(RegistryOptions options = {});
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  bool enabled() const { return options_.enabled; }

  // Register a family. Registering an identical definition (name, type, help, labels, buckets,
  // unit) again returns the existing family, so several owners can share it. Returns nullptr
  // (and sets *error) when the name is invalid, taken by a different definition, or its rendered
  // sample names would collide with another family's; the buckets are not strictly increasing
  // finite values; the label names are invalid or repeated; or the shared segment is full or
  // holds the name with another definition.
  Family<Counter>* AddCounter(FamilyOptions options, std::string* error = nullptr);
  Family<Gauge>* AddGauge(FamilyOptions options, std::string* error = nullptr);
  Family<Histogram>* AddHistogram(FamilyOptions options, std::string* error = nullptr);

  // A source rendered after the families, at each scrape (federation, external engines). It
  // writes whole families through the writer.
  using Collector = std::function<void(ExpositionWriter&)>;
  void AddCollector(std::string name, Collector collector);

  // Stops rendering every family whose name starts with `prefix` (e.g. "vllm:" keeps
  // "vllm_omni:"); returns how many. Their names become free again.
  size_t RemovePrefix(std::string_view prefix);

  // The whole exposition: families in registration order, then collectors.
  std::string Render(Format format, const RenderOptions& options = {}) const;
  // Appends the exposition to `*out`; a caller that keeps `out` between scrapes reuses its memory.
  void Render(Format format, std::string* out, const RenderOptions& options = {}) const;
  void Render(ExpositionWriter& writer, const RenderOptions& options = {}) const;

  // Every live family, in registration order (collectors are not included). The pointers stay
  // valid for the registry's lifetime (removed families are kept, not freed).
  std::vector<const metrics_internal::FamilyBase*> Families() const;

 private:
  template <typename F>
  F* Add(FamilyOptions options, MetricType type, std::string* error);
  struct State;
  RegistryOptions options_;
  std::unique_ptr<State> state_;
  mutable std::atomic<size_t> last_render_bytes_{0};  // sizing hint for the next render
};

}  // namespace modelmetrics

#endif  // MODELMETRICS_METRICS_H_
