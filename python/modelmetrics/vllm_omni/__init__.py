"""modelmetrics for vLLM-Omni: ``modelmetrics.vllm_omni.metrics`` is a drop-in for
``vllm_omni.metrics``, and ``install()`` makes an existing vLLM-Omni installation use it.

    import modelmetrics.vllm_omni
    modelmetrics.vllm_omni.install()      # first thing in the launcher
    ...                                   # vLLM-Omni now imports our vllm_omni.metrics.*

``install()`` adds an import hook, the way vLLM-Omni's own ``patch.py`` replaces upstream
functions at import: ``vllm_omni.metrics`` and every ``vllm_omni.metrics.<module>`` (and
``vllm_omni.benchmarks.audio_continuity``) resolve to this package's modules, and, when vLLM is
imported later, its ``unregister_vllm_metrics`` is replaced by the scoped version that keeps the
``vllm_omni:*`` families (§4.10). Without vLLM-Omni installed, an empty ``vllm_omni`` package
stands in so upstream-style imports still work (tests, tools).
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types

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


def install():
    """Makes ``import vllm_omni.metrics...`` resolve to ``modelmetrics.vllm_omni.metrics...``.

    Idempotent. Raises RuntimeError when upstream's ``vllm_omni.metrics`` was already imported
    (its prometheus_client families are registered then; call install() first).
    """
    with _lock:
        if _finders:
            return
        for name, module in list(sys.modules.items()):
            if _target(name) is not None and not getattr(module, "__name__", "").startswith(_PACKAGE):
                raise RuntimeError(
                    f"{name} was imported before modelmetrics.vllm_omni.install(); "
                    "call install() first, before anything imports vllm_omni.metrics"
                )
        alias, stand_in = _AliasFinder(), _StandInFinder()
        sys.meta_path.insert(0, alias)
        sys.meta_path.append(stand_in)
        _finders.extend([alias, stand_in])
        vllm_prometheus = sys.modules.get(_VLLM_PROMETHEUS)
        if vllm_prometheus is not None:
            _scope_unregister(vllm_prometheus)


def uninstall():
    """Removes the import hooks (modules already imported stay imported)."""
    with _lock:
        for finder in _finders:
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
        _finders.clear()


def installed() -> bool:
    return bool(_finders)


__all__ = ["install", "uninstall", "installed"]
