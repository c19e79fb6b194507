#!/usr/bin/env bash
# Kiln set-up: installs every Debian package the project needs, then the
# ONNX Runtime reference (npm package onnxruntime-node, pinned in
# bench/ort/package-lock.json) into bench/ort/node_modules. Idempotent:
# packages already present are not touched, apt-get runs only when something
# is missing, and npm only when node_modules lacks the pinned version.
# Run as root (or with sudo available). KILN_SETUP_ORT=0 skips the npm step.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"

PACKAGES=(
  # toolchain
  cmake ninja-build ccache g++ make git
  # LLVM/MLIR 22 (bookworm-security)
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools lld-22 liblld-22-dev clang-22
  # libFuzzer and clang's sanitizer runtimes (make fuzz)
  libfuzzer-22-dev libclang-rt-22-dev
  # ONNX, protobuf, FlatBuffers, GoogleTest
  libonnx-dev libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler libgtest-dev
  # .npz calibration samples (zip archives of .npy files)
  libzip-dev
  # kiln-serve: HTTP, JSON, gRPC (and the Python gRPC client of its tests)
  libcpp-httplib-dev nlohmann-json3-dev pkg-config
  libgrpc++-dev protobuf-compiler-grpc python3-grpcio python3-grpc-tools
  # model export and references (for /usr/bin/python3)
  python3-onnx python3-numpy python3-torch python3-torchvision libonnx-testdata
  # the deployment manifests' test (YAML)
  python3-yaml
  # memory/time measurements in tests; HTTP requests in docs/getting-started.md
  time curl
  # Python bindings (import kiln) and the Debian packages (make deb: CPack's
  # DEB generator runs dpkg-shlibdeps for the packages' dependencies)
  pybind11-dev python3-dev dpkg-dev file
)
# Node.js and npm for the ONNX Runtime reference (bench/ort). Only when missing:
# a node that came from elsewhere (e.g. a newer nodejs that bundles npm) stays.
if ! command -v node >/dev/null 2>&1; then PACKAGES+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then PACKAGES+=(npm); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime reference from the npm registry. --ignore-scripts: the package's
# install script downloads from hosts we cannot reach; the npm tarball already
# ships the linux x64 CPU library (bin/napi-v6/linux/x64). Only the e2e tests
# and bench/compare_ort.py need it, so a failure here warns and does not stop
# the build.
ORT_DIR="$ROOT/bench/ort"
if [ "${KILN_SETUP_ORT:-1}" != "0" ]; then
  want="$(sed -n 's/.*"onnxruntime-node": *"\([^"]*\)".*/\1/p' "$ORT_DIR/package.json")"
  have="$(sed -n 's/^  "version": *"\([^"]*\)".*/\1/p' \
          "$ORT_DIR/node_modules/onnxruntime-node/package.json" 2>/dev/null || true)"
  if [ -n "$want" ] && [ "$have" = "$want" ] && \
     [ -f "$ORT_DIR/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/onnxruntime_binding.node" ]; then
    echo "setup: onnxruntime-node $want present"
  else
    echo "setup: installing onnxruntime-node $want into bench/ort (npm ci --ignore-scripts)"
    if ! (cd "$ORT_DIR" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error); then
      echo "setup: WARNING: npm could not install onnxruntime-node; the e2e tests and" \
           "bench/compare_ort.py need it" >&2
    fi
  fi
fi
