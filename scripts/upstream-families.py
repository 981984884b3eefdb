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
import json
import os
import subprocess
import sys
import tempfile

from modelmetrics.vllm_omni import _api, _families

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder, commit = metrics_folder(args.checkout, scratch)
        upstream, unresolved = _families.families(folder)
        rows, differ = _families.compare(upstream, _families.catalog())
        api = list(_api.differences(_api.read_package(folder), _api.read_drop_in()))
    if args.json:
        print(json.dumps({"commit": commit, "families": [
            {"name": n, "state": s, "where": w} for n, s, w in rows], "api": api}, indent=2))
    else:
        print(f"vLLM-Omni {commit}: {len(upstream)} families, {len(api)} API differences")
        for name, state, where in rows:
            print(f"  {state:40} {name}  {where}")
        if unresolved:
            print("  (not compared: a family name built at run time at " +
                  ", ".join(unresolved) + ")")
        print("the drop-in lacks:" if api else "the drop-in has every module, name and parameter")
        for line in api:
            print(f"  {line}")
    return 1 if differ or api or unresolved else 0


if __name__ == "__main__":
    sys.exit(main())
