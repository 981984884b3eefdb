#!/usr/bin/env python3
"""The multiprocess mode against prometheus_client's, side by side in one run:

1. ns per call in a worker process (PROMETHEUS_MULTIPROC_DIR set, so prometheus_client's
   instruments write its mmap'd files and modelmetrics' write the shared segment): ``inc``,
   ``observe``, ``set``, unlabelled and through ``labels(...)``;
2. one scrape of 16 live worker processes that each recorded the vLLM-Omni catalog (every
   family of ``_native.catalog()``, built with each library's Counter/Gauge/Histogram):
   ``generate_latest`` of a registry holding prometheus_client's ``MultiProcessCollector``
   against one holding modelmetrics'.

    build/venv/bin/python bench/python/multiprocess_bench.py [--repeat 7] [--check]

Each figure is the best of --repeat rounds, the two sides interleaved within a round. --check
exits 1 when a target is missed (calls >= 10x, the scrape >= 20x).
"""

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import timeit

CALL_TARGET, SCRAPE_TARGET = 10.0, 20.0
WORKERS = 16


def libraries():
    import prometheus_client as theirs
    from prometheus_client import multiprocess as their_mp

    import modelmetrics.prometheus_client as ours
    from modelmetrics.prometheus_client import multiprocess as our_mp
    return (theirs, their_mp), (ours, our_mp)


def label_values(labels, worker):
    return [("m" if name == "model_name" else str(worker % 4)) for name in labels]


def record_catalog(lib, worker):
    """Every catalog family as `lib`'s instrument, one child recorded."""
    from modelmetrics import _native
    for name, kind, help_text, labels, buckets, *_ in _native.catalog():
        if kind == "counter":
            metric = lib.Counter(name, help_text, labels, registry=None)
        elif kind == "gauge":
            metric = lib.Gauge(name, help_text, labels, registry=None)
        else:
            metric = lib.Histogram(name, help_text, labels, registry=None, buckets=buckets)
        child = metric.labels(*label_values(labels, worker)) if labels else metric
        for i in range(3):
            if kind == "counter":
                child.inc(i + 1)
            elif kind == "gauge":
                child.set(worker + i)
            else:
                child.observe(buckets[min(i, len(buckets) - 1)] if buckets else i)


def catalog_worker(worker, ready, stop):
    (theirs, _), (ours, _) = libraries()
    record_catalog(theirs, worker)
    record_catalog(ours, worker)
    ready.release()
    stop.wait()


def best(statement, namespace, number, repeat):
    return min(timeit.repeat(statement, globals=namespace, number=number, repeat=1)[0]
               for _ in range(repeat)) / number


def per_call(number, repeat):
    (theirs, _), (ours, _) = libraries()
    ns = {}
    for side, lib in (("t", theirs), ("o", ours)):
        ns[side + "c"] = lib.Counter(f"bench_{side}_c", "C.", registry=None)
        ns[side + "h"] = lib.Histogram(f"bench_{side}_h", "H.", registry=None)
        ns[side + "g"] = lib.Gauge(f"bench_{side}_g", "G.", registry=None)
        ns[side + "lc"] = lib.Counter(f"bench_{side}_lc", "C.", ["route"], registry=None)
        ns[side + "lh"] = lib.Histogram(f"bench_{side}_lh", "H.", ["route"], registry=None)
    rows = [("counter inc()", "{}c.inc()"), ("histogram observe()", "{}h.observe(0.3)"),
            ("gauge set()", "{}g.set(7)"), ("labels('a').inc()", "{}lc.labels('a').inc()"),
            ("labels('a').observe()", "{}lh.labels('a').observe(0.3)")]
    out = []
    for title, template in rows:
        t_best = o_best = float("inf")
        for _ in range(repeat):  # interleaved: a slow moment hits both sides
            t_best = min(t_best, best(template.format("t"), ns, number, 1))
            o_best = min(o_best, best(template.format("o"), ns, number, 1))
        out.append((title, t_best * 1e9, o_best * 1e9))
    return out


def scrape(repeat):
    ctx = mp.get_context("fork")
    ready, stop = ctx.Semaphore(0), ctx.Event()
    procs = [ctx.Process(target=catalog_worker, args=(w, ready, stop)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire()
    try:
        (theirs, _), (ours, our_mp) = libraries()
        their_registry, our_registry = theirs.CollectorRegistry(), ours.CollectorRegistry()
        # prometheus_client's own collector (its module attribute now points at ours).
        our_mp._FileCollector(their_registry)
        # The segment only: the files in the directory are prometheus_client's side's.
        our_mp.MultiProcessCollector(our_registry, files=False)
        ns = {"t": theirs.generate_latest, "o": ours.generate_latest, "tr": their_registry,
              "orr": our_registry}
        their_text, our_text = theirs.generate_latest(their_registry), ours.generate_latest(
            our_registry)
        t_best = o_best = float("inf")
        for _ in range(repeat):
            t_best = min(t_best, best("t(tr)", ns, 1, 1))
            o_best = min(o_best, best("o(orr)", ns, 20, 1))
        return t_best, o_best, len(their_text.splitlines()), len(our_text.splitlines())
    finally:
        stop.set()
        for p in procs:
            p.join()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Re-run with the variable set, as a multiprocess service has it from its start.
        with tempfile.TemporaryDirectory(prefix="mm-bench-") as directory:
            env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=directory)
            return subprocess.call([sys.executable, *sys.argv], env=env)
    missed = []
    print(f"per call in a worker, PROMETHEUS_MULTIPROC_DIR set (best of {args.repeat}):")
    print(f"  {'call':24} {'prometheus_client':>18} {'modelmetrics':>13} {'ratio':>7}")
    for title, theirs, ours in per_call(args.number, args.repeat):
        ratio = theirs / ours
        print(f"  {title:24} {theirs:15.0f} ns {ours:10.1f} ns {ratio:6.1f}x")
        if ratio < CALL_TARGET:
            missed.append(title)
    t, o, t_lines, o_lines = scrape(args.repeat)
    ratio = t / o
    print(f"scrape of {WORKERS} live processes x the vLLM-Omni catalog "
          f"({t_lines} / {o_lines} lines):")
    print(f"  MultiProcessCollector + generate_latest: prometheus_client {t * 1e3:.2f} ms, "
          f"modelmetrics {o * 1e3:.3f} ms, {ratio:.0f}x")
    if ratio < SCRAPE_TARGET:
        missed.append("scrape")
    if args.check and missed:
        print("targets missed:", ", ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
