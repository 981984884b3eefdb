#!/usr/bin/env bash
# The loop for editing one module: builds only that module's test suites (and what they link) in
# build/, runs them, then the Python tests that exercise the module, and prints the stage times.
# Run as `scripts/test.sh --quick MODULE`; MODULE is a folder of tests/ with C++ suites:
#   base format net metrics pipeline kube aggregation apiserver deployment sim cli ui
# (metrics and pipeline also reinstall the Python package into build/venv and run tests/python;
# apiserver runs the kube-apiserver stand-in tests, ui the page in headless Chromium).
# A first run (no build/ yet) does the full set-up first (scripts/setup.sh), which is not quick.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
module=${1:?usage: scripts/test.sh --quick MODULE}
jobs=${JOBS:-2}
source scripts/stage_times.sh
work=$(mktemp -d)
trap 'rc=$?; rm -rf "$work"; stage_report "$rc" 120' EXIT

if [ ! -f "tests/$module/CMakeLists.txt" ]; then
  echo "no C++ suites in tests/$module; modules: $(cd tests && ls -d */ | tr -d / | xargs)" >&2
  exit 2
fi
# The module's suites, as its CMakeLists.txt names them; SERIAL ones (load tests) run alone.
mapfile -t suites < <(sed -n 's/^mm_test_suite(\([a-z_]*\).*/\1/p' "tests/$module/CMakeLists.txt")
mapfile -t serial < <(sed -n 's/^mm_test_suite(\([a-z_]*\) SERIAL.*/\1/p' "tests/$module/CMakeLists.txt")

stage "build: ${suites[*]}" 60
[ -f build/build.ninja ] || bash scripts/setup.sh
ninja -C build -j "$jobs" "${suites[@]}"

# run_suites SUITE...: the suites at once (most of their cases wait on loopback servers), each
# serially inside; their summaries, or a failing one's log.
run_suites() {
  local pids=() failed=0 i
  for suite in "$@"; do
    (cd "$work" && "$root/build/tests/$module/$suite" --gtest_brief=1 >"$work/$suite.log" 2>&1) &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    local suite=${*:i+1:1}
    if ! wait "${pids[$i]}"; then
      failed=1
      echo "--- $suite failed:"
      tail -n 60 "$work/$suite.log"
    else
      grep -E '^\[  PASSED  \]' "$work/$suite.log" | sed "s/^/$suite: /"
    fi
  done
  return "$failed"
}

stage "run: ${suites[*]}" 90
parallel=()
for suite in "${suites[@]}"; do
  [[ " ${serial[*]} " == *" $suite "* ]] || parallel+=("$suite")
done
((${#parallel[@]} == 0)) || run_suites "${parallel[@]}"
for suite in "${serial[@]}"; do run_suites "$suite"; done

pytest() {
  (cd "$work" && MODELMETRICS_BIN="$root/build/src/cli/modelmetrics" \
    MODELMETRICS_SHARED_DIR="${MODELMETRICS_SHARED_DIR:-$root/../shared}" \
    timeout 300 "$@" -m pytest -q -p no:cacheprovider -x "${targets[@]}")
}
case $module in
  metrics | pipeline)
    stage "Python: the package reinstalled into build/venv, tests/python" 60
    ninja -C build -j "$jobs" mm_observe_toy  # the toy row's module (test_observe_table.py)
    MODELMETRICS_BUILD_JOBS=$jobs MODELMETRICS_CMAKE_BUILD_DIR="$root/build" \
      build/venv/bin/python -m pip install -q --no-build-isolation --no-index --no-deps \
      --force-reinstall .
    targets=("$root/tests/python")
    pytest "$root/build/venv/bin/python"
    ;;
  apiserver | ui)
    stage "Python: tests/$module" 60
    ninja -C build -j "$jobs" modelmetrics
    targets=("$root/tests/$module")
    pytest /usr/bin/python3
    ;;
esac
