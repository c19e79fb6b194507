#!/usr/bin/python3
"""W4A8 (kiln-compile --int4-activations=int8) against ONNX Runtime and an
exact numpy model of its definition, per element.

  /usr/bin/python3 test/e2e/run_w4a8_vs_ort.py --build BUILD [--keep]

W4A8 multiplies 4-bit weights with activations quantized to int8 at run
time, per row and per group of B rows of K, symmetrically: amax = max |a| over
the group, inv = 127 / amax (0 when amax is 0), x = round_half_even(a * inv),
and

  y[m, n] = sum_g float32(sum_{k in g} x[m, k] * (q[k, n] - zp[g, n])) * ((amax / 127) * scale[g, n])

with the inner sum exact and the outer one in float32, group after group
(the kiln.matmul_int4 documentation). w4a8() below computes exactly that in
numpy (float32 operations, numpy's rint rounds half to even); Kiln's cpu
kernels must equal it bit for bit. ONNX Runtime's MatMulNBits with
accuracy_level = 4 quantizes A by the same rule on this CPU (MLAS) and sums
in another order: Kiln must agree with it within |kiln - ort| <= 1e-4
max|ort| + 1e-5, and so must the numpy model (which checks this test's own
packing). Negative control: Kiln's W4A8 result must differ from the float
(W4A16) result of the same weights by more than that tolerance somewhere, so
the test cannot pass with the activations left in float.

Part A: one-node MatMulNBits models (the packing helpers of
run_int4_vs_ort.py) with accuracy_level = 4: decode rows, blocks of 4 rows
then single rows, batched A, block sizes 16, 32, 64
and 128, zero points and symmetric, K not a multiple of the block, N not a
multiple of the 32-column panel (padded, the result sliced), a 1024 x 1024
decode, 37 rows. Part B: run_int4_vs_ort.py's MLP (MatMul, Relu, Gemm
transB, Reshape, MatMul) compiled with --quantize=int4-weights
--int4-activations=int8 against its int4 reference model with
accuracy_level = 4 on every MatMulNBits.

Each model is compiled for --target=cpu with the host's CPU (vpdpbusd with
AVX-512 VNNI), --cpu=x86-64-v3 (AVX2: vpmaddubsw + vpmaddwd), --cpu=x86-64
(no dot-product ISA: shifts and multiplies) and, on hosts with AVX-512BW,
--cpu=x86-64-v4 (vpmaddubsw + vpmaddwd on zmm).

The gfx targets: each model is also compiled once for
--target=cpu,gfx942,gfx950,gfx1100,gfx1201,gfx1250 --emulation (one artifact,
the W4A8 panels stored once for every target) and run on cpu and on every
emulated target, whose int8 matrix-core kernels must give the same bits as
the numpy model (part A) and as the cpu (part B); the same compile's
--dump-ir must show the matrix instruction in each target's gpu stage.
"""

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_int4_vs_ort as int4  # noqa: E402

REL_TOL, ABS_TOL = 1e-4, 1e-5
GFX = ["gfx942", "gfx950", "gfx1100", "gfx1201", "gfx1250"]


def cpu_variants():
    flags = Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0].split()
    variants = [("host", []), ("avx2", ["--cpu=x86-64-v3"]), ("no-dot", ["--cpu=x86-64"])]
    if "avx512bw" in flags:
        variants.append(("avx512bw", ["--cpu=x86-64-v4"]))
    return variants


def w4a8(a, codes_nk, scales_nb, zp_nb, k, block):
    """Kiln's W4A8 value: a [M, K] float32, codes [N, nb * block], scales / zero points [N, nb]."""
    n, kp = codes_nk.shape
    nb = kp // block
    ap = np.zeros((a.shape[0], kp), np.float32)
    ap[:, :k] = a  # MatMulNBits' padded last block: zero activations
    acc = np.zeros((a.shape[0], n), np.float32)
    for g in range(nb):
        x = ap[:, g * block:(g + 1) * block]
        amax = np.abs(x).max(axis=1).astype(np.float32)
        safe = np.where(amax > 0, amax, np.float32(1)).astype(np.float32)
        inv = np.where(amax > 0, np.float32(127) / safe, np.float32(0)).astype(np.float32)
        xq = np.rint(x * inv[:, None]).astype(np.int64)
        q = codes_nk[:, g * block:(g + 1) * block].astype(np.int64) - zp_nb[:, g:g + 1].astype(np.int64)
        exact = (xq @ q.T).astype(np.float32)
        t = ((amax / np.float32(127)).astype(np.float32)[:, None] *
             scales_nb[:, g][None, :].astype(np.float32)).astype(np.float32)
        acc = (acc + (exact * t).astype(np.float32)).astype(np.float32)
    return acc


