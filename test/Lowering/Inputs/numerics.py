"""Runs kiln ops through kiln-lower-to-linalg, upstream MLIR to LLVM and
mlir-runner, and compares every result with a numpy reference computed here.

usage: numerics.py KILN_OPT FILECHECK
(FileCheck's directory is where mlir-opt and mlir-runner live.)

All cases go into one module whose @main prints each result; a case passes
when it matches its reference to printing precision. Prints one line per case
and "N cases match", exits 1 on any mismatch.
"""
import itertools
import os
import re
import subprocess
import sys

import numpy as np

rng = np.random.default_rng(0)
ETYPE = {np.float32: "f32", np.float16: "f16", np.int32: "i32", np.int64: "i64", np.int8: "i8",
         np.uint8: "ui8"}
CASES = []  # (name, kiln function text, inputs, reference)


def ttype(shape, et):
    return "tensor<" + "".join("%dx" % d for d in shape) + et + ">"


def attr(values):
    return "array<i64: %s>" % ", ".join(map(str, values)) if len(values) else "array<i64>"


def case(name, op_text, inputs, ref, result_dtype=None, consts=()):
    """`op_text` is the kiln op with placeholders: {args}; {types}, the
    functional type; {arrow}, `input-type -> result-type`; {rt}. `consts`
    are arrays that become kiln.constant ops in the function, {c0}, {c1}..."""
    et = ETYPE[(result_dtype or inputs[0].dtype).type]
    types = [ttype(a.shape, ETYPE[a.dtype.type]) for a in inputs]
    rt = ttype(ref.shape, et)
    fn = "@case%d" % len(CASES)
    params = ", ".join("%%a%d: %s" % (i, t) for i, t in enumerate(types))
    args = ", ".join("%%a%d" % i for i in range(len(inputs)))
    prelude = "".join("  %%c%d = kiln.constant %s : %s\n" % (i, dense(c), ttype(c.shape, ETYPE[c.dtype.type]))
                      for i, c in enumerate(consts))
    names = {"c%d" % i: "%%c%d" % i for i in range(len(consts))}
    text = "func.func %s(%s) -> %s {\n%s  %%0 = %s\n  return %%0 : %s\n}" % (
        fn, params, rt, prelude, op_text.format(args=args, types="(%s) -> %s" % (", ".join(types), rt),
                                                arrow="%s -> %s" % (types[0], rt), rt=rt, **names), rt)
    CASES.append((name, fn, text, inputs, ref, et, rt))


def fmt(v, et):
    if et.startswith(("i", "ui")):
        return str(int(v))
    return "%.9e" % float(v)


def dense(a):
    et = ETYPE[a.dtype.type]
    if a.ndim == 0:
        return "dense<%s>" % fmt(a.item(), et)
    rec = lambda x: "[" + ", ".join(fmt(v, et) if x.ndim == 1 else rec(v) for v in x) + "]"
    return "dense<%s>" % rec(a)


# ----------------------------------------------------------------- references

def conv_ref(x, w, b, strides, dil, pads, groups):
    sp = x.ndim - 2
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[i], pads[i + sp]) for i in range(sp)])
    F, cg = w.shape[:2]
    out = [(x.shape[2 + i] - dil[i] * (w.shape[2 + i] - 1) - 1) // strides[i] + 1 for i in range(sp)]
    y = np.zeros((x.shape[0], F, *out))
    fg = F // groups
    for k in itertools.product(*[range(s) for s in w.shape[2:]]):
        window = tuple(slice(k[i] * dil[i], k[i] * dil[i] + (out[i] - 1) * strides[i] + 1, strides[i]) for i in range(sp))
        for g in range(groups):
            xs = x[(slice(None), slice(g * cg, (g + 1) * cg)) + window]
            ws = w[(slice(g * fg, (g + 1) * fg), slice(None)) + k].astype(np.float64)
            y[:, g * fg:(g + 1) * fg] += np.einsum("nc...,fc->nf...", xs, ws)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * sp)
    return y


