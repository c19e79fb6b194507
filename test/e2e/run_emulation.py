#!/usr/bin/python3
"""The matrix-core GEMM kernels of every gfx target, run on the emulated gfx
devices, against numpy references and the cpu target.

  /usr/bin/python3 test/e2e/run_emulation.py --build BUILD [--keep] [--filter REGEX]

Each case is a small model (ONNX built with onnx.helper, or kiln IR where ONNX
has no such type: int4) compiled once with
  kiln-compile --target=gfx942,gfx950,gfx1100,gfx1201,gfx1250,cpu --emulation
and run with kiln-run on cpu and on emu:<gfx> for every gfx target.
- Integer cases (MatMulInteger, ConvInteger, int4 kiln.matmul_integer) must be
  bit-identical to the exact numpy reference (int64) and to the cpu target.
- f32 cases (f32 models at f32 precision): CDNA's v_mfma_f32_16x16x4_f32 on
  gfx942 and gfx950, the generic path elsewhere; float64 reference, TOL 1e-5.
- Float cases: f16 operands (f16 models, or f32 models with --precision=f16 /
  bf16, whose operands the reference rounds the same way) multiply exactly and
  accumulate in f32 in an order the hardware does not specify. Tolerance:
  max |got - ref| <= TOL * max |ref|, ref in float64 from the rounded
  operands; TOL = 1e-5 for f32 results, 2e-3 for f16 results (half an f16 ulp
  is 4.9e-4 of the value). The f16 results must also round the same way on
  every emulated target (bit-identical to each other).
Each case checks that the kernel used the matrix-core instruction the target
table names (kiln-inspect does not show host kernels, so the gpu stage is
checked with --emit=gpu).

W4A8 (kiln.matmul_int4 with int8_activations: activations quantized to
int8 per row and group while staged, codes minus zero points as int8, each
group's i32 sums scaled into f32 as it ends) is defined to the bit: every
target must equal a float32 numpy model of its definition exactly.

W4A16 (kiln.matmul_int4 with --precision=f16/bf16: 4-bit weights
dequantized while staged) is a float case against the rounded operands; its
few-row products (f32 or f16 activations, with or without --precision) are
GEMV kernels in f32 arithmetic, checked against the unrounded operands.

GEMV kernels (products of at most 8 rows by constant weights, packed into
column panels at compile time): f32 with a bias, f16 compiled for the gfx
targets alone (f16 panels; no cpu run), int8 (exact); and on operands that
are arguments, contiguous along n (attention heads' scores x V, f32 with a
partial column block, uint8 x int8); each checks that every target built the
GEMV kernel (LDS, no matrix instruction).

Negative controls: the same integer and f16 GEMMs (and the uint8 x int8,
W4A16 and W4A8 ones) compiled with
--gfx-test-fault=swap-operands (A and B exchanged at the instruction) and
--gfx-test-fault=shift-lanes (each lane reads the A row of the next lane; in a
GEMV, the activation of the next row) must FAIL on every emulated target:
proof that the emulation catches a wiring bug. The row-reduction kernels
(Softmax, LayerNormalization: lanes per row, partials through LDS) with
--gfx-test-fault=skip-lane (each row's first lane's partials left out) must
fail likewise. The 3x3 f16 convolutions also
with --gfx-test-fault=window-taps (their window table's taps transposed),
which proves their image is read through the table.

Exit status: 0 pass, 1 failure.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_w4a8_vs_ort import w4a8  # noqa: E402  (the W4A8 numpy model)
GFX = ["gfx942", "gfx950", "gfx1100", "gfx1201", "gfx1250"]
# The targets with an f32 matrix instruction; the others run f32 products on
# the generic path.
F32_MATRIX = {"gfx942": "v_mfma_f32_16x16x4_f32", "gfx950": "v_mfma_f32_16x16x4_f32"}


def targets_of(extra):
    """The gfx targets a case is compiled for and run on."""
    return list(F32_MATRIX) if "cdna-only" in extra else GFX
rng = np.random.RandomState(11)
ONNX_TYPE = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
             np.dtype(np.int32): TensorProto.INT32, np.dtype(np.float16): TensorProto.FLOAT16,
             np.dtype(np.float32): TensorProto.FLOAT}


def log(msg=""):
    print(msg, flush=True)


def onnx_model(path, op, inputs, out_dtype, out_shape, attrs=None):
    names = list(inputs)
    node = helper.make_node(op, names, ["y"], name=op.lower(), **(attrs or {}))
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, ONNX_TYPE[a.dtype], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info("y", ONNX_TYPE[np.dtype(out_dtype)], out_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def onnx_constant_weight_model(path, op, x, w, out_dtype, out_shape, bias=None):
    """y = op(x, w) (+ bias), w (and the bias) constant initializers: kiln-compile
    packs a few-row product's constant weight into column panels, which the
    gfx GEMV kernels stream."""
    nodes = [helper.make_node(op, ["x", "w"], ["p" if bias is not None else "y"], name="mm")]
    inits = [helper.make_tensor("w", ONNX_TYPE[w.dtype], w.shape, w.flatten().tolist())]
    if bias is not None:
        nodes.append(helper.make_node("Add", ["p", "b"], ["y"], name="add"))
        inits.append(helper.make_tensor("b", ONNX_TYPE[bias.dtype], bias.shape,
                                        bias.flatten().tolist()))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", ONNX_TYPE[x.dtype], x.shape)],
        [helper.make_tensor_value_info("y", ONNX_TYPE[np.dtype(out_dtype)], out_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def to_bf16(x):
    """float32 -> bfloat16 (round to nearest even) -> float64."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def conv_ref(x, w, stride=1, pad=0, dilation=1, dtype=np.int64):
    """NCHW x OIHW with symmetric zero padding, in int64 or float64."""
    x = np.pad(x.astype(dtype), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow), dtype)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i * dilation:i * dilation + stride * (oh - 1) + 1:stride,
                      j * dilation:j * dilation + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(dtype))
    return out


