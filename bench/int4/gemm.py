#!/usr/bin/python3
"""Kiln's 4-bit weight-only matmuls against Kiln FP32 and ONNX Runtime's MatMulNBits.

  /usr/bin/python3 bench/int4/gemm.py --build build [--threads 1] [--min-time 2]
      [--shapes decode-4096,small-1024] [--rounds 2] [--keep] [--json]

For each LLM-style shape (M, K, N) writes float.onnx, one MatMul of a float32
input A [M, K] by a constant float32 weight [K, N] (standard normal * 0.02,
seed 0), and compiles it twice with kiln-compile --target=cpu: as is (f.kiln)
and with --quantize=int4-weights --int4-group-size=128 (q.kiln). It also
quantizes the weight in numpy the way Kiln does (symmetric, groups of 128 rows
along K: scale = max|w| / 7, code = clip(rint(w / scale), -8, 7) + 8, zero
point 8; float32 arithmetic) and writes nbits.onnx, the same matmul as ONNX
Runtime's com.microsoft MatMulNBits (B uint8 [N, K/128, 64], element k of a
block in byte k/2, low nibble first; scales float32 [N * K/128]; no
zero_points input, i.e. zero point 8).

W4A8 (int8 activations, integer dot products): Kiln's q.kiln compiled again
with --int4-activations=int8 (w4a8.kiln), against the same MatMulNBits with
accuracy_level=4 (nbits_a8.onnx), which makes ONNX Runtime quantize A to int8
per block the same way. With --no-w4a8 these two runs are left out.

The runs (Kiln fp32, int4 and W4A8 with kiln-bench, ORT fp32 on float.onnx,
ORT int4 on nbits.onnx and ORT W4A8 on nbits_a8.onnx with bench/ort/ort_run.js) alternate --rounds times
(default 2) and each figure is the median of its rounds' medians. Prints the
latencies, Kiln int4 / Kiln fp32 and Kiln int4 / ORT int4 latency ratios, the
effective weight-streaming bandwidth (int4: K*N/2 bytes of codes plus the
scales; fp32: K*N*4 bytes; divided by the latency) and the artifact sizes.
When kiln-compile or kiln-bench fails (say --quantize=int4-weights is not in
the build yet) the Kiln columns it would fill are skipped with a message; the
same for ONNX Runtime. Only speed here: the numerics are checked elsewhere.
"""

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
ORT_RUN = HERE.parent / "ort" / "ort_run.js"
GROUP = 128

# name -> (M, K, N)
SHAPES = {
    "decode-4096": (1, 4096, 4096),
    "decode-11008": (1, 4096, 11008),
    "prefill-128": (128, 4096, 4096),
    "small-1024": (1, 1024, 1024),
}

RUNS = ("kiln_fp32", "kiln_int4", "kiln_w4a8", "ort_fp32", "ort_int4", "ort_w4a8")


def log(message):
    print(message, file=sys.stderr, flush=True)


def weight(k, n):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((k, n), dtype=np.float32) * np.float32(0.02)).astype(np.float32)


