#!/usr/bin/python3
"""4-bit weights against ONNX Runtime, per element: com.microsoft MatMulNBits
imported by Kiln (part A), kiln-compile --quantize=int4-weights (part B) and
pre-quantized QDQ int4 models, DequantizeLinear of an int4/uint4 weight into a
MatMul (part C), and 4-bit activations by 4-bit weights (part D).

  /usr/bin/python3 test/e2e/run_int4_vs_ort.py --build BUILD [--keep]
  /usr/bin/python3 test/e2e/run_int4_vs_ort.py --ort-only [--keep]

Part A: one-node MatMulNBits models (bits=4; opsets "" 21 and com.microsoft 1)
built with onnx.helper. A is a float32 graph input; B (uint8 [N, n_blocks,
block_size / 2], two codes per byte, low nibble first along K), scales
(float32 [N * n_blocks]) and, in some cases, zero_points (uint8
[N * ceil(n_blocks / 2)], two per byte, low nibble first; 8 when absent) are
initializers. The cases cover block_size 32, 64 and 128, with and without zero
points, A of shape [1, K] (decode), [M, K] and [2, 3, K], K not a multiple of
block_size (the last block's padding codes, and the unused high nibble of a
row's last zero-point byte, are random: nothing may read them), N not a
multiple of 16, one bigger product (K=1024, N=512, M=4), 37 and 40 rows (the
cpu's dequantize-once kernel) and a decode over 1024 columns. A numpy
dequantization, w[k, n] = (code - zp) * scale, result A @ w in float64, must
agree with ONNX Runtime (this checks the packing of the test itself); Kiln's
artifact must then agree with ONNX Runtime.

Part B: a float MLP (MatMul with a constant [256, 96] weight, Relu, Gemm
transB=1 with a [40, 96] weight and a bias, Reshape to [2, 8, 40], MatMul by a
constant [40, 24]) compiled with --quantize=int4-weights
--int4-group-size=G [--int4-zero-points]. Every MatMul/Gemm weight whose K
(rows of the [K, N] weight; Gemm's transB weight transposed first; padded
with zero rows to a multiple of G) is quantized per group of G rows and per
column, in float32 (numpy rint rounds half to even):
  symmetric:   scale = max|w| / 7 (1 when 0), code = clip(rint(w / scale), -8, 7) + 8, zp 8
  zero points: lo = min(min w, 0), hi = max(max w, 0), scale = (hi - lo) / 15 (1 when 0),
               zp = clip(rint(-lo / scale), 0, 15), code = clip(rint(w / scale) + zp, 0, 15)
The reference model replaces each quantized
weight by a MatMulNBits node with these codes (Gemm's bias as an Add); ONNX
Runtime runs it, a numpy forward pass with the dequantized weights must agree
with it, and Kiln's int4 artifact must agree with it per element. The int4
outputs must also stay close to the float model's (ONNX Runtime on the float
model): cosine >= MIN_COSINE = 0.97, printed. (Not 0.99: rounding Gaussian
weights to 4 bits costs ~20 dB per layer, and the exact int4 reference
itself gives 0.980-0.991 over inputs with all three layers int4, 0.9796 on
sample 1 of G=128;
Kiln's per-element match with ONNX Runtime is the real check.) Configurations: G=32 symmetric,
G=64 with zero points and G=128 symmetric; the Gemm's K=96 and the last
MatMul's K=40 are padded (to 128 at G=64 and G=128; K=40 to 64 at G=32).

Part C: the form ONNX Runtime's int4 QDQ quantizer writes. Each model (opset
"" 21 only, ir_version 10 set explicitly) is DequantizeLinear of a constant
int4 (TensorProto data type 22) or uint4 (data type 21) weight [K, N], with a
float32 x_scale and optionally an x_zero_point of the weight's type, then
MatMul(A, dequantized weight), A a float32 graph input. The int4/uint4
initializers are built by hand (Debian's onnx may predate int4): raw_data
packs two elements per byte, element 0 in the low four bits, row-major over the
whole tensor, an odd count padding the last high nibble with 0. The onnx
checker is not run on them (onnx < 1.16 knows neither data types 21 and 22
nor IR 10; Debian's 1.12 checker rejects ir_version 10 outright). Codes
are random (int4 -8..7, uint4 0..15), scales uniform in [0.01, 0.1], zero
points random 0..15. Cases: blocked along K (axis=0, block_size=32, scale
[K/32, N], int4, no zero point, K=128, N=48, A [1, 128]); blocked uint4 with
zero points [K/64, N] (block_size=64, K=256, N=40, A [7, 256]); per column
(axis=1, no block_size, scale [N], int4, K=64, N=32, A [2, 3, 64]); blocked
with a ragged last block (K=100, block_size=32, scale and zero point [4, N],
uint4, N=24, A [1, 100]: Kiln's generic path, dequantizing in float); per
tensor (scalar scale and scalar uint4 zero point, K=32, N=16, A [4, 32]).
A numpy dequantization, w[k, n] = (code - zp) * scale in float32 (zp 0 when
absent), must equal ONNX Runtime's DequantizeLinear output exactly, and A @ w
in float64 must agree with ONNX Runtime's result; Kiln's artifact must then
agree with ONNX Runtime. ONNX Runtime's reference is the same model with the
DequantizeLinear output w as a second graph output: at optimization level
'all' ONNX Runtime (1.30) fuses DequantizeLinear + MatMul, in all five forms,
into a MatMulNBits with accuracy_level 4 (session.qdq_matmulnbits_accuracy_level
defaults to 4; bench/ort/ort_run.js sets no config entries), which quantizes A
to int8 and misses the float result by 0.2-0.7% of the output's largest magnitude.
A DequantizeLinear whose output is a graph output is not fused, so ONNX Runtime
runs it and a float32 MatMul: the model's float semantics. Kiln compiles the
model as the quantizer writes it (output Y only). ONNX Runtime's fused result
on that model is also run and its deviation printed as a NOTE, not checked.

Every Kiln artifact is compiled with --target=cpu,gfx942 --emulation and run
on --device=cpu and --device=emu:gfx942, and with --target=cpu alone (codes in
column panels, kiln-pack-int4-weights) and run on --device=cpu ("cpu-only"),
and once more with --cpu=x86-64-v3 (the AVX2 kernels, "cpu-avx2").

Tolerance, per element: |got - ort| <= 1e-4 * max|ort| + 1e-5. The dequantized
weights are the same float32 values everywhere ((code - zp) * scale is one
rounding), but the float sums over K are taken in different orders (blocked,
vectorized, split across lanes, or in float64 for numpy), so results differ by
a few ulps of the accumulated magnitude, which is bounded by the output's
largest magnitude; 1e-5 absolute covers outputs that are all near zero.

Part D: 4-bit activations by 4-bit weights, the QDQ form of a model
quantized to int4 on both sides (opset "" 21, ir_version 10): QuantizeLinear
of the float32 input A to int4 (zero point 0) or uint4 (zero point 8) with
one scale, DequantizeLinear back, MatMul by DequantizeLinear of a constant
int4 weight [K, N] (per column, axis=1, or per tensor). Kiln folds it into
an integer contraction of the 4-bit values (kiln.matmul_integer on i4/ui4)
with the scales in its epilogue; RDNA's iu4 WMMA multiplies them as they
are (v_wmma_i32_16x16x16_iu4 on gfx1100, v_wmma_i32_16x16x32_iu4 on
gfx1201), CDNA and gfx1250 their 8-bit instruction (checked in each
target's gpu stage, so that a float fallback cannot pass; a product of up
to 8 rows takes the GEMV kernel of weights in panels instead, as an 8-bit
one does). A numpy model
(q = clip(rint(A / s) + z, lo, hi), (q - z) * s, float64 product) must
agree with ONNX Runtime, which runs the Q/DQ ops and a float MatMul; Kiln's
artifact (--target=cpu,gfx942,gfx950,gfx1100,gfx1201,gfx1250 --emulation;
its --dump-ir gives each target's instruction)
must agree with ONNX Runtime per element on the cpu and on every emulated
target, and every emulated result must be bit-identical to the cpu's (the
integer sums are exact; the epilogue is the same float operations).

--ort-only runs only what needs no Kiln build: the numpy-vs-ONNX Runtime
checks of parts A, B, C and D (and part B's cosine of ONNX Runtime's int4
reference against the float model). Exit status 1 on any failure.
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
OPSET = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
DEVICES = ["cpu", "emu:gfx942", "cpu-only", "cpu-avx2"]
REL_TOL, ABS_TOL = 1e-4, 1e-5
MIN_COSINE = 0.97  # see the docstring: the int4 reference itself reaches 0.980-0.991


# ------------------------------------------------------------------ packing

def pack_codes(codes_nk, block_size):
    """[N, n_blocks * block_size] codes 0..15 -> MatMulNBits B [N, n_blocks, block_size / 2]."""
    n, kp = codes_nk.shape
    assert kp % block_size == 0 and codes_nk.min() >= 0 and codes_nk.max() <= 15
    c = codes_nk.astype(np.uint8).reshape(n, kp // block_size, block_size // 2, 2)
    return (c[..., 0] | (c[..., 1] << 4)).astype(np.uint8)


def pack_zero_points(zp_nb, pad_nibbles):
    """[N, n_blocks] zero points 0..15 -> [N * ceil(n_blocks / 2)], each row of N padded to whole bytes."""
    n, nb = zp_nb.shape
    padded = np.asarray(pad_nibbles, np.uint8).reshape(n, 1).repeat(2 * ((nb + 1) // 2), axis=1)
    padded[:, :nb] = zp_nb
    return (padded[:, 0::2] | (padded[:, 1::2] << 4)).astype(np.uint8).reshape(-1)


def dequantize(codes_nk, scales_nb, zp_nb, k, block_size):
    """The [K, N] float32 weight a MatMulNBits B stands for: (code - zp) * scale."""
    kk = np.arange(k)
    blocks = kk // block_size
    q = codes_nk[:, :k].astype(np.float32) - zp_nb[:, blocks].astype(np.float32)
    return (q * scales_nb[:, blocks]).astype(np.float32).T.copy()


def matmul_nbits_node(a, out, tag, k, n, block_size, codes_nk, scales_nb, zp_nb, inits, rng=None):
    """Appends MatMulNBits' initializers to inits and returns the node. zp_nb None: no zero_points input."""
    nb = (k + block_size - 1) // block_size
    assert codes_nk.shape == (n, nb * block_size) and scales_nb.shape == (n, nb)
    inits.append(numpy_helper.from_array(pack_codes(codes_nk, block_size), f"{tag}_B"))
    inits.append(numpy_helper.from_array(scales_nb.astype(np.float32).reshape(-1), f"{tag}_scales"))
    inputs = [a, f"{tag}_B", f"{tag}_scales"]
    if zp_nb is not None:
        pad = rng.integers(0, 16, n) if rng is not None and nb % 2 else np.zeros(n)
        inits.append(numpy_helper.from_array(pack_zero_points(zp_nb, pad), f"{tag}_zero_points"))
        inputs.append(f"{tag}_zero_points")
    return helper.make_node("MatMulNBits", inputs, [out], name=tag, domain="com.microsoft",
                            K=k, N=n, bits=4, block_size=block_size)


