"""The multiprocess mode with real processes: multiprocessing with fork and spawn against
prometheus_client's own multiprocess mode on the same workload, a writer killed with SIGKILL
mid-write, 16 workers incrementing at once, the vllm_omni.metrics drop-in in workers, and a
uvicorn app with 4 workers scraped by Debian's Prometheus.

Each scenario runs in a fresh interpreter (the segment is attached at import, from the
environment). Everything binds 127.0.0.1; every process started here is stopped in teardown.
"""

import json
import math
import os
import subprocess
import sys
import textwrap
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from conftest import free_port, stop
from deadlines import wait_until

import modelmetrics

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(modelmetrics.__file__)))
PROMETHEUS = "/usr/bin/prometheus"


def run(tmp_path, code, env=None, timeout=120, args=(), stderr=False):
    """Runs `code` as a script (multiprocessing's spawn re-imports it) in a fresh interpreter;
    its stdout (and its stderr after it, with `stderr`)."""
    script = tmp_path / f"scenario_{uuid.uuid4().hex[:8]}.py"
    script.write_text(textwrap.dedent(code))
    full_env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, **(env or {}))
    result = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                            env=full_env, timeout=timeout, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout + (result.stderr if stderr else "")


def mp_env(tmp_path):
    directory = tmp_path / "multiproc"
    directory.mkdir(exist_ok=True)
    return {"PROMETHEUS_MULTIPROC_DIR": str(directory)}


def leftover_segments():
    return {p.name for p in Path("/dev/shm").glob("modelmetrics-*")}


