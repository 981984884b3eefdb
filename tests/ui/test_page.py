"""The web page (`modelmetrics ui`, and the one `modelmetrics demo` serves) in a real browser:
Debian's chromium, headless, driven through chromedriver by Debian's python3-selenium.

Against a running demo (vLLM P/D behind llm-d, SGLang behind its gateway, a vLLM-Omni speech
pipeline): the page loads with no console error, its numbers equal the JSON API's for the same
read, it updates within two polling intervals, missing[] entries render as missing, the omni
pipeline shows as a stage x replica grid, and a wrong or absent token gets no data. Against a
simulated fleet of 50 deployments: the list renders within 1 s. Screenshots of the list, the
vLLM P/D deployment and the omni pipeline go to build/ui-screenshots/.
"""

import json
import os
import pathlib
import sys
import urllib.error
import urllib.request

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from deadlines import wait_until  # noqa: E402
from loopback_process import Process  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("MODELMETRICS_BIN", str(ROOT / "build/src/cli/modelmetrics"))
SHOTS = pathlib.Path(os.environ.get("MODELMETRICS_SCREENSHOTS", ROOT / "build/ui-screenshots"))
INTERVAL_S = 5  # the demo page's polling interval (ui_server.h's default)
# A check in the browser is a round trip through chromedriver into the page's main thread, which
# the render timings below share: those waits check 5 times a second, not at deadlines.POLL.
PAGE_POLL = 0.2
# A page's first view (navigation, its script, its first API fetch): Chromium's renderer is the
# process here that a loaded 2-core machine slows most, so it gets 1.5x EVENTUALLY.
PAGE_LOAD = 15


def split_url(url):
    base, token = url.split("/#token=")
    return base, token


def api(base, path, token):
    request = urllib.request.Request(base + path)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def demo():
    process = Process([BIN, "demo", "--duration", "240s", "--interval", "5s", "-o", "json"])
    url = process.match(r"web page: (http://127\.0\.0\.1:\d+/#token=[0-9a-f]+)").group(1)
    base, token = split_url(url)
    # Two reads of every deployment, so the page has windows to show: a first read of all three,
    # then a newer one of each.
    def read_times():
        items = api(base, "/api/v1/deployments", token)["items"]
        times = {item["name"]: item.get("timestamp") for item in items}
        return times if len(times) == 3 and all(times.values()) else None
    # 30 s: the demo starts every simulator and the servers in front of them before its first
    # round of reads.
    first = wait_until(read_times, 30, what="three reads")
    # One read every interval: three leave two for a round that load delays.
    wait_until(lambda: (now := read_times()) and all(now[n] != first[n] for n in first),
               3 * INTERVAL_S, what="a second read of every deployment")
    yield {"url": url, "base": base, "token": token}
    process.stop()


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,1600"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(20)
    yield driver
    driver.quit()


def console_errors(driver):
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def screenshot(driver, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    # The whole page: as tall as its content.
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(height, 900), 6000))
    driver.save_screenshot(str(SHOTS / name))
    driver.set_window_size(1400, 1600)


def open_deployment(driver, demo, name):
    driver.get(f"{demo['base']}/#/d/demo/{name}")
    wait_until(lambda: driver.find_elements(By.ID, "summary"), PAGE_LOAD, poll=PAGE_POLL,
               what=f"{name}'s page")


def page_values(driver):
    """data-key -> the exact value of every measured number on the page, and the read's time."""
    return driver.execute_script("""
        const out = {};
        for (const td of document.querySelectorAll('td.num[data-key]')) out[td.dataset.key] = td.dataset.value;
        const summary = document.getElementById('summary');
        return {timestamp: summary ? summary.dataset.timestamp : null, values: out};""")


def api_values(snapshot):
    values = {}
    for kind in ("processing", "queueing"):
        for g in snapshot.get(kind, []):
            values[f"{kind}|{g['name']}|{g['scope']}"] = g["value"]
    for h in snapshot.get("cacheHits", []):
        values[f"cache|{h['pod']}|{h['scope']}"] = h["rate"]
    for u in snapshot.get("utilization", []):
        values[f"utilization|{u['name']}|{u['scope']}|mean"] = u["mean"]
        values[f"utilization|{u['name']}|{u['scope']}|max"] = u["max"]
    for area in ("latency", "traffic", "transfer"):
        for w in snapshot.get(area, []):
            values[f"{w['pod']}|{w['name']}|{w['scope']}"] = w["value"]
    return values


