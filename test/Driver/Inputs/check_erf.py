#!/usr/bin/python3
"""The f32 Erf and erf-GELU of a compiled model against Python's math.erf
(the C library's, in double precision), element by element.

  check_erf.py make-input X.npy
      65536 points: a fine grid of [-6, 6] (steps of 1.8e-4), +-0,
      +-inf, NaN, tiny and huge values.
  check_erf.py check X.npy ERF.npy GELU.npy [--shift=D]
      Prints the largest errors and exits 1 when one is over its bound:
      erf within 4e-7 absolute (a few float ulps near +-1), GELU within
      4e-7 * max(1, |x|) absolute, NaN where the input is NaN (and for
      GELU where the graph's IEEE arithmetic gives it), +-1 at the
      infinities. --shift=D compares against erf(x + D) instead: a
      negative control, the check must then fail.
"""
import math
import sys

import numpy as np


def make_input(path):
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e-8, -1e-8,
                        3.9, -3.9, 3.93, -3.93, 10.0, -10.0, 1e30, -1e30], np.float32)
    grid = np.linspace(-6.0, 6.0, 65536 - special.size, dtype=np.float32)
    np.save(path, np.concatenate([special, grid]).reshape(1, -1))


def check(x_path, erf_path, gelu_path, shift):
    x = np.load(x_path).astype(np.float64).ravel()
    erf = np.load(erf_path).astype(np.float64).ravel()
    gelu = np.load(gelu_path).astype(np.float64).ravel()
    ref = np.array([math.erf(v + shift) if not math.isnan(v) else math.nan for v in x])
    # (GELU as the graph computes it, in IEEE arithmetic: -inf gives
    # -inf * 0, NaN.)
    with np.errstate(invalid="ignore"):
        erf_half = np.array([math.erf(v * math.sqrt(0.5) + shift) if not math.isnan(v) else math.nan
                             for v in x])
        ref_gelu = 0.5 * x * (1.0 + erf_half)
    ok = True
    nan = np.isnan(x)
    if not np.array_equal(np.isnan(erf), nan) or not np.array_equal(np.isnan(gelu), np.isnan(ref_gelu)):
        print("NaN positions differ from the reference's: MISMATCH")
        ok = False
    finite = ~nan
    err = np.abs(erf[finite] - ref[finite])
    worst = int(np.argmax(err))
    good = bool(err.max() <= 4e-7)
    print("erf: max abs error %.3g at x = %.9g: %s" % (err[worst], x[finite][worst], "ok" if good else "MISMATCH"))
    ok = ok and good
    finite = ~np.isnan(ref_gelu)
    bound = 4e-7 * np.maximum(1.0, np.abs(x[finite]))
    with np.errstate(invalid="ignore"):
        gerr = np.where(gelu[finite] == ref_gelu[finite], 0.0, np.abs(gelu[finite] - ref_gelu[finite]))
    worst = int(np.argmax(gerr / bound))
    good = bool(np.all(gerr <= bound))
    print("gelu: max scaled error %.3g at x = %.9g: %s" % (gerr[worst] / bound[worst], x[finite][worst],
                                                          "ok" if good else "MISMATCH"))
    ok = ok and good
    return 0 if ok else 1


def main(argv):
    if len(argv) == 3 and argv[1] == "make-input":
        make_input(argv[2])
        return 0
    if len(argv) >= 5 and argv[1] == "check":
        shift = 0.0
        for arg in argv[5:]:
            if arg.startswith("--shift="):
                shift = float(arg.split("=", 1)[1])
        return check(argv[2], argv[3], argv[4], shift)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
