"""A HorizontalPodAutoscaler controller stand-in, for tests that cannot run kube-controller-manager.
Written from reading its podautoscaler package (replica_calculator.go, horizontal.go, the metrics
client in metrics/client.go) and k8s.io/metrics' custom metrics client, in Python:

- the custom metrics client picks the group's preferred version from /apis discovery (v1beta2,
  else v1beta1), asks `namespaces/NS/RESOURCE/NAME/METRIC?metricLabelSelector=...` for an Object
  metric and needs exactly one item, and `namespaces/NS/pods/%2A/METRIC?labelSelector=...` for a
  Pods metric, where an empty list is an error; any non-2xx answer is an error;
- quantities are read in milli-units, as the controller does (MilliValue rounds up);
- the replica calculator: the usage ratio against a tolerance band of 0.1 on both sides; Object
  metrics with a Value target (ratio x ready Pods) or an AverageValue target (usage / target);
  Pods metrics with the missing-Pod rule (a Pod without a value counts as the target when scaling
  down, 0 when scaling up), Pending Pods counted as 0 when they would make a scale-up, deleted and
  failed Pods ignored, and no change when the recomputed ratio is within tolerance or would scale
  the other way;
- the controller: the largest proposal of the metrics that have one; no scaling at all when every
  metric failed, or when some failed and the others would scale down (ScalingActive False with
  the first failure's reason); no `behavior`: the scale-up limit max(2 x current, 4), the 5-minute
  downscale stabilization (the largest recommendation of the window), then min and max replicas.
"""

import math
import re
import urllib.parse
from decimal import Decimal

TOLERANCE = 0.1
SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4
DOWNSCALE_STABILIZATION_SECONDS = 300
GROUP = "custom.metrics.k8s.io"
KNOWN_VERSIONS = ("v1beta2", "v1beta1")

_SUFFIX = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([numkMGTPE]?|[eE][+-]?[0-9]+)$")


def milli(quantity):
    """A Quantity string's MilliValue(): the value in milli-units, rounded up."""
    match = _QUANTITY.match(quantity)
    if not match:
        raise ValueError(f"not a quantity: {quantity!r}")
    number, suffix = match.groups()
    exponent = int(suffix[1:]) if suffix[:1] in ("e", "E") else _SUFFIX[suffix]
    value = Decimal(number).scaleb(exponent + 3)
    return int(value.to_integral_value(rounding="ROUND_CEILING"))


class MetricsError(Exception):
    """A failed metric call: the controller's FailedGet...Metric."""


def within_tolerance(ratio, tolerance=TOLERANCE):
    return 1 - tolerance <= ratio <= 1 + tolerance


def object_value_replicas(usage, target, current, ready_pods):
    """GetObjectMetricReplicas: a Value target (usage and target in milli-units)."""
    ratio = usage / target
    if current == 0:
        return math.ceil(ratio)
    if within_tolerance(ratio):
        return current
    return math.ceil(ratio * ready_pods)


def object_average_replicas(usage, target, status_replicas):
    """GetObjectPerPodMetricReplicas: an AverageValue target."""
    ratio = usage / (target * status_replicas)
    if within_tolerance(ratio):
        return status_replicas
    return math.ceil(usage / target)