# ------------------------------------------------------------------ running

def run(cmd):
    try:
        result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    except OSError as e:
        print(f"FAIL: {' '.join(str(c) for c in cmd)}\n{e}")
        return False
    if result.returncode != 0:
        print(f"FAIL: {' '.join(str(c) for c in cmd)}\n{result.stderr.strip()[:2000]}")
    return result.returncode == 0


def run_ort(model, inputs, out_dir, output):
    """ONNX Runtime (bench/ort/ort_run.js); inputs: {name: path.npy}. None on failure."""
    cmd = ["node", ROOT / "bench/ort/ort_run.js", model, "--output-dir", out_dir]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    return np.load(Path(out_dir) / f"{output}.npy") if run(cmd) else None


class Kiln:
    def __init__(self, bin_dir):
        self.bin_dir = bin_dir

    def compile(self, model, artifact, extra=()):
        both = run([self.bin_dir / "kiln-compile", model, "--target=cpu,gfx942", "--emulation", *extra,
                    "-o", artifact])
        # For the cpu alone, the codes are stored in column panels
        # (kiln-pack-int4-weights): the "cpu-only" device runs that artifact.
        alone = run([self.bin_dir / "kiln-compile", model, "--target=cpu", *extra,
                     "-o", Path(artifact).with_suffix(".cpu.kiln")])
        # The AVX2 kernels (16 columns and 2 or 4 rows per step) run on
        # every x86-64 host CI has.
        avx2 = run([self.bin_dir / "kiln-compile", model, "--target=cpu", "--cpu=x86-64-v3", *extra,
                    "-o", Path(artifact).with_suffix(".avx2.kiln")])
        return both and alone and avx2

    def run(self, artifact, device, inputs, out_dir, output):
        if device in ("cpu-only", "cpu-avx2"):
            suffix = ".cpu.kiln" if device == "cpu-only" else ".avx2.kiln"
            artifact, device = Path(artifact).with_suffix(suffix), "cpu"
        cmd = [self.bin_dir / "kiln-run", artifact, f"--device={device}", f"--output-dir={out_dir}"]
        cmd += [f"--input={name}=@{path}" for name, path in inputs.items()]
        return np.load(Path(out_dir) / f"{output}.npy") if run(cmd) else None


