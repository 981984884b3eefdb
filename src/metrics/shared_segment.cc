// Attaching to a SharedSegment, process slots, fork and leaving. See modelmetrics/multiprocess.h
// and segment_layout.h for the protocol.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "segment_layout.h"

namespace modelmetrics {
namespace segment {

bool LockByte(int fd, off_t byte, short type, bool wait) {
  struct flock lock = {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = byte;
  lock.l_len = 1;
  for (;;) {
    if (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock) == 0) return true;
    if (errno != EINTR) return false;
  }
}

bool ByteLockedElsewhere(int fd, off_t byte) {
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = byte;
  lock.l_len = 1;
  if (fcntl(fd, F_OFD_GETLK, &lock) != 0) return true;  // cannot tell: count it alive
  return lock.l_type != F_UNLCK;
}

namespace {

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// The regions' offsets and sizes for a segment of `bytes` with `slots` process slots.
bool PlanLayout(SegmentHeader* h, size_t bytes, uint32_t slots) {
  auto align = [](uint64_t v) { return (v + 63) / 64 * 64; };
  h->bytes = bytes;
  h->process_slots = slots;
  h->max_families = kMaxFamilies;
  h->max_series = static_cast<uint32_t>(bytes / 256);
  h->arena_bytes = align(bytes / 16);
  h->slots_offset = kHeaderBytes;
  h->families_offset = align(h->slots_offset + uint64_t{slots} * sizeof(ProcessSlot));
  h->series_offset = align(h->families_offset + uint64_t{h->max_families} * sizeof(FamilyRecord));
  h->arena_offset = align(h->series_offset + uint64_t{h->max_series} * sizeof(SeriesRecord));
  h->cells_offset = align(h->arena_offset + h->arena_bytes);
  if (h->cells_offset >= bytes) return false;
  // Whole cache lines per slot: no two processes ever write one line.
  h->words_per_slot = (bytes - h->cells_offset) / slots / 8 / 8 * 8;
  return h->words_per_slot >= 64;
}

bool InitMutex(pthread_mutex_t* mutex) {
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0) return false;
  const bool ok = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED) == 0 &&
                  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) == 0 &&
                  pthread_mutex_init(mutex, &attr) == 0;
  pthread_mutexattr_destroy(&attr);
  return ok;
}

void PointAtRegions(SharedSegment::Impl& impl) {
  SegmentHeader* h = impl.header;
  impl.geometry = {.process_slots = h->process_slots,
                   .max_families = h->max_families,
                   .max_series = h->max_series,
                   .words_per_slot = h->words_per_slot,
                   .arena_bytes = h->arena_bytes};
  impl.slots = reinterpret_cast<ProcessSlot*>(impl.map + h->slots_offset);
  impl.families = reinterpret_cast<FamilyRecord*>(impl.map + h->families_offset);
  impl.series = reinterpret_cast<SeriesRecord*>(impl.map + h->series_offset);
  impl.arena = reinterpret_cast<char*>(impl.map + h->arena_offset);
  impl.cells = reinterpret_cast<std::atomic<uint64_t>*>(impl.map + h->cells_offset);
}

bool Map(SharedSegment::Impl& impl, size_t bytes, std::string* error) {
  void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, impl.fd, 0);
  if (map == MAP_FAILED) {
    *error = Errno("mmap");
    return false;
  }
  impl.map = static_cast<uint8_t*>(map);
  impl.bytes = bytes;
  impl.header = reinterpret_cast<SegmentHeader*>(impl.map);
  return true;
}

// A fresh (zero-length) segment: sized, laid out, and published by its magic number.
bool Create(SharedSegment::Impl& impl, const SegmentOptions& options, std::string* error) {
  SegmentHeader plan = {};
  if (!PlanLayout(&plan, options.bytes, options.process_slots)) {
    *error = "MODELMETRICS_MULTIPROC_BYTES: " + std::to_string(options.bytes) +
             " bytes leave too few cells for " + std::to_string(options.process_slots) +
             " process slots";
    return false;
  }
  if (ftruncate(impl.fd, static_cast<off_t>(options.bytes)) != 0) {
    *error = Errno("ftruncate");
    return false;
  }
  if (!Map(impl, options.bytes, error)) return false;
  SegmentHeader* h = impl.header;
  h->version = kVersion;
  h->process_slots = plan.process_slots;
  h->bytes = plan.bytes;
  h->words_per_slot = plan.words_per_slot;
  h->max_families = plan.max_families;
  h->max_series = plan.max_series;
  h->arena_bytes = plan.arena_bytes;
  h->slots_offset = plan.slots_offset;
  h->families_offset = plan.families_offset;
  h->series_offset = plan.series_offset;
  h->arena_offset = plan.arena_offset;
  h->cells_offset = plan.cells_offset;
  if (!InitMutex(&h->mutex)) {
    *error = "pthread_mutex_init (robust, process-shared) failed";
    return false;
  }
  PointAtRegions(impl);
  h->magic.store(kMagic, std::memory_order_release);
  return true;
}

