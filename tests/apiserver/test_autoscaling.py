"""The HPA's arithmetic on the custom metrics API: the replica calculator stand-in
(hpa_standin.py) on cases worked by hand from kube-controller-manager's rules, then an HPA on a
simulated vLLM P/D deployment's decode queue, read through the kube-apiserver stand-in from
`modelmetrics serve`. As the offered load steps up, the decode Pods' batches fill and their queue
grows, and the HPA scales the decode role up as the real controller computes it; when a decode Pod
stops answering, the metric call fails and the HPA holds its replica count."""

import json
import math
import pathlib
import sys
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from deadlines import wait_until  # noqa: E402
from hpa_standin import (CustomMetricsClient, Hpa, MetricsError, milli,  # noqa: E402
                         object_average_replicas, object_value_replicas, pods_replicas)
from loopback_process import Process  # noqa: E402
from standin import StandIn, https_get  # noqa: E402
from test_aggregation import BIN, start_serve, tls  # noqa: E402

# -- the calculator, by hand ---------------------------------------------------------------------


def pod(name, phase="Running"):
    return {"name": name, "phase": phase}


def test_quantities_read_as_milli_values_rounded_up():
    assert milli("4") == 4000
    assert milli("800m") == 800
    assert milli("19556u") == 20  # 19.556m, rounded up as MilliValue() does
    assert milli("1.5") == 1500
    assert milli("2k") == 2_000_000


def test_object_metrics():
    # Value: the ratio times the ready Pods; inside the tolerance band, no change.
    assert object_value_replicas(1500, 1000, current=3, ready_pods=3) == 5  # ceil(1.5 x 3)
    assert object_value_replicas(1050, 1000, current=3, ready_pods=3) == 3  # 1.05: tolerated
    assert object_value_replicas(2000, 1000, current=0, ready_pods=0) == 2  # from zero: the ratio
    # AverageValue: usage over the target, whatever the Pods.
    assert object_average_replicas(32000, 4000, status_replicas=2) == 8
    assert object_average_replicas(8400, 4000, status_replicas=2) == 2  # 1.05: tolerated
    assert object_average_replicas(2000, 4000, status_replicas=4) == 1


def test_pods_metrics_with_missing_and_pending_pods():
    pods3 = [pod("a"), pod("b"), pod("c")]
    assert pods_replicas({"a": 300, "b": 500, "c": 700}, pods3, 300, current=3) == 5
    # Scaling up, a Pod without a value counts as 0: (900 + 900 + 0) / 3 = 600, the target.
    assert pods_replicas({"a": 900, "b": 900}, pods3, 600, current=3) == 3
    # Scaling down, it counts as the target: (100 + 100 + 600) / 3 / 600 = 0.44 -> ceil(1.33).
    assert pods_replicas({"a": 100, "b": 100}, pods3, 600, current=3) == 2
    # A Pending Pod would take a scale-up as 0: (900 + 900 + 0) / 3 is the target again.
    assert pods_replicas({"a": 900, "b": 900}, [pod("a"), pod("b"), pod("c", "Pending")], 600,
                         current=3) == 3
    # Deleted and failed Pods are left out entirely.
    assert pods_replicas({"a": 900, "b": 900}, [pod("a"), pod("b"), pod("c", "Failed")], 600,
                         current=2) == 3  # ceil(1.5 x 2)
    with pytest.raises(MetricsError):
        pods_replicas({}, pods3, 600, current=3)


class FakeClient:
    def __init__(self, values):
        self.values = values  # metric name -> milli value, or an exception

    def object_metric(self, ns, resource, name, metric, selector=""):
        value = self.values[metric]
        if isinstance(value, Exception):
            raise value
        return value


def object_metric(name, average):
    return {"type": "Object", "object": {
        "describedObject": {"apiVersion": "worker.gpustack.ai/v1alpha1",
                            "kind": "ModelDeployment", "name": "chat"},
        "metric": {"name": name}, "target": {"type": "AverageValue", "averageValue": average}}}


def test_the_controller_holds_on_failed_metrics_and_limits_a_scale_up():
    client = FakeClient({"waiting": 40000, "running": 4000})
    hpa = Hpa(client, "demo", [object_metric("waiting", "4"), object_metric("running", "8")],
              min_replicas=2, max_replicas=20, replicas=2)
    assert hpa.sync(0) == 4  # wants 10; at most max(2 x 2, 4) per step
    assert hpa.sync(15) == 8
    assert hpa.sync(30) == 10
    # One metric fails and the other would scale down: no scaling.
    client.values["waiting"] = MetricsError("no value")
    assert hpa.sync(45) == 10
    assert hpa.condition[:3] == ("ScalingActive", False, "FailedGetObjectMetric")
    # One fails and the other would scale up: the controller scales on the valid one.
    client.values["running"] = 200000
    assert hpa.sync(60) == 20
    # Every metric back, lower: the five-minute stabilization keeps the window's largest.
    client.values.update({"waiting": 4000, "running": 4000})
    assert hpa.sync(75) == 20
    assert hpa.sync(75 + 301) == 2
    assert hpa.condition[1] is True


