#!/usr/bin/env python3
"""Memory per label set, modelmetrics against prometheus_client, each in a fresh interpreter:
N distinct `reason` values on vllm_omni:requests_failed (the drop-in's inc_requests_failed, and
a prometheus_client Counter with the same labels, children made with .labels(...).inc()), then
one 200 MiB label value (modelmetrics refuses it with ValueError; prometheus_client keeps it).

    build/venv/bin/python bench/python/label_memory_bench.py [--children 1000000]

Prints resident bytes per child and the resident growth for the huge value, per side. The
target (issue 20): modelmetrics' bytes per child no more than prometheus_client's.
"""

import argparse
import os
import subprocess
import sys

CHILD = r"""
import gc, resource, sys
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
side, n = sys.argv[1], int(sys.argv[2])
if side == "modelmetrics":
    from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics
    m = OmniPrometheusMetrics("bench-model")
    m.inc_requests_failed("warm-up")
    inc = m.inc_requests_failed
else:
    from prometheus_client import Counter
    c = Counter("vllm_omni:requests_failed", "Failed requests", ["model_name", "reason"])
    c.labels("bench-model", "warm-up").inc()
    inc = lambda reason: c.labels("bench-model", reason).inc()
reasons = [f"reason-{i:07d}" for i in range(n)]  # made before the measurement: not counted
gc.collect()
before = rss()
for r in reasons:
    inc(r)
gc.collect()
per_child = (rss() - before) / n
huge = "x" * (200 << 20)
gc.collect()
before = rss()
try:
    inc(huge)
    outcome = "kept"
except ValueError as e:
    outcome = "ValueError"
gc.collect()
print(f"{per_child:.0f} {(rss() - before) / (1 << 20):.0f} {outcome}")
"""


def run(side, n):
    out = subprocess.run([sys.executable, "-c", CHILD, side, str(n)], check=True,
                         capture_output=True, text=True, env=dict(os.environ)).stdout.split()
    return float(out[0]), float(out[1]), out[2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--children", type=int, default=1_000_000)
    args = parser.parse_args()
    rows = {side: run(side, args.children) for side in ("modelmetrics", "prometheus_client")}
    print(f"{args.children} distinct reason values on vllm_omni:requests_failed")
    print(f"{'':18} {'bytes/child':>12} {'200 MiB value: RSS growth':>27}")
    for side, (per_child, huge_mib, outcome) in rows.items():
        print(f"{side:18} {per_child:12.0f} {huge_mib:20.0f} MiB ({outcome})")
    ratio = rows["modelmetrics"][0] / rows["prometheus_client"][0]
    print(f"modelmetrics / prometheus_client per child: {ratio:.2f}")


if __name__ == "__main__":
    main()