def pool_out(n, k, s, d, pb, pe, ceil):
    span = n + pb + pe - d * (k - 1) - 1
    o = (-(-span // s) if ceil else span // s) + 1
    return o - 1 if ceil and (o - 1) * s >= n + pb else o


def pool_ref(x, kernel, strides, dil, pads, ceil, kind, include_pad=False):
    """ONNX Runtime's MaxPool / AveragePool (opset 19) loops."""
    sp = len(kernel)
    outs = [pool_out(x.shape[2 + i], kernel[i], strides[i], dil[i], pads[i], pads[i + sp], ceil) for i in range(sp)]
    y = np.zeros(x.shape[:2] + tuple(outs))
    for o in itertools.product(*[range(v) for v in outs]):
        taps, counted = [], 1
        for i in range(sp):
            start = o[i] * strides[i] - pads[i]
            ts = range(start, min(start + kernel[i] * dil[i], x.shape[2 + i] + pads[i + sp]), dil[i])
            counted *= len(ts)
            taps.append([t for t in ts if 0 <= t < x.shape[2 + i]])
        vals = np.stack([x[(slice(None), slice(None)) + t] for t in itertools.product(*taps)], -1)
        at = (slice(None), slice(None)) + o
        y[at] = vals.max(-1) if kind == "max" else vals.sum(-1) / (counted if include_pad else vals.shape[-1])
    return y


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------- cases

def conv_case(name, x, w, b, strides, dil, pads, groups=1):
    inputs = [x, w] + ([b] if b is not None else [])
    op = "kiln.conv {args} {{strides = %s, dilations = %s, pads = %s, groups = %d}} : {types}" % (
        attr(strides), attr(dil), attr(pads), groups)
    case(name, op, inputs, conv_ref(x, w, b, strides, dil, pads, groups))


conv_case("conv 2-D, bias, asymmetric pads", randn(2, 3, 7, 6), randn(4, 3, 3, 3), randn(4), (2, 1), (1, 2), (1, 0, 2, 1))
conv_case("conv depthwise", randn(1, 4, 6, 7), randn(4, 1, 3, 3), randn(4), (1, 2), (1, 1), (1, 1, 1, 1), 4)
conv_case("conv grouped 2-D, channel multiplier", randn(1, 4, 6, 5), randn(8, 1, 3, 2), None, (2, 1), (1, 1), (1, 0, 0, 1), 4)
conv_case("conv grouped 1-D", randn(2, 4, 11), randn(6, 2, 3), randn(6), (2,), (2,), (1, 0), 2)
conv_case("conv 3-D", randn(1, 2, 4, 5, 4), randn(3, 2, 2, 2, 3), randn(3), (1, 2, 1), (1, 1, 1), (0, 1, 1, 1, 0, 1))
xi, wi = rng.integers(-5, 5, (1, 4, 5, 5)).astype(np.int32), rng.integers(-5, 5, (4, 2, 3, 3)).astype(np.int32)
bi = rng.integers(-5, 5, (4,)).astype(np.int32)
conv_case("conv grouped i32", xi, wi, bi, (1, 1), (1, 1), (1, 1, 1, 1), 2)


# Integer contractions: full 8-bit ranges, zero points as arguments (runtime
# values) and as constants (folded into the widening), exact i32 results.
def u8(*shape):
    return rng.integers(0, 256, shape).astype(np.uint8)


def i8(*shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


def wide(v):
    return np.asarray(v).astype(np.int64)


def zp_types(zps):
    return ", ".join(ttype(z.shape, ETYPE[z.dtype.type]) for z in zps)


a, b, za, zb = u8(3, 7), u8(7, 5), u8(), u8()
case("matmul_integer u8 x u8, scalar zero points", "kiln.matmul_integer %a0, %a1 lhs_zero_point(%a2) rhs_zero_point(%a3) : {types}",
     [a, b, za, zb], (wide(a) - wide(za)) @ (wide(b) - wide(zb)), np.dtype(np.int32))
a, b = i8(4, 6), i8(6, 3)
case("matmul_integer i8 x i8", "kiln.matmul_integer {args} : {types}", [a, b], wide(a) @ wide(b), np.dtype(np.int32))
a, b, za, zb = u8(3, 5), i8(5, 4), u8(3, 1), i8(4)
case("matmul_integer u8 x i8, constant per-row and per-column zero points",
     "kiln.matmul_integer {args} lhs_zero_point({c0}) rhs_zero_point({c1}) : (%s, %s, %s) -> {rt}" % (
         ttype(a.shape, "ui8"), ttype(b.shape, "i8"), zp_types([za, zb])),
     [a, b], (wide(a) - wide(za)) @ (wide(b) - wide(zb)), np.dtype(np.int32), consts=[za, zb])
a, b, zb = i8(2, 3, 4), u8(2, 4, 5), u8(5)
case("matmul_integer batched i8 x u8, per-column zero point", "kiln.matmul_integer %a0, %a1 rhs_zero_point(%a2) : {types}",
     [a, b, zb], wide(a) @ (wide(b) - wide(zb)), np.dtype(np.int32))
x, w, zx, zw = u8(1, 3, 6, 7), u8(4, 3, 3, 3), u8(), u8(4)
case("conv_integer u8, padded, strided, zero points",
     "kiln.conv_integer %%a0, %%a1 input_zero_point(%%a2) filter_zero_point({c0}) {{strides = array<i64: 2, 1>, "
     "dilations = array<i64: 1, 1>, pads = array<i64: 1, 0, 2, 1>}} : (%s, %s, %s, %s) -> {rt}" % (
         ttype(x.shape, "ui8"), ttype(w.shape, "ui8"), ttype((), "ui8"), ttype(zw.shape, "ui8")),
     [x, w, zx], conv_ref(wide(x) - wide(zx), wide(w) - wide(zw).reshape(4, 1, 1, 1), None, (2, 1), (1, 1), (1, 0, 2, 1), 1),
     np.dtype(np.int32), consts=[zw])
x, w = i8(1, 4, 5, 5), i8(4, 2, 3, 3)
case("conv_integer i8 grouped", "kiln.conv_integer {args} {{strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, "
     "pads = array<i64: 1, 1, 1, 1>, groups = 2}} : {types}",
     [x, w], conv_ref(wide(x), wide(w), None, (1, 1), (1, 1), (1, 1, 1, 1), 2), np.dtype(np.int32))
x, w, zw = i8(1, 3, 6, 6), u8(3, 1, 3, 3), u8(1)[0]
case("conv_integer depthwise i8 x u8, constant scalar zero point",
     "kiln.conv_integer {args} filter_zero_point({c0}) {{strides = array<i64: 1, 1>, dilations = array<i64: 2, 1>, "
     "pads = array<i64: 0, 1, 0, 1>, groups = 3}} : (%s, %s, %s) -> {rt}" % (
         ttype(x.shape, "i8"), ttype(w.shape, "ui8"), ttype((), "ui8")),
     [x, w], conv_ref(wide(x), wide(w) - int(zw), None, (1, 1), (2, 1), (0, 1, 0, 1), 3), np.dtype(np.int32),
     consts=[np.asarray(zw)])


def pool_case(name, x, kernel, strides, dil, pads, ceil=False, kind="max", include_pad=False):
    attrs = "kernel = %s, strides = %s, dilations = %s, pads = %s, ceil_mode = %s" % (
        attr(kernel), attr(strides), attr(dil), attr(pads), str(ceil).lower())
    if kind == "avg":
        attrs += ", count_include_pad = %s" % str(include_pad).lower()
    op = "kiln.%s_pool {args} {{%s}} : {types}" % (kind, attrs)
    case(name, op, [x], pool_ref(x.astype(np.float64), kernel, strides, dil, pads, ceil, kind, include_pad))


pool_case("max_pool ceil, asymmetric pads", randn(1, 2, 5, 7), (3, 2), (2, 2), (1, 1), (1, 0, 1, 0), ceil=True)
pool_case("max_pool dilation", randn(2, 2, 7, 6), (2, 3), (1, 2), (2, 1), (1, 0, 0, 2))
pool_case("max_pool 3-D ceil", randn(1, 2, 5, 4, 5), (2, 2, 2), (2, 1, 2), (1, 1, 1), (1, 0, 1, 1, 0, 1), ceil=True)
pool_case("avg_pool excluding pads", randn(1, 2, 5, 6), (3, 3), (2, 2), (1, 1), (1, 1, 1, 0), kind="avg")
pool_case("avg_pool including pads, ceil", randn(1, 2, 6, 7), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), ceil=True, kind="avg", include_pad=True)
pool_case("avg_pool dilation, ceil", randn(1, 2, 8, 7), (2, 3), (2, 1), (2, 2), (1, 0, 0, 2), ceil=True, kind="avg")
pool_case("avg_pool 1-D including pads", randn(2, 3, 10), (3,), (3,), (1,), (1, 1), ceil=True, kind="avg", include_pad=True)

x = randn(3, 4, 5)
xi = rng.integers(-9, 9, (3, 4, 5)).astype(np.int32)
for op, fn, inp, axes, keep in [("sum", np.sum, x, (1,), True), ("mean", np.mean, x, (0, 2), False),
                                ("max", np.max, xi, (0, 2), True), ("min", np.min, x, (2,), False),
                                ("prod", np.prod, x, (0, 1, 2), False)]:
    ref = np.asarray(fn(inp.astype(np.float64) if inp.dtype.kind == "f" else inp, axis=axes, keepdims=keep))
    case("reduce_%s %s" % (op, ETYPE[inp.dtype.type]),
         "kiln.reduce_%s {args} {{axes = %s, keepdims = %s}} : {types}" % (op, attr(axes), str(keep).lower()), [inp], ref)
xs = rng.integers(-5, 5, (6, 4)).astype(np.int32)
case("reduce_mean i32 truncates", "kiln.reduce_mean {args} {{axes = array<i64: 0>, keepdims = false}} : {types}",
     [xs], np.trunc(xs.sum(0) / 6).astype(np.int32))
ties = rng.integers(0, 3, (4, 6)).astype(np.float32)
case("argmax ties take the first", "kiln.argmax {args} {{axis = 1 : i64}} : {types}", [ties],
     np.argmax(ties, 1)[:, None], np.dtype(np.int64))
case("argmin select_last_index", "kiln.argmin {args} {{axis = 0 : i64, keepdims = false, select_last_index = true}} : {types}",
     [ties], 3 - np.argmin(ties[::-1], 0), np.dtype(np.int64))

x = randn(3, 4, 5) * 4
e = np.exp(x - x.max(1, keepdims=True))
case("softmax", "kiln.softmax {args} {{axis = 1 : i64}} : {rt}", [x], e / e.sum(1, keepdims=True))
case("log_softmax", "kiln.softmax {args} {{axis = 1 : i64, log = true}} : {rt}", [x],
     (x - x.max(1, keepdims=True)) - np.log(e.sum(1, keepdims=True)))
x, s, b = randn(2, 3, 8) * 3 + 1, randn(8), randn(3, 8)
mean = x.mean((1, 2), keepdims=True)
var = ((x - mean) ** 2).mean((1, 2), keepdims=True)
case("layer_norm", "kiln.layer_norm {args} {{axis = 1 : i64, epsilon = 1.0e-05 : f64}} : {types}", [x, s, b],
     (x - mean) / np.sqrt(var + 1e-5) * s + b)
case("rms_norm", "kiln.rms_norm {args} {{axis = 2 : i64, epsilon = 1.0e-06 : f64}} : {types}", [x, s],
     x / np.sqrt((x.astype(np.float64) ** 2).mean(2, keepdims=True) + 1e-6) * s)
# Rotary embeddings, as written out by LLaMA-style exports (rotate_half)
# and interleaved (GPT-J's rotate_every_two), cos/sin broadcast by position.
x, cs, sn = randn(2, 3, 4, 8), randn(4, 8), randn(4, 8)
case("rotary_embedding", "kiln.rotary_embedding {args} : {types}", [x, cs, sn],
     x * cs + np.concatenate([-x[..., 4:], x[..., :4]], -1) * sn)
rot2 = np.stack([-x[..., 1::2], x[..., 0::2]], -1).reshape(x.shape)
case("rotary_embedding interleaved", "kiln.rotary_embedding {args} {{interleaved = true}} : {types}",
     [x, cs, sn], x * cs + rot2 * sn)
x = randn(2, 3, 4, 5)
sc, bi, mu = randn(3), randn(3), randn(3)
va = rng.uniform(0.1, 2, 3).astype(np.float32)
c = lambda v: v.reshape(1, 3, 1, 1).astype(np.float64)
case("batch_norm", "kiln.batch_norm {args} {{epsilon = 1.0e-05 : f64}} : {types}", [x, sc, bi, mu, va],
     (x - c(mu)) / np.sqrt(c(va) + 1e-5) * c(sc) + c(bi))

x = randn(6, 7, 5)
case("transpose", "kiln.transpose {args} {{permutation = array<i64: 2, 0, 1>}} : {arrow}", [x], x.transpose(2, 0, 1))
parts = [randn(2, n, 3) for n in (1, 3, 2)]
case("concat", "kiln.concat {args} {{axis = 1 : i64}} : {types}", parts, np.concatenate(parts, 1))
case("slice, negative steps", "kiln.slice {args} {{starts = array<i64: 5, 1, 4>, ends = array<i64: -1, 7, 0>, steps = array<i64: -2, 3, -1>}} : {arrow}",
     [x], x[5::-2, 1:7:3, 4:0:-1])
x = randn(4, 5)
case("pad constant, cropping", 'kiln.pad {args} {{pads = array<i64: -1, 2, 1, -2>, value = 1.5 : f64}} : {arrow}', [x],
     np.pad(x[1:, :3], [(0, 1), (2, 0)], constant_values=1.5))
case("pad reflect", 'kiln.pad {args} {{pads = array<i64: 2, 3, 3, 4>, mode = "reflect"}} : {arrow}', [x],
     np.pad(x, [(2, 3), (3, 4)], mode="reflect"))
case("pad edge", 'kiln.pad {args} {{pads = array<i64: 1, 0, 2, 3>, mode = "edge"}} : {arrow}', [x],
     np.pad(x, [(1, 2), (0, 3)], mode="edge"))
data, idx = randn(5, 4, 3), np.array([[0, -1], [2, 4]], np.int64)
case("gather, negative indices", "kiln.gather {args} {{axis = 0 : i64}} : {types}", [data, idx], np.take(data, idx, 0))
x = randn(3, 1)
case("expand", "kiln.expand {args} : {arrow}", [x], np.broadcast_to(x, (2, 3, 4)))


# ---------------------------------------------------------------------- driver

def main(kiln_opt, filecheck):
    bindir = os.path.dirname(os.path.realpath(filecheck))
    libdir = os.path.join(os.path.dirname(bindir), "lib")
    lines = [c[2] for c in CASES] + ["func.func @main() {"]
    printers = set()
    for n, (name, fn, text, inputs, ref, et, rt) in enumerate(CASES):
        types = [ttype(a.shape, ETYPE[a.dtype.type]) for a in inputs]
        for i, a in enumerate(inputs):
            lines.append("  %%in%d_%d = arith.constant %s : %s" % (n, i, dense(a), types[i]))
        args = ", ".join("%%in%d_%d" % (n, i) for i in range(len(inputs)))
        mt = rt.replace("tensor", "memref")
        printer = "printMemref" + et.upper()
        printers.add((printer, et))
        lines += ["  %%r%d = call %s(%s) : (%s) -> %s" % (n, fn, args, ", ".join(types), rt),
                  "  %%m%d = bufferization.to_buffer %%r%d : %s to %s" % (n, n, rt, mt),
                  "  %%u%d = memref.cast %%m%d : %s to memref<*x%s>" % (n, n, mt, et),
                  "  call @%s(%%u%d) : (memref<*x%s>) -> ()" % (printer, n, et)]
    lines.append("  return\n}")
    for printer, et in sorted(printers):
        lines.append("func.func private @%s(memref<*x%s>) attributes {llvm.emit_c_interface}" % (printer, et))

    def run(cmd, text):
        p = subprocess.run(cmd, input=text, capture_output=True, text=True)
        if p.returncode:
            sys.exit("%s failed:\n%s" % (cmd[0], p.stderr[:4000]))
        return p.stdout

    linalg = run([kiln_opt, "--kiln-lower-to-linalg"], "\n".join(lines))
    llvm = run([os.path.join(bindir, "mlir-opt"),
                "--one-shot-bufferize=bufferize-function-boundaries", "--convert-linalg-to-loops",
                "--expand-strided-metadata", "--lower-affine", "--convert-scf-to-cf",
                "--finalize-memref-to-llvm", "--convert-math-to-llvm", "--convert-arith-to-llvm",
                "--convert-index-to-llvm", "--convert-cf-to-llvm", "--convert-func-to-llvm",
                "--reconcile-unrealized-casts"], linalg)
    libs = ",".join(os.path.join(libdir, l) for l in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    out = run([os.path.join(bindir, "mlir-runner"), "-e", "main", "-entry-point-result=void", "-shared-libs=" + libs], llvm)

    results = out.split("Unranked Memref")[1:]
    failures = 0
    for (name, fn, text, inputs, ref, et, rt), printed in zip(CASES, results):
        data = printed[printed.index("data =") + len("data ="):]
        got = np.array([float(v) for v in re.findall(r"-?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)", data)])
        ref = np.asarray(ref, np.float64)
        if et.startswith("i"):
            ok = got.size == ref.size and np.array_equal(got.reshape(ref.shape), ref)
        else:
            ok = got.size == ref.size and np.allclose(got.reshape(ref.shape), ref, rtol=1e-4, atol=1e-5)
        failures += not ok
        print("%s %s" % ("ok" if ok else "MISMATCH", name))
        if not ok:
            print("  got      %s\n  expected %s" % (got.ravel()[:12], ref.ravel()[:12]))
    if len(results) != len(CASES) or failures:
        sys.exit("%d of %d cases differ" % (failures + len(CASES) - len(results), len(CASES)))
    print("%d cases match" % len(CASES))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
