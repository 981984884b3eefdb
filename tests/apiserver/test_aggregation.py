"""`modelmetrics serve` as an aggregated API server behind a kube-apiserver stand-in
(standin.py, modelled on kube-aggregator and k8s.io/apiserver): the availability check, kubectl
itself (get --raw, api-resources, get mdm, the OpenAPI documents) through the proxy, delegated
authentication (the ConfigMap's CAs followed without a restart, TokenReview) and authorisation
(SubjectAccessReview), and a second API group. The Pods are a simulated vLLM deployment."""

import json
import os
import pathlib
import subprocess
import sys
import urllib.error
import urllib.request
import ssl

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from deadlines import wait_until  # noqa: E402
from loopback_process import Process  # noqa: E402
from standin import StandIn, https_get  # noqa: E402

BIN = os.environ.get("MODELMETRICS_BIN", str(ROOT / "build/src/cli/modelmetrics"))
TLS = ROOT / "tests" / "testdata" / "tls"


def tls(name):
    return str(TLS / name)


@pytest.fixture(scope="module")
def pods(tmp_path_factory):
    objects = tmp_path_factory.mktemp("pods") / "objects.json"
    sim = Process([BIN, "simulate", "deployment", "--engine", "vllm", "--name", "chat", "-n",
                   "demo", "--replicas", "2", "--objects-out", str(objects), "--duration", "300s"])
    sim.until(r"^objects: ")
    yield objects
    sim.stop()


def start_serve(work, standin, group="worker.gpustack.ai", extra=""):
    kubeconfig = standin.kubeconfig(work / "serve-kubeconfig", "serve-sa-token")
    config = work / "serve.yaml"
    config.write_text(f"""address: 127.0.0.1
port: 0
api_group: {group}
tls_cert_file: {tls("server.pem")}
tls_key_file: {tls("server-key.pem")}
kubeconfig: {kubeconfig}
delegated_authentication: true
authentication_refresh: 200ms
authorization: subjectaccessreview
snapshot_reuse_ms: 0
watch_objects: true
{extra}""")
    serve = Process([BIN, "serve", "--config", str(config), "--duration", "300s"])
    port = int(serve.match(r"serving ModelDeploymentMetrics on https://127\.0\.0\.1:(\d+)").group(1))
    standin.register(group, "v1", port)
    return serve, port


@pytest.fixture
def cluster(tmp_path, pods):
    standin = StandIn(tls, objects_file=pods)
    serve, port = start_serve(tmp_path, standin)
    yield standin, port, tmp_path
    serve.stop()
    standin.stop()


def kubectl(standin, work, token, *args, check=True):
    kubeconfig = standin.kubeconfig(work / f"kubeconfig-{token}", token)
    env = dict(os.environ, HOME=str(work), KUBECONFIG=str(kubeconfig))
    out = subprocess.run(["kubectl", *args], capture_output=True, text=True, env=env, timeout=60)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def direct(port, path, token):
    """A client of the server itself (not through the stand-in), e.g. Prometheus with its token."""
    return https_get(f"https://127.0.0.1:{port}{path}", token, tls("ca.pem"), timeout=10)


METRICS = "/apis/worker.gpustack.ai/v1/namespaces/demo/modeldeployments/chat/metrics"


