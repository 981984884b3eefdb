// The scrape model: the families of one target's exposition that a consumer asked for, with the
// typed look-ups the deployment aggregator needs.
//
// Only wanted families are materialised; the other families' lines are still checked, so any
// syntax error fails the whole parse (the deployment spec's rule for a Pod's read). A series
// (sample name and label set, in any label order) that appears twice among the wanted families
// fails it too, as Prometheus fails such a scrape: `duplicate series name{labels}`. A wanted name
// `x` also selects `x_total` (text counters) and, for a name ending in `_total`, the OpenMetrics
// family without it, so callers name a counter either way.
//
// Look-ups are TYPE-aware: Sum() reads gauges and counters only (an untyped family is absent),
// Histogram() reads histograms only. Values that are NaN, infinite or negative are skipped, as the
// deployment spec requires.
//
// Thread-safety: immutable after Parse(); concurrent const calls are safe.
#ifndef MODELMETRICS_SCRAPE_H_
#define MODELMETRICS_SCRAPE_H_

#include <array>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "modelmetrics/exposition.h"
#include "modelmetrics/parser.h"

namespace modelmetrics {

struct ScrapeOptions {
  std::optional<Format> format;  // unset: detect
  ParseLimits limits;
  std::vector<std::string> families;  // wanted names; empty: all
};

// A label matcher with PromQL's meaning: a series without the label reads it as "", so
// {priority=""} selects the series that carry no priority label or an empty one; with `negate`,
// the series whose value differs ({streaming!="false"}: every series but the non-streaming ones).
struct LabelMatch {
  std::string_view name;
  std::string_view value;
  bool negate = false;
};

struct HistogramTotals {
  double sum = 0;
  double count = 0;
  // (upper bound, cumulative count) summed over label sets, by increasing bound.
  std::vector<std::pair<double, double>> buckets;
};

class Scrape {
 public:
  // Parses `body` in strict mode. On the first error returns false, sets `*error` to
  // "line:column: message" and leaves the model empty.
  bool Parse(std::string_view body, const ScrapeOptions& options, std::string* error);

  // A model of families built elsewhere (a store's samples, typed by their reader): checked for
  // duplicate series and indexed as Parse() would. On a duplicate returns false with `*error` =
  // "duplicate series name{labels}" and leaves the model empty.
  bool Assign(std::vector<MetricFamily> families, std::string* error);

  // The family `name`, else `name_total`, else (for `x_total`) `x`; null when none was parsed.
  const MetricFamily* Find(std::string_view name) const;

  // Sum of a gauge's or counter's values over the series that every `match` selects; tries
  // `name`, then `name_total`, taking the first with at least one valid sample. nullopt when no
  // valid sample exists.
  std::optional<double> Sum(std::string_view name, std::span<const LabelMatch> match = {}) const;
  // Sum()'s series, averaged: for a gauge each series of which is one part's fraction (a data-
  // parallel rank's share of its own KV cache), or one copy of the same fraction.
  std::optional<double> Mean(std::string_view name, std::span<const LabelMatch> match = {}) const;

  // `_sum`, `_count` and buckets of a histogram summed over the label sets that every `match`
  // selects; nullopt when the family is absent, not a histogram, has no selected `_sum`/`_count`,
  // or either total is not finite and non-negative.
  std::optional<HistogramTotals> Histogram(std::string_view name,
                                           std::span<const LabelMatch> match = {}) const;

  // Why Sum() or Histogram() of `name` (with the same `match`) found nothing though the family is
  // there: the first value that is NaN, infinite or negative among the selected series (a gauge's
  // or counter's value series, a histogram's `_sum`/`_count`). nullopt when there is no such
  // value.
  std::optional<double> InvalidValue(std::string_view name,
                                     std::span<const LabelMatch> match = {}) const;

  // A label outside `known` (a histogram's `le` aside) that takes two or more values among the
  // series Sum() or Histogram() of `name` with `match` reads, a series without it reading "": the
  // first such label in series order, or nullopt. For a reader that knows which labels of a family
  // it combines: another label that splits the series is of unknown meaning (parts, a total
  // beside them, or copies), where a label with one value everywhere splits nothing.
  std::optional<std::string> UnknownSplit(std::string_view name, std::span<const LabelMatch> match,
                                          std::span<const std::string_view> known) const;

  // Sum() and Histogram() per distinct tuple of the `by` labels' values (in `by` order); a series
  // lacking one of them is skipped. Histogram groups carry no buckets; a group whose `_sum` or
  // `_count` is missing or invalid is left out. Empty when the family is absent or mistyped.
  using LabelValues = std::vector<std::string>;
  std::map<LabelValues, double> SumBy(std::string_view name,
                                      std::span<const std::string_view> by) const;
  std::map<LabelValues, HistogramTotals> HistogramBy(std::string_view name,
                                                     std::span<const std::string_view> by) const;

  const std::vector<MetricFamily>& families() const { return families_; }

 private:
  // False (model emptied, `*error` set) when a series appears twice.
  bool CheckUnique(std::string* error);
  const MetricFamily* FindExact(std::string_view name) const;
  // The families a value of `name` may be read from, in order: `name`, `name_total`, and `name`
  // without `_total` (null where absent).
  std::array<const MetricFamily*, 3> Spellings(std::string_view name) const;
  struct Total {
    double sum = 0;
    int series = 0;  // valid value series summed
  };
  std::optional<Total> SumOf(const MetricFamily& family, std::span<const LabelMatch> match) const;
  std::optional<Total> TotalOf(std::string_view name, std::span<const LabelMatch> match) const;

  std::vector<MetricFamily> families_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace modelmetrics

#endif  // MODELMETRICS_SCRAPE_H_
