#include "modelmetrics/scrape.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/number.h"

namespace modelmetrics {
namespace {

constexpr std::string_view kTotal = "_total";

bool Valid(double v) { return std::isfinite(v) && v >= 0; }

// The value series of a gauge or counter: `x` or `x_total`, never `x_created`.
bool IsValueSeries(const MetricFamily& family, const MetricSample& s) {
  return s.name == family.name ||
         (family.type == MetricType::kCounter && s.name.size() == family.name.size() + 6 &&
          s.name.ends_with(kTotal));
}

// PromQL's matching: an absent label reads as "".
bool Matches(const MetricSample& s, std::span<const LabelMatch> match) {
  for (const LabelMatch& m : match) {
    std::string_view value;
    for (const auto& [k, v] : s.labels) {
      if (k == m.name) {
        value = v;
        break;
      }
    }
    if ((value == m.value) == m.negate) return false;
  }
  return true;
}

// The series identity Prometheus uses: the sample name and its labels, in any order. Labels
// are visited in name order without copying them (exporters write few labels per series).
template <typename Visit>
void ForEachLabelInOrder(const MetricSample& s, Visit visit) {
  constexpr size_t kInline = 32;
  const size_t n = s.labels.size();
  std::array<uint32_t, kInline> inline_order;
  std::vector<uint32_t> heap_order;
  uint32_t* order = inline_order.data();
  if (n > kInline) {
    heap_order.resize(n);
    order = heap_order.data();
  }
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order, order + n,
            [&s](uint32_t a, uint32_t b) { return s.labels[a].first < s.labels[b].first; });
  for (size_t i = 0; i < n; ++i) visit(s.labels[order[i]]);
}

uint64_t SeriesHash(const MetricSample& s) {
  const std::hash<std::string_view> hash;
  uint64_t h = hash(s.name);
  const auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  ForEachLabelInOrder(s, [&](const LabelPair& label) {
    mix(hash(label.first));
    mix(hash(label.second));
  });
  return h;
}

bool SameSeries(const MetricSample& a, const MetricSample& b) {
  if (a.name != b.name || a.labels.size() != b.labels.size()) return false;
  std::vector<const LabelPair*> left, right;
  ForEachLabelInOrder(a, [&](const LabelPair& label) { left.push_back(&label); });
  ForEachLabelInOrder(b, [&](const LabelPair& label) { right.push_back(&label); });
  for (size_t i = 0; i < left.size(); ++i) {
    if (*left[i] != *right[i]) return false;
  }
  return true;
}

// `name{a="1",b="2"}` for an error message, cut short.
std::string SeriesText(const MetricSample& s) {
  std::string text = s.name;
  if (!s.labels.empty()) {
    text += '{';
    for (size_t i = 0; i < s.labels.size(); ++i) {
      if (i > 0) text += ',';
      text += s.labels[i].first + "=\"" + s.labels[i].second + '"';
    }
    text += '}';
  }
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return text;
}

}  // namespace

bool Scrape::Parse(std::string_view body, const ScrapeOptions& options, std::string* error) {
  families_.clear();
  index_.clear();
  ParseOptions parse;
  parse.format = options.format;
  parse.strict = true;
  parse.check_filtered = true;  // a syntax error anywhere fails the read, as upstream's does
  parse.limits = options.limits;
  for (const std::string& name : options.families) {
    parse.families.push_back(name);
    parse.families.push_back(name + std::string(kTotal));
    if (name.ends_with(kTotal)) parse.families.push_back(name.substr(0, name.size() - 6));
  }
  std::vector<ParseError> errors;
  families_ = ParseFamilies(body, parse, &errors);
  if (!errors.empty()) {
    families_.clear();
    if (error != nullptr) *error = errors.front().ToString();
    return false;
  }
  if (!CheckUnique(error)) return false;
  for (size_t i = 0; i < families_.size(); ++i) index_.emplace(families_[i].name, i);
  return true;
}

bool Scrape::Assign(std::vector<MetricFamily> families, std::string* error) {
  families_ = std::move(families);
  index_.clear();
  if (!CheckUnique(error)) return false;
  for (size_t i = 0; i < families_.size(); ++i) index_.emplace(families_[i].name, i);
  return true;
}

