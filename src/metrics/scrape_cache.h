// What a process keeps between scrapes of a SharedSegment: the directory's records read, checked
// and turned into text once (names, `le` strings, each series' escaped and sorted label text),
// grouped by family. Records never change once published, so entries are only appended; a scrape
// uses only these copies, so a record changed later (by a faulty process) cannot send it out of
// bounds. Private to src/metrics.
//
// Thread-safety: guarded by SharedSegment::Impl::render_mu (taken by Collect and Render, and
// around fork so a child never inherits it held).
#ifndef MODELMETRICS_METRICS_SCRAPE_CACHE_H_
#define MODELMETRICS_METRICS_SCRAPE_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "modelmetrics/metrics.h"
#include "segment_check.h"

namespace modelmetrics::segment {

struct FamilyText {
  FamilyOptions options;  // name, help, unit, label names, bounds, mode
  MetricType type = MetricType::kUntyped;
  bool valid = false;              // the record passed CheckFamily
  std::string sample;              // counters: name_total; others: name
  std::string bucket, count, sum;  // histograms: the sample names
  std::vector<std::string> le;     // histograms: `le` values, +Inf last
  std::vector<uint32_t> series;    // its series, in registration order
};

struct SeriesText {
  uint32_t cell = 0;                // word offset in a slot (checked against the geometry)
  std::vector<std::string> values;  // label values, declaration order
  // The sorted label text split where the family's extra label sorts (`le` for histograms,
  // `pid` for per-process gauges; counters: all in `before`).
  std::string before, after;
  bool valid = false;     // the record passed SeriesCheck
  size_t line_bytes = 0;  // the most one of its sample lines takes
};

struct ScrapeCache {
  std::vector<FamilyText> families;
  std::vector<SeriesText> series;
  SeriesCheck check;         // the series read so far (overlaps, repeated label sets)
  SkipCounts skipped = {};   // records skipped, by reason (shown by Render when any)
  uint64_t budget_used = 0;  // bytes the valid series render at most, summed
};

}  // namespace modelmetrics::segment

#endif  // MODELMETRICS_METRICS_SCRAPE_CACHE_H_