class Report:
    def __init__(self):
        self.failures = 0
        self.checks = 0

    def fail(self, label, why):
        print(f"FAIL {label}: {why}")
        self.failures += 1

    def compare(self, label, got, ref, note=""):
        """Per element: |got - ref| <= REL_TOL * max|ref| + ABS_TOL. Returns ok."""
        self.checks += 1
        if got is None:
            self.fail(label, "no output")
            return False
        if got.shape != ref.shape:
            self.fail(label, f"shape {list(got.shape)}, ONNX Runtime {list(ref.shape)}")
            return False
        tol = REL_TOL * float(np.abs(ref).max()) + ABS_TOL
        err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        ok = bool(np.isfinite(got).all()) and bool((err <= tol).all())
        worst = float(err.max())
        where = "" if ok else f", {int((err > tol).sum())}/{err.size} elements over"
        print(f"{'PASS' if ok else 'FAIL'} {label:52s} max |err| = {worst:.3g} (tol {tol:.3g}){where}{note}")
        self.failures += not ok
        return ok


def ort_case(work, dirname, model, a, label, report):
    """Writes the case's folder (m.onnx, A.npy) and runs ONNX Runtime on it:
    (folder, inputs, ONNX Runtime's Y or None, reported as a failure)."""
    d = work / dirname
    d.mkdir()
    onnx.save(model, d / "m.onnx")
    np.save(d / "A.npy", a)
    inputs = {"A": d / "A.npy"}
    ort = run_ort(d / "m.onnx", inputs, d / "ort", "Y")
    if ort is None:
        report.fail(label, "ONNX Runtime failed")
    return d, inputs, ort


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# ------------------------------------------------------------------ part A: MatMulNBits import

