#!/usr/bin/python3
"""Statistics of the draws of Inputs/random_ops.onnxtxt, for
random-numerics.test.

  random_stats.py inputs DIR           the model's inputs, as DIR/NAME.npy
  random_stats.py check DIR            one line per output: ok, or FAIL and why
  random_stats.py same A B [--close N,..]  outputs of two runs bit for bit
                                       equal (those named by --close within
                                       1e-5 instead)
  random_stats.py differ A B NAME      output NAME differs between two runs

The bounds are wide (5 to 7 standard deviations of the statistic for
100,000 draws, so a correct generator fails about never) but a wrong scale,
offset, bit count, probability or a stream that repeats along a dimension
fails them. Exit status 1 when a check fails.
"""

import sys
from pathlib import Path

import numpy as np

N = 100000
LOGITS = np.array([[0.0, 1.0, 2.0, 3.0], np.log([0.1, 0.2, 0.3, 0.4])], dtype=np.float32)


def lag1(a):
    """Correlation of consecutive elements."""
    a = a.astype(np.float64).ravel()
    return float(np.corrcoef(a[:-1], a[1:])[0, 1])


def within(name, value, want, tol):
    if abs(value - want) > tol:
        return f"{name} {value:.6g}, expected {want:.6g} +- {tol:.3g}"
    return None


def uniform_checks(a, low, high, bins=True):
    problems = []
    f = a.astype(np.float64)
    width = high - low
    if f.min() < low or f.max() >= high:
        problems.append(f"range [{f.min():.9g}, {f.max():.9g}], expected within [{low}, {high})")
    if f.min() > low + 0.001 * width or f.max() < high - 0.001 * width:
        problems.append(f"range [{f.min():.9g}, {f.max():.9g}] does not reach the ends of [{low}, {high})")
    problems.append(within("mean", f.mean(), (low + high) / 2, 0.006 * width))
    problems.append(within("std", f.std(), width / np.sqrt(12), 0.003 * width))
    if bins:
        counts, _ = np.histogram(f, bins=10, range=(low, high))
        worst = np.abs(counts / f.size - 0.1).max()
        if worst > 0.006:
            problems.append(f"a tenth of the range holds {counts.min()}..{counts.max()} draws of {f.size}")
    problems.append(within("lag-1 correlation", lag1(f), 0.0, 0.02))
    return problems


def check(out: Path) -> int:
    load = lambda name: np.load(out / f"{name}.npy")
    results = {}
    u = load("u")
    results["u"] = ([f"dtype {u.dtype}"] if u.dtype != np.float32 else []) + uniform_checks(u, -2.0, 3.0)

    n = load("n").astype(np.float64)
    z = (n - 1.0) / 2.0
    results["n"] = [within("mean", n.mean(), 1.0, 0.04), within("std", n.std(), 2.0, 0.03),
                    within("fraction within one scale", float((np.abs(z) < 1).mean()), 0.6827, 0.01),
                    within("fraction beyond two scales", float((np.abs(z) > 2).mean()), 0.0455, 0.005),
                    None if np.abs(z).max() < 6.5 else f"a draw {np.abs(z).max():.3g} scales from the mean",
                    within("lag-1 correlation", lag1(n), 0.0, 0.02)]

    d = load("d")
    fine = d.astype(np.float64) * 2.0**24
    results["d"] = ([f"dtype {d.dtype}"] if d.dtype != np.float64 else []) + uniform_checks(d, 0.0, 1.0) + [
        None if (fine != np.floor(fine)).mean() > 0.9 else "double draws have only 24 random bits"]

    h = load("h")
    steps = h.astype(np.float64) * 2.0**11
    results["h"] = ([f"dtype {h.dtype}"] if h.dtype != np.float16 else []) + uniform_checks(h, 0.0, 1.0) + [
        None if (steps == np.floor(steps)).all() else "float16 draws are not multiples of 2^-11"]

    g = load("g").astype(np.float64)
    results["g"] = [None if g.shape == (250, 400) else f"shape {g.shape}",
                    within("mean", g.mean(), 0.0, 0.02), within("std", g.std(), 1.0, 0.015),
                    within("correlation of consecutive rows", float(np.corrcoef(g[:-1].ravel(), g[1:].ravel())[0, 1]), 0.0, 0.02),
                    within("correlation of consecutive columns", float(np.corrcoef(g[:, :-1].ravel(), g[:, 1:].ravel())[0, 1]), 0.0, 0.02)]

    b = load("b")
    results["b"] = [None if np.isin(b, (0.0, 1.0)).all() else "values other than 0 and 1",
                    within("mean", float(b.mean()), 0.3, 0.01)]

    drop, mask = load("drop"), load("mask")
    scale = np.float32(1.0) / np.float32(0.75)
    results["drop"] = [None if np.isin(drop, (np.float32(0), scale)).all() else "values other than 0 and 1 / (1 - ratio)",
                       None if np.array_equal(mask, drop != 0) else "the mask is not where the output is kept",
                       within("kept fraction", float(mask.mean()), 0.75, 0.01)]

    m = load("m")
    e = np.exp(LOGITS.astype(np.float64))
    p = e / e.sum(axis=1, keepdims=True)
    problems = [None if m.shape == (2, 50000) and m.dtype == np.int64 else f"{m.dtype}{list(m.shape)}"]
    if m.min() < 0 or m.max() > 3:
        problems.append(f"classes {m.min()}..{m.max()}, expected 0..3")
    for row in range(2):
        freq = np.bincount(m[row].clip(0, 3), minlength=4) / m.shape[1]
        for c in range(4):
            problems.append(within(f"row {row} frequency of class {c}", freq[c], p[row, c], 0.012))
    results["m"] = problems

    failed = 0
    for name, problems in results.items():
        problems = [p for p in problems if p]
        print(f"{name}: ok" if not problems else f"{name}: FAIL {'; '.join(problems)}")
        failed += bool(problems)
    return 1 if failed else 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "inputs":
        d = Path(args[0])
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "x.npy", np.zeros(N, np.float32))
        np.save(d / "p.npy", np.full(N, 0.3, np.float32))
        np.save(d / "ones.npy", np.ones(N, np.float32))
        np.save(d / "logits.npy", LOGITS)
        return 0
    if cmd == "check":
        return check(Path(args[0]))
    if cmd == "same":
        a, b = Path(args[0]), Path(args[1])
        close = set(args[3].split(",")) if len(args) > 3 and args[2] == "--close" else set()
        bad = 0
        for f in sorted(a.glob("*.npy")):
            x, y = np.load(f), np.load(b / f.name)
            same = np.allclose(x, y, rtol=1e-5, atol=1e-5) if f.stem in close else np.array_equal(x, y)
            print(f"{f.stem}: {'same' if same else 'DIFFERENT'}")
            bad += not same
        return 1 if bad else 0
    if cmd == "differ":
        a, b, name = Path(args[0]), Path(args[1]), args[2]
        x, y = np.load(a / f"{name}.npy"), np.load(b / f"{name}.npy")
        differ = float((x != y).mean())
        print(f"{name}: {differ:.3f} of the draws differ")
        return 0 if differ > 0.99 else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