// An initialised segment made by another process: checked before use.
bool Open(SharedSegment::Impl& impl, size_t size, std::string* error) {
  if (size < kMinBytes || size > kMaxBytes) {
    *error = "an existing object of that name is not a modelmetrics segment (size " +
             std::to_string(size) + ")";
    return false;
  }
  if (!Map(impl, size, error)) return false;
  const SegmentHeader* h = impl.header;
  if (h->magic.load(std::memory_order_acquire) != kMagic || h->version != kVersion ||
      h->bytes != size || h->process_slots == 0 || h->process_slots > kMaxProcessSlots) {
    *error = "an existing object of that name is not a modelmetrics segment of this version";
    return false;
  }
  SegmentHeader plan = {};
  if (!PlanLayout(&plan, size, h->process_slots) || plan.cells_offset != h->cells_offset ||
      plan.words_per_slot != h->words_per_slot || plan.max_families != h->max_families ||
      plan.max_series != h->max_series || plan.arena_bytes != h->arena_bytes ||
      plan.slots_offset != h->slots_offset || plan.families_offset != h->families_offset ||
      plan.series_offset != h->series_offset || plan.arena_offset != h->arena_offset) {
    *error = "the segment's header does not describe its size";
    return false;
  }
  PointAtRegions(impl);
  return true;
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 200 || name[0] == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

enum class Step { kDone, kRetry, kFailed };

// One attempt at opening or creating the segment; the init lock is held throughout.
Step AttachOnce(SharedSegment::Impl& impl, const SegmentOptions& options, std::string* error) {
  const std::string path = "/" + options.name;
  impl.fd = shm_open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (impl.fd < 0) {
    *error = Errno(("shm_open " + path).c_str());
    return Step::kFailed;
  }
  if (!LockByte(impl.fd, kInitLock, F_WRLCK, true)) {
    *error = Errno("fcntl(F_OFD_SETLKW)");
    return Step::kFailed;
  }
  struct stat st = {};
  if (fstat(impl.fd, &st) != 0) {
    *error = Errno("fstat");
    return Step::kFailed;
  }
  if (st.st_nlink == 0) return Step::kRetry;  // removed by its last process while we waited
  if (LockByte(impl.fd, kAttachedLock, F_WRLCK, false)) {  // nobody attached
    if (st.st_size != 0) {
      shm_unlink(path.c_str());  // stale: a new run starts from zero
      return Step::kRetry;
    }
    if (!Create(impl, options, error)) {
      shm_unlink(path.c_str());
      return Step::kFailed;
    }
  } else if (!Open(impl, static_cast<size_t>(st.st_size), error)) {
    return Step::kFailed;
  }
  if (!LockByte(impl.fd, kAttachedLock, F_RDLCK, false)) {
    *error = Errno("fcntl(F_OFD_SETLK)");
    return Step::kFailed;
  }
  return ClaimSlot(impl, error) ? Step::kDone : Step::kFailed;
}

void Close(SharedSegment::Impl& impl) {
  if (impl.map != nullptr) munmap(impl.map, impl.bytes);
  if (impl.fd >= 0) close(impl.fd);
  impl.map = nullptr;
  impl.fd = -1;
}

// ---- fork --------------------------------------------------------------------------------

base::Mutex& AttachedMutex() {
  static base::Mutex mu;
  return mu;
}

std::vector<SharedSegment::Impl*>& Attached() {
  static auto* attached = new std::vector<SharedSegment::Impl*>();
  return *attached;
}

// The child's own description of the segment (the inherited one is the parent's, with the
// parent's locks), its attached lock, and a slot of its own. Only async-signal-safe calls on the
// way; if any step fails the child goes on writing the parent's slot, which is safe (every write
// is an atomic read-modify-write), only attributed to the parent.
void ReattachInChild(SharedSegment::Impl& impl) NO_THREAD_SAFETY_ANALYSIS {  // mu: PrepareFork
  if (impl.left.load(std::memory_order_relaxed) || impl.fd < 0) return;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/fd/%d", impl.fd);
  const int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0 || !LockByte(fd, kAttachedLock, F_RDLCK, false)) {
    if (fd >= 0) close(fd);
    return;
  }
  close(impl.fd);  // the parent keeps its own reference; its locks stay the parent's
  impl.fd = fd;
  std::string ignored;
  if (!ClaimSlot(impl, &ignored)) {
    static const char kMessage[] =
        "modelmetrics: no free process slot in the shared segment after fork(); this process "
        "records into its parent's slot\n";
    (void)!write(2, kMessage, sizeof(kMessage) - 1);
    return;
  }
  std::atomic<uint64_t>* cells = impl.slot_cells.load(std::memory_order_relaxed);
  for (uint32_t cell : impl.bound_gauges) MarkGaugeCreated(cells + cell);
}

