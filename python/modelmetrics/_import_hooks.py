"""Run a function on a module right after it is first imported: the way vLLM-Omni's own
``patch.py`` changes vLLM at import, used by ``modelmetrics.vllm_omni.install()`` and
``modelmetrics.vllm.install()``."""

import importlib.abc
import sys
import threading

_lock = threading.Lock()


class PatchingLoader(importlib.abc.Loader):
    """Executes the wrapped loader's module, then `patch(module)`; anything else (get_code,
    get_source, is_package, resource readers) is the wrapped loader's."""

    def __init__(self, loader, patch):
        self._loader = loader
        self._patch = patch

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._patch(module)


def find_elsewhere(skip, fullname, path, target):
    """What the other finders on sys.meta_path (editable installs included) would find; finders
    for which `skip(finder)` is true are passed over."""
    for finder in sys.meta_path:
        if skip(finder):
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec = find(fullname, path, target)
        if spec is not None:
            return spec
    return None


class AfterImport(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: wraps the loader of each named module so that its patch runs when
    the module is executed."""

    def __init__(self, patches):
        self._patches = dict(patches)  # module name -> patch(module)

    def find_spec(self, fullname, path, target=None):
        patch = self._patches.get(fullname)
        if patch is None:
            return None
        spec = find_elsewhere(lambda f: isinstance(f, AfterImport), fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = PatchingLoader(spec.loader, patch)
        return spec


def after_import(patches):
    """Applies {module name: patch} now to the modules already imported and, through a finder,
    to the others when they are imported. Returns the finder (None when all were imported)."""
    with _lock:
        pending = {}
        for name, patch in patches.items():
            module = sys.modules.get(name)
            if module is not None:
                patch(module)
            else:
                pending[name] = patch
        if not pending:
            return None
        finder = AfterImport(pending)
        sys.meta_path.insert(0, finder)
        return finder
