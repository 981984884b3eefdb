"""scripts/upstream-series.py on small checkouts written the way the exporters define families."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "upstream-series.py")
BINARY = os.environ.get("MODELMETRICS_BIN", os.path.join(ROOT, "build", "src", "cli", "modelmetrics"))

# As llm-d-router's pkg/epp/metrics defines them: a subsystem constant aliased across packages,
# label slices built with append, legacy twins beside.
COMMON_GO = '''package metrics

const LLMDRouterEndpointPickerSubsystem = "llm_d_epp"
'''
ROUTER_GO = '''package metrics

import metricsutil "example.com/common/metrics"

const Subsystem = metricsutil.LLMDRouterEndpointPickerSubsystem

var (
	modelLabels = []string{"model_name", "target_model_name"}
	withTenant  = append(append([]string{}, modelLabels...), "fairness_id", "priority")

	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: Subsystem, Name: "request_total", Help: "requests",
	}, withTenant)
	errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: Subsystem, Name: "request_error_total",
	}, append(withTenant, "error_code"))
	running = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: Subsystem, Name: "request_running",
	}, withTenant)
	ready = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: Subsystem, Name: "ready_endpoints",
	}, []string{"name"})
	ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: Subsystem, Name: "request_ttft_seconds",
	}, append(withTenant, "streaming"))
	legacyRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "inference_objective", Name: "request_total",
	}, modelLabels)
	info = prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: Subsystem, Name: "info"})
)
'''
TPOT_GO = '''package metrics

var tpot = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Subsystem: Subsystem, Name: "request_streaming_tpot_seconds",
}, withTenant)
'''
# As SGLang's metrics_collector.py defines them.
SGLANG_PY = '''
from prometheus_client import Counter, Gauge, Histogram

class SchedulerMetricsCollector:
    def __init__(self, labels):
        self.num_running_reqs = Gauge(
            name="sglang:num_running_reqs",
            documentation="The number of running requests.",
            labelnames=labels.keys(),
            multiprocess_mode="mostrecent",
        )
        self.ttft = Histogram(
            name="sglang:time_to_first_token_seconds",
            documentation="TTFT",
            labelnames=["model_name", "is_streaming"],
        )
        self.tokens = Counter("sglang:prefill_effective_tokens_total", "tokens", ["mode"])
'''


# As smg's model_gateway/src/observability/metrics.rs records them (the metrics crate).
SMG_RS = '''
pub fn init() {
    describe_counter!("smg_router_requests_total", "Requests routed");
    describe_gauge!("smg_worker_pool_size", "Workers in the pool");
}
pub fn record_router_request(model: &str, streaming: &'static str) {
    counter!(
        "smg_router_requests_total",
        "model" => model.to_string(),
        "streaming" => streaming
    )
    .increment(1);
}
pub fn set_pool(n: f64) {
    gauge!("smg_worker_pool_size", "worker_type" => "regular").set(n);
}
'''


def write(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


def run(checkout, *args):
    return subprocess.run([sys.executable, SCRIPT, str(checkout), "--modelmetrics", BINARY, *args],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def router_tree(tmp_path):
    write(tmp_path, {"pkg/common/metrics/metrics.go": COMMON_GO,
                     "pkg/epp/metrics/metrics.go": ROUTER_GO,
                     "pkg/epp/metrics/tpot.go": TPOT_GO})
    return tmp_path


def row_line(out, family):
    return next(line for line in out.splitlines() if line.split()[3:4] == [family]
                or family in line.split())


def test_every_row_of_the_profile_is_found_with_its_labels(router_tree):
    result = run(router_tree, "--exporter", "llm-d-router")
    assert result.returncode == 0, result.stdout + result.stderr
    ttft = row_line(result.stdout, 'llm_d_epp_request_ttft_seconds{streaming!="false"}')
    assert ttft.startswith("  ok ")
    assert "[model_name,target_model_name,fairness_id,priority,streaming]" in ttft
    errors = row_line(result.stdout, "llm_d_epp_request_error_total")
    assert "[model_name,target_model_name,fairness_id,priority,error_code]" in errors
    assert "pkg/epp/metrics/metrics.go:" in errors
    # An older name the checkout still writes, and one it no longer has.
    assert row_line(result.stdout, "inference_objective_request_total").startswith("  ok ")
    assert row_line(result.stdout, "inference_model_request_total").startswith("  absent ")
    # What no row reads is listed, so a new family is seen.
    unread = result.stdout.split("families no row reads")[1]
    assert "llm_d_epp_info" in unread
    assert "llm_d_epp_request_total" not in unread


def test_a_family_the_checkout_no_longer_defines_fails_the_check(router_tree):
    os.remove(router_tree / "pkg/epp/metrics/tpot.go")
    result = run(router_tree, "--exporter", "llm-d-router")
    assert result.returncode == 1
    assert row_line(result.stdout, "llm_d_epp_request_streaming_tpot_seconds").startswith(
        "  MISSING ")


def test_a_bare_git_directory_is_read_at_its_head(router_tree, tmp_path_factory):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run(git + ["init", "-q", str(router_tree)], check=True)
    subprocess.run(git + ["-C", str(router_tree), "add", "."], check=True)
    subprocess.run(git + ["-C", str(router_tree), "commit", "-qm", "x"], check=True)
    bare = tmp_path_factory.mktemp("bare") / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(router_tree), str(bare)], check=True)
    head = subprocess.run(["git", "-C", str(bare), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    result = run(bare, "--exporter", "llm-d-router")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"checkout at {head}" in result.stdout
    assert row_line(result.stdout, "llm_d_epp_request_total").startswith("  ok ")


def test_python_families_and_the_profiles_they_feed(tmp_path):
    write(tmp_path, {"python/sglang/srt/observability/metrics_collector.py": SGLANG_PY})
    result = run(tmp_path, "--json")
    report = json.loads(result.stdout)
    assert [p["exporter"] for p in report["profiles"]] == ["sglang"]
    rows = {r["family"]: r for r in report["profiles"][0]["rows"]}
    assert rows["sglang:num_running_reqs"]["defined"]
    assert rows["sglang:num_running_reqs"]["select"] == '{priority=""}'
    assert rows["sglang:num_running_reqs"]["labels"] is None  # labels.keys(): run time
    assert rows["sglang:time_to_first_token_seconds"]["labels"] == ["model_name", "is_streaming"]
    assert rows["sglang:prefill_effective_tokens_total"]["labels"] == ["mode"]
    assert not rows["sglang:inter_token_latency_seconds"]["defined"]
    assert result.returncode == 1  # rows the checkout does not define


def test_rust_families_with_their_label_names(tmp_path):
    write(tmp_path, {"model_gateway/src/observability/metrics.rs": SMG_RS})
    result = run(tmp_path, "--exporter", "sglang-gateway", "--json")
    rows = {r["family"]: r for r in json.loads(result.stdout)["profiles"][0]["rows"]}
    assert rows["smg_router_requests_total"]["labels"] == ["model", "streaming"]
    assert rows["smg_worker_pool_size"]["labels"] == ["worker_type"]
    assert not rows["smg_worker_requests_active"]["defined"]
    assert result.returncode == 1
