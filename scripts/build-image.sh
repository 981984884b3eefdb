#!/usr/bin/env bash
# Builds the modelmetrics OCI image offline with Debian's buildah, from the binary already built
# (build/src/cli/modelmetrics; `bash scripts/setup.sh --main` builds it), and smoke-tests it:
#   bash scripts/build-image.sh [--no-smoke]
# Writes build/modelmetrics-image.tar (an OCI archive: `podman load -i`, `skopeo copy
# oci-archive:...`, `kind load image-archive`) and prints its size. The image is `scratch` plus
# the files scripts/image-rootfs.sh assembles, as the Containerfile's last stage.
#
# No container runtime runs here, so buildah uses the vfs storage driver in a private folder
# (build/image-storage, removed at the end) and runs the smoke test with chroot isolation: the
# image's own `modelmetrics serve` (self-signed TLS, a token, an empty objects file) must answer
# /livez and /readyz on loopback, as the Deployment's probes ask them.
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=1
[ "${1:-}" = "--no-smoke" ] && smoke=0
binary=build/src/cli/modelmetrics
archive=build/modelmetrics-image.tar
tag=modelmetrics:0.1.0
[ -x "$binary" ] || { echo "build-image: $binary is not built (bash scripts/setup.sh --main)"; exit 1; }
command -v buildah >/dev/null || { echo "build-image: buildah is not installed (apt-get install buildah)"; exit 1; }

work=$(mktemp -d)
storage=$PWD/build/image-storage
buildah=(buildah --storage-driver vfs --root "$storage/root" --runroot "$storage/run")
container=""
cleanup() {
  [ -z "$container" ] || "${buildah[@]}" rm "$container" >/dev/null 2>&1 || true
  "${buildah[@]}" rmi --all --force >/dev/null 2>&1 || true
  rm -rf "$work" "$storage"
}
trap cleanup EXIT

bash scripts/image-rootfs.sh "$binary" "$work/rootfs"
container=$("${buildah[@]}" from --quiet scratch)
"${buildah[@]}" copy --quiet "$container" "$work/rootfs" / >/dev/null
"${buildah[@]}" config --user 65532:65532 --port 8443 \
  --entrypoint '["/usr/bin/modelmetrics"]' --cmd "serve --config /etc/modelmetrics/serve.yaml" \
  --label org.opencontainers.image.title=modelmetrics "$container"
"${buildah[@]}" commit --quiet "$container" "$tag" >/dev/null
rm -f "$archive"
"${buildah[@]}" push --quiet "$tag" "oci-archive:$archive:$tag"
echo "build-image: $archive ($(du -m "$archive" | cut -f1) MB; image $("${buildah[@]}" images --format '{{.Size}}' "$tag"))"

[ "$smoke" = 1 ] || exit 0
# The smoke test: the image's binary serves over TLS with a certificate it made itself.
config=$work/config
mkdir -p "$config"
printf 'smoke-token,smoke,uid-smoke\n' >"$config/tokens.csv"
printf 'rules: []\n' >"$config/policy.yaml"
printf '{"kind":"List","apiVersion":"v1","items":[]}\n' >"$config/objects.json"
cat >"$config/serve.yaml" <<'YAML'
address: 127.0.0.1
port: 0
tls_self_signed: true
token_file: tokens.csv
policy_file: policy.yaml
objects_file: objects.json
YAML
chmod -R a+rX "$config"
# In a session of its own: the server inside the chroot is stopped with `buildah run` itself.
setsid "${buildah[@]}" run --isolation chroot --user 65532:65532 \
  --volume "$config:/etc/modelmetrics:ro" "$container" -- \
  /usr/bin/modelmetrics serve --config /etc/modelmetrics/serve.yaml --duration 30s \
  >"$work/serve.out" 2>"$work/serve.err" &
server=$!
url=""
for _ in $(seq 1 200); do  # 20 s, as the tests wait for a command (tests/cli/cli_runner.h)
  url=$(sed -n 's/^serving ModelDeploymentMetrics on \(https:[^ ]*\)$/\1/p' "$work/serve.out")
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "build-image: the image's server did not start:"; cat "$work/serve.err"; exit 1
fi
for path in /livez /readyz; do
  body=$(curl --silent --show-error --insecure --max-time 5 "$url$path")
  [ "$body" = ok ] || { echo "build-image: $path answered '$body'"; exit 1; }
done
version=$(curl --silent --insecure --max-time 5 "$url/version")
kill -- -"$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
echo "build-image: smoke test passed: $url/livez and /readyz answered ok, /version $version"
