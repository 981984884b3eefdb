// The segment's directory of families and series: appends under the directory lock, a
// process-local index of what is published, and the checks every record passes before use. See
// segment_layout.h.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "segment_check.h"
#include "segment_layout.h"

namespace modelmetrics {
namespace segment {
namespace {

std::string Joined(std::span<const std::string_view> parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.push_back('\xff');  // never in UTF-8 text
    out.append(parts[i]);
  }
  return out;
}

std::string Joined(const std::vector<std::string>& parts) {
  std::vector<std::string_view> views(parts.begin(), parts.end());
  return Joined(std::span<const std::string_view>(views));
}

std::string SeriesKey(uint32_t family, std::string_view values) {
  std::string key(reinterpret_cast<const char*>(&family), sizeof(family));
  key.append(values);
  return key;
}

// The directory's append lock (SegmentHeader::directory_lock): taken by compare-and-swap, waited
// for with short sleeps for at most kDirectoryWait, taken over from a holder that is no live
// process of the service. Failing, it names the holder in *error.
//
// The word: the holder's pid (bits 0-31), its slot + 1 (bits 32-44) and that slot's generation
// (bits 45-63), so a later owner of the slot, even one the system gave the same pid, is told
// apart from a holder that died.
class DirectoryLock {
 public:
  DirectoryLock(SharedSegment::Impl& impl, std::string* error) : impl_(impl) {
    mine_ = Word(impl.slot.load(std::memory_order_relaxed), getpid());
    ok_ = Acquire(error);
  }
  ~DirectoryLock() {
    uint64_t expected = mine_;
    if (ok_) {
      impl_.header->directory_lock.compare_exchange_strong(expected, 0, std::memory_order_release);
    }
  }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  bool ok() const { return ok_; }

 private:
  static constexpr uint64_t kSlotBits = 13, kGenerationBits = 19;

  uint64_t Word(int slot, pid_t pid) const {
    const auto index = static_cast<uint32_t>(slot);
    const uint64_t generation = index < impl_.geometry.process_slots
                                    ? impl_.slots[index].generation.load(std::memory_order_relaxed)
                                    : 0;
    return (generation & ((uint64_t{1} << kGenerationBits) - 1)) << (32 + kSlotBits) |
           (uint64_t{index + 1} & ((uint64_t{1} << kSlotBits) - 1)) << 32 |
           static_cast<uint32_t>(pid);
  }

  // Whether `word` names a running process of the service: its slot still held (the kernel
  // drops a dead owner's lock) by the same taking of it (the generation), by that pid or by a
  // child forked without a slot of its own, which writes into its parent's. Our own word is
  // stale: this process registers one thread at a time (impl.mu).
  bool HolderAlive(uint64_t word) const {
    if (word == mine_) return false;
    const uint64_t slot = ((word >> 32) & ((uint64_t{1} << kSlotBits) - 1)) - 1;
    const auto pid = static_cast<pid_t>(word & 0xffffffffu);
    if (slot >= impl_.geometry.process_slots || pid <= 0) return false;
    if (Word(static_cast<int>(slot), pid) != word) return false;  // another taking of the slot
    if (!impl_.Alive(static_cast<uint32_t>(slot))) return false;
    return impl_.slots[slot].pid.load(std::memory_order_relaxed) == pid || kill(pid, 0) == 0 ||
           errno == EPERM;
  }

