// A scrape of a SharedSegment: every series merged over process slots, as prometheus_client's
// MultiProcessCollector merges its files. Reads the segment without its lock (segment_layout.h);
// the text of names and labels comes from this process's ScrapeCache.
#include <algorithm>
#include <bit>
#include <cmath>

#include "segment_layout.h"
#include "shared_cells.h"

namespace modelmetrics {
namespace {

using segment::FamilyRecord;
using segment::FamilyText;
using segment::SeriesRecord;
using segment::SeriesText;

// Bytes of a sample line beyond its name and labels: braces, quotes, an extra label
// (`le="..."`, `pid="..."`), the value, the newline.
constexpr size_t kLineOverhead = 96;

double AsDouble(uint64_t bits) { return std::bit_cast<double>(bits); }

struct SlotView {
  uint32_t index;
  int pid;
  bool live;  // running, and not named by mark_process_dead
};

// The slots ever taken, with their liveness now.
std::vector<SlotView> Slots(const SharedSegment::Impl& impl) {
  std::vector<SlotView> out;
  for (uint32_t i = 0; i < impl.geometry.process_slots; ++i) {
    const segment::ProcessSlot& s = impl.slots[i];
    if (s.state.load(std::memory_order_acquire) == 0) continue;
    const bool marked = (s.flags.load(std::memory_order_relaxed) & segment::kMarkedDead) != 0;
    out.push_back({i, s.pid.load(std::memory_order_relaxed), !marked && impl.Alive(i)});
  }
  return out;
}

FamilyText MakeFamilyText(segment::CheckedFamily f) {
  FamilyText t;
  t.valid = true;
  t.type = f.type;
  t.options = std::move(f.options);
  const std::string& name = t.options.name;
  t.sample = t.type == MetricType::kCounter ? name + "_total" : name;
  if (t.type == MetricType::kHistogram) {
    t.bucket = name + "_bucket";
    t.count = name + "_count";
    t.sum = name + "_sum";
    for (double bound : t.options.buckets) {
      t.le.emplace_back();
      AppendPythonClientDouble(&t.le.back(), bound);  // floatToGoString
    }
    t.le.emplace_back("+Inf");
  }
  return t;
}

// The series' label text, sorted by name as prometheus_client's writer sorts, split where the
// family's extra label (`le`, or a per-process gauge's `pid`) sorts.
SeriesText MakeSeriesText(std::vector<std::string> values, uint32_t cell, const FamilyText& ft) {
  SeriesText t;
  t.cell = cell;
  t.valid = true;
  t.values = std::move(values);
  const std::vector<std::string>& labels = ft.options.labels;
  const std::string_view extra = ft.type == MetricType::kHistogram ? "le"
                                 : ft.type == MetricType::kGauge   ? "pid"
                                                                   : "";
  std::vector<size_t> order(t.values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return labels[a] < labels[b]; });
  for (size_t i : order) {
    std::string& text = !extra.empty() && labels[i] < extra ? t.before : t.after;
    if (!text.empty()) text.push_back(',');
    text.append(labels[i]);
    text.append("=\"");
    AppendEscapedLabelValue(&text, t.values[i]);
    text.push_back('"');
  }
  if (extra.empty()) std::swap(t.before, t.after);  // all of it, in `before`
  // One sample line at most: the longest sample name, the labels, the extra label, the value.
  t.line_bytes = std::max(ft.sample.size(), ft.bucket.size()) + t.before.size() + t.after.size() +
                 kLineOverhead;
  return t;
}

// Brings the cache up to the records published when the scrape began. Each record is copied
// before it is checked (segment_check.h), and only the copy is used.
void Refresh(SharedSegment::Impl& impl, uint32_t families, uint32_t series)
    REQUIRES(impl.render_mu) {
  segment::ScrapeCache& c = impl.cache;
  while (c.families.size() < families) {
    const FamilyRecord f = impl.families[c.families.size()];
    segment::CheckedFamily checked;
    const segment::Skip why = segment::CheckFamily(impl, f, &checked);
    ++c.skipped[static_cast<size_t>(why)];
    c.families.push_back(why == segment::Skip::kNone ? MakeFamilyText(std::move(checked))
                                                     : FamilyText{});
  }
  while (c.series.size() < series) {
    const SeriesRecord r = impl.series[c.series.size()];
    FamilyText* ft = r.family < c.families.size() && c.families[r.family].valid
                         ? &c.families[r.family]
                         : nullptr;
    segment::FamilyShape shape;
    if (ft != nullptr) {
      shape = {.type = ft->type,
               .labels = ft->options.labels.size(),
               .bounds = ft->options.buckets.size()};
    }
    std::vector<std::string> values;
    const segment::Skip why = c.check.Check(impl, r, ft != nullptr ? &shape : nullptr, &values);
    ++c.skipped[static_cast<size_t>(why)];
    if (why != segment::Skip::kNone) {
      c.series.emplace_back();
      continue;
    }
    c.series.push_back(MakeSeriesText(std::move(values), r.cell, *ft));
    ft->series.push_back(static_cast<uint32_t>(c.series.size() - 1));
  }
}

// One series merged over the slots.
struct Merged {
  bool any = false;  // counters and histograms always; gauges when a counted process made it
  double value = 0;
  struct Process {
    int pid;
    double value;
    bool live;
  };
  std::vector<Process> per_process;  // gauges in kAll/kLiveAll
  std::vector<uint64_t> buckets;     // histograms: per bucket
  uint64_t count = 0;
  double sum = 0;
  Histogram::Snapshot scratch;                      // one slot's copy
  std::vector<const std::atomic<uint64_t>*> cells;  // the series' cell in each slot
};

void MergeGauge(const std::atomic<uint64_t>* const* cells, const std::vector<SlotView>& slots,
                MultiprocessMode mode, Merged* m) {
  const bool live_only = IsLiveMode(mode);
  const bool per_process = mode == MultiprocessMode::kAll || mode == MultiprocessMode::kLiveAll;
  double best_stamp = -1;
  for (size_t i = 0; i < slots.size(); ++i) {
    const SlotView& s = slots[i];
    if (live_only && !s.live) continue;
    const double stamp = AsDouble(cells[i][1].load(std::memory_order_acquire));
    if (stamp == 0) continue;  // no child of it in this slot's process
    const double v = AsDouble(cells[i][0].load(std::memory_order_relaxed));
    if (per_process) {
      // A pid seen twice (the system reused it for a later process): the running process's
      // value, as prometheus_client's file of that pid would hold the later one.
      auto same = std::find_if(m->per_process.begin(), m->per_process.end(),
                               [&](const auto& p) { return p.pid == s.pid; });
      if (same == m->per_process.end()) {
        m->per_process.push_back({s.pid, v, s.live});
      } else if (s.live && !same->live) {
        *same = {s.pid, v, s.live};
      }
      continue;
    }
    switch (mode) {
      case MultiprocessMode::kMin:
      case MultiprocessMode::kLiveMin:
        m->value = m->any ? std::min(m->value, v) : v;
        break;
      case MultiprocessMode::kMax:
      case MultiprocessMode::kLiveMax:
        m->value = m->any ? std::max(m->value, v) : v;
        break;
      case MultiprocessMode::kSum:
      case MultiprocessMode::kLiveSum:
        m->value += v;
        break;
      default:  // most recent
        if (stamp > best_stamp) {
          best_stamp = stamp;
          m->value = v;
        }
        break;
    }
    m->any = true;
  }
}

void MergeSeries(const SharedSegment::Impl& impl, const FamilyText& ft, uint32_t cell,
                 const std::vector<SlotView>& slots, Merged* m) {
  std::vector<const std::atomic<uint64_t>*>& cells = m->cells;
  cells.resize(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) cells[i] = impl.SlotCells(slots[i].index) + cell;
  m->any = false;
  m->value = 0;
  m->per_process.clear();
  switch (ft.type) {
    case MetricType::kGauge:
      MergeGauge(cells.data(), slots, ft.options.multiprocess_mode, m);
      return;
    case MetricType::kCounter:
      for (const auto* c : cells) m->value += AsDouble(c->load(std::memory_order_relaxed));
      m->any = true;
      return;
    default: {
      const size_t buckets = ft.le.size();
      m->buckets.assign(buckets, 0);
      m->sum = 0;
      for (const auto* c : cells) {
        metrics_internal::shared_cells::Read(c, buckets, &m->scratch);
        for (size_t b = 0; b < buckets; ++b) m->buckets[b] += m->scratch.buckets[b];
        m->sum += m->scratch.sum;
      }
      m->count = 0;
      for (uint64_t c : m->buckets) m->count += c;
      m->any = true;
      return;
    }
  }
}

// Lines a merged series renders.
uint64_t Lines(const FamilyText& ft, const Merged& m) {
  const uint64_t own = !m.any ? 0 : ft.type == MetricType::kHistogram ? ft.le.size() + 2 : 1;
  return m.per_process.size() + own;
}

// Calls `visit(family index, series index, merged, cache)` for every series with a sample, in
// family then registration order, under the cache's lock (`cache` is valid only in the call).
// Series past the scrape budget are left out. Returns the records skipped, by reason (the
// directory's so far, and this scrape's budget).
template <typename Visit>
segment::SkipCounts Scrape(SharedSegment::Impl& impl, Visit visit) {
  const uint32_t series = impl.PublishedSeries();  // first: a series' family is older
  const uint32_t families = impl.PublishedFamilies();
  const std::vector<SlotView> slots = Slots(impl);
  base::MutexLock lock(&impl.render_mu);
  Refresh(impl, families, series);
  const uint64_t budget = segment::ScrapeBudget(impl);
  uint64_t rendered = 0, over_budget = 0;
  Merged merged;
  for (uint32_t fi = 0; fi < families; ++fi) {
    const FamilyText& ft = impl.cache.families[fi];
    for (uint32_t si : ft.series) {
      const SeriesText& st = impl.cache.series[si];
      if (si >= series || !st.valid) continue;
      MergeSeries(impl, ft, st.cell, slots, &merged);
      const uint64_t bytes = Lines(ft, merged) * st.line_bytes;
      if (bytes == 0) continue;
      if (rendered + bytes > budget) {
        ++over_budget;
        continue;
      }
      rendered += bytes;
      visit(fi, si, merged, impl.cache);
    }
  }
  segment::SkipCounts skipped = impl.cache.skipped;
  skipped[static_cast<size_t>(segment::Skip::kNone)] = 0;
  skipped[static_cast<size_t>(segment::Skip::kScrapeBudget)] = over_budget;
  return skipped;
}

// The self-metric of a scrape that skipped records: nothing when none was (the exposition is
// then exactly prometheus_client's).
constexpr std::string_view kSkippedName = "modelmetrics_multiprocess_skipped_records";
constexpr std::string_view kSkippedHelp =
    "Records of the shared segment's directory this scrape left out, by reason (a corrupt or "
    "foreign record, or past the scrape's byte budget).";

// `before`, the extra label (when given), `after`, comma-joined.
void JoinLabels(const SeriesText& t, std::string_view extra, std::string* out) {
  out->assign(t.before);
  if (!extra.empty()) {
    if (!out->empty()) out->push_back(',');
    out->append(extra);
  }
  if (!t.after.empty()) {
    if (!out->empty()) out->push_back(',');
    out->append(t.after);
  }
}

}  // namespace

