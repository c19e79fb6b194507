#!/usr/bin/python3
"""The f32 Exp, Sigmoid and Softmax of a compiled model against Python's
math.exp (the C library's, in double precision), element by element.

  check_exp.py make-input X.npy S.npy
      X: 65536 points, a fine grid of [-90, 90] (steps of 2.7e-3), +-0,
      +-inf, NaN, tiny values and the edges of the float range; S: 256
      rows of 197 scores in [-30, 30] (ViT-B/16's attention rows).
  check_exp.py check X.npy S.npy EXP.npy SIGMOID.npy SOFTMAX.npy [--shift=D]
      Prints the largest errors and exits 1 when one is over its bound:
      exp within 2e-7 relative (under 2 float ulps) where exp(x) is a normal
      float of at least 1.8e-38, at most that below (where it may flush to
      0), +inf where it overflows (x > 88.7228); sigmoid within 2e-7
      absolute; softmax within 5e-7 relative to each row's largest value;
      NaN where the input is NaN. --shift=D compares against exp(x + D)
      instead (softmax: only its first column, against the others): a
      negative control, the check must then fail.
"""
import math
import sys

import numpy as np

FLT_MAX = float(np.finfo(np.float32).max)
# Below this, exp may flush to 0 (Exp.cpp: n = -126 scales by +0).
FLUSH = 1.8e-38


def make_input(x_path, s_path):
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e-8, -1e-8,
                        88.72, 88.73, 89.0, 100.0, -86.9, -87.0, -87.5, -88.0, -100.0,
                        1e30, -1e30], np.float32)
    grid = np.linspace(-90.0, 90.0, 65536 - special.size, dtype=np.float32)
    np.save(x_path, np.concatenate([special, grid]).reshape(1, -1))
    rng = np.random.default_rng(7)
    np.save(s_path, rng.uniform(-30.0, 30.0, (256, 197)).astype(np.float32))


def exp_or_inf(v):
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def check(x_path, s_path, exp_path, sigmoid_path, softmax_path, shift):
    x = np.load(x_path).astype(np.float64).ravel()
    s = np.load(s_path).astype(np.float64)
    got = np.load(exp_path).astype(np.float64).ravel()
    sig = np.load(sigmoid_path).astype(np.float64).ravel()
    soft = np.load(softmax_path).astype(np.float64)
    nan = np.isnan(x)
    ok = True
    if not np.array_equal(np.isnan(got), nan) or not np.array_equal(np.isnan(sig), nan):
        print("NaN positions differ from the input's: MISMATCH")
        ok = False
    finite = ~nan
    xs, ys = x[finite], got[finite]
    ref = np.array([exp_or_inf(v + shift) for v in xs])
    worst, worst_x = 0.0, 0.0
    for v, y, r in zip(xs, ys, ref):
        if r > FLT_MAX * (1 - 2e-7):
            # Overflows in f32, or within rounding of it.
            err = 0.0 if math.isinf(y) or abs(y - r) <= 2e-7 * r else math.inf
        elif r < FLUSH:
            err = 0.0 if y <= FLUSH else math.inf
        else:
            err = abs(y - r) / r
        if err > worst:
            worst, worst_x = err, v
    good = worst <= 2e-7
    print("exp: max relative error %.3g at x = %.9g: %s" % (worst, worst_x, "ok" if good else "MISMATCH"))
    ok = ok and good
    with np.errstate(over="ignore"):
        ref_sig = np.array([1.0 / (1.0 + exp_or_inf(-(v + shift))) for v in xs])
    err = np.abs(sig[finite] - ref_sig)
    i = int(np.argmax(err))
    good = bool(err.max() <= 2e-7)
    print("sigmoid: max abs error %.3g at x = %.9g: %s" % (err[i], xs[i], "ok" if good else "MISMATCH"))
    ok = ok and good
    e = np.exp(s + shift - s.max(axis=1, keepdims=True))
    e[:, 1:] = np.exp(s[:, 1:] - s.max(axis=1, keepdims=True))
    ref_soft = e / e.sum(axis=1, keepdims=True)
    err = np.abs(soft - ref_soft) / ref_soft.max(axis=1, keepdims=True)
    i = np.unravel_index(int(np.argmax(err)), err.shape)
    good = bool(err.max() <= 5e-7)
    print("softmax: max error %.3g (of the row's largest) at [%d, %d]: %s" %
          (err[i], i[0], i[1], "ok" if good else "MISMATCH"))
    ok = ok and good
    return 0 if ok else 1


def main(argv):
    if len(argv) == 4 and argv[1] == "make-input":
        make_input(argv[2], argv[3])
        return 0
    if len(argv) >= 7 and argv[1] == "check":
        shift = 0.0
        for arg in argv[7:]:
            if arg.startswith("--shift="):
                shift = float(arg.split("=", 1)[1])
        return check(*argv[2:7], shift)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
