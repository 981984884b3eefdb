// Observation and render costs of the instruments.
//
//   build/bench/instruments_speed_test --benchmark_min_time=0.3
//
// Shared/N: N threads on one series. Separate/N: each thread on its own series. GatedOff: a
// disabled registry's handle. Render: a pipeline-sized registry (3 stages x 2 replicas).
// SharedSegment*: the same instruments in a multiprocess segment, and a scrape merging 16
// processes' pipeline-sized registries.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "modelmetrics/metrics.h"
#include "modelmetrics/shared_segment.h"

namespace modelmetrics {
namespace {

const std::vector<double> kSecondsBuckets = {0.05, 0.1,  0.25, 0.5,  1.0,   2.0,  5.0,
                                             10.0, 20.0, 30.0, 60.0, 120.0, 300.0};

struct Fixture {
  explicit Fixture(bool enabled) : registry(RegistryOptions{.enabled = enabled}) {
    counters = registry.AddCounter({.name = "c", .labels = {"t"}});
    gauges = registry.AddGauge({.name = "g", .labels = {"t"}});
    histograms = registry.AddHistogram({.name = "h", .labels = {"t"}, .buckets = kSecondsBuckets});
  }
  Registry registry;
  Family<Counter>* counters;
  Family<Gauge>* gauges;
  Family<Histogram>* histograms;
};

Fixture& Enabled() {
  static Fixture f(true);
  return f;
}
Fixture& Disabled() {
  static Fixture f(false);
  return f;
}

std::string SeriesFor(const benchmark::State& state, bool shared) {
  return shared ? "shared" : "thread-" + std::to_string(state.thread_index());
}

void BM_CounterInc(benchmark::State& state, bool shared) {
  Counter c = Enabled().counters->Labels({SeriesFor(state, shared)});
  for (auto _ : state) c.Inc();
}
void BM_GaugeSet(benchmark::State& state, bool shared) {
  Gauge g = Enabled().gauges->Labels({SeriesFor(state, shared)});
  double v = 0;
  for (auto _ : state) g.Set(v += 1);
}
void BM_HistogramObserve(benchmark::State& state, bool shared) {
  Histogram h = Enabled().histograms->Labels({SeriesFor(state, shared)});
  // Values spread over the buckets, as a latency histogram sees them.
  static const double kValues[8] = {0.03, 0.07, 0.2, 0.4, 0.9, 3.0, 15.0, 400.0};
  size_t i = 0;
  for (auto _ : state) h.Observe(kValues[i++ & 7]);
}

void BM_GatedOffCounterInc(benchmark::State& state) {
  Counter c = Disabled().counters->Labels({"x"});
  // The handle is reloaded each iteration (DoNotOptimize forces it through memory): otherwise
  // the compiler hoists the inert check out of the loop, deletes the loop and reports 0 ns.
  for (auto _ : state) {
    benchmark::DoNotOptimize(c);
    c.Inc();
  }
}
void BM_GatedOffHistogramObserve(benchmark::State& state) {
  Histogram h = Disabled().histograms->Labels({"x"});
  double v = 0.3;
  for (auto _ : state) {
    benchmark::DoNotOptimize(h);  // as above: keep the per-call branch in the loop
    benchmark::DoNotOptimize(v);
    h.Observe(v);
  }
}

BENCHMARK_CAPTURE(BM_CounterInc, Shared, true)->Threads(1)->Threads(2);
BENCHMARK_CAPTURE(BM_CounterInc, Separate, false)->Threads(1)->Threads(2);
BENCHMARK_CAPTURE(BM_GaugeSet, Shared, true)->Threads(1)->Threads(2);
BENCHMARK_CAPTURE(BM_GaugeSet, Separate, false)->Threads(1)->Threads(2);
BENCHMARK_CAPTURE(BM_HistogramObserve, Shared, true)->Threads(1)->Threads(2);
BENCHMARK_CAPTURE(BM_HistogramObserve, Separate, false)->Threads(1)->Threads(2);
BENCHMARK(BM_GatedOffCounterInc);
BENCHMARK(BM_GatedOffHistogramObserve);

// Fills `registry` as the omni catalog on 3 stages x 2 replicas fills one: 40 families, about a
// third histograms, each series labelled by model, stage and replica.
void FillPipelineSized(Registry& registry) {
  const std::vector<std::string> labels = {"model_name", "stage", "replica"};
  for (int f = 0; f < 40; ++f) {
    const std::string name = "vllm_omni:family_" + std::to_string(f);
    Family<Histogram>* h = nullptr;
    Family<Counter>* c = nullptr;
    Family<Gauge>* g = nullptr;
    if (f % 3 == 0) {
      h = registry.AddHistogram({.name = name + "_seconds",
                                 .help = "A histogram.",
                                 .labels = labels,
                                 .buckets = kSecondsBuckets});
    } else if (f % 3 == 1) {
      c = registry.AddCounter({.name = name, .help = "A counter.", .labels = labels});
    } else {
      g = registry.AddGauge({.name = name, .help = "A gauge.", .labels = labels});
    }
    for (int stage = 0; stage < 3; ++stage) {
      for (int replica = 0; replica < 2; ++replica) {
        const std::string s = std::to_string(stage), r = std::to_string(replica);
        if (h) h->Labels({"Qwen/Qwen2.5-Omni-7B", s, r}).Observe(0.3 * (stage + 1));
        if (c) c->Labels({"Qwen/Qwen2.5-Omni-7B", s, r}).Add(uint64_t{12345});
        if (g) g->Labels({"Qwen/Qwen2.5-Omni-7B", s, r}).Set(0.5 * replica);
      }
    }
  }
}

void BM_RenderPipelineSizedRegistry(benchmark::State& state) {
  Registry registry;
  FillPipelineSized(registry);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = registry.Render(Format::kText);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderPipelineSizedRegistry)->Unit(benchmark::kMicrosecond);

// The same instruments kept in a SharedSegment (modelmetrics/shared_segment.h): one process's
// slot, written with atomic operations.
std::shared_ptr<SharedSegment> BenchSegment(int n) {
  return SharedSegment::Attach(
      {.name = "mm-bench-" + std::to_string(getpid()) + "-" + std::to_string(n),
       .bytes = size_t{16} << 20,
       .process_slots = 32},
      nullptr);
}

struct SharedFixture {
  SharedFixture() : segment(BenchSegment(0)), registry(RegistryOptions{.shared = segment}) {
    counter = registry.AddCounter({.name = "c"})->Labels({});
    gauge = registry.AddGauge({.name = "g"})->Labels({});
    histogram = registry.AddHistogram({.name = "h", .buckets = kSecondsBuckets})->Labels({});
  }
  std::shared_ptr<SharedSegment> segment;
  Registry registry;
  Counter counter;
  Gauge gauge;
  Histogram histogram;
};

SharedFixture& Shared() {
  static SharedFixture f;
  return f;
}

void BM_SharedSegmentCounterInc(benchmark::State& state) {
  Counter c = Shared().counter;
  for (auto _ : state) c.Inc();
}
void BM_SharedSegmentGaugeSet(benchmark::State& state) {
  Gauge g = Shared().gauge;
  double v = 0;
  for (auto _ : state) g.Set(v += 1);
}
void BM_SharedSegmentHistogramObserve(benchmark::State& state) {
  Histogram h = Shared().histogram;
  static const double kValues[8] = {0.03, 0.07, 0.2, 0.4, 0.9, 3.0, 15.0, 400.0};
  size_t i = 0;
  for (auto _ : state) h.Observe(kValues[i++ & 7]);
}
BENCHMARK(BM_SharedSegmentCounterInc)->Threads(1)->Threads(2);
BENCHMARK(BM_SharedSegmentGaugeSet)->Threads(1)->Threads(2);
BENCHMARK(BM_SharedSegmentHistogramObserve)->Threads(1)->Threads(2);

// A scrape merging 16 processes that each recorded the pipeline-sized registry (16 attachments
// in this process stand for them: each takes its own slot, as a process does).
void BM_RenderSharedSegment16Processes(benchmark::State& state) {
  std::vector<std::shared_ptr<SharedSegment>> views;
  std::vector<std::unique_ptr<Registry>> registries;
  views.push_back(BenchSegment(1));
  const std::string name = views.back()->name();
  for (int p = 0; p < 16; ++p) {
    if (p > 0) views.push_back(SharedSegment::Attach({.name = name}, nullptr));
    registries.push_back(std::make_unique<Registry>(RegistryOptions{.shared = views.back()}));
    FillPipelineSized(*registries.back());
  }
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = views[0]->Render(Format::kText);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderSharedSegment16Processes)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace modelmetrics

BENCHMARK_MAIN();
