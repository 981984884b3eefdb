#!/usr/bin/env python3
"""ns per call of modelmetrics.prometheus_client against prometheus_client, side by side in one
process: a child's ``inc``, ``set`` and ``observe``, ``labels(...)`` + ``observe``, and
``generate_latest`` of a registry shaped like vLLM's per-engine families (35 families x 4
engines: gauges, counters, and histograms with vLLM's bucket counts); then, through the vLLM
stand-in (tests/python/vllm_standin), one ``record()`` of a realistic iteration (64 running
requests, 8 finishing) and ``generate_latest`` of the logger's families for 4 engines: vLLM's
own logger (prometheus_client against ``modelmetrics.vllm.install()``'s slots) and vLLM-Omni's
wrap (a prometheus_client implementation of upstream's against ``OmniPrometheusStatLogger``).

    build/venv/bin/python bench/python/client_bench.py [--repeat 25] [--check]

Each figure is the best of --repeat rounds, the two sides interleaved within a round so slow
moments of the machine hit both alike. --check exits 1 when a target is missed (issue 21:
child calls >= 10x, labels + observe >= 8x, generate_latest >= 10x).
"""

import argparse
import os
import random
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "python")
sys.path[:0] = [os.path.join(TESTS, "vllm_standin"), TESTS]  # the vLLM stand-in, its workload

import prometheus_client as pc  # noqa: E402

import modelmetrics.prometheus_client as mpc  # noqa: E402

TARGETS = {"inc": 10.0, "set": 10.0, "observe": 10.0, "labels + observe": 8.0,
           "generate_latest (35 families x 4)": 10.0,
           "vLLM record() (64 running, 8 done)": 8.0, "vLLM generate_latest (4 engines)": 10.0,
           "Omni wrap record()": 8.0, "Omni wrap generate_latest (4 engines)": 10.0}

# vLLM's per-engine shape: (kind, name suffix, extra label, buckets).
_BUCKETS_LATENCY = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                    5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
_BUCKETS_TOKENS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]


def vllm_like(module, registry, engines=4):
    """35 families as vLLM's PrometheusStatLogger builds them, each child touched."""
    labelnames = ["model_name", "engine"]
    families = []
    for i in range(5):
        families.append(module.Gauge(f"vllm:gauge_{i}", "A scheduler gauge.", labelnames,
                                     registry=registry))
    for i in range(15):
        families.append(module.Counter(f"vllm:counter_{i}", "A token counter.", labelnames,
                                       registry=registry))
    for i in range(15):
        buckets = _BUCKETS_LATENCY if i % 2 else _BUCKETS_TOKENS
        families.append(module.Histogram(f"vllm:histogram_{i}_seconds", "A latency histogram.",
                                         labelnames, buckets=buckets, registry=registry))
    for engine in range(engines):
        for f in families:
            child = f.labels("Qwen/Qwen3-Omni", str(engine))
            if hasattr(child, "observe"):
                for v in (0.003, 0.07, 1.2, 45.0):
                    child.observe(v)
            elif hasattr(child, "set"):
                child.set(engine + 0.5)
            else:
                child.inc(17)
    return registry


def logger_view(make):
    """A logger built by `make()`, its families alone in a registry, and one step's stats."""
    import vllm_workload as w
    from vllm.config import VllmConfig
    from vllm.v1.metrics.stats import MultiModalCacheStats

    logger = make(VllmConfig())
    view = pc.CollectorRegistry(auto_describe=True)
    for collector in list(pc.REGISTRY._collector_to_names):
        if getattr(collector, "_name", "").startswith("vllm:"):
            view.register(collector)
    rng = random.Random(3)
    step = (w.scheduler_stats(rng), w.iteration_stats(rng, running=64, finishing=8),
            MultiModalCacheStats(queries=5, hits=2))
    w.drive(logger, range(4), steps=3)
    return logger, view, step