def test_the_list_shows_every_demo_deployment_with_no_console_error(browser, demo):
    browser.get(demo["url"])
    rows = wait_until(lambda: (lambda r: r if len(r) == 3 else None)(
        browser.find_elements(By.CSS_SELECTOR, "#deployments tbody tr")), PAGE_LOAD,
        poll=PAGE_POLL, what="three rows")
    names = [row.get_attribute("data-deployment") for row in rows]
    assert names == ["demo/assistant", "demo/chat", "demo/voice"]
    # The token left the address bar.
    assert "token" not in browser.current_url
    assert browser.find_element(By.ID, "freshness").get_attribute("data-state") == "live"
    screenshot(browser, "deployments.png")
    assert console_errors(browser) == []


@pytest.mark.parametrize("name", ["chat", "assistant", "voice"])
def test_the_numbers_on_the_page_equal_the_json_api_for_the_same_read(browser, demo, name):
    open_deployment(browser, demo, name)

    def same_read():
        page = page_values(browser)
        detail = api(demo["base"], f"/api/v1/deployments/demo/{name}", demo["token"])
        return (page, detail) if detail["snapshot"]["timestamp"] == page["timestamp"] else None

    # The page can be one poll behind or ahead of a fetch; it shows every read within two
    # polling intervals (the next test).
    page, detail = wait_until(same_read, 2 * INTERVAL_S, poll=PAGE_POLL,
                              what="the page and the API to show the same read")
    expected = api_values(detail["snapshot"])
    assert expected, "the read has numbers"
    if name != "voice":  # the vLLM and SGLang engines' KV-cache use, per role
        assert any(key.startswith("utilization|kv-cache-usage|engine/") for key in expected)
    assert set(page["values"]) == set(expected)
    for key, value in expected.items():
        assert float(page["values"][key]) == value, key
    assert console_errors(browser) == []


def test_the_page_updates_within_two_polling_intervals(browser, demo):
    open_deployment(browser, demo, "chat")
    first = page_values(browser)["timestamp"]
    # The bound checked. The page reads the server when it opens and every interval after, and
    # the server reads the Pods every interval: one interval for the next read to reach the page,
    # one for a read or a poll that load delays.
    wait_until(lambda: page_values(browser)["timestamp"] not in (None, first),
               2 * INTERVAL_S, poll=PAGE_POLL, what="a newer read on the page")
    screenshot(browser, "vllm-prefill-decode.png")
    assert console_errors(browser) == []


def test_missing_entries_render_as_missing_and_the_pipeline_as_a_grid(browser, demo):
    open_deployment(browser, demo, "voice")
    detail = api(demo["base"], "/api/v1/deployments/demo/voice", demo["token"])
    missing = detail["snapshot"].get("missing", [])
    # A speech pipeline never exports the image families: always listed, never a number.
    assert any(m["source"] == "vllm_omni:image_ttfp_s" for m in missing), missing
    rows = browser.find_elements(By.CSS_SELECTOR, "#missing tr.missing")
    sources = {row.get_attribute("data-source") for row in rows}
    assert "vllm_omni:image_ttfp_s" in sources
    for row in rows:
        assert row.find_element(By.CSS_SELECTOR, ".badge.missing").text == "missing"
        assert not row.find_elements(By.CSS_SELECTOR, "td.num")
    # The stage x replica grid: code2wav (stage 2) has two replicas with audio numbers, and the
    # four physical transfer edges of the speech pipeline are listed.
    for cell in ("2.0", "2.1"):
        text = browser.find_element(By.CSS_SELECTOR, f'#pipeline-grid [data-cell="{cell}"]').text
        assert "audio-ttfp" in text, text
    edges = {row.get_attribute("data-edge")
             for row in browser.find_elements(By.CSS_SELECTOR, "#pipeline tr[data-edge]")}
    assert {"0.0->1.0", "0.1->1.0", "1.0->2.0", "1.0->2.1"} <= edges
    # Live charts of the last minutes.
    assert len(browser.find_elements(By.CSS_SELECTOR, "#history .chart canvas")) >= 5
    screenshot(browser, "omni-pipeline.png")
    assert console_errors(browser) == []


def test_a_wrong_or_absent_token_gets_no_data(browser, demo):
    for path in ("/api/v1/deployments", "/api/v1/deployments/demo/chat"):
        with pytest.raises(urllib.error.HTTPError) as absent:
            api(demo["base"], path, None)
        assert absent.value.code == 401
        with pytest.raises(urllib.error.HTTPError) as wrong:
            api(demo["base"], path, "0" * 32)
        assert wrong.value.code == 403
        assert b"demo" not in wrong.value.read()
    # The page with a wrong token (a fresh load, then as a new fragment of a loaded page), then
    # with none at all.
    browser.get("about:blank")
    browser.get(f"{demo['base']}/#token={'0' * 32}")
    wait_until(lambda: browser.find_elements(By.ID, "unauthorized"), poll=PAGE_POLL,
               what="the refusal")
    assert not browser.find_elements(By.ID, "deployments")
    browser.get(f"{demo['base']}/#token={demo['token']}")
    wait_until(lambda: browser.find_elements(By.ID, "deployments"), poll=PAGE_POLL,
               what="the list")
    browser.get(f"{demo['base']}/#token={'1' * 32}")
    wait_until(lambda: browser.find_elements(By.ID, "unauthorized"), poll=PAGE_POLL,
               what="the refusal")
    assert not browser.find_elements(By.ID, "deployments")
    browser.execute_script("sessionStorage.clear()")
    browser.get(f"{demo['base']}/")
    wait_until(lambda: browser.find_elements(By.ID, "unauthorized"), poll=PAGE_POLL,
               what="the refusal")
    assert not browser.find_elements(By.ID, "deployments")
    assert "chat" not in browser.find_element(By.TAG_NAME, "main").text
    # The 401/403 answers themselves are logged by Chromium as failed loads; nothing else is.
    assert all("401" in e["message"] or "403" in e["message"] for e in console_errors(browser))


