#!/usr/bin/env python3
"""ns per call of upstream-style vLLM-Omni metrics code in install()'s two modes, beside
prometheus_client: the same method calls (observe_bench.py's list) on

* prometheus_client: tests/python/prometheus_client_reference.py, written the way upstream's
  modules are (module-level families, ``.labels(...)`` by keyword or position on each call);
* instruments: the same module executed as install()'s instruments mode executes upstream's
  (its ``prometheus_client`` imports get ``modelmetrics.prometheus_client``);
* drop-in: modelmetrics.vllm_omni.metrics' classes.

    build/venv/bin/python bench/python/install_modes_bench.py [--repeat 15] [--number 20000] [--check]

Each figure is the best of --repeat interleaved rounds. The mix is the sum over every method (one
call each). --check exits 1 when the mix misses a target (instruments >= 3x, drop-in >= 10x).
"""

import argparse
import importlib.util
import os
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, HERE)

import observe_bench  # noqa: E402  (its CALLS and best_ns)
import prometheus_client_reference as ref  # noqa: E402

import modelmetrics.vllm_omni as omni  # noqa: E402
from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics  # noqa: E402
from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics  # noqa: E402
from modelmetrics.vllm_omni.metrics.realtime import RealtimeVADMetrics  # noqa: E402
from modelmetrics.vllm_omni.metrics.transfer import OmniTransferMetrics  # noqa: E402

INSTRUMENTS_TARGET, DROP_IN_TARGET = 3.0, 10.0


def reference_on_instruments():
    """The reference module, executed as instruments mode executes upstream's modules."""
    spec = importlib.util.spec_from_file_location("reference_on_instruments", ref.__file__)
    module = importlib.util.module_from_spec(spec)
    module.__builtins__ = omni._redirecting_builtins()
    spec.loader.exec_module(module)
    return module


def objects(module, families, name):
    return {"p": module.OmniPrometheusMetrics(families, name),
            "m": module.OmniModalityMetrics(families, name),
            "t": module.OmniTransferMetrics(families, name),
            "v": module.RealtimeVADMetrics(families, name)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()

    fast = reference_on_instruments()
    families = fast.Families()
    import modelmetrics.prometheus_client as mpc

    assert all(isinstance(f, (mpc.Counter, mpc.Gauge, mpc.Histogram))
               for f in families.f.values()), "the reference did not run on the instruments"
    env = {"pc": objects(ref, ref.Families(), "bench"),
           "instruments": objects(fast, families, "bench"),
           "drop-in": {"p": OmniPrometheusMetrics("bench"), "m": OmniModalityMetrics("bench"),
                       "t": OmniTransferMetrics("bench"), "v": RealtimeVADMetrics("bench")}}
    sides = ("pc", "instruments", "drop-in")
    timers = [((side, call), timeit.Timer(f"o.{call}", globals={"o": env[side][obj]}))
              for obj, call in observe_bench.CALLS for side in sides]
    best = observe_bench.best_ns(timers, args.number, args.repeat)

    print(f"{'method':<36}{'prometheus_client':>18}{'instruments':>20}{'drop-in':>20}")
    total = {side: 0.0 for side in sides}
    for _, call in observe_bench.CALLS:
        row = {side: best[(side, call)] for side in sides}
        for side in sides:
            total[side] += row[side]
        print(f"{call.split('(')[0]:<36}{row['pc']:>15.1f} ns"
              f"{row['instruments']:>10.1f} ns {row['pc'] / row['instruments']:>5.1f}x"
              f"{row['drop-in']:>10.1f} ns {row['pc'] / row['drop-in']:>5.1f}x")
    instruments = total["pc"] / total["instruments"]
    drop_in = total["pc"] / total["drop-in"]
    print(f"mix of {len(observe_bench.CALLS)} methods, one call each: prometheus_client "
          f"{total['pc'] / 1000:.2f} us, instruments {total['instruments'] / 1000:.2f} us "
          f"({instruments:.1f}x, target >= {INSTRUMENTS_TARGET:.0f}x), drop-in "
          f"{total['drop-in'] / 1000:.2f} us ({drop_in:.1f}x, target >= {DROP_IN_TARGET:.0f}x)")
    missed = instruments < INSTRUMENTS_TARGET or drop_in < DROP_IN_TARGET
    if missed:
        print("below target")
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
