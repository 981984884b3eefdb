#!/usr/bin/env bash
# `modelmetrics parse --strict -o summary` against Go's expfmt TextParser on the same ~50 MB
# scrape, whole processes timed side by side (best of N runs), and the ratio.
#
#   bash bench/parse_vs_expfmt.sh            # needs build/src/cli/modelmetrics
#   RUNS=10 TARGET_MB=50 SOURCE=path/to/capture.txt SCRAPE_OUT=/tmp/scrape.prom \
#     bash bench/parse_vs_expfmt.sh    # SCRAPE_OUT keeps the generated scrape
#
# The scrape is a real vLLM V1 capture (../shared/fixtures/real/vllm) grown to TARGET_MB: each
# family block keeps its HELP/TYPE lines once and repeats its samples once per copy with a
# distinct `copy` label, so every series is unique and every family stays contiguous (expfmt
# rejects a family that comes back). The Go peer (bench/format/expfmt_peer) is built offline
# against Debian's golang-go and golang-github-prometheus-common-dev, installed when missing.
# Uses hyperfine when installed, else a `date +%s%N` loop. Not part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
runs=${RUNS:-10}
target_mb=${TARGET_MB:-50}
shared="${MODELMETRICS_SHARED_DIR:-$root/../shared}"
source_file=${SOURCE:-$shared/fixtures/real/vllm/kserve-llmisvc-vllm-v1-pd-nixl-tinyllama.txt}
binary=${MODELMETRICS:-$root/build/src/cli/modelmetrics}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

[ -x "$binary" ] || { echo "build first: ninja -C build modelmetrics" >&2; exit 1; }
missing=()
command -v go >/dev/null || missing+=(golang-go)
[ -d /usr/share/gocode/src/github.com/prometheus/common/expfmt ] ||
  missing+=(golang-github-prometheus-common-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}" >&2
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Go peer: GOPATH mode over Debian's source tree, no network.
(cd bench/format/expfmt_peer && GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS=-mod=mod \
  GOCACHE="${GOCACHE:-$work/gocache}" go build -o "$work/expfmt_peer" .)

# Grow the capture: copies = target / (sample-line bytes + the label's bytes per line).
scrape=${SCRAPE_OUT:-$work/scrape.prom}
sample_bytes=$(grep -v '^#' "$source_file" | wc -c)
lines=$(grep -vc '^#' "$source_file" || true)
copies=$(((target_mb * 1000000) / (sample_bytes + lines * 14) + 1))
awk -v copies="$copies" '
  function relabel(line, i,   brace, space) {
    brace = index(line, "{"); space = index(line, " ")
    if (brace > 0 && brace < space) {
      if (substr(line, brace + 1, 1) == "}") return substr(line, 1, brace) "copy=\"" i "\"" substr(line, brace + 1)
      return substr(line, 1, brace) "copy=\"" i "\"," substr(line, brace + 1)
    }
    return substr(line, 1, space - 1) "{copy=\"" i "\"}" substr(line, space)
  }
  function flush(   i, j) {
    for (i = 0; i < copies; i++) for (j = 0; j < n; j++) print relabel(s[j], i)
    n = 0
  }
  /^#/ { if (n > 0) flush(); print; next }
  /^[ \t]*$/ { next }
  { s[n++] = $0 }
  END { flush() }' "$source_file" >"$scrape"
size_mb=$(awk -v b="$(wc -c <"$scrape")" 'BEGIN { printf "%.1f", b / 1e6 }')
echo "scrape: $size_mb MB ($copies relabelled copies of $(basename "$source_file"))"
"$binary" parse --strict -o summary "$scrape" | tail -n 1
"$work/expfmt_peer" "$scrape"

ours_cmd="$binary parse --strict -o summary $scrape"
peer_cmd="$work/expfmt_peer $scrape"
if command -v hyperfine >/dev/null; then
  hyperfine --warmup 2 --runs "$runs" --export-json "$work/times.json" --style basic \
    -n modelmetrics "$ours_cmd" -n expfmt "$peer_cmd" >&2
  # hyperfine's JSON: one entry per command, "min" in seconds.
  mins=$(tr -d ' \n' <"$work/times.json" | grep -o '"min":[0-9.e-]*' | cut -d: -f2)
  ours_s=$(sed -n 1p <<<"$mins")
  peer_s=$(sed -n 2p <<<"$mins")
else
  best() {
    local best_ns=0 start end
    for _ in $(seq "$runs"); do
      start=$(date +%s%N)
      "$@" >/dev/null
      end=$(date +%s%N)
      if [ "$best_ns" -eq 0 ] || [ $((end - start)) -lt "$best_ns" ]; then best_ns=$((end - start)); fi
    done
    awk -v ns="$best_ns" 'BEGIN { printf "%.6f", ns / 1e9 }'
  }
  "$binary" parse --strict -o summary "$scrape" >/dev/null  # warm the page cache
  ours_s=$(best "$binary" parse --strict -o summary "$scrape")
  peer_s=$(best "$work/expfmt_peer" "$scrape")
fi
awk -v o="$ours_s" -v p="$peer_s" -v mb="$size_mb" -v runs="$runs" 'BEGIN {
  printf "best of %d: modelmetrics parse %.1f ms (%.0f MB/s), expfmt %.1f ms (%.0f MB/s): %.1fx\n",
    runs, o * 1e3, mb / o, p * 1e3, mb / p, p / o }'