def with_accuracy_level(model, level=4):
    for node in model.graph.node:
        if node.op_type == "MatMulNBits":
            node.attribute.append(helper.make_attribute("accuracy_level", level))
    return model


class Checks(int4.Report):
    def exact(self, label, got, ref, against="the numpy model"):
        self.checks += 1
        if got is None or got.shape != ref.shape:
            self.fail(label, "no output" if got is None else f"shape {list(got.shape)}, expected {list(ref.shape)}")
            return
        diff = int((got != ref).sum())
        ok = diff == 0
        worst = float(np.abs(got.astype(np.float64) - ref).max())
        print(f"{'PASS' if ok else 'FAIL'} {label:52s} bit-exact vs {against}"
              + ("" if ok else f": {diff}/{got.size} elements differ, max {worst:.3g}"))
        self.failures += not ok

    def differs(self, label, got, w4a16):
        """The negative control: W4A8 must not be the float-activation result."""
        self.checks += 1
        tol = REL_TOL * float(np.abs(w4a16).max()) + ABS_TOL
        worst = float(np.abs(got.astype(np.float64) - w4a16).max())
        ok = worst > tol
        print(f"{'PASS' if ok else 'FAIL'} {label:52s} differs from float activations by {worst:.3g} "
              f"(> {tol:.3g})")
        self.failures += not ok


def compile_variants(build, model, out_dir, extra):
    artifacts = {}
    for name, flags in cpu_variants():
        artifact = out_dir / f"{name}.kiln"
        if int4.run([build / "kiln-compile", model, "--target=cpu", "--int4-activations=int8", *flags,
                     *extra, "-o", artifact]):
            artifacts[name] = artifact
    return artifacts


def compile_gfx(build, model, out_dir, extra, report, label):
    """One artifact for cpu and every gfx target (with their emulation); None
    when it fails or a gfx target does not use its int8 matrix cores (read
    from the same compile's --dump-ir: each target's gpu stage)."""
    artifact = out_dir / "gfx.kiln"
    dump = out_dir / "ir"
    targets = ",".join(["cpu"] + GFX)
    if not int4.run([build / "kiln-compile", model, f"--target={targets}", "--emulation",
                     "--int4-activations=int8", *extra, f"--dump-ir={dump}", "-o", artifact]):
        report.fail(f"{label} gfx", "kiln-compile failed")
        return None
    for gfx in GFX:
        stages = sorted(dump.glob(f"*-gpu-{gfx}.mlir"))
        gpu = stages[0].read_text() if len(stages) == 1 else ""
        kernels = re.findall(r"gpu\.func @dispatch_\d+_matmul_int4\(.*", gpu)
        used = [re.search(r'kiln\.matrix_instruction = "([^"]+)"', k) for k in kernels]
        report.checks += 1
        names = [u.group(1) if u else "none" for u in used]
        if not kernels or not all(re.search(r"_i8|_iu8", n) for n in names):
            report.fail(f"{label} {gfx}", f"the W4A8 kernels do not use the int8 matrix cores "
                        f"({names or 'no kernel'})")
        else:
            print(f"PASS {label + ' ' + gfx:52s} W4A8 kernel on {', '.join(names)}")
    shutil.rmtree(dump, ignore_errors=True)
    return artifact


def run_kiln(build, artifact, inputs, out_dir, output, device="cpu"):
    cmd = [build / "kiln-run", artifact, f"--device={device}", f"--output-dir={out_dir}"]
    cmd += [f"--input={name}=@{path}" for name, path in inputs.items()]
    return np.load(Path(out_dir) / f"{output}.npy") if int4.run(cmd) else None


# name, K, N, block_size, zero points, A's shape, seed
CASES_A = [
    ("k256_n64_b32_zp_decode", 256, 64, 32, True, [1, 256], 401),
    ("k384_n40_b128_zp_m7", 384, 40, 128, True, [7, 384], 402),      # N % 32 != 0: a padded panel
    ("k200_n24_b64_sym_batch", 200, 24, 64, False, [2, 3, 200], 403),  # K % block != 0
    ("k100_n40_b32_zp_decode", 100, 40, 32, True, [1, 100], 404),
    ("k256_n96_b32_zp_m37", 256, 96, 32, True, [37, 256], 405),
    ("k128_n64_b16_zp_m3", 128, 64, 16, True, [3, 128], 406),         # B = 16: 8 activations a vector
    ("k1024_n1024_b128_sym_decode", 1024, 1024, 128, False, [1, 1024], 407),
]