# name, K, N, block_size, zero points, A's shape, seed
CASES_A = [
    ("k128_n64_b32_zp_decode", 128, 64, 32, True, [1, 128], 101),
    ("k128_n64_b32_sym_m7", 128, 64, 32, False, [7, 128], 102),
    ("k256_n48_b64_zp_batch", 256, 48, 64, True, [2, 3, 256], 103),
    ("k256_n32_b64_sym_decode", 256, 32, 64, False, [1, 256], 104),
    ("k256_n64_b128_sym_batch", 256, 64, 128, False, [2, 3, 256], 105),
    ("k384_n40_b128_zp_m7", 384, 40, 128, True, [7, 384], 106),      # N % 16 != 0, 3 blocks (odd)
    ("k200_n40_b64_zp_m7", 200, 40, 64, True, [7, 200], 107),        # K % block != 0: 4 blocks, 56 padding codes
    ("k200_n24_b64_sym_batch", 200, 24, 64, False, [2, 3, 200], 108),
    ("k100_n40_b32_zp_decode", 100, 40, 32, True, [1, 100], 109),    # 4 blocks, 28 padding codes
    ("k1024_n512_b32_zp_m4", 1024, 512, 32, True, [4, 1024], 110),   # the bigger one
    # cpu: 32 rows and more dequantize each group once into a buffer (tiles
    # of 8 rows, then single rows); 3 column panels of 32.
    ("k256_n96_b32_zp_m37", 256, 96, 32, True, [37, 256], 111),
    ("k512_n64_b128_sym_batch40", 512, 64, 128, False, [2, 20, 512], 112),
    # decode over many panels and workgroups
    ("k512_n1024_b128_sym_decode", 512, 1024, 128, False, [1, 512], 113),
]


def nbits_case(name, k, n, block, with_zp, a_shape, seed):
    """A one-node MatMulNBits model Y = A x B with random codes (the padding codes past K too), scales
    and zero points (None without), and its random input A: (model, codes, scales, zp, a)."""
    rng = np.random.default_rng(seed)
    nb = (k + block - 1) // block
    codes = rng.integers(0, 16, (n, nb * block)).astype(np.uint8)
    scales = rng.uniform(0.01, 0.1, (n, nb)).astype(np.float32)
    zp = rng.integers(0, 16, (n, nb)).astype(np.uint8) if with_zp else None
    inits = []
    node = matmul_nbits_node("A", "Y", "mmnb", k, n, block, codes, scales, zp, inits, rng)
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("A", TensorProto.FLOAT, a_shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, a_shape[:-1] + [n])],
                              initializer=inits)
    a = rng.standard_normal(a_shape).astype(np.float32)
    return helper.make_model(graph, opset_imports=OPSET), codes, scales, zp, a


def part_a(work, report, kiln):
    print("part A: com.microsoft MatMulNBits (bits=4) imported")
    for name, k, n, block, with_zp, a_shape, seed in CASES_A:
        model, codes, scales, zp, a = nbits_case(name, k, n, block, with_zp, a_shape, seed)
        nb = codes.shape[1] // block
        label = f"A {name} A{a_shape}"
        d, inputs, ort = ort_case(work, f"A_{name}", model, a, label, report)
        if ort is None:
            continue
        w = dequantize(codes, scales, zp if with_zp else np.full((n, nb), 8, np.uint8), k, block)
        ref = np.matmul(a.astype(np.float64), w.astype(np.float64))
        report.compare(f"{label} numpy", ref, ort)
        if kiln is None:
            continue
        if not kiln.compile(d / "m.onnx", d / "m.kiln"):
            report.fail(label, "kiln-compile failed")
            continue
        for device in DEVICES:
            got = kiln.run(d / "m.kiln", device, inputs, d / device.replace(":", "_"), "Y")
            report.compare(f"{label} {device}", got, ort)


# ------------------------------------------------------------------ part B: --quantize=int4-weights

