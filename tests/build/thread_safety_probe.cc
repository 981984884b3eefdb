// Planted for build.LockRulesAreChecked: with PROBE_LOCKED the guarded counter is written under
// its mutex and the file compiles; without, clang's -Werror=thread-safety must refuse it.
#include "base/mutex.h"

namespace {

class Counter {
 public:
  void Add() {
#ifdef PROBE_LOCKED
    modelmetrics::base::MutexLock lock(&mu_);
#endif
    ++hits_;
  }

 private:
  modelmetrics::base::Mutex mu_;
  int hits_ GUARDED_BY(mu_) = 0;
};

}  // namespace

int ProbeThreadSafety() {
  Counter counter;
  counter.Add();
  return 0;
}
