#!/usr/bin/python3
"""kiln-compile --quantize=int8-dynamic against ONNX Runtime running the
equivalent dynamically quantized model, per element.

  /usr/bin/python3 test/e2e/run_dynamic_quantized_vs_ort.py --build BUILD [--keep]

The float model: a MatMul (constant [64, 96] weight), ReLU, a Gemm with a
transposed [40, 96] weight and a bias, and a batched MatMul ([2, 8, 40] by a
constant [40, 24]). The reference model is what ONNX Runtime's dynamic
quantizer makes of it, written here with onnx.helper: each activation goes
through DynamicQuantizeLinear (uint8, range of the run), each weight is int8
per output channel as Kiln quantizes it (max |w| / 127, rounded half to even
into [-127, 127]), MatMulInteger with the activation's zero point, Cast,
Mul by scale_x * scale_w. Kiln's artifact runs on cpu and emu:gfx942; every
output element must equal ONNX Runtime's within 1e-6 of the output's largest
magnitude (the integer accumulators are exact; only the float scaling may
round differently), and the quantized outputs must stay close to the float
model (cosine >= 0.999). Exit status 1 otherwise.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from host import host_has_vnni

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
rng = np.random.default_rng(11)
W1 = (rng.standard_normal((64, 96)) * 0.2).astype(np.float32)
W2 = (rng.standard_normal((40, 96)) * 0.2).astype(np.float32)  # Gemm transB
B2 = rng.standard_normal(40).astype(np.float32)
W3 = (rng.standard_normal((40, 24)) * 0.3).astype(np.float32)
OPSET = [helper.make_opsetid("", 13)]


def float_model():
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["g"], transB=1),
             helper.make_node("Reshape", ["g", "shape"], ["g3"]),
             helper.make_node("MatMul", ["g3", "w3"], ["y"])]
    inits = [numpy_helper.from_array(W1, "w1"), numpy_helper.from_array(W2, "w2"),
             numpy_helper.from_array(B2, "b2"), numpy_helper.from_array(W3, "w3"),
             numpy_helper.from_array(np.array([2, 8, 40], np.int64), "shape")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 24])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=OPSET)


def per_column(w):
    """int8 per column of a [K, N] weight, as kiln-quantize-weights does."""
    scale = (np.abs(w).max(axis=0) / 127).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def reference_model():
    nodes, inits = [], [numpy_helper.from_array(B2, "b2"),
                        numpy_helper.from_array(np.array([2, 8, 40], np.int64), "shape")]

    def quantized_matmul(x, w, out, tag):
        q, scale = per_column(w)
        inits.extend([numpy_helper.from_array(q, f"{tag}_q"), numpy_helper.from_array(scale, f"{tag}_s")])
        nodes.extend([
            helper.make_node("DynamicQuantizeLinear", [x], [f"{tag}_xq", f"{tag}_xs", f"{tag}_xz"]),
            helper.make_node("MatMulInteger", [f"{tag}_xq", f"{tag}_q", f"{tag}_xz"], [f"{tag}_acc"]),
            helper.make_node("Cast", [f"{tag}_acc"], [f"{tag}_accf"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{tag}_xs", f"{tag}_s"], [f"{tag}_scale"]),
            helper.make_node("Mul", [f"{tag}_accf", f"{tag}_scale"], [out])])

    quantized_matmul("x", W1, "h", "mm1")
    nodes.append(helper.make_node("Relu", ["h"], ["r"]))
    quantized_matmul("r", W2.T.copy(), "gm", "gemm")
    nodes.append(helper.make_node("Add", ["gm", "b2"], ["g"]))
    nodes.append(helper.make_node("Reshape", ["g", "shape"], ["g3"]))
    quantized_matmul("g3", W3, "y", "mm3")
    graph = helper.make_graph(nodes, "mlp_dynamic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 24])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=OPSET)


def numpy_reference(x):
    """The reference model's arithmetic in numpy (float32, integers exact):
    DynamicQuantizeLinear (scale (max - min) / 255 over the range with 0,
    zero point and codes rounded half to even and saturated), MatMulInteger
    in int64, Cast, Mul."""
    def quantized_matmul(a, w):
        q, scale = per_column(w)
        lo, hi = np.float32(min(a.min(), 0)), np.float32(max(a.max(), 0))
        xs = np.float32((hi - lo) / np.float32(255))
        xz = np.clip(np.rint(np.float32(0) - lo / xs), 0, 255)
        xq = np.clip(np.rint(a / xs) + xz, 0, 255).astype(np.int64)
        acc = (xq - int(xz)) @ q.astype(np.int64)
        return acc.astype(np.float32) * (xs * scale)
    h = np.maximum(quantized_matmul(x, W1), 0)
    g = (quantized_matmul(h, W2.T.copy()) + B2).reshape(2, 8, 40)
    return quantized_matmul(g, W3).astype(np.float32)


def run(cmd):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"FAIL: {' '.join(str(c) for c in cmd)}\n{result.stderr.strip()[:2000]}")
    return result.returncode == 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    bin_dir = args.build.resolve() / "bin"
    work = Path(tempfile.mkdtemp(prefix="kiln-dynamic-"))
    onnx.save(float_model(), work / "float.onnx")
    onnx.save(reference_model(), work / "dynamic.onnx")
    failures = 0
    vnni = host_has_vnni()
    if not run([bin_dir / "kiln-compile", work / "float.onnx", "--target=cpu,gfx942", "--emulation",
                "--quantize=int8-dynamic", "-o", work / "q.kiln"]):
        return 1
    if not run([bin_dir / "kiln-compile", work / "float.onnx", "--target=cpu", "-o", work / "f.kiln"]):
        return 1
    for sample in range(3):
        x = (rng.standard_normal((16, 64)) * (1 + sample) + 0.5 * sample).astype(np.float32)
        np.save(work / "x.npy", x)
        if not run(["node", ROOT / "bench/ort/ort_run.js", work / "dynamic.onnx", "--input",
                    f"x={work / 'x.npy'}", "--output-dir", work / "ort"]):
            return 1
        ref = np.load(work / "ort" / "y.npy")
        # Without VNNI, ONNX Runtime's MatMulInteger (vpmaddubsw) saturates
        # u8 x s8 pair sums at 16 bits: the exact numpy arithmetic is the
        # reference there, and ONNX Runtime's deviation is printed.
        if not vnni:
            exact = numpy_reference(x)
            print(f"note sample {sample}: no VNNI on this host, reference numpy (ONNX Runtime's "
                  f"saturating int8 kernel differs by up to {np.abs(ref - exact).max():.3g})")
            ref = exact
        run([bin_dir / "kiln-run", work / "f.kiln", "--input=x=@" + str(work / "x.npy"),
             f"--output-dir={work / 'float'}"])
        real = np.load(work / "float" / "y.npy").ravel()
        for device in ["cpu", "emu:gfx942"]:
            out = work / device.replace(":", "_")
            if not run([bin_dir / "kiln-run", work / "q.kiln", f"--device={device}",
                        "--input=x=@" + str(work / "x.npy"), f"--output-dir={out}"]):
                failures += 1
                continue
            got = np.load(out / "y.npy")
            err = np.abs(got - ref)
            bound = 1e-6 * float(np.abs(ref).max())
            flat = got.ravel()
            cosine = float(flat @ real / (np.linalg.norm(flat) * np.linalg.norm(real)))
            ok = got.shape == ref.shape and bool((err <= bound).all()) and cosine >= 0.999
            exact = float((err == 0).mean())
            print(f"{'ok  ' if ok else 'FAIL'} sample {sample} {device:11s} max |kiln - ref| = {err.max():.3g} "
                  f"(bound {bound:.3g}), exact {100 * exact:.1f}%, cosine vs float {cosine:.6f}")
            failures += not ok
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
