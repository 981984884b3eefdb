"""deploy/kubernetes: every kustomization renders with kubectl (1.32, kustomize built in), every
rendered object passes its Kubernetes (or CRD) OpenAPI schema offline (validate.mjs, with the
packages scripts/setup.sh installs from tests/deploy/kubernetes/package-lock.json), and the
objects agree with each other the way an install needs them to: the APIService names the group the
server serves and the Service that selects its Pods, the server can read the authentication
ConfigMap and ask for reviews, the aggregated role grants the metrics in that group, and the Pods
run as metrics-server's do."""

import os
import pathlib
import subprocess

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
KUSTOMIZE = ROOT / "deploy" / "kubernetes"
SCHEMAS = pathlib.Path(os.environ.get("MODELMETRICS_MANIFEST_SCHEMAS",
                                      ROOT / "build" / "manifest-schemas"))
TREES = ["base", "overlays/second-group", "overlays/cert-manager", "overlays/monitoring"]
AUTOSCALING = "overlays/autoscaling"
EXAMPLES = KUSTOMIZE / AUTOSCALING / "examples"


def render(tree):
    out = subprocess.run(["kubectl", "kustomize", str(KUSTOMIZE / tree)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def objects(tree):
    return [o for o in yaml.safe_load_all(render(tree)) if o]


def one(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


def validate(text):
    assert (SCHEMAS / "node_modules" / "kubernetes-models").is_dir(), \
        f"no schema packages in {SCHEMAS}: run scripts/setup.sh"
    out = subprocess.run(["node", str(ROOT / "tests/deploy/kubernetes/validate.mjs")],
                         input=text, capture_output=True, text=True, cwd=SCHEMAS, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " 0 failed" in out.stdout


@pytest.mark.parametrize("tree", TREES + [AUTOSCALING])
def test_renders_and_passes_the_schemas(tree):
    validate(render(tree))


def test_the_autoscaling_examples_pass_the_schemas():
    validate("---\n".join(p.read_text() for p in sorted(EXAMPLES.glob("hpa-*.yaml"))))


def test_the_schema_check_fails_a_broken_object():
    broken = ("apiVersion: apiregistration.k8s.io/v1\nkind: APIService\n"
              "metadata: {name: v1.x.example.com}\n"
              "spec: {group: x.example.com, version: v1, groupPriorityMinimum: high,"
              " versionPriority: 100}\n")
    out = subprocess.run(["node", str(ROOT / "tests/deploy/kubernetes/validate.mjs")],
                         input=broken, capture_output=True, text=True, cwd=SCHEMAS, timeout=60)
    assert out.returncode == 1, out.stdout
    assert "groupPriorityMinimum" in out.stdout


@pytest.mark.parametrize("tree", TREES)
def test_objects_fit_together(tree):
    objs = objects(tree)
    deployment = one(objs, "Deployment", "modelmetrics")
    pod = deployment["spec"]["template"]
    container = pod["spec"]["containers"][0]
    # The serve configuration the Pods mount is the generated ConfigMap's.
    config_volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "config")
    configmap = one(objs, "ConfigMap", config_volume["configMap"]["name"])
    serve = yaml.safe_load(configmap["data"]["serve.yaml"])
    assert container["args"] == ["serve", "--config", "/etc/modelmetrics/serve.yaml"]
    assert serve["in_cluster"] is True and serve["delegated_authentication"] is True
    assert serve["authorization"] == "subjectaccessreview"

    # The APIService: the served group and version, through the Service that selects the Pods.
    apiservice = one(objs, "APIService")
    assert apiservice["metadata"]["name"] == f"{serve['api_version']}.{serve['api_group']}"
    assert apiservice["spec"]["group"] == serve["api_group"]
    assert apiservice["spec"]["version"] == serve["api_version"]
    service = one(objs, "Service", apiservice["spec"]["service"]["name"])
    assert service["metadata"]["namespace"] == apiservice["spec"]["service"]["namespace"]
    port = next(p for p in service["spec"]["ports"] if p["port"] == apiservice["spec"]["service"]["port"])
    assert port["targetPort"] in [p["name"] for p in container["ports"]]
    assert next(p for p in container["ports"] if p["name"] == port["targetPort"])["containerPort"] \
        == serve["port"]
    labels = pod["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in service["spec"]["selector"].items())
    pdb = one(objs, "PodDisruptionBudget")
    assert all(labels.get(k) == v for k, v in pdb["spec"]["selector"]["matchLabels"].items())

    # What the ServiceAccount may do: read objects, ask for reviews, read the ConfigMap.
    account = pod["spec"]["serviceAccountName"]
    ns = deployment["metadata"]["namespace"]

    def bound(kind, role):
        return any(o["kind"] == kind and o["roleRef"]["name"] == role and
                   {"kind": "ServiceAccount", "name": account, "namespace": ns} in o["subjects"]
                   for o in objs)
    assert bound("ClusterRoleBinding", "system:auth-delegator")
    assert bound("ClusterRoleBinding", "modelmetrics:object-reader")
    reader = one(objs, "RoleBinding", "modelmetrics:extension-apiserver-authentication-reader")
    assert reader["metadata"]["namespace"] == "kube-system"
    assert reader["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                 "name": "extension-apiserver-authentication-reader"}
    rules = one(objs, "ClusterRole", "modelmetrics:object-reader")["rules"]
    for group, resource in [("", "pods"), ("apps", "replicasets"), ("apps", "deployments"),
                            ("worker.gpustack.ai", "modeldeployments")]:
        assert any(group in r["apiGroups"] and resource in r["resources"] and
                   {"get", "list", "watch"} <= set(r["verbs"]) for r in rules), resource
    # Viewers get the metrics, in the served group.
    aggregated = one(objs, "ClusterRole", "modelmetrics:aggregated-metrics-reader")
    assert aggregated["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert aggregated["rules"] == [{"apiGroups": [serve["api_group"]],
                                    "resources": ["modeldeployments/metrics",
                                                  "modeldeploymentmetrics"],
                                    "verbs": ["get"]}]

    # Two replicas, probes on the named checks, and metrics-server's security context.
    assert deployment["spec"]["replicas"] == 2
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["runAsNonRoot"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "requests" in container["resources"]
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/tmp" in mounts  # the only writable place (self-signed certificates go there)


def test_second_group_moves_everything():
    rendered = render("overlays/second-group")
    assert "worker.gpustack.ai/v1" not in rendered
    objs = objects("overlays/second-group")
    assert one(objs, "APIService")["metadata"]["name"] == "v1.metrics.modelmetrics.io"


def test_cert_manager_verifies_the_server():
    objs = objects("overlays/cert-manager")
    apiservice = one(objs, "APIService")
    assert "insecureSkipTLSVerify" not in apiservice["spec"]
    certificate = one(objs, "Certificate")
    ns = certificate["metadata"]["namespace"]
    assert apiservice["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
        f"{ns}/{certificate['metadata']['name']}"
    service = one(objs, "Service")
    assert f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc" in \
        certificate["spec"]["dnsNames"]
    deployment = one(objs, "Deployment")
    config_volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"]
                         if v["name"] == "config")
    serve = yaml.safe_load(one(objs, "ConfigMap", config_volume["configMap"]["name"])
                           ["data"]["serve.yaml"])
    assert "tls_self_signed" not in serve
    secret_volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"]
                         if v.get("secret", {}).get("secretName") == certificate["spec"]["secretName"])
    mount = next(m for m in deployment["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
                 if m["name"] == secret_volume["name"])
    assert serve["tls_cert_file"] == mount["mountPath"] + "/tls.crt"
    assert serve["tls_key_file"] == mount["mountPath"] + "/tls.key"


def test_autoscaling_registers_both_custom_metrics_versions_on_the_same_server():
    objs = objects(AUTOSCALING)
    base = one(objs, "APIService", "v1.worker.gpustack.ai")
    v1beta2 = one(objs, "APIService", "v1beta2.custom.metrics.k8s.io")
    v1beta1 = one(objs, "APIService", "v1beta1.custom.metrics.k8s.io")
    for apiservice, version in ((v1beta2, "v1beta2"), (v1beta1, "v1beta1")):
        assert apiservice["spec"]["group"] == "custom.metrics.k8s.io"
        assert apiservice["spec"]["version"] == version
        assert apiservice["spec"]["service"] == base["spec"]["service"]
    # v1beta2 preferred: the HPA's client takes the group's preferred version.
    assert v1beta2["spec"]["versionPriority"] > v1beta1["spec"]["versionPriority"]
    deployment = one(objs, "Deployment", "modelmetrics")
    config_volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"]
                         if v["name"] == "config")
    serve = yaml.safe_load(one(objs, "ConfigMap", config_volume["configMap"]["name"])
                           ["data"]["serve.yaml"])
    assert serve["custom_metrics_api"] is True
    assert serve["authorization"] == "subjectaccessreview"
    # The HPA controller may read every custom metric.
    binding = one(objs, "ClusterRoleBinding", "modelmetrics:hpa-controller-custom-metrics")
    assert {"kind": "ServiceAccount", "name": "horizontal-pod-autoscaler",
            "namespace": "kube-system"} in binding["subjects"]
    role = one(objs, "ClusterRole", binding["roleRef"]["name"])
    assert role["rules"] == [{"apiGroups": ["custom.metrics.k8s.io"], "resources": ["*"],
                              "verbs": ["get", "list"]}]
    # Off by default: the base registers no custom metrics APIService.
    assert not [o for o in objects("base") if o["kind"] == "APIService" and
                o["spec"]["group"] == "custom.metrics.k8s.io"]


def test_the_hpa_examples_read_metrics_the_server_serves():
    import json
    binary = ROOT / "build" / "src" / "cli" / "modelmetrics"
    served = None
    if binary.exists():  # the names the server's discovery lists (modelmetrics exporters' rows)
        out = subprocess.run([str(binary), "exporters"], capture_output=True, text=True,
                             timeout=60)
        served = out.stdout if out.returncode == 0 else None
    for path in sorted(EXAMPLES.glob("hpa-*.yaml")):
        hpa = yaml.safe_load(path.read_text())
        for metric in hpa["spec"]["metrics"]:
            spec = metric[metric["type"].lower()]
            name = spec["metric"]["name"]
            if metric["type"] == "Object":
                assert spec["describedObject"] == {"apiVersion": "worker.gpustack.ai/v1alpha1",
                                                   "kind": "ModelDeployment",
                                                   "name": spec["describedObject"]["name"]}
                assert set(spec["metric"].get("selector", {}).get("matchLabels", {})) <= \
                    {"role", "scope"}
            if served is not None:
                assert json.dumps(name.removesuffix("-max")) in served, name


def test_the_keda_example_reads_the_documented_decode_queue_with_a_bound_token():
    import re
    docs = [d for d in yaml.safe_load_all((EXAMPLES / "keda-scaledobject.yaml").read_text()) if d]
    # The Kubernetes objects pass their schemas (KEDA's own kinds have no schema package here).
    validate(yaml.safe_dump_all([d for d in docs if not d["apiVersion"].startswith("keda.sh/")]))
    scaled = one(docs, "ScaledObject")
    trigger, = scaled["spec"]["triggers"]
    assert trigger["type"] == "metrics-api"
    meta = trigger["metadata"]
    assert meta["authMode"] == "bearer" and meta["format"] == "json"
    assert meta["url"].startswith("https://kubernetes.default.svc/apis/worker.gpustack.ai/v1/")
    assert meta["url"].endswith("/modeldeployments/chat/metrics")
    # The location is the documented decode queue's, character for character.
    manual = (ROOT / "docs" / "autoscaling.md").read_text()
    row = next(line for line in manual.splitlines() if line.startswith("| decode queue |"))
    documented = re.split(r"(?<!\\)\|", row)[2].strip().strip("`").replace("\\|", "|")
    assert meta["valueLocation"] == documented
    auth = one(docs, "TriggerAuthentication", trigger["authenticationRef"]["name"])
    token, = auth["spec"]["boundServiceAccountToken"]
    assert token["parameter"] == "token"
    account = one(docs, "ServiceAccount", token["serviceAccountName"])
    ns = scaled["metadata"]["namespace"]
    assert account["metadata"]["namespace"] == ns
    reader = next(d for d in docs if d["kind"] == "RoleBinding" and
                  d["roleRef"]["name"] == "modelmetrics:aggregated-metrics-reader")
    assert {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": ns} in \
        reader["subjects"]
    # The base install's role it binds grants the snapshot.
    base_role = one(objects("base"), "ClusterRole", "modelmetrics:aggregated-metrics-reader")
    assert "modeldeployments/metrics" in base_role["rules"][0]["resources"]
    requester = next(d for d in docs if d["kind"] == "Role" and
                     d["rules"][0]["resources"] == ["serviceaccounts/token"])
    assert requester["rules"][0]["resourceNames"] == [account["metadata"]["name"]]
    assert requester["rules"][0]["verbs"] == ["create"]
