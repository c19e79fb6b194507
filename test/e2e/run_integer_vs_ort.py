#!/usr/bin/python3
"""ONNX's integer GEMMs (MatMulInteger, ConvInteger) compiled for the CPU and
run, against ONNX Runtime and an exact numpy reference.

  /usr/bin/python3 test/e2e/run_integer_vs_ort.py --build BUILD [--keep] [--cpu=x86-64-v3|x86-64-v4]

Each case is a one-node model built with onnx.helper: uint8 x uint8, int8 x
int8 and uint8 x int8 operands over their full ranges (0..255, -128..127),
with and without zero points (graph inputs, i.e. run-time values, or
initializers, i.e. constants; scalars, per-row / per-column / per-channel
vectors), batched and broadcast products, 1-D operands, and convolutions with
padding (explicit and auto_pad), strides, dilations and groups. Every int32
output must equal the numpy reference (computed in int64) exactly, and ONNX
Runtime's output exactly where ONNX Runtime runs the model (it rejects some
forms the importer accepts: per-row a_zero_point, per-column b_zero_point of a
batched B, per-channel w_zero_point, dilations with SAME auto_pad; those are
reported and checked against numpy only). Exit status 1 on
any mismatch or kiln failure, or when fewer than MIN_ORT_COMPARED outputs were
compared with ONNX Runtime (the test must not pass vacuously). `--cpu` picks
the kernels: host, x86-64-v3 (AVX2: vpmaddwd on ymm), x86-64-v4 (AVX-512
without VNNI: vpmaddwd on zmm; exit status 77, skipped, on a host without
AVX-512).
"""

import argparse
import itertools
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from host import host_runs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MIN_ORT_COMPARED = 20
ONNX_TYPE = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.int32: TensorProto.INT32}
rng = np.random.RandomState(7)


def full_range(dtype, *shape):
    info = np.iinfo(dtype)
    return rng.randint(info.min, info.max + 1, size=shape).astype(dtype)


# ------------------------------------------------------------------ references

def matmul_integer_ref(a, b, za=None, zb=None):
    a, b = a.astype(np.int64), b.astype(np.int64)
    if za is not None:
        za = za.astype(np.int64)
        # A 1-D a_zero_point of A's row count is one per row.
        a = a - (za.reshape(-1, 1) if za.ndim == 1 and za.size > 1 else za)
    if zb is not None:
        b = b - zb.astype(np.int64)
    return np.matmul(a, b).astype(np.int32)