rng_b = np.random.default_rng(23)
X_SHAPE = [16, 256]
W1 = (rng_b.standard_normal((256, 96)) * 0.1).astype(np.float32)
W1[:128, 5] = 0  # whole groups of zeros for every G: the scale-1 case
W2 = (rng_b.standard_normal((40, 96)) * 0.2).astype(np.float32)  # Gemm transB
B2 = rng_b.standard_normal(40).astype(np.float32)
W3 = (rng_b.standard_normal((40, 24)) * 0.3).astype(np.float32)
CONFIGS_B = [(32, False), (64, True), (128, False)]  # (G, zero points)


def quantize_int4(w, group, zero_points):
    """Kiln's int4 weight quantization of a [K, N] float32 weight, per group of `group` rows and per column.
    Returns codes [K, N], scales [K / group, N], zero points [K / group, N] (uint8)."""
    k, n = w.shape
    g = w.astype(np.float32).reshape(k // group, group, n)
    if not zero_points:
        amax = np.abs(g).max(axis=1)
        scale = (amax / np.float32(7)).astype(np.float32)
        scale[amax == 0] = 1
        q = np.clip(np.rint(g / scale[:, None, :]), -8, 7) + 8
        zp = np.full(scale.shape, 8, np.float32)
    else:
        lo = np.minimum(g.min(axis=1), np.float32(0))
        hi = np.maximum(g.max(axis=1), np.float32(0))
        scale = ((hi - lo) / np.float32(15)).astype(np.float32)
        scale[scale == 0] = 1
        zp = np.clip(np.rint(-lo / scale), 0, 15).astype(np.float32)
        q = np.clip(np.rint(g / scale[:, None, :]) + zp[:, None, :], 0, 15)
    assert q.dtype == np.float32 and scale.dtype == np.float32
    return q.reshape(k, n).astype(np.uint8), scale, zp.astype(np.uint8)


def float_model_b():
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["g"], transB=1),
             helper.make_node("Reshape", ["g", "shape"], ["g3"]),
             helper.make_node("MatMul", ["g3", "w3"], ["y"])]
    inits = [numpy_helper.from_array(W1, "w1"), numpy_helper.from_array(W2, "w2"),
             numpy_helper.from_array(B2, "b2"), numpy_helper.from_array(W3, "w3"),
             numpy_helper.from_array(np.array([2, 8, 40], np.int64), "shape")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 24])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=OPSET[:1])


def reference_model_b(group, zero_points):
    """The int4 model Kiln must compute, and the [K, N] float32 weights it stands for (for numpy)."""
    nodes, inits, weights, quantized = [], [numpy_helper.from_array(np.array([2, 8, 40], np.int64), "shape")], {}, []

    def matmul(x, w, out, tag):
        k, n = w.shape
        # K not a multiple of G: zero rows up to the next multiple, which
        # MatMulNBits' last block holds (K stays the real one).
        padded = -(-k // group) * group
        codes, scale, zp = quantize_int4(np.pad(w, ((0, padded - k), (0, 0))), group, zero_points)
        nodes.append(matmul_nbits_node(x, out, tag, k, n, group, codes.T.copy(), scale.T.copy(),
                                       zp.T.copy() if zero_points else None, inits))
        weights[tag] = dequantize(codes.T, scale.T, zp.T, k, group)
        quantized.append(tag)

    matmul("x", W1, "h", "mm1")
    nodes.append(helper.make_node("Relu", ["h"], ["r"]))
    matmul("r", W2.T.copy(), "gm", "gemm")
    inits.append(numpy_helper.from_array(B2, "b2"))
    nodes.append(helper.make_node("Add", ["gm", "b2"], ["g"]))
    nodes.append(helper.make_node("Reshape", ["g", "shape"], ["g3"]))
    matmul("g3", W3, "y", "mm3")
    graph = helper.make_graph(nodes, "mlp_int4", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 24])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=OPSET), weights, quantized


def forward_b(x, weights):
    h = np.maximum(x.astype(np.float64) @ weights["mm1"], 0)
    g = h @ weights["gemm"] + B2
    return g.reshape(2, 8, 40) @ weights["mm3"]


