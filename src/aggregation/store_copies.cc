// See store_copies.h.
#include "store_copies.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

namespace modelmetrics::deployment {
namespace {

using Key = std::vector<std::string_view>;

std::string_view LabelOf(const StoreSeries& series, std::string_view name) {
  for (const auto& [key, value] : series.labels) {
    if (key == name) return value;
  }
  return {};
}

Key ValuesOf(const StoreSeries& series, std::span<const std::string_view> names) {
  Key key;
  key.reserve(names.size());
  for (const std::string_view name : names) key.push_back(LabelOf(series, name));
  return key;
}

// The newest sample no later than `now_ms`; the lowest int64 when there is none.
int64_t Newest(const StoreSeries& series, int64_t now_ms) {
  int64_t newest = std::numeric_limits<int64_t>::min();
  for (const StoreSample& sample : series.samples) {
    if (sample.ms <= now_ms) newest = std::max(newest, sample.ms);
  }
  return newest;
}

// The configured replica labels the exporter does not own.
std::vector<std::string_view> ReplicaLabels(const CopyRules& rules) {
  std::vector<std::string_view> out;
  for (const std::string& label : rules.replica_labels) {
    if (std::find(rules.exporter_labels.begin(), rules.exporter_labels.end(), label) ==
        rules.exporter_labels.end()) {
      out.push_back(label);
    }
  }
  return out;
}

// The series of the replica with the newest sample (ties: the smallest replica label values).
std::vector<const StoreSeries*> OneReplica(std::span<const StoreSeries* const> own,
                                           std::span<const std::string_view> replica,
                                           int64_t now_ms) {
  std::map<Key, int64_t> newest;
  for (const StoreSeries* s : own) {
    int64_t& t = newest.try_emplace(ValuesOf(*s, replica), std::numeric_limits<int64_t>::min())
                     .first->second;
    t = std::max(t, Newest(*s, now_ms));
  }
  auto chosen = newest.begin();
  for (auto it = newest.begin(); it != newest.end(); ++it) {
    if (it->second > chosen->second) chosen = it;
  }
  std::vector<const StoreSeries*> out;
  for (const StoreSeries* s : own) {
    if (newest.size() == 1 || ValuesOf(*s, replica) == chosen->first) out.push_back(s);
  }
  return out;
}

// `job "j" instance "i"`, then the other labels in which the two targets differ.
std::string TargetText(const StoreSeries& target, const StoreSeries& other,
                       std::span<const std::string_view> naming) {
  std::string text = fmt::format("job \"{}\" instance \"{}\"", LabelOf(target, "job"),
                                 LabelOf(target, "instance"));
  for (const std::string_view label : naming) {
    if (label == "job" || label == "instance") continue;
    if (LabelOf(target, label) == LabelOf(other, label)) continue;
    text += fmt::format(" {} \"{}\"", label, LabelOf(target, label));
  }
  return text;
}

}  // namespace

std::string SelectCopy(std::span<const StoreSeries* const> own, const CopyRules& rules,
                       int64_t now_ms, PodCopy* out) {
  const std::vector<std::string_view> replica = ReplicaLabels(rules);
  out->series = OneReplica(own, replica, now_ms);

  // The labels naming the target: those of its `up` series, or job and instance without one.
  std::set<std::string_view> target;
  bool have_up = false;
  for (const StoreSeries* s : out->series) {
    if (s->name != "up") continue;
    have_up = true;
    for (const auto& [key, value] : s->labels) target.insert(key);
  }
  if (!have_up) target = {"job", "instance"};
  for (const std::string_view label : {rules.namespace_label, rules.pod_label}) target.erase(label);
  for (const std::string_view label : rules.exporter_labels) target.erase(label);
  for (const std::string_view label : replica) target.erase(label);

  // One target: one `up` series (a target's own), or one job and instance among all series.
  const std::vector<std::string_view> naming(target.begin(), target.end());
  std::map<Key, const StoreSeries*> targets;
  for (const StoreSeries* s : out->series) {
    if (!have_up || s->name == "up") targets.try_emplace(ValuesOf(*s, naming), s);
  }
  if (targets.size() > 1) {
    const StoreSeries& a = *targets.begin()->second;
    const StoreSeries& b = *std::next(targets.begin())->second;
    return fmt::format(
        "the store holds the Pod's series from {} targets ({} and {}); select one with the "
        "source's extra selector",
        targets.size(), TargetText(a, b, naming), TargetText(b, a, naming));
  }
  out->target_labels.assign(naming.begin(), naming.end());
  out->target_labels.insert(out->target_labels.end(), replica.begin(), replica.end());
  return "";
}

}  // namespace modelmetrics::deployment