def test_availability_discovery_and_kubectl_through_the_aggregator(cluster):
    standin, port, work = cluster
    assert standin.check_availability("worker.gpustack.ai", "v1") == (True, "all checks passed")

    raw = json.loads(kubectl(standin, work, "viewer-token", "get", "--raw", METRICS).stdout)
    assert raw["kind"] == "ModelDeploymentMetrics" and raw["metadata"]["name"] == "chat"
    assert raw["apiVersion"] == "worker.gpustack.ai/v1"

    resources = kubectl(standin, work, "viewer-token", "api-resources",
                        "--api-group=worker.gpustack.ai", "-o", "wide").stdout
    line = next(l for l in resources.splitlines() if l.startswith("modeldeploymentmetrics"))
    assert "mdm" in line and "worker.gpustack.ai/v1" in line and "ModelDeploymentMetrics" in line

    got = json.loads(kubectl(standin, work, "viewer-token", "get", "mdm", "chat", "-n", "demo",
                             "-o", "json").stdout)
    assert got["kind"] == "ModelDeploymentMetrics" and got["metadata"]["namespace"] == "demo"

    index = json.loads(kubectl(standin, work, "viewer-token", "get", "--raw", "/openapi/v3").stdout)
    url = index["paths"]["apis/worker.gpustack.ai/v1"]["serverRelativeURL"]
    v3 = json.loads(kubectl(standin, work, "viewer-token", "get", "--raw", url).stdout)
    assert "ai.gpustack.worker.v1.ModelDeploymentMetrics" in v3["components"]["schemas"]
    v3_plain = json.loads(kubectl(standin, work, "viewer-token", "get", "--raw",
                                  "/openapi/v3/apis/worker.gpustack.ai/v1").stdout)
    assert v3_plain == v3
    v2 = json.loads(kubectl(standin, work, "viewer-token", "get", "--raw", "/openapi/v2").stdout)
    assert any(p.endswith("/modeldeployments/{name}/metrics") for p in v2["paths"])

    # kube-apiserver's own RBAC stops a user without the role before the proxy.
    denied = kubectl(standin, work, "norole-token", "get", "--raw", METRICS, check=False)
    assert denied.returncode != 0 and "Forbidden" in denied.stderr


def test_service_account_tokens_and_access_reviews_at_the_server(cluster):
    standin, port, work = cluster
    # Straight at the server (as a scraper with its ServiceAccount token): TokenReview, then a
    # SubjectAccessReview for the metrics subresource.
    code, body = direct(port, METRICS, "reader-sa-token")
    assert code == 200, body
    code, again = direct(port, METRICS, "reader-sa-token")
    assert code == 200
    assert standin.token_reviews == 1  # the second was answered from the cache
    code, body = direct(port, METRICS, "nobody-sa-token")
    assert code == 403, body
    assert 'User \\"system:serviceaccount:team:nobody\\" cannot get resource ' \
           '\\"modeldeployments/metrics\\"' in body.decode()
    review = [r for r in standin.access_reviews if r["user"].endswith(":nobody")][-1]
    assert review["resourceAttributes"] == {
        "namespace": "demo", "verb": "get", "group": "worker.gpustack.ai", "version": "v1",
        "resource": "modeldeployments", "subresource": "metrics", "name": "chat"}
    assert direct(port, METRICS, "not-a-token")[0] == 401
    # The front proxy's user reaches the review with the extra kube-aggregator sends.
    kubectl(standin, work, "viewer-token", "get", "--raw", METRICS)
    jane = [r for r in standin.access_reviews if r["user"] == "jane"][-1]
    assert jane["extra"] == {"authentication.kubernetes.io/credential-id": ["JTI=viewer"]}
    assert "system:authenticated" in jane["groups"] and "viewers" in jane["groups"]


def test_a_rotated_front_proxy_ca_is_honoured_without_a_restart(cluster):
    standin, port, work = cluster
    assert standin.check_availability("worker.gpustack.ai", "v1")[0]
    # kube-apiserver's front-proxy CA and client certificate change together.
    standin.set_trust("ca.pem", ["test-client"])
    # The server rereads the ConfigMap every 200 ms (authentication_refresh): EVENTUALLY is 50x.
    wait_until(lambda: not standin.check_availability("worker.gpustack.ai", "v1")[0],
               what="the old front-proxy certificate to be refused")
    # The old proxy certificate is refused (the check fails as FailedDiscoveryCheck would)...
    available, message = standin.check_availability("worker.gpustack.ai", "v1")
    assert not available and message.endswith("bad status from /apis/worker.gpustack.ai/v1: 401")
    # ...and the new one is the front proxy now.
    standin.proxy_cert = ("client.pem", "client-key.pem")
    assert standin.check_availability("worker.gpustack.ai", "v1") == (True, "all checks passed")
    raw = json.loads(kubectl(standin, work, "viewer-token", "get", "--raw", METRICS).stdout)
    assert raw["metadata"]["name"] == "chat"


