#!/usr/bin/env bash
# Kiln sanitizer builds (g++), each configured once and built with only the
# targets it runs:
#   build-asan  AddressSanitizer + UndefinedBehaviorSanitizer
#               (-fsanitize=address,undefined -fno-omit-frame-pointer, any
#               finding fatal): the runtime unit tests (kiln-runtime-tests,
#               the emu device's fibers included), the compiler unit tests
#               (kiln-compiler-tests) and the fuzz regression replays.
#   build-tsan  ThreadSanitizer: the runtime's thread pool, session, device,
#               C API and emu device tests.
# -O1 -g, assertions on. Debian's libMLIR.so/libLLVM.so are not
# instrumented (ASan still checks every access our code makes). Exits non-zero
# on the first failing step; prints the time of each.
#
#   scripts/sanitize.sh [asan] [tsan]      (default: both)
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
TSAN_FILTER='ThreadPool*:Session*:SessionErrors*:Device*:CApi*:EmuDevice*:-EmuDeviceDeathTest.*'

configure() { # configure DIR SANITIZER UBSAN_FLAGS
  local dir="$1" sanitizer="$2" ubsan="$3"
  if [ -f "$dir/build.ninja" ]; then return; fi
  cmake -G Ninja -S . -B "$dir" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DLLVM_USE_SANITIZER="$sanitizer" -DLLVM_UBSAN_FLAGS="$ubsan" \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit -DKILN_E2E=OFF >/dev/null
}

timed() { # timed LABEL COMMAND...: runs it and prints its wall time
  local label="$1" start=$(date +%s)
  shift
  echo "sanitize: $label"
  "$@"
  echo "sanitize: $label: $(( $(date +%s) - start ))s"
}

total_start=$(date +%s)
for step in "${STEPS[@]}"; do
  case "$step" in
    asan)
      configure "$ASAN_BUILD" "Address;Undefined" \
        "-fsanitize=undefined -fno-sanitize=vptr -fno-sanitize-recover=all"
      timed "asan build" ninja -C "$ASAN_BUILD" -j "$JOBS" kiln-runtime-tests \
        kiln-compiler-tests kiln-fuzz-replays
      export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:detect_stack_use_after_return=1:strict_string_checks=1"
      export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
      # The death test forks: the child inherits ASan and is fine with it.
      timed "asan runtime tests" "$ASAN_BUILD/bin/kiln-runtime-tests" --gtest_brief=1
      timed "asan compiler tests" "$ASAN_BUILD/bin/kiln-compiler-tests" --gtest_brief=1
      timed "asan fuzz regressions" ctest --test-dir "$ASAN_BUILD" -L fuzz \
        --output-on-failure
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
      echo "sanitize: error: unknown step '$step' (asan, tsan)" >&2
      exit 2
      ;;
  esac
done
echo "sanitize: all clean in $(( $(date +%s) - total_start ))s"
