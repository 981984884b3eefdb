// The bytes of a SharedSegment (modelmetrics/shared_segment.h), and one process's attachment to
// them. Private to src/metrics.
//
// Regions, at offsets the header's Layout records (all fixed by the creator, and recomputed and
// compared by every process that opens the segment):
//   SegmentHeader | ProcessSlot[process_slots] | FamilyRecord[max_families] |
//   SeriesRecord[max_series] | arena (names, help, label text, bounds) |
//   cells: process_slots x words_per_slot words (a series at the same offset in every slot)
// Memory is reserved (fallocate) before it is first written, so a full /dev/shm is a "segment
// full" error at registration, never a SIGBUS at a write.
//
// Publication. Records are appended under the header's directory lock and made visible by a
// release store of the count; readers load the count (acquire) and read only records below it,
// never taking the lock: series count first, then family count (a series' family is always
// published before it). A writer that dies holding the lock leaves unpublished bytes only. A
// registration waits for the lock at most kDirectoryWait, then fails with an error naming the
// holder (a process stopped or being debugged); the lock of a holder that is not a live process
// of the service is taken over at once.
// Readers copy a record and check it (ValidFamily, ValidSeries) before using the copy.
//
// Cells (64-bit words), written only by the slot's process (its threads share them, so every
// write is an atomic read-modify-write or a whole-word store): counter [value as double bits];
// gauge [value bits, stamp bits] where a zero stamp means "no child of it in this slot's process"
// (kCreatedStamp: made, never set; most-recent gauges stamp each write with wall seconds, the
// others with 1.0); histogram [sum bits, one count per bucket, +Inf last], each observation one
// fetch_add of its bucket and one add to the sum. A scrape's `_count` is the sum of the buckets
// it read, so it equals `+Inf` whatever a writer was doing, even one killed mid-observation;
// `_sum` can differ from the buckets by the observations in flight.
//
// Locks on the segment's file (open-file-description locks, released by the kernel when a
// process ends): byte kInitLock, exclusive while a process creates or checks the segment and
// while one leaves; byte kAttachedLock, shared by every attached process (exclusive means
// "nobody else is attached"); byte kSlotLocks + i, exclusive by the owner of slot i.
#ifndef MODELMETRICS_METRICS_SEGMENT_LAYOUT_H_
#define MODELMETRICS_METRICS_SEGMENT_LAYOUT_H_

#include <pthread.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "base/mutex.h"
#include "modelmetrics/shared_segment.h"
#include "scrape_cache.h"

