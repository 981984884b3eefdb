// See rank_copies.h.
#include "rank_copies.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace modelmetrics::deployment {
namespace {

// A copy's rank: its order label's value as a number when it is one, then as text.
using Rank = std::tuple<bool, double, std::string>;  // (not a number, number, text)

Rank RankOf(const MetricSample& sample, std::string_view order) {
  for (const auto& [name, value] : sample.labels) {
    if (name != order) continue;
    double number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    const bool numeric = error == std::errc() && end == value.data() + value.size();
    return {!numeric, numeric ? number : 0, value};
  }
  return {false, 0, ""};
}

// The sample's name and its labels but the copy labels, sorted: equal for the copies of one value.
std::string GroupOf(const MetricSample& sample, const RankCopies& copies) {
  std::vector<const LabelPair*> kept;
  for (const LabelPair& label : sample.labels) {
    if (std::find(copies.labels.begin(), copies.labels.end(), label.first) == copies.labels.end()) {
      kept.push_back(&label);
    }
  }
  std::sort(kept.begin(), kept.end(),
            [](const LabelPair* a, const LabelPair* b) { return a->first < b->first; });
  std::string group = sample.name;
  for (const LabelPair* label : kept) {
    // NUL cannot occur in a parsed name or value, so the encoding is unambiguous.
    group.append(1, '\0').append(label->first).append(1, '\0').append(label->second);
  }
  return group;
}

}  // namespace

Scrape OneCopyPerRank(const Scrape& scrape, const RankCopies& copies) {
  std::vector<MetricFamily> families = scrape.families();
  for (MetricFamily& family : families) {
    std::map<std::string, Rank> lowest;
    std::vector<std::pair<std::string, Rank>> keys;
    keys.reserve(family.samples.size());
    for (const MetricSample& sample : family.samples) {
      keys.emplace_back(GroupOf(sample, copies), RankOf(sample, copies.order));
      const auto [it, added] = lowest.try_emplace(keys.back().first, keys.back().second);
      if (!added) it->second = std::min(it->second, keys.back().second);
    }
    std::vector<MetricSample> kept;
    for (size_t i = 0; i < family.samples.size(); ++i) {
      if (keys[i].second == lowest.at(keys[i].first)) kept.push_back(std::move(family.samples[i]));
    }
    family.samples = std::move(kept);
  }
  Scrape out;
  std::string error;
  out.Assign(std::move(families), &error);  // a subset of a checked model: no duplicate
  return out;
}

}  // namespace modelmetrics::deployment
