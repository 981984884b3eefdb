"""A drop-in for prometheus_client whose Counter, Gauge and Histogram run on the native core.

    import modelmetrics.prometheus_client as prometheus_client

is the whole switch: ``Counter``, ``Gauge``, ``Histogram`` and ``generate_latest`` are
modelmetrics' (prometheus_client's API, exceptions and ``/metrics`` text, at a tenth of its cost
per call; see metrics.py), everything else is prometheus_client's own (``CollectorRegistry``,
``REGISTRY``, ``Info``, ``Summary``, ``Enum``, ``Metric``, the HTTP helpers, ...), except
``multiprocess``: with ``PROMETHEUS_MULTIPROC_DIR`` set, every process's instruments share one
memory segment and ``modelmetrics.prometheus_client.multiprocess.MultiProcessCollector`` (which
``prometheus_client.multiprocess`` then points at) prints the whole service. The
instruments register into the registry given (default prometheus_client's ``REGISTRY``), so
prometheus_client's own exposition helpers print them too (through its Python writer), and
``modelmetrics.render()`` includes those in the default registry. Needs prometheus_client
(Debian's python3-prometheus-client, 0.16 or later).
"""

import prometheus_client as _pc
from prometheus_client import *  # noqa: F401,F403 - the rest of prometheus_client's API

from . import multiprocess as _multiprocess
from .exposition import generate_latest
from .metrics import Counter, Gauge, Histogram

__all__ = tuple(_pc.__all__)

# With PROMETHEUS_MULTIPROC_DIR (or MODELMETRICS_MULTIPROC) set, the instruments record into the
# service's shared segment; prometheus_client.multiprocess then serves it (multiprocess.py).
_multiprocess.patch_prometheus_client()
