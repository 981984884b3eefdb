#!/usr/bin/env python3
"""Drift check: the metric families an exporter's source defines, beside what the snapshot reads.

    scripts/upstream-series.py CHECKOUT [--exporter NAME] [--modelmetrics BINARY] [--json]

CHECKOUT is an exporter's source tree, or a bare git directory (its HEAD is read with git). The
script finds every metric family the source defines -- prometheus_client's Counter/Gauge/
Histogram/Summary (Python), client_golang's *Opts{Namespace, Subsystem, Name} and
BuildFQName/NewDesc (Go), the metrics crate's counter!/gauge!/histogram! (Rust) -- with the label
names it can resolve statically, and compares them with `modelmetrics exporters`, the families
each profile row reads.

It prints, for the exporter's profile (--exporter, else every profile with a family defined
there): each row's family and whether the checkout defines it (with the labels it has there), each
older name the row falls back to, and the checkout's families no row reads. It exits 1 when a row's
current family is not defined in the checkout: a rename or a removal to act on before a release
(docs/deployment-metrics.md, "Before a release").

Static reading has limits, said in the output: labels built at run time show as `?`, and a family
whose name is computed (not a literal or a constant) is not found.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

SOURCE_SUFFIXES = (".py", ".go", ".rs")
MAX_FILE_BYTES = 2 * 1024 * 1024
SKIP_PARTS = ("/vendor/", "/node_modules/", "/third_party/", "/.git/")


def read_sources(checkout):
    """Yields (path, text) for every source file of the checkout (work tree or bare git)."""
    if os.path.isdir(os.path.join(checkout, ".git")) or not _is_bare_git(checkout):
        for root, _, files in os.walk(checkout):
            if any(part in root + "/" for part in SKIP_PARTS):
                continue
            for name in files:
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(root, name)
                if os.path.getsize(path) > MAX_FILE_BYTES:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    yield os.path.relpath(path, checkout), f.read()
        return
    names = subprocess.run(["git", "-C", checkout, "ls-tree", "-r", "-l", "HEAD"],
                           check=True, capture_output=True, text=True).stdout
    for line in names.splitlines():
        meta, path = line.split("\t", 1)
        size = meta.split()[3]
        if not path.endswith(SOURCE_SUFFIXES) or any(p in "/" + path for p in SKIP_PARTS):
            continue
        if size == "-" or int(size) > MAX_FILE_BYTES:
            continue
        text = subprocess.run(["git", "-C", checkout, "show", "HEAD:" + path], check=True,
                              capture_output=True).stdout.decode("utf-8", errors="replace")
        yield path, text


def _is_bare_git(path):
    return os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects"))


def checkout_commit(checkout):
    try:
        return subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"


def call_text(text, start, limit=3000):
    """The text of the call whose '(' or '{' is at `start`, up to its matching close."""
    opening = text[start]
    closing = {"(": ")", "{": "}"}[opening]
    depth = 0
    for i in range(start, min(len(text), start + limit)):
        if text[i] == opening:
            depth += 1
        elif text[i] == closing:
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:start + limit]


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


# --- Go ---------------------------------------------------------------------------------------

GO_CONST = re.compile(r'\b([A-Za-z_]\w*)\s*(?:string\s*)?=\s*"([^"\n]*)"')
GO_ALIAS = re.compile(r'\b([A-Za-z_]\w*)\s*(?:string\s*)?=\s*([A-Za-z_][\w.]*)[ \t]*(?://.*)?$', re.M)
GO_SLICE = re.compile(r'\b([A-Za-z_]\w*)\s*=\s*(\[\]string\{[^}]*\}|append\()')
UNRESOLVED = []  # definitions whose name is not a literal or a constant
GO_OPTS = re.compile(r'\b(Counter|Gauge|Histogram|Summary)Opts\s*\{')
GO_FQNAME = re.compile(r'BuildFQName\(')


class GoNames:
    """String constants and []string variables of a Go tree, resolved by their last name."""

    def __init__(self, sources):
        self.strings = {}
        self.aliases = {}
        self.slices = {}
        for _, text in sources:
            for m in GO_CONST.finditer(text):
                self.strings.setdefault(m.group(1), m.group(2))
            for m in GO_ALIAS.finditer(text):
                self.aliases.setdefault(m.group(1), m.group(2))
            for m in GO_SLICE.finditer(text):
                start = m.start(2) + (len(m.group(2)) - 1 if m.group(2) == "append(" else 0)
                expr = m.group(2) if m.group(2) != "append(" else "append" + call_text(text, start)
                self.slices.setdefault(m.group(1), expr)

    def string(self, expr, depth=0):
        expr = expr.strip()
        if expr.startswith('"') and expr.endswith('"'):
            return expr[1:-1]
        name = expr.split(".")[-1]
        if name in self.strings:
            return self.strings[name]
        alias = self.aliases.get(name)
        if alias and alias.split(".")[-1] != name and depth < 8:
            return self.string(alias, depth + 1)
        return None

    def labels(self, expr, depth=0):
        """The label names an expression holds, or None when they are not static."""
        expr = expr.strip().rstrip(",").strip()
        if depth > 8 or not expr:
            return None
        if expr.endswith("..."):
            expr = expr[:-3]
        if expr in ("nil", "[]string{}"):
            return []
        if expr.startswith("[]string{"):
            return re.findall(r'"([^"]*)"', expr)
        if expr.startswith("append("):
            out = []
            for part in split_args(expr[len("append("):-1]):
                part = part.strip()
                if part.startswith('"'):
                    out.append(part.strip('"'))
                    continue
                inner = self.labels(part, depth + 1)
                if inner is None:
                    return None
                out += inner
            return out
        name = expr.split(".")[-1]
        if re.fullmatch(r"\w+", name) and name in self.slices:
            return self.labels(self.slices[name], depth + 1)
        return None


def first_arg(text):
    """The argument `text` starts with: up to a ',' or ')' outside brackets."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                return text[:i]
            depth -= 1
        elif ch == "," and depth == 0:
            return text[:i]
    return text


