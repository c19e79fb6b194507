#!/usr/bin/env bash
# Kiln fuzzing: builds the libFuzzer targets of test/fuzz in build-fuzz
# (clang-22, libraries with -fsanitize=fuzzer-no-link,address,undefined, the
# targets linked with -fsanitize=fuzzer; Debian's libMLIR.so is not
# instrumented), makes the seed corpora in build-fuzz/corpus/<target> from the
# test inputs of the tree, and runs each target for FUZZ_SECONDS seconds
# (default 60), one after the other, each with one fuzzing process. Prints
# executions, executions per second and new crash inputs per target (exit
# status 1 if any target crashed); crash inputs land in
# build-fuzz/crashes/<target>/ (copy the small ones to
# test/fuzz/regressions/<target>/). Needs clang-22 and libfuzzer-22-dev
# (scripts/setup.sh).
#
#   scripts/fuzz.sh [TARGET...]        (default: every target)
#   FUZZ_SECONDS=600 scripts/fuzz.sh kiln-fuzz-npy
#
# Environment: FUZZ_SECONDS, FUZZ_BUILD (default build-fuzz), FUZZ_JOBS
# (ninja jobs, default 1), KILN_BUILD (a normal build whose kiln-compile
# makes the compiled seed artifacts, default build; skipped if absent),
# FUZZ_NO_BUILD=1 (run what build-fuzz has, without ninja).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
BUILD="$(realpath -m "${FUZZ_BUILD:-build-fuzz}")"
JOBS="${FUZZ_JOBS:-1}"
KILN_BUILD="${KILN_BUILD:-build}"
LLVM=/usr/lib/llvm-22
ALL_TARGETS=(kiln-fuzz-npy kiln-fuzz-artifact kiln-fuzz-onnx kiln-fuzz-onnxtxt
             kiln-fuzz-onnx-structured kiln-fuzz-npz kiln-fuzz-calibration-table
             kiln-fuzz-serve-request)
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi

if [ ! -f "$LLVM/lib/libFuzzer.a" ] || [ ! -x "$LLVM/bin/clang++" ]; then
  echo "fuzz: error: needs clang-22, libclang-rt-22-dev and libfuzzer-22-dev" \
       "(scripts/setup.sh)" >&2
  exit 1
fi

# --- build -------------------------------------------------------------------
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$LLVM/bin/clang" -DCMAKE_CXX_COMPILER="$LLVM/bin/clang++" \
    `# -O1 and assertions on (no NDEBUG): our own asserts are checks too` \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    `# LLVM's sanitizer options: the flags, and no -z defs for shared objects` \
    -DLLVM_USE_SANITIZER="Address;Undefined" -DLLVM_USE_SANITIZE_COVERAGE=ON \
    -DLLVM_UBSAN_FLAGS="-fsanitize=undefined -fno-sanitize=vptr,function -fno-sanitize-recover=all" \
    -DLLVM_EXTERNAL_LIT="$LLVM/bin/lit" \
    -DKILN_FUZZ=ON -DKILN_E2E=OFF
fi
if [ "${FUZZ_NO_BUILD:-0}" != "1" ]; then
  ninja -C "$BUILD" -j "$JOBS" "${TARGETS[@]}" kiln-test-artifact
fi

# --- seed corpora ----------------------------------------------------------
CORPUS="$BUILD/corpus"
SEEDS="$BUILD/seeds"
mkdir -p "$SEEDS"
onnxtxt_files() { find test examples -name '*.onnxtxt' -size -64k | sort; }
# ONNX backend node tests and small models, binary (at most 64 KiB each).
onnx_files() {
  find /usr/share/libonnx-testdata/data -name model.onnx -size -64k 2>/dev/null | sort
}
seed() { # seed TARGET: fills $CORPUS/TARGET once
  local target="$1" dir="$CORPUS/$1"
  if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ]; then return; fi
  mkdir -p "$dir"
  case "$target" in
    kiln-fuzz-npy)
      /usr/bin/python3 test/Runtime/Inputs/make_npy.py "$dir"
      /usr/bin/python3 - "$dir" <<'PY'
import os, sys
import numpy as np
out = sys.argv[1]
for i, dt in enumerate(["<f2", "<f4", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "|b1"]):
    np.save(os.path.join(out, f"dtype{i}.npy"), np.zeros((2, 3), dtype=dt))
