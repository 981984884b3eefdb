// One /metrics for many processes: a named shared-memory segment the processes of one service
// record into, each in a slot of its own, merged by whichever process scrapes.
//
//   auto segment = SharedSegment::Attach({.name = "my-service"}, &error);
//   Registry registry(RegistryOptions{.shared = segment});
//   registry.AddCounter({.name = "requests"})->Labels({})->Inc();   // this process's slot
//   std::string text = segment->Render(Format::kText);                // every process's values
//
// What it replaces. prometheus_client's multiprocess mode: one mmap'd file per process and metric
// type in PROMETHEUS_MULTIPROC_DIR, opened, parsed and merged at every scrape. Here the processes
// share one POSIX shared-memory object (memory, nothing on disk; the last process to leave removes
// it) and a scrape reads it in place. Merging follows prometheus_client: counters and histograms
// sum over processes, dead ones included; gauges by their MultiprocessMode.
//
// Layout (src/metrics/segment_layout.h). A header; a table of process slots; an append-only
// directory of families and series (name, labels, buckets, mode; written under a lock word
// that names its holder, read without it); and per process slot the same array of cells, a series
// at the same offset in every slot. A process writes only its own slot's cells, with atomic
// operations (several of its threads may write), never taking a lock. A histogram's
// `_count` is always the sum of the buckets a scrape read, so it equals `+Inf` in every scrape,
// even when a writer died mid-observation.
//
// Liveness. Each process holds an open-file-description lock on its slot's byte of the segment:
// the kernel drops it when the process ends, however it ends (SIGKILL included), so `live*`
// gauges and the last-to-leave rule need no pid checks and survive pid reuse. A fork() child
// gets a slot of its own before fork() returns (no double counting; the gauges its parent made
// count as made, 0, in it). A slot whose process died keeps its counters and histograms
// counted; when no never-used slot is left a new process takes a dead one and continues its sums
// (as a new thread continues a thread shard), its gauges cleared.
//
// Trust. The object must belong to this user and be closed to others; an object of that name
// that is not a segment is refused, never replaced; records another process wrote are copied
// and checked before use, so a corrupt directory is skipped, not followed.
//
// Limits. The creator fixes the size (SegmentOptions::bytes, process_slots); a registration that
// does not fit (families, series, label text, cells per process, or room left in /dev/shm: memory
// is reserved before it is written) fails with one clear error at that point, and nothing already
// recorded changes. Label values are bounded as in metrics.h and must be UTF-8 (no 0xff byte).
//
// Thread-safety: every method is safe from any thread. Render/Collect take only this process's
// scrape mutex (never held across fork); registration takes this process's mutex, then the
// segment's.
#ifndef MODELMETRICS_SHARED_SEGMENT_H_
#define MODELMETRICS_SHARED_SEGMENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "modelmetrics/metrics.h"
#include "modelmetrics/writer.h"