def split_args(text):
    out, depth, current = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        out.append(current)
    return out


def go_families(path, text, names):
    for m in GO_OPTS.finditer(text):
        block = call_text(text, m.end() - 1)
        fields = dict(re.findall(r'\b(Namespace|Subsystem|Name)\s*:\s*([^,\n}]+)', block))
        if "Name" not in fields:
            continue
        parts = [names.string(fields.get(k, '""')) for k in ("Namespace", "Subsystem", "Name")]
        if None in parts:
            UNRESOLVED.append(f"{path}:{line_of(text, m.start())}")
            continue
        name = "_".join(p for p in parts if p)
        # The labels: the constructor's argument after the Opts block.
        rest = text[m.start() + len(m.group(0)) - 1 + len(block):][:400]
        labels = None
        arg = re.match(r'\s*,\s*', rest)
        if arg:
            expr = first_arg(rest[arg.end():])
            labels = names.labels(expr) if expr.strip() else []
        elif re.match(r'\s*\)', rest):
            labels = []
        yield family(name, m.group(1).lower(), labels, path, line_of(text, m.start()))
    for m in GO_FQNAME.finditer(text):
        args = split_args(call_text(text, m.end() - 1)[1:-1])
        if len(args) != 3:
            continue
        parts = [names.string(a) for a in args]
        if parts[2] is None:
            continue
        yield family("_".join(p for p in parts if p), "gauge", None, path,
                     line_of(text, m.start()))


# --- Python and Rust --------------------------------------------------------------------------

PY_METRIC = re.compile(r'\b(Counter|Gauge|Histogram|Summary)\(')
RS_METRIC = re.compile(r'\b(?:describe_)?(counter|gauge|histogram)!\(\s*"([^"]+)"')


def python_families(path, text):
    for m in PY_METRIC.finditer(text):
        call = call_text(text, m.end() - 1)
        named = re.match(r'\(\s*(?:name\s*=\s*)?[rf]?["\']([^"\'{}]+)["\']', call)
        if not named:
            named = re.search(r'\bname\s*=\s*[rf]?["\']([^"\'{}]+)["\']', call)
        if not named or not re.fullmatch(r"[A-Za-z_:][\w:]*", named.group(1)):
            continue
        yield family(named.group(1), m.group(1).lower(), python_labels(call), path,
                     line_of(text, m.start()))


def python_labels(call):
    """The labelnames of a prometheus_client constructor call: keyword or third positional."""
    args = split_args(call[1:-1])
    keyword = [a for a in args if re.match(r"\s*labelnames\s*=", a)]
    positional = [a for a in args if not re.match(r"\s*\w+\s*=", a)]
    if keyword:
        expr = keyword[0].split("=", 1)[1]
    elif len(positional) >= 3:
        expr = positional[2]
    else:
        return []
    expr = expr.strip()
    if expr[:1] in "[(" and expr[-1:] in "])":
        return re.findall(r'["\']([^"\']+)["\']', expr)
    return None  # built at run time


def rust_families(path, text):
    for m in RS_METRIC.finditer(text):
        labels = None  # describe_*! names no labels
        if not m.group(0).startswith("describe_"):
            call = call_text(text, text.index("(", m.start()))
            labels = re.findall(r'"(\w+)"\s*=>', call)
            if "=>" in call.replace('"', "").split(")")[0] and not labels:
                labels = None  # labels from variables
        yield family(m.group(2), m.group(1), labels, path, line_of(text, m.start()))


