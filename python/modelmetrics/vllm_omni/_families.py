"""The metric families a ``vllm_omni.metrics`` package constructs, read without importing it,
and how they compare with the native catalog (the drop-in's families).

``families(folder)`` walks the package's modules with ``ast`` and evaluates, for every
prometheus_client ``Counter``/``Gauge``/``Histogram`` construction, its name, HELP, label names and
buckets from literals and the package's own constants (``defs.E2E_REQUEST_LATENCY_S``,
``list(defs.PIPELINE_LABELS)``). ``compare(upstream)`` sets them beside the catalog:
``install()`` takes the drop-in only when every family of the installed package is in the catalog,
defined alike, so the drop-in never lacks a family or prints one otherwise;
``scripts/upstream-families.py`` prints the whole comparison for a maintainer.
"""

import ast
import os
import stat

_MAX_FILE_BYTES = 4 * 1024 * 1024

UNKNOWN = "?"
UNRESOLVED = []  # constructions that cannot be compared: a name built at run time, a Summary...
KINDS = {"Counter": "counter", "Gauge": "gauge", "Histogram": "histogram"}
OTHER_KINDS = ("Summary", "Info", "Enum")  # families the catalog has no kind for
# prometheus_client's Histogram.DEFAULT_BUCKETS (+Inf implicit).
DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]


