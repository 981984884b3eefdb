// Attaching to a SharedSegment: creating or checking it, leaving it. Process slots and fork are
// in segment_slots.cc. See modelmetrics/shared_segment.h and segment_layout.h for the protocol.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "pending_shares.h"
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

bool Reserve(const SharedSegment::Impl& impl, uint64_t offset, uint64_t length) {
  if (length == 0) return true;
  if (offset > impl.bytes || length > impl.bytes - offset) {
    impl.reserve_errno.store(0, std::memory_order_relaxed);
    return false;
  }
  const int rc = posix_fallocate(impl.fd, static_cast<off_t>(offset), static_cast<off_t>(length));
  if (rc != 0) impl.reserve_errno.store(rc, std::memory_order_relaxed);
  return rc == 0;
}

std::optional<Layout> PlanLayout(size_t bytes, uint32_t slots) {
  auto align = [](uint64_t v) { return (v + 63) / 64 * 64; };
  Layout l;
  l.bytes = bytes;
  l.process_slots = slots;
  l.max_families = kMaxFamilies;
  l.max_series = static_cast<uint32_t>(bytes / 256);
  l.arena_bytes = align(bytes / 16);
  l.slots_offset = kHeaderBytes;
  l.families_offset = align(l.slots_offset + uint64_t{slots} * sizeof(ProcessSlot));
  l.series_offset = align(l.families_offset + uint64_t{l.max_families} * sizeof(FamilyRecord));
  l.arena_offset = align(l.series_offset + uint64_t{l.max_series} * sizeof(SeriesRecord));
  l.cells_offset = align(l.arena_offset + l.arena_bytes);
  if (slots == 0 || l.cells_offset >= bytes) return std::nullopt;
  // Whole cache lines per slot: no two processes ever write one line.
  l.words_per_slot = (bytes - l.cells_offset) / slots / 8 / 8 * 8;
  if (l.words_per_slot < 64) return std::nullopt;
  return l;
}

namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Points `impl` at the regions of `layout`, a plan this process computed (never the header).
void PointAtRegions(SharedSegment::Impl& impl, const Layout& layout) {
  impl.geometry = layout;
  impl.slots = reinterpret_cast<ProcessSlot*>(impl.map + layout.slots_offset);
  impl.families = reinterpret_cast<FamilyRecord*>(impl.map + layout.families_offset);
  impl.series = reinterpret_cast<SeriesRecord*>(impl.map + layout.series_offset);
  impl.arena = reinterpret_cast<char*>(impl.map + layout.arena_offset);
  impl.cells = reinterpret_cast<std::atomic<uint64_t>*>(impl.map + layout.cells_offset);
}

bool Map(SharedSegment::Impl& impl, size_t bytes, bool writable, std::string* error) {
  const int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
  void* map = mmap(nullptr, bytes, prot, MAP_SHARED, impl.fd, 0);
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
  const std::optional<Layout> plan = PlanLayout(options.bytes, options.process_slots);
  if (!plan) {
    *error = "MODELMETRICS_MULTIPROC_BYTES: " + std::to_string(options.bytes) +
             " bytes leave too few cells for " + std::to_string(options.process_slots) +
             " process slots";
    return false;
  }
  if (ftruncate(impl.fd, static_cast<off_t>(options.bytes)) != 0) {
    *error = Errno("ftruncate");
    return false;
  }
  if (!Map(impl, options.bytes, true, error)) return false;
  if (!Reserve(impl, 0, plan->families_offset)) {  // the header and the slot table
    *error = "/dev/shm has no room for the segment's header (" + Errno("fallocate") + ")";
    return false;
  }
  SegmentHeader* h = impl.header;
  h->version = kVersion;
  h->layout = *plan;
  h->directory_lock.store(0, std::memory_order_relaxed);
  PointAtRegions(impl, *plan);
  h->magic.store(kMagic, std::memory_order_release);
  return true;
}

// An initialised segment made by another process: its header must describe exactly the layout
// this process plans for its size.
bool Open(SharedSegment::Impl& impl, size_t size, std::string* error) {
  const std::string not_ours = "/dev/shm/" + impl.name + " is not a modelmetrics segment";
  if (size < kMinBytes || size > kMaxBytes) {
    *error = not_ours + " (size " + std::to_string(size) + ")";
    return false;
  }
  if (!Map(impl, size, !impl.observer, error)) return false;
  const SegmentHeader* h = impl.header;
  if (h->magic.load(std::memory_order_acquire) != kMagic || h->version != kVersion) {
    *error = not_ours + " of this version";
    return false;
  }
  const Layout recorded = h->layout;  // one copy, compared with our own plan
  const std::optional<Layout> plan = PlanLayout(size, recorded.process_slots);
  if (recorded.process_slots > kMaxProcessSlots || !plan || !(*plan == recorded)) {
    *error = not_ours + " (its header does not describe its size)";
    return false;
  }
  PointAtRegions(impl, *plan);
  return true;
}

