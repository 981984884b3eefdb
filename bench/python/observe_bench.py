#!/usr/bin/env python3
"""ns per call of the drop-in (modelmetrics.vllm_omni.metrics) against a prometheus_client
implementation of the same upstream methods (tests/python/prometheus_client_reference.py: plain
Counter/Gauge/Histogram families with upstream's label names, children looked up with
``.labels(...)`` per call as upstream does), side by side in one process; and one whole simulated
speech request (about 30 calls); and rendering a ~1,300-line exposition, native render against
``generate_latest``. With the pybind11 probe built (build/bench/python), three hot methods bound
with pybind11 instead of the C API are timed too.

    build/venv/bin/python bench/python/observe_bench.py [--repeat 25] [--check]

Each figure is the best of --repeat rounds, the statements interleaved within a round so slow
moments of the machine hit both sides alike. --check exits 1 when a target is missed (methods
and the request >= 8x, the render >= 20x); without it the numbers are only printed.
"""

import argparse
import os
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))  # the prometheus_client reference
sys.path.insert(0, os.path.join(ROOT, "build", "bench", "python"))  # the pybind11 probe, if built

import prometheus_client_reference as ref  # noqa: E402
from prometheus_client import generate_latest  # noqa: E402

import modelmetrics  # noqa: E402
from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics  # noqa: E402
from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics  # noqa: E402
from modelmetrics.vllm_omni.metrics.realtime import RealtimeVADMetrics  # noqa: E402
from modelmetrics.vllm_omni.metrics.transfer import OmniTransferMetrics  # noqa: E402

METHOD_TARGET, REQUEST_TARGET, RENDER_TARGET = 8.0, 8.0, 20.0

# (object key, call) for every hot method of the four classes.
CALLS = [
    ("p", "set_running(5)"),
    ("p", "set_waiting(2)"),
    ("p", "observe_tokens(120, 380)"),
    ("p", "request_succeeded(2.7, 'stop')"),
    ("p", "request_failed()"),
    ("p", "observe_stage_gen_time(1, 'llm', 0.91)"),
    ("p", "observe_stage_in_queue(1, 0.01)"),
    ("p", "observe_queue_wait(0.012)"),
    ("p", "set_stage_waiting_requests(1, 3)"),
    ("p", "observe_num_inference_steps(28)"),
    ("p", "inc_image_count(1)"),
    ("p", "observe_image_pixels(1048576)"),
    ("p", "set_peak_memory(0, 20480.0)"),
    ("p", "inc_requests_failed('stage_error')"),
    ("p", "observe_kv_wait('SharedMemoryConnector', 0.004)"),
    ("p", "set_duplex_sessions(3, 1)"),
    ("p", "observe_duplex_append('success', 0.004)"),
    ("p", "observe_duplex_control_queue_wait('append', 0.0007)"),
    ("p", "set_duplex_context(4096, 8192, 0.5, 17)"),
    ("p", "inc_duplex_replica_affinity_loss()"),
    ("p", "set_duplex_recovery_state(1000, 65536, 3)"),
    ("p", "inc_duplex_kv_recovery('replica_loss', 'success')"),
    ("m", "observe_audio_ttfp('2', '1', 0.35)"),
    ("m", "observe_audio_duration('2', '1', 4.0)"),
    ("m", "observe_audio_rtf('2', '1', 0.34)"),
    ("m", "inc_audio_frames('2', '1', 96000)"),
    ("m", "observe_audio_underrun('2', '1', 0.02)"),
    ("m", "inc_audio_continuity_ok('2', '1', 100)"),
    ("m", "inc_audio_skipped('2', '1', 'no_audio_data')"),
    ("m", "observe_diffusion_exec('1', '0', 1.2)"),
    ("m", "observe_diffusion_exec_per_step('1', '0', 0.024)"),
    ("m", "observe_diffusion_preprocess('1', '0', 0.05)"),
    ("m", "observe_diffusion_postprocess('1', '0', 0.3)"),
    ("m", "observe_vae_decode('1', '0', 0.2)"),
    ("m", "observe_diffusion_forward('1', '0', 0.9)"),
    ("m", "observe_diffusion_kv_load('1', '0', 0.02)"),
    ("m", "observe_image_ttfp('1', '0', 0.6)"),
    ("m", "observe_denoise_step_latency('1', '0', 0.03)"),
    ("m", "inc_speech_stream_completed()"),
    ("m", "inc_speech_stream_aborted('cancelled')"),
    ("t", "observe_size(0, 1, 1, 0, 65536)"),
    ("t", "observe_tx_time(0, 1, 1, 0, 0.0021)"),
    ("t", "observe_rx_time(0, 1, 1, 0, 0.0015)"),
    ("t", "observe_in_flight_time(0, 1, 1, 0, 0.0007)"),
    ("v", "session_started()"),
    ("v", "session_finished()"),
    ("v", "observe_inference(3.5)"),
    ("v", "observe_endpoint_delay(640)"),
    ("v", "error('input_overflow')"),
]


def best_ns(timers, number, repeat):
    """{name: best ns per call} over `repeat` interleaved rounds."""
    best = {name: float("inf") for name, _ in timers}
    for _ in range(repeat):
        for name, timer in timers:
            best[name] = min(best[name], timer.timeit(number) / number * 1e9)
    return best