def part_b(work, report, kiln):
    print("part B: --quantize=int4-weights")
    onnx.save(float_model_b(), work / "float.onnx")
    rng = np.random.default_rng(29)
    samples = []
    for s in range(2):
        x = (rng.standard_normal(X_SHAPE) * (1 + s) + 0.5 * s).astype(np.float32)
        np.save(work / f"x{s}.npy", x)
        real = run_ort(work / "float.onnx", {"x": work / f"x{s}.npy"}, work / f"float_ort{s}", "y")
        if real is None:
            report.fail(f"B float model sample {s}", "ONNX Runtime failed")
            return
        samples.append((x, work / f"x{s}.npy", real))
    for group, zero_points in CONFIGS_B:
        tag = f"g{group}_{'zp' if zero_points else 'sym'}"
        d = work / f"B_{tag}"
        d.mkdir()
        model, weights, quantized = reference_model_b(group, zero_points)
        onnx.save(model, d / "int4.onnx")
        print(f"  G={group} {'zero points' if zero_points else 'symmetric'}: "
              f"int4 {', '.join(quantized)}; float {', '.join(t for t in weights if t not in quantized)}")
        flags = ["--quantize=int4-weights", f"--int4-group-size={group}"] + (["--int4-zero-points"] if zero_points else [])
        compiled = kiln is not None and kiln.compile(work / "float.onnx", d / "q.kiln", flags)
        if kiln is not None and not compiled:
            report.fail(f"B {tag}", "kiln-compile failed")
        for s, (x, x_path, real) in enumerate(samples):
            label = f"B {tag} sample {s}"
            ort = run_ort(d / "int4.onnx", {"x": x_path}, d / f"ort{s}", "y")
            if ort is None:
                report.fail(label, "ONNX Runtime failed")
                continue
            report.compare(f"{label} numpy", forward_b(x, weights), ort)
            if kiln is None:
                c = cosine(ort, real)
                print(f"{'PASS' if c >= MIN_COSINE else 'FAIL'} {label + ' ORT int4 vs float':52s} "
                      f"cosine {c:.6f} (min {MIN_COSINE})")
                report.failures += c < MIN_COSINE
                continue
            if not compiled:
                continue
            for device in DEVICES:
                got = kiln.run(d / "q.kiln", device, {"x": x_path}, d / f"{device.replace(':', '_')}{s}", "y")
                if got is None or got.shape != real.shape:
                    report.compare(f"{label} {device}", got, ort)
                    continue
                c = cosine(got, real)
                report.compare(f"{label} {device}", got, ort, f", cosine vs float {c:.6f}")
                if c < MIN_COSINE:
                    report.fail(f"{label} {device}", f"cosine vs float {c:.6f} < {MIN_COSINE}")


# ------------------------------------------------------------------ part C: QDQ int4 (DequantizeLinear + MatMul)

INT4, UINT4 = 22, 21  # TensorProto data types; onnx < 1.16 has no TensorProto.INT4 / UINT4

# name, K, N, granularity ("block", "column" or "tensor"), block_size, signed (int4) or uint4, zero point,
# A's shape, seed
CASES_C = [
    ("k128_n48_b32_int4_decode", 128, 48, "block", 32, True, False, [1, 128], 301),
    ("k256_n40_b64_uint4_zp_m7", 256, 40, "block", 64, False, True, [7, 256], 302),
    ("k64_n32_column_int4_batch", 64, 32, "column", None, True, False, [2, 3, 64], 303),
    ("k100_n24_b32_uint4_zp_ragged", 100, 24, "block", 32, False, True, [1, 100], 304),  # last block 4 rows
    ("k32_n16_tensor_uint4_zp_m4", 32, 16, "tensor", None, False, True, [4, 32], 305),
]


