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
Mul by scale_x * scale_w. The same for a CNN (convolutions 3x3 with bias,
3x3 depthwise with stride 2, 1x1, and 3x3 with asymmetric padding), whose
reference is DynamicQuantizeLinear + ConvInteger: the zero point known only
at run time pads the border (and the first activation, 16 x 32 x 32, is
large enough for its range to be taken in two steps). Kiln's artifact runs on
cpu and emu:gfx942, and an artifact for gfx targets alone on emu:gfx942 and
emu:gfx1100 (there the rows' minimum and maximum are one reduction, the minima
of [x; -x], which a row kernel takes whole); every
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


CW = [(rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32),
      (rng.standard_normal((16, 1, 3, 3)) * 0.3).astype(np.float32),
      (rng.standard_normal((24, 16, 1, 1)) * 0.3).astype(np.float32),
      (rng.standard_normal((8, 24, 3, 3)) * 0.2).astype(np.float32)]
CB = rng.standard_normal(16).astype(np.float32)
# (pads [top, left, bottom, right], stride, groups) per convolution
CONVS = [([1, 1, 1, 1], 1, 1), ([1, 1, 1, 1], 2, 16), ([0, 0, 0, 0], 1, 1), ([0, 1, 2, 1], 1, 1)]


def cnn_model(quantized):
    """The float CNN, or with `quantized` its dynamically quantized form."""
    nodes, inits, src = [], [], "x"
    for i, (w, (pads, stride, groups)) in enumerate(zip(CW, CONVS)):
        out = "y" if i == len(CW) - 1 else f"c{i}"
        attrs = dict(pads=pads, strides=[stride, stride], group=groups)
        if quantized:
            q, scale = per_filter(w)
            inits.extend([numpy_helper.from_array(q, f"w{i}_q"),
                          numpy_helper.from_array(scale.reshape(1, -1, 1, 1), f"w{i}_s")])
            nodes.extend([
                helper.make_node("DynamicQuantizeLinear", [src], [f"q{i}", f"s{i}", f"z{i}"]),
                helper.make_node("ConvInteger", [f"q{i}", f"w{i}_q", f"z{i}"], [f"i{i}"], **attrs),
                helper.make_node("Cast", [f"i{i}"], [f"f{i}"], to=TensorProto.FLOAT),
                helper.make_node("Mul", [f"s{i}", f"w{i}_s"], [f"k{i}"]),
                helper.make_node("Mul", [f"f{i}", f"k{i}"], [f"m{i}" if i == 0 else out])])
            if i == 0:
                inits.append(numpy_helper.from_array(CB.reshape(1, -1, 1, 1), "b0"))
                nodes.append(helper.make_node("Add", ["m0", "b0"], [out]))
        else:
            inits.append(numpy_helper.from_array(w, f"w{i}"))
            if i == 0:
                inits.append(numpy_helper.from_array(CB, "b0"))
            nodes.append(helper.make_node("Conv", [src, f"w{i}"] + (["b0"] if i == 0 else []),
                                          [out], **attrs))
        if i == 0:
            nodes.append(helper.make_node("Relu", [out], ["r0"]))
            out = "r0"
        src = out
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=OPSET)


