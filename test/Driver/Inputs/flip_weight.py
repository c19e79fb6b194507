"""A MatMul + bias model whose one weight element can be flipped, and the
check that flipping it changed the output in that weight's column only.

usage: flip_weight.py model ROWS K N OUT.onnxtxt [--flip K0,N0]
           y = x @ W + b, x [1, ROWS, K], W [K, N] and b [N] from numpy's
           seeded generator; --flip negates W[K0, N0] and adds 1 to it
       flip_weight.py columns A.npy B.npy N0
           A and B ([1, ROWS, N]) must differ in every row of column N0
           (by more than rounding) and agree everywhere else to the bit
"""
import sys

import numpy as np


def model(rows, k, n, out, flip):
    """Writes the model in ONNX's text format (onnx.parser's), its
    initializers' values printed exactly (9 significant digits)."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((k, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    if flip:
        k0, n0 = flip
        w[k0, n0] = -w[k0, n0] + 1.0

    def values(a):
        return ", ".join("%.9g" % v for v in a.reshape(-1))

    text = (f'<\n  ir_version: 8,\n  opset_import: ["" : 17]\n>\n'
            f"g (float[1, {rows}, {k}] x) => (float[1, {rows}, {n}] y)\n"
            f"  <float[{k}, {n}] W = {{{values(w)}}}, float[{n}] b = {{{values(b)}}}>\n"
            "{\n  t = MatMul(x, W)\n  y = Add(t, b)\n}\n")
    with open(out, "w") as f:
        f.write(text)


def columns(a_path, b_path, n0):
    a, b = np.load(a_path), np.load(b_path)
    if a.shape != b.shape:
        sys.exit(f"shapes differ: {a.shape} vs {b.shape}")
    changed = a != b
    rows_changed = np.abs(a[..., n0] - b[..., n0]) > 1e-3 * (1 + np.abs(a[..., n0]))
    if not rows_changed.all():
        sys.exit(f"column {n0}: {int((~rows_changed).sum())} rows did not change")
    others = changed.copy()
    others[..., n0] = False
    if others.any():
        where = np.argwhere(others)[0].tolist()
        sys.exit(f"{int(others.sum())} elements outside column {n0} changed, first at {where}")
    print(f"column {n0} changed in all {rows_changed.size} rows, nothing else")


if __name__ == "__main__":
    if sys.argv[1] == "model":
        flip = None
        if len(sys.argv) > 7 and sys.argv[6] == "--flip":
            flip = tuple(int(v) for v in sys.argv[7].split(","))
        model(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], flip)
    elif sys.argv[1] == "columns":
        columns(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(__doc__)
