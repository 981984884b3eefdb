// Thread slots: the shard index a thread writes instruments through.
//
// Each live thread that observes gets one of kOwnedSlots slots for as long as it lives, and is the
// only writer of that slot's shard in every series; when it exits the slot goes back to the pool
// (a later thread continues its cumulative sums, which is correct for counters and histograms).
// When all owned slots are taken, further threads get kSharedSlot, whose shards take atomic
// read-modify-writes (counters) or a spin lock (histograms).
//
// Thread-safety: ThreadSlot() is safe from any thread; the first call in a thread takes a mutex.
#ifndef MODELMETRICS_METRICS_THREAD_SLOT_H_
#define MODELMETRICS_METRICS_THREAD_SLOT_H_

namespace modelmetrics::metrics_internal {

inline constexpr int kSlots = 16;
inline constexpr int kSharedSlot = kSlots - 1;
inline constexpr int kOwnedSlots = kSlots - 1;

int AcquireThreadSlot();  // slow path: assigns the calling thread's slot

// One past the highest slot ever handed out (owned slots are taken lowest-first, and the shared
// slot counts as kSlots). Shards at or above it were never written, so readers skip them: a
// process with few threads reads a few shards per series, not kSlots.
int SlotsInUse();

// Constant-initialised, so reading it needs no TLS guard. Initial-exec: the Python extension is
// position-independent code, where the default model calls __tls_get_addr on every observation
// (a few nanoseconds of a ~20 ns call); four bytes of the static TLS surplus glibc keeps for
// dlopen'ed modules make it one load.
inline thread_local int tls_thread_slot __attribute__((tls_model("initial-exec"))) = -1;

inline int ThreadSlot() {
  const int slot = tls_thread_slot;
  return slot >= 0 ? slot : AcquireThreadSlot();
}

}  // namespace modelmetrics::metrics_internal

#endif  // MODELMETRICS_METRICS_THREAD_SLOT_H_