namespace modelmetrics {
namespace segment {

inline constexpr uint64_t kMagic = 0x32474553534d4d4dull;  // "MMMSSEG2", little-endian
inline constexpr uint32_t kVersion = 3;  // 3: the directory lock is a word naming its holder
inline constexpr off_t kInitLock = 0;
inline constexpr off_t kAttachedLock = 1;
inline constexpr off_t kSlotLocks = 2;
inline constexpr size_t kHeaderBytes = 4096;
inline constexpr size_t kMinBytes = size_t{1} << 20;
inline constexpr size_t kMaxBytes = size_t{4} << 30;
inline constexpr uint32_t kMaxProcessSlots = 4096;
inline constexpr uint32_t kMaxFamilies = 4096;
inline constexpr uint64_t kCellReserveWords = 4096;  // cells reserved per slot at a time (32 KiB)
// How long a registration waits for the directory lock. Appends hold it for microseconds, so
// this is spent only when its holder is stopped (SIGSTOP, a debugger, a frozen cgroup).
inline constexpr std::chrono::milliseconds kDirectoryWait{1000};
// A gauge child's stamp once its process made it (value 0 until set; the least of stamps).
inline constexpr double kCreatedStamp = 0x1p-1022;

// Marks a gauge cell of `slot_cells` as made by its process (value 0) unless it is already.
inline void MarkGaugeCreated(std::atomic<uint64_t>* cell) {
  uint64_t expected = 0;
  cell[1].compare_exchange_strong(expected, std::bit_cast<uint64_t>(kCreatedStamp),
                                  std::memory_order_release, std::memory_order_relaxed);
}

enum class SlotState : uint32_t { kNeverUsed = 0, kUsed = 1 };
inline constexpr uint32_t kMarkedDead = 1;  // ProcessSlot::flags: mark_process_dead(pid)

// Where the regions are, for a segment of `bytes` with `process_slots` (PlanLayout).
struct Layout {
  uint64_t bytes = 0;
  uint32_t process_slots = 0;
  uint32_t max_families = 0;
  uint32_t max_series = 0;
  uint32_t reserved = 0;
  uint64_t words_per_slot = 0;
  uint64_t arena_bytes = 0;
  uint64_t slots_offset = 0, families_offset = 0, series_offset = 0, arena_offset = 0;
  uint64_t cells_offset = 0;
  bool operator==(const Layout&) const = default;
};
std::optional<Layout> PlanLayout(size_t bytes, uint32_t process_slots);

struct SegmentHeader {
  std::atomic<uint64_t> magic;  // stored last by the creator (release)
  uint32_t version;
  uint32_t pad;
  Layout layout;
  // The directory's append lock (DirectoryLock, segment_directory.cc): 0 when free, else its
  // holder's pid (bits 0-31), slot + 1 (bits 32-44) and that slot's generation (bits 45-63). A
  // holder that is not a live process of the service (it died: its slot lock is gone or the slot
  // was taken again; or the word is garbage) is taken over.
  std::atomic<uint64_t> directory_lock;
  std::atomic<uint32_t> families;  // published records
  std::atomic<uint32_t> series;
  uint64_t arena_used;      // under mutex
  uint64_t words_used;      // under mutex; cells allocated per slot
  uint64_t words_reserved;  // under mutex; cells fallocated in every slot
  uint64_t families_reserved, series_reserved, arena_reserved;  // under mutex: bytes reserved
};
static_assert(sizeof(SegmentHeader) <= kHeaderBytes);
// tests/python/test_multiprocess.py plays a stopped holder by writing the word at this offset,
// with the generation it reads 16 bytes into its slot's 64-byte record (below).
static_assert(offsetof(SegmentHeader, directory_lock) == 96);

struct alignas(64) ProcessSlot {
  std::atomic<uint32_t> state;  // SlotState
  std::atomic<uint32_t> flags;
  std::atomic<int32_t> pid;
  std::atomic<uint64_t> generation;  // times the slot was taken
};
static_assert(sizeof(ProcessSlot) == 64 && offsetof(ProcessSlot, generation) == 16);

// A string in the arena.
struct ArenaText {
  uint32_t offset = 0, size = 0;
};

struct FamilyRecord {
  ArenaText name, help, unit;
  ArenaText labels;        // label names joined by '\xff'
  uint32_t bounds_offset;  // arena offset of `bounds` doubles (8-aligned)
  uint32_t bounds;         // finite upper bounds (+Inf implicit)
  uint8_t type;            // MetricType
  uint8_t mode;            // MultiprocessMode
};

struct SeriesRecord {
  uint32_t family;
  ArenaText values;  // label values joined by '\xff'
  uint32_t cell;     // word offset in a slot
};

// Cell words of a family's series (64-bit: `bounds` may come from a record another process
// wrote).
inline uint64_t CellWords(MetricType type, uint64_t bounds) {
  switch (type) {
    case MetricType::kCounter:
      return 1;
    case MetricType::kGauge:
      return 2;
    default:
      return 1 + bounds + 1;
  }
}

// The region sizes, as this process planned them (and found the header to agree): every bound a
// reader or writer applies comes from here, so another process scribbling on the header cannot
// send this one out of bounds.
using Geometry = Layout;

}  // namespace segment

struct SharedSegment::Impl {
  std::string name;
  segment::Geometry geometry;
  size_t bytes = 0;
  uint8_t* map = nullptr;
  int fd = -1;  // this process's own open file description (its locks)
  segment::SegmentHeader* header = nullptr;
  segment::ProcessSlot* slots = nullptr;
  segment::FamilyRecord* families = nullptr;
  segment::SeriesRecord* series = nullptr;
  char* arena = nullptr;
  std::atomic<uint64_t>* cells = nullptr;  // slot 0's cells

