#include "modelmetrics/scrape.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <unordered_set>

#include "format/number.h"

namespace modelmetrics {
namespace {

constexpr std::string_view kTotal = "_total";

bool Valid(double v) { return std::isfinite(v) && v >= 0; }

bool Matches(const MetricSample& s, std::span<const LabelMatch> match) {
  for (const LabelMatch& m : match) {
    bool found = false;
    for (const auto& [k, v] : s.labels) {
      if (k == m.name && v == m.value) {
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

// The series identity Prometheus uses: the sample name and its labels, in any order.
std::string SeriesKey(const MetricSample& s) {
  std::vector<const LabelPair*> labels;
  labels.reserve(s.labels.size());
  for (const LabelPair& label : s.labels) labels.push_back(&label);
  std::sort(labels.begin(), labels.end(),
            [](const LabelPair* a, const LabelPair* b) { return a->first < b->first; });
  std::string key = s.name;
  for (const LabelPair* label : labels) {
    // Length-prefixed, so no label text can forge another key.
    key += '\0' + std::to_string(label->first.size()) + ':' + label->first;
    key += std::to_string(label->second.size()) + ':' + label->second;
  }
  return key;
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
  // A series twice in one scrape is ambiguous (which value is current?); Prometheus rejects
  // the whole scrape, and so does this.
  std::unordered_set<std::string> seen;
  for (const MetricFamily& family : families_) {
    for (const MetricSample& sample : family.samples) {
      if (!seen.insert(SeriesKey(sample)).second) {
        const std::string series = SeriesText(sample);
        families_.clear();
        if (error != nullptr) *error = "duplicate series " + series;
        return false;
      }
    }
  }
  for (size_t i = 0; i < families_.size(); ++i) index_.emplace(families_[i].name, i);
  return true;
}

const MetricFamily* Scrape::FindExact(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &families_[it->second];
}

const MetricFamily* Scrape::Find(std::string_view name) const {
  if (const MetricFamily* f = FindExact(name)) return f;
  if (const MetricFamily* f = FindExact(std::string(name) + std::string(kTotal))) return f;
  if (name.ends_with(kTotal)) return FindExact(name.substr(0, name.size() - kTotal.size()));
  return nullptr;
}

std::optional<double> Scrape::SumOf(const MetricFamily& family,
                                    std::span<const LabelMatch> match) const {
  if (family.type != MetricType::kGauge && family.type != MetricType::kCounter) return std::nullopt;
  double sum = 0;
  bool found = false;
  for (const MetricSample& s : family.samples) {
    // The value series only: `x` or `x_total`, never `x_created`.
    const bool value_series = s.name == family.name ||
                              (family.type == MetricType::kCounter &&
                               s.name.size() == family.name.size() + 6 && s.name.ends_with(kTotal));
    if (!value_series || !Valid(s.value) || !Matches(s, match)) continue;
    sum += s.value;
    found = true;
  }
  return found ? std::optional<double>(sum) : std::nullopt;
}

std::optional<double> Scrape::Sum(std::string_view name, std::span<const LabelMatch> match) const {
  for (const MetricFamily* f :
       {FindExact(name), FindExact(std::string(name) + std::string(kTotal)),
        name.ends_with(kTotal) ? FindExact(name.substr(0, name.size() - kTotal.size()))
                               : nullptr}) {
    if (f == nullptr) continue;
    if (auto sum = SumOf(*f, match)) return sum;
  }
  return std::nullopt;
}

std::optional<HistogramTotals> Scrape::Histogram(std::string_view name) const {
  const MetricFamily* f = FindExact(name);
  if (f == nullptr || f->type != MetricType::kHistogram) return std::nullopt;
  const std::string sum_name = f->name + "_sum";
  const std::string count_name = f->name + "_count";
  const std::string bucket_name = f->name + "_bucket";
  HistogramTotals totals;
  bool has_sum = false, has_count = false;
  std::map<double, double> buckets;
  for (const MetricSample& s : f->samples) {
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

}  // namespace modelmetrics