def test_fifty_deployments_render_within_a_second(browser, tmp_path):
    objects = tmp_path / "fleet.json"
    fleet = Process([BIN, "simulate", "fleet", "--deployments", "50", "--pods", "2",
                     "--duration", "120s", "--objects-out", str(objects)])
    try:
        # 20 s: the fleet starts 100 Pods' servers before it writes its objects.
        wait_until(lambda: objects.exists(), 20, what="the fleet's objects")
        page = Process([BIN, "ui", "--objects", str(objects), "-n", "fleet", "--interval", "2s",
                        "--duration", "100s"])
        try:
            url = page.match(r"open (http://127\.0\.0\.1:\d+/#token=[0-9a-f]+)").group(1)
            base, token = split_url(url)
            # 30 s: a first round of reads of 100 Pods, after the page's start.
            wait_until(lambda: (lambda items: len(items) == 50 and
                                all(i.get("timestamp") for i in items))(
                api(base, "/api/v1/deployments", token)["items"]), 30, what="50 reads")
            browser.get("about:blank")  # a fresh load, so its clock starts at this navigation
            browser.get(url)
            wait_until(lambda: len(browser.find_elements(
                By.CSS_SELECTOR, "#deployments tbody tr")) == 50, poll=PAGE_POLL, what="50 rows")
            rendered_ms = float(browser.find_element(By.ID, "main").get_attribute(
                "data-rendered-ms"))
            assert rendered_ms <= 1000, f"50 deployments rendered after {rendered_ms:.0f} ms"
            print(f"50 deployments rendered {rendered_ms:.0f} ms after navigation")
            assert console_errors(browser) == []
        finally:
            page.stop()
    finally:
        fleet.stop()


# ---- hostile Pods and addresses: one deployment's bytes never take the page down ----

SHARED = pathlib.Path(os.environ.get("MODELMETRICS_SHARED_DIR", ROOT.parent / "shared"))
BAD_BYTE = b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\xe9\n"
HUGE_REPLICA = (b'# TYPE vllm_omni:num_requests_running gauge\n'
                b'vllm_omni:num_requests_running{model_name="m"} 1\n'
                b'# TYPE vllm:num_requests_running gauge\n'
                b'vllm:num_requests_running{model_name="m",replica="0",stage="0"} 1\n'
                b'vllm:num_requests_running{model_name="m",replica="99999999",stage="0"} 2\n')
ODD_NAME = "chat über+1 %x"  # every character here needs percent-encoding in an address