def per_filter(w):
    """int8 per output channel of a filter [O, ...], as kiln-quantize-weights does."""
    scale = (np.abs(w).reshape(w.shape[0], -1).max(axis=1) / 127).astype(np.float32)
    q = np.clip(np.rint(w / scale.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
    return q, scale


def dynamic_quantize(a):
    """DynamicQuantizeLinear in numpy: codes (int64), zero point, scale."""
    lo, hi = np.float32(min(a.min(), 0)), np.float32(max(a.max(), 0))
    xs = np.float32((hi - lo) / np.float32(255))
    xz = np.clip(np.rint(np.float32(0) - lo / xs), 0, 255)
    return np.clip(np.rint(a / xs) + xz, 0, 255).astype(np.int64), int(xz), xs


def numpy_cnn(x):
    """The quantized CNN in numpy, integers exact (ConvInteger pads with the
    zero point)."""
    a = x
    for i, (w, (pads, stride, groups)) in enumerate(zip(CW, CONVS)):
        xq, xz, xs = dynamic_quantize(a)
        q, scale = per_filter(w)
        n, c, h, wd = xq.shape
        xp = np.full((n, c, h + pads[0] + pads[2], wd + pads[1] + pads[3]), xz, np.int64)
        xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = xq
        o, cg, kh, kw = q.shape
        ho, wo = (xp.shape[2] - kh) // stride + 1, (xp.shape[3] - kw) // stride + 1
        acc = np.zeros((n, o, ho, wo), np.int64)
        for f in range(o):
            g = f // (o // groups)
            for dy in range(kh):
                for dx in range(kw):
                    win = xp[:, g * cg:(g + 1) * cg, dy:dy + stride * ho:stride, dx:dx + stride * wo:stride]
                    acc[:, f] += ((win - xz) * q[f, :, dy, dx].astype(np.int64)[None, :, None, None]).sum(1)
        a = acc.astype(np.float32) * (xs * scale).reshape(1, -1, 1, 1)
        if i == 0:
            a = np.maximum(a + CB.reshape(1, -1, 1, 1), 0)
    return a.astype(np.float32)


def run(cmd):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"FAIL: {' '.join(str(c) for c in cmd)}\n{result.stderr.strip()[:2000]}")
    return result.returncode == 0


CASES = [  # name, float model, reference model, numpy reference, input shape
    ("mlp", float_model, reference_model, numpy_reference, (16, 64)),
    ("cnn", lambda: cnn_model(False), lambda: cnn_model(True), numpy_cnn, (1, 3, 32, 32)),
]


def check_case(name, make_float, make_reference, exact_reference, shape, bin_dir, work, vnni):
    """Compiles and runs one case; returns its number of failures."""
    onnx.save(make_float(), work / f"{name}.onnx")
    onnx.save(make_reference(), work / f"{name}_dynamic.onnx")
    if not run([bin_dir / "kiln-compile", work / f"{name}.onnx", "--target=cpu,gfx942", "--emulation",
                "--quantize=int8-dynamic", "-o", work / f"{name}_q.kiln"]):
        return 1
    if not run([bin_dir / "kiln-compile", work / f"{name}.onnx", "--target=gfx942,gfx1100",
                "--emulation", "--quantize=int8-dynamic", "-o", work / f"{name}_q_gfx.kiln"]):
        return 1
    if not run([bin_dir / "kiln-compile", work / f"{name}.onnx", "--target=cpu", "-o", work / f"{name}_f.kiln"]):
        return 1
    failures = 0
    for sample in range(3):
        x = (rng.standard_normal(shape) * (1 + sample) + 0.5 * sample).astype(np.float32)
        np.save(work / "x.npy", x)
        if not run(["node", ROOT / "bench/ort/ort_run.js", work / f"{name}_dynamic.onnx", "--input",
                    f"x={work / 'x.npy'}", "--output-dir", work / "ort"]):
            return failures + 1
        ref = np.load(work / "ort" / "y.npy")
        exact = exact_reference(x)
        # Without VNNI, ONNX Runtime's integer kernels (vpmaddubsw) saturate
        # u8 x s8 pair sums at 16 bits: the exact numpy arithmetic is the
        # reference there, and ONNX Runtime's deviation is printed. With it,
        # numpy must agree with ONNX Runtime (a check of the numpy model).
        if not vnni:
            print(f"note {name} sample {sample}: no VNNI on this host, reference numpy (ONNX Runtime's "
                  f"saturating int8 kernel differs by up to {np.abs(ref - exact).max():.3g})")
            ref = exact
        elif not np.allclose(exact, ref, rtol=0, atol=1e-6 * float(np.abs(ref).max())):
            print(f"FAIL {name} sample {sample}: the numpy model differs from ONNX Runtime by "
                  f"{np.abs(ref - exact).max():.3g}")
            failures += 1
        run([bin_dir / "kiln-run", work / f"{name}_f.kiln", "--input=x=@" + str(work / "x.npy"),
             f"--output-dir={work / 'float'}"])
        real = np.load(work / "float" / "y.npy").ravel()
        for artifact, device in [("q", "cpu"), ("q", "emu:gfx942"), ("q_gfx", "emu:gfx942"),
                                 ("q_gfx", "emu:gfx1100")]:
            out = work / f"{artifact}_{device.replace(':', '_')}"
            if not run([bin_dir / "kiln-run", work / f"{name}_{artifact}.kiln", f"--device={device}",
                        "--input=x=@" + str(work / "x.npy"), f"--output-dir={out}"]):
                failures += 1
                continue
            got = np.load(out / "y.npy")
            err = np.abs(got - ref)
            bound = 1e-6 * float(np.abs(ref).max())
            flat = got.ravel()
            cosine = float(flat @ real / (np.linalg.norm(flat) * np.linalg.norm(real)))
            ok = got.shape == ref.shape and bool((err <= bound).all()) and cosine >= 0.999
            same = float((err == 0).mean())
            where = f"{device} ({'gfx alone' if artifact == 'q_gfx' else 'cpu,gfx942'})"
            print(f"{'ok  ' if ok else 'FAIL'} {name} sample {sample} {where:28s} max |kiln - ref| = "
                  f"{err.max():.3g} (bound {bound:.3g}), exact {100 * same:.1f}%, cosine vs float {cosine:.6f}")
            failures += not ok
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    bin_dir = args.build.resolve() / "bin"
    work = Path(tempfile.mkdtemp(prefix="kiln-dynamic-"))
    vnni = host_has_vnni()
    failures = sum(check_case(*case, bin_dir, work, vnni) for case in CASES)
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
