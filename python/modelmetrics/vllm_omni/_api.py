"""The public API of a ``vllm_omni.metrics`` package, read without importing it, and whether the
drop-in provides all of it.

Importing upstream's package would register its prometheus_client families (and may import vLLM
and torch), so the installed package is read from its source with ``ast``: each module, its
public names, and the parameters of its functions, classes and public methods. The drop-in is
read the same way, except that a name bound to a class of ``modelmetrics._native`` is read from
that class (``inspect.signature``; importing ``_native`` registers nothing).

``first_missing(upstream, ours)`` names the first thing a program written for upstream could use
that the drop-in lacks -- a module, a name, a parameter -- or returns None.
"""

import ast
import inspect
import os
import stat

_PACKAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metrics")
_MAX_FILE_BYTES = 4 * 1024 * 1024


class Callable:
    """What a call may pass: positional parameter names in order, keyword-only names, the
    required ones, and whether *args / **kwargs are taken. A dataclass's constructor is compared
    by its field names only (nobody passes thirty fields by position)."""

    def __init__(self, positional, keyword_only, required, varargs=False, varkw=False,
                 by_name=False, posonly=0):
        self.positional = list(positional)
        self.posonly = posonly  # how many leading positional parameters take no keyword
        self.keyword_only = list(keyword_only)
        self.required = set(required)
        self.varargs = varargs
        self.varkw = varkw
        self.by_name = by_name

    def accepts(self, other):
        """The first of `other`'s parameters a call written for it may pass that this one does
        not take, or None: every call `other` accepts must bind here too."""
        names = set(self.positional[self.posonly:]) | set(self.keyword_only)
        for i, name in enumerate(other.positional):
            if self.by_name and other.by_name:
                if name not in names and not self.varkw:
                    return name
                continue
            if i < len(self.positional):
                if self.positional[i] != name or (i < self.posonly and i >= other.posonly):
                    return name  # another name, or a keyword call `other` takes
            elif not (self.varargs and self.varkw):
                return name  # positional and keyword calls must both bind
        for name in other.keyword_only:
            if name not in names and not self.varkw:
                return name
        if other.varargs and not self.varargs:
            return "*args"
        if other.varkw and not self.varkw:
            return "**kwargs"
        extra = self.required - other.required  # required here, optional (or absent) there
        return f"(it requires {sorted(extra)[0]})" if extra else None


def _from_arguments(args, skip_first):
    positional = [a.arg for a in args.posonlyargs + args.args]
    defaults = len(args.defaults)
    required = positional[: len(positional) - defaults] if defaults else list(positional)
    kw_required = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
    posonly = len(args.posonlyargs)
    if skip_first and positional:
        positional = positional[1:]
        required = required[1:]
        posonly = max(posonly - 1, 0)
    return Callable(positional, [a.arg for a in args.kwonlyargs], required + kw_required,
                    args.vararg is not None, args.kwarg is not None, posonly=posonly)


def _from_signature(signature, skip_first):
    positional, keyword_only, required = [], [], []
    varargs = varkw = False
    posonly = 0
    for i, p in enumerate(signature.parameters.values()):
        if skip_first and i == 0 and p.kind != p.KEYWORD_ONLY:
            continue
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional.append(p.name)
            posonly += p.kind == p.POSITIONAL_ONLY
        elif p.kind == p.KEYWORD_ONLY:
            keyword_only.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            varargs = True
        else:
            varkw = True
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            required.append(p.name)
    return Callable(positional, keyword_only, required, varargs, varkw, posonly=posonly)


def _is_dataclass(node):
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "dataclass":
            return True
    return False


def _class_api(node, classes, memo=None, visiting=None):
    """(constructor, {public method: Callable}) of a class statement, with what it inherits from
    classes of the same module (`classes`: name -> statement); each class read once."""
    memo = {} if memo is None else memo
    visiting = set() if visiting is None else visiting
    if id(node) in memo:
        return memo[id(node)]
    visiting.add(id(node))
    methods, fields, init = {}, [], None
    for base in node.bases:
        parent = classes.get(getattr(base, "id", None))
        if parent is not None and id(parent) not in visiting:
            parent_init, parent_methods = _class_api(parent, classes, memo, visiting)
            methods.update(parent_methods)
            init = parent_init or init
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            static = any(getattr(d, "id", "") == "staticmethod" for d in item.decorator_list)
            api = _from_arguments(item.args, skip_first=not static)
            if item.name == "__init__":
                init = api
            elif not item.name.startswith("_"):
                methods[item.name] = api
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            fields.append((item.target.id, item.value is not None))
    if _is_dataclass(node):
        init = Callable([f for f, _ in fields], [], [f for f, has in fields if not has],
                        by_name=True)
    visiting.discard(id(node))
    memo[id(node)] = (init, methods)
    return init, methods


def _type_checking(test):
    """Whether an if-test is ``TYPE_CHECKING`` (or ``typing.TYPE_CHECKING``)."""
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
    return name == "TYPE_CHECKING"


def _main_guard(test):
    """Whether an if-test is ``__name__ == "__main__"``."""
    return (isinstance(test, ast.Compare) and getattr(test.left, "id", None) == "__name__" and
            any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators))


