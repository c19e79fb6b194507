"""numpy reference for runtime-loop-early-exit.test: h -= step at most 6
times, each h a row, stopping after the first row whose sum is negative."""
import sys
from pathlib import Path

import numpy as np

root = Path(sys.argv[1])
x = np.load(root / "x.npy")
counts, bad = [], []
for s in range(3):
    step = np.load(root / f"s{s}.npy")
    h, rows = x.copy(), []
    for _ in range(6):
        h = h - step
        rows.append(h)
        if not h.sum() >= 0:
            break
    want = {"h": h, "rows": np.stack(rows)}
    counts.append(len(rows))
    for device in ("cpu", "emu-gfx942"):
        for name, value in want.items():
            got = np.load(root / f"out-{device}-{s}" / f"{name}.npy")
            if got.shape != value.shape or not np.allclose(got, value, rtol=1e-6, atol=1e-6):
                bad.append((device, s, name, got.shape, value.shape))
print("rows", *counts)
assert not bad, bad
print("ok")
