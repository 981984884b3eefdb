// A scrape of a SharedSegment: every series merged over process slots, as prometheus_client's
// MultiProcessCollector merges its files. Lock-free (see segment_layout.h).
#include <algorithm>
#include <bit>
#include <cmath>

#include "segment_layout.h"
#include "shared_cells.h"

namespace modelmetrics {
namespace {

using segment::FamilyRecord;
using segment::SeriesRecord;

double AsDouble(uint64_t bits) { return std::bit_cast<double>(bits); }

struct SlotView {
  uint32_t index;
  int pid;
  uint64_t generation;
  bool live;  // running, and not named by mark_process_dead
};

// The slots ever taken, with their liveness now.
std::vector<SlotView> Slots(const SharedSegment::Impl& impl) {
  std::vector<SlotView> out;
  for (uint32_t i = 0; i < impl.header->process_slots; ++i) {
    const segment::ProcessSlot& s = impl.slots[i];
    if (s.state.load(std::memory_order_acquire) == 0) continue;
    const bool marked = (s.flags.load(std::memory_order_relaxed) & segment::kMarkedDead) != 0;
    out.push_back({i, s.pid.load(std::memory_order_relaxed),
                   s.generation.load(std::memory_order_relaxed), !marked && impl.Alive(i)});
  }
  return out;
}

std::vector<std::string> Split(std::string_view joined, size_t expected) {
  std::vector<std::string> out;
  if (expected == 0) return out;
  for (;;) {
    const size_t end = joined.find('\xff');
    out.emplace_back(joined.substr(0, end));
    if (end == std::string_view::npos) break;
    joined.remove_prefix(end + 1);
  }
  return out;
}

void AddHistogram(const std::atomic<uint64_t>* cell, size_t buckets, MergedChild* child) {
  const Histogram::Snapshot snap = metrics_internal::shared_cells::Read(cell, buckets);
  for (size_t b = 0; b < buckets; ++b) child->buckets[b] += snap.buckets[b];
  child->sum += snap.sum;
}

// A gauge series: one child per process (all modes) or one merged value; none when no process
// that counts has set it.
void MergeGauge(const SharedSegment::Impl& impl, const SeriesRecord& r, MultiprocessMode mode,
                const std::vector<SlotView>& slots, const std::vector<std::string>& values,
                std::vector<MergedChild>* out) {
  const bool live_only = IsLiveMode(mode);
  const bool per_process = mode == MultiprocessMode::kAll || mode == MultiprocessMode::kLiveAll;
  MergedChild merged;
  merged.label_values = values;
  bool any = false;
  double best_stamp = -1;
  std::vector<int> pids;
  for (const SlotView& s : slots) {
    if (live_only && !s.live) continue;
    const std::atomic<uint64_t>* cell = impl.SlotCells(s.index) + r.cell;
    const double stamp = AsDouble(cell[1].load(std::memory_order_acquire));
    if (stamp == 0) continue;  // never set by this slot's process
    const double v = AsDouble(cell[0].load(std::memory_order_relaxed));
    if (per_process) {
      // A pid seen twice (reused by the system): the first slot in order keeps it.
      if (std::find(pids.begin(), pids.end(), s.pid) != pids.end()) continue;
      pids.push_back(s.pid);
      out->push_back({.label_values = values, .pid = s.pid, .value = v});
      continue;
    }
    switch (mode) {
      case MultiprocessMode::kMin:
      case MultiprocessMode::kLiveMin:
        merged.value = any ? std::min(merged.value, v) : v;
        break;
      case MultiprocessMode::kMax:
      case MultiprocessMode::kLiveMax:
        merged.value = any ? std::max(merged.value, v) : v;
        break;
      case MultiprocessMode::kSum:
      case MultiprocessMode::kLiveSum:
        merged.value += v;
        break;
      default:  // most recent
        if (stamp > best_stamp) {
          best_stamp = stamp;
          merged.value = v;
        }
        break;
    }
    any = true;
  }
  if (any) out->push_back(std::move(merged));
}

MergedFamily FamilyOf(const SharedSegment::Impl& impl, const FamilyRecord& f) {
  MergedFamily family;
  family.type = static_cast<MetricType>(f.type);
  family.options.name = impl.Text(f.name);
  family.options.help = impl.Text(f.help);
  family.options.unit = impl.Text(f.unit);
  const std::string_view labels = impl.Text(f.labels);
  family.options.labels = Split(labels, labels.empty() ? 0 : 1);
  family.options.buckets.assign(impl.Bounds(f), impl.Bounds(f) + f.bounds);
  family.options.multiprocess_mode = static_cast<MultiprocessMode>(f.mode);
  return family;
}

}  // namespace

std::vector<MergedFamily> SharedSegment::Collect() const {
  const Impl& impl = *impl_;
  const uint32_t families = impl.header->families.load(std::memory_order_acquire);
  const uint32_t series = impl.header->series.load(std::memory_order_acquire);
  const std::vector<SlotView> slots = Slots(impl);
  std::vector<std::vector<uint32_t>> by_family(families);
  for (uint32_t s = 0; s < series; ++s) {
    if (impl.series[s].family < families) by_family[impl.series[s].family].push_back(s);
  }
  std::vector<MergedFamily> out;
  out.reserve(families);
  for (uint32_t fi = 0; fi < families; ++fi) {
    const FamilyRecord& f = impl.families[fi];
    MergedFamily family = FamilyOf(impl, f);
    const size_t label_count = family.options.labels.size();
    for (uint32_t si : by_family[fi]) {
      const SeriesRecord& r = impl.series[si];
      std::vector<std::string> values = Split(impl.Text(r.values), label_count);
      if (values.size() != label_count) continue;  // not a record of this family's shape
      if (family.type == MetricType::kGauge) {
        MergeGauge(impl, r, family.options.multiprocess_mode, slots, values, &family.children);
        continue;
      }
      MergedChild child;
      child.label_values = std::move(values);
      if (family.type == MetricType::kCounter) {
        for (const SlotView& s : slots) {
          child.value += AsDouble(impl.SlotCells(s.index)[r.cell].load(std::memory_order_relaxed));
        }
      } else {
        child.buckets.assign(f.bounds + 1, 0);
        for (const SlotView& s : slots) {
          AddHistogram(impl.SlotCells(s.index) + r.cell, f.bounds + 1, &child);
        }
        for (uint64_t c : child.buckets) child.count += c;
      }
      family.children.push_back(std::move(child));
    }
    out.push_back(std::move(family));
  }
  return out;
}

namespace {

// `name="value"` pairs sorted by name (prometheus_client's writer sorts them), with `pid` and
// `le` placed where they sort.
std::string LabelText(const MergedFamily& family, const MergedChild& child, const char* extra,
                      std::string_view extra_value) {
  std::vector<std::pair<std::string_view, std::string_view>> pairs;
  for (size_t i = 0; i < family.options.labels.size(); ++i) {
    pairs.emplace_back(family.options.labels[i], child.label_values[i]);
  }
  std::string pid;
  if (child.pid != 0) {
    pid = std::to_string(child.pid);
    pairs.emplace_back("pid", pid);
  }
  if (extra != nullptr) pairs.emplace_back(extra, extra_value);
  std::sort(pairs.begin(), pairs.end());
  std::string text;
  for (const auto& [name, value] : pairs) {
    if (!text.empty()) text.push_back(',');
    text.append(name);
    text.append("=\"");
    AppendEscapedLabelValue(&text, value);
    text.push_back('"');
  }
  return text;
}

void RenderFamily(ExpositionWriter& writer, const MergedFamily& family) {
  const std::string& name = family.options.name;
  const bool counter = family.type == MetricType::kCounter;
  const bool om = writer.format() == Format::kOpenMetrics;
  writer.BeginFamily(counter && !om ? name + "_total" : name, family.type, family.options.help,
                     !family.options.help.empty(), family.options.unit);
  for (const MergedChild& child : family.children) {
    if (family.type != MetricType::kHistogram) {
      writer.SampleWithLabelText(counter ? name + "_total" : name,
                                 LabelText(family, child, nullptr, {}), child.value);
      continue;
    }
    uint64_t cumulative = 0;
    std::string le;
    for (size_t b = 0; b < child.buckets.size(); ++b) {
      cumulative += child.buckets[b];
      le.clear();
      if (b < family.options.buckets.size()) {
        AppendPythonClientDouble(&le, family.options.buckets[b]);
      } else {
        le = "+Inf";
      }
      writer.SampleWithLabelText(name + "_bucket", LabelText(family, child, "le", le),
                                 static_cast<double>(cumulative));
    }
    const std::string labels = LabelText(family, child, nullptr, {});
    writer.SampleWithLabelText(name + "_count", labels, static_cast<double>(child.count));
    writer.SampleWithLabelText(name + "_sum", labels, child.sum);
  }
}

}  // namespace

void SharedSegment::Render(ExpositionWriter& writer) const {
  // As MultiProcessCollector: a family no process gave a sample is not written.
  for (const MergedFamily& family : Collect()) {
    if (!family.children.empty()) RenderFamily(writer, family);
  }
}

std::string SharedSegment::Render(Format format) const {
  std::string out;
  ExpositionWriter writer(&out, format, FloatStyle::kPython);
  Render(writer);
  writer.Finish();
  return out;
}

}  // namespace modelmetrics
