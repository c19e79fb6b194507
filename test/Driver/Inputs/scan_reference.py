"""numpy reference for runtime-scan.test: a Scan over x's axis 1 backwards,
state s += row, outputs s (stacked on axis 1) and s * row (stacked on axis 0,
reversed). Checks the cpu and emu runs in DIR and prints ok."""
import sys
from pathlib import Path

import numpy as np

root = Path(sys.argv[1])
init, x = np.load(root / "init.npy"), np.load(root / "x.npy")
s = init.copy()
running, prod = [], []
for t in reversed(range(x.shape[1])):
    row = x[:, t]
    s = s + row
    running.append(s)
    prod.append(s * row)
want = {"total": s, "running": np.stack(running, axis=1), "prod": np.stack(prod[::-1], axis=0)}
bad = []
for device in ("cpu", "emu"):
    for name, value in want.items():
        got = np.load(root / device / f"{name}.npy")
        if got.shape != value.shape or not np.allclose(got, value, rtol=1e-4, atol=1e-5):
            bad.append((device, name, got.shape, value.shape))
assert not bad, bad
print("ok")
