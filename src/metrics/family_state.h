// A family's children and what rendering them needs (FamilyBase::State), shared by the files that
// implement FamilyBase: registry.cc (children, rendering) and family_share.cc (joining a
// SharedSegment, at once or later). Private to src/metrics.
//
// Invariants: a child's series is never freed before its family (removed children move to the
// graveyard, so handles stay valid); each child's label text is built once, at creation.
#ifndef MODELMETRICS_METRICS_FAMILY_STATE_H_
#define MODELMETRICS_METRICS_FAMILY_STATE_H_

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "base/mutex.h"
#include "modelmetrics/metrics.h"
#include "series.h"

namespace modelmetrics::metrics_internal {

using AnySeries = std::variant<std::unique_ptr<CounterSeries>, std::unique_ptr<GaugeSeries>,
                               std::unique_ptr<HistogramSeries>>;

// What a series recorded in this process: a counter's total, a gauge's value (NaN: none yet),
// a histogram's counts and sum.
struct Recorded {
  double counter = 0;
  double gauge = std::nan("");
  Histogram::Snapshot histogram;
};

// Adds to `cell` (a series' cells in a SharedSegment) what `now` holds beyond `*copied`, then
// sets *copied = now. A gauge's value is written when it changed, stamped as its writes are.
void CopyNew(MetricType type, bool stamped, const Recorded& now, Recorded* copied,
             std::atomic<uint64_t>* cell);

struct FamilyBase::State {
  struct Child {
    std::string key;  // the label values, each followed by '\xff'
    AnySeries series;
    std::string before_le;  // label text sorting before `le` (escaped, comma-joined)
    std::string after_le;   // label text sorting after `le`
    double created = 0;     // wall seconds (prometheus_client's `_created`)

    void* raw() const {
      return std::visit([](const auto& p) -> void* { return p.get(); }, series);
    }
  };
  // Whether the family's values are in its SharedSegment (FamilyBase::Share).
  enum class Join : uint8_t {
    kNone,     // no segment: every child records in this process
    kJoined,   // the family is in the segment; new children get cells there
    kWaiting,  // a stopped process held the segment's directory: children wait (Deferred)
  };
  // A child made while its cell could not be registered: it records in this process (its
  // series' own storage, as an unshared family's), and what it records is copied into `cell`,
  // once registered, from the pending-shares thread (pending_shares.h). What was copied so far
  // is kept, so each copy adds only what is new: exact for counters and histograms; a gauge's
  // latest value is written.
  struct Deferred {
    Child* child = nullptr;
    SharedCell cell;  // null until registered
    Recorded copied;
  };

  mutable base::Mutex mu;
  std::vector<std::unique_ptr<Child>> children GUARDED_BY(mu);         // live, in creation order
  std::vector<std::unique_ptr<Child>> graveyard GUARDED_BY(mu);        // removed; for stale handles
  std::unordered_map<std::string_view, Child*> by_key GUARDED_BY(mu);  // views of children's keys
  std::vector<size_t> sorted_labels;                                   // label indices by name
  size_t le_position = 0;                      // how many sorted labels sort before `le`
  std::vector<std::string> le_text;            // `le="0.05"` per bound, then `le="+Inf"`
  bool warned_long GUARDED_BY(mu) = false;     // a refused label value was reported
  bool warned_full GUARDED_BY(mu) = false;     // the children bound was reported
  bool warned_shared GUARDED_BY(mu) = false;   // a full shared segment was reported
  bool warned_waiting GUARDED_BY(mu) = false;  // a deferred child was reported
  Join join GUARDED_BY(mu) = Join::kNone;
  uint32_t shared_family GUARDED_BY(mu) = 0;  // the family's index in the segment, once joined
  std::vector<Deferred> deferred GUARDED_BY(mu);

  // A new child of `values` (its series, label text and `_created`), its values kept in `cell`
  // (null: in this process), not yet in the family.
  std::unique_ptr<Child> MakeChild(const FamilyOptions& options, MetricType type, std::string key,
                                   std::span<const std::string_view> values, double created,
                                   SharedCell cell) const;
  // Adds `child` to the family; returns it.
  Child* Insert(std::unique_ptr<Child> child) REQUIRES(mu);

  // Reports a refused label set of `family` on stderr, once per warned_* flag, and to the caller
  // in *refused when it asked.
  void Refuse(const std::string& family, bool State::*warned, const std::string& what,
              std::string* refused) REQUIRES(mu) {
    if (refused != nullptr) *refused = what;
    if (this->*warned) return;
    this->*warned = true;
    std::fprintf(stderr, "modelmetrics: %s: %s; such label sets are not recorded\n", family.c_str(),
                 what.c_str());
  }
};

// The label values of a child's key.
inline std::vector<std::string_view> KeyValues(std::string_view key) {
  std::vector<std::string_view> values;
  while (!key.empty()) {
    const size_t end = key.find('\xff');
    values.push_back(key.substr(0, end));
    key.remove_prefix(end + 1);
  }
  return values;
}

}  // namespace modelmetrics::metrics_internal

#endif  // MODELMETRICS_METRICS_FAMILY_STATE_H_
