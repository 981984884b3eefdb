// Observe rows from C++. See observe_recorder.h for the contract.
#include "pipeline/observe_recorder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <utility>
#include <variant>

namespace modelmetrics::pipeline {
namespace {

// A label's text; integers are written into `buf`.
struct LabelText {
  std::array<char, 32> buf;
  std::string owned;
};

// str(arg) as Python prints it (integers decimal, floats shortest with a fraction part, None as
// "None"; inf and nan as C++ spells them, which no caller passes as a label).
std::string_view Text(const ObserveArg& arg, LabelText* out) {
  switch (arg.type) {
    case ObserveArg::Type::kNone:
      return "None";
    case ObserveArg::Type::kText:
      return arg.text;
    case ObserveArg::Type::kInteger: {
      const auto [end, ec] =
          std::to_chars(out->buf.data(), out->buf.data() + out->buf.size(), arg.integer);
      return std::string_view(out->buf.data(), static_cast<size_t>(end - out->buf.data()));
    }
    case ObserveArg::Type::kReal: {
      const auto [end, ec] =
          std::to_chars(out->buf.data(), out->buf.data() + out->buf.size(), arg.real);
      out->owned.assign(out->buf.data(), end);
      if (std::isfinite(arg.real) && out->owned.find_first_of(".e") == std::string::npos) {
        out->owned += ".0";
      }
      return out->owned;
    }
  }
  return {};
}

bool Falsy(const ObserveArg& arg) {
  switch (arg.type) {
    case ObserveArg::Type::kNone:
      return true;
    case ObserveArg::Type::kInteger:
      return arg.integer == 0;
    case ObserveArg::Type::kReal:
      return arg.real == 0;
    case ObserveArg::Type::kText:
      return arg.text.empty();
  }
  return true;
}

std::string_view MakeLabel(const ObserveLabel& rule, std::span<const ObserveArg> args,
                           LabelText* out) {
  const bool given = rule.arg < args.size();
  const ObserveArg none;
  const ObserveArg& arg = given ? args[rule.arg] : none;
  switch (rule.from) {
    case LabelFrom::kNone:
    case LabelFrom::kConstant:
      return rule.text;
    case LabelFrom::kArg:
      return given ? Text(arg, out) : rule.text;
    case LabelFrom::kArgOrUnknown:
      return Falsy(arg) ? kUnknownReason : Text(arg, out);
    case LabelFrom::kArgIntText:
      if (arg.type == ObserveArg::Type::kReal && std::isfinite(arg.real)) {
        return Text(ObserveArg(static_cast<int64_t>(std::trunc(arg.real))), out);
      }
      return Text(arg, out);
    case LabelFrom::kAbortReason:
      return Bounded(Text(arg, out), kSpeechAbortReasons, kSpeechAbortFallbackReason);
    case LabelFrom::kBounded:
      return arg.type == ObserveArg::Type::kText ? Bounded(arg.text, rule.allowed, rule.text)
                                                 : rule.text;
  }
  return rule.text;
}

using Amount = ObserveAmount;

bool ReadAmount(const ObserveMethod& m, const ObserveEffect& e, std::span<const ObserveArg> args,
                Amount* out) {
  const auto index = static_cast<size_t>(e.value);
  if (index >= args.size()) {
    *out = Amount{m.value_default, m.value_default >= 0, static_cast<uint64_t>(m.value_default)};
  } else if (args[index].type == ObserveArg::Type::kInteger) {
    const int64_t v = args[index].integer;
    *out = Amount{static_cast<double>(v), v >= 0, v >= 0 ? static_cast<uint64_t>(v) : 0};
  } else if (args[index].type == ObserveArg::Type::kReal) {
    *out = Amount{args[index].real, false, 0};
  } else {
    return false;  // text or None is not a number
  }
  if (e.divisor != 1.0) *out = Amount{out->value / e.divisor, false, 0};
  return true;
}

// The child with `values` of whichever kind `any` is (Bind when `eager`: it exists even while
// the registry is off); inert when none is registered or the family refuses the label set.
AnyHandle MakeChild(const AnyFamily& any, std::span<const std::string_view> values, bool eager) {
  AnyHandle made;
  if (auto* const* f = std::get_if<Family<Counter>*>(&any)) {
    made.counter = eager ? (*f)->Bind(values) : (*f)->Labels(values);
  } else if (auto* const* f = std::get_if<Family<Gauge>*>(&any)) {
    made.gauge = eager ? (*f)->Bind(values) : (*f)->Labels(values);
  } else if (auto* const* f = std::get_if<Family<Histogram>*>(&any)) {
    made.histogram = eager ? (*f)->Bind(values) : (*f)->Labels(values);
  }
  return made;
}

}  // namespace

// A made child under its ChildKey (the family's index as the prefix).
struct ObserveRecorder::Entry {
  std::string key;
  AnyHandle handle;
};

// Open addressing over published entries: readers probe without a lock; writers insert under mu_.
class ObserveRecorder::Cache {
 public:
  static constexpr size_t kSlots = 2 * kMaxCached;  // a power of two, at most half full

