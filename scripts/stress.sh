#!/usr/bin/env bash
# Every threaded suite, many times, on a machine that is busy: each suite that the test command
# runs under ThreadSanitizer (scripts/tsan_tree.sh) and the Python multiprocess and fork tests,
# ROUNDS times each, with two CPU-burning processes beside them the whole time. A test that
# passes only on an idle machine, or a race that shows one run in fifty, fails here instead of in
# CI. Not part of the test command: 34 minutes on 2 cores (the README has the figure).
#
# Needs what scripts/test.sh builds (the main tree and build/venv); builds the TSan tree if it is
# missing or stale. Every run is counted; a failing run's log is kept in build/stress/ and the
# script goes on to the end, then prints each suite's runs, failures and time, and exits non-zero
# if any run failed.
#   ROUNDS=30 (default)   runs of each suite
#   JOBS=2 (default)      suites at a time (beside the two burners)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-30}
jobs=${JOBS:-2}
source scripts/tsan_tree.sh
python_tests=(tests/python/test_multiprocess.py tests/python/test_fork_safety.py)
[ -x build/venv/bin/python ] || { echo "stress: run scripts/test.sh (or setup.sh) first"; exit 2; }
build_tsan_tree "$jobs" >/dev/null

out=build/stress
rm -rf "$out"
mkdir -p "$out"
scratch=$(mktemp -d)
burners=()
on_exit() {
  for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap on_exit EXIT
for _ in 1 2; do
  bash -c 'while :; do :; done' &
  burners+=($!)
done

# run_one ROUND SUITE: one run; appends "SUITE STATUS SECONDS" to $out/results, keeps a failing
# run's log as $out/SUITE-ROUND.log.
run_one() {
  local round=$1 suite=$2 name log start status=0
  name=${suite//\//-}
  log="$scratch/$name-$round.log"
  start=$EPOCHREALTIME
  if [[ $suite == tests/python/* ]]; then
    (cd "$(mktemp -d -p "$scratch")" && timeout --kill-after=10s 600 \
      "$root/build/venv/bin/python" -m pytest -q -p no:cacheprovider "$root/$suite" \
      >"$log" 2>&1) || status=$?
  else
    run_tsan_suite "$suite" "$log" || status=$?
  fi
  ((status == 0)) || cp "$log" "$out/$name-$round.log"
  rm -f "$log"
  awk -v s="$suite" -v rc="$status" -v a="$start" -v b="$EPOCHREALTIME" \
    'BEGIN { printf "%s %d %.1f\n", s, rc, b - a }' >>"$out/results"
}
export -f run_one run_tsan_suite
export out scratch root=$PWD

start=$SECONDS
for round in $(seq 1 "$rounds"); do
  printf '%s\n' "${tsan_suites[@]}" "${python_tests[@]}" |
    xargs -P "$jobs" -I{} bash -c 'run_one "$1" "$2"' _ "$round" {}
  failed=$(awk '$2 != 0' "$out/results" | wc -l)
  printf 'round %d of %d: %d s, %d failed runs so far\n' "$round" "$rounds" \
    $((SECONDS - start)) "$failed"
done

printf '\n%-42s %5s %7s %9s\n' suite runs failed 'seconds'
awk '{ runs[$1]++; if ($2 != 0) failed[$1]++; seconds[$1] += $3 }
  END { for (s in runs) printf "%-42s %5d %7d %9.0f\n", s, runs[s], failed[s], seconds[s] }' \
  "$out/results" | sort
total_failed=$(awk '$2 != 0' "$out/results" | wc -l)
printf '%d runs in %d s with two burners beside them; %d failed' \
  "$(wc -l <"$out/results")" $((SECONDS - start)) "$total_failed"
((total_failed == 0)) && echo || { echo " (logs in $out/)"; exit 1; }