  bool Acquire(std::string* error) {
    std::atomic<uint64_t>& word = impl_.header->directory_lock;
    // A holder this process already gave up on gets a short look (it may be running again and
    // hold the lock for microseconds at a time), not another full wait.
    const bool known_stuck =
        word.load(std::memory_order_relaxed) == impl_.stuck_holder.load(std::memory_order_relaxed);
    const auto deadline = std::chrono::steady_clock::now() +
                          (known_stuck ? std::chrono::milliseconds(10) : kDirectoryWait);
    auto pause = std::chrono::microseconds(50);
    for (;;) {
      uint64_t seen = 0;
      // A dead holder left at most unpublished bytes (segment_layout.h): take the lock over.
      if (word.compare_exchange_strong(seen, mine_, std::memory_order_acquire) ||
          (!HolderAlive(seen) && word.compare_exchange_strong(seen, mine_))) {
        impl_.stuck_holder.store(0, std::memory_order_relaxed);
        return true;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        impl_.stuck_holder.store(seen, std::memory_order_relaxed);
        *error = "the shared segment's directory is held by process " +
                 std::to_string(seen & 0xffffffffu) + " of the service, which has not released " +
                 "it for " + std::to_string(kDirectoryWait.count()) +
                 " ms (stopped, or in a debugger?)";
        return false;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
    }
  }

  SharedSegment::Impl& impl_;
  uint64_t mine_ = 0;
  bool ok_ = false;
};

// The error of a registration that did not fit: the segment's own size, or (when reserving its
// memory failed for want of space) /dev/shm's.
std::string Full(const SharedSegment::Impl& impl, const char* what) {
  if (impl.reserve_errno.exchange(0, std::memory_order_relaxed) == ENOSPC) {
    return std::string("/dev/shm has no room left for the shared segment '") + impl.name + "' (" +
           what + "): free space in /dev/shm, or give the container a larger one " +
           "(its size, not MODELMETRICS_MULTIPROC_BYTES, is the limit here)";
  }
  return std::string("the shared segment '") + impl.name + "' is full (" + what +
         "); give MODELMETRICS_MULTIPROC_BYTES a larger size and restart the service";
}

// Copies `text` into the arena (under the directory lock); false when it does not fit, or /dev/shm
// has no room for it.
bool Store(SharedSegment::Impl& impl, std::string_view text, ArenaText* out, size_t align = 1) {
  SegmentHeader* h = impl.header;
  if (h->arena_used > impl.geometry.arena_bytes) return false;
  const uint64_t start = (h->arena_used + align - 1) / align * align;
  if (start + text.size() > impl.geometry.arena_bytes ||
      !Reserve(impl, impl.geometry.arena_offset + start, text.size())) {
    return false;
  }
  if (!text.empty()) std::memcpy(impl.arena + start, text.data(), text.size());
  out->offset = static_cast<uint32_t>(start);
  out->size = static_cast<uint32_t>(text.size());
  h->arena_used = start + text.size();
  return true;
}

// Reserves the cells up to `words` in every slot (whole chunks at a time); false when /dev/shm is
// full.
bool ReserveCells(SharedSegment::Impl& impl, uint64_t words) {
  SegmentHeader* h = impl.header;
  const Geometry& g = impl.geometry;
  if (h->words_reserved > g.words_per_slot) return false;  // a corrupt header: refuse to grow
  if (words <= h->words_reserved) return true;
  const uint64_t target = std::min(
      g.words_per_slot, (words + kCellReserveWords - 1) / kCellReserveWords * kCellReserveWords);
  for (uint32_t slot = 0; slot < g.process_slots; ++slot) {
    const uint64_t base = g.cells_offset + uint64_t{slot} * g.words_per_slot * 8;
    if (!Reserve(impl, base + h->words_reserved * 8, (target - h->words_reserved) * 8)) {
      return false;
    }
  }
  h->words_reserved = target;
  return true;
}

// What another process registered under the same name must equal (`r` is a checked copy).
std::string Mismatch(const SharedSegment::Impl& impl, const FamilyRecord& r, const FamilyOptions& o,
                     MetricType type) {
  if (static_cast<MetricType>(r.type) != type) return "another type";
  if (impl.Text(r.labels) != Joined(o.labels)) return "other label names";
  if (r.bounds != o.buckets.size() ||
      (r.bounds > 0 &&
       std::memcmp(impl.Bounds(r), o.buckets.data(), o.buckets.size() * sizeof(double)) != 0)) {
    return "other buckets";
  }
  if (type == MetricType::kGauge && static_cast<MultiprocessMode>(r.mode) != o.multiprocess_mode) {
    return "multiprocess_mode " +
           std::string(MultiprocessModeName(static_cast<MultiprocessMode>(r.mode)));
  }
  return "";
}

// Indexes the records published since the last call, each copied and checked first (a record
// pointing outside the segment is skipped). Series are counted first: their families are older.
void Sync(SharedSegment::Impl& impl) REQUIRES(impl.mu) {
  const uint32_t series = impl.PublishedSeries();
  const uint32_t families = impl.PublishedFamilies();
  for (; impl.families_indexed < families; ++impl.families_indexed) {
    const FamilyRecord r = impl.families[impl.families_indexed];
    CheckedFamily checked;  // a family that fails is never found, so never joined
    if (CheckFamily(impl, r, &checked) != Skip::kNone) {
      impl.indexed_shapes.emplace_back();
      continue;
    }
    impl.indexed_shapes.push_back(FamilyShape{.type = checked.type,
                                              .labels = checked.options.labels.size(),
                                              .bounds = checked.options.buckets.size()});
    impl.family_by_name.emplace(std::move(checked.options.name), impl.families_indexed);
  }
  // As a scrape reads them: a series it skips is never joined (its cells are not this one's).
  for (; impl.series_indexed < series; ++impl.series_indexed) {
    const SeriesRecord r = impl.series[impl.series_indexed];
    const std::optional<FamilyShape>* shape =
        r.family < impl.indexed_shapes.size() ? &impl.indexed_shapes[r.family] : nullptr;
    std::vector<std::string> values;
    if (impl.indexed_series.Check(impl, r, shape != nullptr && *shape ? &**shape : nullptr,
                                  &values) != Skip::kNone) {
      continue;
    }
    impl.cell_by_key.emplace(SeriesKey(r.family, impl.Text(r.values)), r.cell);
  }
}

std::optional<uint32_t> FindFamily(SharedSegment::Impl& impl, const FamilyOptions& o,
                                   MetricType type, std::string* error) REQUIRES(impl.mu) {
  Sync(impl);
  auto it = impl.family_by_name.find(o.name);
  if (it == impl.family_by_name.end()) return std::nullopt;
  const FamilyRecord r = impl.families[it->second];
  const std::string why =
      impl.ValidFamily(r) ? Mismatch(impl, r, o, type) : std::string("a corrupt record");
  if (why.empty()) return it->second;
  *error = "registered in the shared segment by another process with " + why;
  return UINT32_MAX;
}

std::optional<uint32_t> AppendFamily(SharedSegment::Impl& impl, const FamilyOptions& o,
                                     MetricType type, std::string* error) REQUIRES(impl.mu) {
  SegmentHeader* h = impl.header;
  const uint32_t index = h->families.load(std::memory_order_relaxed);
  if (index >= impl.geometry.max_families ||
      !Reserve(impl, impl.geometry.families_offset + uint64_t{index} * sizeof(FamilyRecord),
               sizeof(FamilyRecord))) {
    *error = Full(impl, "families");
    return std::nullopt;
  }
  FamilyRecord r = {};
  ArenaText bounds;
  const std::string_view bound_bytes(reinterpret_cast<const char*>(o.buckets.data()),
                                     o.buckets.size() * sizeof(double));
  if (!Store(impl, o.name, &r.name) || !Store(impl, o.help, &r.help) ||
      !Store(impl, o.unit, &r.unit) || !Store(impl, Joined(o.labels), &r.labels) ||
      !Store(impl, bound_bytes, &bounds, alignof(double))) {
    *error = Full(impl, "names and label text");
    return std::nullopt;
  }
  r.bounds_offset = bounds.offset;
  r.bounds = static_cast<uint32_t>(o.buckets.size());
  r.type = static_cast<uint8_t>(type);
  r.mode = static_cast<uint8_t>(o.multiprocess_mode);
  impl.families[index] = r;
  h->families.store(index + 1, std::memory_order_release);
  return index;
}

// Appends a series of `words` cells; its cell offset, or nullopt with *error.
std::optional<uint32_t> AppendSeries(SharedSegment::Impl& impl, uint32_t family,
                                     std::string_view values, uint64_t words, std::string* error)
    REQUIRES(impl.mu) {
  SegmentHeader* h = impl.header;
  const uint32_t index = h->series.load(std::memory_order_relaxed);
  if (index >= impl.geometry.max_series ||
      !Reserve(impl, impl.geometry.series_offset + uint64_t{index} * sizeof(SeriesRecord),
               sizeof(SeriesRecord))) {
    *error = Full(impl, "series");
    return std::nullopt;
  }
  if (h->words_used > impl.geometry.words_per_slot ||
      h->words_used + words > impl.geometry.words_per_slot ||
      !ReserveCells(impl, h->words_used + words)) {
    *error = Full(impl, "cells per process");
    return std::nullopt;
  }
  SeriesRecord r = {};
  if (!Store(impl, values, &r.values)) {
    *error = Full(impl, "names and label text");
    return std::nullopt;
  }
  r.family = family;
  r.cell = static_cast<uint32_t>(h->words_used);
  h->words_used += words;
  impl.series[index] = r;
  h->series.store(index + 1, std::memory_order_release);
  return r.cell;
}

}  // namespace
}  // namespace segment

bool SharedSegment::Impl::ValidFamily(const segment::FamilyRecord& f) const {
  auto inside = [&](segment::ArenaText t) {
    return uint64_t{t.offset} + t.size <= geometry.arena_bytes;
  };
  const auto type = static_cast<MetricType>(f.type);
  return inside(f.name) && inside(f.help) && inside(f.unit) && inside(f.labels) &&
         f.name.size > 0 && f.bounds_offset % alignof(double) == 0 &&
         uint64_t{f.bounds_offset} + uint64_t{f.bounds} * sizeof(double) <= geometry.arena_bytes &&
         (type == MetricType::kCounter || type == MetricType::kGauge ||
          type == MetricType::kHistogram) &&
         f.mode <= static_cast<uint8_t>(MultiprocessMode::kLiveMostRecent);
}

bool SharedSegment::Impl::ValidSeries(const segment::SeriesRecord& r, uint32_t families) const {
  if (r.family >= families) return false;
  const segment::FamilyRecord f = this->families[r.family];
  if (!ValidFamily(f)) return false;
  const uint64_t words = segment::CellWords(static_cast<MetricType>(f.type), f.bounds);
  return uint64_t{r.values.offset} + r.values.size <= geometry.arena_bytes &&
         uint64_t{r.cell} + words <= geometry.words_per_slot;
}

std::optional<uint32_t> SharedSegment::RegisterFamily(const FamilyOptions& options, MetricType type,
                                                      std::string* error, bool* busy) {
  Impl& impl = *impl_;
  if (busy != nullptr) *busy = false;
  if (impl.observer) {
    *error = "a read-only view of the shared segment records nothing";
    return std::nullopt;
  }
  base::MutexLock lock(&impl.mu);
  std::optional<uint32_t> found = segment::FindFamily(impl, options, type, error);
  if (!found) {
    segment::DirectoryLock directory(impl, error);
    if (!directory.ok()) {
      if (busy != nullptr) *busy = true;
      return std::nullopt;
    }
    found = segment::FindFamily(impl, options, type, error);
    if (!found) return segment::AppendFamily(impl, options, type, error);
  }
  if (*found == UINT32_MAX) return std::nullopt;
  return found;
}

std::optional<int> SharedSegment::StuckDirectoryHolder() const {
  const uint64_t stuck = impl_->stuck_holder.load(std::memory_order_relaxed);
  if (stuck == 0 || impl_->header->directory_lock.load(std::memory_order_relaxed) != stuck) {
    return std::nullopt;
  }
  return static_cast<int>(stuck & 0xffffffffu);
}

metrics_internal::SharedCell SharedSegment::RegisterSeries(
    uint32_t family, MetricType type, size_t bounds, std::span<const std::string_view> label_values,
    std::string* error, bool* busy) {
  Impl& impl = *impl_;
  if (busy != nullptr) *busy = false;
  if (impl.observer) {
    *error = "a read-only view of the shared segment records nothing";
    return {};
  }
  const std::string values = segment::Joined(label_values);
  const std::string key = segment::SeriesKey(family, values);
  const uint64_t words = segment::CellWords(type, bounds);  // the caller's own definition
  base::MutexLock lock(&impl.mu);
  auto made = [&](uint32_t cell) REQUIRES(impl.mu) {
    if (type == MetricType::kGauge) {
      segment::MarkGaugeCreated(impl.slot_cells.load(std::memory_order_relaxed) + cell);
      impl.bound_gauges.insert(cell);
    }
    return metrics_internal::SharedCell{&impl.slot_cells, cell};
  };
  // A cell found in the index was checked against the segment's geometry with the record's own
  // definition; it must also fit the caller's.
  auto fits = [&](uint32_t cell) { return uint64_t{cell} + words <= impl.geometry.words_per_slot; };
  segment::Sync(impl);
  if (auto it = impl.cell_by_key.find(key); it != impl.cell_by_key.end() && fits(it->second)) {
    return made(it->second);
  }
  segment::DirectoryLock directory(impl, error);
  if (!directory.ok()) {
    if (busy != nullptr) *busy = true;
    return {};
  }
  segment::Sync(impl);
  if (auto it = impl.cell_by_key.find(key); it != impl.cell_by_key.end() && fits(it->second)) {
    return made(it->second);
  }
  const std::optional<uint32_t> cell = segment::AppendSeries(impl, family, values, words, error);
  if (!cell) return {};
  impl.cell_by_key[key] = *cell;
  // Our own record: indexed above; the next Sync passes it through the checks (and skips it in
  // the index, where it already is).
  return made(*cell);
}

}  // namespace modelmetrics
