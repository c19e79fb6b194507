#!/usr/bin/python3
"""PyTorch-exported models (test/e2e/torch_models.py) compiled by Kiln, run,
and compared with ONNX Runtime (CPU EP) on the same inputs.

  /usr/bin/python3 test/e2e/run_torch_models.py --build BUILD
      [--devices cpu,emu:gfx942] [--models a,b] [--timeout S]

Steps, files under BUILD/torch-models/ (exports) and BUILD/torch-models/<model>/:
  1. export every model asked for with torch_models.py (cached: a model is
     exported again only when torch_models.py or the torch / torchvision /
     onnx versions change);
  2. ONNX Runtime reference with bench/ort/ort_run.js (cached on the model,
     the inputs, ORT's version and ort_run.js, as run_e2e.py does), checked
     against PyTorch's own outputs (a reference way off PyTorch fails);
  3. per device: kiln-compile --target=cpu, or --target=<gfx> --emulation for
     emu:<gfx>, one artifact per target so that each device gets its own
     verdict; inputs the model lists as pinned (control flow that must fold
     at compile time) are given with --input-value=NAME=V and left out of the
     kiln-run command;
  4. kiln-run --device=DEVICE, then every output compared with ORT's per
     element with run_e2e.py's f32 criterion: |got-ref| <= 1e-3*max|ref| +
     1e-3*|ref| for every element, cos >= 0.99999, non-finite values at the
     same places; integer outputs exactly; names, dtypes, shapes equal.

One line per model and device: PASS / FAIL / XFAIL (an expected failure of
EXPECTED_FAILURES, with its reason) / XPASS, the worst output's max abs and
relative error, and the compile and run times. Exit status 1 when any model
fails unexpectedly or an expected failure passes (remove it from the table),
2 on a set-up error (no ORT, no binaries, export failed).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run_e2e  # noqa: E402
from run_e2e import SetupError, log  # noqa: E402

EXPORTER = HERE / "torch_models.py"

# (model, device) -> why it does not work yet; device "*" is every device.
# Keep the reason to one line: the failing op and Kiln's diagnostic. An entry
# that starts passing fails the run, so the table only shrinks.
EXPECTED_FAILURES: dict[tuple[str, str], str] = {}


def expected_failure(model: str, device: str) -> str | None:
    return EXPECTED_FAILURES.get((model, device)) or EXPECTED_FAILURES.get((model, "*"))


def first_error(text: str) -> str:
    """The first line that looks like a diagnostic (else the first line)."""
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    for line in lines:
        if "error" in line.lower():
            return line[:300]
    return lines[0][:300] if lines else "(no output)"


def export_models(models_dir: Path, names: list[str], timeout: float) -> dict[str, dict]:
    models_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, EXPORTER, "--out", models_dir, "--models", ",".join(names)]
    with open(models_dir / ".export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc, seconds = run_e2e.run(cmd, "torch_models.py", timeout)
    if proc.returncode != 0:
        raise SetupError(f"torch_models.py failed (exit {proc.returncode})")
    log(f"export: {seconds:.1f}s")
    return {n: json.loads((models_dir / f"{n}.json").read_text()) for n in names}


def pinned_value(array: np.ndarray) -> str:
    flat = array.ravel()
    if array.dtype == np.bool_:
        return ",".join("true" if v else "false" for v in flat)
    if np.issubdtype(array.dtype, np.integer):
        return ",".join(str(int(v)) for v in flat)
    return ",".join(repr(float(v)) for v in flat)


def worst(results: list[dict]) -> tuple[float, float]:
    """(max abs error, max relative error) over the float outputs."""
    floats = [r for r in results if r.get("kind") == "float"]
    return (max((r["max_abs"] for r in floats), default=0.0),
            max((r["rel_err"] for r in floats), default=0.0))


def check_reference(name: str, work: Path, models_dir: Path, sidecar: dict,
                    timeout: float) -> tuple[dict[str, Path], dict[str, np.ndarray]]:
    """Inputs as .npy files, and ORT's outputs (checked against PyTorch)."""
    onnx_path = models_dir / f"{name}.onnx"
    inputs_npz = models_dir / f"{name}.inputs.npz"
    input_files = run_e2e.split_npz(inputs_npz, work / "inputs")
    output_names = [o["name"] for o in sidecar["outputs"]]
    ort_dir = work / "ort"
    with open(work / ".ort.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run_e2e.ort_reference(onnx_path, inputs_npz, input_files, ort_dir, 1, timeout)
    ort_arrays, ort_extra = run_e2e.load_outputs(ort_dir, output_names)
    missing = [n for n, a in ort_arrays.items() if a is None]
    if missing or ort_extra:
        raise SetupError(f"ORT outputs do not match the model's: missing {missing}, "
                         f"extra {ort_extra}")
    with np.load(models_dir / f"{name}.torch_outputs.npz") as npz:
        torch_arrays = {n: npz[n] for n in npz.files}
    results = run_e2e.compare_dirs("ort vs torch", ort_arrays, torch_arrays,
                                   run_e2e.TOLERANCES["f32"])
    for r in results:
        way_off = (not r.get("dtype_ok") or not r.get("shape_ok")
                   or (r.get("kind") == "exact" and not r["pass"])
                   or (r.get("kind") == "float" and (not r["nonfinite_ok"] or (
                       r["rel_err"] > run_e2e.TORCH_FAIL_REL
                       and r["cos"] < run_e2e.TORCH_FAIL_COS))))
        verdict = "OK" if r["pass"] else ("FAIL" if way_off else "WARN")
        log(f"  [ort vs torch] {r['line']} -> {verdict}")
        if verdict == "FAIL":
            raise SetupError(f"{name}: the ONNX Runtime reference disagrees with PyTorch")
    return input_files, ort_arrays


def run_device(name: str, device: str, work: Path, models_dir: Path, sidecar: dict,
               input_files: dict[str, Path], ort_arrays: dict[str, np.ndarray],
               bin_dir: Path, timeout: float) -> dict:
    """Compiles for the device's target and runs; returns the outcome."""
    target = device.removeprefix("emu:")
    artifact = work / f"model-{target}.kiln"
    artifact.unlink(missing_ok=True)
    cmd = [bin_dir / "kiln-compile", models_dir / f"{name}.onnx", f"--target={target}",
           "-o", artifact]
    if device.startswith("emu:"):
        cmd.append("--emulation")
    pinned = sidecar.get("pinned", [])
    with np.load(models_dir / f"{name}.inputs.npz") as npz:
        cmd += [f"--input-value={p}={pinned_value(npz[p])}" for p in pinned]
    proc, compile_s = run_e2e.run(cmd, "kiln-compile", timeout)
    out = {"compile_s": compile_s, "run_s": 0.0}
    if proc.returncode != 0 or not artifact.exists():
        return {**out, "ok": False,
                "error": f"kiln-compile exit {proc.returncode}: {first_error(proc.stderr)}"}
    out_dir = work / ("kiln-" + device.replace(":", "-"))
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    cmd = [bin_dir / "kiln-run", artifact, f"--device={device}", f"--output-dir={out_dir}"]
    cmd += [f"--input={n}=@{p}" for n, p in input_files.items() if n not in pinned]
    proc, run_s = run_e2e.run(cmd, "kiln-run", timeout)
    out["run_s"] = run_s
    if proc.returncode != 0:
        return {**out, "ok": False,
                "error": f"kiln-run exit {proc.returncode}: {first_error(proc.stderr)}"}
    arrays, extra = run_e2e.load_outputs(out_dir, list(ort_arrays))
    results = run_e2e.compare_dirs(device, arrays, ort_arrays, run_e2e.TOLERANCES["f32"])
    for r in results:
        log(f"  [kiln {device} vs ort] {r['line']} -> {'PASS' if r['pass'] else 'FAIL'}")
    bad = [r["name"] for r in results if not r["pass"]] + [f"extra file {e}" for e in extra]
    max_abs, rel = worst(results)
    out.update(max_abs=max_abs, rel_err=rel, ok=not bad)
    if bad:
        out["error"] = "outputs outside tolerance: " + ", ".join(bad)
    return out


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(HERE))
    import torch_models  # noqa: E402  (for the list of models only)

    parser = argparse.ArgumentParser(
        description="PyTorch-exported models: Kiln vs ONNX Runtime",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--build", type=Path, required=True, help="build folder (has bin/)")
    parser.add_argument("--devices", default="cpu,emu:gfx942",
                        help="comma-separated: cpu and emu:<gfx> (default cpu,emu:gfx942)")
    parser.add_argument("--models", default=",".join(torch_models.MODELS),
                        help="comma-separated subset (default: all)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per step")
    args = parser.parse_args(argv)
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in torch_models.MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; known: {', '.join(torch_models.MODELS)}")
    devices = [d for d in args.devices.split(",") if d]
    for d in devices:
        if d != "cpu" and not d.startswith("emu:"):
            parser.error(f"unsupported device {d!r} (cpu or emu:<gfx>)")
    stale = [k for k in EXPECTED_FAILURES if k[0] not in torch_models.MODELS]
    if stale:
        log(f"error: expected failures for unknown models: {stale}")
        return 2

    build = args.build.resolve()
    bin_dir = build / "bin"
    models_dir = build / "torch-models"
    start = time.perf_counter()
    rows: list[tuple[str, str, str, str]] = []
    unexpected = 0
    try:
        for tool in ("kiln-compile", "kiln-run"):
            if not (bin_dir / tool).exists():
                raise SetupError(f"{bin_dir / tool} does not exist (build the project first)")
        sidecars = export_models(models_dir, names, args.timeout)
        for name in names:
            log(f"== {name}: ops {' '.join(sidecars[name]['op_types'])}")
            work = models_dir / name
            work.mkdir(parents=True, exist_ok=True)
            input_files, ort_arrays = check_reference(name, work, models_dir, sidecars[name],
                                                      args.timeout)
            for device in devices:
                r = run_device(name, device, work, models_dir, sidecars[name], input_files,
                               ort_arrays, bin_dir, args.timeout)
                xfail = expected_failure(name, device)
                if r["ok"]:
                    verdict = "XPASS" if xfail else "PASS"
                else:
                    verdict = "XFAIL" if xfail else "FAIL"
                unexpected += verdict in ("FAIL", "XPASS")
                figures = (f"max_abs={r['max_abs']:.3g} rel_err={r['rel_err']:.3g}"
                           if "max_abs" in r else "")
                times = f"compile {r['compile_s']:.1f}s, run {r['run_s']:.2f}s"
                detail = {"PASS": "", "FAIL": r.get("error", ""),
                          "XFAIL": f"expected: {xfail} | got: {r.get('error', '')}",
                          "XPASS": f"listed as expected failure ({xfail}) but passes: "
                                   "remove it from EXPECTED_FAILURES"}[verdict]
                line = f"{verdict:5} {name} on {device}: {figures} ({times}) {detail}".rstrip()
                rows.append((verdict, name, device, line))
                log(line)
    except SetupError as e:
        log(f"torch models: ERROR: {e}")
        return 2
    log("")
    log(f"summary ({time.perf_counter() - start:.0f}s):")
    for *_, line in rows:
        log("  " + line)
    counts = {v: sum(r[0] == v for r in rows) for v in ("PASS", "XFAIL", "FAIL", "XPASS")}
    log("torch models: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
