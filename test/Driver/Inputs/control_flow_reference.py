"""numpy reference for runtime-control-flow.test: checks every output of
every run in OUT_ROOT (out-DEVICE-X-C-N-M directories) and prints ok."""
import sys
from pathlib import Path

import numpy as np


def reference(x, c, n, m):
    y = np.maximum(x, 0) if c else -x
    h = x.copy()
    for i in range(n):
        h = h + x + np.float32(i) if m else -h
    s, k = x.copy(), 0
    while k < 4:
        s = s * np.float32(0.5)
        k += 1
        if not s.sum() > 0.25:
            break
    rows = np.arange(2000, dtype=np.float32).reshape(2000, 1)
    return {"y": y, "h": h, "s": s, "total": rows.sum(0), "rows": rows}


root = Path(sys.argv[1])
runs = sorted(root.glob("out-*"))
assert len(runs) == 12, runs
bad = []
for run in runs:
    name, c, n, m = run.name.split("-")[-4:]
    want = reference(np.load(root / f"{name}.npy"), c == "1", int(n), m == "1")
    for output, value in want.items():
        got = np.load(run / f"{output}.npy")
        if got.shape != value.shape or not np.allclose(got, value, rtol=1e-5, atol=1e-6):
            bad.append((run.name, output))
assert not bad, bad
print("ok")