def conv_integer_ref(x, w, zx, zw, strides, dilations, pads, groups):
    x, w = x.astype(np.int64), w.astype(np.int64)
    if zx is not None:
        x = x - zx.astype(np.int64).reshape(())
    if zw is not None:
        zw = zw.astype(np.int64)
        w = w - (zw.reshape((-1,) + (1,) * (w.ndim - 1)) if zw.size > 1 else zw.reshape(()))
    sp = x.ndim - 2
    # Zero padding after the subtraction: padding with the zero point.
    x = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + sp]) for i in range(sp)])
    f, cg = w.shape[:2]
    out = [(x.shape[2 + i] - dilations[i] * (w.shape[2 + i] - 1) - 1) // strides[i] + 1 for i in range(sp)]
    y = np.zeros((x.shape[0], f, *out), np.int64)
    fg = f // groups
    for k in itertools.product(*[range(s) for s in w.shape[2:]]):
        window = tuple(slice(k[i] * dilations[i], k[i] * dilations[i] + (out[i] - 1) * strides[i] + 1, strides[i])
                       for i in range(sp))
        for g in range(groups):
            xs = x[(slice(None), slice(g * cg, (g + 1) * cg)) + window]
            ws = w[(slice(g * fg, (g + 1) * fg), slice(None)) + k]
            y[:, g * fg:(g + 1) * fg] += np.einsum("nc...,fc->nf...", xs, ws)
    return y.astype(np.int32)


def same_pads(in_shape, kernel, strides, dilations, upper):
    pads_begin, pads_end = [], []
    for n, k, s, d in zip(in_shape, kernel, strides, dilations):
        out = -(-n // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
        small, large = total // 2, total - total // 2
        pads_begin.append(small if upper else large)
        pads_end.append(large if upper else small)
    return pads_begin + pads_end


# ----------------------------------------------------------------------- cases

CASES = []  # (name, model, feeds {name: array}, reference)


def add_case(name, op, inputs, attrs, reference):
    """`inputs`: (name, array, is_initializer) per ONNX input, in order; None
    for an omitted optional input."""
    names, graph_inputs, inits, feeds = [], [], [], {}
    for entry in inputs:
        if entry is None:
            names.append("")
            continue
        iname, value, is_init = entry
        names.append(iname)
        if is_init:
            inits.append(numpy_helper.from_array(value, iname))
        else:
            graph_inputs.append(helper.make_tensor_value_info(iname, ONNX_TYPE[value.dtype.type], value.shape))
            feeds[iname] = value
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, ["y"], name=name.replace(" ", "_"), **attrs)
    out = helper.make_tensor_value_info("y", TensorProto.INT32, reference.shape)
    graph = helper.make_graph([node], "g", graph_inputs, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    CASES.append((name, model, feeds, reference, None))


def matmul_case(name, a, b, za=None, zb=None, const_b=False, const_zp=False):
    inputs = [("a", a, False), ("b", b, const_b),
              None if za is None else ("a_zero_point", za, const_zp),
              None if zb is None else ("b_zero_point", zb, const_zp)]
    add_case(name, "MatMulInteger", inputs, {}, matmul_integer_ref(a, b, za, zb))
    if a.dtype == np.uint8 and b.dtype == np.int8:
        CASES[-1] = CASES[-1][:4] + ((a, b),)


def int16_pair_overflow(a, b):
    """Per output element of a u8 x s8 matmul: whether some adjacent pair of
    products along k (k = 2p, 2p + 1) sums outside int16. ONNX Runtime's
    u8 x s8 kernel on x86 hosts without VNNI multiplies with vpmaddubsw,
    which adds such pairs with int16 saturation, so its results differ from
    the exact ones exactly there."""
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    if a.shape[-1] % 2:
        a = np.concatenate([a, np.zeros(a.shape[:-1] + (1,), np.int64)], -1)
        b = np.concatenate([b, np.zeros(b.shape[:-2] + (1,) + b.shape[-1:], np.int64)], -2)
    products = a[..., :, :, None] * b[..., None, :, :]  # [..., m, k, n]
    k = products.shape[-2]
    pairs = products.reshape(products.shape[:-2] + (k // 2, 2, products.shape[-1])).sum(-2)
    return (np.abs(pairs + 0.5) > 32767.5).any(-2)


u8, i8 = np.uint8, np.int8
matmul_case("matmul u8 x u8", full_range(u8, 4, 8), full_range(u8, 8, 6))
matmul_case("matmul i8 x i8", full_range(i8, 4, 8), full_range(i8, 8, 6))
matmul_case("matmul u8 x i8", full_range(u8, 5, 9), full_range(i8, 9, 7))
matmul_case("matmul u8 x u8 scalar zero points", full_range(u8, 4, 8), full_range(u8, 8, 6),
            full_range(u8), full_range(u8))
matmul_case("matmul i8 x i8 scalar zero points", full_range(i8, 4, 8), full_range(i8, 8, 6),
            full_range(i8), full_range(i8))
matmul_case("matmul u8 x i8 constant zero points, per-column b", full_range(u8, 3, 10), full_range(i8, 10, 5),
            full_range(u8), full_range(i8, 5), const_zp=True)
matmul_case("matmul u8 x u8 run-time per-column b zero point", full_range(u8, 3, 10), full_range(u8, 10, 5),
            None, full_range(u8, 5))
matmul_case("matmul per-row a zero point", full_range(u8, 4, 6), full_range(u8, 6, 3), full_range(u8, 4), None)
matmul_case("matmul batched u8 x i8", full_range(u8, 2, 3, 4, 8), full_range(i8, 2, 3, 8, 5),
            full_range(u8), full_range(i8))
matmul_case("matmul batched broadcast i8 x u8", full_range(i8, 2, 1, 4, 8), full_range(u8, 3, 8, 5),
            None, full_range(u8))
matmul_case("matmul batched, per-column b zero point", full_range(i8, 2, 4, 8), full_range(u8, 2, 8, 5),
            full_range(i8), full_range(u8, 5))
matmul_case("matmul batched lhs, weight initializer", full_range(u8, 2, 5, 64), full_range(i8, 64, 40),
            full_range(u8), full_range(i8, 40), const_b=True, const_zp=True)
matmul_case("matmul vector lhs", full_range(u8, 8), full_range(u8, 8, 6), full_range(u8), None)
matmul_case("matmul vector rhs", full_range(i8, 5, 8), full_range(i8, 8), None, full_range(i8))
matmul_case("matmul large, partial tiles", full_range(u8, 37, 129), full_range(i8, 129, 67),
            full_range(u8), full_range(i8), const_b=True)
# Register tiles of 8-bit operands, every sign pair: the dot-product kernels
# (vpdpbusd with VNNI, vpmaddwd pairs otherwise; --cpu picks), with full,
# partial and peeled tiles in every dimension (37 rows, 45 = 16 + 16 + 13
# columns, K = 70 and 67: remainders of 2 and 3 steps).
for ta, tb in [(u8, i8), (i8, u8), (u8, u8), (i8, i8)]:
    label = f"{np.dtype(ta).name} x {np.dtype(tb).name}"
    matmul_case(f"matmul {label} register tiles, weight initializer", full_range(ta, 37, 70),
                full_range(tb, 70, 45), const_b=True)
    matmul_case(f"matmul {label} register tiles, odd K, run-time b", full_range(ta, 21, 67),
                full_range(tb, 67, 45))

# The wide 8 x 32 byte tiles (VNNI), whose column blocks are interleaved once
# for all their row tiles: workgroups of 64 rows and more; peeled rows,
# columns (72 = 2 x 32 + 8) and k steps (260 = 256 + 4), a
# block cache-blocked along K, u8 x i8 and i8 x u8.
matmul_case("matmul u8 x i8 wide tiles, interleaved columns, weight initializer",
            full_range(u8, 600, 260), full_range(i8, 260, 72), full_range(u8), None,
            const_b=True, const_zp=True)
matmul_case("matmul i8 x u8 wide tiles, interleaved columns, run-time b", full_range(i8, 600, 132),
            full_range(u8, 132, 72))
# Few rows by an int8 weight initializer without zero points: the weight in
# column panels of 32 at compile time (kiln.matmul_panels), one product per
# panel, the one-row tile 1 x 32 (and 4 x 32) of dot products; K with a
# remainder of 4-step groups (130), 3 panels.
matmul_case("matmul u8 x i8 one row, weight in panels", full_range(u8, 1, 130), full_range(i8, 130, 96),
            const_b=True)
matmul_case("matmul u8 x i8 four rows, batched lhs, weight in panels", full_range(u8, 2, 2, 260),
            full_range(i8, 260, 64), const_b=True)
matmul_case("matmul i8 x i8 one row, weight in panels", full_range(i8, 1, 64), full_range(i8, 64, 32),
            const_b=True)
matmul_case("matmul u8 x i8 one row, 1000 columns: a last partial panel, sliced", full_range(u8, 1, 96),
            full_range(i8, 96, 1000), const_b=True)


def conv_case(name, x, w, zx=None, zw=None, strides=None, dilations=None, pads=None, auto_pad=None,
              group=1, kernel_shape=False, const_w=True, const_zw=True):
    sp = x.ndim - 2
    attrs = {}
    if strides is not None:
        attrs["strides"] = list(strides)
    if dilations is not None:
        attrs["dilations"] = list(dilations)
    if pads is not None:
        attrs["pads"] = list(pads)
    if auto_pad is not None:
        attrs["auto_pad"] = auto_pad
    if group != 1:
        attrs["group"] = group
    if kernel_shape:
        attrs["kernel_shape"] = list(w.shape[2:])
    s = strides or (1,) * sp
    d = dilations or (1,) * sp
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        p = same_pads(x.shape[2:], w.shape[2:], s, d, auto_pad == "SAME_UPPER")
    else:
        p = pads or (0,) * (2 * sp)
    inputs = [("x", x, False), ("w", w, const_w),
              None if zx is None else ("x_zero_point", zx, False),
              None if zw is None else ("w_zero_point", zw, const_zw)]
    add_case(name, "ConvInteger", inputs, attrs, conv_integer_ref(x, w, zx, zw, s, d, p, group))


conv_case("conv u8 padded strided, zero points", full_range(u8, 1, 3, 9, 8), full_range(u8, 4, 3, 3, 3),
          full_range(u8), full_range(u8), strides=(2, 1), pads=(1, 0, 2, 1))
conv_case("conv u8 no zero points", full_range(u8, 2, 2, 6, 6), full_range(u8, 3, 2, 3, 3))
conv_case("conv u8 auto_pad SAME_UPPER, kernel_shape", full_range(u8, 1, 2, 7, 9),
          full_range(u8, 3, 2, 3, 2), full_range(u8), full_range(u8), strides=(2, 2),
          auto_pad="SAME_UPPER", kernel_shape=True)
conv_case("conv u8 dilations", full_range(u8, 1, 2, 7, 9), full_range(u8, 3, 2, 3, 2), full_range(u8),
          full_range(u8), strides=(1, 2), dilations=(2, 3), pads=(2, 1, 0, 3))
conv_case("conv u8 auto_pad SAME_UPPER with dilations", full_range(u8, 1, 2, 7, 9),
          full_range(u8, 3, 2, 3, 2), full_range(u8), full_range(u8), strides=(2, 2), dilations=(2, 1),
          auto_pad="SAME_UPPER")
conv_case("conv u8 auto_pad SAME_LOWER", full_range(u8, 1, 2, 6, 5), full_range(u8, 2, 2, 2, 2),
          full_range(u8), None, strides=(2, 1), auto_pad="SAME_LOWER")
conv_case("conv u8 auto_pad VALID", full_range(u8, 1, 2, 6, 5), full_range(u8, 2, 2, 3, 3),
          None, full_range(u8), auto_pad="VALID")
conv_case("conv u8 per-channel w zero point", full_range(u8, 1, 3, 6, 6), full_range(u8, 5, 3, 3, 3),
          full_range(u8), full_range(u8, 5), pads=(1, 1, 1, 1))
conv_case("conv u8 grouped", full_range(u8, 1, 4, 6, 5), full_range(u8, 6, 2, 3, 3), full_range(u8),
          full_range(u8), pads=(1, 1, 0, 0), group=2)
conv_case("conv u8 depthwise", full_range(u8, 1, 4, 6, 6), full_range(u8, 4, 1, 3, 3), full_range(u8),
          full_range(u8), pads=(1, 1, 1, 1), strides=(2, 2), group=4)
conv_case("conv u8 1x1", full_range(u8, 1, 8, 5, 5), full_range(u8, 6, 8, 1, 1), full_range(u8), full_range(u8))
conv_case("conv u8 1-D", full_range(u8, 2, 3, 11), full_range(u8, 4, 3, 3), full_range(u8), full_range(u8),
          strides=(2,), pads=(1, 2))
conv_case("conv u8 run-time weights", full_range(u8, 1, 2, 5, 5), full_range(u8, 3, 2, 3, 3), full_range(u8),
          full_range(u8), pads=(1, 1, 1, 1), const_w=False, const_zw=False)
conv_case("conv u8 larger", full_range(u8, 1, 16, 14, 14), full_range(u8, 24, 16, 3, 3),
          full_range(u8), full_range(u8), pads=(1, 1, 1, 1))
conv_case("conv u8 x i8", full_range(u8, 1, 3, 6, 6), full_range(i8, 4, 3, 3, 3), full_range(u8),
          full_range(i8), pads=(1, 1, 1, 1))
conv_case("conv u8 x i8, per-channel w zero point", full_range(u8, 1, 3, 6, 6), full_range(i8, 4, 3, 3, 3),
          full_range(u8), full_range(i8, 4), pads=(1, 1, 1, 1))
conv_case("conv i8 x i8", full_range(i8, 1, 3, 6, 6), full_range(i8, 4, 3, 3, 3), full_range(i8),
          full_range(i8), pads=(0, 1, 1, 0))
conv_case("conv u8 x i8 wide tiles, interleaved im2col columns", full_range(u8, 1, 8, 14, 14),
          full_range(i8, 136, 8, 3, 3), pads=(1, 1, 1, 1))
conv_case("conv u8 x i8 wide tiles, K not a multiple of 4", full_range(u8, 1, 7, 14, 14),
          full_range(i8, 136, 7, 3, 3), pads=(1, 1, 1, 1))
conv_case("conv i8 x i8 1x1, no zero points", full_range(i8, 1, 8, 5, 5), full_range(i8, 6, 8, 1, 1))
conv_case("conv i8 x i8 3x3, no zero points", full_range(i8, 1, 8, 7, 7), full_range(i8, 6, 8, 3, 3),
          strides=(2, 2), pads=(1, 1, 1, 1))


# ---------------------------------------------------------------------- driver

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--cpu", default="host",
                        help="kiln-compile --cpu (x86-64-v3: the AVX2 kernels, without VNNI)")
    args = parser.parse_args()
    if not host_runs(args.cpu):
        print(f"skipped: this host cannot run code compiled for --cpu={args.cpu}")
        return 77
    bin_dir = args.build.resolve() / "bin"
    work = Path(tempfile.mkdtemp(prefix="kiln-integer-"))
    compared = ort_compared = ort_skipped = failures = 0
    for n, (name, model, feeds, ref, u8s8) in enumerate(CASES):
        d = work / f"case{n}"
        d.mkdir()
        onnx.save(model, d / "m.onnx")
        kiln_in, ort_in = [], []
        for iname, value in feeds.items():
            np.save(d / f"{iname}.npy", value)
            kiln_in.append(f"--input={iname}=@{d / (iname + '.npy')}")
            ort_in += ["--input", f"{iname}={d / (iname + '.npy')}"]
        compile_ = subprocess.run([bin_dir / "kiln-compile", d / "m.onnx", "--target=cpu",
                                   f"--cpu={args.cpu}", "-o", d / "m.kiln"],
                                  capture_output=True, text=True)
        if compile_.returncode != 0:
            print(f"FAIL {name}: kiln-compile: {compile_.stderr.strip()[:2000]}")
            failures += 1
            continue
        run = subprocess.run([bin_dir / "kiln-run", d / "m.kiln", "--device=cpu", f"--output-dir={d / 'kiln'}"]
                             + kiln_in, capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAIL {name}: kiln-run: {run.stderr.strip()[:2000]}")
            failures += 1
            continue
        got = np.load(d / "kiln" / "y.npy")
        ok = got.dtype == np.int32 and got.shape == ref.shape and np.array_equal(got, ref)
        detail = (f"{int(np.sum(got != ref))} of {ref.size} elements differ from numpy" if got.shape == ref.shape
                  else f"shape {list(got.shape)} vs {list(ref.shape)}")
        compared += 1
        ort = subprocess.run(["node", ROOT / "bench/ort/ort_run.js", d / "m.onnx", "--output-dir", d / "ort"] + ort_in,
                             capture_output=True, text=True)
        if ort.returncode != 0:
            reason = [line for line in ort.stderr.splitlines() if line.startswith("ort_run:")]
            reason = reason[0].split("Status Message:")[-1].strip() if reason else "?"
            ort_skipped += 1
            ort_note = f"; ONNX Runtime rejects it: {reason[-110:]}"
        else:
            ort_ref = np.load(d / "ort" / "y.npy")
            ort_ok = ort_ref.dtype == got.dtype and ort_ref.shape == got.shape and np.array_equal(got, ort_ref)
            saturated = (u8s8 is not None and ort_ref.shape == ref.shape
                         and not np.array_equal(ort_ref, ref)
                         and int16_pair_overflow(*u8s8)[ort_ref != ref].all())
            if saturated:
                # Explained: ONNX Runtime's int16 pair saturation (see
                # int16_pair_overflow); numpy stays the reference.
                ort_note = (f"; ONNX Runtime differs in {int(np.sum(ort_ref != ref))} elements, "
                            "each where its u8 x s8 kernel saturates int16 pairs (a host without VNNI)")
                ort_ok = True
            elif not np.array_equal(ort_ref, ref):
                ort_note = "; numpy reference differs from ONNX Runtime"
                ok = False
            else:
                ort_note = "; equals ONNX Runtime" if ort_ok else "; differs from ONNX Runtime"
            ok = ok and ort_ok
            ort_compared += 1
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {'exact' if ok else detail}{ort_note}")
        failures += not ok
    print(f"{compared} outputs compared with numpy, {ort_compared} also with ONNX Runtime "
          f"({ort_skipped} models ONNX Runtime rejects), {failures} failures")
    if args.keep:
        print(f"work directory: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    if ort_compared < MIN_ORT_COMPARED:
        print(f"error: fewer than {MIN_ORT_COMPARED} outputs compared with ONNX Runtime")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