def pods_replicas(metrics, pods, target, current):
    """calcPlainMetricReplicas for a Pods metric. `metrics`: Pod name -> milli value; `pods`: the
    scale target's Pods as dicts with name, phase, ready, deleting."""
    if not pods:
        raise MetricsError("no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = set(), set(), set(), set()
    for pod in pods:
        name = pod["name"]
        if pod.get("deleting") or pod["phase"] == "Failed":
            ignored.add(name)
        elif pod["phase"] == "Pending":
            unready.add(name)
        elif name not in metrics:
            missing.add(name)
        else:
            ready.add(name)
    values = {name: v for name, v in metrics.items() if name in ready}
    if not values:
        raise MetricsError("did not receive metrics for targeted pods (pods might be unready)")
    ratio = (sum(values.values()) // len(values)) / target  # milli-units, integer mean
    scale_up_with_unready = bool(unready) and ratio > 1
    if not scale_up_with_unready and not missing:
        return current if within_tolerance(ratio) else math.ceil(ratio * len(values))
    if missing:
        if ratio < 1:
            values.update({name: target for name in missing})
        elif ratio > 1:
            values.update({name: 0 for name in missing})
    if scale_up_with_unready:
        values.update({name: 0 for name in unready})
    new_ratio = (sum(values.values()) // len(values)) / target  # milli-units, integer mean
    if within_tolerance(new_ratio) or (ratio < 1 < new_ratio) or (ratio > 1 > new_ratio):
        return current
    desired = math.ceil(new_ratio * len(values))
    if (new_ratio < 1 and desired > current) or (new_ratio > 1 and desired < current):
        return current
    return desired


class CustomMetricsClient:
    """k8s.io/metrics' custom metrics client over `get(path) -> (code, json)`."""

    def __init__(self, get):
        self.get = get

    def version(self):
        code, apis = self.get("/apis")
        if code != 200:
            raise MetricsError(f"discovery failed: {code}")
        group = next((g for g in apis["groups"] if g["name"] == GROUP), None)
        if group is None:
            raise MetricsError(f"no {GROUP} API group")
        if group["preferredVersion"]["version"] in KNOWN_VERSIONS:
            return group["preferredVersion"]["version"]
        for v in group["versions"]:
            if v["version"] in KNOWN_VERSIONS:
                return v["version"]
        raise MetricsError(f"no known version of {GROUP}")

    def _list(self, path, params):
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v})
        code, body = self.get(f"/apis/{GROUP}/{self.version()}/{path}" + (f"?{query}" if query else ""))
        if code != 200:
            raise MetricsError(body.get("message", str(code)) if isinstance(body, dict) else code)
        return body["items"]

    def object_metric(self, ns, resource, name, metric, selector=""):
        items = self._list(f"namespaces/{ns}/{resource}/{name}/{metric}",
                           {"metricLabelSelector": selector})
        if len(items) != 1:
            raise MetricsError(f"expected exactly one metric value for {resource} {name}, "
                               f"got {len(items)}")
        return milli(items[0]["value"])

    def pods_metric(self, ns, metric, label_selector):
        items = self._list(f"namespaces/{ns}/pods/%2A/{metric}", {"labelSelector": label_selector})
        if not items:
            raise MetricsError("no metrics returned from custom metrics API")
        return {i["describedObject"]["name"]: milli(i["value"]) for i in items}


class Hpa:
    """One HorizontalPodAutoscaler (autoscaling/v2, no `behavior`) over a scale target whose
    replica count it sets. `metrics` are dicts in the API's shape: {"type": "Object", "object":
    {...}} or {"type": "Pods", "pods": {...}}."""

    def __init__(self, client, ns, metrics, min_replicas, max_replicas, replicas, list_pods=None):
        self.client, self.ns, self.metrics = client, ns, metrics
        self.min, self.max, self.replicas = min_replicas, max_replicas, replicas
        self.list_pods = list_pods  # () -> the target's Pods (Pods metrics), each a dict
        self.recommendations = []  # (time, replicas)
        self.condition = ("ScalingActive", True, "ValidMetricFound", "")

    def _proposal(self, metric):
        kind = metric["type"]
        spec = metric[kind.lower()]
        target = spec["target"]
        if kind == "Object":
            selector = ",".join(f"{k}={v}" for k, v in
                                spec["metric"].get("selector", {}).get("matchLabels", {}).items())
            d = spec["describedObject"]
            resource = d["kind"].lower() + "s." + d["apiVersion"].split("/")[0]
            usage = self.client.object_metric(self.ns, resource, d["name"], spec["metric"]["name"],
                                              selector)
            if target["type"] == "Value":
                return object_value_replicas(usage, milli(target["value"]), self.replicas,
                                             self.replicas)
            return object_average_replicas(usage, milli(target["averageValue"]), self.replicas)
        pods = self.list_pods()
        values = self.client.pods_metric(self.ns, spec["metric"]["name"], spec["selector"])
        return pods_replicas(values, pods, milli(target["averageValue"]), self.replicas)

    def sync(self, now):
        """One reconcile: returns the replica count it set."""
        proposals, failures = [], []
        for metric in self.metrics:
            try:
                proposals.append(self._proposal(metric))
            except MetricsError as e:
                failures.append((f"FailedGet{metric['type']}Metric", str(e)))
        if failures and (not proposals or max(proposals) < self.replicas):
            reason, message = failures[0]
            self.condition = ("ScalingActive", False, reason,
                              f"the HPA was unable to compute the replica count: {message}")
            return self.replicas  # no scaling on invalid metrics
        self.condition = ("ScalingActive", True, "ValidMetricFound", "")
        # No behavior: the downscale stabilization over the proposals (the largest of the
        # window), then the scale-up limit, then min and max.
        self.recommendations = [(t, r) for t, r in self.recommendations
                                if now - t < DOWNSCALE_STABILIZATION_SECONDS]
        self.recommendations.append((now, max(proposals)))
        desired = max(r for _, r in self.recommendations)
        desired = min(desired, max(int(SCALE_UP_LIMIT_FACTOR * self.replicas),
                                   SCALE_UP_LIMIT_MINIMUM))
        self.replicas = max(self.min, min(self.max, desired))
        return self.replicas
