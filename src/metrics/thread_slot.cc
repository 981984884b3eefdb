#include "thread_slot.h"

#include <atomic>
#include <bitset>
#include <mutex>

#include "base/mutex.h"

namespace modelmetrics::metrics_internal {
namespace {

base::Mutex& SlotMutex() {
  static base::Mutex mu;
  return mu;
}

std::bitset<kOwnedSlots>& UsedSlots() {
  static std::bitset<kOwnedSlots> used;
  return used;
}

// Returns the thread's owned slot to the pool when the thread exits. The mutex hand-over orders
// the old owner's last writes before the new owner's first.
struct SlotReleaser {
  ~SlotReleaser() {
    if (tls_thread_slot >= 0 && tls_thread_slot < kOwnedSlots) {
      base::MutexLock lock(&SlotMutex());
      UsedSlots().reset(static_cast<size_t>(tls_thread_slot));
      // Anything this thread still observes (from later thread_local destructors) goes to the
      // shared slot: the owned one may already belong to a new thread.
      tls_thread_slot = kSharedSlot;
    }
  }
};

std::atomic<int> g_slots_in_use{0};

}  // namespace

int SlotsInUse() { return g_slots_in_use.load(std::memory_order_acquire); }

int AcquireThreadSlot() {
  thread_local SlotReleaser releaser;  // constructed here, destroyed at thread exit
  (void)releaser;
  base::MutexLock lock(&SlotMutex());
  int slot = kSharedSlot;
  for (int i = 0; i < kOwnedSlots; ++i) {
    if (!UsedSlots().test(static_cast<size_t>(i))) {
      UsedSlots().set(static_cast<size_t>(i));
      slot = i;
      break;
    }
  }
  tls_thread_slot = slot;
  // Raised before the slot's first write, so a reader that sees the write also sees the mark.
  if (slot + 1 > g_slots_in_use.load(std::memory_order_relaxed)) {
    g_slots_in_use.store(slot + 1, std::memory_order_release);
  }
  return slot;
}

}  // namespace modelmetrics::metrics_internal
