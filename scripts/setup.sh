#!/usr/bin/env bash
# Installs what building and testing modelmetrics needs (Debian bookworm packages only) and
# configures + builds the default tree in build/. Safe to run again: installs only what is missing.
#   usage: bash scripts/setup.sh            (as root, or with sudo available)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake ninja-build pkg-config git
  clang libclang-rt-14-dev clang-format          # fuzzing (libFuzzer) and formatting
  libboost1.81-dev libssl-dev libcurl4-openssl-dev zlib1g-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libyaml-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus                                     # promtool and a real Prometheus for tests
  victoria-metrics                               # the other real store the Prometheus source reads
  python3 python3-dev python3-venv python3-pip python3-setuptools python3-wheel  # the Python package
  python3-prometheus-client python3-pytest python3-prettytable      # its bridge and tests
  python3-fastapi python3-uvicorn                # the FastAPI example (a real consumer)
  pybind11-dev                                   # the pybind11 comparison in bench/python
  libjs-chart.js                                 # the web page's charts (embedded at build time)
  chromium chromium-driver python3-selenium      # the web page's tests in a real browser
  python3-yaml                                   # the rules and dashboards test
  openssl ca-certificates locales curl
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The stores' packages start system services where systemd runs; the tests start their own on
# loopback, so nothing is left listening on the machine's other addresses.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  for service in prometheus victoria-metrics; do
    $SUDO systemctl disable --now "$service" >/dev/null 2>&1 || true
  done
fi

# kubectl, the API client the aggregated API is tested with. Debian ships it as
# kubernetes-client; a kubectl already on the machine (any source) is used as it is.
if ! command -v kubectl >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing kubernetes-client (kubectl)"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends kubernetes-client
fi

# A comma-decimal locale, so the locale-independence tests run for real.
if ! locale -a 2>/dev/null | grep -qi '^de_DE.utf8$'; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO sed -i 's/^# *de_DE.UTF-8 UTF-8/de_DE.UTF-8 UTF-8/' /etc/locale.gen
  $SUDO locale-gen >/dev/null
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build

# The Python package, installed the way users install it: offline, into a venv that sees Debian's
# python3-* packages (Debian's interpreter, not another python3 on PATH).
if [ ! -x build/venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages build/venv
fi
MODELMETRICS_BUILD_JOBS=${JOBS:-2} build/venv/bin/python -m pip install -q --no-build-isolation \
  --no-index --no-deps --force-reinstall . >/dev/null
