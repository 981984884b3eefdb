"""The custom metrics API of `modelmetrics serve` (custom_metrics_api: true) behind the
kube-apiserver stand-in, registered as the v1beta2 and v1beta1 APIServices of custom.metrics.k8s.io
as docs/autoscaling.md installs them: kubectl's raw reads of discovery, an object metric and a pods
metric as the HPA controller's ServiceAccount (its RBAC checked by the stand-in, then by
SubjectAccessReview at the server), and a Pod that stops answering, which turns the metric into an
error rather than a smaller number."""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from deadlines import wait_until  # noqa: E402
from standin import StandIn  # noqa: E402
from test_aggregation import kubectl, pods, start_serve, tls  # noqa: E402,F401 (pods: a fixture)

import pytest  # noqa: E402

GROUP = "custom.metrics.k8s.io"
OBJECT = f"/apis/{GROUP}/v1beta2/namespaces/demo/modeldeployments.worker.gpustack.ai/chat"
PODS = f"/apis/{GROUP}/v1beta2/namespaces/demo/pods/*"
SELECTOR = "labelSelector=app.kubernetes.io/instance%3Dchat"


@pytest.fixture
def metrics_cluster(tmp_path, pods):  # noqa: F811
    standin = StandIn(tls, objects_file=pods)
    serve, port = start_serve(tmp_path, standin, extra="custom_metrics_api: true\n")
    for version in ("v1beta2", "v1beta1"):  # v1beta2 first: the higher versionPriority
        standin.register(GROUP, version, port)
    yield standin, port, tmp_path
    serve.stop()
    standin.stop()


def raw(standin, work, path, token="hpa-token", check=True):
    out = kubectl(standin, work, token, "get", "--raw", path, check=check)
    return json.loads(out.stdout) if check else out


def test_discovery_object_and_pods_metrics_through_the_aggregator(metrics_cluster):
    standin, port, work = metrics_cluster
    for version in ("v1beta2", "v1beta1"):
        assert standin.check_availability(GROUP, version) == (True, "all checks passed")
    listed = raw(standin, work, f"/apis/{GROUP}/v1beta2")
    names = {r["name"] for r in listed["resources"]}
    assert {"modeldeployments.worker.gpustack.ai/waiting", "pods/kv-cache-usage",
            "modeldeployments.worker.gpustack.ai/kv-cache-usage-max"} <= names
    groups = raw(standin, work, "/apis")["groups"]
    custom = next(g for g in groups if g["name"] == GROUP)
    assert custom["preferredVersion"]["version"] == "v1beta2"

    # The object metric and the Pods' own values come from one shared read (5 s): the deployment's
    # running requests are its Pods' sum.
    def same_read():
        whole = raw(standin, work, f"{OBJECT}/running?metricLabelSelector=role%3Dserver")
        per_pod = raw(standin, work, f"{PODS}/running?{SELECTOR}")
        if whole["items"][0]["timestamp"] != max(i["timestamp"] for i in per_pod["items"]):
            return None
        return whole, per_pod
    whole, per_pod = wait_until(same_read, 20, what="the object and pods metrics of one read")
    item = whole["items"][0]
    assert item["describedObject"] == {"kind": "ModelDeployment", "namespace": "demo",
                                       "name": "chat", "apiVersion": "worker.gpustack.ai/v1alpha1"}
    assert item["metric"] == {"name": "running", "selector": {"matchLabels": {"role": "server"}}}
    assert sorted(i["describedObject"]["name"] for i in per_pod["items"]) == \
        ["chat-server-0", "chat-server-1"]
    assert float(item["value"]) == sum(
        float(i["value"]) for i in per_pod["items"])  # gauges: whole numbers
    # A windowed value once two reads are 5 s apart.
    ttft = wait_until(lambda: (lambda r: r if r.returncode == 0 else None)(
        raw(standin, work, f"{OBJECT}/ttft", check=False)), 30, poll=1, what="a TTFT window")
    assert json.loads(ttft.stdout)["items"][0]["windowSeconds"] >= 1

    # The HPA's RBAC is kube-apiserver's first: a user without it never reaches the server.
    denied = raw(standin, work, f"{OBJECT}/running", token="viewer-token", check=False)
    assert denied.returncode != 0 and "Forbidden" in denied.stderr


def test_a_pod_that_stops_answering_makes_the_metric_an_error(metrics_cluster):
    standin, port, work = metrics_cluster
    assert raw(standin, work, f"{OBJECT}/waiting")["items"]
    standin.add_silent_pod("chat-server-1", "chat-server-9")

    def refused():
        out = raw(standin, work, f"{OBJECT}/waiting?metricLabelSelector=role%3Dserver", check=False)
        return out if out.returncode != 0 else None
    out = wait_until(refused, 30, poll=1, what="the metric to become an error")
    assert "NotFound" in out.stderr and "chat-server-9" in out.stderr, out.stderr
    # The Pods that answer still have their own values; the silent one is left out.
    per_pod = raw(standin, work, f"{PODS}/waiting?{SELECTOR}")
    assert sorted(i["describedObject"]["name"] for i in per_pod["items"]) == \
        ["chat-server-0", "chat-server-1"]
