#!/usr/bin/python3
"""Split a .npz (e.g. bench/models/export.py's <name>.inputs.npz) into one
.npy per array, named after the array: DIR/<NAME>.npy, where NAME is the array
(input) name with any character outside [A-Za-z0-9._-] replaced by '_' (the
rule kiln-run and bench/ort/ort_run.js use for output files).

Usage: /usr/bin/python3 bench/npz_to_npy.py build/models/resnet50.inputs.npz DIR
Prints one line per array: NAME=DIR/FILE.npy (ready for --input NAME=...).
Files whose content is already identical are not rewritten.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def sanitize(name: str) -> str:
    return _UNSAFE.sub("_", name)


def split_npz(npz: Path, out_dir: Path) -> dict[str, Path]:
    """Writes each array of `npz` to out_dir/<sanitized name>.npy (C order).
    Returns {array name: path}, in the archive's order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    with np.load(npz) as archive:
        for name in archive.files:
            # (np.ascontiguousarray would make a scalar 1-d.)
            array = np.require(archive[name], requirements="C")
            path = out_dir / f"{sanitize(name)}.npy"
            if path in paths.values():
                raise ValueError(f"{npz}: two arrays map to {path.name}")
            if path.exists():
                try:
                    old = np.load(path)
                    if (old.dtype == array.dtype and old.shape == array.shape
                            and np.array_equal(old, array)):
                        paths[name] = path
                        continue
                except (OSError, ValueError):
                    pass
            tmp = path.with_name(f".{path.name}.tmp")
            with open(tmp, "wb") as f:
                np.save(f, array)
            tmp.replace(path)
            paths[name] = path
    return paths


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for name, path in split_npz(Path(argv[0]), Path(argv[1])).items():
        print(f"{name}={path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
