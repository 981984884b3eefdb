"""prometheus_client's ``multiprocess`` module on modelmetrics' shared segment.

With ``PROMETHEUS_MULTIPROC_DIR`` (or ``MODELMETRICS_MULTIPROC``) set, every process of a service
that imports modelmetrics records into one shared-memory segment (src/python/multiprocess.h), and

    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    generate_latest(registry)

in any of them prints the whole service, as prometheus_client's multiprocess mode does -- without
files: counters and histograms summed over processes (dead ones included), gauges merged by their
``multiprocess_mode``, ``live*`` modes by whether each process is running now.

Metrics that prometheus_client itself still writes to the directory (its own ``Summary``,
``Info``, ``Enum``, or instruments built from ``prometheus_client`` directly) are merged from
their files by prometheus_client's own collector and printed after the segment's, so switching
loses nothing. ``patch_prometheus_client()`` (run when ``modelmetrics.prometheus_client`` or the
``vllm_omni.metrics`` drop-in is imported in a process attached to a segment) makes
``prometheus_client.multiprocess.MultiProcessCollector`` and ``mark_process_dead`` these, so code
written against prometheus_client -- vLLM's ``get_prometheus_registry()`` and
``shutdown_prometheus()`` -- serves the segment too.
"""

import glob
import os

from prometheus_client import multiprocess as _pc_multiprocess
from prometheus_client.metrics_core import Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from .. import _native

# prometheus_client's own file collector, kept before any patching.
_FileCollector = getattr(_pc_multiprocess.MultiProcessCollector, "_files_collector",
                         _pc_multiprocess.MultiProcessCollector)
_file_mark_process_dead = getattr(_pc_multiprocess.mark_process_dead, "_files_version",
                                  _pc_multiprocess.mark_process_dead)


def _env_directory():
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir")


def _segment_for(path):
    """The segment `path` names (this process's when None), or None."""
    if path is None:
        return _native.multiprocess_segment()
    return _native.multiprocess_segment(path)


class MultiProcessCollector:
    """The whole service's metrics (prometheus_client.multiprocess.MultiProcessCollector's API)."""

    _files_collector = _FileCollector

    def __init__(self, registry, path=None, files=True):
        """`files=False` reads the segment only, for a service none of whose metrics come from
        prometheus_client's own instruments (it saves a directory listing per scrape)."""
        if path is not None and not os.path.isdir(path):
            raise ValueError("env PROMETHEUS_MULTIPROC_DIR is not set or not a directory")
        directory = path if path is not None else _env_directory()
        segment = _segment_for(path)
        if segment is None and (directory or os.environ.get("MODELMETRICS_MULTIPROC")):
            raise ValueError("PROMETHEUS_MULTIPROC_DIR (or MODELMETRICS_MULTIPROC) was set after "
                             "modelmetrics was first imported in this process; set it before, so "
                             "the process records into the service's shared segment")
        if segment is None:
            raise ValueError("env PROMETHEUS_MULTIPROC_DIR is not set or not a directory")
        self._segment = segment
        self._path = directory if files else None  # prometheus_client's own files
        if registry:
            registry.register(self)

    def _files(self):
        if not self._path or not os.path.isdir(self._path):
            return []
        return glob.glob(os.path.join(self._path, "*.db"))

    def _file_metrics(self):
        files = self._files()
        return list(_FileCollector.merge(files, accumulate=True)) if files else []

    def collect(self):
        return self._segment_metrics() + self._file_metrics()

    def _segment_metrics(self):
        out = []
        for name, typ, help_text, labelnames, buckets, _mode, children in \
                _native.multiprocess_collect(self._segment):
            metric = Metric(name, help_text, typ)
            samples = metric.samples
            if typ == "histogram":
                le = [floatToGoString(b) for b in buckets] + ["+Inf"]
                for values, cumulative, count, total in children:
                    labels = dict(zip(labelnames, values))
                    for bound, acc in zip(le, cumulative):
                        samples.append(Sample(name + "_bucket", {**labels, "le": bound}, acc))
                    samples.append(Sample(name + "_count", labels, count))
                    samples.append(Sample(name + "_sum", labels, total))
            else:
                sample_name = name + "_total" if typ == "counter" else name
                for values, pid, value in children:
                    labels = dict(zip(labelnames, values))
                    if pid:
                        labels["pid"] = str(pid)
                    samples.append(Sample(sample_name, labels, value))
            out.append(metric)
        return out

    def _render(self, openmetrics=False):
        """The exposition as bytes: the segment natively, prometheus_client's files after it."""
        text = _native.multiprocess_render(self._segment, openmetrics)
        files = self._file_metrics()
        if not files:
            return text
        from prometheus_client import exposition, openmetrics as om

        class _Files:
            def collect(self):
                return files

        writer = om.exposition.generate_latest if openmetrics else exposition.generate_latest
        rest = writer(_Files())
        if openmetrics and text.endswith(b"# EOF\n"):
            text = text[:-len(b"# EOF\n")]
        return text + rest

    def stats(self):
        """The segment's use: slots taken and live, families, series, cells."""
        return _native.multiprocess_stats(self._segment)


# prometheus_client's static merge API, kept on this class: its own merge code looks these up on
# the module's MultiProcessCollector, which patch_prometheus_client() makes this class.
for _name in ("merge", "_read_metrics", "_accumulate_metrics"):
    if hasattr(_FileCollector, _name):
        setattr(MultiProcessCollector, _name, staticmethod(getattr(_FileCollector, _name)))


def mark_process_dead(pid, path=None):
    """Bookkeeping for a process that died (prometheus_client's API). The segment already knows
    which processes are running, so this only makes the process's slot the first a new process
    reuses; prometheus_client's own live-gauge files of `pid` are removed as it removes them."""
    segment = _segment_for(path)
    if segment is not None:
        _native.multiprocess_mark_dead(segment, int(pid))
    directory = path if path is not None else _env_directory()
    if directory and os.path.isdir(directory):
        _file_mark_process_dead(pid, directory)


mark_process_dead._files_version = _file_mark_process_dead


def patch_prometheus_client():
    """Points prometheus_client.multiprocess at this module when this process records into a
    segment (a no-op otherwise, and when already done)."""
    if _native.multiprocess_segment() is None:
        return False
    _pc_multiprocess.MultiProcessCollector = MultiProcessCollector
    _pc_multiprocess.mark_process_dead = mark_process_dead
    return True


__all__ = ["MultiProcessCollector", "mark_process_dead"]
