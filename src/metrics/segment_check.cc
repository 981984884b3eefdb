// Checks of a SharedSegment's directory records. See segment_check.h.
#include "segment_check.h"

#include <cmath>
#include <set>

#include "base/text.h"
#include "names.h"
#include "segment_layout.h"

namespace modelmetrics::segment {
namespace {

std::vector<std::string> Split(std::string_view joined) {
  std::vector<std::string> out;
  for (;;) {
    const size_t end = joined.find('\xff');
    out.emplace_back(joined.substr(0, end));
    if (end == std::string_view::npos) return out;
    joined.remove_prefix(end + 1);
  }
}

Skip CheckLabelNames(const std::vector<std::string>& labels, MetricType type) {
  std::set<std::string_view> seen;
  for (const std::string& label : labels) {
    if (!metrics_internal::ValidLabelName(label) || !seen.insert(label).second ||
        (type == MetricType::kHistogram && label == "le")) {
      return Skip::kBadLabelNames;
    }
  }
  return Skip::kNone;
}

Skip CheckBuckets(const std::vector<double>& bounds) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
      return Skip::kBadBuckets;
    }
  }
  return Skip::kNone;
}

}  // namespace

std::string_view SkipName(Skip reason) {
  static constexpr std::string_view kNames[kSkipReasons] = {
      "none",      "out_of_bounds", "bad_type",  "bad_name",    "bad_label_names",
      "bad_text",  "bad_buckets",   "no_family", "label_count", "overlap",
      "duplicate", "scrape_budget"};
  const auto i = static_cast<size_t>(reason);
  return i < kSkipReasons ? kNames[i] : "unknown";
}

Skip CheckFamily(const SharedSegment::Impl& impl, const FamilyRecord& r, CheckedFamily* out) {
  if (!impl.ValidFamily(r)) {
    const auto type = static_cast<MetricType>(r.type);
    const bool known = (type == MetricType::kCounter || type == MetricType::kGauge ||
                        type == MetricType::kHistogram) &&
                       r.mode <= static_cast<uint8_t>(MultiprocessMode::kLiveMostRecent);
    return known ? Skip::kOutOfBounds : Skip::kBadType;
  }
  const auto type = static_cast<MetricType>(r.type);
  if (type != MetricType::kHistogram && r.bounds != 0) return Skip::kBadBuckets;
  CheckedFamily f;
  f.type = type;
  f.options.name = impl.Text(r.name);
  f.options.unit = impl.Text(r.unit);
  if (!metrics_internal::ValidMetricName(f.options.name) ||
      (!f.options.unit.empty() && !f.options.name.ends_with("_" + f.options.unit))) {
    return Skip::kBadName;
  }
  f.options.help = impl.Text(r.help);
  if (!base::IsValidUtf8(f.options.help)) return Skip::kBadText;
  // No series of more bounds fits a slot's cells: refused before its `le` texts are made.
  if (uint64_t{r.bounds} + 2 > impl.geometry.words_per_slot) return Skip::kOutOfBounds;
  if (r.labels.size > 0) f.options.labels = Split(impl.Text(r.labels));
  if (Skip s = CheckLabelNames(f.options.labels, type); s != Skip::kNone) return s;
  f.options.buckets.assign(impl.Bounds(r), impl.Bounds(r) + r.bounds);
  if (Skip s = CheckBuckets(f.options.buckets); s != Skip::kNone) return s;
  f.options.multiprocess_mode = static_cast<MultiprocessMode>(r.mode);
  *out = std::move(f);
  return Skip::kNone;
}

Skip SeriesCheck::Check(const SharedSegment::Impl& impl, const SeriesRecord& r,
                        const FamilyShape* family, std::vector<std::string>* values) {
  if (family == nullptr) return Skip::kNoFamily;
  const uint64_t words = CellWords(family->type, family->bounds);
  if (uint64_t{r.values.offset} + r.values.size > impl.geometry.arena_bytes ||
      uint64_t{r.cell} + words > impl.geometry.words_per_slot) {
    return Skip::kOutOfBounds;
  }
  // Appends lay series out one after another: a record reusing earlier cells is not one.
  if (r.cell < cell_end_) return Skip::kOverlap;
  const std::string_view text = impl.Text(r.values);
  std::vector<std::string> split;
  if (family->labels > 0) split = Split(text);
  // A family without labels has one label set, written as empty text.
  if (split.size() != family->labels || (family->labels == 0 && !text.empty())) {
    return Skip::kLabelCount;
  }
  for (const std::string& v : split) {
    if (v.size() > kMaxLabelValueBytes || !base::IsValidUtf8(v)) return Skip::kBadText;
  }
  std::string key(reinterpret_cast<const char*>(&r.family), sizeof(r.family));
  key.append(text);
  if (!keys_.insert(std::move(key)).second) return Skip::kDuplicate;
  cell_end_ = uint64_t{r.cell} + words;
  *values = std::move(split);
  return Skip::kNone;
}

uint64_t ScrapeBudget(const SharedSegment::Impl& impl) {
  return std::max<uint64_t>(uint64_t{64} << 20, uint64_t{impl.bytes} * kScrapeBudgetFactor);
}

}  // namespace modelmetrics::segment
