"""modelmetrics for vLLM-Omni: ``modelmetrics.vllm_omni.metrics`` is a drop-in for
``vllm_omni.metrics``, and ``install()`` makes an existing vLLM-Omni installation use it -- or,
when the installed vLLM-Omni is newer than the drop-in, makes upstream's own package run on
modelmetrics' instruments.

    import modelmetrics.vllm_omni
    modelmetrics.vllm_omni.install()      # first thing in the launcher
    ...                                   # vLLM-Omni's metrics now run on modelmetrics

Two modes, chosen before anything is switched:

* *drop-in* (the fastest): ``vllm_omni.metrics`` and every ``vllm_omni.metrics.<module>`` (and
  ``vllm_omni.benchmarks.audio_continuity``) resolve to this package's modules, and, when vLLM is
  imported later, its ``unregister_vllm_metrics`` is replaced by the scoped version that keeps
  the ``vllm_omni:*`` families (§4.10). Without vLLM-Omni installed, an empty ``vllm_omni``
  package stands in so upstream-style imports still work (tests, tools). Chosen when the drop-in
  provides every module, public name and parameter of the installed ``vllm_omni.metrics``
  and its families are the installed package's (name, type, HELP, labels, buckets), both read
  from its source without importing it (``_api.py``, ``_families.py``).
* *instruments*: upstream's ``vllm_omni.metrics`` runs unchanged, but its modules' imports of
  ``prometheus_client`` get ``modelmetrics.prometheus_client`` (the same families and /metrics
  text, each call on a native instrument), and vLLM's own loggers are switched as
  ``modelmetrics.vllm.install()`` switches them. Chosen otherwise, so a vLLM-Omni newer than the
  drop-in starts and keeps every family and method it has.

One log line (logger ``modelmetrics``) says which mode was chosen and why. ``install(mode=...)``
forces one; forcing the drop-in over a vLLM-Omni it does not cover raises before anything is
switched.

Section numbers (§n) cite docs/pipeline-behaviour.md.
"""

import builtins
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import sys
import threading

from .._import_hooks import PatchingLoader, find_elsewhere

_PACKAGE = __name__  # "modelmetrics.vllm_omni"
_ALIASED = ("vllm_omni.metrics", "vllm_omni.benchmarks.audio_continuity")
_VLLM_PROMETHEUS = "vllm.v1.metrics.prometheus"
_lock = threading.Lock()
_finders = []