def int4_tensor(name, values, signed):
    """An int4 (signed) or uint4 initializer: raw_data two elements per byte, element 0 in the low nibble,
    row-major over the whole tensor, an odd count's last high nibble 0."""
    values = np.asarray(values)
    lo, hi = (-8, 7) if signed else (0, 15)
    assert values.size == 0 or (values.min() >= lo and values.max() <= hi)
    nibbles = (values.astype(np.int16).reshape(-1) & 0xF).astype(np.uint8)
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    t = TensorProto()
    t.name = name
    t.data_type = INT4 if signed else UINT4
    t.dims.extend(values.shape)
    t.raw_data = (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tobytes()
    return t


def qdq_case(k, n, granularity, block, signed, with_zp, rng):
    """Random codes [K, N], scale and zero point (None when absent) of one part C case, and the [K, N]
    float32 weight they stand for: (code - zp) * scale, zp 0 when absent."""
    codes = rng.integers(-8, 8, (k, n)) if signed else rng.integers(0, 16, (k, n))
    if granularity == "block":
        qshape = [(k + block - 1) // block, n]
    elif granularity == "column":
        qshape = [n]
    else:
        qshape = []
    scale = rng.uniform(0.01, 0.1, qshape).astype(np.float32)
    zp = None
    if with_zp:
        zp = rng.integers(-8, 8, qshape) if signed else rng.integers(0, 16, qshape)
    zp_arr = np.zeros(qshape, np.int64) if zp is None else np.asarray(zp, np.int64)

    def expand(v):  # scale or zero point -> [K, N]
        v = np.asarray(v)
        if granularity == "block":
            return v[np.arange(k) // block, :]
        return np.broadcast_to(v, (k, n))

    w = ((codes - expand(zp_arr)).astype(np.float32) * expand(scale)).astype(np.float32)
    return codes, scale, zp, w


def qdq_model(name, k, n, granularity, block, signed, codes, scale, zp, a_shape, output_w=False):
    """output_w: also output the dequantized weight w [K, N] (ONNX Runtime then does not fuse the
    DequantizeLinear + MatMul into an int8-activation MatMulNBits; see the docstring)."""
    inits = [int4_tensor("w_q", codes, signed), numpy_helper.from_array(scale, "w_scale")]
    dq_inputs = ["w_q", "w_scale"]
    if zp is not None:
        inits.append(int4_tensor("w_zero_point", zp, signed))
        dq_inputs.append("w_zero_point")
    attrs = {}
    if granularity == "block":
        attrs = {"axis": 0, "block_size": block}
    elif granularity == "column":
        attrs = {"axis": 1}
    nodes = [helper.make_node("DequantizeLinear", dq_inputs, ["w"], name="dq", **attrs),
             helper.make_node("MatMul", ["A", "w"], ["Y"], name="matmul")]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("A", TensorProto.FLOAT, a_shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, a_shape[:-1] + [n])]
                              + ([helper.make_tensor_value_info("w", TensorProto.FLOAT, [k, n])] if output_w else []),
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=OPSET[:1])
    model.ir_version = 10  # int4 needs IR 9+; onnx 1.12's helper would write 8
    return model  # no onnx.checker: onnx < 1.16 rejects IR 10 and data types 21 and 22


def part_c(work, report, kiln):
    print("part C: QDQ int4 (DequantizeLinear opset 21 of an int4/uint4 weight, then MatMul)")
    for name, k, n, granularity, block, signed, with_zp, a_shape, seed in CASES_C:
        rng = np.random.default_rng(seed)
        codes, scale, zp, w = qdq_case(k, n, granularity, block, signed, with_zp, rng)
        d = work / f"C_{name}"
        d.mkdir()
        case = (name, k, n, granularity, block, signed, codes, scale, zp, a_shape)
        onnx.save(qdq_model(*case), d / "m.onnx")  # what Kiln compiles
        onnx.save(qdq_model(*case, output_w=True), d / "ref.onnx")  # ONNX Runtime's unfused reference
        a = rng.standard_normal(a_shape).astype(np.float32)
        np.save(d / "A.npy", a)
        inputs = {"A": d / "A.npy"}
        label = f"C {name} A{a_shape}"
        ort = run_ort(d / "ref.onnx", inputs, d / "ort", "Y")
        if ort is None:
            report.fail(label, "ONNX Runtime failed")
            continue
        ort_w = np.load(d / "ort" / "w.npy")
        report.checks += 1
        if ort_w.shape != w.shape or not np.array_equal(ort_w, w):
            bad = "shape" if ort_w.shape != w.shape else f"{int((ort_w != w).sum())}/{w.size} elements differ"
            report.fail(f"{label} dequantized w", f"ONNX Runtime vs numpy: {bad}")
        else:
            print(f"PASS {label + ' dequantized w':52s} ONNX Runtime == numpy (exact)")
        ref = np.matmul(a.astype(np.float64), w.astype(np.float64))
        report.compare(f"{label} numpy", ref, ort)
        fused = run_ort(d / "m.onnx", inputs, d / "ort_fused", "Y")
        if fused is not None and fused.shape == ort.shape:
            print(f"NOTE {label + ' ORT fused':52s} max |err| = {float(np.abs(fused - ort).max()):.3g} "
                  f"(default session: MatMulNBits, int8 A; not checked)")
        if kiln is None:
            continue
        if not kiln.compile(d / "m.onnx", d / "m.kiln"):
            report.fail(label, "kiln-compile failed")
            continue
        for device in DEVICES:
            got = kiln.run(d / "m.kiln", device, inputs, d / device.replace(":", "_"), "Y")
            report.compare(f"{label} {device}", got, ort)


# ------------------------------------------------------------------ part D: int4 x int4 QDQ

GFX_D = ["gfx942", "gfx950", "gfx1100", "gfx1201", "gfx1250"]
# The matrix instruction each target must use for the 4-bit product.
INSTRUCTION_D = {"gfx942": "v_mfma_i32_16x16x32_i8", "gfx950": "v_mfma_i32_16x16x64_i8",
                 "gfx1100": "v_wmma_i32_16x16x16_iu4", "gfx1201": "v_wmma_i32_16x16x32_iu4",
                 "gfx1250": "v_wmma_i32_16x16x64_iu8"}
# name, K, N, A's shape, activations signed (int4, zero point 0) or uint4
# (zero point 8), weight scale per column or per tensor, A's scale, seed
CASES_D = [
    ("int4_act_k128_n48_m16_col", 128, 48, [16, 128], True, "column", 0.4, 401),
    ("uint4_act_k256_n64_batch_tensor", 256, 64, [2, 5, 256], False, "tensor", 0.3, 402),
    ("int4_act_k64_n32_decode_col", 64, 32, [1, 64], True, "column", 0.5, 403),
]


def qdq_int4_model(name, k, n, a_shape, signed, codes, w_scale, a_scale):
    a_zp = int4_tensor("a_zero_point", np.array(0 if signed else 8), signed)
    inits = [int4_tensor("w_q", codes, True), numpy_helper.from_array(w_scale, "w_scale"),
             numpy_helper.from_array(np.array(a_scale, np.float32), "a_scale"), a_zp]
    w_attrs = {"axis": 1} if w_scale.ndim == 1 else {}
    nodes = [helper.make_node("QuantizeLinear", ["A", "a_scale", "a_zero_point"], ["a_q"], name="qa"),
             helper.make_node("DequantizeLinear", ["a_q", "a_scale", "a_zero_point"], ["a_dq"],
                              name="dqa"),
             helper.make_node("DequantizeLinear", ["w_q", "w_scale"], ["w"], name="dqw", **w_attrs),
             helper.make_node("MatMul", ["a_dq", "w"], ["Y"], name="matmul")]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("A", TensorProto.FLOAT, a_shape)],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, a_shape[:-1] + [n])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=OPSET[:1])
    model.ir_version = 10
    return model