def _statements(body):
    """The module's statements, with those of its top-level if/try/with blocks (a class defined
    only when vLLM is importable is still part of the API)."""
    for node in body:
        if isinstance(node, ast.If):
            # Names bound only for type checkers, or when run as a script, are no API.
            if not _type_checking(node.test) and not _main_guard(node.test):
                yield from _statements(node.body)
            yield from _statements(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _statements(node.body)
            for handler in node.handlers:
                yield from _statements(handler.body)
            yield from _statements(node.orelse)
            yield from _statements(node.finalbody)
        elif isinstance(node, ast.With):
            yield from _statements(node.body)
        else:
            yield node


def _static_all(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__"
                                                for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                names = [e.value for e in node.value.elts
                         if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                if len(names) == len(node.value.elts):
                    return names
    return None


def _module_api(source, native=None, provided=False, submodules=()):
    """{name: (kind, constructor or function Callable or None, {method: Callable})}: the public
    names (and ``__all__``), or with `provided` every name the module binds (what the drop-in
    offers to ``from ... import``)."""
    tree = ast.parse(source)
    statements = list(_statements(tree.body))
    classes = {n.name: n for n in statements if isinstance(n, ast.ClassDef)}
    api = {}
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            api[node.name] = ("function", _from_arguments(node.args, False), {})
        elif isinstance(node, ast.ClassDef):
            init, methods = _class_api(node, classes)
            api[node.name] = ("class", init, methods)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    api.setdefault(t.id, _native_api(node.value, native) or ("value", None, {}))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    api.setdefault((alias.asname or alias.name).split(".")[0],
                                   ("value", None, {}))
    if provided:
        return api
    public = [name for name in api
              if not name.startswith("_") and not _imported(tree, name, submodules)]
    for name in _static_all(tree) or []:
        if name not in public:
            public.append(name)
    return {name: api.get(name, ("value", None, {})) for name in public}


def _imported(tree, name, submodules=()):
    """Whether `name` is bound only by an import from outside the package (typing, logging,
    torch...) or of one of the package's own modules (``from vllm_omni.metrics import
    definitions as defs``): not part of the module's API unless ``__all__`` says so."""
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            outside = True
        elif isinstance(node, ast.ImportFrom):
            outside = node.level == 0 and not (node.module or "").startswith("vllm_omni.metrics")
        else:
            continue
        for alias in node.names:
            if (alias.asname or alias.name).split(".")[0] != name:
                continue
            if outside or f"vllm_omni.metrics.{alias.name}" in submodules:
                return True
    return False


def _native_api(value, native):
    """The API of `X = _native.Y` (a class defined in C++), else None."""
    if native is None or not (isinstance(value, ast.Attribute) and
                              getattr(value.value, "id", "") == "_native"):
        return None
    cls = getattr(native, value.attr, None)
    if not isinstance(cls, type):
        return None
    try:
        init = _from_signature(inspect.signature(cls), skip_first=False)
    except (TypeError, ValueError):
        init = Callable([], [], [], True, True)
    methods = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        member = getattr(cls, name)
        if callable(member):
            try:
                methods[name] = _from_signature(inspect.signature(member), skip_first=True)
            except (TypeError, ValueError):
                methods[name] = Callable([], [], [], True, True)
    return ("class", init, methods)


def read_package(directory, package="vllm_omni.metrics", native=None, provided=False):
    """{module name: module API} of every ``.py`` under `directory` (a package's folder): its
    public names, or with `provided` every name it binds. A module that cannot be read (not a
    regular file, over 4 MiB, compiled only, not Python) is listed with the one name
    ``<unreadable: why>``, which no drop-in provides."""
    modules, sources = {}, []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        for name in sorted(files):
            stem, ext = os.path.splitext(name)
            if ext not in (".py", ".so", ".pyd", ".pyc"):
                continue
            relative = os.path.relpath(os.path.join(root, stem), directory).split(os.sep)
            if relative[-1] == "__init__":
                relative = relative[:-1]
            module = ".".join([package] + relative)
            if ext != ".py":
                if module not in modules:
                    modules[module] = _unreadable("compiled only")
                continue
            sources.append((module, os.path.join(root, name)))
    submodules = {module for module, _ in sources} | set(modules)
    for module, path in sources:
        modules[module] = _read_module(path, native, provided, submodules)
    return modules


def _unreadable(why):
    return {f"<unreadable: {why}>": ("value", None, {})}


def _read_module(path, native, provided, submodules):
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return _unreadable("not a regular file")
        if info.st_size > _MAX_FILE_BYTES:
            return _unreadable("over 4 MiB")
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            return _module_api(f.read(), native, provided, submodules)
    except (OSError, SyntaxError, ValueError, RecursionError) as e:
        return _unreadable(type(e).__name__)


def read_drop_in():
    """The drop-in's API, under upstream's module names."""
    from modelmetrics import _native

    return read_package(_PACKAGE_DIR, native=_native, provided=True)


def differences(upstream, ours):
    """Every module, name or parameter of `upstream` that `ours` lacks, as sentences, in module
    and name order."""
    for module, names in sorted(upstream.items()):
        mine = ours.get(module)
        if mine is None:
            yield f"module {module}"
            continue
        for name, (kind, call, methods) in sorted(names.items()):
            if name not in mine:
                yield f"{module}.{name}"
                continue
            _, my_call, my_methods = mine[name]
            if call is not None and my_call is not None:
                missing = my_call.accepts(call)
                if missing:
                    yield f"{module}.{name}({missing})"
            for method, api in sorted(methods.items()):
                if method not in my_methods:
                    yield f"{module}.{name}.{method}"
                    continue
                missing = my_methods[method].accepts(api)
                if missing:
                    yield f"{module}.{name}.{method}({missing})"


def first_missing(upstream, ours):
    """The first module, name or parameter of `upstream` that `ours` lacks, as a sentence; None
    when the drop-in provides all of it."""
    return next(differences(upstream, ours), None)