def _prometheus_names(tree):
    """{local name: prometheus_client class name} of the names a module binds to
    prometheus_client's metric classes: ``from prometheus_client import Gauge [as G]``,
    ``_G = Gauge``, ``class _Relabel(Gauge)``; and the local names of ``import prometheus_client``
    (as "module")."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prometheus_client"):
            for alias in node.names:
                if alias.name in KINDS or alias.name in OTHER_KINDS:
                    names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "prometheus_client":
                    names[alias.asname or alias.name] = "module"
    for _ in range(3):  # aliases and subclasses of those, a few levels deep
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and getattr(node.value, "id", None) in names:
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        names.setdefault(t.id, names[node.value.id])
            elif isinstance(node, ast.ClassDef):
                for base in node.bases:
                    kind = _prometheus_class(base, names)
                    if kind is not None:
                        names.setdefault(node.name, kind)
    return names


def _prometheus_class(func, names):
    """The prometheus_client class `func` names in a module with `names`, or None."""
    if isinstance(func, ast.Name):
        kind = names.get(func.id)
        return kind if kind != "module" else None
    if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and
            names.get(func.value.id) == "module" and (func.attr in KINDS or func.attr in OTHER_KINDS)):
        return func.attr
    return None


class Package:
    """The package's modules, with their top-level constants evaluated on demand."""

    def __init__(self, folder):
        self.trees = {}
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if not name.endswith(".py"):
                continue
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_FILE_BYTES:
                raise ValueError(f"{path}: not a regular source file of at most 4 MiB")
            with open(path, encoding="utf-8-sig", errors="replace") as f:
                module = "vllm_omni.metrics" + ("" if name == "__init__.py" else "." + name[:-3])
                self.trees[module] = ast.parse(f.read())
        self.envs = {}

    def env(self, module):
        """{name: value} of the module's top-level assignments and imports."""
        if module in self.envs:
            return self.envs[module]
        env = self.envs[module] = {}
        for node in self.trees.get(module, ast.Module(body=[])).body:
            if isinstance(node, ast.ImportFrom):
                base = self.absolute(module, node)
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    env[alias.asname or alias.name] = (("module", target) if target in self.trees
                                                       else ("from", base, alias.name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in self.trees:
                        env[alias.asname] = ("module", alias.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                value = self.value(module, node.value)
                for t in targets:
                    if isinstance(t, ast.Name):
                        env[t.id] = value
        return env

    @staticmethod
    def absolute(module, node):
        if node.level == 0:
            return node.module or ""
        parts = module.split(".")
        package = parts if module == "vllm_omni.metrics" else parts[:-1]
        base = package[: len(package) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))

    def lookup(self, module, name):
        value = self.env(module).get(name, UNKNOWN)
        if isinstance(value, tuple) and value and value[0] == "from":
            return self.env(value[1]).get(value[2], UNKNOWN) if value[1] in self.trees else UNKNOWN
        return value

    def value(self, module, node):
        """The node's value when it is a literal, a constant of the package, or a list()/tuple()
        of one; else UNKNOWN."""
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if isinstance(node, ast.Name):
            return self.lookup(module, node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = self.env(module).get(node.value.id)
            if isinstance(owner, tuple) and owner and owner[0] == "module":
                return self.lookup(owner[1], node.attr)
            return UNKNOWN
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
                node.func.id in ("list", "tuple") and len(node.args) == 1 and not node.keywords):
            inner = self.value(module, node.args[0])
            return inner if inner is UNKNOWN else tuple(inner)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.value(module, node.left), self.value(module, node.right)
            if UNKNOWN in (left, right):
                return UNKNOWN
            try:
                return tuple(left) + tuple(right) if not isinstance(left, str) else left + right
            except TypeError:
                return UNKNOWN
        return UNKNOWN


def read_families(package):
    """{name: {type, help, labels, buckets, where}} of every family the package constructs."""
    found = {}
    for module, tree in package.trees.items():
        names = _prometheus_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            cls = _prometheus_class(node.func, names)
            if cls in OTHER_KINDS:
                UNRESOLVED.append(f"{module}:{node.lineno} ({cls})")
                continue
            kind = KINDS.get(cls)
            if kind is None:
                continue
            args = {kw.arg: kw.value for kw in node.keywords if kw.arg}
            for i, key in enumerate(("name", "documentation", "labelnames")):
                if i < len(node.args):
                    args.setdefault(key, node.args[i])
            if "name" not in args:
                continue
            name = package.value(module, args["name"])
            if not isinstance(name, str) or name == UNKNOWN:
                UNRESOLVED.append(f"{module}:{node.lineno}")
                continue
            if kind == "counter" and name.endswith("_total"):
                name = name[: -len("_total")]
            value = lambda key, default: (package.value(module, args[key]) if key in args
                                          else default)
            labels = value("labelnames", ())
            buckets = value("buckets", None) if kind == "histogram" else ()
            found[name] = {
                "type": kind,
                "help": value("documentation", UNKNOWN),
                "labels": list(labels) if isinstance(labels, (tuple, list)) else UNKNOWN,
                "buckets": ([float(b) for b in buckets if b != float("inf")]
                            if isinstance(buckets, (tuple, list)) else
                            UNKNOWN if buckets is not None else DEFAULT_BUCKETS),
                "where": f"{module}:{node.lineno}",
            }
    return found


def compare(upstream, catalog):
    rows, differ = [], False
    for name, family in sorted(upstream.items()):
        row = catalog.get(name)
        if row is None:
            rows.append((name, "new", family["where"]))
            differ = True
            continue
        _, kind, help_text, labels, buckets = row[:5]
        ours = {"type": kind, "help": help_text, "labels": list(labels),
                "buckets": [float(b) for b in buckets]}
        diffs = [field if family[field] != UNKNOWN else f"{field} (built at run time)"
                 for field in ("type", "help", "labels", "buckets")
                 if family[field] != ours[field]]
        differ |= bool(diffs)
        rows.append((name, "differs: " + ", ".join(diffs) if diffs else "ok", family["where"]))
    for name in sorted(set(catalog) - set(upstream)):
        if name.startswith("vllm_omni:"):
            rows.append((name, "only in the catalog", ""))
            differ = True
    return rows, differ




def families(folder):
    """{family name: definition} of the package in `folder`, and where a name was not static."""
    del UNRESOLVED[:]
    found = read_families(Package(folder))
    return found, list(UNRESOLVED)


def catalog():
    """{family name: catalog row} of the native catalog (counters without ``_total``)."""
    from modelmetrics import _native

    return {row[0][: -len("_total")] if row[1] == "counter" and row[0].endswith("_total")
            else row[0]: row for row in _native.catalog()}


def first_difference(upstream, unresolved):
    """The first family of `upstream` the catalog lacks or defines otherwise, as a sentence, or
    None. Families only the catalog has (an older vLLM-Omni) do not count: the drop-in then prints
    them beside the installed version's, each as the newer upstream prints it."""
    if unresolved:
        return f"a family it cannot compare ({unresolved[0]})"
    rows, _ = compare(upstream, catalog())
    for name, state, _ in rows:
        if state not in ("ok", "only in the catalog"):
            return f"family {name} ({state})"
    return None
