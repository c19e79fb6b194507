#!/usr/bin/python3
"""Main-loop figures of the gfx GEMM builder's kernels, read from the ISA.

  /usr/bin/python3 bench/gfx/gemm_loop.py --build BUILD [--m 1024 --n 4096 --k 1024]

For an i8 and an f16 M x K x N matmul (kiln IR) and each gfx target, compiles
with `kiln-compile --emit=isa` and prints: matrix instructions / instructions
in the main loop (the innermost backward branch whose body holds the
v_mfma/v_wmma instructions), LDS instructions in that loop, barriers, VGPRs,
LDS bytes and scratch bytes from the AMDGPU metadata.
"""
import argparse
import re
import subprocess
import tempfile
from pathlib import Path

TARGETS = ["gfx942", "gfx950", "gfx1250", "gfx1100", "gfx1201"]


def model(path, elem, acc, op, m, n, k):
    path.write_text(
        f"func.func @main(%a: tensor<{m}x{k}x{elem}>, %b: tensor<{k}x{n}x{elem}>) -> tensor<{m}x{n}x{acc}> {{\n"
        f"  %0 = kiln.{op} %a, %b : (tensor<{m}x{k}x{elem}>, tensor<{k}x{n}x{elem}>) -> tensor<{m}x{n}x{acc}>\n"
        f"  return %0 : tensor<{m}x{n}x{acc}>\n}}\n")


def main_loop(isa):
    lines = [l.strip() for l in isa.splitlines()]
    labels = {}
    for i, l in enumerate(lines):
        m = re.match(r"^(\.LBB\w+):", l)
        if m:
            labels[m.group(1)] = i
    best = None
    for i, l in enumerate(lines):
        m = re.match(r"^s_cbranch_\w+\s+(\.LBB\w+)", l) or re.match(r"^s_branch\s+(\.LBB\w+)", l)
        if not m or m.group(1) not in labels or labels[m.group(1)] >= i:
            continue
        body = [x for x in lines[labels[m.group(1)] + 1:i + 1]
                if x and not x.startswith((".", ";")) and not x.endswith(":")]
        matrix = sum(1 for x in body if x.startswith(("v_mfma", "v_wmma")))
        if matrix and (best is None or len(body) < len(best)):
            best = body
    return best or []


def meta(isa, key):
    m = re.search(r"\." + key + r":\s+(\d+)", isa)
    return int(m.group(1)) if m else -1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", type=Path, required=True)
    p.add_argument("--m", type=int, default=1024)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--k", type=int, default=1024)
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kiln-gemm-loop-"))
    print("| kernel | target | matrix instr. / main-loop instr. | LDS ops | barriers | VGPRs | LDS bytes | scratch |")
    print("|---|---|---|---|---|---|---|---|")
    for name, elem, acc, op in (("i8", "i8", "i32", "matmul_integer"), ("f16", "f16", "f16", "matmul")):
        src = work / f"{name}.mlir"
        model(src, elem, acc, op, a.m, a.n, a.k)
        for t in TARGETS:
            isa = subprocess.run([str(a.build / "bin" / "kiln-compile"), str(src), f"--target={t}",
                                  "--emit=isa"], capture_output=True, text=True, check=True).stdout
            body = main_loop(isa)
            matrix = sum(1 for x in body if x.startswith(("v_mfma", "v_wmma")))
            lds = sum(1 for x in body if x.startswith("ds_"))
            barriers = sum(1 for x in body if x.startswith("s_barrier"))
            frac = f"{matrix} / {len(body)} ({100 * matrix // max(len(body), 1)}%)"
            print(f"| {name} | {t} | {frac} | {lds} | {barriers} | {meta(isa, 'vgpr_count')} | "
                  f"{meta(isa, 'group_segment_fixed_size')} | {meta(isa, 'private_segment_fixed_size')} |")


if __name__ == "__main__":
    main()