  bool observer = false;  // a read-only view: no slot, no attached lock, no registration
  std::atomic<int> slot{-1};
  std::atomic<std::atomic<uint64_t>*> slot_cells{nullptr};  // this process's slot's cells
  std::atomic<bool> left{false};
  int fork_fd = -1;  // PrepareFork..AfterFork: the description the child will own

  base::Mutex mu;  // this process's registrations
  std::unordered_map<std::string, uint32_t> family_by_name GUARDED_BY(mu);
  std::unordered_map<std::string, uint32_t> cell_by_key GUARDED_BY(mu);  // family, values
  uint32_t families_indexed GUARDED_BY(mu) = 0;
  uint32_t series_indexed GUARDED_BY(mu) = 0;
  // What a registration indexes passes the checks a scrape applies (segment_check.h): each
  // published family's shape (nullopt: skipped), and the series so far.
  std::vector<std::optional<segment::FamilyShape>> indexed_shapes GUARDED_BY(mu);
  segment::SeriesCheck indexed_series GUARDED_BY(mu);
  // Gauge cells this process made children of: set to 0 in its slot when made, and again in a
  // fork child's new slot (prometheus_client writes each value it creates into the process's file).
  std::unordered_set<uint32_t> bound_gauges GUARDED_BY(mu);

  std::atomic<size_t> last_render_bytes{0};  // sizing hint for the next Render(Format)
  // Why the last Reserve failed (ENOSPC: /dev/shm has no room), 0 when it was outside the
  // segment; read by the error message of the registration that failed.
  mutable std::atomic<int> reserve_errno{0};
  // The directory lock word this process last gave up waiting on: while the lock still holds
  // exactly it, registrations fail at once instead of waiting again (DirectoryLock).
  std::atomic<uint64_t> stuck_holder{0};
  // Scrapes in this process. Not held across fork (a scrape holds the Python fork gate and then
  // this; PrepareFork only tries it): a child that inherits it held gets a fresh one.
  base::Mutex render_mu;
  bool render_mu_held_at_fork = false;
  segment::ScrapeCache cache GUARDED_BY(render_mu);

  std::atomic<uint64_t>* SlotCells(uint32_t slot_index) const {
    return cells + static_cast<size_t>(slot_index) * geometry.words_per_slot;
  }
  // Published record counts, within the regions.
  uint32_t PublishedFamilies() const {
    return std::min(header->families.load(std::memory_order_acquire), geometry.max_families);
  }
  uint32_t PublishedSeries() const {
    return std::min(header->series.load(std::memory_order_acquire), geometry.max_series);
  }
  // Whether a record points only inside the segment (segment_directory.cc); readers skip any
  // that does not, whoever wrote it.
  bool ValidFamily(const segment::FamilyRecord& f) const;
  bool ValidSeries(const segment::SeriesRecord& r, uint32_t families) const;
  std::string_view Text(segment::ArenaText t) const { return {arena + t.offset, t.size}; }
  const double* Bounds(const segment::FamilyRecord& f) const {
    return reinterpret_cast<const double*>(arena + f.bounds_offset);
  }
  // Whether slot `i`'s owner is running (its slot lock is held), this process's own slot
  // included.
  bool Alive(uint32_t i) const;
};

namespace segment {

// Takes a slot for `impl` through its description `fd` (a never-used one first, else one whose
// owner is gone) and points slot_cells at it. False (and *error when given) when every slot is
// held.
bool ClaimSlot(SharedSegment::Impl& impl, int fd, std::string* error);

// Reserves [offset, offset + length) of the segment's memory; false when /dev/shm is full.
bool Reserve(const SharedSegment::Impl& impl, uint64_t offset, uint64_t length);

// Registers `impl` for the fork handlers (segment_slots.cc), and removes it.
void Track(SharedSegment::Impl* impl);
void Untrack(SharedSegment::Impl* impl);

// Open-file-description locks on one byte of `fd`; false when another description holds a
// conflicting lock (or on error).
bool LockByte(int fd, off_t byte, short type, bool wait);
bool ByteLockedElsewhere(int fd, off_t byte);

}  // namespace segment
}  // namespace modelmetrics

#endif  // MODELMETRICS_METRICS_SEGMENT_LAYOUT_H_