// A series twice in one scrape is ambiguous (which value is current?); Prometheus rejects the
// whole scrape, and so does this, whichever source the families came from.
bool Scrape::CheckUnique(std::string* error) {
  size_t samples = 0;
  for (const MetricFamily& family : families_) samples += family.samples.size();
  std::unordered_multimap<uint64_t, const MetricSample*> seen;
  seen.reserve(samples);
  for (const MetricFamily& family : families_) {
    for (const MetricSample& sample : family.samples) {
      const uint64_t hash = SeriesHash(sample);
      const auto [first, last] = seen.equal_range(hash);
      for (auto it = first; it != last; ++it) {
        if (!SameSeries(*it->second, sample)) continue;  // a hash collision only
        const std::string series = SeriesText(sample);
        families_.clear();
        if (error != nullptr) *error = "duplicate series " + series;
        return false;
      }
      seen.emplace(hash, &sample);
    }
  }
  return true;
}

const MetricFamily* Scrape::FindExact(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &families_[it->second];
}

std::array<const MetricFamily*, 3> Scrape::Spellings(std::string_view name) const {
  return {
      FindExact(name), FindExact(std::string(name) + std::string(kTotal)),
      name.ends_with(kTotal) ? FindExact(name.substr(0, name.size() - kTotal.size())) : nullptr};
}

const MetricFamily* Scrape::Find(std::string_view name) const {
  if (const MetricFamily* f = FindExact(name)) return f;
  if (const MetricFamily* f = FindExact(std::string(name) + std::string(kTotal))) return f;
  if (name.ends_with(kTotal)) return FindExact(name.substr(0, name.size() - kTotal.size()));
  return nullptr;
}

std::optional<Scrape::Total> Scrape::SumOf(const MetricFamily& family,
                                           std::span<const LabelMatch> match) const {
  if (family.type != MetricType::kGauge && family.type != MetricType::kCounter) return std::nullopt;
  Total total;
  for (const MetricSample& s : family.samples) {
    if (!IsValueSeries(family, s) || !Valid(s.value) || !Matches(s, match)) continue;
    total.sum += s.value;
    total.series += 1;
  }
  return total.series > 0 ? std::optional<Total>(total) : std::nullopt;
}

std::optional<Scrape::Total> Scrape::TotalOf(std::string_view name,
                                             std::span<const LabelMatch> match) const {
  for (const MetricFamily* f : Spellings(name)) {
    if (f == nullptr) continue;
    if (auto total = SumOf(*f, match)) return total;
  }
  return std::nullopt;
}

std::optional<double> Scrape::Sum(std::string_view name, std::span<const LabelMatch> match) const {
  const std::optional<Total> total = TotalOf(name, match);
  return total ? std::optional<double>(total->sum) : std::nullopt;
}

std::optional<double> Scrape::Mean(std::string_view name, std::span<const LabelMatch> match) const {
  const std::optional<Total> total = TotalOf(name, match);
  return total ? std::optional<double>(total->sum / total->series) : std::nullopt;
}

std::optional<double> Scrape::InvalidValue(std::string_view name,
                                           std::span<const LabelMatch> match) const {
  if (const MetricFamily* f = FindExact(name); f != nullptr && f->type == MetricType::kHistogram) {
    for (const MetricSample& s : f->samples) {
      const bool total = s.name == f->name + "_sum" || s.name == f->name + "_count";
      if (total && !Valid(s.value) && Matches(s, match)) return s.value;
    }
    return std::nullopt;
  }
  for (const MetricFamily* f : Spellings(name)) {
    if (f == nullptr || (f->type != MetricType::kGauge && f->type != MetricType::kCounter)) {
      continue;
    }
    for (const MetricSample& s : f->samples) {
      if (IsValueSeries(*f, s) && !Valid(s.value) && Matches(s, match)) return s.value;
    }
  }
  return std::nullopt;
}

std::optional<std::string> Scrape::UnknownSplit(std::string_view name,
                                                std::span<const LabelMatch> match,
                                                std::span<const std::string_view> known) const {
  const MetricFamily* family = FindExact(name);
  if (family == nullptr || family->type != MetricType::kHistogram) {
    family = nullptr;
    for (const MetricFamily* f : Spellings(name)) {
      if (f != nullptr && SumOf(*f, match)) {
        family = f;
        break;
      }
    }
  }
  if (family == nullptr) return std::nullopt;
  // Per label outside `known`, in order of first sight: its first value, whether another value
  // was seen, and how many selected series carry it. Constant work per label of a series, so a
  // hostile body with many values or label names costs one pass.
  struct Seen {
    std::string_view first;
    bool split = false;
    size_t carried = 0;
  };
  std::unordered_map<std::string_view, Seen> seen;
  std::vector<std::string_view> order;
  size_t series = 0;
  for (const MetricSample& s : family->samples) {
    const bool counted = family->type == MetricType::kHistogram
                             ? s.name.size() > family->name.size()
                             : IsValueSeries(*family, s);
    if (!counted || !Matches(s, match)) continue;
    ++series;
    for (const LabelPair& label : s.labels) {
      const std::string_view name = label.first;
      if (name == "le" || std::find(known.begin(), known.end(), name) != known.end()) continue;
      const auto [it, added] = seen.try_emplace(name, Seen{label.second});
      if (added) order.push_back(name);
      it->second.split = it->second.split || it->second.first != label.second;
      ++it->second.carried;
    }
  }
  for (const std::string_view label : order) {
    const Seen& entry = seen.at(label);
    // A series without the label reads it as "".
    if (entry.split || (entry.carried < series && !entry.first.empty())) return std::string(label);
  }
  return std::nullopt;
}

