#!/bin/bash
# Runs vLLM-Omni's own metrics tests, unchanged, against modelmetrics' drop-in:
#   bash scripts/upstream_tests.sh VLLM_OMNI_CHECKOUT [COMMIT]
# VLLM_OMNI_CHECKOUT is a clone (or bare git directory) of vLLM-Omni; COMMIT defaults to HEAD.
# Its tests/metrics and tests/benchmarks/test_audio_continuity.py run twice: with the native
# fallback (no vLLM importable) and with the vLLM stand-in (tests/python/vllm_standin), where the
# stat logger wraps vLLM's PrometheusStatLogger. Needs build/python (scripts/setup.sh builds it).
# Tests that import vLLM-Omni's engine or entrypoint code (vllm_omni.entrypoints, ...) fail with
# ModuleNotFoundError here: vLLM-Omni itself is not installed, only its metrics package is
# replaced.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
checkout=${1:?usage: upstream_tests.sh VLLM_OMNI_CHECKOUT [COMMIT]}
commit=${2:-HEAD}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$checkout" archive "$commit" tests/metrics tests/benchmarks/test_audio_continuity.py |
  tar -x -C "$work"
cp "$root/tests/upstream/conftest.py" "$work/conftest.py"
cd "$work"
status=0
for mode in fallback stand-in; do
  path="$root/build/python"
  [[ $mode == stand-in ]] && path="$root/tests/python/vllm_standin:$path"
  echo "== vLLM-Omni $commit tests/metrics, $mode"
  PYTHONPATH="$path" /usr/bin/python3 -m pytest -q -p no:cacheprovider -rf tests || status=1
done
exit $status
