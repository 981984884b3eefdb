"""A drop-in for prometheus_client whose Counter, Gauge and Histogram run on the native core.

    import modelmetrics.prometheus_client as prometheus_client

is the whole switch: ``Counter``, ``Gauge``, ``Histogram`` and ``generate_latest`` are
modelmetrics' (prometheus_client's API, exceptions and ``/metrics`` text, at a tenth of its cost
per call; see metrics.py), everything else is prometheus_client's own (``CollectorRegistry``,
``REGISTRY``, ``Info``, ``Summary``, ``Enum``, ``Metric``, the HTTP helpers, ...). The
instruments register into the registry given (default prometheus_client's ``REGISTRY``), so
prometheus_client's own exposition helpers print them too (through its Python writer), and
``modelmetrics.render()`` includes those in the default registry. Needs prometheus_client
(Debian's python3-prometheus-client, 0.16 or later).
"""

import os as _os
import warnings as _warnings

import prometheus_client as _pc
from prometheus_client import *  # noqa: F401,F403 - the rest of prometheus_client's API

from .exposition import generate_latest
from .metrics import Counter, Gauge, Histogram

__all__ = tuple(_pc.__all__)

if _os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    # prometheus_client's multiprocess mode merges per-process files at each scrape; these
    # instruments keep their values in this process, where that collector does not look.
    _warnings.warn("modelmetrics.prometheus_client: PROMETHEUS_MULTIPROC_DIR is set, but its "
                   "Counter, Gauge and Histogram keep values in this process only (a "
                   "MultiProcessCollector does not see them)", stacklevel=2)