def _target(fullname):
    """Our module for an aliased upstream name, or None."""
    for root in _ALIASED:
        if fullname == root or fullname.startswith(root + "."):
            return _PACKAGE + fullname[len("vllm_omni") :]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Puts our already-executed module under the upstream name (the same object, not a copy)."""

    def __init__(self, target):
        self._target = target
        self._spec = None

    def create_module(self, spec):
        module = importlib.import_module(self._target)
        self._spec = module.__spec__  # importlib overwrites __spec__ next; put it back in exec
        return module

    def exec_module(self, module):
        if self._spec is not None:
            module.__spec__ = self._spec  # keeps reload(), importlib.resources and our name


def _scope_unregister(module):
    """vLLM's unregister_vllm_metrics, once its module has run, scoped to `vllm:` (§4.10)."""
    from .metrics import unregister_vllm_metrics

    if hasattr(module, "unregister_vllm_metrics"):
        module.unregister_vllm_metrics = unregister_vllm_metrics


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        aliased = _target(fullname)
        if aliased is not None:
            ours = importlib.util.find_spec(aliased)
            if ours is None:
                return None  # no such module of ours: let the import fail as it would upstream
            return importlib.util.spec_from_loader(
                fullname, _AliasLoader(aliased), is_package=ours.submodule_search_locations is not None)
        if fullname == _VLLM_PROMETHEUS:
            spec = find_elsewhere(
                lambda f: f is self or isinstance(f, (_AliasFinder, _StandInFinder)), fullname,
                path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = PatchingLoader(spec.loader, _scope_unregister)
            return spec
        return None


class _StandInFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: an empty `vllm_omni` (and `vllm_omni.benchmarks`) package when no
    real vLLM-Omni is installed."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in ("vllm_omni", "vllm_omni.benchmarks"):
            return None
        spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
        spec.submodule_search_locations = []
        return spec


DROP_IN = "drop-in"
INSTRUMENTS = "instruments"
_log = logging.getLogger("modelmetrics")
_state = {"mode": None}


def _prometheus_client_import(name, globals=None, locals=None, fromlist=(), level=0):
    """``__import__`` for upstream's metrics modules: prometheus_client is modelmetrics'. Its
    submodules stay prometheus_client's own (``from prometheus_client import core``,
    ``import prometheus_client.registry``), reached through modelmetrics' package."""
    if level != 0 or (name != "prometheus_client" and not name.startswith("prometheus_client.")):
        return builtins.__import__(name, globals, locals, fromlist, level)
    fast = importlib.import_module("modelmetrics.prometheus_client")
    if name != "prometheus_client":  # import prometheus_client.x[.y]
        submodule = importlib.import_module(name)
        if fromlist:
            return submodule
        first = name.split(".")[1]
        if not hasattr(fast, first):
            setattr(fast, first, importlib.import_module(f"prometheus_client.{first}"))
        return fast
    for attr in fromlist or ():
        if attr != "*" and not hasattr(fast, attr):
            try:
                setattr(fast, attr, importlib.import_module(f"prometheus_client.{attr}"))
            except ImportError:
                pass  # not a submodule either: the import raises as it would upstream
    return fast


def _redirecting_builtins():
    """The builtins of an upstream module in instruments mode, taken when it is loaded: a plain
    dict (CPython's fast path for builtins needs one) of ``builtins`` with the ``__import__``
    above. A builtin added after the module loaded is not seen by it."""
    return dict(vars(builtins), __import__=_prometheus_client_import)



class _InstrumentsLoader(importlib.abc.Loader):
    """Executes upstream's module with builtins whose ``__import__`` hands it modelmetrics'
    prometheus_client (its functions keep those builtins, so a later import inside one does
    too); everything else is the wrapped loader's."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__builtins__ = _redirecting_builtins()
        self._loader.exec_module(module)


class _InstrumentsFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "vllm_omni.metrics" and not fullname.startswith("vllm_omni.metrics."):
            return None
        spec = find_elsewhere(lambda f: isinstance(f, _InstrumentsFinder), fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _InstrumentsLoader(spec.loader)
        return spec


_NOT_INSTALLED = object()


def installed_vllm_omni_metrics():
    """The folder of the installed vLLM-Omni's ``metrics`` package, found as an import would find
    it (sys.path, and the finders editable installs put on sys.meta_path) without importing
    anything; None when vLLM-Omni is installed but that folder's sources cannot be found (a
    compiled-only install: the caller cannot check it); _NOT_INSTALLED when there is none."""
    spec = find_elsewhere(lambda f: f in _finders, "vllm_omni", None, None)
    if spec is None:
        return _NOT_INSTALLED
    for location in spec.submodule_search_locations or ():
        metrics = os.path.join(location, "metrics")
        if os.path.isdir(metrics):
            return metrics
    return None


def _choose(mode):
    """(mode, why): the mode to use, and the reason the log line gives."""
    from . import _api, _families

    if mode not in (None, DROP_IN, INSTRUMENTS):
        raise ValueError(f"install(mode={mode!r}): mode is 'drop-in' or 'instruments'")
    folder = installed_vllm_omni_metrics()
    if mode == INSTRUMENTS:
        if folder is _NOT_INSTALLED:
            raise RuntimeError("install(mode='instruments'): no vLLM-Omni is installed "
                               "(no vllm_omni package can be imported)")
        return INSTRUMENTS, f"asked for, over {folder}"
    if folder is _NOT_INSTALLED:
        return DROP_IN, "no vLLM-Omni is installed: the drop-in stands in for it"
    if folder is None:
        mismatch = "the installed vLLM-Omni's vllm_omni/metrics sources cannot be found"
        if mode == DROP_IN:
            raise RuntimeError(f"install(mode='drop-in'): {mismatch}")
        return INSTRUMENTS, mismatch
    try:
        missing = _api.first_missing(_api.read_package(folder), _api.read_drop_in())
        if missing is not None:
            mismatch = f"the drop-in lacks {missing}, which the installed {folder} defines"
        else:  # the same API; the drop-in must print the installed package's families too
            difference = _families.first_difference(*_families.families(folder))
            mismatch = difference and (f"the drop-in's families are not those of the installed "
                                       f"{folder}: {difference}")
    except Exception as e:  # noqa: BLE001 - an unreadable package must not stop the server
        mismatch = f"the installed {folder} could not be read ({type(e).__name__}: {e})"
    if not mismatch:
        return DROP_IN, f"it provides everything the installed {folder} defines"
    if mode == DROP_IN:
        raise RuntimeError(f"install(mode='drop-in'): {mismatch}; use mode='instruments' or "
                           "leave mode unset")
    return INSTRUMENTS, mismatch


def install(mode=None):
    """Makes vLLM-Omni's metrics run on modelmetrics, in the mode given or, by default, the
    fastest one that covers the installed vLLM-Omni (see the module's doc). Returns the mode.

    Idempotent (a second call returns the first one's mode). Raises RuntimeError, having switched
    nothing, when upstream's ``vllm_omni.metrics`` was already imported (its prometheus_client
    families are registered then; call install() first), when the drop-in is forced over a
    vLLM-Omni it does not cover, or when instruments are forced without a vLLM-Omni.
    """
    with _lock:
        if _state["mode"] is not None:
            return _state["mode"]
        for name, module in list(sys.modules.items()):
            if _target(name) is not None and not getattr(module, "__name__", "").startswith(_PACKAGE):
                raise RuntimeError(
                    f"{name} was imported before modelmetrics.vllm_omni.install(); "
                    "call install() first, before anything imports vllm_omni.metrics"
                )
        chosen, why = _choose(mode)
        if chosen == DROP_IN:
            vllm_prometheus = sys.modules.get(_VLLM_PROMETHEUS)
            if vllm_prometheus is not None:
                _scope_unregister(vllm_prometheus)  # first: a failure here switches nothing
            alias, stand_in = _AliasFinder(), _StandInFinder()
            sys.meta_path.insert(0, alias)
            sys.meta_path.append(stand_in)
            _finders.extend([alias, stand_in])
        else:
            from .. import vllm as _vllm

            _vllm.install()  # vLLM's loggers, and the stat logger upstream derives from them
            finder = _InstrumentsFinder()
            sys.meta_path.insert(0, finder)
            _finders.append(finder)
        _state["mode"] = chosen
        _announce(f"modelmetrics.vllm_omni: {chosen} mode: {why}")
        return chosen


def _announce(line):
    """One INFO line on the ``modelmetrics`` logger, or on stderr when logging is not set up
    (a server's log must show which mode its metrics run in)."""
    if _log.hasHandlers():
        _log.info("%s", line)
    else:
        print(line, file=sys.stderr, flush=True)


def uninstall():
    """Removes the import hooks (modules already imported stay imported)."""
    with _lock:
        for finder in _finders:
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
        _finders.clear()
        _state["mode"] = None


def installed() -> bool:
    return bool(_finders)


def mode():
    """The mode install() chose ('drop-in' or 'instruments'), or None before it."""
    return _state["mode"]


__all__ = ["install", "uninstall", "installed", "mode", "DROP_IN", "INSTRUMENTS"]
