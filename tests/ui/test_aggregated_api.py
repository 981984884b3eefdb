"""`modelmetrics ui --kubeconfig FILE --aggregated-api`: the page reading every snapshot through
kube-apiserver, as from a laptop outside the cluster.

A stand-in kube-apiserver on loopback (Python's http.server) checks the kubeconfig's bearer
token, lists the demo's ModelDeployments on the CRD's path, and proxies the aggregated API's
metrics path to `modelmetrics demo`'s API server, as kube-apiserver's aggregation layer does.
Every snapshot the page shows must be one the API answered, byte for byte as JSON, with the
server's windows; and the page's reads must all have gone through the API.
"""

import json
import os
import pathlib
import re
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from deadlines import EVENTUALLY, wait_until  # noqa: E402
from loopback_process import Process  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("MODELMETRICS_BIN", str(ROOT / "build/src/cli/modelmetrics"))
KUBE_TOKEN = "the-kubeconfig-token"
# The demo's deployments, as the CRD's objects (what the page's list needs of them).
DEPLOYMENTS = {"chat": "vllm", "assistant": "sglang", "voice": "vllm-omni"}


class FakeKubeApi(BaseHTTPRequestHandler):
    upstream = None  # (demo API URL, its token)
    relayed = []  # (path, status, body) of every metrics answer passed on
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.headers.get("Authorization") != f"Bearer {KUBE_TOKEN}":
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                      "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
            return self.reply(401, json.dumps(status).encode())
        if self.path == "/apis/worker.gpustack.ai/v1alpha1/namespaces/demo/modeldeployments":
            items = [{"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "ModelDeployment",
                      "metadata": {"name": name, "namespace": "demo", "uid": f"uid-{name}"},
                      "spec": {"engine": {"name": engine}}}
                     for name, engine in DEPLOYMENTS.items()]
            return self.reply(200, json.dumps({"kind": "ModelDeploymentList",
                                               "items": items}).encode())
        if re.fullmatch(r"/apis/worker\.gpustack\.ai/v1/namespaces/demo/modeldeployments/"
                        r"[a-z]+/metrics", self.path):
            url, token = self.upstream
            request = urllib.request.Request(url + self.path)
            request.add_header("Authorization", f"Bearer {token}")
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    status, body = response.status, response.read()
            except urllib.error.HTTPError as e:
                status, body = e.code, e.read()
            with self.lock:
                self.relayed.append((self.path, status, body))
            return self.reply(status, body)
        self.reply(404, b'{"kind":"Status","code":404,"reason":"NotFound","message":"no"}')


def page_api(base, path, token):
    request = urllib.request.Request(base + path)
    request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture
def stack(tmp_path):
    # The demo's own rounds read rarely: windows are between consecutive reads of the server's
    # Pods by anyone, and the page's reads should be the ones that make them.
    demo = Process([BIN, "demo", "--duration", "120s", "--interval", "60s", "--no-ui",
                    "-o", "json"])
    found = demo.match(r"aggregated API: (http://127\.0\.0\.1:\d+) \(bearer token (\w+)\)")
    FakeKubeApi.upstream = (found.group(1), found.group(2))
    FakeKubeApi.relayed = []
    kube = ThreadingHTTPServer(("127.0.0.1", 0), FakeKubeApi)
    threading.Thread(target=kube.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: loopback
  cluster:
    server: http://127.0.0.1:{kube.server_address[1]}
users:
- name: sre
  user:
    token: {KUBE_TOKEN}
contexts:
- name: loopback
  context: {{cluster: loopback, user: sre}}
current-context: loopback
""")
    yield kubeconfig
    kube.shutdown()
    demo.stop()


def test_the_page_shows_what_the_aggregated_api_answered(stack):
    ui = Process([BIN, "ui", "--kubeconfig", str(stack), "--aggregated-api", "-n", "demo",
                  "--interval", "3s", "--duration", "90s"])
    try:
        base, token = ui.match(r"open (http://127\.0\.0\.1:\d+)/#token=([0-9a-f]+)").groups()

        def all_with_windows():
            items = page_api(base, "/api/v1/deployments", token)["items"]
            if len(items) != 3:
                return None
            details = [page_api(base, f"/api/v1/deployments/demo/{i['name']}", token)
                       for i in items]
            if all(d["snapshot"] and "latency" in d["snapshot"] for d in details):
                return items, details
            return None

        # Windows need two reads of each deployment through the stand-in, 3 s apart, after the
        # demo and the page have started: seconds idle; 45 s (kept) is several times that under
        # load. Checked twice a second: nothing changes faster than the 3 s reads.
        items, details = wait_until(
            all_with_windows, 45, poll=0.5,
            what="every deployment's page to have a snapshot with windows")
        assert {i["name"]: i["engine"] for i in items} == DEPLOYMENTS
        with FakeKubeApi.lock:
            relayed = [(path, status, json.loads(body)) for path, status, body in
                       FakeKubeApi.relayed]
        assert relayed, "the page's reads go through the API"
        for item, detail in zip(items, details):
            assert not detail["status"]["stale"], detail["status"]
            snapshot = detail["snapshot"]
            path = ("/apis/worker.gpustack.ai/v1/namespaces/demo/modeldeployments/"
                    f"{item['name']}/metrics")
            answers = [body for p, status, body in relayed if p == path and status == 200]
            assert snapshot in answers, f"{item['name']}: not an answer the API gave"
            assert snapshot["partial"] is False, snapshot.get("missing")
    finally:
        ui.stop()


def test_aggregated_api_needs_the_kubernetes_api(tmp_path):
    objects = tmp_path / "objects.json"
    objects.write_text('{"apiVersion":"v1","kind":"List","items":[]}')
    ui = Process([BIN, "ui", "--objects", str(objects), "--aggregated-api"])
    ui.proc.wait(timeout=EVENTUALLY)
    assert ui.proc.returncode == 2
    assert any("--aggregated-api reads through the Kubernetes API" in line
               for line in ui.until(r"aggregated-api", timeout=5))


def test_the_demos_custom_metrics_curl_line_answers_what_an_hpa_reads():
    demo = Process([BIN, "demo", "--duration", "60s", "--interval", "30s", "--no-ui",
                    "--no-pipeline"])
    try:
        token, url = demo.match(
            r"  curl -H 'Authorization: Bearer (\w+)' '(http://127\.0\.0\.1:\d+/apis/"
            r"custom\.metrics\.k8s\.io/[^']+)'").groups()
        request = urllib.request.Request(url)
        request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.loads(response.read())
        assert answer["kind"] == "MetricValueList"
        item, = answer["items"]
        assert item["describedObject"]["name"] == "chat"
        assert item["metric"] == {"name": "waiting",
                                  "selector": {"matchLabels": {"role": "generation"}}}
        float(item["value"].rstrip("mu"))  # a Quantity
    finally:
        demo.stop()
