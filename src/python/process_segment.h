// The shared segment a Python process records into when its service runs as several processes
// (modelmetrics/shared_segment.h). Private to src/python.
//
// Contract. At module import, when MODELMETRICS_MULTIPROC or PROMETHEUS_MULTIPROC_DIR is set, the
// process attaches to the segment they name (AttachFromEnvironment; the import fails with a clear
// RuntimeError when it cannot, rather than record values no scrape would see). The process
// registry and every modelmetrics.prometheus_client family then keep their values there. The
// process leaves the segment at interpreter exit (Py_AtExit), so the last process removes it.
// Module functions (all take the segment name a MultiProcessCollector resolved; another name than
// this process's opens a read-only view: no slot, nothing created, opened again when the service
// it showed has ended):
//   multiprocess_segment(directory=None) -> str | None   the name for a directory, or ours
//   multiprocess_render(name, openmetrics=False) -> bytes  the whole service's exposition
//   multiprocess_collect(name) -> list    families as collect() gives them, gauges with a pid
//   multiprocess_mark_dead(name, pid) -> int
//   multiprocess_stats(name) -> dict
//
// Thread-safety: called with the GIL held; renders and collects release it (fork-gated).
#ifndef MODELMETRICS_PYTHON_PROCESS_SEGMENT_H_
#define MODELMETRICS_PYTHON_PROCESS_SEGMENT_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>

#include "modelmetrics/shared_segment.h"

namespace modelmetrics::python {

// False with a Python exception set when the environment names a segment that cannot be used.
bool AttachFromEnvironment();

// This process's segment; null when it runs alone.
const std::shared_ptr<SharedSegment>& ProcessSegment();

// The module functions above.
extern PyMethodDef kMultiprocessFunctions[];

}  // namespace modelmetrics::python

#endif  // MODELMETRICS_PYTHON_PROCESS_SEGMENT_H_
