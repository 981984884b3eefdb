#!/usr/bin/env bash
# Assembles the container image's root filesystem from a built `modelmetrics` binary:
#   usage: scripts/image-rootfs.sh BINARY ROOTFS
# ROOTFS gets the stripped binary (/usr/bin/modelmetrics), every shared library it links (as ldd
# resolves them here, the loader included), the CA bundle, a non-root user and group (65532,
# "nonroot", as distroless images name it) and a world-writable /tmp; nothing else, no shell.
# Used by the Containerfile (registry builds) and scripts/build-image.sh (offline, buildah), so the
# two images hold the same files.
set -euo pipefail
binary=$1
rootfs=$2
mkdir -p "$rootfs"/usr/bin "$rootfs"/etc/ssl/certs "$rootfs"/tmp "$rootfs"/etc/modelmetrics
chmod 1777 "$rootfs"/tmp
install -m 0755 "$binary" "$rootfs"/usr/bin/modelmetrics
strip --strip-unneeded "$rootfs"/usr/bin/modelmetrics
# Libraries at the paths the loader looks for them (symlinks resolved: the image has no others).
ldd "$binary" | awk '/=>/ { print $3 } !/=>/ && /^\t\// { print $1 }' | while read -r lib; do
  [ -n "$lib" ] || continue
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$rootfs"/etc/ssl/certs/ca-certificates.crt
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
  >"$rootfs"/etc/passwd
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs"/etc/group
