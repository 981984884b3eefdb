"""prometheus_client's ``Counter``, ``Gauge`` and ``Histogram`` on the native core.

Each class keeps prometheus_client's constructor (``name, documentation, labelnames, namespace,
subsystem, unit, registry, _labelvalues``, plus ``multiprocess_mode`` or ``buckets``), its
validation and exception messages, its attributes (``_name``, ``_labelnames``,
``_labelvalues``, ``_kwargs``, ``_documentation``, ``_unit``, ``_metrics``, ``_lock``,
``_created``, ``_multiprocess_mode``, ``_upper_bounds``), ``labels`` by position or keyword,
``remove``, ``clear``, ``describe`` and ``collect``. Children are instances of the same class,
made by ``self.__class__(...)`` as prometheus_client makes them, so subclasses (vLLM-Omni's
``_RelabelMixin``) see the calls they expect.

What is native (``modelmetrics._native``'s ``*Core`` types, src/python/client_instruments.h):
the values (a standalone C++ family per parent, a lock-free handle per child), the hot methods
(``inc``, ``dec``, ``set``, ``set_to_current_time``, ``observe``) and ``labels()`` for a child
that exists. Values follow prometheus_client's float semantics (NaN and +Inf are kept; a NaN
observation reaches ``_sum`` and no bucket). With ``PROMETHEUS_MULTIPROC_DIR`` set the values
live in the service's shared segment (multiprocess.py). Differences, on purpose: every
``multiprocess_mode`` of prometheus_client 0.18+ is accepted whatever version is installed; a
label value is at most 4,096 bytes (ValueError) and a family at most 1,048,576
children (modelmetrics/metrics.h).
"""

import threading
import time
import weakref

from prometheus_client.context_managers import ExceptionCounter, InprogressTracker, Timer
from prometheus_client.metrics_core import (
    METRIC_LABEL_NAME_RE,
    METRIC_NAME_RE,
    RESERVED_METRIC_LABEL_NAME_RE,
    Metric,
)
from prometheus_client.registry import REGISTRY
from prometheus_client.samples import Exemplar, Sample
from prometheus_client.utils import INF, floatToGoString

from .. import _native
from .._exposition import created_series_enabled

# (parent, labelvalues) while a parent's labels() builds a child: the child's _metric_init binds
# to the parent's native family through it, whatever its subclass's __init__ signature is.
_binding = threading.local()

# Gauges (parents or unlabelled) with a set_function() child: a native render of one calls the
# functions of its children first. Weak, so an unregistered gauge is not kept or called.
_function_gauges = weakref.WeakSet()


# The name and label checks are prometheus_client's rules with its messages, written here because
# its helpers are private (_build_full_name, _validate_labelnames) and change between versions.
def _full_name(metric_type, name, namespace, subsystem, unit):
    """prometheus_client's full-name rule: namespace_subsystem_name, a counter's `_total` dropped,
    the unit appended when missing."""
    full = "".join(part + "_" for part in (namespace, subsystem) if part) + name
    if metric_type == "counter" and full.endswith("_total"):
        full = full[:-6]
    if unit and not full.endswith("_" + unit):
        full += "_" + unit
    return full


def _check_labelname(label):
    if not METRIC_LABEL_NAME_RE.match(label):
        raise ValueError("Invalid label metric name: " + label)
    if RESERVED_METRIC_LABEL_NAME_RE.match(label):
        raise ValueError("Reserved label metric name: " + label)


def _checked_labelnames(metric, labelnames):
    labelnames = tuple(labelnames)
    for label in labelnames:
        _check_labelname(label)
        if label in metric._reserved_labelnames:
            raise ValueError("Reserved label metric name: " + label)
    return labelnames


def _check_exemplar(exemplar):
    runes = 0
    for key, value in exemplar.items():
        _check_labelname(key)
        runes += len(key) + len(value)
    if runes > 128:
        raise ValueError("Exemplar labels have %d UTF-8 characters, exceeding the limit of 128")


