"""Writes the .npy inputs of the runtime tests into a directory.

x.npy, y.npy: float32 [4, 8] (values i/4 and 10 - i); y_i32.npy: int32 [4, 8];
y_shape.npy: float32 [8, 4]; y_fortran.npy: Fortran-order float32 [4, 8];
y_trunc.npy: y.npy without its last 5 bytes; not_npy.npy: text.
"""
import os
import sys

import numpy as np

out = sys.argv[1]
x = (np.arange(32, dtype=np.float32) / 4).reshape(4, 8)
y = (10 - np.arange(32, dtype=np.float32)).reshape(4, 8)
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "y.npy"), y)
np.save(os.path.join(out, "y_i32.npy"), y.astype(np.int32))
np.save(os.path.join(out, "y_shape.npy"), y.reshape(8, 4))
np.save(os.path.join(out, "y_fortran.npy"), np.asfortranarray(y))
np.save(os.path.join(out, "y_big.npy"), y.astype(">f4"))
data = open(os.path.join(out, "y.npy"), "rb").read()
open(os.path.join(out, "y_trunc.npy"), "wb").write(data[:-5])
open(os.path.join(out, "not_npy.npy"), "w").write("just some text\n")