std::optional<HistogramTotals> Scrape::Histogram(std::string_view name,
                                                 std::span<const LabelMatch> match) const {
  const MetricFamily* f = FindExact(name);
  if (f == nullptr || f->type != MetricType::kHistogram) return std::nullopt;
  const std::string sum_name = f->name + "_sum";
  const std::string count_name = f->name + "_count";
  const std::string bucket_name = f->name + "_bucket";
  HistogramTotals totals;
  bool has_sum = false, has_count = false;
  std::map<double, double> buckets;
  for (const MetricSample& s : f->samples) {
    if (!Matches(s, match)) continue;
    if (s.name == sum_name) {
      totals.sum += s.value;
      has_sum = true;
    } else if (s.name == count_name) {
      totals.count += s.value;
      has_count = true;
    } else if (s.name == bucket_name) {
      for (const auto& [k, v] : s.labels) {
        double bound;
        if (k == "le" && format::ParseValue(v, &bound) && !std::isnan(bound)) {
          buckets[bound] += s.value;
        }
      }
    }
  }
  if (!has_sum || !has_count || !Valid(totals.sum) || !Valid(totals.count)) return std::nullopt;
  totals.buckets.assign(buckets.begin(), buckets.end());
  return totals;
}

namespace {

// The values of `by` in `s`'s labels, in `by` order; false when one is missing.
bool GroupOf(const MetricSample& s, std::span<const std::string_view> by,
             Scrape::LabelValues* out) {
  out->assign(by.size(), std::string());
  for (size_t i = 0; i < by.size(); ++i) {
    bool found = false;
    for (const auto& [k, v] : s.labels) {
      if (k == by[i]) {
        (*out)[i] = v;
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

}  // namespace

std::map<Scrape::LabelValues, double> Scrape::SumBy(std::string_view name,
                                                    std::span<const std::string_view> by) const {
  std::map<LabelValues, double> sums;
  for (const MetricFamily* f : Spellings(name)) {
    if (f == nullptr || (f->type != MetricType::kGauge && f->type != MetricType::kCounter)) {
      continue;
    }
    LabelValues group;
    for (const MetricSample& s : f->samples) {
      if (!IsValueSeries(*f, s) || !Valid(s.value) || !GroupOf(s, by, &group)) continue;
      sums[group] += s.value;
    }
    if (!sums.empty()) break;  // the first spelling with a valid sample, as Sum() takes
  }
  return sums;
}

std::map<Scrape::LabelValues, HistogramTotals> Scrape::HistogramBy(
    std::string_view name, std::span<const std::string_view> by) const {
  std::map<LabelValues, HistogramTotals> groups;
  const MetricFamily* f = FindExact(name);
  if (f == nullptr || f->type != MetricType::kHistogram) return groups;
  const std::string sum_name = f->name + "_sum";
  const std::string count_name = f->name + "_count";
  std::map<LabelValues, std::pair<bool, bool>> seen;  // has _sum, has _count
  LabelValues group;
  for (const MetricSample& s : f->samples) {
    const bool is_sum = s.name == sum_name;
    if ((!is_sum && s.name != count_name) || !GroupOf(s, by, &group)) continue;
    HistogramTotals& totals = groups[group];
    (is_sum ? totals.sum : totals.count) += s.value;
    (is_sum ? seen[group].first : seen[group].second) = true;
  }
  std::erase_if(groups, [&seen](const auto& g) {
    const auto [has_sum, has_count] = seen[g.first];
    return !has_sum || !has_count || !Valid(g.second.sum) || !Valid(g.second.count);
  });
  return groups;
}

}  // namespace modelmetrics