def part_d(work, report, kiln):
    print("part D: QDQ int4 activations x int4 weights (integer contractions of 4-bit values)")
    for name, k, n, a_shape, signed, granularity, a_scale, seed in CASES_D:
        rng = np.random.default_rng(seed)
        codes = rng.integers(-8, 8, (k, n))
        w_scale = rng.uniform(0.01, 0.1, [n] if granularity == "column" else []).astype(np.float32)
        # A spread over the 4-bit range and past it (saturation).
        a = (rng.standard_normal(a_shape) * 2.5 * a_scale).astype(np.float32)
        label = f"D {name}"
        model = qdq_int4_model(name, k, n, a_shape, signed, codes, w_scale, a_scale)
        d, inputs, ort = ort_case(work, f"D_{name}", model, a, label, report)
        if ort is None:
            continue
        lo, hi, z = (-8, 7, 0) if signed else (0, 15, 8)
        s32 = np.float32(a_scale)
        q = np.clip(np.rint(a / s32) + z, lo, hi)
        a_dq = ((q - z).astype(np.float32) * s32).astype(np.float32)
        w = (codes.astype(np.float32) * w_scale).astype(np.float32)
        report.compare(f"{label} numpy", np.matmul(a_dq.astype(np.float64), w.astype(np.float64)), ort)
        if kiln is None:
            continue
        artifact = d / "m.kiln"
        if not run([kiln.bin_dir / "kiln-compile", d / "m.onnx",
                    "--target=cpu," + ",".join(GFX_D), "--emulation", f"--dump-ir={d / 'ir'}",
                    "-o", artifact]):
            report.fail(label, "kiln-compile failed")
            continue
        # Up to 8 rows: the GEMV kernel of weights in panels, as for 8-bit
        # products (no matrix instruction; a matrix-core tile of 16 rows
        # would compute one).
        gemv = int(np.prod(a_shape[:-1])) <= 8
        for gfx in GFX_D:
            stages = sorted((d / "ir").glob(f"*-gpu-{gfx}.mlir"))
            gpu = stages[0].read_text() if len(stages) == 1 else ""
            used = sorted(set(re.findall(r'kiln\.matrix_instruction = "([^"]+)"', gpu)))
            want = [] if gemv else [INSTRUCTION_D[gfx]]
            report.checks += 1
            if used != want or not re.search(r"gpu\.func @dispatch_\d+_matmul", gpu):
                report.fail(f"{label} {gfx}", f"matrix instructions {used or 'none'}, expected "
                            f"{want or 'none (a GEMV kernel)'}")
        results = {}
        for device in ["cpu"] + [f"emu:{g}" for g in GFX_D]:
            got = kiln.run(artifact, device, inputs, d / device.replace(":", "_"), "Y")
            if report.compare(f"{label} {device}", got, ort):
                results[device] = got
        for device, got in results.items():
            if device != "cpu" and "cpu" in results:
                report.checks += 1
                if not np.array_equal(got.view(np.uint32), results["cpu"].view(np.uint32)):
                    report.fail(f"{label} {device}", "not bit-identical to the cpu's result")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", type=Path)
    parser.add_argument("--ort-only", action="store_true",
                        help="only the ONNX Runtime vs numpy checks (no Kiln build needed)")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    if args.build is None and not args.ort_only:
        parser.error("--build is required unless --ort-only")
    kiln = None if args.ort_only else Kiln(args.build.resolve() / "bin")
    work = Path(tempfile.mkdtemp(prefix="kiln-int4-"))
    report = Report()
    part_a(work, report, kiln)
    part_b(work, report, kiln)
    part_c(work, report, kiln)
    part_d(work, report, kiln)
    print(f"{report.checks} comparisons, {report.failures} failures")
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work)
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
