#!/usr/bin/python3
"""Relu, Clip(0, 6), HardSigmoid and HardSwish of a compiled model against
numpy's np.maximum / np.minimum / np.clip (the definitions ONNX gives for
them), element by element, on inputs with NaN, +-inf and +-0.

  check_clamps.py make-input X.npy
      4096 points: NaN, +-inf, +-0, the clamps' edges (0, 6, -2.5, 2.5,
      -3, 3) and a grid of [-10, 10].
  check_clamps.py check X.npy RELU.npy RELU6.npy HSIG.npy HSWISH.npy [--shift=D]
      Relu and Clip must be exact (a zero of either sign for a zero), NaN
      exactly where the input is NaN; HardSigmoid and HardSwish within
      1.2e-7 * max(1, |ref|) (one rounding of alpha x + beta). --shift=D
      compares against the functions of x + D: a negative control, the
      check must then fail.
"""
import sys

import numpy as np


def make_input(path):
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 6.0, -6.0, 2.5, -2.5, 3.0, -3.0,
                        1e-30, -1e-30, 5.9999995, 6.0000005], np.float32)
    grid = np.linspace(-10.0, 10.0, 4096 - special.size, dtype=np.float32)
    np.save(path, np.concatenate([special, grid]).reshape(1, -1))


def check(x_path, relu_path, relu6_path, hsig_path, hswish_path, shift):
    x = np.load(x_path).astype(np.float64).ravel() + shift
    got = [np.load(p).astype(np.float64).ravel() for p in (relu_path, relu6_path, hsig_path, hswish_path)]
    with np.errstate(invalid="ignore"):
        hsig = np.clip(0.2 * x + 0.5, 0.0, 1.0)
        refs = [np.maximum(x, 0.0), np.minimum(np.maximum(x, 0.0), 6.0), hsig,
                x * np.clip(x / 6.0 + 0.5, 0.0, 1.0)]
    ok = True
    for name, y, ref, tol in zip(("relu", "relu6", "hardsigmoid", "hardswish"), got, refs,
                                 (0.0, 0.0, 1.2e-7, 1.2e-7)):
        nan = np.isnan(ref)
        if not np.array_equal(np.isnan(y), nan):
            print("%s: NaN positions differ from the reference's: MISMATCH" % name)
            ok = False
            continue
        with np.errstate(invalid="ignore"):
            err = np.where(y[~nan] == ref[~nan], 0.0, np.abs(y[~nan] - ref[~nan]))
        # (An infinite reference must be matched exactly.)
        finite = np.isfinite(ref[~nan])
        bound = np.where(finite, tol * np.maximum(1.0, np.where(finite, np.abs(ref[~nan]), 0.0)), 0.0)
        worst = int(np.argmax(err - bound))
        good = bool(np.all(err <= bound))
        print("%s: max error %.3g at x = %.9g: %s" % (name, err[worst], x[~nan][worst],
                                                      "ok" if good else "MISMATCH"))
        ok = ok and good
    return 0 if ok else 1


def main(argv):
    if len(argv) == 3 and argv[1] == "make-input":
        make_input(argv[2])
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
