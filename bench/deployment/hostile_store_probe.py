#!/usr/bin/env python3
"""The Prometheus source against a store that answers 9 of 10 queries with HTTP 422 and a 2 MiB
`error` string (the tenth: a running gauge per Pod), for a deployment of 1,000 Pods (ten queries
of 100), all on loopback:

  * `modelmetrics snapshot -o json`: wall time, peak resident memory and the JSON's size;
  * `modelmetrics serve` with the same store: one request's answer time, then SIGTERM: how long
    the process takes to exit.

    python3 bench/deployment/hostile_store_probe.py [--binary build/src/cli/modelmetrics]

Issue 20's targets: snapshot under 128 MiB and 5 s with JSON under 2 MB; serve exits within 1 s
of SIGTERM. The numbers are printed; --check exits 1 when a target is missed.
"""

import argparse
import http.server
import json
import os
import pathlib
import re
import resource
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
PODS = 1000
ERROR = json.dumps({"status": "error", "errorType": "execution",
                    "error": "x" * (2 << 20)}).encode()
ANSWERED = iter(range(1 << 62))  # next() is atomic under the GIL


class Store(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        form = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        body, status = (answer(form), 200) if next(ANSWERED) % 10 == 9 else (ERROR, 422)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def answer(form):
    """One vllm:num_requests_running sample per Pod the query names, a second before its time."""
    query = urllib.parse.parse_qs(form)
    at = float(query["time"][0]) - 1
    result = [{"metric": {"__name__": "vllm:num_requests_running", "namespace": "team",
                          "pod": pod, "job": "vllm", "instance": f"{pod}:8000"},
               "values": [[at, "1"]]}
              for pod in sorted(set(re.findall(r"chat-[0-9]{4}", query["query"][0])))]
    return json.dumps({"status": "success",
                       "data": {"resultType": "matrix", "result": result}}).encode()


def objects():
    uid = "00000000-0000-0000-0000-000000000001"
    items = [{"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "ModelDeployment",
              "metadata": {"name": "chat", "namespace": "team", "uid": uid},
              "spec": {"model": {"name": "m"}, "engine": {"name": "vLLM"},
                       "roles": [{"name": "server", "kind": "server", "replicas": PODS,
                                  "size": 1}]}}]
    for i in range(PODS):
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"chat-{i:04d}", "namespace": "team",
                                   "uid": f"pod-{i}",
                                   "labels": {"app.kubernetes.io/component": "server",
                                              "app.kubernetes.io/instance": "chat",
                                              "app.kubernetes.io/name": "model-deployment"},
                                   "annotations": {"prometheus.io/port": "8000",
                                                   "prometheus.io/scrape": "true"},
                                   "ownerReferences": [{
                                       "apiVersion": "worker.gpustack.ai/v1alpha1",
                                       "kind": "ModelDeployment", "name": "chat", "uid": uid,
                                       "controller": True}]},
                      "spec": {"containers": [{"name": "engine", "ports": [
                          {"name": "http", "containerPort": 8000}]}]},
                      "status": {"podIP": "127.0.0.1", "phase": "Running"}})
    return {"apiVersion": "v1", "kind": "List", "items": items}


def snapshot(binary, objects_file, store_url):
    start = time.monotonic()
    proc = subprocess.run([binary, "snapshot", "-n", "team", "chat", "--objects", objects_file,
                           "--source", "prometheus", "--prometheus-url", store_url, "-o", "json"],
                          capture_output=True)
    wall = time.monotonic() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, peak_kib / 1024, len(proc.stdout), proc.returncode, proc.stderr.decode()[-300:]


def serve(binary, objects_file, store_url, work):
    tls = ROOT / "tests" / "testdata" / "tls"
    (work / "tokens.csv").write_text("probe-token,probe,uid-probe\n")
    (work / "policy.yaml").write_text(
        "rules:\n- users: [probe]\n  namespaces: ['*']\n  verbs: [get]\n  resources: ['*']\n")
    (work / "serve.yaml").write_text(
        f"port: 0\ntls_cert_file: {tls / 'server.pem'}\ntls_key_file: {tls / 'server-key.pem'}\n"
        f"token_file: {work / 'tokens.csv'}\npolicy_file: {work / 'policy.yaml'}\n"
        f"objects_file: {objects_file}\nsource: prometheus\nprometheus:\n  url: {store_url}\n")
    proc = subprocess.Popen([binary, "serve", "--config", str(work / "serve.yaml")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = None
    for line in proc.stdout:
        if line.startswith("serving ModelDeploymentMetrics on "):
            url = line.split(" on ", 1)[1].strip()
            break
    context = ssl.create_default_context(cafile=str(tls / "ca.pem"))
    context.check_hostname = False
    request = urllib.request.Request(
        url + "/apis/worker.gpustack.ai/v1/namespaces/team/modeldeployments/chat/metrics",
        headers={"Authorization": "Bearer probe-token"})
    start = time.monotonic()
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            status = response.status
    except urllib.error.HTTPError as e:
        status = e.code
    answered = time.monotonic() - start
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    return status, answered, time.monotonic() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=str(ROOT / "build" / "src" / "cli" / "modelmetrics"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    store = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Store)
    threading.Thread(target=store.serve_forever, daemon=True).start()
    store_url = f"http://127.0.0.1:{store.server_address[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        objects_file = str(work / "objects.json")
        pathlib.Path(objects_file).write_text(json.dumps(objects()))
        wall, peak_mib, json_bytes, rc, err = snapshot(args.binary, objects_file, store_url)
        print(f"snapshot: {PODS} Pods, a 2 MiB error in 9 of 10 answers: {wall:.2f} s, peak RSS "
              f"{peak_mib:.0f} MiB, JSON {json_bytes / 1e6:.2f} MB (exit {rc})")
        if rc != 0:
            print(err)
        status, answered, stopped = serve(args.binary, objects_file, store_url, work)
        print(f"serve: HTTP {status} after {answered:.2f} s; SIGTERM to exit {stopped:.2f} s")
    store.shutdown()
    ok = rc == 0 and wall < 5 and peak_mib < 128 and 0 < json_bytes < 2e6 and stopped < 1
    print("targets (5 s, 128 MiB, 2 MB, 1 s):", "met" if ok else "MISSED")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
