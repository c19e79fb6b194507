#!/usr/bin/python3
"""ONNX Runtime's quantized operators (com.microsoft, the QOperator format its
quantizer writes) compiled by Kiln against ONNX Runtime running the same
models with its own kernels, per element.

  /usr/bin/python3 test/e2e/run_qlinear_vs_ort.py --build BUILD [--devices cpu,emu:gfx942] [--keep]

Three models, written here with onnx.helper (weights and parameters from a
seeded generator):

- ops: every operator alone on full-range 8-bit inputs (uint8 and int8):
  QLinearAdd and QLinearMul (same shape and broadcast), QLinearSigmoid,
  QLinearLeakyRelu, QLinearAveragePool (padded, strided, ceil_mode,
  channels_last), QLinearGlobalAveragePool (NCHW and channels_last),
  QLinearConcat, QLinearSoftmax (opset 13 and 11 semantics); each output
  must be within one quantization step of ONNX Runtime's in every element
  (ONNX Runtime computes these in float through lookup tables or
  fixed-point scales, so a value that lands on a rounding boundary may go
  either way), and the share of exact elements is printed.
- reduce_mean: QLinearReduceMean, which ONNX Runtime declares but has no
  kernel for, against numpy (the mean of the dequantized values, quantized
  with rounding half to even), within one step.
- cnn: a float image through QuantizeLinear, QLinearConv (per-channel
  weights, int32 bias), QLinearLeakyRelu, a residual QLinearAdd, a swish
  (QLinearSigmoid, QLinearMul), QLinearAveragePool, uint8 MaxPool,
  QLinearConcat, QLinearGlobalAveragePool, QGemm (per-column weights),
  QLinearSoftmax and DequantizeLinear: the logits must be within two
  quantization steps of ONNX Runtime's (a one-step difference early in the
  chain may move a later value by one more), the probabilities within one
  step plus what the two logits' difference makes of them through a float64
  softmax.
- mlp: DynamicQuantizeMatMul, MatMulIntegerToFloat and QGemm with a float
  output (ONNX Runtime's dynamic quantizer with its graph optimizations):
  the integer products are exact, so every element must be within 1e-5 of
  the output's largest magnitude.

Weights stay within [-64, 64] so that ONNX Runtime's u8 x s8 kernels are
exact on hosts without VNNI as well (vpmaddubsw's 16-bit pair sums would
saturate beyond). Kiln runs each artifact on every --devices entry (cpu and
the emulated gfx targets by default), and the integer outputs of cpu and the
emulated targets must be identical. Exit status 1 on any failure.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
OPSETS = [helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)]
MS = "com.microsoft"
rng = np.random.default_rng(5)


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


class Graph:
    """A graph under construction: nodes, initializers, and helpers that
    name quantization parameters."""

    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, value, name=None):
        self.count += 1
        name = name or f"param{self.count}"
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def qparams(self, scale, zero, dtype=np.uint8):
        return self.const(np.float32(scale)), self.const(dtype(zero))

    def node(self, op, inputs, outputs, domain="", **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs, domain=domain, **attrs))
        return outputs[0]

    def model(self, inputs, outputs, name):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        return helper.make_model(graph, opset_imports=OPSETS)


def tensor(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def ops_model():
    """Every operator alone; outputs name the operator."""
    g = Graph()
    u, i = TensorProto.UINT8, TensorProto.INT8
    sa, za = g.qparams(0.04, 118)
    sb, zb = g.qparams(0.07, 9)
    sy, zy = g.qparams(0.1, 90)
    si, zi = g.qparams(0.03, -7, np.int8)
    sp, zp = g.qparams(1 / 255, 0)        # sigmoid / softmax range
    sl, zl = g.qparams(0.02, 40)
    outs = []

    def out(name, dtype, shape, op, inputs, domain=MS, **attrs):
        g.node(op, inputs, [name], domain=domain, **attrs)
        outs.append(tensor(name, dtype, shape))

    out("add", u, [1, 8, 12, 12], "QLinearAdd", ["a", sa, za, "b", sb, zb, sy, zy])
    out("add_broadcast", u, [1, 8, 12, 12], "QLinearAdd", ["a", sa, za, "v", sb, zb, sy, zy])
    out("mul", u, [1, 8, 12, 12], "QLinearMul", ["a", sa, za, "b", sb, zb, sy, zy])
    out("mul_int8", i, [1, 8, 12, 12], "QLinearMul", ["x", si, zi, "x", si, zi, si, zi])
    out("sigmoid", u, [1, 8, 12, 12], "QLinearSigmoid", ["a", sa, za, sp, zp])
    out("sigmoid_int8", i, [1, 8, 12, 12], "QLinearSigmoid", ["x", si, zi, si, zi])
    out("leaky_relu", u, [1, 8, 12, 12], "QLinearLeakyRelu", ["a", sa, za, sl, zl], alpha=0.1)
    out("avg_pool", u, [1, 8, 6, 6], "QLinearAveragePool", ["a", sa, za, sl, zl],
        kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    out("avg_pool_ceil", u, [1, 8, 6, 6], "QLinearAveragePool", ["a", sa, za, sa, za],
        kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1, count_include_pad=1)
    out("avg_pool_nhwc", u, [1, 6, 6, 12], "QLinearAveragePool", ["a", sa, za, sa, za],
        kernel_shape=[2, 2], strides=[2, 2], channels_last=1)
    out("global_avg_pool", u, [1, 8, 1, 1], "QLinearGlobalAveragePool", ["a", sa, za, sl, zl])
    out("global_avg_pool_nhwc", i, [1, 1, 1, 12], "QLinearGlobalAveragePool", ["x", si, zi, si, zi],
        channels_last=1)
    out("concat", u, [1, 16, 12, 12], "QLinearConcat", [sy, zy, "a", sa, za, "b", sb, zb], axis=1)
    out("softmax", u, [1, 8, 12, 12], "QLinearSoftmax", ["a", sa, za, sp, zp], axis=-1, opset=13)
    out("softmax_2d", u, [6, 32], "QLinearSoftmax", ["m", sa, za, sp, zp], axis=1, opset=11)
    inputs = [tensor("a", u, [1, 8, 12, 12]), tensor("b", u, [1, 8, 12, 12]),
              tensor("v", u, [8, 1, 1]), tensor("x", i, [1, 8, 12, 12]), tensor("m", u, [6, 32])]
    return g.model(inputs, outs, "qlinear_ops"), outs


def weights(shape):
    return rng.integers(-64, 65, size=shape).astype(np.int8)


def cnn_model():
    g = Graph()
    u = TensorProto.UINT8
    sx, zx = g.qparams(0.02, 128)
    g.node("QuantizeLinear", ["image", sx, zx], ["xq"])

    def conv(x, sx_, zx_, cin, cout, out, scale, zero):
        w = g.const(weights((cout, cin, 3, 3)))
        ws = g.const((rng.uniform(0.5, 1.5, cout) * 0.004).astype(np.float32))
        wz = g.const(np.zeros(cout, np.int8))
        bias = g.const(rng.integers(-2000, 2000, cout).astype(np.int32))
        so, zo = g.qparams(scale, zero)
        g.node("QLinearConv", [x, sx_, zx_, w, ws, wz, so, zo, bias], [out], pads=[1, 1, 1, 1])
        return so, zo

    s1, z1 = conv("xq", sx, zx, 3, 8, "c1", 0.05, 110)
    sl, zl = g.qparams(0.04, 30)
    g.node("QLinearLeakyRelu", ["c1", s1, z1, sl, zl], ["l1"], domain=MS, alpha=0.1)
    s2, z2 = conv("l1", sl, zl, 8, 8, "c2", 0.06, 100)
    sa, za = g.qparams(0.08, 60)
    g.node("QLinearAdd", ["c2", s2, z2, "l1", sl, zl, sa, za], ["res"], domain=MS)
    ss, zs = g.qparams(1 / 255, 0)
    g.node("QLinearSigmoid", ["res", sa, za, ss, zs], ["sig"], domain=MS)
    sw, zw = g.qparams(0.06, 40)
    g.node("QLinearMul", ["res", sa, za, "sig", ss, zs, sw, zw], ["swish"], domain=MS)
    g.node("QLinearAveragePool", ["swish", sw, zw, sw, zw], ["pool"], domain=MS,
           kernel_shape=[2, 2], strides=[2, 2])
    g.node("MaxPool", ["pool"], ["maxpool"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    s3, z3 = conv("pool", sw, zw, 8, 8, "c3", 0.05, 120)
    sc, zc = g.qparams(0.07, 50)
    g.node("QLinearConcat", [sc, zc, "maxpool", sw, zw, "c3", s3, z3], ["cat"], domain=MS, axis=1)
    sg, zg = g.qparams(0.03, 20)
    g.node("QLinearGlobalAveragePool", ["cat", sc, zc, sg, zg], ["gap"], domain=MS)
    g.node("Flatten", ["gap"], ["flat"])
    wf = g.const(weights((10, 16)))
    wfs = g.const((rng.uniform(0.5, 1.5, 10) * 0.01).astype(np.float32))
    wfz = g.const(np.zeros(10, np.int8))
    bf = g.const(rng.integers(-3000, 3000, 10).astype(np.int32))
    slog, zlog = g.qparams(0.05, 128)
    g.node("QGemm", ["flat", sg, zg, wf, wfs, wfz, bf, slog, zlog], ["logits_q"], domain=MS, transB=1)
    sp, zp = g.qparams(1 / 255, 0)
    g.node("QLinearSoftmax", ["logits_q", slog, zlog, sp, zp], ["probs_q"], domain=MS, axis=-1, opset=13)
    g.node("DequantizeLinear", ["logits_q", slog, zlog], ["logits"])
    g.node("DequantizeLinear", ["probs_q", sp, zp], ["probs"])
    f = TensorProto.FLOAT
    model = g.model([tensor("image", f, [1, 3, 16, 16])],
                    [tensor("logits", f, [1, 10]), tensor("probs", f, [1, 10])], "qlinear_cnn")
    return model, {"logits": 0.05, "probs": 1 / 255}


def mlp_model():
    g = Graph()
    w1 = g.const(weights((32, 24)))
    s1 = g.const((rng.uniform(0.5, 1.5, 24) * 0.01).astype(np.float32))
    b1 = g.const(rng.standard_normal(24).astype(np.float32))
    g.node("DynamicQuantizeMatMul", ["x", w1, s1, "", b1], ["h"], domain=MS)
    g.node("Relu", ["h"], ["r"])
    g.node("DynamicQuantizeLinear", ["r"], ["rq", "rs", "rz"])
    w2 = g.const(weights((24, 16)))
    s2 = g.const(np.float32(0.02))
    b2 = g.const(rng.standard_normal(16).astype(np.float32))
    g.node("MatMulIntegerToFloat", ["rq", w2, "rs", s2, "rz", "", b2], ["y"], domain=MS)
    w3 = g.const(weights((12, 24)))
    s3 = g.const((rng.uniform(0.5, 1.5, 12) * 0.01).astype(np.float32))
    z3 = g.const(np.zeros(12, np.int8))
    c3 = g.const(rng.integers(-500, 500, 12).astype(np.int32))
    g.node("QGemm", ["rq", "rs", "rz", w3, s3, z3, c3], ["z"], domain=MS, transB=1, alpha=0.5)
    f = TensorProto.FLOAT
    return g.model([tensor("x", f, [4, 32])], [tensor("y", f, [4, 16]), tensor("z", f, [4, 12])],
                   "qlinear_mlp")


def softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run(cmd):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"FAIL: {' '.join(str(c) for c in cmd)}\n{result.stderr.strip()[:3000]}")
    return result.returncode == 0


class Check:
    def __init__(self, args, work):
        self.bin = args.build.resolve() / "bin"
        self.devices = args.devices.split(",")
        self.work = work
        self.failures = 0

    def run_both(self, name, model, inputs):
        """Compiles `model` for every device's target, runs it there and in
        ONNX Runtime on `inputs`; returns {device: outputs}, ONNX Runtime's
        outputs, or None after a failure."""
        d = self.work / name
        d.mkdir()
        onnx.save(model, d / "m.onnx")
        targets = sorted({"cpu" if dev == "cpu" else dev.split(":")[1] for dev in self.devices})
        emulated = ["--emulation"] if any(t != "cpu" for t in targets) else []
        if not run([self.bin / "kiln-compile", d / "m.onnx", f"--target={','.join(targets)}", *emulated,
                    "-o", d / "m.kiln"]):
            self.failures += 1
            return None, None
        kiln_in, ort_in = [], []
        for key, value in inputs.items():
            path = d / f"{sanitize(key)}.npy"
            np.save(path, value)
            kiln_in.append(f"--input={key}=@{path}")
            ort_in += ["--input", f"{key}={path}"]
        if not run(["node", ROOT / "bench/ort/ort_run.js", d / "m.onnx", "--output-dir", d / "ort", *ort_in]):
            self.failures += 1
            return None, None
        names = [o.name for o in model.graph.output]
        ref = {n: np.load(d / "ort" / f"{sanitize(n)}.npy") for n in names}
        got = {}
        for dev in self.devices:
            out = d / sanitize(dev)
            if not run([self.bin / "kiln-run", d / "m.kiln", f"--device={dev}", *kiln_in,
                        f"--output-dir={out}"]):
                self.failures += 1
                continue
            got[dev] = {n: np.load(out / f"{sanitize(n)}.npy") for n in names}
        return got, ref

    def report(self, ok, line):
        print(f"{'ok  ' if ok else 'FAIL'} {line}")
        self.failures += not ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--devices", default="cpu,emu:gfx942,emu:gfx1100")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kiln-qlinear-"))
    check = Check(args, work)

    # Every operator alone, within one quantization step.
    model, outs = ops_model()
    inputs = {"a": rng.integers(0, 256, (1, 8, 12, 12)).astype(np.uint8),
              "b": rng.integers(0, 256, (1, 8, 12, 12)).astype(np.uint8),
              "v": rng.integers(0, 256, (8, 1, 1)).astype(np.uint8),
              "x": rng.integers(-128, 128, (1, 8, 12, 12)).astype(np.int8),
              "m": rng.integers(0, 256, (6, 32)).astype(np.uint8)}
    got, ref = check.run_both("ops", model, inputs)
    for dev, outputs in (got or {}).items():
        for name, value in outputs.items():
            r = ref[name]
            if value.shape != r.shape or value.dtype != r.dtype:
                check.report(False, f"ops {dev:12s} {name}: {value.dtype}{list(value.shape)} vs "
                                    f"ONNX Runtime's {r.dtype}{list(r.shape)}")
                continue
            diff = np.abs(value.astype(np.int32) - r.astype(np.int32))
            check.report(int(diff.max()) <= 1,
                         f"ops {dev:12s} {name:22s} max |kiln - ort| = {int(diff.max())} step(s), "
                         f"exact {100 * float((diff == 0).mean()):.1f}% of {diff.size}")
    # The integer paths of the emulated gfx targets are cpu's, bit for bit.
    if got and "cpu" in got:
        for dev in got:
            if dev != "cpu":
                same = all(np.array_equal(got[dev][n], got["cpu"][n]) for n in got["cpu"])
                check.report(same, f"ops {dev} identical to cpu in every output")

    # The QOperator CNN.
    model, steps = cnn_model()
    for sample in range(3):
        image = (rng.standard_normal((1, 3, 16, 16)) * (0.8 + 0.3 * sample)).astype(np.float32)
        got, ref = check.run_both(f"cnn{sample}", model, {"image": image})
        for dev, outputs in (got or {}).items():
            # Logits within two steps; the probabilities within one step
            # plus what the logits' own difference makes of them through a
            # softmax (numpy's, in float64).
            carried = np.abs(softmax(outputs["logits"]) - softmax(ref["logits"])).max() / steps["probs"]
            for name, value in outputs.items():
                diff = np.abs(value.astype(np.float64) - ref[name])
                worst = float(diff.max()) / steps[name]
                bound = 2 if name == "logits" else 1 + carried
                check.report(value.shape == ref[name].shape and worst <= bound + 1e-3,
                             f"cnn sample {sample} {dev:12s} {name:7s} max |kiln - ort| = "
                             f"{worst:.2f} step(s) (bound {bound:.2f}), exact "
                             f"{100 * float((diff == 0).mean()):.0f}%")
            if dev != "cpu" and "cpu" in got:
                same = all(np.array_equal(outputs[n], got["cpu"][n]) for n in outputs)
                check.report(same, f"cnn sample {sample} {dev} identical to cpu")

    # QLinearReduceMean has a schema in ONNX Runtime but no kernel: numpy's
    # mean of the dequantized values, quantized (round half to even).
    g = Graph()
    sx, zx = g.qparams(0.05, 100)
    sy, zy = g.qparams(0.02, 30)
    g.node("QLinearReduceMean", ["x", sx, zx, sy, zy], ["y"], domain=MS, axes=[2, 3], keepdims=1)
    model = g.model([tensor("x", TensorProto.UINT8, [1, 4, 6, 6])],
                    [tensor("y", TensorProto.UINT8, [1, 4, 1, 1])], "qlinear_reduce_mean")
    x = rng.integers(0, 256, (1, 4, 6, 6)).astype(np.uint8)
    d = work / "reduce_mean"
    d.mkdir()
    onnx.save(model, d / "m.onnx")
    np.save(d / "x.npy", x)
    mean = ((x.astype(np.float64) - 100) * np.float32(0.05)).mean(axis=(2, 3), keepdims=True)
    ref = np.clip(np.rint(mean / np.float32(0.02)) + 30, 0, 255)
    for dev in check.devices:
        target = "cpu" if dev == "cpu" else dev.split(":")[1]
        emulated = [] if dev == "cpu" else ["--emulation"]
        if not (run([check.bin / "kiln-compile", d / "m.onnx", f"--target={target}", *emulated, "-o",
                     d / f"{sanitize(dev)}.kiln"])
                and run([check.bin / "kiln-run", d / f"{sanitize(dev)}.kiln", f"--device={dev}",
                         f"--input=x=@{d / 'x.npy'}", f"--output-dir={d / sanitize(dev)}"])):
            check.failures += 1
            continue
        got = np.load(d / sanitize(dev) / "y.npy").astype(np.int32)
        diff = int(np.abs(got - ref).max())
        check.report(diff <= 1, f"reduce_mean {dev:12s} max |kiln - numpy| = {diff} step(s)")

    # Dynamic quantization's fused forms.
    model = mlp_model()
    x = (rng.standard_normal((4, 32)) * 2).astype(np.float32)
    got, ref = check.run_both("mlp", model, {"x": x})
    for dev, outputs in (got or {}).items():
        for name, value in outputs.items():
            r = ref[name].astype(np.float64)
            bound = 1e-5 * float(np.abs(r).max())
            err = float(np.abs(value - r).max())
            check.report(value.shape == r.shape and err <= bound,
                         f"mlp {dev:12s} {name}: max |kiln - ort| = {err:.3g} (bound {bound:.3g})")

    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work)
    print(f"{check.failures} failure(s)")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
