#!/usr/bin/env bash
# Kiln set-up: installs every Debian package the project needs. Idempotent:
# packages already present are not touched, and apt-get runs only when
# something is missing. Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  # toolchain
  cmake ninja-build ccache g++ make git
  # LLVM/MLIR 22 (bookworm-security)
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools lld-22 liblld-22-dev clang-22
  # ONNX, protobuf, FlatBuffers, GoogleTest
  libonnx-dev libprotobuf-dev protobuf-compiler
  libflatbuffers-dev flatbuffers-compiler libgtest-dev
  # model export and references (for /usr/bin/python3)
  python3-onnx python3-numpy python3-torch python3-torchvision libonnx-testdata
  # memory/time measurements in tests
  time
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