namespace modelmetrics {

std::string_view MultiprocessModeName(MultiprocessMode mode);
std::optional<MultiprocessMode> ParseMultiprocessMode(std::string_view name);
bool IsLiveMode(MultiprocessMode mode);

struct SegmentOptions {
  std::string name;  // the shared-memory object's name: [A-Za-z0-9._-], <= 200 bytes
  // The whole segment (1 MiB .. 4 GiB); its pages are used as they are written.
  size_t bytes = size_t{64} << 20;
  uint32_t process_slots = 128;  // processes the segment can hold at once (1 .. 4096)
  // A read-only view of an existing segment (a scraper that records nothing): no slot, never
  // creates, replaces or removes it, refuses registration. The size options are ignored.
  bool observe_only = false;
};

// The segment a process of this service should attach to, from its environment:
//   MODELMETRICS_MULTIPROC            the segment's name; else
//   PROMETHEUS_MULTIPROC_DIR          (or prometheus_multiproc_dir) the name recorded in the
//                                     directory (RecordedSegmentName), so every process given the
//                                     same directory meets in one segment
//   MODELMETRICS_MULTIPROC_BYTES      the size, e.g. 64M (K, M, G suffixes)
//   MODELMETRICS_MULTIPROC_PROCESSES  process slots
// nullopt when neither name variable is set, or (with *error) when a value is invalid.
std::optional<SegmentOptions> SegmentOptionsFromEnvironment(std::string* error);

// The segment name recorded in a multiprocess directory's kSegmentNameFile: a random
// `modelmetrics-<32 hex>`, recorded by the first process (`create`) with link(), so processes
// starting at once agree on one. Another local user cannot read it (the file is 0600 in the
// service's directory), so cannot make an object of that name first. A recorded file that is not
// this user's private plain file is an error (nullopt, *error), and so is a directory that does
// not exist when `create`. Without a recorded name or without the directory (`create` false),
// the name its path gives (SegmentNameForDirectory).
inline constexpr std::string_view kSegmentNameFile = "modelmetrics-segment";
std::optional<std::string> RecordedSegmentName(std::string_view directory, bool create,
                                               std::string* error);
// The name a directory's path gives (FNV-1a of the resolved path): predictable, so used only
// where no name is recorded.
std::string SegmentNameForDirectory(std::string_view directory);

// One merged series of a scrape.
struct MergedChild {
  std::vector<std::string> label_values;  // in the family's label order
  int pid = 0;                            // gauges in kAll/kLiveAll: the process; else 0
  double value = 0;                       // counters, gauges
  std::vector<uint64_t> buckets;          // histograms: per bucket (not cumulative), +Inf last
  uint64_t count = 0;                     // histograms: the sum of buckets
  double sum = 0;                         // histograms
};

struct MergedFamily {
  FamilyOptions options;
  MetricType type = MetricType::kUntyped;
  std::vector<MergedChild> children;  // in registration order (gauges: then by process slot)
};

struct SegmentStats {
  uint32_t slots_used = 0;  // slots ever taken
  uint32_t live = 0;        // of them, held by a running process
  uint32_t families = 0, series = 0;
  uint64_t cell_words_used = 0, cell_words_per_slot = 0;
};

class SharedSegment {
 public:
  // Opens the named segment, creating it when absent or when every process that used it is gone
  // (a stale segment's values are not carried into a new run), and takes a process slot.
  // nullptr (and *error) when the name or sizes are invalid, shared memory is unavailable, the
  // existing segment is not one of ours, or every slot is held by a live process.
  static std::shared_ptr<SharedSegment> Attach(const SegmentOptions& options, std::string* error);

  ~SharedSegment();  // Leave(), then unmaps: only once no handle of this segment is used
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  // This process stops counting as attached: when no other process is, the segment's name is
  // removed (its memory goes once every mapping is gone). Values written later still land in
  // the mapping; call at exit. Idempotent. A process that ends without it (os._exit, a crash)
  // leaves the name for the next process to replace.
  void Leave();

  // Whether the segment's name has been removed (its last process left): a view should be
  // opened again.
  bool Removed() const;

  const std::string& name() const;
  int slot() const;  // this process's slot

  // The whole service: every family of the directory, merged over process slots.
  std::vector<MergedFamily> Collect() const;
  void Render(ExpositionWriter& writer) const;
  std::string Render(Format format) const;

  // prometheus_client's mark_process_dead(pid): the `live*` gauges of the slots `pid` held stop
  // showing, and those slots are the first a new process reuses. Returns how many slots.
  size_t MarkProcessDead(int pid);

  SegmentStats Stats() const;

  // The pid of the live process of the service that holds the directory lock and that this
  // process already gave up waiting for (a registration failed for it), while it still holds
  // it; nullopt otherwise. A caller tells "try again later" from "full" or "defined otherwise".
  std::optional<int> StuckDirectoryHolder() const;

  // Registration (Registry and FamilyBase call these; see metrics.h). The family's index, or
  // nullopt with *error, and *busy (when given) true when a stopped process held the directory
  // lock past the bounded wait (try again later), false when the refusal is final (full, or the
  // name defined otherwise).
  std::optional<uint32_t> RegisterFamily(const FamilyOptions& options, MetricType type,
                                         std::string* error, bool* busy = nullptr);
  // The series' cells for this process, or a null cell with *error and *busy as above. `type`
  // and `bounds` are the family's as the caller registered it (they size its cells).
  metrics_internal::SharedCell RegisterSeries(uint32_t family, MetricType type, size_t bounds,
                                              std::span<const std::string_view> label_values,
                                              std::string* error, bool* busy = nullptr);

  struct Impl;  // src/metrics/segment_layout.h

 private:
  explicit SharedSegment(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace modelmetrics

#endif  // MODELMETRICS_SHARED_SEGMENT_H_