# -- on a simulated deployment ---------------------------------------------------------------------

GROUP = "custom.metrics.k8s.io"
STEP_AFTER_S = 20


@pytest.fixture
def scaling(tmp_path):
    # Two decode Pods with batches of 4: 4 requests/s leave them nearly idle; from 20 s on, 80/s
    # (40 per decode Pod, about 26 in flight each) fill the batches and queue the rest.
    objects = tmp_path / "objects.json"
    sim = Process([BIN, "simulate", "deployment", "--engine", "vllm", "--name", "chat", "-n", "demo",
                   "--roles", "pd", "--replicas", "2", "--max-running", "4", "--rate", "4",
                   "--rate-step", f"80@{STEP_AFTER_S}s", "--objects-out", str(objects),
                   "--duration", "120s"])
    sim.until(r"^objects: ")
    started = time.monotonic()
    standin = StandIn(tls, objects_file=objects)
    serve, port = start_serve(tmp_path, standin,
                              extra="custom_metrics_api: true\nmetrics_reuse_ms: 1000\n")
    for version in ("v1beta2", "v1beta1"):
        standin.register(GROUP, version, port)

    def get(path):
        code, body = https_get(standin.url + path, "hpa-token", tls("ca.pem"), timeout=10)
        return code, json.loads(body or b"{}")
    yield standin, CustomMetricsClient(get), started
    serve.stop()
    standin.stop()
    sim.stop()


def test_the_hpa_scales_decode_up_under_rising_load_and_holds_when_the_value_goes_missing(scaling):
    standin, client, started = scaling
    assert client.version() == "v1beta2"
    hpa = Hpa(client, "demo", [{"type": "Object", "object": {
        "describedObject": {"apiVersion": "worker.gpustack.ai/v1alpha1",
                            "kind": "ModelDeployment", "name": "chat"},
        "metric": {"name": "waiting", "selector": {"matchLabels": {"role": "decode"}}},
        "target": {"type": "AverageValue", "averageValue": "4"}}}],
        min_replicas=2, max_replicas=10, replicas=2)
    history = []  # (seconds since the simulation started, decode waiting, replicas set)

    def sync():
        now = time.monotonic() - started
        usage = client.object_metric("demo", "modeldeployments.worker.gpustack.ai", "chat",
                                     "waiting", "role=decode")
        before = hpa.replicas
        after = hpa.sync(now)
        history.append((round(now, 1), usage / 1000, after))
        # The controller's bounds on one step: never down inside the 5-minute window, up by at
        # most max(2 x current, 4), and to no more than the value asks for.
        assert before <= after <= max(2 * before, 4), history
        assert after <= max(before, math.ceil(max(w for _, w, _ in history) / 4)), history
        return True

    # Light load: the decode queue stays under 4 per replica; the HPA stays at its minimum. Judged
    # only for syncs that ended 2 s before the step (`started` is a little after the simulator's
    # start, and a sync on a busy machine can be slow), so no read can see the step's queue.
    judged = 0
    while time.monotonic() - started < STEP_AFTER_S - 3:
        sync()
        if time.monotonic() - started < STEP_AFTER_S - 2:
            assert hpa.replicas == 2, history
            judged += 1
        time.sleep(1)
    assert judged >= 3, history
    # The step: about 2 x 22 requests wait behind full batches, asking for 11 replicas; the HPA
    # gets to 10 (its maximum) by doublings at most (sync() checks each step), and only on a read
    # that asked for more than 9.
    wait_until(lambda: sync() and hpa.replicas == 10, 40, poll=1,
               what=lambda: f"the decode role to scale to its maximum: {history}")
    assert max(w for _, w, _ in history) > 36, history
    assert len({r for _, _, r in history}) >= 3, history  # in steps, not one jump

    # A decode Pod stops answering: the metric call fails and the replica count holds.
    standin.add_silent_pod("chat-decode-1", "chat-decode-9")

    def failed():
        hpa.sync(time.monotonic() - started)
        return hpa.condition[1] is False
    wait_until(failed, 20, poll=1, what=lambda: f"the metric to fail: {hpa.condition}")
    assert hpa.condition[2] == "FailedGetObjectMetric"
    assert "chat-decode-9" in hpa.condition[3], hpa.condition
    held = hpa.replicas
    for _ in range(3):
        assert hpa.sync(time.monotonic() - started) == held
        time.sleep(1)
    # With no recommendation history to hold it up, a zero read for the missing value would
    # take the role down to its minimum at once; the failed call keeps every replica.
    fresh = Hpa(client, "demo", hpa.metrics, min_replicas=2, max_replicas=10, replicas=held)
    assert fresh.sync(time.monotonic() - started) == held
    assert fresh.condition[2] == "FailedGetObjectMetric"
    with pytest.raises(MetricsError, match="could not find the metric waiting"):
        client.object_metric("demo", "modeldeployments.worker.gpustack.ai", "chat", "waiting",
                             "role=decode")