def test_a_second_group_changes_every_path_and_document(tmp_path, pods):
    standin = StandIn(tls, objects_file=pods)
    serve, port = start_serve(tmp_path, standin, group="metrics.modelmetrics.io")
    try:
        assert standin.check_availability("metrics.modelmetrics.io", "v1")[0]
        path = "/apis/metrics.modelmetrics.io/v1/namespaces/demo/modeldeployments/chat/metrics"
        raw = json.loads(kubectl(standin, tmp_path, "viewer-token", "get", "--raw", path).stdout)
        assert raw["apiVersion"] == "metrics.modelmetrics.io/v1"
        resources = kubectl(standin, tmp_path, "viewer-token", "api-resources",
                            "--api-group=metrics.modelmetrics.io").stdout
        assert "modeldeploymentmetrics" in resources
        index = json.loads(kubectl(standin, tmp_path, "viewer-token", "get", "--raw",
                                   "/openapi/v3").stdout)
        assert "apis/metrics.modelmetrics.io/v1" in index["paths"]
        assert not any("worker.gpustack.ai/v1" == p.removeprefix("apis/") for p in index["paths"])
        assert direct(port, METRICS, "reader-sa-token")[0] == 404  # the default group is not served
    finally:
        serve.stop()
        standin.stop()


def wait_ready(port, timeout=15):
    """/readyz's answer once it is 200: the informers' first lists and watches of four resources
    through the stand-in, over TLS; 15 s (kept) is 1.5x EVENTUALLY for those round trips."""
    context = ssl.create_default_context(cafile=tls("ca.pem"))

    def readyz():
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz?verbose", context=context,
                                        timeout=5) as response:
                return response.read().decode()
        except urllib.error.HTTPError:
            return None

    return wait_until(readyz, timeout, what="the server to become ready")


def through(standin, path, token="viewer-token"):
    code, body = https_get(standin.url + path, token, tls("ca.pem"), timeout=15)
    assert code == 200, body[:300]
    return json.loads(body)


def counter(port, name, labels):
    """The sum of `name`'s samples that carry `labels` (and any others)."""
    code, body = direct(port, "/metrics", "admin-token")
    assert code == 200, body
    return sum(float(line.rsplit(" ", 1)[1]) for line in body.decode().splitlines()
               if line.startswith(name + "{") and all(f'{k}="{v}"' in line
                                                      for k, v in labels.items()))


def test_snapshots_come_from_watch_caches_and_an_expired_watch_relists(cluster):
    standin, port, work = cluster
    assert "[+]informer-sync ok" in wait_ready(port)
    wait_until(lambda: standin.watches >= 4, what="a watch per resource")
    assert standin.watches == 4, standin.watches
    before = (standin.object_requests, standin.watches)
    for _ in range(100):
        assert through(standin, METRICS)["kind"] == "ModelDeploymentMetrics"
    assert (standin.object_requests, standin.watches) == before, \
        "a snapshot read an object from kube-apiserver"

    # A Pod deleted in the cluster is gone from the next snapshot (a DELETED event).
    standin.delete("Pod", "demo", "chat-server-1")
    missing = []

    def pod_gone():
        missing[:] = [m["reason"] for m in through(standin, METRICS).get("missing", [])]
        return any("1 of 2" in reason for reason in missing)

    wait_until(pod_gone, what=lambda: f"a snapshot without the deleted Pod; missing: {missing}")

    # History compacted and the watches cut: the next watch gets 410 and the caches relist.
    lists_before = counter(port, "modelmetrics_watch_relists_total", {"reason": "expired"})
    standin.compact()
    standin.drop_watches()
    # Each resource relists after a back-off of 0.8 s doubling: four relists over the resources
    # within about 2.4 s idle, most of it back-off (wall time, not CPU).
    wait_until(lambda: counter(port, "modelmetrics_watch_relists_total",
                               {"reason": "expired"}) >= lists_before + 4,
               what="4 more expired relists over the four resources")
    assert counter(port, "modelmetrics_watch_relists_total",
                   {"reason": "expired", "resource": "pods"}) >= 1
    assert counter(port, "modelmetrics_watch_cache_objects", {"resource": "pods"}) == 1
    assert through(standin, METRICS)["kind"] == "ModelDeploymentMetrics"
