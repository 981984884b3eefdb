#!/usr/bin/env bash
# Every test: set-up, unit and integration tests (ctest), a benchmark smoke run, the alert rules and
# dashboards on a real Prometheus, the Kubernetes manifests against their schemas, the container
# image (buildah) and its smoke test, kubectl through a kube-apiserver stand-in in front of
# `modelmetrics serve`, the web page in headless Chromium, the Python package's tests
# (installed in build/venv, and the extension again under ASan+UBSan), the same under ASan+UBSan,
# the threaded ones under TSan, the fuzzers for a bounded time, the format check and the
# function-length check (scripts/check-function-length.py). Exits
# non-zero on the first failure, and prints every stage's wall time against its budget at the end.
#
# The sanitizer trees (the ASan one holds the fuzzers) build in the background at the lowest CPU
# priority (nice 19) while the stages that mostly wait on servers and browsers run in the
# foreground; the compiler cache (ccache, see CMakeLists.txt) makes every tree cheap to rebuild.
#   FUZZ_SECONDS=45 (default)   how long the parser fuzzer runs (the other three: half each)
#   JOBS=2 (default)            parallel compile and test jobs
#   --quick MODULE              only that module's suites and its Python tests (scripts/quick.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--quick" ]; then exec bash scripts/quick.sh "${2:-}"; fi
root=$(pwd)
jobs=${JOBS:-2}
fuzz_seconds=${FUZZ_SECONDS:-45}
shared="${MODELMETRICS_SHARED_DIR:-$root/../shared}"
source scripts/stage_times.sh
work=$(mktemp -d)  # scratch for every stage (the pytest folders too), removed at exit
background=""
on_exit() {
  local rc=$?
  [ -z "$background" ] || kill -- -"$background" 2>/dev/null || true
  rm -rf "$work"
  stage_report "$rc" 1500
}
trap on_exit EXIT

# ---- builds ------------------------------------------------------------------------------------
stage "setup and build (main tree, Python package)" 460
bash scripts/setup.sh

# The sanitizer trees, one after the other; each writes its name to $work/built when it is ready,
# so the stage that needs it waits for it and no longer.
#   ASan+UBSan  clang (half gcc's compile time at -O0), -O0 with line tables: every ctest suite,
#               the CLI, the Python extension and the four libFuzzer targets (the libraries they
#               fuzz, format, kube and aggregation, at -O1 with coverage instrumentation; the API
#               server, which no fuzzer reaches, at -O0)
#   TSan        the threaded suites and the CLI they start (scripts/tsan_tree.sh)
source scripts/tsan_tree.sh
fuzz_targets=(parser_fuzz_test snapshot_fuzz_test objects_fuzz_test yaml_fuzz_test)
build_sanitizer_trees() {
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DMODELMETRICS_SANITIZE=address,undefined -DMODELMETRICS_FUZZ=ON -DMODELMETRICS_BENCH=OFF \
    -DMODELMETRICS_PYTHON=ON
  ninja -C build-asan -j "$jobs"
  echo asan >>"$work/built"
  build_tsan_tree "$jobs"
  echo tsan >>"$work/built"
}
touch "$work/built"
set -m # the background builds get their own process group, so a failure stops all of them
(nice -n 19 bash -c "$(declare -f build_sanitizer_trees build_tsan_tree)
  $(declare -p tsan_suites jobs work)
  set -euo pipefail; build_sanitizer_trees" >"$root/build/sanitizer-builds.log" 2>&1 ||
  echo failed >>"$work/built") &
background=$!
set +m
# await_tree NAME: waits until the background has built tree NAME; fails if its build failed.
await_tree() {
  until grep -qx "$1" "$work/built"; do
    if grep -qx failed "$work/built"; then
      echo "the background build failed; its log (build/sanitizer-builds.log) ends:"
      tail -n 40 "$root/build/sanitizer-builds.log"
      return 1
    fi
    sleep 1
  done
}

# ---- the main tree -----------------------------------------------------------------------------
stage "format check (clang-format) and function length (<= 100 lines in src/ and python/)" 15
git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror
python3 scripts/check-function-length.py --limit 100

stage "unit and integration tests (ctest)" 150
# One job more than cores: most cases wait on loopback servers and timeouts, not on the CPU
# (measured: 135 s at -j2, 107 s at -j3). The load tests run alone (SERIAL in their suite).
(cd build && ctest --output-on-failure -j "$((jobs + 1))")

stage "benchmark smoke run" 60
./build/bench/parser_speed_test --benchmark_min_time=0.05 \
  --benchmark_filter='generated|tinyllama'
./build/bench/instruments_speed_test --benchmark_min_time=0.05
./build/bench/snapshot_speed_test --rounds 10
./build/bench/api_load_bench --clients 50 --seconds 3
./build/bench/hpa_load_bench --seconds 10 --sync 5 --deployments 4 --pods 4 --pods-metrics 2 \
  --callers 3
build/venv/bin/python bench/python/observe_bench.py --repeat 3 --number 2000
build/venv/bin/python bench/python/client_bench.py --repeat 1
build/venv/bin/python bench/python/multiprocess_bench.py --repeat 1 --number 2000
build/venv/bin/python bench/python/install_modes_bench.py --repeat 1 --number 2000

stage "real Prometheus scrapes the pipeline simulator" 40
bash scripts/prometheus_pipeline_check.sh

stage "fleet on Prometheus agents: 512 Pods, 32 deployments, VictoriaMetrics, serve" 60
timeout 300 bash scripts/fleet.sh

