"""What the list+watch caches cost and save: `modelmetrics serve` behind the kube-apiserver
stand-in (tests/apiserver/standin.py) with a simulated fleet in the cluster (about 1,000 Pods), read
snapshot after snapshot straight from the server (a ServiceAccount token, reviews cached), once
with the caches (watch_objects: true) and once reading the objects on every snapshot (false, the
path before them). Prints per-snapshot latency (p50, p90), the object requests the stand-in saw
during the reads, and the server's resident memory.

    python3 bench/deployment/watch_cache_bench.py [--deployments 63] [--pods 16] [--reads 300]

The stand-in is Python: an uncached read pays its list of Pods, which a real kube-apiserver serves
faster, so the "uncached" latency is an upper bound for that path; the object requests and the
resident memory are the numbers that carry over to a cluster.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "apiserver"))
from loopback_process import Process  # noqa: E402
from standin import StandIn, https_get  # noqa: E402

BIN = os.environ.get("MODELMETRICS_BIN", str(ROOT / "build/src/cli/modelmetrics"))
TLS = ROOT / "tests" / "testdata" / "tls"


def tls(name):
    return str(TLS / name)


def rss_mib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def get(port, path, token="reader-sa-token"):
    return https_get(f"https://127.0.0.1:{port}{path}", token, tls("ca.pem"))


def run(work, objects, names, watch, reads):
    standin = StandIn(tls, objects_file=objects)
    kubeconfig = standin.kubeconfig(work / "kubeconfig", "serve-sa-token")
    config = work / f"serve-{watch}.yaml"
    config.write_text(f"""address: 127.0.0.1
port: 0
tls_cert_file: {tls("server.pem")}
tls_key_file: {tls("server-key.pem")}
kubeconfig: {kubeconfig}
delegated_authentication: true
authorization: subjectaccessreview
snapshot_reuse_ms: 0
watch_objects: {"true" if watch else "false"}
""")
    serve = Process([BIN, "serve", "--config", str(config), "--duration", "600s"])
    try:
        port = int(serve.match(r"on https://127\.0\.0\.1:(\d+)").group(1))
        deadline = time.monotonic() + 60
        while get(port, "/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        for ns, name in names[:20]:  # warm-up: baselines, review caches
            get(port, f"/apis/worker.gpustack.ai/v1/namespaces/{ns}/modeldeployments/{name}/metrics")
        before = standin.object_requests
        latencies = []
        for i in range(reads):
            ns, name = names[i % len(names)]
            start = time.perf_counter()
            code, body = get(port, f"/apis/worker.gpustack.ai/v1/namespaces/{ns}/"
                                   f"modeldeployments/{name}/metrics")
            latencies.append(time.perf_counter() - start)
            assert code == 200, body[:300]
        requests = standin.object_requests - before
        pods = sum(1 for key in standin.store if key[0] == "Pod")
        return {"p50_ms": statistics.median(latencies) * 1e3,
                "p90_ms": statistics.quantiles(latencies, n=10)[-1] * 1e3,
                "object_requests": requests, "rss_mib": rss_mib(serve.proc.pid), "pods": pods}
    finally:
        serve.stop()
        standin.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deployments", type=int, default=63)
    parser.add_argument("--pods", type=int, default=16)
    parser.add_argument("--reads", type=int, default=300)
    args = parser.parse_args()
    work = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"watch-cache-bench-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    objects = work / "objects.json"
    fleet = Process([BIN, "simulate", "fleet", "--deployments", str(args.deployments), "--pods",
                     str(args.pods), "-n", "fleet", "--objects-out", str(objects),
                     "--duration", "900s"])
    try:
        deadline = time.monotonic() + 60
        while not (objects.exists() and objects.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)
        items = json.loads(objects.read_text())["items"]
        names = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in items
                 if o["kind"] == "ModelDeployment"]
        print(f"{len(names)} ModelDeployments, "
              f"{sum(1 for o in items if o['kind'] == 'Pod')} Pods in the cluster")
        for watch in (True, False):
            r = run(work, objects, names, watch, args.reads)
            print(f"{'watch caches' if watch else 'reads per snapshot':20s}  "
                  f"snapshot p50 {r['p50_ms']:6.1f} ms  p90 {r['p90_ms']:6.1f} ms  "
                  f"object requests during {args.reads} reads: {r['object_requests']:5d}  "
                  f"serve RSS {r['rss_mib']:5.1f} MiB  ({r['pods']} Pods cached by the stand-in)")
    finally:
        fleet.stop()


if __name__ == "__main__":
    main()