def serve_body(body):
    """A loopback Pod answering /metrics with `body`; returns (server, port)."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    import threading
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def objects_for(deployments):
    """A kubectl-style List: per (name, engine, port), a ModelDeployment and its one Pod."""
    items = []
    for i, (name, engine, port) in enumerate(deployments):
        uid = f"00000000-0000-0000-0000-{i:012d}"
        items.append({"apiVersion": "worker.gpustack.ai/v1alpha1", "kind": "ModelDeployment",
                      "metadata": {"name": name, "namespace": "team", "uid": uid},
                      "spec": {"model": {"name": "m"}, "engine": {"name": engine},
                               "roles": [{"name": "server", "kind": "server", "replicas": 1,
                                          "size": 1}]}})
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"pod-{i}", "namespace": "team", "uid": f"pod-{uid}",
                                   "labels": {"app.kubernetes.io/component": "server",
                                              "app.kubernetes.io/instance": name,
                                              "app.kubernetes.io/name": "model-deployment"},
                                   "annotations": {"prometheus.io/path": "/metrics",
                                                   "prometheus.io/port": str(port),
                                                   "prometheus.io/scrape": "true"},
                                   "ownerReferences": [{
                                       "apiVersion": "worker.gpustack.ai/v1alpha1",
                                       "kind": "ModelDeployment", "name": name, "uid": uid,
                                       "controller": True}]},
                      "spec": {"containers": [{"name": "engine", "ports": [
                          {"name": "http", "containerPort": port, "protocol": "TCP"}]}]},
                      "status": {"podIP": "127.0.0.1", "phase": "Running"}})
    return {"apiVersion": "v1", "kind": "List", "items": items}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    good_body = (SHARED / "fixtures" / "deployment" / "vllm_server_busy_first.prom").read_bytes()
    servers = [serve_body(body) for body in (good_body, BAD_BYTE, HUGE_REPLICA, good_body)]
    path = tmp_path_factory.mktemp("hostile") / "objects.json"
    path.write_text(json.dumps(objects_for([
        ("good", "vLLM", servers[0][1]), ("bad", "vLLM", servers[1][1]),
        ("voice", "vLLM-Omni", servers[2][1]), (ODD_NAME, "vLLM", servers[3][1])])))
    page = Process([BIN, "ui", "--objects", str(path), "-n", "team", "--interval", "1s",
                    "--duration", "120s"])
    url = page.match(r"open (http://127\.0\.0\.1:\d+/#token=[0-9a-f]+)").group(1)
    base, token = split_url(url)
    # 20 s: the page's start, then its first round of reads.
    wait_until(lambda: {i["name"]: i for i in api(base, "/api/v1/deployments", token)["items"]}
               .get("bad", {}).get("status", {}).get("error"), 20, what="the bad Pod's read")
    yield {"url": url, "base": base, "token": token}
    page.stop()
    for server, _ in servers:
        server.shutdown()


def test_a_bad_byte_from_one_pod_leaves_every_deployment_on_the_page(browser, hostile):
    items = {i["name"]: i for i in api(hostile["base"], "/api/v1/deployments",
                                       hostile["token"])["items"]}
    assert set(items) == {"good", "bad", "voice", ODD_NAME}
    assert "\ufffd" in items["bad"]["status"]["error"], items["bad"]
    wait_until(lambda: api(hostile["base"], "/api/v1/deployments/team/good",
                           hostile["token"])["snapshot"], what="the good deployment's read")
    browser.get("about:blank")
    browser.get(hostile["url"])
    rows = wait_until(lambda: (lambda r: r if len(r) == 4 else None)(
        browser.find_elements(By.CSS_SELECTOR, "#deployments tbody tr")), PAGE_LOAD,
        poll=PAGE_POLL, what="four rows")
    assert {row.get_attribute("data-deployment") for row in rows} == {
        "team/good", "team/bad", "team/voice", f"team/{ODD_NAME}"}
    browser.get(f"{hostile['base']}/#/d/team/bad")
    banner = wait_until(lambda: browser.find_elements(By.ID, "stale"), PAGE_LOAD,
                        poll=PAGE_POLL, what="the bad one's page")
    assert "\ufffd" in banner[0].text, banner[0].text
    assert console_errors(browser) == []


def test_a_pod_labelled_replica_99999999_draws_only_its_replicas(browser, hostile):
    browser.get("about:blank")
    browser.get(f"{hostile['base']}/#/d/team/voice")
    grid = wait_until(lambda: browser.find_elements(By.ID, "pipeline-grid"), poll=PAGE_POLL,
                      what="the grid")
    cells = grid[0].find_elements(By.CSS_SELECTOR, "[data-cell]")
    names = {c.get_attribute("data-cell") for c in cells}
    assert {"0.0", "0.99999999"} <= names and len(names) < 10, names
    rendered_ms = float(browser.find_element(By.ID, "main").get_attribute("data-rendered-ms"))
    print(f"the 100-million-replica Pod's page rendered {rendered_ms:.0f} ms after navigation")
    assert rendered_ms <= 1000
    assert console_errors(browser) == []


def test_a_name_that_needs_percent_encoding_opens_from_the_list(browser, hostile):
    browser.get("about:blank")
    browser.get(hostile["url"])
    link = wait_until(lambda: browser.find_elements(
        By.CSS_SELECTOR, f'#deployments tr[data-deployment="team/{ODD_NAME}"] a'), PAGE_LOAD,
        poll=PAGE_POLL, what="its link")
    link[0].click()
    wait_until(lambda: browser.find_elements(By.ID, "summary"), PAGE_LOAD, poll=PAGE_POLL,
               what="its page")
    assert browser.find_element(By.ID, "crumb").text == f"team/{ODD_NAME}"
    assert console_errors(browser) == []


def test_a_malformed_address_shows_an_error_not_an_exception(browser, hostile):
    browser.get("about:blank")
    browser.get(f"{hostile['base']}/#/d/%E0%A4%A/x")
    error = wait_until(lambda: browser.find_elements(By.ID, "route-error"), poll=PAGE_POLL,
                       what="the error")
    assert "not a deployment's address" in error[0].text
    assert console_errors(browser) == []
