"""Checks kiln-run outputs against numpy.

usage: check_npy.py add X.npy Y.npy Z.npy   -- Z == X + Y exactly
       check_npy.py same A.npy B.npy        -- identical arrays
       check_npy.py range A.npy LO HI       -- every value in [LO, HI)
Prints "ok" and exits 0, or prints what differs and exits 1.
"""
import sys

import numpy as np


def load(path):
    a = np.load(path)
    print("%s: %s %s" % (path.rsplit("/", 1)[-1], a.dtype, list(a.shape)))
    return a


def main(argv):
    kind = argv[1]
    if kind == "add":
        x, y, z = (load(p) for p in argv[2:5])
        ok = z.dtype == np.float32 and np.array_equal(z, x + y)
    elif kind == "same":
        a, b = load(argv[2]), load(argv[3])
        ok = a.dtype == b.dtype and np.array_equal(a, b)
    elif kind == "range":
        a = load(argv[2])
        ok = bool(np.all(a >= float(argv[3])) and np.all(a < float(argv[4])))
    else:
        sys.exit("unknown check " + kind)
    print("ok" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main(sys.argv)
