#!/usr/bin/env bash
# Installs what modelmetrics needs (Debian bookworm packages only) and builds it. Safe to run
# again: installs only what is missing, and the compiler cache (ccache) makes a rebuild cheap.
#   bash scripts/setup.sh --main   the main job: the packages that build and run the `modelmetrics`
#                                  binary, and only that target (what scripts/run.sh uses)
#   bash scripts/setup.sh          everything the tests use, the whole tree in build/ and the
#                                  Python package in build/venv (what scripts/test.sh uses)
# (as root, or with sudo available)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=test
[ "${1:-}" = "--main" ] && mode=main
jobs=${JOBS:-2}

# What `modelmetrics` needs to build and run: the compiler and build tools, the libraries it
# links, and Chart.js (embedded in the web page at build time).
main_packages=(
  g++ cmake ninja-build pkg-config ccache
  libboost1.81-dev libssl-dev libcurl4-openssl-dev zlib1g-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libyaml-dev
  libjs-chart.js ca-certificates
)
# What only the tests, benchmarks and the Python package need.
test_packages=(
  git clang libclang-rt-14-dev clang-format      # fuzzing (libFuzzer) and formatting
  lld                                            # links the three trees' test binaries faster
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus                                     # promtool and a real Prometheus for tests
  victoria-metrics                               # the other real store the Prometheus source reads
  python3 python3-dev python3-venv python3-pip python3-setuptools python3-wheel  # the Python package
  python3-prometheus-client python3-pytest python3-prettytable      # its bridge and tests
  python3-fastapi python3-uvicorn                # the FastAPI example (a real consumer)
  pybind11-dev                                   # the pybind11 comparison in bench/python
  chromium chromium-driver python3-selenium      # the web page's tests in a real browser
  python3-yaml                                   # the rules and dashboards test
  buildah                                        # the container image, built and run offline
  golang-go golang-github-tidwall-gjson-dev      # KEDA's GJSON on the documented valueLocations
  openssl locales curl
)
packages=("${main_packages[@]}")
[ "$mode" = main ] || packages+=("${test_packages[@]}")

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ "$mode" = test ]; then
  # The stores' packages start system services where systemd runs; the tests start their own on
  # loopback, so nothing is left listening on the machine's other addresses.
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    for service in prometheus victoria-metrics; do
      $SUDO systemctl disable --now "$service" >/dev/null 2>&1 || true
    done
  fi

  # kubectl, the API client the aggregated API is tested with. Debian ships it as
  # kubernetes-client; a kubectl already on the machine (any source) is used as it is.
  if ! command -v kubectl >/dev/null 2>&1; then
    echo "setup: installing kubernetes-client (kubectl)"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
      kubernetes-client
  fi

  # A comma-decimal locale, so the locale-independence tests run for real.
  if ! locale -a 2>/dev/null | grep -qi '^de_DE.utf8$'; then
    $SUDO sed -i 's/^# *de_DE.UTF-8 UTF-8/de_DE.UTF-8 UTF-8/' /etc/locale.gen
    $SUDO locale-gen >/dev/null
  fi
fi

if [ "$mode" = main ]; then
  # Only the binary: no tests, benchmarks or Python extension (and none of their packages).
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
    -DMODELMETRICS_BENCH=OFF -DMODELMETRICS_PYTHON=OFF >/dev/null
  ninja -C build -j "$jobs" modelmetrics
  exit 0
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON \
  -DMODELMETRICS_BENCH=ON -DMODELMETRICS_PYTHON=ON >/dev/null
ninja -C build -j "$jobs"

# The Python package, installed the way users install it: offline, into a venv that sees Debian's
# python3-* packages (Debian's interpreter, not another python3 on PATH).
# The manifests' offline schema check (tests/deploy/test_kubernetes_manifests.py): Node.js and the
# validator packages pinned in tests/deploy/kubernetes/package-lock.json, installed under build/.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "setup: installing nodejs npm"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends nodejs npm
fi
schemas=build/manifest-schemas
if [ ! -d "$schemas/node_modules" ] ||
  ! cmp -s tests/deploy/kubernetes/package-lock.json "$schemas/package-lock.json"; then
  rm -rf "$schemas" && mkdir -p "$schemas"
  cp tests/deploy/kubernetes/package.json tests/deploy/kubernetes/package-lock.json "$schemas/"
  (cd "$schemas" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

if [ ! -x build/venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages build/venv
fi
# The extension is the one just built in build/ (same interpreter: Debian's).
MODELMETRICS_BUILD_JOBS=$jobs MODELMETRICS_CMAKE_BUILD_DIR="$PWD/build" build/venv/bin/python -m pip \
  install -q --no-build-isolation --no-index --no-deps --force-reinstall . >/dev/null