class _ValueView:
    """``child._value`` as prometheus_client's tests and tools read it."""

    __slots__ = ("_metric",)

    def __init__(self, metric):
        self._metric = metric

    def get(self):
        return self._metric._native_value()

    def set(self, value):
        self._metric._native_set(float(value))

    def inc(self, amount):
        self._metric._native_add(amount)


class MetricWrapperBase:
    """What the three classes share; see the module docstring."""

    _type = None
    _reserved_labelnames = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if issubclass(cls, _native.InstrumentCore):
            # The class's own descriptors of the native hot methods (client_instruments.h).
            _native.rebind_methods(cls)

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="", unit="",
                 registry=REGISTRY, _labelvalues=None):
        self._name = _full_name(self._type, name, namespace, subsystem, unit)
        self._labelnames = _checked_labelnames(self, labelnames)
        self._labelvalues = tuple(_labelvalues or ())
        self._kwargs = {}
        self._documentation = documentation
        self._unit = unit
        if not METRIC_NAME_RE.match(self._name):
            raise ValueError("Invalid metric name: " + self._name)
        # The native writer prints what prometheus_client prints except for these (rare) shapes,
        # which generate_latest() then leaves to prometheus_client's own writer.
        self._native_renderable = isinstance(documentation, str) and documentation != ""
        if self._is_parent():
            self._lock = threading.Lock()
            self._native_family(self._name, self._native_doc(), self._labelnames,
                                self._native_bounds(), self._native_mode())
        if self._is_observable():
            self._metric_init()
        if not self._labelvalues and registry:
            registry.register(self)

    # ---- prometheus_client's protocol --------------------------------------------------------

    def _is_observable(self):
        return not self._labelnames or (self._labelnames and self._labelvalues)

    def _raise_if_not_observable(self):
        if not self._is_observable():
            raise ValueError("%s metric is missing label values" % str(self._type))

    def _is_parent(self):
        return self._labelnames and not self._labelvalues

    def _get_metric(self):
        return Metric(self._name, self._documentation, self._type, self._unit)

    def describe(self):
        return [self._get_metric()]

    def collect(self):
        metric = self._get_metric()
        for suffix, labels, value, timestamp, exemplar in self._samples():
            metric.add_sample(self._name + suffix, labels, value, timestamp, exemplar)
        return [metric]

    def __str__(self):
        return f"{self._type}:{self._name}"

    def __repr__(self):
        cls = type(self)
        return f"{cls.__module__}.{cls.__name__}({self._name})"

    def _labels_slow(self, *labelvalues, **labelkwargs):
        """labels() when the native fast path has no child to return: misuse, keywords, non-str
        values or a new label set."""
        if not self._labelnames:
            raise ValueError("No label names were set when constructing %s" % self)
        if self._labelvalues:
            raise ValueError("{} already has labels set ({}); can not chain calls to .labels()".format(
                self, dict(zip(self._labelnames, self._labelvalues))))
        if labelvalues and labelkwargs:
            raise ValueError("Can't pass both *args and **kwargs")
        if labelkwargs:
            if sorted(labelkwargs) != sorted(self._labelnames):
                raise ValueError("Incorrect label names")
            labelvalues = tuple(str(labelkwargs[label]) for label in self._labelnames)
        else:
            if len(labelvalues) != len(self._labelnames):
                raise ValueError("Incorrect label count")
            labelvalues = tuple(str(value) for value in labelvalues)
        with self._lock:
            child = self._metrics.get(labelvalues)
            if child is None:
                outer = getattr(_binding, "pending", None)
                _binding.pending = (self, labelvalues)
                try:
                    child = self.__class__(self._name, documentation=self._documentation,
                                           labelnames=self._labelnames, unit=self._unit,
                                           _labelvalues=labelvalues, **self._kwargs)
                finally:
                    _binding.pending = outer
                self._metrics[labelvalues] = child
            return child

    def remove(self, *labelvalues):
        if not self._labelnames:
            raise ValueError("No label names were set when constructing %s" % self)
        if len(labelvalues) != len(self._labelnames):
            raise ValueError("Incorrect label count (expected %d, got %s)" % (
                len(self._labelnames), labelvalues))
        labelvalues = tuple(str(value) for value in labelvalues)
        with self._lock:  # detached under the lock: no labels() can rebind it meanwhile
            child = self._metrics.pop(labelvalues)
            child._native_detach(labelvalues)

    def clear(self):
        with self._lock:
            children, self._metrics = self._metrics, {}
            for labelvalues, child in children.items():
                child._native_detach(labelvalues)

    def _samples(self):
        return self._multi_samples() if self._is_parent() else self._child_samples()

    def _multi_samples(self):
        with self._lock:
            metrics = self._metrics.copy()
        for labels, metric in metrics.items():
            series_labels = list(zip(self._labelnames, labels))
            for suffix, sample_labels, value, timestamp, exemplar in metric._samples():
                yield Sample(suffix, dict(series_labels + list(sample_labels.items())), value,
                             timestamp, exemplar)

    # ---- the native side ---------------------------------------------------------------------

    def _native_doc(self):
        return self._documentation if isinstance(self._documentation, str) else ""

    def _native_bounds(self):
        return None

    def _native_mode(self):
        return getattr(self, "_multiprocess_mode", "all")

    def _metric_init(self):
        created = time.time()
        if self._type != "gauge":
            self._created = created
        pending = getattr(_binding, "pending", None)
        if pending is not None and pending[1] == self._labelvalues:
            _binding.pending = None
            source = pending[0]
        else:  # an unlabelled metric, or a child built by hand: a family of its own
            self._native_family(self._name, self._native_doc(), self._labelnames,
                                self._native_bounds(), self._native_mode())
            source = self
        self._native_bind(source, self._labelvalues, created)
        self._owner = weakref.ref(source)  # the collector a render of this child goes through

    def _set_exemplar(self, exemplar, amount):
        if exemplar:
            _check_exemplar(exemplar)
            self._exemplar = Exemplar(exemplar, amount, time.time())


