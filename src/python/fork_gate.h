// Fork safety of the native work the module does without the GIL.
//
// render() and collect() release the GIL while they hold the registry's and the families' C++
// locks. A thread that calls os.fork() holds the GIL, so at that moment the only threads that can
// hold one of those locks are ones inside such a GIL-released section; the child would inherit
// the lock held and hang at its first render (vLLM and Gunicorn fork workers while /metrics may
// be serving). The gate closes that window: each GIL-released section holds it shared, and a
// pthread_atfork handler takes it exclusively before fork() (waiting for the sections in flight
// to end, a few milliseconds at most; new ones wait) and releases it in parent and child.
// Sections that hold the GIL need nothing: they cannot run while the forking thread holds it.
//
// Thread-safety: any thread. InstallForkGate once, at module import.
#ifndef MODELMETRICS_PYTHON_FORK_GATE_H_
#define MODELMETRICS_PYTHON_FORK_GATE_H_

#include <Python.h>

namespace modelmetrics::python {

// Registers the fork handlers (once; later calls do nothing).
void InstallForkGate();

// Releases the GIL and holds the gate shared for its lifetime, then takes the GIL back. Only
// native code may run inside (no Python object, no callback into Python).
class WithoutGil {
 public:
  WithoutGil();
  // May end the thread: taking the GIL back during interpreter shutdown exits a daemon thread
  // (pthread_exit), whose unwinding must pass through here.
  ~WithoutGil() noexcept(false);
  WithoutGil(const WithoutGil&) = delete;
  WithoutGil& operator=(const WithoutGil&) = delete;

 private:
  PyThreadState* state_;
};

// Runs `fn` (native code only) without the GIL when `release`, else with it: for a call that
// may wait on another process (a shared-segment registration waits for its directory lock, at
// most kDirectoryWait), so the process's other threads run meanwhile.
template <typename F>
auto WithoutGilIf(bool release, F&& fn) {
  if (!release) return fn();
  WithoutGil released;
  return fn();
}

}  // namespace modelmetrics::python

#endif  // MODELMETRICS_PYTHON_FORK_GATE_H_