stage "deploy/: promtool on the alert rules, dashboards on a real Prometheus, the Kubernetes manifests; scripts/" 90
(cd "$(mktemp -d -p "$work")" && MODELMETRICS_BIN="$root/build/src/cli/modelmetrics" timeout 300 \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider "$root/tests/deploy" "$root/tests/scripts")

stage "aggregated and custom metrics APIs behind a kube-apiserver stand-in: availability, kubectl, delegated auth, the HPA stand-in" 90
(cd "$(mktemp -d -p "$work")" && MODELMETRICS_BIN="$root/build/src/cli/modelmetrics" timeout 300 \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider "$root/tests/apiserver")

stage "image: buildah (vfs, chroot) builds build/modelmetrics-image.tar and smoke-tests it" 60
timeout 300 bash scripts/build-image.sh

stage "the web page in headless Chromium (screenshots in build/ui-screenshots)" 120
(cd "$(mktemp -d -p "$work")" && MODELMETRICS_BIN="$root/build/src/cli/modelmetrics" \
  MODELMETRICS_SCREENSHOTS="$root/build/ui-screenshots" timeout 300 /usr/bin/python3 -m pytest \
  -q -p no:cacheprovider "$root/tests/ui")

stage "Python package (build/venv; tests run from outside the repository)" 120
(cd / && "$root/build/venv/bin/python" -c "import modelmetrics.vllm_omni.metrics.prometheus")
(cd "$(mktemp -d -p "$work")" && MODELMETRICS_SHARED_DIR="$shared" "$root/build/venv/bin/python" -m pytest \
  -q -p no:cacheprovider "$root/tests/python")

# ---- sanitizers and fuzzing --------------------------------------------------------------------
stage "ASan + UBSan: waiting for the background build" 210
await_tree asan

stage "ASan + UBSan (ctest)" 240
# The real stores' tests are left out: their waits are the stores', and the source code they
# drive runs here in aggregation_tests' in-process agreement cases. The 200-client load case is
# a throughput check (a Debug ASan server handshakes TLS ~10x slower than the real one); the
# other load cases, the same server code under fewer clients, run here.
# One job more than cores: most cases wait on loopback servers and timeouts, not on the CPU.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j "$((jobs + 1))" -E 'RealStore|StatelessReplicas|TwoHundredKeepAlive')

stage "the Python extension under ASan + UBSan (its C API code: references, buffers)" 90
# Python itself is not built with ASan: the runtime is preloaded, leak checking (which would
# report the interpreter's own allocations) is off; the real-Prometheus example is left out (the
# multiprocess tests' uvicorn app is scraped by a real Prometheus here too). Not beside the ctest
# stage: measured, the two together took longer than one after the other.
(cd "$(mktemp -d -p "$work")" && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LD_PRELOAD="$(clang++ -print-file-name=libclang_rt.asan-x86_64.so)" \
  PYTHONPATH="$root/build-asan/python" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  -k "not fastapi" "$root/tests/python")

stage "TSan: waiting for the background build" 180
await_tree tsan

stage "TSan (threaded code: net, metrics, pipeline, deployment, simulators, API server)" 180
# Two suites at a time (one per core); a failing suite prints its log and stops the stage.
printf '%s\n' "${tsan_suites[@]}" | work="$work" xargs -P "$jobs" -I{} bash -c \
  "$(declare -f run_tsan_suite)"'
   log="$work/tsan-${1//\//-}.log"
   run_tsan_suite "$1" "$log" || { echo "TSan: $1 failed:"; tail -n 60 "$log"; exit 255; }' _ {}

background=""

stage "fuzz: parser ${fuzz_seconds}s beside 3 x $((fuzz_seconds / 2))s (clang, libFuzzer, ASan+UBSan)" 80
# fuzz TARGET SECONDS SEEDS... [-flag=value...]: new inputs go to a scratch folder; checked-in
# corpora and the shared captures are seeds only. Later flags override the defaults here.
fuzz() {
  local target=$1 seconds=$2
  shift 2
  mkdir -p "$work/$target"
  (cd "$work" && "$root/build-asan/fuzz/$target" -max_total_time="$seconds" -max_len=65536 \
    -timeout=10 -print_final_stats=1 "$work/$target" "$@" >"$work/$target.log" 2>&1)
}
# One fuzzer per core: the parser (every format quirk, seeded from the real captures) on one;
# on the other, a hostile Pod's body through parse, merge and JSON, then objects files and API
# JSON, then YAML (objects files, kubeconfigs, serve configuration, policy) with bounded time and
# memory per input, so a hang or an unbounded expansion fails the run.
fuzz parser_fuzz_test "$fuzz_seconds" "$root/fuzz/corpus/parser" "$shared/fixtures/real/vllm" \
  "$shared/fixtures/real/sglang" "$shared/fixtures/real/llm-d-epp" "$shared/fixtures/deployment" &
parser_fuzz=$!
fuzz_rest=0
{ fuzz snapshot_fuzz_test $((fuzz_seconds / 2)) "$root/fuzz/corpus/snapshot" &&
  fuzz objects_fuzz_test $((fuzz_seconds / 2)) "$root/fuzz/corpus/objects" &&
  fuzz yaml_fuzz_test $((fuzz_seconds / 2)) "$root/fuzz/corpus/yaml" -rss_limit_mb=512 \
    -timeout=5; } || fuzz_rest=1
parser_status=0
wait "$parser_fuzz" || parser_status=1
for target in "${fuzz_targets[@]}"; do
  [ -f "$work/$target.log" ] || continue
  echo "--- $target"
  tail -n 12 "$work/$target.log"
done
((parser_status == 0 && fuzz_rest == 0))

stage_end
echo
echo "=== all tests passed ==="
