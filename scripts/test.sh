#!/usr/bin/env bash
# Every test: set-up, unit and integration tests (ctest), the alert rules and dashboards on a real
# Prometheus, the web page in headless Chromium, the Python package's tests (installed in
# build/venv, and the extension again under ASan+UBSan), the same under ASan+UBSan, the threaded
# ones under TSan, the parser fuzzer for a bounded time, a benchmark smoke run and the format
# check. Exits non-zero on the first failure.
#   FUZZ_SECONDS=60 (default)   how long the libFuzzer run lasts
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${JOBS:-2}
fuzz_seconds=${FUZZ_SECONDS:-60}
shared="${MODELMETRICS_SHARED_DIR:-$root/../shared}"
step() { printf '\n=== %s ===\n' "$*"; }

step "setup and build"
bash scripts/setup.sh

step "format check (clang-format)"
git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror

step "unit and integration tests"
(cd build && ctest --output-on-failure -j "$jobs")

step "real Prometheus scrapes the pipeline simulator"
bash scripts/prometheus_pipeline_check.sh

step "fleet on Prometheus agents: 512 Pods, 32 deployments, two sharding agents, VictoriaMetrics, serve"
timeout 300 bash scripts/fleet.sh

step "deploy/: promtool on the alert rules; every dashboard query on a real Prometheus scraping the demo"
(cd "$(mktemp -d)" && MODELMETRICS_BIN="$root/build/src/cli/modelmetrics" timeout 300 \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider "$root/tests/deploy")

step "the web page in headless Chromium (screenshots in build/ui-screenshots)"
(cd "$(mktemp -d)" && MODELMETRICS_BIN="$root/build/src/cli/modelmetrics" \
  MODELMETRICS_SCREENSHOTS="$root/build/ui-screenshots" timeout 300 /usr/bin/python3 -m pytest \
  -q -p no:cacheprovider "$root/tests/ui")

step "Python package (installed in build/venv by setup; tests run from outside the repository)"
(cd / && "$root/build/venv/bin/python" -c "import modelmetrics.vllm_omni.metrics.prometheus")
(cd "$(mktemp -d)" && MODELMETRICS_SHARED_DIR="$shared" "$root/build/venv/bin/python" -m pytest \
  -q -p no:cacheprovider "$root/tests/python")

step "ASan + UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMODELMETRICS_SANITIZE=address,undefined \
  -DMODELMETRICS_BENCH=OFF -DMODELMETRICS_PYTHON=OFF >/dev/null
ninja -C build-asan -j "$jobs"
# The real stores' tests are left out: their waits are the stores', and the source code they
# drive runs here in deployment_tests' in-process agreement cases. The 200-client load case is
# a throughput check (a Debug ASan server handshakes TLS ~10x slower than the real one); the
# other load cases, the same server code under fewer clients, run here.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j "$jobs" -E 'RealStore|StatelessReplicas|TwoHundredKeepAlive')

step "the Python extension under ASan + UBSan (its C API code: references, buffers)"
cmake -S . -B build-asan-python -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMODELMETRICS_PYTHON_ONLY=ON \
  -DMODELMETRICS_SANITIZE=address,undefined >/dev/null
ninja -C build-asan-python -j "$jobs" mm_python_package
# Python itself is not built with ASan: the runtime is preloaded, leak checking (which would
# report the interpreter's own allocations) is off; the real-Prometheus example is left out.
(cd "$(mktemp -d)" && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
  PYTHONPATH="$root/build-asan-python/python" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  -k "not fastapi" "$root/tests/python")

step "TSan (threaded code: net, metrics, pipeline, deployment, simulators, API server)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMODELMETRICS_SANITIZE=thread \
  -DMODELMETRICS_BENCH=OFF -DMODELMETRICS_PYTHON=OFF >/dev/null
tsan_suites=(net/net_tests metrics/metrics_tests pipeline/pipeline_tests
  deployment/deployment_tests deployment/deployment_objects_tests deployment/api_server_tests
  deployment/deployment_integration_tests sim/sim_tests ui/ui_tests)
ninja -C build-tsan -j "$jobs" modelmetrics "${tsan_suites[@]##*/}"
for suite in "${tsan_suites[@]}"; do
  TSAN_OPTIONS="halt_on_error=1" "./build-tsan/tests/$suite" --gtest_brief=1
done

step "fuzz for ${fuzz_seconds}s + 3 x $((fuzz_seconds / 2))s (clang, libFuzzer, ASan+UBSan)"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DMODELMETRICS_FUZZ=ON \
  -DMODELMETRICS_SANITIZE=address,undefined -DBUILD_TESTING=OFF -DMODELMETRICS_BENCH=OFF \
  -DMODELMETRICS_PYTHON=OFF >/dev/null
ninja -C build-fuzz -j "$jobs" parser_fuzz_test snapshot_fuzz_test objects_fuzz_test yaml_fuzz_test
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fuzz TARGET SECONDS SEEDS... [-flag=value...]: new inputs go to a scratch folder; checked-in
# corpora and the shared captures are seeds only. Later flags override the defaults here.
fuzz() {
  local target=$1 seconds=$2
  shift 2
  mkdir -p "$work/$target"
  (cd "$work" && "$root/build-fuzz/fuzz/$target" -max_total_time="$seconds" -max_len=65536 \
    -timeout=10 -print_final_stats=1 "$work/$target" "$@" 2>&1 | tail -n 12)
}
# The parser: every format quirk; seeded from the real captures.
fuzz parser_fuzz_test "$fuzz_seconds" "$root/fuzz/corpus/parser" "$shared/fixtures/real/vllm" \
  "$shared/fixtures/real/sglang" "$shared/fixtures/real/llm-d-epp" "$shared/fixtures/deployment"
# A hostile Pod's body through parse, merge and JSON; objects files and API JSON.
fuzz snapshot_fuzz_test $((fuzz_seconds / 2)) "$root/fuzz/corpus/snapshot"
fuzz objects_fuzz_test $((fuzz_seconds / 2)) "$root/fuzz/corpus/objects"
# YAML (objects files, kubeconfigs, serve configuration, policy): bounded time and memory per
# input, so a hang or an unbounded expansion fails the run.
fuzz yaml_fuzz_test $((fuzz_seconds / 2)) "$root/fuzz/corpus/yaml" -rss_limit_mb=512 -timeout=5

step "benchmark smoke run"
./build/bench/parser_speed_test --benchmark_min_time=0.05 \
  --benchmark_filter='generated|tinyllama'
./build/bench/instruments_speed_test --benchmark_min_time=0.05
./build/bench/snapshot_speed_test --rounds 10
./build/bench/api_load_bench --clients 50 --seconds 3
build/venv/bin/python bench/python/observe_bench.py --repeat 3 --number 2000

step "all tests passed"
