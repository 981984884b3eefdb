// Carries out observe_table.h rows from C++: the observe classes (OmniMetrics, AudioMetrics,
// DuplexMetrics, RealtimeVadMetrics) call `recorder.Call<observe::kX>(args...)`, so a method's
// families, labels, guard and value come from its one row, as they do for the Python types.
//
// Contract.
// - Built over the families an owner registered (a FamilyTable: null entries are families it did
//   not register, whose effects do nothing), one model name, and the gate (Registry::enabled(),
//   or the owner's log_stats). The constructor binds every registered eager family's children
//   (the model's one child, or one per row eager_value), so they render zeros from the start,
//   also with the gate off.
// - Call<M>(args...) takes M's parameters in order (its trailing optional ones may be left out):
//   integers, floating values, text, std::optional text (nullopt is Python's None). Labels are
//   made as the row says: an integer label is its decimal text. A value is the argument as a
//   double (a non-negative integer added to a counter is added exactly). With the gate off a call
//   records nothing.
// - Lazy children are cached per recorder (at most kMaxCached label sets; beyond that every call
//   goes to Family::Labels, still correct). A label set the family refuses records nothing and is
//   not cached.
//
// Thread-safety: Call may run on any thread at once. A cached child is found without a lock; a
// new one is made and published under the recorder's mutex.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#ifndef MODELMETRICS_PIPELINE_OBSERVE_RECORDER_H_
#define MODELMETRICS_PIPELINE_OBSERVE_RECORDER_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/mutex.h"
#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"
#include "pipeline/observe_table.h"

namespace modelmetrics::pipeline {

// One handle of whichever kind the family has (each is a single pointer).
struct AnyHandle {
  Counter counter;
  Gauge gauge;
  Histogram histogram;
  bool live() const { return counter.live() || gauge.live() || histogram.live(); }
};

// An effect's value: the double, and the exact count of a non-negative integer (a counter adds
// that exactly, past 2^53).
struct ObserveAmount {
  double value = 1;
  bool integral = true;
  uint64_t count = 1;
};

// Effect `e`'s operation on its child `h` (Inc on a gauge or a counter, as `kind`, the family's).
[[gnu::always_inline]] inline void RecordAmount(const ObserveEffect& e, Kind kind,
                                                const AnyHandle& h, const ObserveAmount& amount) {
  switch (e.op) {
    case ObserveOp::kNone:
      break;
    case ObserveOp::kObserve:
      h.histogram.Observe(amount.value);
      break;
    case ObserveOp::kSet:
      h.gauge.Set(amount.value);
      break;
    case ObserveOp::kAdd:
      if (amount.integral) {
        h.counter.Add(amount.count);
      } else {
        h.counter.Add(amount.value);
      }
      break;
    case ObserveOp::kInc:
      if (kind == Kind::kGauge) {
        h.gauge.Inc();
      } else {
        h.counter.Inc();
      }
      break;
    case ObserveOp::kDec:
      h.gauge.Dec();
      break;
  }
}

// A child's cache key: `prefix`, then each label value followed by 0xff (a byte UTF-8 text never
// holds, so no two label sets share a key). On the stack; on the heap only past 256 bytes.
class ChildKey {
 public:
  ChildKey(std::string_view prefix, std::span<const std::string_view> values) {
    size_t size = prefix.size();
    for (std::string_view v : values) size += v.size() + 1;
    char* out = buf_.data();
    if (size > buf_.size()) {
      spill_.resize(size);
      out = spill_.data();
    }
    char* p = std::copy(prefix.begin(), prefix.end(), out);
    for (std::string_view v : values) {
      p = std::copy(v.begin(), v.end(), p);
      *p++ = '\xff';
    }
    view_ = std::string_view(out, size);
  }
  ChildKey(const ChildKey&) = delete;
  ChildKey& operator=(const ChildKey&) = delete;

  std::string_view view() const { return view_; }

 private:
  std::array<char, 256> buf_;
  std::string spill_;
  std::string_view view_;
};

// The registered omni families of one owner, by OmniFamily (monostate: not registered).
using FamilyTable = std::array<AnyFamily, kOmniFamilyCount>;

// One argument of a C++ call, as the row's labels and values read it.
struct ObserveArg {
  enum class Type : uint8_t { kNone, kInteger, kReal, kText };
  Type type = Type::kNone;
  int64_t integer = 0;
  double real = 0;
  std::string_view text;

  ObserveArg() = default;
  template <std::integral T>
  requires(!std::same_as<T, bool>) ObserveArg(T v)
      : type(Type::kInteger), integer(static_cast<int64_t>(v)) {}  // NOLINT
  template <std::floating_point T>
  ObserveArg(T v) : type(Type::kReal), real(static_cast<double>(v)) {}  // NOLINT
  ObserveArg(std::string_view v) : type(Type::kText), text(v) {}        // NOLINT
  ObserveArg(const std::string& v) : type(Type::kText), text(v) {}      // NOLINT
  ObserveArg(const char* v) : type(Type::kText), text(v) {}             // NOLINT
  ObserveArg(std::optional<std::string_view> v) {                       // NOLINT
    if (v.has_value()) *this = ObserveArg(*v);
  }
};

class ObserveRecorder {
 public:
  static constexpr size_t kMaxCached = 4096;

  ObserveRecorder(const FamilyTable& families, std::string model_name, bool enabled);
  ~ObserveRecorder();
  ObserveRecorder(const ObserveRecorder&) = delete;
  ObserveRecorder& operator=(const ObserveRecorder&) = delete;

  bool enabled() const { return enabled_; }
  const std::string& model_name() const { return model_; }

  template <const ObserveMethod& M, typename... Args>
  void Call(const Args&... args) const {
    static_assert(sizeof...(Args) >= M.required() && sizeof...(Args) <= M.param_count(),
                  "a call passes the row's parameters, its optional ones last");
    if (!enabled_) return;
    const std::array<ObserveArg, sizeof...(Args)> given{ObserveArg(args)...};
    Apply(M, given);
  }

  // The row M with arguments already made (a call's generic form; the Python types use theirs).
  void Apply(const ObserveMethod& m, std::span<const ObserveArg> args) const;

 private:
  struct Entry;
  class Cache;

  AnyHandle Child(OmniFamily family, std::span<const std::string_view> extra) const;

  FamilyTable families_;
  std::string model_;
  bool enabled_;
  std::array<AnyHandle, kOmniFamilyCount> eager_;  // the model's one child of an eager family
  std::unique_ptr<Cache> cache_;
};

}  // namespace modelmetrics::pipeline

#endif  // MODELMETRICS_PIPELINE_OBSERVE_RECORDER_H_
