"""KEDA's metrics-api scaler on the snapshot: every `valueLocation` docs/autoscaling.md documents,
applied by the GJSON library KEDA uses (Debian's golang-github-tidwall-gjson-dev, through the small
Go program gjson_locate/), finds exactly the snapshot value the table names in a live snapshot, and
finds nothing (so KEDA errors and the HPA holds) when the snapshot is partial or the scope is not
there; `items.0.value` reads the custom metrics API's answer and finds nothing in its 404."""

import json
import os
import pathlib
import re
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from loopback_process import Process  # noqa: E402

BIN = os.environ.get("MODELMETRICS_BIN", str(ROOT / "build/src/cli/modelmetrics"))
GOPATH = "/usr/share/gocode"  # where Debian's golang-*-dev packages put their sources


@pytest.fixture(scope="module")
def locate(tmp_path_factory):
    work = tmp_path_factory.mktemp("gjson")
    binary = work / "gjson_locate"
    # GOPATH mode: the library from Debian's package, nothing fetched.
    env = dict(os.environ, GO111MODULE="off", GOPATH=GOPATH, GOCACHE=str(work / "cache"),
               GOFLAGS="", CGO_ENABLED="0")
    assert pathlib.Path(GOPATH, "src/github.com/tidwall/gjson").is_dir(), \
        "golang-github-tidwall-gjson-dev is not installed: run scripts/setup.sh"
    built = subprocess.run(["go", "build", "-o", str(binary), str(HERE / "gjson_locate" / "main.go")],
                           capture_output=True, text=True, env=env, timeout=300)
    assert built.returncode == 0, built.stderr

    def run(document, expressions):
        path = work / "document.json"
        path.write_text(document if isinstance(document, str) else json.dumps(document))
        out = subprocess.run([str(binary), str(path), *expressions], capture_output=True,
                             text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines()]
    return run


def documented_locations():
    """(signal, valueLocation, (list, name, scope, field)) of docs/autoscaling.md's table."""
    text = (ROOT / "docs" / "autoscaling.md").read_text()
    section = text.split("## KEDA's metrics-api scaler", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != 3 or not cells[1].startswith("`[{"):
            continue
        location = cells[1].strip("`").replace("\\|", "|")
        reads = tuple(re.findall(r"`([^`]*)`", cells[2]))
        assert len(reads) == 4, line
        rows.append((cells[0], location, reads))
    assert len(rows) >= 6, "the KEDA table lost its rows"
    return rows


def value_of(snapshot, reads):
    """The snapshot value a row names, found without GJSON."""
    area, name, scope, field = reads
    found = [e[field] for e in snapshot.get(area, []) if e["name"] == name and e["scope"] == scope]
    assert found, f"{reads} not in the snapshot"
    return found[0]


def snapshot(tmp_path, *sim_args):
    objects = tmp_path / "objects.json"
    sim = Process([BIN, "simulate", "deployment", "--engine", "vllm", "--name", "chat", "-n", "demo",
                   "--roles", "pd", "--replicas", "2", "--router", "llm-d-router",
                   "--max-running", "4", "--rate", "20", "--objects-out", str(objects),
                   "--duration", "60s", *sim_args])
    try:
        sim.until(r"^objects: ")
        out = subprocess.run([BIN, "snapshot", "--objects", str(objects), "-n", "demo", "chat",
                              "--window", "2s", "-o", "json"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout
    finally:
        sim.stop()


def test_every_documented_location_finds_its_value_and_nothing_when_it_is_missing(locate, tmp_path):
    rows = documented_locations()
    locations = [location for _, location, _ in rows]

    live = snapshot(tmp_path)
    document = json.loads(live)
    assert document["partial"] is False, document.get("missing")
    for (signal, _, reads), found in zip(rows, locate(live, locations)):
        assert found["exists"] and found["type"] == "Number", (signal, found)
        assert float(found["raw"]) == value_of(document, reads), (signal, found)

    # A scope the deployment does not have: nothing, not 0.
    absent = [re.sub(r'scope=="[^"]*"', 'scope=="engine/nothing"', loc) for loc in locations]
    for (signal, _, _), found in zip(rows, locate(live, absent)):
        assert not found["exists"] and found["type"] == "Null", (signal, found)

    # A decode Pod failing: the snapshot is partial, the decode queue a sum over one Pod of two;
    # every location finds nothing.
    failing = snapshot(tmp_path, "--fault", "chat-decode-1=http-500")
    document = json.loads(failing)
    assert document["partial"] is True
    assert any(e["name"] == "waiting" and e["scope"] == "engine/decode"
               for e in document["queueing"])  # the number a plain location would have read
    for (signal, _, _), found in zip(rows, locate(failing, locations)):
        assert not found["exists"], (signal, found)


def test_items_value_reads_the_custom_metrics_answer_and_nothing_in_its_404(locate):
    demo = Process([BIN, "demo", "--duration", "60s", "--interval", "30s", "--no-ui",
                    "--no-pipeline"])
    try:
        token, url = demo.match(
            r"  curl -H 'Authorization: Bearer (\w+)' '(http://127\.0\.0\.1:\d+/apis/"
            r"custom\.metrics\.k8s\.io/[^']+)'").groups()

        def get(u):
            request = urllib.request.Request(u, headers={"Authorization": f"Bearer {token}"})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode()
        code, answer = get(url)
        assert code == 200, answer
        found, = locate(answer, ["items.0.value"])
        assert found["type"] == "String" and found["raw"] == json.dumps(
            json.loads(answer)["items"][0]["value"])
        code, missing = get(url.replace("role%3Dgeneration", "role%3Dnothing"))
        assert code == 404, missing
        found, = locate(missing, ["items.0.value"])
        assert not found["exists"]
    finally:
        demo.stop()