void PrepareFork() NO_THREAD_SAFETY_ANALYSIS {
  AttachedMutex().Lock();
  for (SharedSegment::Impl* impl : Attached()) {
    impl->mu.Lock();
    impl->render_mu.Lock();
  }
}

void ParentAfterFork() NO_THREAD_SAFETY_ANALYSIS {
  for (SharedSegment::Impl* impl : Attached()) {
    impl->render_mu.Unlock();
    impl->mu.Unlock();
  }
  AttachedMutex().Unlock();
}

void ChildAfterFork() NO_THREAD_SAFETY_ANALYSIS {
  for (SharedSegment::Impl* impl : Attached()) {
    ReattachInChild(*impl);
    impl->render_mu.Unlock();
    impl->mu.Unlock();
  }
  AttachedMutex().Unlock();
}

void Track(SharedSegment::Impl* impl) {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(PrepareFork, ParentAfterFork, ChildAfterFork); });
  base::MutexLock lock(&AttachedMutex());
  Attached().push_back(impl);
}

void Untrack(SharedSegment::Impl* impl) {
  base::MutexLock lock(&AttachedMutex());
  std::erase(Attached(), impl);
}

// Clears what a dead owner left in slot `i` that must not outlive it: its gauges (unset), and a
// histogram sequence left odd by a write it never finished.
void ResetForNewOwner(SharedSegment::Impl& impl, uint32_t i) {
  std::atomic<uint64_t>* cells = impl.SlotCells(i);
  const uint32_t families = impl.PublishedFamilies();
  const uint32_t series = impl.PublishedSeries();
  for (uint32_t s = 0; s < series; ++s) {
    const SeriesRecord& r = impl.series[s];
    if (!impl.ValidSeries(r, families)) continue;
    const auto type = static_cast<MetricType>(impl.families[r.family].type);
    if (type == MetricType::kGauge) {
      cells[r.cell + 1].store(0, std::memory_order_relaxed);
      cells[r.cell].store(0, std::memory_order_relaxed);
    } else if (type == MetricType::kHistogram) {
      const uint64_t seq = cells[r.cell].load(std::memory_order_relaxed);
      if (seq & 1) cells[r.cell].store(seq + 1, std::memory_order_relaxed);
    }
  }
}

}  // namespace

bool ClaimSlot(SharedSegment::Impl& impl, std::string* error) {
  const uint32_t n = impl.geometry.process_slots;
  // Never-used slots first (a dead process's gauges stay visible as long as possible), then those
  // mark_process_dead named, then any whose owner is gone.
  for (int pass = 0; pass < 3; ++pass) {
    for (uint32_t i = 0; i < n; ++i) {
      ProcessSlot& s = impl.slots[i];
      const auto state = static_cast<SlotState>(s.state.load(std::memory_order_acquire));
      const bool marked = (s.flags.load(std::memory_order_relaxed) & kMarkedDead) != 0;
      if ((pass == 0) != (state == SlotState::kNeverUsed)) continue;
      if (pass == 1 && !marked) continue;
      if (!LockByte(impl.fd, kSlotLocks + static_cast<off_t>(i), F_WRLCK, false)) continue;
      if (state == SlotState::kUsed) ResetForNewOwner(impl, i);
      s.pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
      s.flags.store(0, std::memory_order_relaxed);
      s.generation.fetch_add(1, std::memory_order_relaxed);
      s.state.store(static_cast<uint32_t>(SlotState::kUsed), std::memory_order_release);
      impl.slot.store(static_cast<int>(i), std::memory_order_relaxed);
      impl.slot_cells.store(impl.SlotCells(i), std::memory_order_release);
      return true;
    }
  }
  *error = "all " + std::to_string(n) +
           " process slots of the shared segment are held by running processes "
           "(MODELMETRICS_MULTIPROC_PROCESSES)";
  return false;
}

}  // namespace segment