def setup(module):
    import omni_wrap_reference as ref
    from vllm.v1.metrics.loggers import PrometheusStatLogger

    from modelmetrics.vllm_omni.metrics import stat_logger

    r = pc.CollectorRegistry()
    c = module.Counter("bench_c", "d", ["a"], registry=r)
    g = module.Gauge("bench_g", "d", ["a"], registry=r)
    h = module.Histogram("bench_h", "d", ["a"], registry=r)
    env = {"ch": c.labels("x"), "gh": g.labels("x"), "h": h, "hh": h.labels("x"),
           "gen": module.generate_latest, "reg": vllm_like(module, pc.CollectorRegistry())}
    srm = stat_logger.build_stage_replica_map([1, 2, 1])
    if module is pc:
        plain = lambda config: ref.PlainLogger(config, [0, 1, 2, 3])  # noqa: E731
        omni = lambda config: ref.OmniLogger(config, srm)  # noqa: E731
    else:
        class Native(PrometheusStatLogger):  # what modelmetrics.vllm.install() sets
            _gauge_cls, _counter_cls, _histogram_cls = mpc.Gauge, mpc.Counter, mpc.Histogram
            _perf_metrics_cls = type("Perf", (ref.PerfMetricsProm,), {"_counter_cls": mpc.Counter})
        plain = lambda config: Native(config, [0, 1, 2, 3])  # noqa: E731
        omni = lambda config: stat_logger.OmniPrometheusStatLogger(config, srm)  # noqa: E731
    for key, make in (("plain", plain), ("omni", omni)):
        logger, view, step = logger_view(make)
        env[key], env[key + "_view"], env[key + "_step"] = logger, view, step
    return env


CASES = [
    ("inc", "ch.inc()", 200000),
    ("set", "gh.set(3.0)", 200000),
    ("observe", "hh.observe(0.3)", 200000),
    ("labels + observe", "h.labels('x').observe(0.3)", 100000),
    ("generate_latest (35 families x 4)", "gen(reg)", 50),
    ("vLLM record() (64 running, 8 done)", "plain.record(*plain_step, engine_idx=2)", 2000),
    ("vLLM generate_latest (4 engines)", "gen(plain_view)", 50),
    ("Omni wrap record()", "omni.record(*omni_step, engine_idx=2)", 2000),
    ("Omni wrap generate_latest (4 engines)", "gen(omni_view)", 50),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    sides = {"prometheus_client": setup(pc), "modelmetrics": setup(mpc)}
    for key in ("reg", "plain_view", "omni_view"):
        theirs = sides["prometheus_client"]["gen"](sides["prometheus_client"][key])
        ours = sides["modelmetrics"]["gen"](sides["modelmetrics"][key])
        assert len(ours.splitlines()) == len(theirs.splitlines()), key
    best = {(case, side): float("inf") for case, _, _ in CASES for side in sides}
    for _ in range(args.repeat):
        for case, stmt, number in CASES:
            for side, env in sides.items():
                t = timeit.timeit(stmt, globals=env, number=number) / number
                best[(case, side)] = min(best[(case, side)], t)
    from importlib.metadata import version

    print(f"prometheus_client {version('prometheus_client')}, "
          f"best of {args.repeat} rounds; the Omni wrap's generate_latest prints "
          f"{len(ours.splitlines())} lines")
    print(f"{'call':38} {'prometheus_client':>18} {'modelmetrics':>14} {'ratio':>7} {'target':>7}")
    missed = []
    for case, _, _ in CASES:
        a, b = best[(case, "prometheus_client")], best[(case, "modelmetrics")]
        unit, scale = ("us", 1e6) if "generate" in case or "record" in case else ("ns", 1e9)
        ratio = a / b
        ok = ratio >= TARGETS[case]
        if not ok:
            missed.append(case)
        print(f"{case:38} {a * scale:15.1f} {unit} {b * scale:11.1f} {unit} {ratio:6.1f}x "
              f"{TARGETS[case]:5.0f}x{'' if ok else '  MISSED'}")
    if args.check and missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