def part_a(work, report, build):
    print("part A: MatMulNBits (accuracy_level 4) with --int4-activations=int8")
    for name, k, n, block, with_zp, a_shape, seed in CASES_A:
        model, codes, scales, zp, a = int4.nbits_case(name, k, n, block, with_zp, a_shape, seed)
        nb = codes.shape[1] // block
        d = work / f"A_{name}"
        d.mkdir()
        onnx.save(with_accuracy_level(model), d / "m.onnx")
        np.save(d / "A.npy", a)
        inputs = {"A": d / "A.npy"}
        label = f"A {name}"
        zps = zp if with_zp else np.full((n, nb), 8, np.uint8)
        ref = w4a8(a.reshape(-1, k), codes, scales, zps, k, block).reshape(a_shape[:-1] + [n])
        ort = int4.run_ort(d / "m.onnx", inputs, d / "ort", "Y")
        if ort is None:
            report.fail(label, "ONNX Runtime failed")
            continue
        report.compare(f"{label} numpy model vs ORT", ref, ort)
        w4a16 = a.astype(np.float64) @ int4.dequantize(codes, scales, zps, k, block).astype(np.float64)
        for variant, artifact in compile_variants(build, d / "m.onnx", d, []).items():
            got = run_kiln(build, artifact, inputs, d / f"out_{variant}", "Y")
            report.exact(f"{label} {variant}", got, ref)
            if got is not None and got.shape == ort.shape:
                report.compare(f"{label} {variant} vs ORT", got, ort)
                report.differs(f"{label} {variant}", got, w4a16)
        artifact = compile_gfx(build, d / "m.onnx", d, [], report, label)
        if artifact:
            for device in ["cpu"] + [f"emu:{g}" for g in GFX]:
                got = run_kiln(build, artifact, inputs, d / f"out_{device.replace(':', '-')}", "Y",
                               device)
                report.exact(f"{label} {device} (cpu+gfx artifact)", got, ref)


def part_b(work, report, build):
    print("part B: --quantize=int4-weights --int4-activations=int8")
    onnx.save(int4.float_model_b(), work / "float.onnx")
    rng = np.random.default_rng(31)
    x = rng.standard_normal(int4.X_SHAPE).astype(np.float32)
    np.save(work / "x.npy", x)
    for group, zero_points in int4.CONFIGS_B:
        tag = f"g{group}_{'zp' if zero_points else 'sym'}"
        d = work / f"B_{tag}"
        d.mkdir()
        model, _, _ = int4.reference_model_b(group, zero_points)
        onnx.save(with_accuracy_level(model), d / "w4a8.onnx")
        label = f"B {tag}"
        ort = int4.run_ort(d / "w4a8.onnx", {"x": work / "x.npy"}, d / "ort", "y")
        if ort is None:
            report.fail(label, "ONNX Runtime failed")
            continue
        flags = ["--quantize=int4-weights", f"--int4-group-size={group}"] + \
            (["--int4-zero-points"] if zero_points else [])
        cpu = None
        for variant, artifact in compile_variants(build, work / "float.onnx", d, flags).items():
            got = run_kiln(build, artifact, {"x": work / "x.npy"}, d / f"out_{variant}", "y")
            report.compare(f"{label} {variant} vs ORT", got, ort)
            if variant == "host":
                cpu = got
        artifact = compile_gfx(build, work / "float.onnx", d, flags, report, label)
        if artifact and cpu is not None:
            for gfx in GFX:
                got = run_kiln(build, artifact, {"x": work / "x.npy"}, d / f"out_{gfx}", "y",
                               f"emu:{gfx}")
                report.exact(f"{label} emu:{gfx}", got, cpu, "the cpu target")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    build = args.build.resolve() / "bin"
    work = Path(tempfile.mkdtemp(prefix="kiln-w4a8-"))
    report = Checks()
    part_a(work, report, build)
    part_b(work, report, build)
    print(f"{report.checks} comparisons, {report.failures} failures")
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work)
    return 1 if report.failures or report.checks == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