bool SharedSegment::Impl::Alive(uint32_t i) const {
  if (static_cast<int>(i) == slot.load(std::memory_order_relaxed)) return true;
  return segment::ByteLockedElsewhere(fd, segment::kSlotLocks + static_cast<off_t>(i));
}

std::shared_ptr<SharedSegment> SharedSegment::Attach(const SegmentOptions& options,
                                                     std::string* error) {
  std::string ignored;
  if (error == nullptr) error = &ignored;
  if (!segment::ValidName(options.name)) {
    *error = "invalid segment name '" + options.name + "' (1-200 of A-Z a-z 0-9 . _ -)";
    return nullptr;
  }
  if (options.bytes < segment::kMinBytes || options.bytes > segment::kMaxBytes) {
    *error = "segment size must be 1 MiB .. 4 GiB, not " + std::to_string(options.bytes);
    return nullptr;
  }
  if (options.process_slots == 0 || options.process_slots > segment::kMaxProcessSlots) {
    *error = "process slots must be 1 .. 4096, not " + std::to_string(options.process_slots);
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  impl->name = options.name;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const segment::Step step = segment::AttachOnce(*impl, options, error);
    if (impl->fd >= 0) segment::LockByte(impl->fd, segment::kInitLock, F_UNLCK, false);
    if (step == segment::Step::kDone) {
      segment::Track(impl.get());
      return std::shared_ptr<SharedSegment>(new SharedSegment(std::move(impl)));
    }
    segment::Close(*impl);
    if (step == segment::Step::kFailed) return nullptr;
  }
  *error = "the segment was removed and re-created repeatedly while attaching";
  return nullptr;
}

SharedSegment::SharedSegment(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SharedSegment::~SharedSegment() {
  segment::Untrack(impl_.get());
  Leave();
  segment::Close(*impl_);
}

void SharedSegment::Leave() {
  Impl& impl = *impl_;
  if (impl.left.exchange(true)) return;
  using segment::LockByte;
  if (!LockByte(impl.fd, segment::kInitLock, F_WRLCK, true)) return;
  if (LockByte(impl.fd, segment::kAttachedLock, F_WRLCK, false)) {  // nobody else attached
    shm_unlink(("/" + impl.name).c_str());
  }
  LockByte(impl.fd, segment::kAttachedLock, F_UNLCK, false);
  LockByte(impl.fd, segment::kInitLock, F_UNLCK, false);
}

const std::string& SharedSegment::name() const { return impl_->name; }
int SharedSegment::slot() const { return impl_->slot.load(std::memory_order_relaxed); }

size_t SharedSegment::MarkProcessDead(int pid) {
  Impl& impl = *impl_;
  size_t marked = 0;
  for (uint32_t i = 0; i < impl.geometry.process_slots; ++i) {
    segment::ProcessSlot& s = impl.slots[i];
    if (s.state.load(std::memory_order_acquire) !=
            static_cast<uint32_t>(segment::SlotState::kUsed) ||
        s.pid.load(std::memory_order_relaxed) != pid || impl.Alive(i)) {
      continue;  // a running process with a reused pid is not the one that died
    }
    s.flags.fetch_or(segment::kMarkedDead, std::memory_order_relaxed);
    ++marked;
  }
  return marked;
}

SegmentStats SharedSegment::Stats() const {
  const Impl& impl = *impl_;
  SegmentStats stats;
  for (uint32_t i = 0; i < impl.geometry.process_slots; ++i) {
    if (impl.slots[i].state.load(std::memory_order_acquire) == 0) continue;
    ++stats.slots_used;
    stats.live += impl.Alive(i);
  }
  stats.families = impl.PublishedFamilies();
  stats.series = impl.PublishedSeries();
  stats.cell_words_per_slot = impl.geometry.words_per_slot;
  stats.cell_words_used = 0;
  for (uint32_t s = 0; s < stats.series; ++s) {
    const segment::SeriesRecord& r = impl.series[s];
    if (!impl.ValidSeries(r, stats.families)) continue;
    const segment::FamilyRecord& f = impl.families[r.family];
    const uint64_t end = r.cell + segment::CellWords(static_cast<MetricType>(f.type), f.bounds);
    if (end > stats.cell_words_used) stats.cell_words_used = end;
  }
  return stats;
}

}  // namespace modelmetrics
