#!/usr/bin/python3
"""3x3 stride-1 convolutions compiled through Winograd transforms
(kiln-winograd-convs, kiln-compile --winograd) and run, against ONNX Runtime.

  /usr/bin/python3 test/e2e/run_winograd_vs_ort.py --build BUILD [--keep] [--cpu=x86-64-v3]

Each case is a Conv model built with onnx.helper and seeded random
weights, followed by a Relu, a residual Add of the input and a Relu, an Add
alone, or nothing (the consumers kiln.winograd_output takes in): F(4,3)
(outputs of 12 or more) and F(2,3) layers, sizes that the tile does not
divide (cropped), symmetric, asymmetric and no padding (a smaller output),
with and without bias, batch 1 and 2, non-square images, rows of fewer
tiles than a vector (several tile rows per vector) and of more (several
blocks, the last one partial; 300 columns: the middle blocks a loop). Every case is compiled twice for the cpu,
with the default (Winograd on for a cpu-only target) and with --winograd=off,
and checked:

  - the Winograd build really is one (its dispatch IR has the transform
    matmuls and no convolution) and the direct build is not;
  - both builds' outputs against ONNX Runtime's, per element:
    |kiln - ort| <= 1e-4 * max|ort| + 1e-4 * |ort|;
  - the largest error of the Winograd build is reported next to the direct
    one's.

Plus one case kiln-winograd-convs leaves direct by rule (16 channels, below
its minimum), and `--winograd=on` for a gfx target: two cases compiled for
gfx942 with --emulation and run on the emu:gfx942 device (the host running
the gfx kernels), against ONNX Runtime the same way. Exit status 1 on any
mismatch or failure.
"""

import argparse
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
RTOL = 1e-4
rng = np.random.RandomState(11)

# Cases also run with --winograd=on on the emulated gfx942.
GFX_CASES = {"f43_14x14_crop", "f23_batch2_5x9"}

# name, N, C, F, H, W, pads (top, left, bottom, right), bias, winograd expected,
# tail: what follows the convolution ("relu"; "add_relu": x added, then ReLU,
# the residual kiln.winograd_output takes in; "none")
CASES = [
    ("f43_56x56_64", 1, 64, 64, 56, 56, (1, 1, 1, 1), True, True, "relu"),
    ("f43_14x14_crop", 1, 32, 48, 14, 14, (1, 1, 1, 1), True, True, "relu"),
    ("f43_batch2", 2, 32, 32, 16, 16, (1, 1, 1, 1), True, True, "relu"),
    ("f43_no_bias_asym_pads", 1, 40, 32, 13, 17, (0, 1, 2, 1), False, True, "relu"),
    ("f43_no_pads", 1, 32, 32, 18, 18, (0, 0, 0, 0), True, True, "none"),
    ("f23_7x7_512", 1, 128, 96, 7, 7, (1, 1, 1, 1), True, True, "relu"),
    ("f23_batch2_5x9", 2, 32, 64, 5, 9, (1, 1, 1, 1), False, True, "relu"),
    ("f43_residual_28x28", 1, 32, 32, 28, 28, (1, 1, 1, 1), True, True, "add_relu"),
    ("f43_wide_70_residual", 2, 32, 32, 9, 70, (1, 1, 1, 1), False, True, "add_relu"),
    ("f23_residual_no_relu", 1, 48, 48, 7, 11, (1, 1, 1, 1), True, True, "add"),
    ("f43_300_columns", 1, 32, 32, 12, 300, (1, 1, 1, 1), True, True, "add_relu"),
    ("direct_16_channels", 1, 16, 16, 20, 20, (1, 1, 1, 1), True, False, "relu"),
]


def model(n, c, f, h, w, pads, bias, tail):
    weight = (rng.standard_normal((f, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    inits = [numpy_helper.from_array(weight, "w")]
    inputs = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(f).astype(np.float32), "b"))
        inputs.append("b")
    oh, ow = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    nodes = [helper.make_node("Conv", inputs, ["c"], name="conv", kernel_shape=[3, 3],
                              pads=[pads[0], pads[1], pads[2], pads[3]])]
    last = "c"
    if tail in ("add_relu", "add"):
        nodes.append(helper.make_node("Add", ["x", last], ["s"], name="residual"))
        last = "s"
    if tail in ("relu", "add_relu"):
        nodes.append(helper.make_node("Relu", [last], ["r"], name="relu"))
        last = "r"
    nodes.append(helper.make_node("Identity", [last], ["y"], name="out"))
    graph = helper.make_graph(nodes, "winograd",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, f, oh, ow])],
                              inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def run(cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True)


