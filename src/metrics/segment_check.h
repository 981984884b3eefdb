// The checks a record of a SharedSegment's directory passes before a process uses it, whoever
// wrote it: every region reference inside the segment (ValidFamily, ValidSeries in
// segment_layout.h), then the content: names in the exposition grammar, text valid UTF-8 and
// label values within kMaxLabelValueBytes, histogram bounds finite and increasing, a series'
// cells after every earlier series' (as appends lay them out), one record per label set. A
// record that fails is skipped, with the reason, so one bad record costs its own family or
// series and never more than the bytes the segment holds. Private to src/metrics.
//
// Thread-safety: CheckFamily is a pure read of a copied record; a SeriesCheck belongs to one
// pass over the series (the caller's lock).
#ifndef MODELMETRICS_METRICS_SEGMENT_CHECK_H_
#define MODELMETRICS_METRICS_SEGMENT_CHECK_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "modelmetrics/metrics.h"
#include "modelmetrics/shared_segment.h"

namespace modelmetrics::segment {

struct FamilyRecord;  // segment_layout.h
struct SeriesRecord;

// Why a record was skipped.
enum class Skip : uint8_t {
  kNone,
  kOutOfBounds,    // a text, the bounds or the cells outside their region
  kBadType,        // not a counter, gauge or histogram; an unknown multiprocess mode
  kBadName,        // the family or unit name breaks the grammar (or the unit is no suffix)
  kBadLabelNames,  // a label name breaks the grammar, repeats, or is `le` on a histogram
  kBadText,        // HELP or a label value is not UTF-8, or a value is too long
  kBadBuckets,     // histogram bounds not finite and strictly increasing
  kNoFamily,       // a series of a family that was skipped or is not published
  kLabelCount,     // a series with another number of values than its family has labels
  kOverlap,        // cells that overlap an earlier series'
  kDuplicate,      // a label set of its family published before
  kScrapeBudget,   // past the bytes one scrape may render (ScrapeBudget)
};
inline constexpr size_t kSkipReasons = 12;
std::string_view SkipName(Skip reason);  // "out_of_bounds", ...

// A family record made usable: its definition as a registration would give it.
struct CheckedFamily {
  FamilyOptions options;
  MetricType type = MetricType::kUntyped;
};

// Checks a copy of a family record; kNone and *out filled when it passes.
Skip CheckFamily(const SharedSegment::Impl& impl, const FamilyRecord& record, CheckedFamily* out);

// What a series' check needs of its (checked) family.
struct FamilyShape {
  MetricType type = MetricType::kUntyped;
  size_t labels = 0;
  size_t bounds = 0;
};

// The series of one pass over the directory, in publication order.
class SeriesCheck {
 public:
  // Checks a copy of a series record of `family` (null when its family was skipped or is not
  // published); kNone and *values filled when it passes.
  Skip Check(const SharedSegment::Impl& impl, const SeriesRecord& record, const FamilyShape* family,
             std::vector<std::string>* values);

 private:
  uint64_t cell_end_ = 0;  // where the last passing series' cells end
  std::unordered_set<std::string> keys_;
};

// Counts of skipped records by reason.
using SkipCounts = std::array<uint64_t, kSkipReasons>;

// The bytes one scrape renders at most: kScrapeBudgetFactor times the segment, at least 64 MiB.
// An honest segment renders less: its most verbose line, a per-process gauge's (`all` mode,
// about 200 bytes), stands on 16 bytes of cells of its own, and every cell renders at most once.
inline constexpr uint64_t kScrapeBudgetFactor = 16;
uint64_t ScrapeBudget(const SharedSegment::Impl& impl);

}  // namespace modelmetrics::segment

#endif  // MODELMETRICS_METRICS_SEGMENT_CHECK_H_