np.save(os.path.join(out, "scalar.npy"), np.float32(1.5))
np.save(os.path.join(out, "empty.npy"), np.zeros((0, 4), np.float32))
np.save(os.path.join(out, "rank5.npy"), np.ones((1, 2, 1, 2, 1), np.int64))
for version in [(2, 0), (3, 0)]:
    with open(os.path.join(out, f"v{version[0]}.npy"), "wb") as f:
        np.lib.format.write_array(f, np.arange(6, dtype=np.int32), version=version)
PY
      ;;
    kiln-fuzz-artifact)
      "$BUILD/bin/kiln-test-artifact" "$dir/add.kiln"
      "$BUILD/bin/kiln-test-artifact" "$dir/symbol.kiln" --symbol=missing_kernel
      # A stand-in gfx code object: an AMDGPU ELF header (64-bit LE, HSA
      # OS ABI, ET_DYN, EM_AMDGPU, e_flags mach gfx942), all the reader checks.
      /usr/bin/python3 -c 'import struct, sys; sys.stdout.buffer.write(
          b"\x7fELF\x02\x01\x01\x40" + bytes(8) + struct.pack("<HHI", 3, 224, 1) + bytes(24) + struct.pack("<I", 0x4c) + bytes(12))' \
        > "$SEEDS/fake.hsaco"
      "$BUILD/bin/kiln-test-artifact" "$dir/gfx.kiln" \
        --gfx=gfx942="$SEEDS/fake.hsaco" \
        --gfx-kernel=dispatch_0_add=add_f32_gfx:64:1024 2>/dev/null ||
        rm -f "$dir/gfx.kiln"
      if [ -x "$KILN_BUILD/bin/kiln-compile" ]; then
        "$KILN_BUILD/bin/kiln-compile" examples/tiny_cnn.onnxtxt --target=cpu \
          -o "$dir/tiny_cnn.kiln" || echo "fuzz: warning: no tiny_cnn seed" >&2
        "$KILN_BUILD/bin/kiln-compile" test/Driver/Inputs/flatten_only.onnxtxt \
          --target=cpu,gfx942 --emulation -o "$dir/flatten.kiln" ||
          echo "fuzz: warning: no flatten_only seed" >&2
        "$KILN_BUILD/bin/kiln-compile" test/Driver/Inputs/control_flow.onnxtxt \
          --target=cpu -o "$dir/control_flow.kiln" ||
          echo "fuzz: warning: no control_flow seed" >&2
      else
        echo "fuzz: note: no $KILN_BUILD/bin/kiln-compile: seeds without" \
             "compiled models" >&2
      fi
      ;;
    kiln-fuzz-npz)
      # Samples for the target's model (x: float32 [2, 3], ids: int64 [4]),
      # stored and deflated, with extra, missing and misnamed members.
      /usr/bin/python3 - "$dir" <<'PY'