std::vector<MergedFamily> SharedSegment::Collect() const {
  Impl& impl = *impl_;
  std::vector<MergedFamily> out;
  int last = -1;
  const segment::SkipCounts skipped = Scrape(
      impl, [&](uint32_t fi, uint32_t si, const Merged& m, const segment::ScrapeCache& cache) {
        if (static_cast<int>(fi) != last) {
          out.push_back({.options = cache.families[fi].options, .type = cache.families[fi].type});
          last = static_cast<int>(fi);
        }
        const std::vector<std::string>& values = cache.series[si].values;
        for (const Merged::Process& p : m.per_process) {
          out.back().children.push_back({.label_values = values, .pid = p.pid, .value = p.value});
        }
        if (!m.any) return;
        MergedChild child{.label_values = values, .value = m.value};
        if (out.back().type == MetricType::kHistogram) {
          child.buckets = m.buckets;
          child.count = m.count;
          child.sum = m.sum;
        }
        out.back().children.push_back(std::move(child));
      });
  MergedFamily self{.options = {.name = std::string(kSkippedName),
                                .help = std::string(kSkippedHelp),
                                .labels = {"reason"},
                                .multiprocess_mode = MultiprocessMode::kMax},
                    .type = MetricType::kGauge};
  for (size_t r = 0; r < skipped.size(); ++r) {
    if (skipped[r] == 0) continue;
    self.children.push_back(
        {.label_values = {std::string(segment::SkipName(static_cast<segment::Skip>(r)))},
         .value = static_cast<double>(skipped[r])});
  }
  if (!self.children.empty()) out.push_back(std::move(self));
  return out;
}

