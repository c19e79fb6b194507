#!/usr/bin/python3
"""Kiln's INT8 GEMM and convolution kernels against the ISA's int8 peak.

  /usr/bin/python3 bench/int8/gemm.py --build build [--threads 1] [--min-time 3]
                                      [--cpu x86-64-v3]

Builds bench/int8/peak.cpp (independent vpdpbusd chains with AVX-512 VNNI,
vpmaddubsw + vpmaddwd otherwise) for this host with g++ and runs it: the
physical ceiling of one core. `--cpu` compiles both (Kiln's kernels and
the peak) for another x86-64 CPU than this host, e.g. x86-64-v3 for the
AVX2 kernels on an AVX-512 machine. Then, for each shape, writes an ONNX model of
the quantized form Kiln compiles (MatMulInteger / ConvInteger of uint8
activations with a zero point by constant int8 weights) and its float
equivalent (MatMul / Conv), compiles both with kiln-compile --target=cpu,
times them with kiln-bench (alternating, medians) and prints GOP/s (two
operations per multiply-add), the fraction of the peak, and the INT8/FP32
speed-up. The GEMMs' numerics are checked elsewhere (test/e2e); here only
speed.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent

# (name, kind, shape): matmul (M, K, N); conv (C, F, H, kernel, stride)
SHAPES = [
    ("gemm 256x1024x1024", "matmul", (256, 1024, 1024)),
    ("gemm 3136x64x256 (1x1 conv as GEMM)", "matmul", (3136, 64, 256)),
    ("conv 3x3 64->64 56x56", "conv", (64, 64, 56, 3, 1)),
    ("conv 3x3 256->256 14x14", "conv", (256, 256, 14, 3, 1)),
    ("conv 1x1 1024->256 14x14", "conv", (1024, 256, 14, 1, 1)),
]


def model(kind, shape, quantized, path):
    rng = np.random.default_rng(0)
    opset = [helper.make_opsetid("", 13)]
    if kind == "matmul":
        m, k, n = shape
        if quantized:
            w = rng.integers(-127, 128, size=(k, n)).astype(np.int8)
            node = helper.make_node("MatMulInteger", ["x", "w", "zx"], ["y"])
            inits = [numpy_helper.from_array(w, "w"),
                     numpy_helper.from_array(np.array(7, np.uint8), "zx")]
            x_type, y_type = TensorProto.UINT8, TensorProto.INT32
        else:
            w = rng.standard_normal((k, n)).astype(np.float32)
            node = helper.make_node("MatMul", ["x", "w"], ["y"])
            inits = [numpy_helper.from_array(w, "w")]
            x_type, y_type = TensorProto.FLOAT, TensorProto.FLOAT
        x_shape, y_shape, ops = [m, k], [m, n], 2 * m * n * k
    else:
        c, f, h, ks, s = shape
        pad = ks // 2
        oh = (h + 2 * pad - ks) // s + 1
        attrs = dict(pads=[pad] * 4, strides=[s, s])
        if quantized:
            w = rng.integers(-127, 128, size=(f, c, ks, ks)).astype(np.int8)
            node = helper.make_node("ConvInteger", ["x", "w", "zx"], ["y"], **attrs)
            inits = [numpy_helper.from_array(w, "w"),
                     numpy_helper.from_array(np.array(7, np.uint8), "zx")]
            x_type, y_type = TensorProto.UINT8, TensorProto.INT32
        else:
            w = rng.standard_normal((f, c, ks, ks)).astype(np.float32)
            node = helper.make_node("Conv", ["x", "w"], ["y"], **attrs)
            inits = [numpy_helper.from_array(w, "w")]
            x_type, y_type = TensorProto.FLOAT, TensorProto.FLOAT
        x_shape, y_shape = [1, c, h, h], [1, f, oh, oh]
        ops = 2 * f * oh * oh * c * ks * ks
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", x_type, x_shape)],
                              [helper.make_tensor_value_info("y", y_type, y_shape)],
                              initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=opset), path)
    return ops


def bench(build, artifact, threads, min_time):
    out = subprocess.run([str(build / "bin/kiln-bench"), str(artifact), "--device=cpu",
                          f"--threads={threads}", f"--min-time={min_time}", "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["latency_ms"]["median"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=Path("build"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--min-time", type=float, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", default="host",
                        help="x86-64 CPU to compile for (kiln-compile --cpu, g++ -march)")
    args = parser.parse_args()
    build = args.build.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run(["g++", "-O2", "-march=" + ("native" if args.cpu == "host" else args.cpu), str(HERE / "peak.cpp"), "-o",
                        str(tmp / "peak")], check=True)
        peak_line = subprocess.run([str(tmp / "peak")], check=True, capture_output=True,
                                   text=True).stdout.strip()
        peak = float(peak_line.split(":")[1].split()[0])
        print(f"peak (one core): {peak_line}")
        print("| kernel | INT8 ms | GOP/s | of peak | FP32 ms | INT8 speed-up |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, kind, shape in SHAPES:
            artifacts = {}
            for quantized in (True, False):
                stem = tmp / f"{kind}{'_q' if quantized else '_f'}"
                ops = model(kind, shape, quantized, stem.with_suffix(".onnx"))
                subprocess.run([str(build / "bin/kiln-compile"), str(stem.with_suffix(".onnx")),
                                "--target=cpu", f"--cpu={args.cpu}", "-o", str(stem.with_suffix(".kiln"))],
                               check=True, capture_output=True)
                artifacts[quantized] = stem.with_suffix(".kiln")
            times = {True: [], False: []}
            for _ in range(args.rounds):
                for quantized in (True, False):
                    times[quantized].append(bench(build, artifacts[quantized], args.threads,
                                                  args.min_time))
            q, f = float(np.median(times[True])), float(np.median(times[False]))
            gops = ops / (q * 1e-3) / 1e9
            print(f"| {name} | {q:.3f} | {gops:.1f} | {100 * gops / (peak * args.threads):.0f}% "
                  f"| {f:.3f} | {f / q:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