import os, sys
import numpy as np
out = sys.argv[1]
x, ids = np.ones((2, 3), np.float32), np.arange(4, dtype=np.int64)
np.savez(os.path.join(out, "stored.npz"), x=x, ids=ids)
np.savez_compressed(os.path.join(out, "deflated.npz"), x=x, ids=ids)
np.savez(os.path.join(out, "extra.npz"), x=x, ids=ids, other=np.zeros(3))
np.savez(os.path.join(out, "missing.npz"), x=x)
np.savez(os.path.join(out, "shape.npz"), x=np.ones((3, 2), np.float32), ids=ids)
PY
      ;;
    kiln-fuzz-calibration-table)
      # The tables the --quantize tests write and read.
      /usr/bin/python3 test/Driver/Inputs/make_quant_model.py "$SEEDS" >/dev/null
      cp "$SEEDS"/*.json "$dir/"
      ;;
    kiln-fuzz-serve-request)
      # Requests the serving tests send (JSON, binary, batched) and configs.
      /usr/bin/python3 - "$dir" <<'PY'
import json, os, struct, sys
import numpy as np
out = sys.argv[1]
def put(name, data):
    open(os.path.join(out, name), "wb").write(data)
x = {"name": "x", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6]}
ids = {"name": "ids", "shape": [2], "datatype": "INT64", "data": [[7], [8]]}
m = {"name": "m", "shape": [2], "datatype": "BOOL", "data": [True, False]}
req = {"id": "a", "inputs": [x, ids, m], "outputs": [{"name": "y"}],
       "parameters": {"priority": 1, "timeout": 100}}
put("json", b"\x00" + json.dumps(req).encode())
put("batched", b"\x01" + json.dumps(dict(req, inputs=[dict(x, shape=[3, 3], data=list(range(9))), ids, m])).encode())
header = json.dumps({"inputs": [dict(x, data=None, parameters={"binary_data_size": 24}), ids, m],
                     "parameters": {"binary_data_output": True}}).replace(', "data": null', "").encode()
put("binary", b"\x02" + struct.pack("<H", len(header)) + header + np.ones(6, np.float32).tobytes())
put("config", b"c" + b'name: "m"\nmax_batch_size: 8\ninput [ { name: "x" data_type: TYPE_FP32 dims: [ 3 ] } ]\n'
    b'instance_group [ { count: 2 kind: KIND_CPU } ]\ndynamic_batching { preferred_batch_size: [ 4, 8 ] '
    b'max_queue_delay_microseconds: 100 default_queue_policy { max_queue_size: 4 timeout_action: DELAY } }\n')
PY
      ;;
    kiln-fuzz-onnxtxt)
      local f
      for f in $(onnxtxt_files); do cp "$f" "$dir/$(echo "$f" | tr / _)"; done
      ;;
    kiln-fuzz-onnx | kiln-fuzz-onnx-structured)
      # The tree's text models converted to binary, and the backend tests.
      /usr/bin/python3 - "$dir" $(onnxtxt_files) <<'PY'
import os, sys
import onnx, onnx.parser
out = sys.argv[1]
for path in sys.argv[2:]:
    try:
        model = onnx.parser.parse_model(open(path).read())
    except Exception as e:  # a test of a parse error, say
        continue
    name = path.replace("/", "_").replace(".onnxtxt", ".onnx")
    open(os.path.join(out, name), "wb").write(model.SerializeToString())
PY
      local n=0 f
      for f in $(onnx_files); do
        n=$((n + 1))
        cp "$f" "$dir/backend-$(basename "$(dirname "$f")").onnx"
      done
      ;;
  esac
  # Kept crash inputs are seeds too.
  if [ -d "test/fuzz/regressions/$target" ]; then
    cp test/fuzz/regressions/"$target"/* "$dir/" 2>/dev/null || true
  fi
}

# --- run ---------------------------------------------------------------------
# allow_user_segv_handler: the importer runs libONNX's version converter in
# a forked child that resets SIGSEGV to die quietly (its crash is the
# model's error); without it ASan keeps its handler there and the child
# reports the crash as the fuzzer's own.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:allow_user_segv_handler=1}"
# The fork-mode children get their temporary files here.
export TMPDIR="$BUILD/tmp"
mkdir -p "$TMPDIR"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
REPORT="$BUILD/fuzz-report.txt"
: > "$REPORT"
status=0
for target in "${TARGETS[@]}"; do
  seed "$target"
  mkdir -p "$BUILD/crashes/$target" "$BUILD/logs"
  log="$BUILD/logs/$target.log"
  echo "fuzz: $target for ${FUZZ_SECONDS}s on $(ls "$CORPUS/$target" | wc -l) seeds"
  start=$(date +%s)
  touch "$BUILD/logs/$target.start"
  set +e
  # One fuzzing process at a time (-fork=1: a child that crashes is replaced
  # and fuzzing goes on, so one run finds more than its first crash).
  # -rss_limit_mb: the importer builds a context per input; 4 GB is a leak.
  "$BUILD/bin/$target" "$CORPUS/$target" -max_total_time="$FUZZ_SECONDS" \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -timeout=30 -rss_limit_mb=4096 -max_len=262144 \
    -artifact_prefix="$BUILD/crashes/$target/" > "$log" 2>&1
  rc=$?
  set -e
  seconds=$(( $(date +%s) - start ))
  # The parent's status lines: "#EXECS: cov: ... time: Ns job: J ...".
  execs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$log" | tail -1)
  execs=${execs:-0}
  speed=$(( execs / (seconds > 0 ? seconds : 1) ))
  # New crash, timeout and out-of-memory inputs of this run (the folder keeps
  # those of earlier runs too).
  crashes=$(find "$BUILD/crashes/$target" -type f -newer "$BUILD/logs/$target.start" | wc -l)
  line="$target: $execs executions in ${seconds}s ($speed/s), $crashes new crash inputs, exit $rc"
  echo "fuzz: $line"
  echo "$line" >> "$REPORT"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then status=1; fi
done
echo "fuzz: summary in $REPORT; logs in $BUILD/logs"
cat "$REPORT"
exit $status
