#!/usr/bin/python3
"""Every op-family model of the importer's lit tests, compiled for the CPU and
run, against ONNX Runtime on the same seeded inputs.

  /usr/bin/python3 test/e2e/run_ops_vs_ort.py --build BUILD [--filter REGEX] [--cpu=x86-64-v3]

The models are the `#--- NAME` sections of test/Import/onnx/*.onnxtxt (the
errors*.onnxtxt files are skipped). A section says how it takes part with
`# e2e-ops:` lines:

  # e2e-ops: skip REASON              not run (an error case of the lit test)
  # e2e-ops: --input-value=NAME=V,..  compiled with the input pinned, and run
                                      with that value for it
  # e2e-ops: ignore OUTPUT.. -- REASON  outputs not compared (ONNX Runtime
                                      is not a reference for them)

A section ONNX Runtime itself rejects (the importer accepts a few forms ORT
does not) is reported and skipped; every other output must match: float outputs within max|kiln - ort| <= 1e-3 * max|ort| with the
same non-finite positions, integer and bool outputs exactly. Exit status 1 on
any mismatch or kiln failure, or when fewer than MIN_COMPARED outputs were
compared (the test must not pass vacuously).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnx.parser

ROOT = Path(__file__).resolve().parents[2]
MIN_COMPARED = 40
DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
          9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def sections(path):
    text = path.read_text()
    parts = re.split(r"^#--- (\S+)\n", text, flags=re.M)
    if len(parts) == 1:
        yield path.stem, text
    for name, body in zip(parts[1::2], parts[2::2]):
        yield f"{path.stem}.{name}", body


def directives(body):
    """The section's `# e2e-ops:` lines: (skip reason, pinned inputs, ignored outputs)."""
    skip, pinned, ignored = None, {}, set()
    for line in re.findall(r"^# e2e-ops: (.*)$", body, flags=re.M):
        if line.startswith("skip"):
            skip = line[4:].strip() or "?"
        elif line.startswith("--input-value="):
            name, values = line[len("--input-value="):].split("=", 1)
            pinned[name] = values
        elif line.startswith("ignore "):
            ignored |= set(line[len("ignore "):].split(" -- ")[0].split())
        else:
            raise SystemExit(f"error: unknown directive '# e2e-ops: {line}'")
    return skip, pinned, ignored


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--filter", default="",
                        help="only the sections whose FILE.SECTION name matches this regex")
    parser.add_argument("--cpu", default="host",
                        help="kiln-compile --cpu (x86-64-v3: the AVX2 kernels on any host)")
    args = parser.parse_args()
    bin_dir = args.build.resolve() / "bin"
    work = Path(tempfile.mkdtemp(prefix="kiln-ops-"))
    compared = skipped = failures = 0
    for path in sorted((ROOT / "test/Import/onnx").glob("*.onnxtxt")):
        if path.stem.startswith("errors"):
            continue
        for name, body in sections(path):
            if args.filter and not re.search(args.filter, name):
                continue
            skip, pinned, ignored = directives(body)
            if skip:
                print(f"skip {name}: {skip}")
                continue
            d = work / name
            d.mkdir()
            (d / "m.onnxtxt").write_text(body)
            compile_ = subprocess.run([bin_dir / "kiln-compile", d / "m.onnxtxt", "--target=cpu",
                                       f"--cpu={args.cpu}", "-o", d / "m.kiln"]
                                      + [f"--input-value={k}={v}" for k, v in pinned.items()],
                                      capture_output=True, text=True)
            if compile_.returncode != 0:
                print(f"FAIL {name}: kiln-compile: {compile_.stderr.strip()}")
                failures += 1
                continue
            model = onnx.parser.parse_model(body)
            onnx.save(model, d / "m.onnx")
            rng = np.random.RandomState(1)
            inits = {i.name for i in model.graph.initializer}
            kiln_in, ort_in = [], []
            for inp in model.graph.input:
                if inp.name in inits:
                    continue
                t = inp.type.tensor_type
                shape = [x.dim_value for x in t.shape.dim]
                dtype = DTYPES[t.elem_type]
                if inp.name in pinned:
                    value = np.array(pinned[inp.name].split(","), dtype=np.float64).astype(dtype).reshape(shape)
                elif dtype is np.bool_:
                    value = np.asarray(rng.rand(*shape) > 0.5)
                elif dtype in (np.uint8, np.int8):
                    # 8-bit operands (integer GEMMs) over their full range.
                    info = np.iinfo(dtype)
                    value = rng.randint(info.min, info.max + 1, size=shape).astype(dtype)
                elif np.issubdtype(dtype, np.integer):
                    value = rng.randint(0, 3, size=shape).astype(dtype)
                else:
                    value = np.asarray(rng.randn(*shape)).astype(dtype)
                file = d / f"{sanitize(inp.name)}.npy"
                np.save(file, value)
                kiln_in.append(f"--input={inp.name}=@{file}")
                ort_in += ["--input", f"{inp.name}={file}"]
            ort = subprocess.run(["node", ROOT / "bench/ort/ort_run.js", d / "m.onnx",
                                  "--output-dir", d / "ort"] + ort_in, capture_output=True, text=True)
            if ort.returncode != 0:
                reason = ort.stderr.strip().splitlines()
                print(f"skip {name}: ONNX Runtime rejects it ({reason[0][:120] if reason else '?'})")
                skipped += 1
                continue
            run = subprocess.run([bin_dir / "kiln-run", d / "m.kiln", f"--output-dir={d / 'kiln'}"]
                                 + kiln_in, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"FAIL {name}: kiln-run: {run.stderr.strip()}")
                failures += 1
                continue
            for out in model.graph.output:
                if out.name in ignored:
                    print(f"skip {name} {out.name}: ignored by the section")
                    continue
                file = f"{sanitize(out.name)}.npy"
                got, ref = np.load(d / "kiln" / file), np.load(d / "ort" / file)
                if got.shape != ref.shape or got.dtype != ref.dtype:
                    ok, detail = False, f"{got.dtype}{list(got.shape)} vs {ref.dtype}{list(ref.shape)}"
                elif got.dtype.kind in "biu":
                    ok = np.array_equal(got, ref)
                    detail = f"{int(np.sum(got != ref))} elements differ"
                else:
                    g, r = got.astype(np.float64), ref.astype(np.float64)
                    finite = np.isfinite(r)
                    scale = np.max(np.abs(r[finite])) if finite.any() else 1.0
                    err = np.max(np.abs(g[finite] - r[finite])) / max(scale, 1e-30) if finite.any() else 0.0
                    ok = err <= 1e-3 and np.array_equal(np.isfinite(g), finite)
                    detail = f"rel_err={err:.3g}"
                compared += 1
                print(f"{'ok  ' if ok else 'FAIL'} {name} {out.name}: {detail}")
                failures += not ok
    print(f"{compared} outputs compared, {skipped} models skipped (ONNX Runtime rejects them), "
          f"{failures} failures")
    if not args.filter and compared < MIN_COMPARED:
        print(f"error: fewer than {MIN_COMPARED} outputs compared")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
