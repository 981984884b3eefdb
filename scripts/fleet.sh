#!/usr/bin/env bash
# Deployment metrics at fleet scale, on loopback, with the scraping done by Prometheus:
#
#   modelmetrics simulate fleet   32 deployments x 16 Pods (vLLM, SGLang, some behind an llm-d
#                                 router), one objects file, one file_sd file (namespace/pod labels)
#   2 Prometheus agents           --enable-feature=agent, each keeping its hashmod shard of the
#                                 targets, remote-writing to
#   1 central store               VictoriaMetrics single-node (default) or a Prometheus with the
#                                 remote-write receiver (--central prometheus)
#   modelmetrics serve            source: prometheus, reading the central store
#
# then checks, within bounded time, that the agents split the targets between them, that the
# store holds every Pod, and that every deployment's snapshot from `serve` is complete
# (`partial: false`, no Pod missing), and that the custom metrics API answers from the store;
# prints a summary and stops everything. With --bench it also runs bench/store_snapshot_bench
# against the same set-up (one 64-Pod and one 1,000-Pod deployment are added), then
# bench/hpa_load_bench's 32 HPAs on the custom metrics API of the same `serve` for 2 minutes, at a
# 15 s scrape interval unless --interval says otherwise: at 5 s the agents' 330 scrapes/s and the
# 1,500 simulated Pods fill both cores of a 2-core machine, and the store's query time, not ours,
# is what the wall clock measures. It ends by itself; every process is loopback-only
# and killed on exit.
#
#   usage: bash scripts/fleet.sh [--central victoria-metrics|prometheus] [--deployments N]
#                                [--pods N] [--interval 5s] [--hold DURATION] [--bench]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./build/src/cli/modelmetrics
central=victoria-metrics
deployments=32
pods=16
interval=
hold=0
bench=0
while (($#)); do
  case $1 in
    --central) central=$2; shift 2 ;;
    --deployments) deployments=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --hold) hold=$2; shift 2 ;;
    --bench) bench=1; shift ;;
    *) echo "fleet.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$interval" ] || { ((bench)) && interval=15s || interval=5s; }
[ -x "$bin" ] || { echo "fleet.sh: build first (bash scripts/setup.sh)" >&2; exit 2; }
python=/usr/bin/python3