def populate(p, m, t, v):
    """With the timing model's series, about 1,300 exposition lines: a speech pipeline with 3
    code2wav replicas and its edges, and the image/diffusion and realtime families."""
    for i in range(8):
        ref.speech_request(p, m, t, i)
        m.observe_audio_rtf("2", str(i % 3), 0.5)
        for edge in range(2):
            t.observe_size(1, 0, 2, edge, 4096)
            t.observe_tx_time(1, 0, 2, edge, 0.001)
    for stage in ("3",):
        for name in ("observe_diffusion_exec", "observe_diffusion_preprocess",
                     "observe_diffusion_postprocess", "observe_image_ttfp",
                     "observe_denoise_step_latency"):
            getattr(m, name)(stage, "0", 0.5)
    p.observe_num_inference_steps(28)
    p.observe_image_pixels(1048576)
    v.session_started()
    v.observe_inference(3.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()

    families = ref.Families()
    env = {
        "pc": {"p": ref.OmniPrometheusMetrics(families, "bench"),
               "m": ref.OmniModalityMetrics(families, "bench"),
               "t": ref.OmniTransferMetrics(families, "bench"),
               "v": ref.RealtimeVADMetrics(families, "bench")},
        "mm": {"p": OmniPrometheusMetrics("bench"), "m": OmniModalityMetrics("bench"),
               "t": OmniTransferMetrics("bench"), "v": RealtimeVADMetrics("bench")},
    }
    failures = []

    print(f"{'method':<52}{'prometheus_client':>18}{'modelmetrics':>14}{'ratio':>8}")
    timers = []
    for obj, call in CALLS:
        for side in ("pc", "mm"):
            timers.append(((side, call), timeit.Timer(f"o.{call}", globals={"o": env[side][obj]})))
    best = best_ns(timers, args.number, args.repeat)
    worst = None
    for obj, call in CALLS:
        pc, mm = best[("pc", call)], best[("mm", call)]
        ratio = pc / mm
        worst = ratio if worst is None else min(worst, ratio)
        mark = "" if ratio >= METHOD_TARGET else "  < target"
        if ratio < METHOD_TARGET:
            failures.append(call)
        print(f"{call.split('(')[0]:<52}{pc:>15.1f} ns{mm:>11.1f} ns{ratio:>7.1f}x{mark}")
    print(f"lowest method ratio: {worst:.1f}x (target >= {METHOD_TARGET:.0f}x)")

    request = []
    for side in ("pc", "mm"):
        e = env[side]
        request.append((side, timeit.Timer("speech(p, m, t, 1)",
                                           globals={"speech": ref.speech_request, **e})))
    rbest = best_ns(request, max(args.number // 20, 200), args.repeat)
    ratio = rbest["pc"] / rbest["mm"]
    if ratio < REQUEST_TARGET:
        failures.append("request")
    print(f"whole speech request (30 calls): prometheus_client {rbest['pc'] / 1000:.2f} us, "
          f"modelmetrics {rbest['mm'] / 1000:.2f} us, {ratio:.1f}x (target >= {REQUEST_TARGET:.0f}x)")

    # Rendering: both sides hold exactly the same series (the timing model's and these).
    populate(ref.OmniPrometheusMetrics(families, "render"), ref.OmniModalityMetrics(families, "render"),
             ref.OmniTransferMetrics(families, "render"), ref.RealtimeVADMetrics(families, "render"))
    populate(OmniPrometheusMetrics("render"), OmniModalityMetrics("render"),
             OmniTransferMetrics("render"), RealtimeVADMetrics("render"))
    pc_lines = generate_latest(families.registry).count(b"\n")
    mm_lines = modelmetrics.render().count(b"\n")
    render = [("pc", timeit.Timer(lambda: generate_latest(families.registry))),
              ("mm", timeit.Timer(modelmetrics.render))]
    rb = best_ns(render, 20, max(args.repeat // 2, 5))
    ratio = rb["pc"] / rb["mm"]
    if ratio < RENDER_TARGET:
        failures.append("render")
    print(f"render ({pc_lines} lines via generate_latest, {mm_lines} lines natively): "
          f"generate_latest {rb['pc'] / 1e6:.2f} ms, modelmetrics.render {rb['mm'] / 1e6:.3f} ms, "
          f"{ratio:.1f}x (target >= {RENDER_TARGET:.0f}x)")

    try:
        import pybind_probe
    except ImportError:
        print("pybind11 probe not built (build/bench/python/pybind_probe*.so): skipped")
    else:
        probe = pybind_probe.Probe("bench")
        mm = env["mm"]
        pairs = [("set_running(5)", mm["p"]), ("observe_audio_rtf('2', '1', 0.34)", mm["m"]),
                 ("inc_audio_frames('2', '1', 96000)", mm["m"])]
        timers = []
        for call, obj in pairs:
            timers.append((("capi", call), timeit.Timer(f"o.{call}", globals={"o": obj})))
            timers.append((("pybind", call), timeit.Timer(f"o.{call}", globals={"o": probe})))
        pb = best_ns(timers, args.number, args.repeat)
        for call, _ in pairs:
            print(f"binding cost, {call.split('(')[0]}: C API {pb[('capi', call)]:.1f} ns, "
                  f"pybind11 {pb[('pybind', call)]:.1f} ns")

    if failures:
        print("below target: " + ", ".join(failures))
        if args.check:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