METRIC_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def family(name, kind, labels, path, line):
    return {"name": name, "type": kind, "labels": labels, "where": f"{path}:{line}"}


def defined_families(checkout):
    sources = list(read_sources(checkout))
    names = GoNames([s for s in sources if s[0].endswith(".go")])
    found = {}
    for path, text in sources:
        if path.endswith(".go"):
            found_here = go_families(path, text, names)
        elif path.endswith(".py"):
            found_here = python_families(path, text)
        else:
            found_here = rust_families(path, text)
        for f in found_here:
            if not METRIC_NAME.fullmatch(f["name"]):
                continue  # a display name or a computed one, not a family
            key = base_name(f["name"])
            if key not in found or (found[key]["labels"] is None and f["labels"] is not None):
                found[key] = f
    return found, len(sources)


def base_name(name):
    """A family's name as exposition and profiles spell it alike: without a counter's _total."""
    return name[:-len("_total")] if name.endswith("_total") else name


# --- The comparison ---------------------------------------------------------------------------

def catalog(binary):
    out = subprocess.run([binary, "exporters"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def compare(profiles, found):
    report = []
    read = set()
    for profile in profiles:
        rows = []
        for row in profile["rows"]:
            names = [(row["family"], None)] + [(o["family"], o["until"]) for o in row["older"]]
            for name, until in names:
                read.add(base_name(name))
                hit = found.get(base_name(name))
                rows.append({"key": row["key"], "family": name, "older_until": until,
                             "select": row.get("select", ""), "defined": hit is not None,
                             "labels": hit["labels"] if hit else None,
                             "where": hit["where"] if hit else ""})
        report.append({"exporter": profile["name"], "role": profile["role"],
                       "shape": profile["shape"], "rows": rows})
    unread = sorted(f for f in found if f not in read)
    return report, unread


def print_text(report, unread, found, commit, files):
    print(f"checkout at {commit}: {len(found)} metric families defined in {files} source files")
    for profile in report:
        print(f"\n{profile['exporter']} ({profile['role']}, {profile['shape']}):")
        for row in profile["rows"]:
            state = "ok" if row["defined"] else ("absent" if row["older_until"] else "MISSING")
            kind = f"older ({row['older_until']})" if row["older_until"] else "reads"
            labels = "?" if row["labels"] is None else ",".join(row["labels"]) or "-"
            if not row["defined"]:
                labels = ""
            print(f"  {state:8} {row['key']:24} {kind:48} {row['family']}{row['select']}"
                  f"  [{labels}] {row['where']}")
    print(f"\nfamilies no row reads ({len(unread)}):")
    for name in unread:
        f = found[name]
        labels = "?" if f["labels"] is None else ",".join(f["labels"]) or "-"
        print(f"  {f['type']:9} {f['name']}  [{labels}] {f['where']}")
    print("\nlabels `?`: built at run time, not read statically")
    if UNRESOLVED:
        print(f"{len(UNRESOLVED)} definitions with a computed name were skipped: "
              + ", ".join(UNRESOLVED[:10]) + (" ..." if len(UNRESOLVED) > 10 else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", help="an exporter's source tree or bare git directory")
    parser.add_argument("--exporter", help="a profile name (see `modelmetrics exporters`)")
    parser.add_argument("--modelmetrics", help="the modelmetrics binary (default: the build's)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()

    binary = args.modelmetrics or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                               "..", "build", "src", "cli", "modelmetrics")
    if not os.path.exists(binary):
        binary = shutil.which("modelmetrics")
    if not binary:
        sys.exit("upstream-series.py: no modelmetrics binary (build it, or pass --modelmetrics)")
    if not os.path.isdir(args.checkout):
        sys.exit(f"upstream-series.py: {args.checkout}: not a directory")

    found, files = defined_families(args.checkout)
    profiles = catalog(binary)
    if args.exporter:
        profiles = [p for p in profiles if p["name"] == args.exporter]
        if not profiles:
            sys.exit(f"upstream-series.py: no exporter profile named {args.exporter}")
    else:
        profiles = [p for p in profiles
                    if any(base_name(r["family"]) in found for r in p["rows"])]
    report, unread = compare(profiles, found)
    commit = checkout_commit(args.checkout)
    if args.json:
        print(json.dumps({"commit": commit, "files": files, "profiles": report,
                          "unread": [found[n] for n in unread]}, indent=2))
    else:
        print_text(report, unread, found, commit, files)
    missing = [r for p in report for r in p["rows"] if not r["defined"] and not r["older_until"]]
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