source scripts/lib.sh
fail() {
  echo "fleet.sh: FAILED: $*" >&2
  for log in "$work"/*.log; do echo "--- $log" >&2; tail -n 5 "$log" >&2; done
  exit 1
}

# 1. The fleet.
extra=()
((bench)) && extra=(--extra-deployment-pods 64 --extra-deployment-pods 1000)
"$bin" simulate fleet --deployments "$deployments" --pods "$pods" "${extra[@]}" -n fleet \
  --rate $((pods * 3)) --objects-out "$work/objects.json" --file-sd-out "$work/targets.json" \
  --duration 1h \
  >"$work/fleet.log" 2>&1 &
pids+=($!)
wait_for 60 test -s "$work/targets.json" || fail "the fleet did not start"
targets=$($python -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$work/targets.json")
echo "fleet: $(head -n 1 "$work/fleet.log")"

# 2. The central store.
central_port=$(free_port)
central_url="http://127.0.0.1:$central_port"
case $central in
  victoria-metrics)
    # Queries see samples 5 s after their scrape (30 s by default): remote write sends a scrape
    # in several batches, and a newer scrape half arrived must not be read (see the docs).
    victoria-metrics -httpListenAddr="127.0.0.1:$central_port" -storageDataPath="$work/central" \
      -search.latencyOffset=5s -loggerLevel=WARN >"$work/central.log" 2>&1 &
    settle=0s
    ready="$central_url/health" ;;
  prometheus)
    printf 'global: {}\n' >"$work/central.yml"
    prometheus --config.file="$work/central.yml" --storage.tsdb.path="$work/central" \
      --web.listen-address="127.0.0.1:$central_port" --web.enable-remote-write-receiver \
      --log.level=warn >"$work/central.log" 2>&1 &
    settle=5s  # the same, on our side: Prometheus shows each remote-write batch at once
    ready="$central_url/-/ready" ;;
  *) fail "--central is victoria-metrics or prometheus" ;;
esac
pids+=($!)
wait_for 30 curl -sf "$ready" || fail "the central store did not start"

# 3. Two agents, each keeping its hashmod shard, remote-writing to the central store.
for shard in 0 1; do
  port=$(free_port)
  cat >"$work/agent-$shard.yml" <<YAML
global:
  scrape_interval: $interval
  scrape_timeout: 4s
  external_labels: {agent: agent-$shard}
scrape_configs:
  - job_name: fleet
    file_sd_configs: [{files: ['$work/targets.json'], refresh_interval: 5s}]
    relabel_configs:
      - {source_labels: [__address__], modulus: 2, target_label: __tmp_shard, action: hashmod}
      - {source_labels: [__tmp_shard], regex: '$shard', action: keep}
remote_write:
  - url: $central_url/api/v1/write
    queue_config: {batch_send_deadline: 1s, max_shards: 4}
YAML
  # At exit the store stops beside the agents: an agent would wait its flush deadline (1 min
  # by default) for samples it can no longer send.
  prometheus --enable-feature=agent --config.file="$work/agent-$shard.yml" \
    --storage.agent.path="$work/agent-$shard" --web.listen-address="127.0.0.1:$port" \
    --storage.remote.flush-deadline=1s --log.level=warn >"$work/agent-$shard.log" 2>&1 &
  pids+=($!)
done

# query PROMQL: the central store's instant-query answer (JSON).
query() { curl -sf "$central_url/api/v1/query" --data-urlencode "query=$1"; }
# scalar PROMQL: the first result's value, or nothing.
scalar() {
  query "$1" | $python -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")'
}
# Every target in the store with at least three scrapes.
stored_three() {
  [ "$(scalar "count(count_over_time(up{namespace=\"fleet\"}[10m]) >= 3)")" = "$targets" ]
}
echo "waiting for the agents to scrape every target three times..."
started=$SECONDS
wait_for 180 stored_three || fail "the central store does not hold 3 scrapes of all $targets targets"

echo "  after $((SECONDS - started)) s"

# 4. Sharding: both agents scraped, and no target twice.
shards=$(query 'count by (agent) (up{namespace="fleet"})' | $python -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
pairs = sorted((x["metric"].get("agent", "?"), x["value"][1]) for x in r)
print(" ".join(f"{agent}={count}" for agent, count in pairs))')
echo "targets per agent: $shards (of $targets)"
$python - "$targets" $shards <<'PY' || fail "the agents did not split the targets: $shards"
import sys
total = int(sys.argv[1])
counts = {k: int(v) for k, v in (a.split("=") for a in sys.argv[2:])}
assert set(counts) == {"agent-0", "agent-1"}, counts
assert sum(counts.values()) == total and min(counts.values()) > 0, counts
PY

# 5. modelmetrics serve on the central store.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/server-key.pem" -out "$work/server.pem" \
  2>/dev/null
echo "fleet-token,fleet-reader,uid-fleet" >"$work/tokens.csv"
cat >"$work/policy.yaml" <<'YAML'
rules:
  - {users: [fleet-reader], namespaces: [fleet], verbs: [get], resources: ["modeldeployments/metrics"]}
  - {users: [fleet-reader], namespaces: [fleet], verbs: [get], apiGroups: [custom.metrics.k8s.io], resources: ["*"]}
YAML
serve_port=$(free_port)
cat >"$work/serve.yaml" <<YAML
port: $serve_port
tls_cert_file: $work/server.pem
tls_key_file: $work/server-key.pem
token_file: $work/tokens.csv
policy_file: $work/policy.yaml
objects_file: $work/objects.json
max_objects_bytes: 67108864
custom_metrics_api: true
source: prometheus
prometheus:
  url: $central_url
  settle: $settle
YAML
"$bin" serve --config "$work/serve.yaml" >"$work/serve.log" 2>&1 &
serve_pid=$!
pids+=($serve_pid)
api="https://127.0.0.1:$serve_port/apis/worker.gpustack.ai/v1/namespaces/fleet/modeldeployments"
get() { curl -sf --cacert "$work/server.pem" -H "Authorization: Bearer fleet-token" "$api/$1/metrics"; }
wait_for 30 curl -sf --cacert "$work/server.pem" "https://127.0.0.1:$serve_port/healthz" ||
  wait_for 10 get model-00 || fail "serve did not start"

# 6. Every deployment's snapshot from the store is complete.
names=$($python -c '
import json, sys
print(" ".join(i["metadata"]["name"] for i in json.load(open(sys.argv[1]))["items"]
               if i["kind"] == "ModelDeployment"))' "$work/objects.json")
incomplete=0
for name in $names; do
  get "$name" >"$work/snapshot-$name.json" || { echo "  $name: no answer"; incomplete=1; continue; }
  $python - "$work/snapshot-$name.json" <<'PY' || incomplete=1
import json, sys
s = json.load(open(sys.argv[1]))
name = s["metadata"]["name"]
scrape = [m for m in s.get("missing", []) if m["source"] == "scrape"]
windows = len(s.get("latency", [])) + len(s.get("traffic", []))
pods = sum(g["podCount"] for g in s.get("processing", []) if g["name"] in ("running", "router-running"))
line = f"  {name}: partial={str(s['partial']).lower()} pods={pods} windows={windows} missing={len(s.get('missing', []))}"
print(line)
if s["partial"] or scrape or windows == 0:
    for m in s.get("missing", []):
        print("    ", m)
    sys.exit(1)
PY
done
((incomplete == 0)) || fail "some deployments' snapshots are incomplete"
echo "every deployment's snapshot from the central store ($central) is complete"

# 7. The custom metrics API on the same reads: an object and a pods metric, numbers not errors.
cm="https://127.0.0.1:$serve_port/apis/custom.metrics.k8s.io/v1beta2/namespaces/fleet"
cm_get() { curl -sf --cacert "$work/server.pem" -H "Authorization: Bearer fleet-token" "$cm/$1"; }
cm_get modeldeployments.worker.gpustack.ai/model-00/waiting >"$work/cm-object.json" &&
  cm_get "pods/%2A/running?labelSelector=app.kubernetes.io%2Finstance%3Dmodel-00" \
    >"$work/cm-pods.json" || fail "the custom metrics API did not answer from the store"
$python - "$work/cm-object.json" "$work/cm-pods.json" "$pods" <<'PY' ||
import json, sys
obj, pods = (json.load(open(p)) for p in sys.argv[1:3])
assert obj["kind"] == "MetricValueList" and len(obj["items"]) == 1, obj
assert obj["items"][0]["describedObject"]["name"] == "model-00", obj
assert len(pods["items"]) == int(sys.argv[3]), (len(pods["items"]), sys.argv[3])
print(f"  custom metrics from the store: model-00 waiting={obj['items'][0]['value']}, "
      f"{len(pods['items'])} Pods' running")
PY
  fail "the custom metrics API's answers from the store are not what the docs say"

if ((bench)); then
  echo "benchmark (each scenario in its own process; numbers are modelmetrics' alone):"
  for scenario in store-64 direct-64 store-fleet store-1000; do
    ./build/bench/store_snapshot_bench --prometheus-url "$central_url" \
      --objects "$work/objects.json" --namespace fleet --scenario "$scenario" --rounds 20 ||
      fail "the benchmark's $scenario scenario failed"
  done
  echo "HPAs on the custom metrics API, from the store:"
  ./build/bench/hpa_load_bench --api "https://127.0.0.1:$serve_port" --token fleet-token \
    --ca "$work/server.pem" --objects "$work/objects.json" --deployments "$deployments" \
    --serve-pid "$serve_pid" ||
    fail "the HPA load benchmark failed"
fi
if [ "$hold" != 0 ]; then
  echo "holding for $hold: central store $central_url, API $api"
  sleep "$hold"
fi
echo "fleet.sh: OK"