def cases(work):
    """(name, model path, inputs, reference, kind, compile args, expected instruction
    mnemonic pattern or None)."""
    out = []

    a = rng.randint(-128, 128, (128, 256)).astype(np.int8)
    b = rng.randint(-128, 128, (256, 192)).astype(np.int8)
    p = work / "matmul_i8.onnx"
    onnx_model(p, "MatMulInteger", {"a": a, "b": b}, np.int32, [128, 192])
    out.append(("MatMulInteger i8 x i8 128x256x192", p, {"a": a, "b": b},
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "exact", [],
                r"_i8|_iu8"))

    # uint8 activations x int8 weights (quantized models): on the MFMA
    # targets A is staged as a - 128 and corrected by a second accumulator.
    a = rng.randint(0, 256, (96, 160)).astype(np.uint8)
    b = rng.randint(-128, 128, (160, 80)).astype(np.int8)
    p = work / "matmul_u8i8.onnx"
    onnx_model(p, "MatMulInteger", {"a": a, "b": b}, np.int32, [96, 80])
    out.append(("MatMulInteger u8 x i8 96x160x80", p, {"a": a, "b": b},
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "exact", [],
                r"_i8|_iu8"))
    # (The lowering widens an unsigned B to i32 before the matmul, so this
    # one takes the generic path on every target.)
    a = rng.randint(-128, 128, (80, 96)).astype(np.int8)
    b = rng.randint(0, 256, (96, 112)).astype(np.uint8)
    p = work / "matmul_i8u8.onnx"
    onnx_model(p, "MatMulInteger", {"a": a, "b": b}, np.int32, [80, 112])
    out.append(("MatMulInteger i8 x u8 80x96x112", p, {"a": a, "b": b},
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "exact", [], None))

    a = rng.randint(0, 256, (96, 160)).astype(np.uint8)
    b = rng.randint(0, 256, (160, 80)).astype(np.uint8)
    p = work / "matmul_u8.onnx"
    onnx_model(p, "MatMulInteger", {"a": a, "b": b}, np.int32, [96, 80])
    out.append(("MatMulInteger u8 x u8 96x160x80", p, {"a": a, "b": b},
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "exact", [], None))

    a = rng.randint(-128, 128, (2, 64, 128)).astype(np.int8)
    b = rng.randint(-128, 128, (2, 128, 96)).astype(np.int8)
    p = work / "bmm_i8.onnx"
    onnx_model(p, "MatMulInteger", {"a": a, "b": b}, np.int32, [2, 64, 96])
    out.append(("MatMulInteger batched i8 2x64x128x96", p, {"a": a, "b": b},
                np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(np.int32), "exact", [],
                r"_i8|_iu8"))

    x = rng.randint(-128, 128, (1, 64, 12, 12)).astype(np.int8)
    w = rng.randint(-128, 128, (96, 64, 1, 1)).astype(np.int8)
    p = work / "conv1x1_i8.onnx"
    onnx_model(p, "ConvInteger", {"x": x, "w": w}, np.int32, [1, 96, 12, 12])
    out.append(("ConvInteger 1x1 i8 64->96 12x12", p, {"x": x, "w": w},
                conv_ref(x, w).astype(np.int32), "exact", [], r"_i8|_iu8"))

    x = rng.randint(-128, 128, (1, 16, 10, 10)).astype(np.int8)
    w = rng.randint(-128, 128, (32, 16, 3, 3)).astype(np.int8)
    p = work / "conv3x3_i8.onnx"
    onnx_model(p, "ConvInteger", {"x": x, "w": w}, np.int32, [1, 32, 8, 8])
    out.append(("ConvInteger 3x3 i8 16->32 10x10", p, {"x": x, "w": w},
                conv_ref(x, w).astype(np.int32), "exact", [], None))

    # int4 has no ONNX type before opset 21: kiln IR casting int8 values in
    # [-8, 7] to i4.
    a = rng.randint(-8, 8, (128, 256)).astype(np.int8)
    b = rng.randint(-8, 8, (256, 128)).astype(np.int8)
    p = work / "matmul_i4.mlir"
    p.write_text(
        "func.func @main(%a8: tensor<128x256xi8>, %b8: tensor<256x128xi8>) -> tensor<128x128xi32> {\n"
        "  %a = kiln.cast %a8 : tensor<128x256xi8> to tensor<128x256xi4>\n"
        "  %b = kiln.cast %b8 : tensor<256x128xi8> to tensor<256x128xi4>\n"
        "  %0 = kiln.matmul_integer %a, %b : (tensor<128x256xi4>, tensor<256x128xi4>) -> tensor<128x128xi32>\n"
        "  return %0 : tensor<128x128xi32>\n}\n")
    # RDNA's iu4 WMMA; the 8-bit instruction elsewhere, the values widened
    # as they are staged.
    out.append(("kiln.matmul_integer i4 x i4 128x256x128", p, {"input0": a, "input1": b},
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "exact", [],
                r"_iu4|_i8|_iu8"))
    # ... and with RDNA's large tilings (4-bit fragments packed per 4 bytes).
    out.append(("kiln.matmul_integer i4 x i4 128x256x128 --gfx-test-large-tiling", p,
                {"input0": a, "input1": b},
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "exact",
                ["--gfx-test-large-tiling"], None))

    a = rng.uniform(-1, 1, (128, 256)).astype(np.float16)
    b = rng.uniform(-1, 1, (256, 192)).astype(np.float16)
    p = work / "matmul_f16.onnx"
    onnx_model(p, "MatMul", {"a": a, "b": b}, np.float16, [128, 192])
    out.append(("MatMul f16 128x256x192", p, {"a": a, "b": b},
                a.astype(np.float64) @ b.astype(np.float64), 2e-3, [], r"_f16"))

    # f32 at f32 precision: CDNA's f32 matrix instruction
    # (v_mfma_f32_16x16x4_f32, one element per lane), in both tilings (the
    # large one on partial tiles); the other targets have none and take the
    # generic path (mnemonic "F32": see F32_MATRIX).
    a = rng.uniform(-1, 1, (128, 256)).astype(np.float32)
    b = rng.uniform(-1, 1, (256, 192)).astype(np.float32)
    p = work / "matmul_f32_matrix.onnx"
    onnx_model(p, "MatMul", {"a": a, "b": b}, np.float32, [128, 192])
    out.append(("MatMul f32 128x256x192", p, {"a": a, "b": b},
                a.astype(np.float64) @ b.astype(np.float64), 1e-5, [], "F32"))
    a = rng.uniform(-1, 1, (200, 256)).astype(np.float32)
    b = rng.uniform(-1, 1, (256, 176)).astype(np.float32)
    p = work / "matmul_f32_large_tile.onnx"
    onnx_model(p, "MatMul", {"a": a, "b": b}, np.float32, [200, 176])
    out.append(("MatMul f32 200x256x176 --gfx-test-large-tiling", p, {"a": a, "b": b},
                a.astype(np.float64) @ b.astype(np.float64), 1e-5, ["--gfx-test-large-tiling"],
                "F32"))

    # The large-GEMM tiling (4 x 4 instruction tiles per wave, a 128 x 128
    # tile; what gfx942/gfx950 choose for GEMMs that fill the chip), forced
    # on a shape that is not a multiple of the tile: 2 x 2 workgroups, the
    # last row and column of tiles partial.
    a = rng.uniform(-1, 1, (200, 256)).astype(np.float16)
    b = rng.uniform(-1, 1, (256, 176)).astype(np.float16)
    p = work / "matmul_f16_large_tile.onnx"
    onnx_model(p, "MatMul", {"a": a, "b": b}, np.float16, [200, 176])
    out.append(("MatMul f16 200x256x176 --gfx-test-wave-tiles=4", p, {"a": a, "b": b},
                a.astype(np.float64) @ b.astype(np.float64), 2e-3, ["--gfx-test-wave-tiles=4"],
                r"_f16"))
    a16, b16 = a, b
    a = rng.randint(0, 256, (160, 192)).astype(np.uint8)
    b = rng.randint(-128, 128, (192, 144)).astype(np.int8)
    p = work / "matmul_u8i8_large_tile.onnx"
    onnx_model(p, "MatMulInteger", {"a": a, "b": b}, np.int32, [160, 144])
    out.append(("MatMulInteger u8 x i8 160x192x144 --gfx-test-wave-tiles=4", p, {"a": a, "b": b},
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "exact",
                ["--gfx-test-wave-tiles=4"], r"_i8|_iu8"))
    # Each target table's own large tiling forced on the same GEMMs (CDNA,
    # RDNA3 and gfx1250: 2 x 2 waves of 4 x 4 tiles; RDNA4: 2 x 4 waves of
    # 4 x 2 tiles).
    out.append(("MatMul f16 200x256x176 --gfx-test-large-tiling", work / "matmul_f16_large_tile.onnx",
                {"a": a16, "b": b16}, a16.astype(np.float64) @ b16.astype(np.float64), 2e-3,
                ["--gfx-test-large-tiling"], r"_f16"))
    out.append(("MatMulInteger u8 x i8 160x192x144 --gfx-test-large-tiling", p, {"a": a, "b": b},
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "exact",
                ["--gfx-test-large-tiling"], r"_i8|_iu8"))
    # int8 x int8 in the large tiling: XOR-swizzled panels, B staged as
    # transposed 4 x 4 byte blocks, partial tiles in m and n.
    a8 = rng.randint(-128, 128, (160, 192)).astype(np.int8)
    b8 = rng.randint(-128, 128, (192, 144)).astype(np.int8)
    p8 = work / "matmul_i8_large_tile.onnx"
    onnx_model(p8, "MatMulInteger", {"a": a8, "b": b8}, np.int32, [160, 144])
    out.append(("MatMulInteger i8 x i8 160x192x144 --gfx-test-large-tiling", p8,
                {"a": a8, "b": b8}, (a8.astype(np.int64) @ b8.astype(np.int64)).astype(np.int32),
                "exact", ["--gfx-test-large-tiling"], r"_i8|_iu8"))

    # A 1x1 convolution with a bias: the accumulator starts at the bias.
    x = rng.uniform(-1, 1, (1, 64, 12, 12)).astype(np.float16)
    w = rng.uniform(-1, 1, (96, 64, 1, 1)).astype(np.float16)
    bias = rng.uniform(-1, 1, (96,)).astype(np.float16)
    p = work / "conv1x1_f16.onnx"
    onnx_model(p, "Conv", {"x": x, "w": w, "bias": bias}, np.float16, [1, 96, 12, 12])
    out.append(("Conv 1x1 f16 with bias 64->96 12x12", p, {"x": x, "w": w, "bias": bias},
                np.einsum("nchw,oc->nohw", x.astype(np.float64), w[:, :, 0, 0].astype(np.float64))
                + bias.astype(np.float64)[None, :, None, None], 2e-3, [], r"_f16"))

    # 3x3 convolutions as implicit GEMMs: padding, strides, dilations, a
    # bias, an output size that is no multiple of the tile.
    x = rng.uniform(-1, 1, (1, 32, 16, 16)).astype(np.float16)
    w = rng.uniform(-1, 1, (64, 32, 3, 3)).astype(np.float16)
    bias = rng.uniform(-1, 1, (64,)).astype(np.float16)
    p = work / "conv3x3_f16.onnx"
    onnx_model(p, "Conv", {"x": x, "w": w, "bias": bias}, np.float16, [1, 64, 16, 16],
               {"pads": [1, 1, 1, 1]})
    out.append(("Conv 3x3 f16 pad 1 with bias 32->64 16x16", p, {"x": x, "w": w, "bias": bias},
                conv_ref(x, w, 1, 1, 1, np.float64) + bias.astype(np.float64)[None, :, None, None],
                2e-3, [], r"_f16"))
    # The bias as a constant inside the dispatch (small biases are inlined).
    x = rng.uniform(-1, 1, (1, 16, 8, 8)).astype(np.float16)
    w = rng.uniform(-1, 1, (32, 16, 3, 3)).astype(np.float16)
    bias = np.array([0.5, -0.25, 1.0, 0.125, -1.0, 2.0, 0.75, -0.5] * 4, np.float16)
    p = ROOT / "test/Codegen/AMDGPU/Inputs/conv3x3_const_bias_f16.mlir"
    out.append(("Conv 3x3 f16 with a constant bias 16->32 8x8", p, {"input0": x, "input1": w},
                conv_ref(x, w, 1, 1, 1, np.float64) + bias.astype(np.float64)[None, :, None, None],
                2e-3, [], r"_f16"))
    x = rng.uniform(-1, 1, (2, 24, 15, 15)).astype(np.float32)
    w = rng.uniform(-1, 1, (40, 24, 3, 3)).astype(np.float32)
    p = work / "conv3x3_s2_f32.onnx"
    onnx_model(p, "Conv", {"x": x, "w": w}, np.float32, [2, 40, 8, 8],
               {"pads": [1, 1, 1, 1], "strides": [2, 2]})
    out.append(("Conv 3x3 stride 2 pad 1 batch 2 f32 24->40 15x15 --precision=f16", p,
                {"x": x, "w": w},
                conv_ref(x.astype(np.float16), w.astype(np.float16), 2, 1, 1, np.float64),
                1e-5, ["--precision=f16"], r"_f16"))
    # A grouped convolution (RegNet's, ResNeXt's): an implicit GEMM per group,
    # the group a batch loop of the kernel.
    x = rng.uniform(-1, 1, (1, 64, 14, 14)).astype(np.float16)
    w = rng.uniform(-1, 1, (64, 16, 3, 3)).astype(np.float16)
    p = work / "conv3x3_grouped_f16.onnx"
    onnx_model(p, "Conv", {"x": x, "w": w}, np.float16, [1, 64, 14, 14],
               {"pads": [1, 1, 1, 1], "group": 4})
    out.append(("Conv 3x3 f16 grouped 4 x 16->16 14x14", p, {"x": x, "w": w},
                np.concatenate([conv_ref(x[:, 16 * g:16 * g + 16], w[16 * g:16 * g + 16],
                                         1, 1, 1, np.float64) for g in range(4)], axis=1),
                2e-3, [], r"_f16"))
    # A 7x7 window (a ResNet stem): more taps than the window table's bits,
    # so the image is gathered with its indices checked per element.
    x = rng.uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, 3, 7, 7)).astype(np.float32)
    p = work / "conv7x7_s2_f32.onnx"
    onnx_model(p, "Conv", {"x": x, "w": w}, np.float32, [1, 16, 16, 16],
               {"pads": [3, 3, 3, 3], "strides": [2, 2]})
    out.append(("Conv 7x7 stride 2 pad 3 f32 3->16 32x32 --precision=f16", p,
                {"x": x, "w": w},
                conv_ref(x.astype(np.float16), w.astype(np.float16), 2, 3, 1, np.float64),
                1e-5, ["--precision=f16"], r"_f16"))
    x = rng.uniform(-1, 1, (1, 16, 14, 14)).astype(np.float32)
    w = rng.uniform(-1, 1, (32, 16, 3, 3)).astype(np.float32)
    p = work / "conv3x3_d2_f32.onnx"
    onnx_model(p, "Conv", {"x": x, "w": w}, np.float32, [1, 32, 14, 14],
               {"pads": [2, 2, 2, 2], "dilations": [2, 2]})
    out.append(("Conv 3x3 dilation 2 pad 2 f32 16->32 14x14 --precision=bf16", p,
                {"x": x, "w": w},
                conv_ref(to_bf16(x), to_bf16(w), 1, 2, 2, np.float64), 1e-5,
                ["--precision=bf16"], r"_bf16"))

    # W4A16: kiln.matmul_int4 (4-bit codes in groups of 128 rows, a scale and
    # zero point per group and column) with 16-bit activations: B is
    # dequantized while staged, (code - zero) * scale in f32, then rounded
    # to f16 / bf16 like A.
    x = rng.uniform(-1, 1, (96, 256)).astype(np.float32)
    codes = rng.randint(0, 256, (2, 64, 160)).astype(np.uint8)
    scale = rng.uniform(0.01, 0.1, (2, 160)).astype(np.float32)
    zero = rng.randint(0, 16, (2, 160)).astype(np.float32)
    nibbles = np.concatenate([codes & 15, codes >> 4], axis=1).astype(np.float32)  # [2, 128, 160]
    w = ((nibbles - zero[:, None, :]) * scale[:, None, :]).reshape(256, 160)
    p = work / "matmul_int4.mlir"
    p.write_text(
        "func.func @main(%x: tensor<96x256xf32>, %w: tensor<2x64x160xi8>, %s: tensor<2x160xf32>,"
        " %z: tensor<2x160xf32>) -> tensor<96x160xf32> {\n"
        "  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<96x256xf32>, tensor<2x64x160xi8>,"
        " tensor<2x160xf32>, tensor<2x160xf32>) -> tensor<96x160xf32>\n"
        "  return %0 : tensor<96x160xf32>\n}\n")
    int4_inputs = {"input0": x, "input1": codes.view(np.int8), "input2": scale, "input3": zero}
    out.append(("kiln.matmul_int4 W4A16 96x256x160 --precision=f16", p, int4_inputs,
                x.astype(np.float16).astype(np.float64) @ w.astype(np.float16).astype(np.float64),
                1e-5, ["--precision=f16"], r"_f16"))
    out.append(("kiln.matmul_int4 W4A16 96x256x160 --precision=bf16", p, int4_inputs,
                to_bf16(x) @ to_bf16(w), 1e-5, ["--precision=bf16"], r"_bf16"))

    # W4A16 GEMVs: kiln.matmul_int4 of at most 8 rows streams the codes in
    # f32 arithmetic, (sum x c - z sum x) s per group, with any float
    # activations. f32: 3 rows, groups of 32, 200 columns (13 column blocks
    # of 16, the last one partial), 192 code rows in steps of 256 (the last
    # row groups' rows out of range); f16 (activations, scales and zero
    # points): 5 rows, groups of 128; f32 with --precision=f16: one row, not
    # rounded to f16.
    for name, (m, k, n, group, dtype, extra) in {
            "kiln.matmul_int4 GEMV f32 3x384x200, groups of 32": (3, 384, 200, 32, np.float32, []),
            "kiln.matmul_int4 GEMV f16 5x256x72, groups of 128": (5, 256, 72, 128, np.float16, []),
            "kiln.matmul_int4 GEMV f32 1x512x256 --precision=f16": (1, 512, 256, 64, np.float32,
                                                                   ["--precision=f16"])}.items():
        groups = k // group
        x = rng.uniform(-1, 1, (m, k)).astype(dtype)
        codes = rng.randint(0, 256, (groups, group // 2, n)).astype(np.uint8)
        scale = rng.uniform(0.01, 0.1, (groups, n)).astype(dtype)
        zero = rng.randint(0, 16, (groups, n)).astype(dtype)
        nibbles = np.concatenate([codes & 15, codes >> 4], axis=1).astype(np.float64)
        w = ((nibbles - zero[:, None, :].astype(np.float64)) *
             scale[:, None, :].astype(np.float64)).reshape(k, n)
        t = "f16" if dtype == np.float16 else "f32"
        p = work / f"gemv_int4_{m}x{k}x{n}_{t}.mlir"
        p.write_text(
            f"func.func @main(%x: tensor<{m}x{k}x{t}>, %w: tensor<{groups}x{group // 2}x{n}xi8>,"
            f" %s: tensor<{groups}x{n}x{t}>, %z: tensor<{groups}x{n}x{t}>) -> tensor<{m}x{n}x{t}> {{\n"
            f"  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<{m}x{k}x{t}>,"
            f" tensor<{groups}x{group // 2}x{n}xi8>, tensor<{groups}x{n}x{t}>,"
            f" tensor<{groups}x{n}x{t}>) -> tensor<{m}x{n}x{t}>\n"
            f"  return %0 : tensor<{m}x{n}x{t}>\n}}\n")
        out.append((name, p, {"input0": x, "input1": codes.view(np.int8), "input2": scale,
                              "input3": zero},
                    x.astype(np.float64) @ w, 2e-3 if dtype == np.float16 else 1e-5, extra,
                    "GEMV"))

    # W4A8: kiln.matmul_int4 with int8_activations, codes in the W4A8 panels
    # [N / 32, K / G, G / 8, 32, 4] (the cpu's and the gfx kernels' layout):
    # the value is defined to the bit (run_w4a8_vs_ort.w4a8, the numpy model
    # that test checks against ONNX Runtime), so every target must
    # equal it exactly. Groups that end within a step (64), after two
    # iterations (256, a conditional flush on the 16- and 32-deep
    # instructions' targets), and shorter than the instruction (16: one
    # instruction per group on CDNA's 32- and gfx950's / gfx1250's 64-deep
    # ones); 40 rows (a partial tile), 5 rows (a decode-like tile of 16).
    for m, k, n, group in ((96, 256, 96, 64), (40, 512, 64, 256), (5, 128, 32, 16)):
        groups, panels = k // group, n // 32
        x = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        x[0, :group] = 0  # a group of zeros: amax 0
        q = rng.randint(0, 16, (k, n))
        zero = rng.randint(0, 16, (groups, n)).astype(np.float32)
        scale = rng.uniform(0.01, 0.1, (groups, n)).astype(np.float32)
        codes = np.zeros((panels, groups, group // 8, 32, 4), np.uint8)
        for g in range(groups):
            for h in range(2):
                rows = q[g * group + h * group // 2:g * group + (h + 1) * group // 2]  # [G/2, N]
                quads = rows.reshape(group // 8, 4, panels, 32).transpose(2, 0, 3, 1)
                codes[:, g] |= (quads << (4 * h)).astype(np.uint8)
        panel = lambda v: v.reshape(groups, panels, 32).transpose(1, 0, 2).copy()  # noqa: E731
        p = work / f"w4a8_{m}x{k}x{n}_g{group}.mlir"
        types = (f"tensor<{m}x{k}xf32>, tensor<{panels}x{groups}x{group // 8}x32x4xi8>, "
                 f"tensor<{panels}x{groups}x32xf32>, tensor<{panels}x{groups}x32xf32>")
        p.write_text(
            f"func.func @main(%x: tensor<{m}x{k}xf32>, %w: tensor<{panels}x{groups}x{group // 8}x32x4xi8>,"
            f" %s: tensor<{panels}x{groups}x32xf32>, %z: tensor<{panels}x{groups}x32xf32>)"
            f" -> tensor<{m}x{n}xf32> {{\n"
            f"  %0 = kiln.matmul_int4 %x, %w, %s, %z {{int8_activations}} : ({types})"
            f" -> tensor<{m}x{n}xf32>\n"
            f"  return %0 : tensor<{m}x{n}xf32>\n}}\n")
        out.append((f"kiln.matmul_int4 W4A8 {m}x{k}x{n}, groups of {group}", p,
                    {"input0": x, "input1": codes.view(np.int8), "input2": panel(scale),
                     "input3": panel(zero)},
                    w4a8(x, q.T, scale.T, zero.T, k, group), "identical", [], r"_i8|_iu8"))

    a = rng.uniform(-1, 1, (96, 200)).astype(np.float32)
    b = rng.uniform(-1, 1, (200, 80)).astype(np.float32)
    p = work / "matmul_f32.onnx"
    onnx_model(p, "MatMul", {"a": a, "b": b}, np.float32, [96, 80])
    out.append(("MatMul f32 96x200x80 --precision=f16", p, {"a": a, "b": b},
                a.astype(np.float16).astype(np.float64) @ b.astype(np.float16).astype(np.float64),
                1e-5, ["--precision=f16"], r"_f16"))
    out.append(("MatMul f32 96x200x80 --precision=bf16", p, {"a": a, "b": b},
                to_bf16(a) @ to_bf16(b), 1e-5, ["--precision=bf16"], r"_bf16"))

    # GEMV kernels: products of at most 8 rows by constant weights, which
    # kiln-compile packs into column panels (with the cpu as wide as its
    # widest register tile; for gfx alone 16 columns, f16 too). K not a
    # multiple of the row groups' steps, N not of the panels.
    x = rng.uniform(-1, 1, (1, 600)).astype(np.float32)
    w = rng.uniform(-1, 1, (600, 200)).astype(np.float32)
    bias = rng.uniform(-1, 1, (200,)).astype(np.float32)
    p = work / "gemv_f32.onnx"
    onnx_constant_weight_model(p, "MatMul", x, w, np.float32, [1, 200], bias)
    out.append(("GEMV f32 1x600x200 + bias", p, {"x": x},
                x.astype(np.float64) @ w.astype(np.float64) + bias, 1e-5, [], "GEMV"))
    x = rng.uniform(-1, 1, (5, 1000)).astype(np.float16)
    w = rng.uniform(-1, 1, (1000, 72)).astype(np.float16)
    p = work / "gemv_f16.onnx"
    onnx_constant_weight_model(p, "MatMul", x, w, np.float16, [5, 72])
    out.append(("GEMV f16 5x1000x72, gfx targets alone (f16 panels)", p, {"x": x},
                x.astype(np.float64) @ w.astype(np.float64), 2e-3, ["gfx-only"], "GEMV"))
    a = rng.randint(-128, 128, (2, 520)).astype(np.int8)
    b = rng.randint(-128, 128, (520, 96)).astype(np.int8)
    p = work / "gemv_i8.onnx"
    onnx_constant_weight_model(p, "MatMulInteger", a, b, np.int32, [2, 96])
    out.append(("GEMV MatMulInteger i8 x i8 2x520x96", p, {"x": a},
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "exact", [], "GEMV"))
    # --precision=f16 for the gfx targets alone stores constant f32 weights
    # in f16 (kiln-narrow-matmul-weights): the GEMM stages them as they are,
    # the GEMV streams half the bytes (its activations stay f32), the
    # implicit GEMM reads an f16 filter. References round what each kernel
    # rounds.
    x = rng.uniform(-1, 1, (96, 200)).astype(np.float32)
    w = rng.uniform(-1, 1, (200, 80)).astype(np.float32)
    p = work / "gemm_const_f32.onnx"
    onnx_constant_weight_model(p, "MatMul", x, w, np.float32, [96, 80])
    out.append(("MatMul f32 96x200x80 constant weight, gfx alone --precision=f16", p, {"x": x},
                x.astype(np.float16).astype(np.float64) @ w.astype(np.float16).astype(np.float64),
                1e-5, ["gfx-only", "--precision=f16"], r"_f16"))
    # For gfx targets alone a constant weight of more than 8 rows' product
    # is stored k-fastest (kiln-transpose-matmul-weights) and the GEMM reads
    # B along k: f16 weights as they are (K 320: steps of 64, N and M not
    # multiples of the tile), in both tilings, and f32 weights with f32
    # arithmetic (CDNA's f32 instruction; the generic path reads the
    # transpose on the others).
    x = rng.uniform(-1, 1, (200, 320)).astype(np.float16)
    w = rng.uniform(-1, 1, (320, 144)).astype(np.float16)
    p = work / "gemm_const_f16.onnx"
    onnx_constant_weight_model(p, "MatMul", x, w, np.float16, [200, 144])
    ref = x.astype(np.float64) @ w.astype(np.float64)
    out.append(("MatMul f16 200x320x144 constant weight k-fastest, gfx alone", p, {"x": x},
                ref, 2e-3, ["gfx-only"], r"_f16"))
    out.append(("MatMul f16 200x320x144 constant weight k-fastest, gfx alone "
                "--gfx-test-large-tiling", p, {"x": x}, ref, 2e-3,
                ["gfx-only", "--gfx-test-large-tiling"], r"_f16"))
    # The int8 weight of an integer product (no weight zero point) too: int8
    # and uint8 activations (the latter staged as a - 128 and corrected),
    # K 300 (not a multiple of the steps), in both tilings.
    for signed in (True, False):
        x = (rng.randint(-128, 128, (96, 300)).astype(np.int8) if signed
             else rng.randint(0, 256, (96, 300)).astype(np.uint8))
        w = rng.randint(-128, 128, (300, 80)).astype(np.int8)
        kind = "i8" if signed else "u8"
        p = work / f"gemm_const_{kind}.onnx"
        onnx_constant_weight_model(p, "MatMulInteger", x, w, np.int32, [96, 80])
        ref = (x.astype(np.int64) @ w.astype(np.int64)).astype(np.int32)
        out.append((f"MatMulInteger {kind} x i8 96x300x80 constant weight k-fastest, gfx alone",
                    p, {"x": x}, ref, "exact", ["gfx-only"], r"_i8|_iu8"))
        out.append((f"MatMulInteger {kind} x i8 96x300x80 constant weight k-fastest, gfx alone "
                    "--gfx-test-large-tiling", p, {"x": x}, ref, "exact",
                    ["gfx-only", "--gfx-test-large-tiling"], r"_i8|_iu8"))
    x = rng.uniform(-1, 1, (24, 40)).astype(np.float32)
    w = rng.uniform(-1, 1, (40, 36)).astype(np.float32)
    p = work / "gemm_const_f32_k_major.onnx"
    onnx_constant_weight_model(p, "MatMul", x, w, np.float32, [24, 36])
    out.append(("MatMul f32 24x40x36 constant weight k-fastest, gfx alone", p, {"x": x},
                x.astype(np.float64) @ w.astype(np.float64), 1e-5, ["gfx-only"], ""))
    x = rng.uniform(-1, 1, (2, 300)).astype(np.float32)
    w = rng.uniform(-1, 1, (300, 48)).astype(np.float32)
    p = work / "gemv_const_f32.onnx"
    onnx_constant_weight_model(p, "MatMul", x, w, np.float32, [2, 48])
    out.append(("GEMV f32 2x300x48 constant weight, gfx alone --precision=bf16", p, {"x": x},
                x.astype(np.float64) @ to_bf16(w), 1e-5, ["gfx-only", "--precision=bf16"], "GEMV"))
    x = rng.uniform(-1, 1, (1, 8, 10, 10)).astype(np.float32)
    w = rng.uniform(-1, 1, (16, 8, 3, 3)).astype(np.float32)
    p = work / "conv_const_f32.onnx"
    onnx_constant_weight_model(p, "Conv", x, w, np.float32, [1, 16, 8, 8])
    out.append(("Conv 3x3 f32 8->16 constant filter, gfx alone --precision=f16", p, {"x": x},
                conv_ref(x.astype(np.float16), w.astype(np.float16), 1, 0, 1, np.float64),
                1e-5, ["gfx-only", "--precision=f16"], r"_f16"))
    # One output tile for the largest chip's 304 CUs: kiln-split-k-convs
    # splits the 256 input channels in 16 parts, a grouped implicit GEMM
    # sums each, a reduction adds them and the bias.
    x = rng.uniform(-1, 1, (1, 256, 7, 7)).astype(np.float32)
    w = rng.uniform(-1, 1, (64, 256, 3, 3)).astype(np.float32)
    bias = rng.uniform(-1, 1, (1, 64, 1, 1)).astype(np.float32)
    p = work / "conv_split_k_f32.onnx"
    onnx_constant_weight_model(p, "Conv", x, w, np.float32, [1, 64, 5, 5], bias)
    out.append(("Conv 3x3 f32 256->64 7x7 constant filter split in 16, gfx alone --precision=f16",
                p, {"x": x},
                conv_ref(x.astype(np.float16), w.astype(np.float16), 1, 0, 1, np.float64)
                + bias.astype(np.float64),
                1e-5, ["gfx-only", "--precision=f16"], r"_f16"))
    # The same in f32 on CDNA alone: the parts on the f32 instruction (an
    # implicit GEMM with the rearranged filter a constant of the dispatch).
    out.append(("Conv 3x3 f32 256->64 7x7 constant filter split in 16, CDNA alone",
                p, {"x": x}, conv_ref(x, w, 1, 0, 1, np.float64) + bias.astype(np.float64),
                1e-5, ["gfx-only", "cdna-only"], "F32"))

    # Reductions of few outputs over many elements, for gfx alone: rows of
    # the last axis alone stay whole, one row kernel with lanes per row
    # (kiln-split-reductions' max-row; the kernel stores one value per row):
    # a maximum per row of 16 x 4096, and the minima of [x; -x] (dynamic
    # quantization's range of x in one pass: the product with the signs is
    # computed as the row is read); a mean over all but the first axis,
    # kept, is split in two (parts of 8).
    # (Each row's extremes are among its first elements, the first lane's,
    # so that the skip-lane control changes every result.)
    x = rng.uniform(-1, 1, (16, 4096)).astype(np.float32)
    x[:, 1] = rng.uniform(1.5, 2, 16)
    p = work / "reduce_max_rows.onnx"
    onnx_model(p, "ReduceMax", {"x": x}, np.float32, [16], {"axes": [1], "keepdims": 0})
    out.append(("ReduceMax 16 rows of 4096, gfx alone (row kernel, one value per row)", p,
                {"x": x}, x.astype(np.float64).max(axis=1), "identical", ["gfx-only"], "ROWS"))
    x = rng.uniform(-3, 2, (1, 16, 2048)).astype(np.float32)
    x[..., 0], x[..., 2] = rng.uniform(3, 4, 16), rng.uniform(-5, -4, 16)
    signs = np.array([1, -1], np.float32).reshape(2, 1, 1)
    p = work / "range_rows.onnx"
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "signs"], ["stacked"], name="mul"),
         helper.make_node("ReduceMin", ["stacked"], ["y"], name="reducemin", axes=[2], keepdims=0)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor("signs", TensorProto.FLOAT, signs.shape, signs.flatten().tolist())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(p))
    out.append(("ReduceMin of [x; -x], 2 x 16 rows of 2048, gfx alone (row kernel with its "
                "product, one value per row)", p, {"x": x},
                (x.astype(np.float64) * signs).min(axis=2), "identical", ["gfx-only"], "ROWS"))
    x = rng.uniform(-1, 1, (2, 64, 128)).astype(np.float32)
    p = work / "reduce_mean_all.onnx"
    onnx_model(p, "ReduceMean", {"x": x}, np.float32, [2, 1, 1], {"axes": [1, 2], "keepdims": 1})
    out.append(("ReduceMean 2 x 64 x 128 over 64 x 128, gfx alone (split in two)", p, {"x": x},
                x.astype(np.float64).mean(axis=(1, 2), keepdims=True), 1e-5, ["gfx-only"], None))

    # Rows reduced and scaled (kiln-gpu-build-row-reductions: L lanes per
    # row, partials through LDS): Softmax over rows of 199 (scalar chunks,
    # 64 lanes of 4 chunks, the last partial; 21 rows, the last workgroup
    # half empty), of 200 (16-byte chunks, 50 of 64 lanes) and of 3000 (256
    # lanes of 3 chunks, one row per workgroup); LayerNormalization over 768
    # with scale and bias.
    for shape in ((3, 7, 199), (2, 3, 50, 200), (6, 3000)):
        x = rng.uniform(-8, 8, shape).astype(np.float32)
        p = work / ("softmax_" + "x".join(map(str, shape)) + ".onnx")
        onnx_model(p, "Softmax", {"x": x}, np.float32, list(shape), {"axis": -1})
        e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(axis=-1, keepdims=True))
        out.append((f"Softmax f32 {'x'.join(map(str, shape))} rows (lanes per row)", p, {"x": x},
                    e / e.sum(axis=-1, keepdims=True), 1e-5, [], "ROWS"))
    x = rng.uniform(-2, 2, (4, 37, 768)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, (768,)).astype(np.float32)
    bias = rng.uniform(-1, 1, (768,)).astype(np.float32)
    p = work / "layer_norm_768.onnx"
    onnx_model(p, "LayerNormalization", {"x": x, "scale": scale, "bias": bias}, np.float32,
               [4, 37, 768], {"axis": -1, "epsilon": 1e-5})
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)
    out.append(("LayerNormalization f32 4x37x768 with scale and bias (lanes per row)", p,
                {"x": x, "scale": scale, "bias": bias},
                (x64 - mean) / np.sqrt(var + 1e-5) * scale + bias, 1e-5, [], "ROWS"))

    # Attention's products on heads transposed from [B, S, H, D], for gfx
    # alone (kiln-form-dispatches' transposed-operands: the GEMM reads Q,
    # K and V through the transposes and stores the context through its
    # transpose back to [B, S, H, D]; no transpose kernels): Q K^T with A
    # read along k (0 2 1 3) and B k-fastest (0 2 3 1); scores x V with B
    # read along n, the result transposed.
    for name, perm_b, b_shape, perm_out in (
            ("QK^T", [0, 2, 3, 1], (1, 40, 4, 64), None),
            ("scores x V, context transposed", [0, 2, 1, 3], (1, 64, 4, 40), [0, 2, 1, 3])):
        a = rng.uniform(-1, 1, (1, 40, 4, 64)).astype(np.float32)
        b = rng.uniform(-1, 1, b_shape).astype(np.float32)
        p = work / ("heads_" + ("qk" if perm_out is None else "sv") + ".onnx")
        at = np.transpose(a, (0, 2, 1, 3))
        bt = np.transpose(b, perm_b)
        ref = np.matmul(at.astype(np.float16).astype(np.float64),
                        bt.astype(np.float16).astype(np.float64))
        nodes = [helper.make_node("Transpose", ["a"], ["at"], perm=[0, 2, 1, 3]),
                 helper.make_node("Transpose", ["b"], ["bt"], perm=perm_b),
                 helper.make_node("MatMul", ["at", "bt"], ["y" if perm_out is None else "o"])]
        if perm_out is not None:
            nodes.append(helper.make_node("Transpose", ["o"], ["y"], perm=perm_out))
            ref = np.transpose(ref, perm_out)
        graph = helper.make_graph(
            nodes, "g",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, a.shape),
             helper.make_tensor_value_info("b", TensorProto.FLOAT, b.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(ref.shape))])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, str(p))
        out.append((f"MatMul f32 heads {name} through transposes, gfx alone --precision=f16", p,
                    {"a": a, "b": b}, ref, 1e-5, ["gfx-only", "--precision=f16"], r"_f16"))
        # In f32 on CDNA's f32 instruction (gfx942 and gfx950 alone: with an
        # RDNA target the f32 matmuls would not take the transposes in).
        out.append((f"MatMul f32 heads {name} through transposes, CDNA alone", p,
                    {"a": a, "b": b},
                    np.matmul(at.astype(np.float64), bt.astype(np.float64)) if perm_out is None
                    else np.transpose(np.matmul(at.astype(np.float64), bt.astype(np.float64)),
                                      perm_out),
                    1e-5, ["gfx-only", "cdna-only"], "F32"))

    # Grouped-query attention's products, for gfx alone: K and V have 2
    # heads, repeated to the 8 query heads (Unsqueeze, Expand, Reshape, as
    # LLaMA-style exports write repeat_kv); the GEMM kernels read head h at
    # h / 4 instead of a kernel copying them: Q K^T (K transposed too),
    # scores x V, and a decode step's one-row scores x V (the row-major
    # GEMV). A kernel reading the wrong head fails.
    for name, rows, transposed in (("Q K^T", 40, True), ("scores x V", 40, False),
                                   ("decode scores x V", 1, False)):
        a = rng.uniform(-1, 1, (1, 8, rows, 40 if not transposed else 32)).astype(np.float32)
        kv = rng.uniform(-1, 1, (1, 2, 40, 32)).astype(np.float32)
        repeated = np.repeat(kv, 4, axis=1)
        other = np.swapaxes(repeated, 2, 3) if transposed else repeated
        p = work / f"gqa_{name.replace(' ', '_').replace('^', '')}.onnx"
        nodes = [helper.make_node("Unsqueeze", ["kv", "axis2"], ["u"]),
                 helper.make_node("Expand", ["u", "shape5"], ["e"]),
                 helper.make_node("Reshape", ["e", "shape4"], ["r"])]
        if transposed:
            nodes += [helper.make_node("Transpose", ["r"], ["t"], perm=[0, 1, 3, 2]),
                      helper.make_node("MatMul", ["a", "t"], ["y"])]
        else:
            nodes.append(helper.make_node("MatMul", ["a", "r"], ["y"]))
        out_shape = [1, 8, rows, other.shape[-1]]
        graph = helper.make_graph(
            nodes, "g",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, a.shape),
             helper.make_tensor_value_info("kv", TensorProto.FLOAT, kv.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
            [helper.make_tensor("axis2", TensorProto.INT64, [1], [2]),
             helper.make_tensor("shape5", TensorProto.INT64, [5], [1, 2, 4, 40, 32]),
             helper.make_tensor("shape4", TensorProto.INT64, [4], [1, 8, 40, 32])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, str(p))
        if rows > 8:
            ref = np.matmul(a.astype(np.float16).astype(np.float64),
                            other.astype(np.float16).astype(np.float64))
            out.append((f"MatMul f32 grouped-query {name}: 2 KV heads read as 8, gfx alone "
                        "--precision=f16", p, {"a": a, "kv": kv}, ref, 1e-5,
                        ["gfx-only", "--precision=f16"], r"_f16"))
        else:
            ref = np.matmul(a.astype(np.float64), other.astype(np.float64))
            out.append((f"GEMV MatMul f32 grouped-query {name}: 2 KV heads read as 8, gfx alone",
                        p, {"a": a, "kv": kv}, ref, 1e-5, ["gfx-only"], "GEMV"))

    # A projection split into heads of 12 and transposed to them (a LLaMA-
    # style q/k/v projection), for gfx alone: the GEMM (40 rows) or the GEMV
    # (a decode step's row: the weight in column panels) stores through the
    # reshape and the transpose (n -> head n / 12, n mod 12), no transpose
    # kernel.
    for rows in (40, 1):
        x = rng.uniform(-1, 1, (1, rows, 64)).astype(np.float32)
        w = rng.uniform(-1, 1, (64, 48)).astype(np.float32)
        p = work / f"heads_projection_{rows}.onnx"
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Reshape", ["h", "s"], ["r"]),
             helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1, 3])], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, rows, 12])],
            [helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.flatten().tolist()),
             helper.make_tensor("s", TensorProto.INT64, [4], [1, rows, 4, 12])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, str(p))
        if rows > 8:
            h = x.astype(np.float16).astype(np.float64) @ w.astype(np.float16).astype(np.float64)
            out.append((f"MatMul f32 {rows}-row projection into heads of 12 through reshape and "
                        "transpose, gfx alone --precision=f16", p, {"x": x},
                        np.transpose(h.reshape(1, rows, 4, 12), (0, 2, 1, 3)), 1e-5,
                        ["gfx-only", "--precision=f16"], r"_f16"))
        else:
            h = x.astype(np.float64) @ w.astype(np.float64)
            out.append((f"GEMV MatMul f32 {rows}-row projection into heads of 12 through reshape "
                        "and transpose, gfx alone", p, {"x": x},
                        np.transpose(h.reshape(1, rows, 4, 12), (0, 2, 1, 3)), 1e-5,
                        ["gfx-only"], "GEMV"))

    # RMSNorm written out as LLaMA-style exports write it (Pow, ReduceMean,
    # Add, Sqrt, Div, Mul, Mul): kiln-raise-rms-norms makes it one
    # kiln.rms_norm, one row-reduction kernel (rows of 384: 64 lanes of 2
    # 16-byte chunks).
    x = rng.uniform(-2, 2, (3, 50, 384)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (384,)).astype(np.float32)
    p = work / "rms_norm_written_out.onnx"
    consts = {"two": 2.0, "eps": 1e-6, "one": 1.0}
    nodes = [helper.make_node("Pow", ["x", "two"], ["q"]),
             helper.make_node("ReduceMean", ["q"], ["m"], axes=[-1], keepdims=1),
             helper.make_node("Add", ["m", "eps"], ["v"]),
             helper.make_node("Sqrt", ["v"], ["s"]),
             helper.make_node("Div", ["one", "s"], ["r"]),
             helper.make_node("Mul", ["x", "r"], ["n"]),
             helper.make_node("Mul", ["n", "w"], ["y"])]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, w.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor(k, TensorProto.FLOAT, [], [v]) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(p))
    x64 = x.astype(np.float64)
    out.append(("RMSNorm f32 3x50x384 written out (raised to kiln.rms_norm, lanes per row)", p,
                {"x": x, "w": w},
                x64 / np.sqrt((x64 ** 2).mean(axis=-1, keepdims=True) + 1e-6) * w, 1e-5, [],
                "ROWS"))

    # A rotary position embedding written out as LLaMA-style exports write
    # it (x * cos + concat(-x[..., 32:], x[..., :32]) * sin, cos and sin per
    # position): kiln-raise-rotary-embeddings makes it one
    # kiln.rotary_embedding, one kernel that reads each element's partner.
    x = rng.uniform(-2, 2, (1, 4, 50, 64)).astype(np.float32)
    angles = np.arange(50)[:, None] * (1e4 ** (-np.arange(32) / 32))[None, :]
    angles = np.concatenate([angles, angles], -1)
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    p = work / "rotary_written_out.onnx"
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "cos"], ["c"]),
         helper.make_node("Slice", ["x", "half", "end", "last"], ["hi"]),
         helper.make_node("Neg", ["hi"], ["n"]),
         helper.make_node("Slice", ["x", "zero", "half", "last"], ["lo"]),
         helper.make_node("Concat", ["n", "lo"], ["r"], axis=-1),
         helper.make_node("Mul", ["r", "sin"], ["s"]),
         helper.make_node("Add", ["c", "s"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor("cos", TensorProto.FLOAT, cos.shape, cos.flatten().tolist()),
         helper.make_tensor("sin", TensorProto.FLOAT, sin.shape, sin.flatten().tolist())] +
        [helper.make_tensor(k, TensorProto.INT64, [1], [v])
         for k, v in {"zero": 0, "half": 32, "end": 64, "last": -1}.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(p))
    x64 = x.astype(np.float64)
    rot = np.concatenate([-x64[..., 32:], x64[..., :32]], -1)
    out.append(("RoPE f32 1x4x50x64 written out (raised to kiln.rotary_embedding, one kernel)", p,
                {"x": x}, x64 * cos + rot * sin, 1e-5, [], "ROPE"))

    # The same rotation of interleaved pairs (2i, 2i + 1) as GPT-J-style
    # exports write it: rotate_every_two(x) = stack(-x[..., 1::2],
    # x[..., ::2], -1) flattened, raised to kiln.rotary_embedding
    # {interleaved = true}, one kernel.
    angles_i = np.repeat(angles[:, :32], 2, axis=-1)
    cos_i, sin_i = np.cos(angles_i).astype(np.float32), np.sin(angles_i).astype(np.float32)
    p = work / "rotary_interleaved_written_out.onnx"
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "cos"], ["c"]),
         helper.make_node("Slice", ["x", "zero", "end", "last", "two"], ["even"]),
         helper.make_node("Slice", ["x", "one", "end", "last", "two"], ["odd"]),
         helper.make_node("Neg", ["odd"], ["n"]),
         helper.make_node("Unsqueeze", ["n", "last"], ["nu"]),
         helper.make_node("Unsqueeze", ["even", "last"], ["eu"]),
         helper.make_node("Concat", ["nu", "eu"], ["pairs"], axis=-1),
         helper.make_node("Reshape", ["pairs", "shape"], ["r"]),
         helper.make_node("Mul", ["r", "sin"], ["s"]),
         helper.make_node("Add", ["c", "s"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor("cos", TensorProto.FLOAT, cos_i.shape, cos_i.flatten().tolist()),
         helper.make_tensor("sin", TensorProto.FLOAT, sin_i.shape, sin_i.flatten().tolist()),
         helper.make_tensor("shape", TensorProto.INT64, [4], list(x.shape))] +
        [helper.make_tensor(k, TensorProto.INT64, [1], [v])
         for k, v in {"zero": 0, "one": 1, "two": 2, "end": 64, "last": -1}.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(p))
    rot = np.empty_like(x64)
    rot[..., 0::2], rot[..., 1::2] = -x64[..., 1::2], x64[..., 0::2]
    out.append(("RoPE f32 1x4x50x64 interleaved, written out (raised, one kernel)", p,
                {"x": x}, x64 * cos_i + rot * sin_i, 1e-5, [], "ROPE"))

    # A decode step's key cache write: the new key row rotated and selected
    # into the cache at the step's position, Where(at, rope(k), past), one
    # kernel that rotates the row where it stores it (kiln-form-dispatches).
    k = rng.uniform(-2, 2, (1, 2, 1, 64)).astype(np.float32)
    past = rng.uniform(-2, 2, (1, 2, 16, 64)).astype(np.float32)
    at = np.zeros((1, 1, 16, 1), dtype=np.bool_)
    at[0, 0, 11, 0] = True
    cos1, sin1 = cos[11:12], sin[11:12]
    p = work / "rotary_cache_write.onnx"
    graph = helper.make_graph(
        [helper.make_node("Mul", ["k", "cos"], ["c"]),
         helper.make_node("Slice", ["k", "half", "end", "last"], ["hi"]),
         helper.make_node("Neg", ["hi"], ["n"]),
         helper.make_node("Slice", ["k", "zero", "half", "last"], ["lo"]),
         helper.make_node("Concat", ["n", "lo"], ["r"], axis=-1),
         helper.make_node("Mul", ["r", "sin"], ["s"]),
         helper.make_node("Add", ["c", "s"], ["kr"]),
         helper.make_node("Where", ["at", "kr", "past"], ["y"])], "g",
        [helper.make_tensor_value_info("k", TensorProto.FLOAT, k.shape),
         helper.make_tensor_value_info("at", TensorProto.BOOL, at.shape),
         helper.make_tensor_value_info("past", TensorProto.FLOAT, past.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, past.shape)],
        [helper.make_tensor("cos", TensorProto.FLOAT, cos1.shape, cos1.flatten().tolist()),
         helper.make_tensor("sin", TensorProto.FLOAT, sin1.shape, sin1.flatten().tolist())] +
        [helper.make_tensor(name, TensorProto.INT64, [1], [v])
         for name, v in {"zero": 0, "half": 32, "end": 64, "last": -1}.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(p))
    k64 = k.astype(np.float64)
    krot = k64 * cos1 + np.concatenate([-k64[..., 32:], k64[..., :32]], -1) * sin1
    out.append(("RoPE cache write f32 1x2x16x64 (rotation and Where, one kernel)", p,
                {"k": k, "at": at, "past": past}, np.where(at, krot, past.astype(np.float64)),
                1e-5, [], "ROPE"))

    # GEMVs on operands as they are (contiguous along n): an attention's
    # scores x V at a decode step (heads as the batch), columns not a
    # multiple of the 64-column blocks, and 8-bit activations.
    a = rng.uniform(-1, 1, (4, 1, 700)).astype(np.float16)
    b = rng.uniform(-1, 1, (4, 700, 128)).astype(np.float16)
    p = work / "gemv_heads_f16.onnx"
    onnx_model(p, "MatMul", {"a": a, "b": b}, np.float16, [4, 1, 128])
    out.append(("GEMV MatMul f16 4 heads x 1x700x128 (operands)", p, {"a": a, "b": b},
                np.matmul(a.astype(np.float64), b.astype(np.float64)), 2e-3, [], "GEMV"))
    a = rng.uniform(-1, 1, (3, 260)).astype(np.float32)
    b = rng.uniform(-1, 1, (260, 100)).astype(np.float32)
    p = work / "gemv_args_f32.onnx"
    onnx_model(p, "MatMul", {"a": a, "b": b}, np.float32, [3, 100])
    out.append(("GEMV MatMul f32 3x260x100 (operands)", p, {"a": a, "b": b},
                a.astype(np.float64) @ b.astype(np.float64), 1e-5, [], "GEMV"))
    a = rng.randint(0, 256, (2, 300)).astype(np.uint8)
    b = rng.randint(-128, 128, (300, 80)).astype(np.int8)
    p = work / "gemv_args_u8i8.onnx"
    onnx_model(p, "MatMulInteger", {"a": a, "b": b}, np.int32, [2, 80])
    out.append(("GEMV MatMulInteger u8 x i8 2x300x80 (operands)", p, {"a": a, "b": b},
                (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "exact", [], "GEMV"))
    return out


def run(cmd, timeout=900):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    return proc


def compile_model(bin_dir, model, artifact, extra):
    """extra: kiln-compile options; "gfx-only" leaves the cpu target out,
    "cdna-only" the targets without an f32 matrix instruction."""
    targets = targets_of(extra) if "gfx-only" in extra else targets_of(extra) + ["cpu"]
    cmd = [bin_dir / "kiln-compile", model, "--target=" + ",".join(targets), "--emulation",
           "-o", artifact] + [e for e in extra if e not in ("gfx-only", "cdna-only")]
    proc = run(cmd)
    if proc.returncode != 0:
        log("$ " + " ".join(map(str, cmd)) + "\n" + proc.stderr.strip())
    return proc.returncode == 0


def run_device(bin_dir, artifact, device, inputs, folder):
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cmd = [bin_dir / "kiln-run", artifact, f"--device={device}", f"--output-dir={folder}"]
    for name, arr in inputs.items():
        path = folder / f"in_{name}.npy"
        np.save(path, arr)
        cmd.append(f"--input={name}=@{path}")
    start = time.perf_counter()
    proc = run(cmd)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return None, seconds, proc.stderr.strip()
    outputs = [p for p in folder.glob("*.npy") if not p.name.startswith("in_")]
    if len(outputs) != 1:
        return None, seconds, f"expected one output, got {[p.name for p in outputs]}"
    return np.load(outputs[0]), seconds, ""


def check(got, ref, kind):
    """(ok, description)."""
    if got.shape != ref.shape:
        return False, f"shape {got.shape}, want {ref.shape}"
    if kind == "identical":
        bad = int(np.count_nonzero(got != ref))
        worst = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
        return bad == 0, f"{bad} of {ref.size} elements differ (max {worst:.3g})"
    if kind == "exact":
        bad = int(np.count_nonzero(got.astype(np.int64) != ref.astype(np.int64)))
        return bad == 0, f"{bad} of {ref.size} elements differ"
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    err = float(np.max(np.abs(got.astype(np.float64) - ref))) / scale
    return err <= kind, f"max|err|/max|ref| = {err:.3g} (tolerance {kind:g})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--filter", default="",
                        help="run only the cases (and their controls) whose name matches "
                             "this regular expression (a developer's shortcut: the full run "
                             "is the test)")
    args = parser.parse_args()
    bin_dir = args.build.resolve() / "bin"
    work = Path(tempfile.mkdtemp(prefix="kiln-emulation-"))
    failures = []
    compared = 0
    try:
        all_cases = [c for c in cases(work) if re.search(args.filter, c[0])]
        for name, model, inputs, ref, kind, extra, mnemonic in all_cases:
            log(f"== {name}")
            artifact = work / (model.stem + "".join(e.strip("-").replace("=", "-") for e in extra)
                               + ".kiln")
            if not compile_model(bin_dir, model, artifact, extra):
                failures.append(f"{name}: kiln-compile failed")
                continue
            options = [e for e in extra if e not in ("gfx-only", "cdna-only")]
            if mnemonic in ("GEMV", "ROWS"):
                # A GEMV kernel (the panels' dispatch: LDS for its row
                # groups' sums) or a row-reduction kernel (LDS for the
                # partials): one kernel, no matrix instruction.
                pattern, kind_name = (r"gpu\.func @dispatch_\d+_matmul\w*\(.*", "GEMV") \
                    if mnemonic == "GEMV" else (r"gpu\.func @dispatch_\d+_\w*\(.*", "row-reduction")
                for gfx in GFX:
                    gpu = run([bin_dir / "kiln-compile", model, f"--target={gfx}", "--emit=gpu"]
                              + options).stdout
                    kernels = re.findall(pattern, gpu)
                    if len(kernels) != 1 or "kiln.lds_bytes" not in kernels[0] or \
                            "matrix_instruction" in kernels[0]:
                        failures.append(f"{name}: {gfx} does not use a {kind_name} kernel")
            elif mnemonic == "ROPE":
                for gfx in GFX:
                    gpu = run([bin_dir / "kiln-compile", model, f"--target={gfx}", "--emit=gpu"]
                              + options).stdout
                    kernels = re.findall(r"gpu\.func @(dispatch_\w+)\(", gpu)
                    if len(kernels) != 1 or "rotary_embedding" not in kernels[0]:
                        failures.append(f"{name}: {gfx} does not compute it as one rotary kernel "
                                        f"({kernels})")
            elif mnemonic == "F32":
                # CDNA's f32 instruction where the target has one, else no
                # matrix instruction at all (the generic path).
                for gfx in targets_of(extra):
                    gpu = run([bin_dir / "kiln-compile", model, f"--target={gfx}", "--emit=gpu"]
                              + options).stdout
                    used = re.findall(r'kiln\.matrix_instruction = "([^"]+)"', gpu)
                    want = F32_MATRIX.get(gfx)
                    if (want and (not used or any(u != want for u in used))) or \
                            (not want and used) or "gpu.func" not in gpu:
                        failures.append(f"{name}: {gfx} uses {used or 'no matrix instruction'}, "
                                        f"expected {want or 'none'}")
            elif mnemonic:
                for gfx in GFX:
                    gpu = run([bin_dir / "kiln-compile", model, f"--target={gfx}", "--emit=gpu"]
                              + options).stdout
                    used = re.findall(r'kiln\.matrix_instruction = "([^"]+)"', gpu)
                    if not used or not all(re.search(mnemonic, u) for u in used):
                        failures.append(f"{name}: {gfx} does not use the expected matrix-core "
                                        f"instruction ({used or 'none'})")
            results = {}
            devices = [f"emu:{g}" for g in targets_of(extra)]
            if "gfx-only" not in extra:
                devices.insert(0, "cpu")
            for device in devices:
                got, seconds, error = run_device(bin_dir, artifact, device, inputs,
                                                 work / "out" / device.replace(":", "-"))
                if got is None:
                    failures.append(f"{name} on {device}: kiln-run failed: {error}")
                    log(f"  {device:12s} FAIL kiln-run: {error}")
                    continue
                ok, text = check(got, ref, kind)
                results[device] = got
                if device == "cpu" and kind not in ("exact", "identical"):
                    # The cpu target runs f32 models in f32 (--precision is
                    # for gfx) and f16 models with f16 accumulation: shown,
                    # not judged against the gfx rounding.
                    log(f"  {device:12s} info {text} ({seconds:.2f} s)")
                    continue
                compared += 1
                log(f"  {device:12s} {'PASS' if ok else 'FAIL'} {text} ({seconds:.2f} s)")
                if not ok:
                    failures.append(f"{name} on {device}: {text}")
            # Integer results equal the cpu target's; f16 results round alike
            # on every emulated target.
            emulated = [d for d in results if d != "cpu"]
            if kind in ("exact", "identical") and "cpu" in results:
                for d in emulated:
                    if not np.array_equal(results[d], results["cpu"]):
                        failures.append(f"{name}: {d} is not bit-identical to cpu")
            if kind != "exact" and len(emulated) > 1 and results[emulated[0]].dtype == np.float16:
                for d in emulated[1:]:
                    if not np.array_equal(results[d], results[emulated[0]]):
                        failures.append(f"{name}: {d} and {emulated[0]} round differently")

        # Negative controls: wrongly wired kernels must fail on every target.
        # The first int8 GEMM (on the matrix cores, no extra options) and
        # every f16 case.
        controls = [c for c in all_cases if c[4] == "exact" and c[6] and not c[5]][:1] + \
                   [c for c in all_cases if c[4] == 2e-3] + \
                   [c for c in all_cases if c[6] == "F32"] + \
                   [c for c in all_cases if c[0].startswith(("MatMulInteger u8 x i8",
                                                             "kiln.matmul_int4 W4A16"))][:2] + \
                   [c for c in all_cases if c[0].startswith("kiln.matmul_int4 W4A8")][:1] + \
                   [c for c in all_cases if "k-fastest" in c[0] and c[4] == "exact"][:1] + \
                   [c for c in all_cases if "through transposes" in c[0] or
                    "through reshape and transpose" in c[0]] + \
                   [c for c in all_cases if c[6] in ("GEMV", "ROWS")]
        controls = list({c[0]: c for c in controls}.values())
        for name, model, inputs, ref, kind, extra, mnemonic in controls:
            # (A GEMV has no operands to swap at an instruction; a row
            # reduction none at all: its fault leaves a lane's partials out.)
            faults = ("shift-lanes",) if mnemonic == "GEMV" else \
                ("skip-lane",) if mnemonic == "ROWS" else ("swap-operands", "shift-lanes")
            if name.startswith("Conv 3x3") and "f16" in name:
                faults += ("window-taps",)
            for fault in faults:
                log(f"== negative control: {name} with --gfx-test-fault={fault}")
                artifact = work / f"{model.stem}-{fault}.kiln"
                if not compile_model(bin_dir, model, artifact, extra + [f"--gfx-test-fault={fault}"]):
                    failures.append(f"{name} ({fault}): kiln-compile failed")
                    continue
                # (Only the targets whose matrix-core kernel the fault is
                # in: an f32 product is generic on the others.)
                for gfx in (F32_MATRIX if mnemonic == "F32" else targets_of(extra)):
                    got, _, error = run_device(bin_dir, artifact, f"emu:{gfx}", inputs,
                                               work / "out" / f"{fault}-{gfx}")
                    caught = got is None or not check(got, ref, kind)[0]
                    how = f"error: {error.splitlines()[-1]}" if got is None else \
                        check(got, ref, kind)[1]
                    log(f"  emu:{gfx:8s} {'caught' if caught else 'MISSED'} ({how})")
                    if not caught:
                        failures.append(f"{name} with {fault} on emu:{gfx}: the wrong kernel "
                                        "was not caught")
    finally:
        if args.keep:
            log(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    if compared < 50 and not args.filter:
        failures.append(f"only {compared} outputs compared: the test must not pass vacuously")
    log()
    if failures:
        log("FAIL:\n  " + "\n  ".join(failures))
        return 1
    log(f"PASS: {compared} outputs on cpu and emu:{', emu:'.join(GFX)}; every negative "
        "control caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