# A workload written against prometheus_client's API: `LIBRARY` picks whose. Three workers record
# into every kind of instrument; one stays alive while the parent scrapes, the others have exited
# and are marked dead (as gunicorn's child_exit hook does). Prints the parsed scrape as JSON with
# each `pid` label replaced by the sorted position of its process, so two runs compare.
WORKLOAD = """
import json, multiprocessing as mp, os, sys
LIBRARY, METHOD = sys.argv[1], sys.argv[2]
if LIBRARY == "modelmetrics":
    import modelmetrics.prometheus_client as pc
    from modelmetrics.prometheus_client import multiprocess
else:
    import prometheus_client as pc
    from prometheus_client import multiprocess
from prometheus_client.parser import text_string_to_metric_families

requests = pc.Counter("requests", "Requests served.", ["route"])
latency = pc.Histogram("latency_seconds", "Latency.", ["route"], buckets=(0.1, 0.5, 1, 5))
plain = pc.Counter("plain", "No labels.")
MODES = ("all", "liveall", "min", "livemin", "max", "livemax", "sum", "livesum")
gauges = {m: pc.Gauge("g_" + m, "Gauge " + m + ".", ["k"], multiprocess_mode=m) for m in MODES}


def work(i, done, stay):
    for n in range(50 * (i + 1)):
        requests.labels("a" if n % 3 else "b").inc()
        latency.labels("a").observe(n / 40.0)
    plain.inc(0.5 + i)
    for g in gauges.values():
        g.labels("x").set(i + 1)
    done.set()
    stay.wait()


if __name__ == "__main__":
    ctx = mp.get_context(METHOD)
    requests.labels("a").inc(2)  # the parent records too
    stay_alive, go = ctx.Event(), ctx.Event()
    go.set()
    workers = []
    for i in range(3):
        done = ctx.Event()
        p = ctx.Process(target=work, args=(i, done, stay_alive if i == 0 else go))
        p.start()
        done.wait()
        workers.append(p)
    for p in workers[1:]:
        p.join()
        multiprocess.mark_process_dead(p.pid)
    registry = pc.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    text = pc.generate_latest(registry).decode()
    stay_alive.set()
    workers[0].join()
    pids = sorted({s.labels["pid"] for f in text_string_to_metric_families(text)
                   for s in f.samples if "pid" in s.labels}, key=int)
    out = {}
    for f in text_string_to_metric_families(text):
        rows = []
        for s in f.samples:
            labels = dict(s.labels)
            if "pid" in labels:
                labels["pid"] = str(pids.index(labels["pid"]))
            rows.append([s.name, sorted(labels.items()), s.value])
        out[f.name] = {"type": f.type, "help": f.documentation, "samples": sorted(rows)}
    print(json.dumps(out, sort_keys=True))
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_merge_as_prometheus_client_multiprocess_mode_merges(tmp_path, method):
    for run_dir in ("ours", "theirs"):
        (tmp_path / run_dir).mkdir()
    ours = json.loads(run(tmp_path / "ours", WORKLOAD, mp_env(tmp_path / "ours"),
                          args=("modelmetrics", method)))
    theirs = json.loads(run(tmp_path / "theirs", WORKLOAD, mp_env(tmp_path / "theirs"),
                            args=("prometheus_client", method)))
    assert ours == theirs
    # The workload's numbers, so the comparison is not of two empty scrapes.
    requests = {tuple(dict(s[1]).items()): s[2] for s in ours["requests"]["samples"]}
    assert requests[(("route", "a"),)] + requests[(("route", "b"),)] == 2 + 50 + 100 + 150
    assert [s for s in ours["g_livesum"]["samples"]] == [["g_livesum", [["k", "x"]], 1.0]]
    assert [s[2] for s in ours["g_all"]["samples"]] == [1.0, 2.0, 3.0]  # dead ones' kept
    assert [s[2] for s in ours["g_min"]["samples"]] == [1.0]
    # No file per process: the directory holds only the segment's recorded name, and the
    # segment is gone.
    assert [p.name for p in (tmp_path / "ours" / "multiproc").iterdir()] == ["modelmetrics-segment"]
    assert not leftover_segments()


def test_sigkill_mid_write_keeps_every_scrape_consistent(tmp_path):
    out = run(tmp_path, """
    import multiprocessing as mp, os, signal, time
    import modelmetrics.prometheus_client as pc
    from modelmetrics.prometheus_client import multiprocess
    from prometheus_client.parser import text_string_to_metric_families

    c = pc.Counter("ops", "Ops.", ["w"])
    h = pc.Histogram("size", "Size.", ["w"], buckets=(1, 2, 4, 8))

    def writer(i):
        n = 0
        while True:
            c.labels(str(i)).inc()
            h.labels(str(i)).observe(n % 10)
            n += 1

    def scrape(registry):
        counters, counts = {}, {}
        for f in text_string_to_metric_families(pc.generate_latest(registry).decode()):
            for s in f.samples:
                key = (s.name, s.labels.get("w"))
                if s.name == "ops_total":
                    counters[key] = s.value
                elif s.name == "size_count":
                    counts[key] = s.value
                elif s.name == "size_bucket" and s.labels["le"] == "+Inf":
                    counts[("inf", s.labels["w"])] = s.value
        for w in {k[1] for k in counts}:
            assert counts[("size_count", w)] == counts[("inf", w)], counts
        return counters, counts

    if __name__ == "__main__":
        registry = pc.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        procs = [mp.get_context("fork").Process(target=writer, args=(i,)) for i in range(3)]
        for p in procs:
            p.start()
        last, scrapes = {}, 0
        # Workload, not a wait: 0.75 s of writes, then scrapes of the dead writers' values. The
        # test needs 10 scrapes and 1000 increments: a small part of what even a
        # sanitizer build does in that time on a loaded core.
        deadline = time.monotonic() + 1.5
        killed = False
        while time.monotonic() < deadline or not killed:
            counters, counts = scrape(registry)
            for key, value in counters.items():
                assert value >= last.get(key, 0), (key, value, last.get(key))
            last = counters
            scrapes += 1
            if not killed and time.monotonic() > deadline - 0.75:
                for p in procs:
                    os.kill(p.pid, signal.SIGKILL)
                for p in procs:
                    p.join()
                killed = True
        final, _ = scrape(registry)
        again, _ = scrape(registry)
        assert final == again and final == last, "dead writers' values are kept and still"
        print(scrapes, sum(final.values()))
    """, mp_env(tmp_path))
    scrapes, total = out.split()
    assert int(scrapes) > 10 and float(total) > 1000


def test_sixteen_workers_incrementing_at_once_give_exact_totals(tmp_path):
    out = run(tmp_path, """
    import multiprocessing as mp
    import modelmetrics.prometheus_client as pc
    from modelmetrics.prometheus_client import multiprocess

    c = pc.Counter("hits", "Hits.", ["kind"])
    h = pc.Histogram("work", "Work.", buckets=(1, 10))
    g = pc.Gauge("busy", "Busy.", multiprocess_mode="livesum")
    N = 5000

    def worker(barrier):
        barrier.wait()  # all sixteen write at once
        g.inc()
        for i in range(N):
            c.labels("even" if i % 2 == 0 else "odd").inc()
            h.observe(i % 20)
        g.dec()

    if __name__ == "__main__":
        ctx = mp.get_context("fork")
        barrier = ctx.Barrier(16)
        procs = [ctx.Process(target=worker, args=(barrier,)) for _ in range(16)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
            assert p.exitcode == 0
        registry = pc.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        text = pc.generate_latest(registry).decode()
        print(text)
    """, mp_env(tmp_path), timeout=240)
    assert 'hits_total{kind="even"} 40000.0' in out
    assert 'hits_total{kind="odd"} 40000.0' in out
    assert 'work_bucket{le="1.0"} 8000.0' in out  # i % 20 in {0, 1}
    assert 'work_bucket{le="10.0"} 44000.0' in out  # i % 20 in 0 .. 10
    assert "work_count 80000.0" in out
    assert f"work_sum {16 * 250 * 190}.0" in out
    assert "\nbusy 0.0\n" in out  # livesum: the parent's own 0; the workers are gone


def test_vllm_omni_drop_in_records_across_workers_unchanged(tmp_path):
    out = run(tmp_path, """
    import multiprocessing as mp
    from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics
    import prometheus_client
    from prometheus_client import multiprocess  # prometheus_client's, as vLLM imports it

    def worker(i):
        m = OmniPrometheusMetrics(model_name="m", log_stats=True)
        for _ in range(i + 1):
            m.request_succeeded(1.0)
        m.set_running(i)

    if __name__ == "__main__":
        procs = [mp.get_context("spawn").Process(target=worker, args=(i,)) for i in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
            assert p.exitcode == 0
        registry = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # patched: reads the segment
        print(prometheus_client.generate_latest(registry).decode())
    """, mp_env(tmp_path))
    lines = out.splitlines()
    assert 'vllm_omni:requests_success_total{finished_reason="stop",model_name="m"} 10.0' in lines
    assert 'vllm_omni:e2e_request_latency_s_count{model_name="m"} 10.0' in lines
    running = sorted(l.rsplit(" ", 1)[1] for l in lines
                     if l.startswith("vllm_omni:num_requests_running{"))
    assert running == ["0.0", "1.0", "2.0", "3.0"], out[-3000:]  # a gauge per process (pid)


VLLM_API_SERVERS = """
import json, multiprocessing as mp, sys
sys.path[:0] = [STANDIN, TESTS]
LIBRARY = sys.argv[1]
if LIBRARY == "modelmetrics":
    import modelmetrics.vllm
    assert modelmetrics.vllm.install()
import prometheus_client
from prometheus_client import multiprocess
from prometheus_client.parser import text_string_to_metric_families
if LIBRARY == "prometheus_client":  # Debian's 0.16 predates the mode vLLM passes
    prometheus_client.Gauge._MULTIPROC_MODES |= {"mostrecent", "livemostrecent"}
import vllm_workload as w
from vllm.config import VllmConfig
from vllm.v1.metrics.loggers import PrometheusStatLogger


def api_server(i):
    logger = PrometheusStatLogger(VllmConfig(), [0, 1])
    w.drive(logger, [0, 1], steps=3 + i)


if __name__ == "__main__":
    procs = [mp.get_context("spawn").Process(target=api_server, args=(i,)) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0
    registry = prometheus_client.CollectorRegistry()  # vLLM's get_prometheus_registry()
    multiprocess.MultiProcessCollector(registry)
    samples = {}
    for family in text_string_to_metric_families(prometheus_client.generate_latest(registry).decode()):
        if family.type in ("counter", "histogram"):  # gauges: prometheus_client 0.16 has no
            for s in family.samples:                 # mostrecent mode to compare with
                samples[s.name + repr(sorted(s.labels.items()))] = s.value
    print(json.dumps(samples))
"""


def test_vllm_stat_loggers_in_three_api_servers_sum_as_prometheus_client_sums(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    code = VLLM_API_SERVERS.replace("STANDIN", repr(os.path.join(here, "vllm_standin"))).replace(
        "TESTS", repr(here))
    results = []
    for library in ("modelmetrics", "prometheus_client"):
        (tmp_path / library).mkdir()
        results.append(run(tmp_path / library, code, mp_env(tmp_path / library),
                           args=(library,)))
    ours, theirs = (json.loads(r) for r in results)
    assert ours.keys() == theirs.keys()
    for key, value in theirs.items():  # sums over processes may add in another order
        assert math.isclose(ours[key], value, rel_tol=1e-12), (key, ours[key], value)
    assert any(k.startswith("vllm:prompt_tokens_total") and v > 0 for k, v in ours.items())
    assert any("_bucket" in k for k in ours)


def test_prometheus_client_own_file_metrics_are_merged_after_the_segment(tmp_path):
    out = run(tmp_path, """
    import multiprocessing as mp
    import prometheus_client
    import modelmetrics.prometheus_client as pc
    from prometheus_client import multiprocess  # patched by the import above

    ours = pc.Counter("ours", "Ours.")
    summary = prometheus_client.Summary("theirs_seconds", "prometheus_client's own, in files.")

    def worker():
        ours.inc()
        summary.observe(2.0)

    if __name__ == "__main__":
        procs = [mp.get_context("fork").Process(target=worker) for _ in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        registry = pc.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        print(pc.generate_latest(registry).decode())
        print("---")
        print(prometheus_client.generate_latest(registry).decode())
        multiprocess.mark_process_dead(procs[0].pid)
    """, mp_env(tmp_path))
    ours_native, theirs_writer = out.split("---")
    for text in (ours_native, theirs_writer):
        assert "ours_total 3.0" in text
        assert "theirs_seconds_count 3.0" in text and "theirs_seconds_sum 6.0" in text


def test_a_separate_scraper_reads_the_service_without_joining_it(tmp_path):
    env = mp_env(tmp_path)
    out = run(tmp_path, """
    import multiprocessing as mp, os, subprocess, sys, textwrap
    import modelmetrics.prometheus_client as pc

    c = pc.Counter("jobs", "Jobs.")

    def worker():
        c.inc(5)

    SCRAPER = textwrap.dedent('''
        import sys
        import modelmetrics.prometheus_client as pc
        from modelmetrics.prometheus_client import multiprocess
        try:
            multiprocess.MultiProcessCollector(pc.CollectorRegistry(), path=sys.argv[1] + "-x")
        except ValueError as e:
            print("refused:", e)
        registry = pc.CollectorRegistry()
        collector = multiprocess.MultiProcessCollector(registry, path=sys.argv[1])
        print(pc.generate_latest(registry).decode())
        print("slots", collector.stats()["slots_used"], "own", collector.stats()["slot"])
    ''')

    if __name__ == "__main__":
        p = mp.get_context("fork").Process(target=worker)
        p.start()
        p.join()
        env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        print(subprocess.run([sys.executable, "-c", SCRAPER, os.environ["PROMETHEUS_MULTIPROC_DIR"]],
                             env=env, capture_output=True, text=True, check=True).stdout)
    """, env)
    assert "jobs_total 5.0" in out
    assert "refused: env PROMETHEUS_MULTIPROC_DIR is not set or not a directory" in out
    assert "slots 2 own -1" in out  # the parent's and the worker's; the scraper took none


def test_corrupt_bytes_in_the_segment_leave_every_scrape_valid(tmp_path):
    """A byte that is not UTF-8 written into a family name and one into a label value by
    another party: the scrape leaves that family and that series out, names why on its own
    self-metric, and parses with prometheus_client's parser and with promtool."""
    out = run(tmp_path, """
    import mmap, subprocess
    import modelmetrics.prometheus_client as pc
    from modelmetrics import _native
    from modelmetrics.prometheus_client import multiprocess
    from prometheus_client.parser import text_string_to_metric_families

    pc.Counter("victim_family", "Victim.", ["k"]).labels("x").inc()
    values = pc.Counter("values_family", "Values.", ["k"])
    values.labels("value_marker").inc()
    values.labels("kept").inc(3)
    with open("/dev/shm/" + _native.multiprocess_segment(), "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
    m[m.find(b"victim_family") + 6] = 0xff
    m[m.find(b"value_marker")] = 0xc0  # never in UTF-8 (0xff would split the value in two)
    registry = pc.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    for scrape in range(3):
        text = pc.generate_latest(registry).decode("utf-8")  # raises on a byte that is not UTF-8
        names = sorted(f.name for f in text_string_to_metric_families(text))
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                               text=True, timeout=60)
        print("names", names)
        print("promtool", check.returncode, "parsing error" in check.stdout + check.stderr)
    print(text)
    """, mp_env(tmp_path))
    assert "names ['modelmetrics_multiprocess_skipped_records', 'values_family']" in out
    assert out.count("promtool 3 False") + out.count("promtool 0 False") == 3, out
    assert 'values_family_total{k="kept"} 3.0' in out
    assert 'modelmetrics_multiprocess_skipped_records{reason="bad_name"} 1.0' in out
    assert 'modelmetrics_multiprocess_skipped_records{reason="bad_text"} 1.0' in out


def test_planted_objects_under_the_predictable_name_neither_hang_nor_stop_the_service(tmp_path):
    """Another user (uid 65534 here; the tests run as root) made a FIFO under the name a
    directory's path would give: the service records a random name in its directory and starts,
    and a scraper given the directory reads the service at once."""
    env = mp_env(tmp_path)
    from modelmetrics import _native
    predictable = "/dev/shm/" + _native.multiprocess_segment(env["PROMETHEUS_MULTIPROC_DIR"])
    os.mkfifo(predictable, 0o600)
    os.chown(predictable, 65534, 65534)
    try:
        out = run(tmp_path, """
        import os, subprocess, sys
        import modelmetrics.prometheus_client as pc
        from modelmetrics import _native
        pc.Counter("jobs", "Jobs.").inc(2)
        print("recorded", _native.multiprocess_segment())
        SCRAPER = (
            "import sys\\n"
            "import modelmetrics.prometheus_client as pc\\n"
            "from modelmetrics.prometheus_client import multiprocess\\n"
            "registry = pc.CollectorRegistry()\\n"
            "multiprocess.MultiProcessCollector(registry, path=sys.argv[1])\\n"
            "print(pc.generate_latest(registry).decode())\\n")
        env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        print(subprocess.run([sys.executable, "-c", SCRAPER, os.environ["PROMETHEUS_MULTIPROC_DIR"]],
                             env=env, capture_output=True, text=True, check=True, timeout=30).stdout)
        """, env, timeout=60)
    finally:
        os.unlink(predictable)
    assert "jobs_total 2.0" in out
    recorded = out.split("recorded ", 1)[1].split()[0]
    assert "/dev/shm/" + recorded != predictable and len(recorded) == len("modelmetrics-") + 32
    assert (tmp_path / "multiproc" / "modelmetrics-segment").read_text().strip() == recorded


def test_a_stopped_lock_holder_never_stops_the_other_processes(tmp_path):
    """A worker stopped (SIGSTOP) while it holds the segment's directory lock: another process's
    threads keep running (a heartbeat thread's longest gap stays under 100 ms) while a new child
    waits; that child's registration gives up after a bounded wait and names the holder once on
    stderr, without an exception; the child (and a family made meanwhile, and a child of a process
    forked meanwhile) records in its process; once the holder is dead the lock is taken over and
    everything recorded meanwhile reaches the scrape, exactly once."""
    out = run(tmp_path, """
    import mmap, os, signal, struct, threading, time
    import multiprocessing as mp
    import modelmetrics.prometheus_client as pc
    from modelmetrics import _native
    from modelmetrics.prometheus_client import multiprocess

    jobs = pc.Counter("jobs", "Jobs.", ["k"])
    jobs.labels("a").inc()
    SEGMENT = _native.multiprocess_segment()

    def hold():  # plays a worker stopped inside an append: the lock word names it
        slot = _native.multiprocess_stats(SEGMENT)["slot"]
        with open("/dev/shm/" + SEGMENT, "r+b") as f:
            m = mmap.mmap(f.fileno(), 0)
        # The lock word (segment_layout.h): pid, slot + 1, and the slot's generation, a u64 16
        # bytes into its 64-byte record after the 4 KiB header.
        generation = struct.unpack_from("<Q", m, 4096 + 64 * slot + 16)[0]
        m[96:104] = struct.pack("<Q", (generation << 45) | ((slot + 1) << 32) | os.getpid())
        os.kill(os.getpid(), signal.SIGSTOP)

    def forked(ready, done):  # a worker forked while "b" waits: its own increments only
        jobs.labels("b").inc(10)
        ready.set()
        done.wait()

    def scrape():
        registry = pc.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return pc.generate_latest(registry).decode()

    if __name__ == "__main__":
        holder = mp.get_context("fork").Process(target=hold)
        holder.start()
        while open(f"/proc/{holder.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "T":
            time.sleep(0.01)
        gaps, stop = [], False

        def beat():
            last = time.monotonic()
            while not stop:
                jobs.labels("a").inc()
                time.sleep(0.005)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        heartbeat = threading.Thread(target=beat, daemon=True)
        heartbeat.start()
        start = time.monotonic()
        jobs.labels("b").inc()  # waits, then records in this process: no exception
        waited = time.monotonic() - start
        start = time.monotonic()
        jobs.labels("c").inc(2)
        print("again after %.2f s" % (time.monotonic() - start))
        late = pc.Histogram("late_seconds", "Made while the lock is held.", buckets=[1, 2])
        late.observe(1.5)
        ctx = mp.get_context("fork")
        ready, done = ctx.Event(), ctx.Event()
        child = ctx.Process(target=forked, args=(ready, done))
        child.start()
        ready.wait()
        stop = True
        heartbeat.join()
        print("waited %.2f max_gap %.3f" % (waited, max(gaps)))
        print("while held:", 'k="b"' in scrape(), "late_seconds" in scrape())
        os.kill(holder.pid, signal.SIGKILL)
        holder.join()
        start = time.monotonic()
        jobs.labels("b").inc()
        print("after its death %.2f s" % (time.monotonic() - start))
        deadline = time.monotonic() + 10
        while 'jobs_total{k="b"} 12.0' not in scrape() or "late_seconds_count 1.0" not in scrape():
            assert time.monotonic() < deadline, scrape()
            time.sleep(0.05)
        done.set()
        child.join()
        print(scrape())
    """, mp_env(tmp_path), stderr=True)
    waited, max_gap = (float(x) for x in out.split("waited ")[1].split()[::2][:2])
    assert 1.0 <= waited < 3.0, out
    assert max_gap < 0.1, out
    assert "again after 0.0" in out  # one bounded wait per stuck holder
    assert "the shared segment's directory is held by process" in out  # on stderr
    assert "while held: False False" in out  # not in the segment yet
    ticks = float(out.split('jobs_total{k="a"} ')[1].split()[0])
    assert ticks > 10  # the heartbeat recorded meanwhile
    assert "after its death 0.0" in out
    # 1 before and 1 after the holder died in the parent, 10 in the child forked meanwhile: each
    # process's own once, nothing the parent recorded before fork() counted twice.
    assert 'jobs_total{k="b"} 12.0' in out
    assert 'jobs_total{k="c"} 2.0' in out
    assert 'late_seconds_bucket{le="2.0"} 1.0' in out and "late_seconds_sum 1.5" in out


def test_invalid_configuration_fails_the_import_clearly(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text("import modelmetrics._native\n")
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, MODELMETRICS_MULTIPROC="svc",
               MODELMETRICS_MULTIPROC_BYTES="lots")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                            timeout=60)
    assert result.returncode != 0
    assert "MODELMETRICS_MULTIPROC_BYTES: 'lots' is not a size" in result.stderr


def test_a_full_segment_is_one_clear_error_at_registration(tmp_path):
    out = run(tmp_path, """
    import modelmetrics.prometheus_client as pc
    from modelmetrics.prometheus_client import multiprocess
    c = pc.Counter("kept", "Kept.")
    c.inc(3)
    h = pc.Histogram("wide", "Wide.", ["k"], buckets=tuple(range(1, 200)))
    try:
        for i in range(100000):
            h.labels(str(i)).observe(1)
    except ValueError as e:
        print("refused at", i, ":", e)
    registry = pc.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    text = pc.generate_latest(registry).decode()
    assert "kept_total 3.0" in text, text[:500]
    print(text.count("wide_count"))
    """, {"MODELMETRICS_MULTIPROC": f"mm-full-{uuid.uuid4().hex[:8]}",
          "MODELMETRICS_MULTIPROC_BYTES": "1M", "MODELMETRICS_MULTIPROC_PROCESSES": "8"})
    first, count = out.strip().splitlines()
    assert "is full (cells per process)" in first and "MODELMETRICS_MULTIPROC_BYTES" in first
    assert int(first.split()[2]) == int(count) > 5  # every child before the refusal is scraped


UVICORN_APP = """
import os
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse, Response
import modelmetrics.prometheus_client as pc
from modelmetrics.prometheus_client import multiprocess

app = FastAPI()
WORK = pc.Counter("app_work", "Units of work done.", ["kind"])
LATENCY = pc.Histogram("app_latency_seconds", "Latency.", buckets=(0.01, 0.1, 1))
WORKERS = pc.Gauge("app_workers", "Live workers.", multiprocess_mode="livesum")
WORKERS.inc()


@app.get("/work")
def work(n: int = 1):
    WORK.labels("unit").inc(n)
    LATENCY.observe(n / 1000)
    return PlainTextResponse(str(os.getpid()))


@app.get("/metrics")
def metrics():
    registry = pc.CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return Response(pc.generate_latest(registry), media_type=pc.CONTENT_TYPE_LATEST)
"""


def _get(url, timeout=5):
    request = urllib.request.Request(url, headers={"Connection": "close"})
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        return resp.status, resp.read().decode()


def _start(argv, ready_url, log, env, cwd, timeout=60):
    """Starts `argv` until `ready_url` answers 200. 60 s: four uvicorn workers each import FastAPI
    and the extension (under ASan too, in scripts/test.sh), seconds of CPU on a loaded 2-core
    machine; Prometheus opens its TSDB."""
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)

    def ready_or_exited():
        if proc.poll() is not None:
            return "exited"
        try:
            return _get(ready_url, timeout=2)[0] == 200 and "ready"
        except OSError:
            return None

    try:
        if wait_until(ready_or_exited, timeout, what=f"{argv[0]} to answer") == "ready":
            return proc
    except AssertionError:
        pass
    stop(proc, timeout=10)
    pytest.fail(f"{argv[0]} did not become ready:\n{Path(log).read_text()[-3000:]}")


def _query(prom, promql):
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    answer = json.loads(_get(url)[1])
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def test_uvicorn_workers_scraped_by_prometheus_give_the_sums(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    if not os.path.exists(PROMETHEUS):
        pytest.skip(f"{PROMETHEUS} is not installed (Debian package `prometheus`)")
    (tmp_path / "mm_app.py").write_text(UVICORN_APP)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PACKAGE_ROOT, str(tmp_path)]),
               **mp_env(tmp_path))
    port = free_port()
    app = _start([sys.executable, "-m", "uvicorn", "mm_app:app", "--workers", "4", "--host",
                  "127.0.0.1", "--port", str(port), "--log-level", "warning"],
                 f"http://127.0.0.1:{port}/work?n=0", tmp_path / "uvicorn.log", env, tmp_path)
    prom = None
    try:
        # Wait until all four workers are up (each counts itself in a livesum gauge); 60 s as
        # in _start: the first worker to answer may be the only one that has imported FastAPI.
        wait_until(lambda: "app_workers 4.0" in _get(f"http://127.0.0.1:{port}/metrics")[1], 60,
                   what="four uvicorn workers to come up")
        pids, sent = set(), 0
        for i in range(1, 201):
            pids.add(_get(f"http://127.0.0.1:{port}/work?n={i}")[1])
            sent += i
        assert len(pids) >= 2, "the requests reached one worker only"
        config = tmp_path / "prometheus.yml"
        config.write_text("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: app\n"
                          f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
        prom_port = free_port()
        prom_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        prom = _start([PROMETHEUS, f"--config.file={config}",
                       f"--storage.tsdb.path={tmp_path / 'data'}",
                       f"--web.listen-address=127.0.0.1:{prom_port}"],
                      f"http://127.0.0.1:{prom_port}/-/ready", tmp_path / "prometheus.log",
                      prom_env, tmp_path)
        base = f"http://127.0.0.1:{prom_port}"

        def scraped():
            results = {q: _query(base, q) for q in (
                'app_work_total{kind="unit"}', "app_latency_seconds_count", "app_workers",
                "count(app_work_total)")}
            if all(results.values()) and float(results["app_latency_seconds_count"][0]["value"][1]) > 0:
                return results
            return None

        # One scrape is due within the 1 s interval; 60 s as in _start. Checked twice a scrape:
        # each check is four queries.
        results = wait_until(scraped, 60, poll=0.5, what="Prometheus's first scrape of the app")
        value = lambda q: float(results[q][0]["value"][1])  # noqa: E731
        # Every scrape, whichever worker answered it, is the whole service.
        assert value('app_work_total{kind="unit"}') == sent
        assert value("app_latency_seconds_count") == 201  # the readiness probe's n=0 included
        assert value("app_workers") == 4
        assert value("count(app_work_total)") == 1
    finally:
        if prom is not None:
            stop(prom, timeout=10)
        stop(app, timeout=10)
    assert [p.name for p in (tmp_path / "multiproc").iterdir()] == ["modelmetrics-segment"]
