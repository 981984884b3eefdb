#!/usr/bin/env bash
# The main job: set up, build, then run the built-in demo: a simulated vLLM prefill/decode
# deployment behind an llm-d router and an SGLang deployment behind its gateway, the pipeline
# simulator and the aggregated API server, all on loopback, printing each deployment's live
# ModelDeploymentMetrics table every 5 s.
#   DEMO_DURATION=60s (default)   how long the demo runs
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --main
exec ./build/src/cli/modelmetrics demo --duration "${DEMO_DURATION:-60s}"