class Counter(_native.CounterCore, MetricWrapperBase):
    """A counter (prometheus_client.Counter's API); ``inc`` is native."""

    _type = "counter"

    def count_exceptions(self, exception=Exception):
        self._raise_if_not_observable()
        return ExceptionCounter(self, exception)

    @property
    def _value(self):
        return _ValueView(self)

    def _native_add(self, amount):
        self.inc(amount)

    def _child_samples(self):
        sample = Sample("_total", {}, self._native_value(), None, getattr(self, "_exemplar", None))
        if created_series_enabled():
            return (sample, Sample("_created", {}, self._created, None, None))
        return (sample,)


class Gauge(_native.GaugeCore, MetricWrapperBase):
    """A gauge (prometheus_client.Gauge's API); ``inc``, ``dec``, ``set`` and
    ``set_to_current_time`` are native."""

    _type = "gauge"
    _MULTIPROC_MODES = frozenset(("all", "liveall", "min", "livemin", "max", "livemax", "sum",
                                  "livesum", "mostrecent", "livemostrecent"))

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="", unit="",
                 registry=REGISTRY, _labelvalues=None, multiprocess_mode="all"):
        self._multiprocess_mode = multiprocess_mode
        if multiprocess_mode not in self._MULTIPROC_MODES:
            raise ValueError("Invalid multiprocess mode: " + multiprocess_mode)
        super().__init__(name=name, documentation=documentation, labelnames=labelnames,
                         namespace=namespace, subsystem=subsystem, unit=unit, registry=registry,
                         _labelvalues=_labelvalues)
        self._kwargs["multiprocess_mode"] = self._multiprocess_mode

    @property
    def _value(self):
        return _ValueView(self)

    def _native_set(self, value):
        self.set(value)

    def _native_add(self, amount):
        self.inc(amount)

    def track_inprogress(self):
        self._raise_if_not_observable()
        return InprogressTracker(self)

    def time(self):
        return Timer(self, "set")

    def set_function(self, f):
        """The value becomes ``float(f())`` at each collection and render."""
        self._raise_if_not_observable()
        self._function = f
        _function_gauges.add(self._owner())

    def _child_samples(self):
        f = getattr(self, "_function", None)
        value = float(f()) if f is not None else self._native_value()
        return (Sample("", {}, value, None, None),)