void SharedSegment::Render(ExpositionWriter& writer) const {
  Impl& impl = *impl_;
  const bool om = writer.format() == Format::kOpenMetrics;
  int last = -1;
  std::string labels, extra;
  // As MultiProcessCollector: a family no process gave a sample is not written.
  const segment::SkipCounts skipped = Scrape(
      impl, [&](uint32_t fi, uint32_t si, const Merged& m, const segment::ScrapeCache& cache) {
        const FamilyText& ft = cache.families[fi];
        const SeriesText& st = cache.series[si];
        const MetricType type = ft.type;
        if (static_cast<int>(fi) != last) {
          const FamilyOptions& o = ft.options;
          writer.BeginFamily(type == MetricType::kCounter && !om ? ft.sample : o.name, type, o.help,
                             !o.help.empty(), o.unit);
          last = static_cast<int>(fi);
        }
        for (const Merged::Process& p : m.per_process) {
          extra = "pid=\"" + std::to_string(p.pid) + "\"";
          JoinLabels(st, extra, &labels);
          writer.SampleWithLabelText(ft.sample, labels, p.value);
        }
        if (!m.any) return;
        if (type != MetricType::kHistogram) {
          JoinLabels(st, {}, &labels);
          writer.SampleWithLabelText(ft.sample, labels, m.value);
          return;
        }
        uint64_t cumulative = 0;
        for (size_t b = 0; b < m.buckets.size(); ++b) {
          cumulative += m.buckets[b];
          extra = "le=\"" + ft.le[b] + "\"";
          JoinLabels(st, extra, &labels);
          writer.SampleWithLabelText(ft.bucket, labels, static_cast<double>(cumulative));
        }
        JoinLabels(st, {}, &labels);
        writer.SampleWithLabelText(ft.count, labels, static_cast<double>(m.count));
        writer.SampleWithLabelText(ft.sum, labels, m.sum);
      });
  bool begun = false;
  for (size_t r = 0; r < skipped.size(); ++r) {
    if (skipped[r] == 0) continue;
    if (!begun) writer.BeginFamily(kSkippedName, MetricType::kGauge, kSkippedHelp, true, "");
    begun = true;
    writer.SampleWithLabelText(
        kSkippedName,
        "reason=\"" + std::string(segment::SkipName(static_cast<segment::Skip>(r))) + "\"",
        static_cast<double>(skipped[r]));
  }
}

std::string SharedSegment::Render(Format format) const {
  // One allocation per scrape: what the last one needed, plus room to grow (growing a large
  // string by doubling costs more than the merge, in copies and fresh pages).
  const size_t hint = impl_->last_render_bytes.load(std::memory_order_relaxed);
  std::string out;
  out.reserve(hint + hint / 8 + 4096);
  ExpositionWriter writer(&out, format, FloatStyle::kPython);
  Render(writer);
  writer.Finish();
  impl_->last_render_bytes.store(out.size(), std::memory_order_relaxed);
  return out;
}

}  // namespace modelmetrics
