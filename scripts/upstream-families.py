#!/usr/bin/env python3
"""Drift check for the Python half: a vLLM-Omni checkout's metric families and public API beside
modelmetrics' catalog and drop-in.

    build/venv/bin/python scripts/upstream-families.py CHECKOUT [--json]

CHECKOUT is a vLLM-Omni source tree or bare git directory (its HEAD is read). From its
``vllm_omni/metrics`` package, read with ``ast`` (nothing of it is imported), the script lists:

1. every prometheus_client family it constructs (``Counter``/``Gauge``/``Histogram``): name,
   type, HELP, label names and buckets, with constants resolved across the package
   (``defs.E2E_REQUEST_LATENCY_S``, ``list(defs.PIPELINE_LABELS)``), beside the native catalog's
   row (``modelmetrics._native.catalog()``): `ok`, what differs, `new` (not in the catalog), and
   the catalog's `vllm_omni:` families the checkout does not define;
2. every module, public name and parameter of the package that the drop-in lacks (what makes
   ``install()`` choose the instruments mode; ``modelmetrics/vllm_omni/_api.py``).

It exits 1 when anything differs: the maintainer's step before a release (docs/python.md, "Before
a release"). Values built at run time print as `?` and are not compared.
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile

from modelmetrics import _native
from modelmetrics.vllm_omni import _api

UNKNOWN = "?"
UNRESOLVED = []  # constructions whose family name is built at run time
KINDS = {"Counter": "counter", "Gauge": "gauge", "Histogram": "histogram"}


def metrics_folder(checkout, scratch):
    """The checkout's vllm_omni/metrics folder (a bare git directory's HEAD extracted to
    `scratch`) and the commit."""
    def git(*args):
        return subprocess.run(["git", "-C", checkout, *args], check=True, capture_output=True)

    try:
        commit = git("rev-parse", "HEAD").stdout.decode().strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        commit = "unknown"
    folder = os.path.join(checkout, "vllm_omni", "metrics")
    if os.path.isdir(folder):
        return folder, commit
    archive = git("archive", "HEAD", "vllm_omni/metrics").stdout
    subprocess.run(["tar", "-x", "-C", scratch], input=archive, check=True)
    return os.path.join(scratch, "vllm_omni", "metrics"), commit


class Package:
    """The package's modules, with their top-level constants evaluated on demand."""

    def __init__(self, folder):
        self.trees = {}
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
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


def families(package):
    """{name: {type, help, labels, buckets, where}} of every family the package constructs."""
    found = {}
    for module, tree in package.trees.items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            kind = KINDS.get(func.id if isinstance(func, ast.Name) else
                             func.attr if isinstance(func, ast.Attribute) else None)
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
                            UNKNOWN if buckets is not None else "prometheus_client's default"),
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
        diffs = [field for field in ("type", "help", "labels", "buckets")
                 if family[field] != UNKNOWN and family[field] != "prometheus_client's default"
                 and family[field] != ours[field]]
        differ |= bool(diffs)
        rows.append((name, "differs: " + ", ".join(diffs) if diffs else "ok", family["where"]))
    for name in sorted(set(catalog) - set(upstream)):
        if name.startswith("vllm_omni:"):
            rows.append((name, "only in the catalog", ""))
            differ = True
    return rows, differ


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder, commit = metrics_folder(args.checkout, scratch)
        package = Package(folder)
        upstream = families(package)
        catalog = {row[0][: -len("_total")] if row[1] == "counter" and row[0].endswith("_total")
                   else row[0]: row for row in _native.catalog()}
        rows, differ = compare(upstream, catalog)
        api = list(_api.differences(_api.read_package(folder), _api.read_drop_in()))
    if args.json:
        print(json.dumps({"commit": commit, "families": [
            {"name": n, "state": s, "where": w} for n, s, w in rows], "api": api}, indent=2))
    else:
        print(f"vLLM-Omni {commit}: {len(upstream)} families, {len(api)} API differences")
        for name, state, where in rows:
            print(f"  {state:40} {name}  {where}")
        if UNRESOLVED:
            print("  (not compared: a family name built at run time at " +
                  ", ".join(UNRESOLVED) + ")")
        print("the drop-in lacks:" if api else "the drop-in has every module, name and parameter")
        for line in api:
            print(f"  {line}")
    return 1 if differ or api else 0


if __name__ == "__main__":
    sys.exit(main())
