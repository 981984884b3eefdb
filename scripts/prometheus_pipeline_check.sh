#!/usr/bin/env bash
# End-to-end check with a real Prometheus: Debian's `prometheus` runs on loopback, scrapes the
# pipeline simulator every second, and its HTTP API must answer with data for the pipeline's key
# series within 45 s (it takes a few scrapes); `promtool check metrics` on the simulator's
# exposition must report only the lints that the catalog's names carry by specification (':' in
# every vLLM name, the `_s` unit suffix of the vllm_omni names, upstream's histogram
# `vllm:iteration_tokens_total`).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=./build/src/cli/modelmetrics
source scripts/lib.sh
sim_port=$(free_port)
prom_port=$(free_port)

"$bin" simulate pipeline --listen "127.0.0.1:$sim_port" --duration 60s --log-interval 0 \
  --rate 4 >"$work/sim.log" 2>&1 &
pids+=($!)
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: pipeline
    static_configs:
      - targets: ['127.0.0.1:$sim_port']
YAML
# Another process may still take the port between the check and the bind: try a few.
for attempt in 1 2 3 4 5; do
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
  prom_pid=$!
  wait_for 20 curl -sf "http://127.0.0.1:$prom_port/-/ready" && break
  echo "prometheus did not start on port $prom_port (attempt $attempt):"
  tail -n 2 "$work/prometheus.log"
  kill "$prom_pid" 2>/dev/null || true
  prom_port=$(free_port)
done
pids+=("$prom_pid")

queries=(
  'vllm_omni:e2e_request_latency_s_count'
  'histogram_quantile(0.9, sum by (le) (rate(vllm_omni:audio_rtf_bucket[10s])))'
  'vllm_omni:transfer_tx_s_count'
  'vllm:time_to_first_token_seconds_count{stage="0",replica="1"}'
)
# answered QUERY: Prometheus answers QUERY with at least one series and no NaN.
answered() {
  local answer
  answer=$(curl -sf -G --data-urlencode "query=$1" "http://127.0.0.1:$prom_port/api/v1/query") ||
    return 1
  [[ "$answer" == *'"result":[{'* && "$answer" != *'"NaN"'* ]]
}
# every_query_answered: true once every query has data; a rate needs two scrapes of a histogram
# the simulator has observed, so this takes a few scrapes (1 s apart), not a fixed wait.
every_query_answered() {
  local q
  for q in "${queries[@]}"; do answered "$q" || return 1; done
}
wait_for 45 every_query_answered || true

status=0
for q in "${queries[@]}"; do
  answer=$(curl -sf -G --data-urlencode "query=$q" "http://127.0.0.1:$prom_port/api/v1/query" || true)
  if [[ "$answer" == *'"result":[{'* && "$answer" != *'"NaN"'* ]]; then
    echo "ok: $q -> ${answer:0:160}"
  else
    echo "FAIL: no data for $q: $answer"
    status=1
  fi
done

curl -sf "http://127.0.0.1:$sim_port/metrics" >"$work/metrics.prom"
"$bin" parse --strict "$work/metrics.prom" | tail -n 1
promtool check metrics <"$work/metrics.prom" >"$work/promtool.out" 2>&1 || true
unexpected=$(grep -v -e "metric names should not contain ':'" \
  -e 'metric names should not contain abbreviated units' \
  -e '^vllm:iteration_tokens_total non-counter metrics should not have "_total" suffix$' \
  "$work/promtool.out" || true)
if [ -n "$unexpected" ]; then
  echo "FAIL: promtool reports:"; echo "$unexpected"; status=1
else
  echo "ok: promtool check metrics reports only the specified names' lints"
fi
if [ $status -ne 0 ]; then
  echo "--- simulator log"; tail -n 20 "$work/sim.log"
  echo "--- prometheus log"; tail -n 20 "$work/prometheus.log"
fi
exit $status