// Whether an object nobody is attached to is a segment left behind (ours, or one whose creator
// died before finishing it), which a new run may replace.
bool LeftBehind(int fd, size_t size) {
  if (size < sizeof(SegmentHeader)) return size == 0;
  void* map = mmap(nullptr, sizeof(SegmentHeader), PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return false;
  const auto* h = static_cast<const SegmentHeader*>(map);
  const uint64_t magic = h->magic.load(std::memory_order_acquire);
  // Ours of any version (a run of an older release), or never finished.
  const bool ours = (magic == kMagic && h->version <= kVersion) || (magic == 0 && h->version == 0);
  munmap(map, sizeof(SegmentHeader));
  return ours;
}

// The object must be a plain file of this user's, closed to everybody else: another local user
// must not be able to plant one (a FIFO, a device, an object of theirs) for a service to attach
// to. Checked on the open descriptor, so nothing can be swapped in between.
bool Owned(int fd, const std::string& name, struct stat* st, std::string* error) {
  if (fstat(fd, st) != 0) {
    *error = Errno("fstat");
    return false;
  }
  if (!S_ISREG(st->st_mode)) {
    *error = "/dev/shm/" + name + " is not a shared-memory object (a FIFO, a device or a " +
             "directory planted under its name); remove it or choose another name";
    return false;
  }
  if (st->st_uid != geteuid() || (st->st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st->st_mode & 07777));
    *error = "/dev/shm/" + name + " belongs to another user or is open to others (mode " + mode +
             "); remove it or choose another name";
    return false;
  }
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

// Creates the segment, or replaces one left behind; the init lock is held.
Step CreateOrReplace(SharedSegment::Impl& impl, const SegmentOptions& options, size_t size,
                     std::string* error) {
  const std::string path = "/" + options.name;
  if (size != 0) {
    if (!LeftBehind(impl.fd, size)) {
      *error = "/dev/shm/" + options.name +
               " exists and is not a modelmetrics segment; remove it or choose another name";
      return Step::kFailed;
    }
    shm_unlink(path.c_str());  // stale: a new run starts from zero
    return Step::kRetry;
  }
  if (!Create(impl, options, error)) {
    shm_unlink(path.c_str());
    return Step::kFailed;
  }
  return Step::kDone;
}

// One attempt at opening (an observer), or opening or creating (a process) the segment.
Step AttachOnce(SharedSegment::Impl& impl, const SegmentOptions& options, std::string* error) {
  const std::string path = "/" + options.name;
  // O_NONBLOCK: a FIFO planted under the name opens at once (and is then refused) instead of
  // waiting for a writer; O_NOFOLLOW: a symbolic link is not followed.
  const int flags =
      O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | (impl.observer ? O_RDONLY : O_RDWR | O_CREAT);
  impl.fd = shm_open(path.c_str(), flags, 0600);
  if (impl.fd < 0) {
    *error = impl.observer && errno == ENOENT
                 ? "no process of the service has attached to '" + options.name + "' yet"
                 : Errno("shm_open " + path);
    return Step::kFailed;
  }
  struct stat st = {};
  if (!Owned(impl.fd, options.name, &st, error)) return Step::kFailed;
  if (impl.observer)
    return Open(impl, static_cast<size_t>(st.st_size), error) ? Step::kDone : Step::kFailed;
  if (!LockByte(impl.fd, kInitLock, F_WRLCK, true) || fstat(impl.fd, &st) != 0) {
    *error = Errno("fcntl(F_OFD_SETLKW)/fstat");
    return Step::kFailed;
  }
  if (st.st_nlink == 0) return Step::kRetry;  // removed by its last process while we waited
  if (LockByte(impl.fd, kAttachedLock, F_WRLCK, false)) {  // nobody attached
    const Step step = CreateOrReplace(impl, options, static_cast<size_t>(st.st_size), error);
    if (step != Step::kDone) return step;
  } else if (!Open(impl, static_cast<size_t>(st.st_size), error)) {
    return Step::kFailed;
  }
  if (!LockByte(impl.fd, kAttachedLock, F_RDLCK, false)) {
    *error = Errno("fcntl(F_OFD_SETLK)");
    return Step::kFailed;
  }
  return ClaimSlot(impl, impl.fd, error) ? Step::kDone : Step::kFailed;
}

void Close(SharedSegment::Impl& impl) {
  if (impl.map != nullptr) munmap(impl.map, impl.bytes);
  if (impl.fd >= 0) close(impl.fd);
  impl.map = nullptr;
  impl.fd = -1;
}

}  // namespace
}  // namespace segment

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
  impl->observer = options.observe_only;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const segment::Step step = segment::AttachOnce(*impl, options, error);
    if (impl->fd >= 0 && !impl->observer) {
      segment::LockByte(impl->fd, segment::kInitLock, F_UNLCK, false);
    }
    if (step == segment::Step::kDone) {
      if (impl->observer) impl->left = true;  // nothing to leave
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
  if (impl.left.load()) return;
  metrics_internal::pending_shares::SyncNow();  // what waited to join, copied while attached
  if (impl.left.exchange(true)) return;
  using segment::LockByte;
  if (!LockByte(impl.fd, segment::kInitLock, F_WRLCK, true)) return;
  if (LockByte(impl.fd, segment::kAttachedLock, F_WRLCK, false)) {  // nobody else attached
    shm_unlink(("/" + impl.name).c_str());
  }
  LockByte(impl.fd, segment::kAttachedLock, F_UNLCK, false);
  LockByte(impl.fd, segment::kInitLock, F_UNLCK, false);
}

bool SharedSegment::Removed() const {
  struct stat st = {};
  return fstat(impl_->fd, &st) != 0 || st.st_nlink == 0;
}

const std::string& SharedSegment::name() const { return impl_->name; }
int SharedSegment::slot() const { return impl_->slot.load(std::memory_order_relaxed); }

}  // namespace modelmetrics
