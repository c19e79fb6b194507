#!/usr/bin/env bash
# Kiln sanitizer builds (g++), each configured once and built with only the
# targets it runs, none of which links MLIR or LLVM (CI runs these two):
#   asan   build-asan: AddressSanitizer + UndefinedBehaviorSanitizer
#          (-fsanitize=address,undefined -fno-omit-frame-pointer, any finding
#          fatal, LeakSanitizer on): every runtime unit test
#          (kiln-runtime-tests, the emu device's fibers included), the gfx
#          target table tests, and the fuzz regressions of the .npy and
#          artifact readers.
#   tsan   build-tsan: ThreadSanitizer: the runtime's thread pool, session,
#          device, C API and emu device tests.
# and, on request only (a cold build of the compiler libraries under ASan
# takes far longer than CI's budget on 2 cores, see docs/testing.md):
#   asan-compiler  build-asan: the compiler unit tests (kiln-compiler-tests)
#          and the fuzz regressions of the ONNX importer.
# -O1 -g, assertions on. Debian's libMLIR.so/libLLVM.so are not instrumented.
# Stops at the first failing step; prints the time of each.
#
#   scripts/sanitize.sh [asan] [tsan] [asan-compiler]   (default: asan tsan)
#
# Environment: SANITIZE_JOBS (ninja jobs, default nproc), ASAN_BUILD,
# TSAN_BUILD (build directories, default build-asan and build-tsan).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
JOBS="${SANITIZE_JOBS:-$(nproc)}"
ASAN_BUILD="${ASAN_BUILD:-build-asan}"
TSAN_BUILD="${TSAN_BUILD:-build-tsan}"
if [ $# -gt 0 ]; then STEPS=("$@"); else STEPS=(asan tsan); fi

# The runtime tests that exercise threads (ThreadPool, Session, Device, CApi)
# and the emu device, whose fibers TSan must follow; not the death test of a
# lane's stack overflow (TSan reports the fault its own way and exits 66).
TSAN_FILTER='ThreadPool*:Batcher*:Session*:SessionErrors*:Device*:CApi*:EmuDevice*:-EmuDeviceDeathTest.*'
ASAN_OPTIONS_ALL="detect_leaks=1:check_initialization_order=1:detect_stack_use_after_return=1:strict_string_checks=1"
UBSAN_OPTIONS_ALL="print_stacktrace=1:halt_on_error=1"

configure() { # configure DIR SANITIZER UBSAN_FLAGS
  local dir="$1" sanitizer="$2" ubsan="$3"
  if [ -f "$dir/build.ninja" ]; then return; fi
  cmake -G Ninja -S . -B "$dir" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DLLVM_USE_SANITIZER="$sanitizer" -DLLVM_UBSAN_FLAGS="$ubsan" \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit -DKILN_E2E=OFF >/dev/null
}

# existing DIR TARGET...: the targets this tree defines (a test added later
# joins by name; one not there yet is skipped).
existing() {
  local dir="$1" t
  shift
  for t in "$@"; do
    if ninja -C "$dir" -t query "$t" >/dev/null 2>&1; then echo "$t"; fi
  done
}

timed() { # timed LABEL COMMAND...: runs it and prints its wall time
  local label="$1" start
  start=$(date +%s)
  shift
  echo "sanitize: $label"
  "$@"
  echo "sanitize: $label: $(( $(date +%s) - start ))s"
}

run_gtests() { # run_gtests DIR TARGET...: runs each built gtest executable
  local dir="$1" t
  shift
  for t in "$@"; do
    timed "$t" "$dir/bin/$t" --gtest_brief=1
  done
}

asan_env() {
  export ASAN_OPTIONS="$ASAN_OPTIONS_ALL" UBSAN_OPTIONS="$UBSAN_OPTIONS_ALL"
}

total_start=$(date +%s)
for step in "${STEPS[@]}"; do
  case "$step" in
    asan)
      configure "$ASAN_BUILD" "Address;Undefined" \
        "-fsanitize=undefined -fno-sanitize=vptr -fno-sanitize-recover=all"
      mapfile -t tests < <(existing "$ASAN_BUILD" kiln-runtime-tests kiln-gfx-targets-tests)
      timed "asan build" ninja -C "$ASAN_BUILD" -j "$JOBS" "${tests[@]}" \
        kiln-fuzz-npy-replay kiln-fuzz-artifact-replay
      asan_env
      run_gtests "$ASAN_BUILD" "${tests[@]}"
      timed "asan fuzz regressions (npy, artifact)" ctest --test-dir "$ASAN_BUILD" \
        -L fuzz -R '\.(npy|artifact)' --output-on-failure
      unset ASAN_OPTIONS UBSAN_OPTIONS
      ;;
    asan-compiler)
      configure "$ASAN_BUILD" "Address;Undefined" \
        "-fsanitize=undefined -fno-sanitize=vptr -fno-sanitize-recover=all"
      mapfile -t tests < <(existing "$ASAN_BUILD" kiln-compiler-tests)
      timed "asan-compiler build" ninja -C "$ASAN_BUILD" -j "$JOBS" "${tests[@]}" \
        kiln-fuzz-onnx-replay kiln-fuzz-onnxtxt-replay kiln-fuzz-onnx-structured-replay
      asan_env
      run_gtests "$ASAN_BUILD" "${tests[@]}"
      timed "asan fuzz regressions (onnx)" ctest --test-dir "$ASAN_BUILD" \
        -L fuzz -R '\.onnx' --output-on-failure
      unset ASAN_OPTIONS UBSAN_OPTIONS
      ;;
    tsan)
      configure "$TSAN_BUILD" "Thread" ""
      timed "tsan build" ninja -C "$TSAN_BUILD" -j "$JOBS" kiln-runtime-tests
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
      timed "tsan runtime tests" "$TSAN_BUILD/bin/kiln-runtime-tests" \
        --gtest_brief=1 --gtest_filter="$TSAN_FILTER"
      unset TSAN_OPTIONS
      ;;
    *)
      echo "sanitize: error: unknown step '$step' (asan, tsan, asan-compiler)" >&2
      exit 2
      ;;
  esac
done
echo "sanitize: ${STEPS[*]}: clean in $(( $(date +%s) - total_start ))s"
