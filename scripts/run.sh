#!/usr/bin/env bash
# The main job: set up, build, then run `modelmetrics parse` over every shared /metrics capture
# (strict mode: each must parse cleanly), printing a summary per capture.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
shared="${MODELMETRICS_SHARED_DIR:-$(pwd)/../shared}"
status=0
for f in "$shared"/fixtures/real/*/*.txt "$shared"/fixtures/deployment/*.prom; do
  ./build/src/cli/modelmetrics parse --strict "$f" | tail -n 1 || status=1
done
exit $status