  const Entry* Find(std::string_view key, size_t hash) const {
    for (size_t i = 0; i < kSlots; ++i) {
      const Entry* e = slots_[(hash + i) & (kSlots - 1)].load(std::memory_order_acquire);
      if (e == nullptr) return nullptr;
      if (e->key == key) return e;
    }
    return nullptr;
  }

  void Insert(std::string_view key, size_t hash, const AnyHandle& handle) {
    base::MutexLock lock(&mu_);
    if (Find(key, hash) != nullptr || owned_.size() >= kMaxCached) return;
    owned_.push_back(std::make_unique<Entry>(Entry{std::string(key), handle}));
    for (size_t i = 0;; ++i) {
      std::atomic<const Entry*>& slot = slots_[(hash + i) & (kSlots - 1)];
      if (slot.load(std::memory_order_relaxed) == nullptr) {
        slot.store(owned_.back().get(), std::memory_order_release);
        return;
      }
    }
  }

 private:
  std::array<std::atomic<const Entry*>, kSlots> slots_{};
  base::Mutex mu_;
  std::vector<std::unique_ptr<Entry>> owned_ GUARDED_BY(mu_);
};

ObserveRecorder::ObserveRecorder(const FamilyTable& families, std::string model_name, bool enabled)
    : families_(families),
      model_(std::move(model_name)),
      enabled_(enabled),
      cache_(std::make_unique<Cache>()) {
  for (size_t i = 0; i < families_.size(); ++i) {
    const auto family = static_cast<OmniFamily>(i);
    const FamilySpec& spec = OmniSpec(family);
    if (spec.bind != Bind::kEager || std::holds_alternative<std::monostate>(families_[i])) {
      continue;
    }
    for (std::string_view value : spec.eager_values) Child(family, {&value, 1});
    const std::string_view values[] = {model_};
    if (spec.eager_values.empty()) eager_[i] = MakeChild(families_[i], values, true);
  }
}

ObserveRecorder::~ObserveRecorder() = default;

AnyHandle ObserveRecorder::Child(OmniFamily family, std::span<const std::string_view> extra) const {
  const char id = static_cast<char>(family);
  const ChildKey child_key(std::string_view(&id, 1), extra);
  const std::string_view key = child_key.view();
  const size_t hash = std::hash<std::string_view>{}(key);
  if (const Entry* e = cache_->Find(key, hash)) return e->handle;

  std::array<std::string_view, kMaxObserveLabels + 1> values;
  values[0] = model_;
  for (size_t i = 0; i < extra.size() && i < kMaxObserveLabels; ++i) values[i + 1] = extra[i];
  const std::span<const std::string_view> all(values.data(), extra.size() + 1);
  const bool eager = FamilyBind(family) == Bind::kEager;
  const AnyHandle made = MakeChild(families_[static_cast<size_t>(family)], all, eager);
  if (made.live()) cache_->Insert(key, hash, made);  // a refusal is asked again next time
  return made;
}

void ObserveRecorder::Apply(const ObserveMethod& m, std::span<const ObserveArg> args) const {
  if (!enabled_) return;
  const size_t n = m.effect_count();
  std::array<Amount, kMaxObserveEffects> amounts;
  for (size_t i = 0; i < n; ++i) {
    if (m.effects[i].value >= 0 && !ReadAmount(m, m.effects[i], args, &amounts[i])) return;
  }
  for (size_t i = 0; i < n; ++i) {
    const ObserveEffect& e = m.effects[i];
    const auto index = static_cast<size_t>(e.family);
    if (std::holds_alternative<std::monostate>(families_[index])) continue;
    if (e.value >= 0 && !ApplyGuard(FamilyGuard(e.family), amounts[i].value)) continue;
    const size_t labels = e.label_count();
    if (labels == 0 && FamilyBind(e.family) == Bind::kEager) {
      RecordAmount(e, OmniFamilyKind(e.family), eager_[index], amounts[i]);
      continue;
    }
    std::array<LabelText, kMaxObserveLabels> texts;
    std::array<std::string_view, kMaxObserveLabels> views;
    for (size_t l = 0; l < labels; ++l) views[l] = MakeLabel(e.labels[l], args, &texts[l]);
    RecordAmount(e, OmniFamilyKind(e.family), Child(e.family, std::span(views.data(), labels)),
                 amounts[i]);
  }
}

}  // namespace modelmetrics::pipeline
