"""deploy/ against real Prometheus tools (Debian's prometheus package):

* `promtool check rules` and `promtool test rules` on deploy/prometheus (the unit tests cover
  every alert firing and not firing);
* every query of every panel of deploy/grafana/*.json, and every recording rule, evaluated by a
  real Prometheus that scrapes the demo's simulators (the vLLM P/D, SGLang and vLLM-Omni Pods and
  the pipeline simulator) plus a deployment behind the vLLM router, must return a finite value.
"""

import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

import pytest
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from deadlines import wait_until  # noqa: E402
from loopback_process import Process  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("MODELMETRICS_BIN", str(ROOT / "build/src/cli/modelmetrics"))
RULES = ROOT / "deploy/prometheus"
DASHBOARDS = sorted((ROOT / "deploy/grafana").glob("*.json"))
WINDOW = "1m"  # what $__rate_interval becomes


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_promtool_checks_and_unit_tests_the_rules():
    for args in (["check", "rules", "vllm-omni-rules.yaml"],
                 ["test", "rules", "vllm-omni-rules.test.yaml"]):
        result = subprocess.run(["promtool", *args], cwd=RULES, capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
    # Every alert has a runbook and is exercised by the unit tests.
    rules = yaml.safe_load((RULES / "vllm-omni-rules.yaml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "alert" in rule:
                assert rule["annotations"]["runbook"].strip(), rule["alert"]
    tests = yaml.safe_load((RULES / "vllm-omni-rules.test.yaml").read_text())["tests"]
    tested = {case["alertname"] for t in tests for case in t["alert_rule_test"]}
    assert alerts == tested
    for alert in alerts:
        cases = [c for t in tests for c in t["alert_rule_test"] if c["alertname"] == alert]
        assert any(c["exp_alerts"] for c in cases), f"{alert} never fires in the tests"
        assert any(not c["exp_alerts"] for c in cases), f"{alert} always fires in the tests"


def dashboard_queries():
    for path in DASHBOARDS:
        board = json.loads(path.read_text())
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                yield f"{path.name}: {panel['title']} [{target['refId']}]", target["expr"]


def concrete(expr):
    expr = expr.replace("$__rate_interval", WINDOW)
    return re.sub(r'=~"\$\w+"', '=~".*"', expr)


@pytest.fixture(scope="module")
def prometheus():
    work = pathlib.Path(tempfile.mkdtemp(prefix="mm-dashboards-"))
    demo = Process([BIN, "demo", "--duration", "240s", "--no-ui", "-o", "json"])
    banner = demo.until(r"^pipeline simulator: serving")
    routed_sd = work / "routed.json"
    routed = Process([BIN, "simulate", "deployment", "--name", "routed", "-n", "demo",
                      "--router", "vllm-router", "--duration", "240s",
                      "--file-sd-out", str(routed_sd)])
    routed.until(r"^objects|http://127", timeout=20)
    groups = []
    for line in banner:
        pod = re.match(r"\s+demo/(\S+)\s+(https?)://(127\.0\.0\.1:\d+)/metrics", line)
        if pod:
            groups.append({"targets": [pod.group(3)],
                           "labels": {"namespace": "demo", "pod": pod.group(1)}})
        pipeline = re.search(r"serving /metrics on http://(127\.0\.0\.1:\d+)/metrics", line)
        if pipeline:
            groups.append({"targets": [pipeline.group(1)],
                           "labels": {"namespace": "demo", "pod": "pipeline-simulator"}})
    assert len(groups) >= 10, banner
    api = next(re.search(r"aggregated API: http://(127\.0\.0\.1:\d+) \(bearer token (\w+)\)", line)
               for line in banner if "aggregated API:" in line)
    (work / "demo.json").write_text(json.dumps(groups))
    port = free_port()
    (work / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "2s", "evaluation_interval": "2s"},
        "scrape_configs": [
            {"job_name": "pods", "file_sd_configs": [
                {"files": [str(work / "demo.json"), str(routed_sd)], "refresh_interval": "2s"}]},
            # The aggregated API server's own metrics, with the demo's token.
            {"job_name": "modelmetrics-apiserver", "authorization": {"credentials": api.group(2)},
             "static_configs": [{"targets": [api.group(1)]}]}],
    }))
    server = Process(["prometheus", f"--config.file={work / 'prometheus.yml'}",
                      f"--storage.tsdb.path={work / 'data'}",
                      f"--web.listen-address=127.0.0.1:{port}"])
    base = f"http://127.0.0.1:{port}"
    yield base
    for process in (server, routed, demo):
        process.stop()


def query(base, expr):
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as response:
        answer = json.loads(response.read())
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def finite(result):
    return any(float(sample["value"][1]) == float(sample["value"][1]) and
               abs(float(sample["value"][1])) != float("inf") for sample in result)


def test_every_dashboard_query_and_recording_rule_returns_data(prometheus):
    rules = yaml.safe_load((RULES / "vllm-omni-rules.yaml").read_text())
    recordings = [(f"rule {r['record']}", r["expr"]) for g in rules["groups"] for r in g["rules"]
                  if "record" in r]
    pending = {name: concrete(expr) for name, expr in [*dashboard_queries(), *recordings]}
    assert len(pending) >= 60

    def all_answered():
        for name, expr in list(pending.items()):
            try:
                if finite(query(prometheus, expr)):
                    del pending[name]
            except OSError:
                pass  # Prometheus still starting
        return not pending

    # Every query needs two scrapes of the demo's traffic in its window and the recording rules
    # evaluated on top: a few 2 s rounds idle; 150 s (kept) is a wide margin on a loaded machine.
    # Checked once a second, for the next scrape or rule evaluation: a check is 60+ queries.
    wait_until(all_answered, 150, poll=1, what=lambda: "data from every query; still without:\n" +
               "\n".join(f"{k}: {v}" for k, v in pending.items()))