def quantize(w, group=GROUP):
    """Symmetric per-group int4 along K: codes uint8 [K, N] in [0, 15], scales [K/group, N]."""
    k, n = w.shape
    wg = w.reshape(k // group, group, n)
    scale = (np.abs(wg).max(axis=1) / np.float32(7)).astype(np.float32)
    safe = np.where(scale == 0, np.float32(1), scale).astype(np.float32)
    q = np.clip(np.rint(wg / safe[:, None, :]), -8, 7).astype(np.int16) + 8
    return q.reshape(k, n).astype(np.uint8), scale


def pack_nbits(codes, scale, group=GROUP):
    """MatMulNBits' B [N, K/group, group/2] (low nibble = even k) and scales [N * K/group]."""
    k, n = codes.shape
    blocks = codes.T.reshape(n, k // group, group)
    b = (blocks[:, :, 0::2] | (blocks[:, :, 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(b), np.ascontiguousarray(scale.T).reshape(-1)


def write_float(path, m, k, n, w):
    node = helper.make_node("MatMul", ["A", "W"], ["Y"])
    graph = helper.make_graph([node], "matmul",
                              [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])],
                              initializer=[numpy_helper.from_array(w, "W")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))


def write_nbits(path, m, k, n, b, scales, accuracy_level=0):
    node = helper.make_node("MatMulNBits", ["A", "B", "scales"], ["Y"], domain="com.microsoft",
                            K=k, N=n, bits=4, block_size=GROUP, accuracy_level=accuracy_level)
    graph = helper.make_graph([node], "matmul_nbits",
                              [helper.make_tensor_value_info("A", TensorProto.FLOAT, [m, k])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [m, n])],
                              initializer=[numpy_helper.from_array(b, "B"),
                                           numpy_helper.from_array(scales, "scales")])
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    onnx.save(helper.make_model(graph, opset_imports=opsets), str(path))


def failure(err):
    """One or a few lines saying why a subprocess failed."""
    if isinstance(err, FileNotFoundError):
        return f"{err.filename}: not found"
    if isinstance(err, subprocess.CalledProcessError):
        text = (err.stderr or err.stdout or "").strip().splitlines()
        detail = "; ".join(text[-3:]) if text else "no output"
        return f"exit status {err.returncode}: {detail}"
    return str(err)


def kiln_compile(build, onnx_path, out, extra):
    subprocess.run([str(build / "bin/kiln-compile"), str(onnx_path), "--target=cpu", *extra,
                    "-o", str(out)], check=True, capture_output=True, text=True)
    return out


def kiln_bench(build, artifact, threads, min_time):
    # As bench/int8/gemm.py: kiln-bench --json, the median latency of one run.
    out = subprocess.run([str(build / "bin/kiln-bench"), str(artifact), "--device=cpu",
                          f"--threads={threads}", f"--min-time={min_time}", "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["latency_ms"]["median"]


def ort_bench(model, threads, warmup, iterations):
    out = subprocess.run(["node", str(ORT_RUN), str(model), "--bench", "--threads", str(threads),
                          "--warmup", str(warmup), "--iterations", str(iterations), "--json"],
                         check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["median_ms"], result.get("version")


def ort_iterations(model, threads, min_time):
    """ort_run.js has no --min-time: probe a few runs, then size the timed runs to ~min_time."""
    probe, version = ort_bench(model, threads, 1, 3)
    iterations = max(10, min(100000, math.ceil(min_time * 1000 / max(probe, 1e-3))))
    return max(3, min(10, iterations // 10)), iterations, version


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def gbps(nbytes, ms):
    return None if ms is None else nbytes / (ms * 1e-3) / 1e9


def ratio(a, b):
    return None if a is None or b is None else a / b


def run_shape(name, shape, build, tmp, args, notes):
    m, k, n = shape
    d = tmp / name
    d.mkdir(parents=True, exist_ok=True)
    log(f"{name} (M={m}, K={k}, N={n}): writing models")
    float_onnx, nbits_onnx = d / "float.onnx", d / "nbits.onnx"
    w = weight(k, n)
    write_float(float_onnx, m, k, n, w)
    codes, scale = quantize(w)
    del w
    b, scales = pack_nbits(codes, scale)
    del codes
    write_nbits(nbits_onnx, m, k, n, b, scales)
    if not args.no_w4a8:
        write_nbits(d / "nbits_a8.onnx", m, k, n, b, scales, accuracy_level=4)

    skipped = {}
    targets = {}
    int4 = ["--quantize=int4-weights", f"--int4-group-size={GROUP}"]
    for run, extra, out in (("kiln_fp32", [], d / "f.kiln"), ("kiln_int4", int4, d / "q.kiln"),
                            ("kiln_w4a8", int4 + ["--int4-activations=int8"], d / "w4a8.kiln")):
        if run == "kiln_w4a8" and args.no_w4a8:
            continue
        log(f"{name}: kiln-compile {' '.join(extra) or '(fp32)'}")
        try:
            targets[run] = kiln_compile(build, float_onnx, out, extra)
        except (OSError, subprocess.CalledProcessError) as err:
            skipped[run] = f"kiln-compile failed ({failure(err)})"
    ort_plan, version = {}, None
    for run, model in (("ort_fp32", float_onnx), ("ort_int4", nbits_onnx),
                       ("ort_w4a8", d / "nbits_a8.onnx")):
        if run == "ort_w4a8" and args.no_w4a8:
            continue
        try:
            warmup, iterations, version = ort_iterations(model, args.threads, args.min_time)
            ort_plan[run] = (model, warmup, iterations)
        except (OSError, subprocess.CalledProcessError, ValueError, KeyError) as err:
            skipped[run] = f"ONNX Runtime failed ({failure(err)})"
    for run, why in skipped.items():
        log(f"{name}: skipping {run}: {why}")
        notes.add(f"{run}: {why}")

    times = {run: [] for run in RUNS}
    for r in range(args.rounds):
        for run in RUNS:
            if run in skipped or (run not in targets and run not in ort_plan):
                continue
            try:
                if run in targets:
                    ms = kiln_bench(build, targets[run], args.threads, args.min_time)
                else:
                    model, warmup, iterations = ort_plan[run]
                    ms, _ = ort_bench(model, args.threads, warmup, iterations)
            except (OSError, subprocess.CalledProcessError, ValueError, KeyError) as err:
                skipped[run] = f"benchmark failed ({failure(err)})"
                log(f"{name}: skipping {run}: {skipped[run]}")
                notes.add(f"{run}: {skipped[run]}")
                times[run] = []
                continue
            times[run].append(ms)
            log(f"{name}: round {r + 1}: {run} {ms:.3f} ms")

    med = {run: (float(np.median(times[run])) if times[run] and run not in skipped else None)
           for run in RUNS}
    int4_bytes = k * n // 2 + scales.nbytes
    fp32_bytes = k * n * 4
    size = {key: (p.stat().st_size if p.exists() else None)
            for key, p in (("f_kiln_bytes", d / "f.kiln"), ("q_kiln_bytes", d / "q.kiln"))}
    result = {
        "shape": name, "M": m, "K": k, "N": n, "threads": args.threads,
        "group_size": GROUP, "ort_version": version,
        **{f"{run}_ms": med[run] for run in RUNS},
        **{f"{run}_runs_ms": times[run] for run in RUNS},
        "kiln_int4_over_fp32": ratio(med["kiln_int4"], med["kiln_fp32"]),
        "kiln_int4_over_ort_int4": ratio(med["kiln_int4"], med["ort_int4"]),
        "kiln_w4a8_over_fp32": ratio(med["kiln_w4a8"], med["kiln_fp32"]),
        "kiln_w4a8_over_int4": ratio(med["kiln_w4a8"], med["kiln_int4"]),
        "kiln_w4a8_over_ort_w4a8": ratio(med["kiln_w4a8"], med["ort_w4a8"]),
        "int4_weight_bytes": int4_bytes, "fp32_weight_bytes": fp32_bytes,
        "kiln_fp32_gbps": gbps(fp32_bytes, med["kiln_fp32"]),
        "kiln_int4_gbps": gbps(int4_bytes, med["kiln_int4"]),
        "ort_fp32_gbps": gbps(fp32_bytes, med["ort_fp32"]),
        "ort_int4_gbps": gbps(int4_bytes, med["ort_int4"]),
        "kiln_w4a8_gbps": gbps(int4_bytes, med["kiln_w4a8"]),
        "ort_w4a8_gbps": gbps(int4_bytes, med["ort_w4a8"]),
        **size,
        "skipped": skipped,
    }
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=Path("build"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--min-time", type=float, default=2,
                        help="seconds of timed runs per measurement (kiln-bench --min-time; "
                             "ORT's iteration count is sized to match)")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the runs")
    parser.add_argument("--no-w4a8", action="store_true",
                        help="leave out Kiln's --int4-activations=int8 and ORT's accuracy_level=4")
    parser.add_argument("--shapes", default=",".join(SHAPES),
                        help=f"comma-separated subset of: {', '.join(SHAPES)}")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--json", action="store_true", help="print one JSON line per shape")
    args = parser.parse_args()
    names = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in names if s not in SHAPES]
    if unknown or not names:
        parser.error(f"--shapes: unknown {', '.join(unknown) or '(none given)'}; "
                     f"choose from {', '.join(SHAPES)}")
    if args.threads < 1 or args.rounds < 1:
        parser.error("--threads and --rounds must be at least 1")
    build = args.build.resolve()
    if not (build / "bin/kiln-compile").exists():
        log(f"note: {build / 'bin/kiln-compile'} does not exist: Kiln columns will be skipped")

    tmp = Path(tempfile.mkdtemp(prefix="kiln-int4-gemm-"))
    notes = set()
    results = []
    try:
        for name in names:
            results.append(run_shape(name, SHAPES[name], build, tmp, args, notes))
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    version = next((r["ort_version"] for r in results if r["ort_version"]), None)
    print(f"threads: {args.threads}, kiln-bench --min-time={args.min_time}, "
          f"medians of {args.rounds} alternated rounds, ONNX Runtime {version or '-'}, "
          f"int4 group size {GROUP}")
    print()
    print("| shape (M, K, N) | Kiln fp32 ms | Kiln int4 ms | Kiln W4A8 ms | ORT fp32 ms "
          "| ORT int4 ms | ORT W4A8 ms | Kiln int4/fp32 | Kiln int4/ORT int4 | Kiln W4A8/int4 "
          "| Kiln W4A8/ORT W4A8 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['shape']} ({r['M']}, {r['K']}, {r['N']}) | {fmt(r['kiln_fp32_ms'], '.3f')} "
              f"| {fmt(r['kiln_int4_ms'], '.3f')} | {fmt(r['kiln_w4a8_ms'], '.3f')} "
              f"| {fmt(r['ort_fp32_ms'], '.3f')} | {fmt(r['ort_int4_ms'], '.3f')} "
              f"| {fmt(r['ort_w4a8_ms'], '.3f')} | {fmt(r['kiln_int4_over_fp32'], '.2f')} "
              f"| {fmt(r['kiln_int4_over_ort_int4'], '.2f')} "
              f"| {fmt(r['kiln_w4a8_over_int4'], '.2f')} "
              f"| {fmt(r['kiln_w4a8_over_ort_w4a8'], '.2f')} |")
    print()
    print("Weight-streaming bandwidth, GB/s (fp32: K*N*4 bytes; int4: K*N/2 bytes of codes "
          "+ scales), and artifact sizes:")
    print()
    print("| shape | Kiln fp32 | Kiln int4 | Kiln W4A8 | ORT fp32 | ORT int4 | ORT W4A8 "
          "| f.kiln MB | q.kiln MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        mb = lambda v: None if v is None else v / 1e6
        print(f"| {r['shape']} | {fmt(r['kiln_fp32_gbps'], '.1f')} "
              f"| {fmt(r['kiln_int4_gbps'], '.1f')} | {fmt(r['kiln_w4a8_gbps'], '.1f')} "
              f"| {fmt(r['ort_fp32_gbps'], '.1f')} | {fmt(r['ort_int4_gbps'], '.1f')} "
              f"| {fmt(r['ort_w4a8_gbps'], '.1f')} | {fmt(mb(r['f_kiln_bytes']), '.2f')} "
              f"| {fmt(mb(r['q_kiln_bytes']), '.2f')} |")
    if notes:
        print()
        print("Skipped ('-' above):")
        for note in sorted(notes):
            print(f"  {note}")
    if args.json:
        print()
        for r in results:
            print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