def _refresh_function_gauges(collectors):
    """Sets the set_function() children of `collectors` to their functions' values, before a
    native render of them (prometheus_client calls them when it collects those gauges)."""
    for gauge in collectors:
        if gauge not in _function_gauges:
            continue
        children = list(gauge._metrics.values()) if gauge._is_parent() else [gauge]
        for child in children:
            f = getattr(child, "_function", None)
            if f is not None:
                child.set(float(f()))


class Histogram(_native.HistogramCore, MetricWrapperBase):
    """A histogram (prometheus_client.Histogram's API); ``observe`` is native."""

    _type = "histogram"
    _reserved_labelnames = ["le"]
    DEFAULT_BUCKETS = (.005, .01, .025, .05, .075, .1, .25, .5, .75, 1.0, 2.5, 5.0, 7.5, 10.0, INF)

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="", unit="",
                 registry=REGISTRY, _labelvalues=None, buckets=DEFAULT_BUCKETS):
        self._prepare_buckets(buckets)
        super().__init__(name=name, documentation=documentation, labelnames=labelnames,
                         namespace=namespace, subsystem=subsystem, unit=unit, registry=registry,
                         _labelvalues=_labelvalues)
        self._kwargs["buckets"] = buckets

    def _prepare_buckets(self, source_buckets):
        buckets = [float(b) for b in source_buckets]
        if buckets != sorted(buckets):
            raise ValueError("Buckets not in sorted order")
        if buckets and buckets[-1] != INF:
            buckets.append(INF)
        if len(buckets) < 2:
            raise ValueError("Must have at least two buckets")
        self._upper_bounds = buckets

    def _native_bounds(self):
        bounds = self._upper_bounds
        # prometheus_client writes no `_sum` below a negative first bound; NaN bounds order
        # oddly: both are left to its own writer.
        if not bounds[0] >= 0 or any(b != b for b in bounds):
            self._native_renderable = False
        return tuple(bounds[:-1])

    def time(self):
        return Timer(self, "observe")

    @property
    def _sum(self):
        return _HistogramPart(self, None)

    @property
    def _buckets(self):
        return [_HistogramPart(self, i) for i in range(len(self._upper_bounds))]

    def _child_samples(self):
        counts, total = self._native_value()
        exemplars = getattr(self, "_exemplars", {})
        samples = []
        acc = 0.0
        for i, bound in enumerate(self._upper_bounds):
            acc += counts[i]
            samples.append(Sample("_bucket", {"le": floatToGoString(bound)}, acc, None,
                                  exemplars.get(i)))
        samples.append(Sample("_count", {}, acc, None, None))
        if self._upper_bounds[0] >= 0:
            samples.append(Sample("_sum", {}, total, None, None))
        if created_series_enabled():
            samples.append(Sample("_created", {}, self._created, None, None))
        return tuple(samples)

    def _set_exemplar(self, exemplar, amount):
        if not exemplar:
            return
        for i, bound in enumerate(self._upper_bounds):
            if amount <= bound:
                _check_exemplar(exemplar)
                if not hasattr(self, "_exemplars"):
                    self._exemplars = {}
                self._exemplars[i] = Exemplar(exemplar, amount, time.time())
                return


class _HistogramPart:
    """``histogram._sum`` / ``histogram._buckets[i]`` with ``get()``, as prometheus_client's
    value objects are read."""

    __slots__ = ("_metric", "_index")

    def __init__(self, metric, index):
        self._metric, self._index = metric, index

    def get(self):
        counts, total = self._metric._native_value()
        return total if self._index is None else counts[self._index]


__all__ = ["Counter", "Gauge", "Histogram", "MetricWrapperBase"]