def compile_and_compare(bin_dir, d, label, compile_args, device, ref):
    """Compiles d/m.onnx with `compile_args`, runs it on `device` with d/x.npy
    and compares y with `ref`: (max error / max|ref|, elements outside the
    tolerance, elements), or an error message."""
    kiln = d / f"{label}.kiln"
    compiled = run([bin_dir / "kiln-compile", d / "m.onnx"] + compile_args + ["-o", kiln])
    if compiled.returncode != 0:
        return f"kiln-compile: {compiled.stderr.strip()[:1000]}"
    ran = run([bin_dir / "kiln-run", kiln, f"--device={device}", f"--input=x=@{d / 'x.npy'}",
               f"--output-dir={d / label}"])
    if ran.returncode != 0:
        return f"kiln-run: {ran.stderr.strip()[:1000]}"
    got = np.load(d / label / "y.npy")
    if got.shape != ref.shape:
        return f"shape {list(got.shape)} vs {list(ref.shape)}"
    err = np.abs(got.astype(np.float64) - ref)
    bad = int(np.sum(~(err <= RTOL * np.abs(ref).max() + RTOL * np.abs(ref))))
    return err.max() / max(np.abs(ref).max(), 1e-30), bad, ref.size


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--cpu", default="host", help="kiln-compile --cpu")
    args = parser.parse_args()
    if not host_runs(args.cpu):
        print(f"skipped: this host cannot run code compiled for --cpu={args.cpu}")
        return 77
    bin_dir = args.build.resolve() / "bin"
    work = Path(tempfile.mkdtemp(prefix="kiln-winograd-"))
    failures = compared = 0
    for name, n, c, f, h, w, pads, bias, expect_winograd, tail in CASES:
        d = work / name
        d.mkdir()
        onnx.save(model(n, c, f, h, w, pads, bias, tail), d / "m.onnx")
        x = rng.standard_normal((n, c, h, w)).astype(np.float32)
        np.save(d / "x.npy", x)
        ort = run(["node", ROOT / "bench/ort/ort_run.js", d / "m.onnx", "--input", f"x={d / 'x.npy'}",
                   "--output-dir", d / "ort"])
        if ort.returncode != 0:
            print(f"FAIL {name}: ONNX Runtime: {ort.stderr.strip()[:1000]}")
            failures += 1
            continue
        ref = np.load(d / "ort" / "y.npy")
        errors = {}
        for mode in ("auto", "off"):
            options = ["--target=cpu", f"--cpu={args.cpu}", f"--winograd={mode}"]
            ir = run([bin_dir / "kiln-compile", d / "m.onnx"] + options + ["--emit=dispatch"])
            is_winograd = "kiln.conv" not in ir.stdout and "winograd_filter" in ir.stdout
            want = expect_winograd and mode == "auto"
            if ir.returncode != 0 or is_winograd != want:
                print(f"FAIL {name} --winograd={mode}: expected {'a Winograd' if want else 'a direct'} "
                      f"convolution in the dispatch IR {ir.stderr.strip()[:500]}")
                failures += 1
                continue
            result = compile_and_compare(bin_dir, d, mode, options, "cpu", ref)
            if isinstance(result, str):
                print(f"FAIL {name} --winograd={mode}: {result}")
                failures += 1
                continue
            errors[mode] = result
            compared += 1
            failures += result[1] != 0
        if name in GFX_CASES:
            result = compile_and_compare(bin_dir, d, "gfx", ["--target=gfx942", "--emulation", "--winograd=on"],
                                         "emu:gfx942", ref)
            if isinstance(result, str):
                print(f"FAIL {name} emu:gfx942: {result}")
                failures += 1
            else:
                rel, bad, size = result
                compared += 1
                failures += bad != 0
                print(f"{'ok  ' if not bad else 'FAIL'} {name} on emu:gfx942 (--winograd=on): max error / "
                      f"max|ort| {rel:.2e} ({bad} of {size} outside)")
        if len(errors) == 2:
            (we, wbad, size), (de, dbad, _) = errors["auto"], errors["off"]
            ok = wbad == 0 and dbad == 0
            print(f"{'ok  ' if ok else 'FAIL'} {name}: max error / max|ort|: "
                  f"{'winograd' if expect_winograd else 'default'} {we:.2e} ({wbad} of {size} outside), "
                  f"direct {de:.2e} ({dbad} outside)")
    print(f"{compared} outputs compared with ONNX Runtime, {failures} failures")
    if args.keep:
        print(f"work directory: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    if compared < 2 * len(CASES) + len(GFX_CASES):
        print(f"error: {compared} of {2 * len(CASES) + len(GFX_CASES)} outputs compared")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
