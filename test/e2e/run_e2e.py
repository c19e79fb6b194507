#!/usr/bin/python3
"""End-to-end test: compile an exported model with Kiln for the CPU, run it,
and compare every output with ONNX Runtime's (CPU EP) on the same inputs.

  /usr/bin/python3 test/e2e/run_e2e.py --build BUILD --model NAME [--threads N]

NAME is a graph written by bench/models/export.py: resnet50, mobilenet_v2,
bert, llama_prefill, llama_decode, or any of them with a "_small" suffix.

Steps (files under BUILD/e2e/NAME/):
  1. export BUILD/models/NAME.onnx with bench/models/export.py (cached there);
  2. split NAME.inputs.npz into inputs/<input>.npy;
  3. ONNX Runtime reference -> ort/<output>.npy via bench/ort/ort_run.js,
     cached: rerun only when the model, the inputs, ORT's version or
     ort_run.js change (ort/stamp.json);
     sanity check: ORT vs PyTorch's outputs (NAME.torch_outputs.npz);
  4. BUILD/bin/kiln-compile NAME.onnx --target=cpu -o model.kiln
     (with --devices: the targets those devices run, and --emulation when an
     emu:<gfx> device is among them)
  5. BUILD/bin/kiln-run model.kiln --device=cpu --input=IN=@inputs/IN.npy ...
         --output-dir=kiln/   [--threads=N when --threads is given]
     (with --devices: once per device, into kiln/ for cpu and
     kiln-emu-<gfx>/ for emu:<gfx>)
     kiln-run must write one <output>.npy per model output, named after the
     output with every character outside [A-Za-z0-9._-] replaced by '_';
  6. compare kiln/ with ort/: the same set of files, and per output the same
     dtype and shape, and the values within tolerance (below).

Comparison of a float output (got vs reference ref, computed in float64),
element by element (numpy.allclose-style, with the absolute part scaled to
the output's range because the error of a long sum grows with its terms, not
with its result):
  scale   = max |ref|          (1 when ref is all zeros)
  PASS element i if |got[i] - ref[i]| <= atol * scale + rtol * |ref[i]|
  and the output passes when every element does, non-finite values (NaN,
  +-Inf) sit at the same places in both, AND (an additional check, never an
  alternative) cos = <got, ref> / (|got| |ref|) >= min_cos.
Tolerances by the precision the model computes in (--precision of the gfx
matrix cores; f32 otherwise), overridable with --rtol, --atol and --min-cos:
  f32   rtol 1e-3  atol 1e-3  min_cos 0.99999
  f16   rtol 1e-2  atol 1e-2  min_cos 0.9999
  bf16  rtol 3e-2  atol 3e-2  min_cos 0.999
Reported per output: elements outside the tolerance, the worst element
(index, got, ref), rel_err = max|got - ref| / scale and cos.
Integer and bool outputs must be equal.

ORT vs PyTorch uses the same figures (f32 tolerance); it fails only when the
reference is way off (rel_err > 1e-2 AND cos < 0.9999), and warns between
that and the kiln tolerance.

--skip-kiln stops after step 3 (checks the reference alone).
Exit status: 0 pass, 1 fail, 2 usage or set-up error.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from npz_to_npy import sanitize, split_npz  # noqa: E402

EXPORT = ROOT / "bench" / "models" / "export.py"
ORT_DIR = ROOT / "bench" / "ort"
ORT_RUN = ORT_DIR / "ort_run.js"

BASE_MODELS = {
    "resnet50": "resnet50",
    "mobilenet_v2": "mobilenet_v2",
    "mobilenet_v3_large": "mobilenet_v3_large",
    "efficientnet_b0": "efficientnet_b0",
    "regnet_y_400mf": "regnet_y_400mf",
    "convnext_tiny": "convnext_tiny",
    "vit_b_16": "vit_b_16",
    "bert": "bert",
    "llama_prefill": "llama",
    "llama_decode": "llama",
}

# ORT vs PyTorch: beyond both of these the reference itself is broken.
TORCH_FAIL_REL = 1e-2
TORCH_FAIL_COS = 0.9999


class SetupError(Exception):
    pass


def log(msg: str = "") -> None:
    print(msg, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run(cmd: list[str], what: str, timeout: float, **kwargs) -> tuple[subprocess.CompletedProcess, float]:
    """Runs cmd, echoing it; returns (completed process, seconds)."""
    log("$ " + " ".join(str(c) for c in cmd))
    start = time.perf_counter()
    try:
        proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                              timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        raise SetupError(f"{what} timed out after {timeout:.0f}s")
    except OSError as e:
        raise SetupError(f"{what}: cannot run {cmd[0]}: {e}")
    seconds = time.perf_counter() - start
    for stream in (proc.stdout, proc.stderr):
        text = stream.strip()
        if text:
            lines = text.splitlines()
            if len(lines) > 40:
                lines = lines[:20] + [f"... ({len(lines) - 40} lines) ..."] + lines[-20:]
            log("\n".join("  | " + line for line in lines))
    return proc, seconds


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------

# Tolerances by compute precision; see the module docstring.
TOLERANCES = {
    "f32": {"rtol": 1e-3, "atol": 1e-3, "min_cos": 0.99999},
    "f16": {"rtol": 1e-2, "atol": 1e-2, "min_cos": 0.9999},
    "bf16": {"rtol": 3e-2, "atol": 3e-2, "min_cos": 0.999},
}


def compare(got: np.ndarray, ref: np.ndarray, tol: dict) -> dict:
    """Figures for one output; see the module docstring for the definitions."""
    r = {"dtype_ok": got.dtype == ref.dtype, "shape_ok": got.shape == ref.shape}
    if not (r["dtype_ok"] and r["shape_ok"]):
        r["pass"] = False
        return r
    if not np.issubdtype(ref.dtype, np.floating):
        mismatches = int(np.count_nonzero(got != ref))
        r.update(kind="exact", mismatches=mismatches)
        r["pass"] = mismatches == 0
        return r
    g = got.astype(np.float64).ravel()
    f = ref.astype(np.float64).ravel()
    g_fin, f_fin = np.isfinite(g), np.isfinite(f)
    nonfinite_ok = bool(np.array_equal(g_fin, f_fin)
                        and np.array_equal(g[~g_fin], f[~f_fin], equal_nan=True))
    both = g_fin & f_fin
    index = np.flatnonzero(both)
    g, f = g[both], f[both]
    err = np.abs(g - f)
    max_abs = float(np.max(err)) if g.size else 0.0
    scale = float(np.max(np.abs(f))) if f.size else 0.0
    scale = scale if scale > 0 else 1.0
    rel = max_abs / scale
    bound = tol["atol"] * scale + tol["rtol"] * np.abs(f)
    outside = err > bound
    bad = int(np.count_nonzero(outside))
    ng, nf = float(np.linalg.norm(g)), float(np.linalg.norm(f))
    if ng == 0.0 and nf == 0.0:
        cos = 1.0
    elif ng == 0.0 or nf == 0.0:
        cos = 0.0
    else:
        cos = float(np.dot(g, f) / (ng * nf))
    worst = None
    if g.size:
        # The element furthest outside (or, when all pass, closest to) its bound.
        k = int(np.argmax(err - bound))
        worst = (np.unravel_index(int(index[k]), ref.shape), float(g[k]), float(f[k]))
    r.update(kind="float", max_abs=max_abs, scale=scale, rel_err=rel, cos=cos, outside=bad,
             elements=int(g.size), worst=worst, nonfinite_ok=nonfinite_ok,
             nonfinite=int(np.count_nonzero(~f_fin)),
             nonfinite_got=int(np.count_nonzero(~g_fin)))
    r["pass"] = nonfinite_ok and bad == 0 and cos >= tol["min_cos"]
    return r


def describe(name: str, arr: np.ndarray | None, r: dict) -> str:
    shape = "x".join(map(str, arr.shape)) if arr is not None and arr.shape else "scalar"
    dtype = str(arr.dtype) if arr is not None else "?"
    if not r.get("dtype_ok", True) or not r.get("shape_ok", True):
        return f"{name}: {r['detail']}"
    if r.get("kind") == "exact":
        return f"{name}: {dtype} {shape} mismatches={r['mismatches']}"
    text = (f"{name}: {dtype} {shape} max|ref|={r['scale']:.4g} max_abs_err={r['max_abs']:.3g} "
            f"rel_err={r['rel_err']:.3g} cos={r['cos']:.8f} "
            f"outside_tolerance={r['outside']}/{r['elements']}")
    if r["worst"] is not None:
        at, got_v, ref_v = r["worst"]
        text += f" worst@{list(map(int, at))}: got {got_v:.6g} ref {ref_v:.6g}"
    if r["nonfinite"] or not r["nonfinite_ok"]:
        text += (f" non-finite: got {r['nonfinite_got']} ref {r['nonfinite']}"
                 + ("" if r["nonfinite_ok"] else " (at different places)"))
    return text


def compare_dirs(label: str, got_arrays: dict[str, np.ndarray | None],
                 ref_arrays: dict[str, np.ndarray], tol: dict) -> list[dict]:
    """Compares output by output (keys are output names); logs one line each."""
    results = []
    for name, ref in ref_arrays.items():
        got = got_arrays.get(name)
        if got is None:
            r = {"pass": False, "dtype_ok": False, "shape_ok": False, "detail": "MISSING"}
        else:
            r = compare(got, ref, tol)
            if not (r["dtype_ok"] and r["shape_ok"]):
                r["detail"] = (f"got {got.dtype} {list(got.shape)}, "
                               f"want {ref.dtype} {list(ref.shape)}")
        r["name"] = name
        r["line"] = describe(name, got, r)
        results.append(r)
    return results


def load_outputs(folder: Path, names: list[str]) -> tuple[dict[str, np.ndarray | None], list[str]]:
    """Loads folder/<sanitize(name)>.npy per output name; also returns the
    .npy files in the folder that belong to no output."""
    arrays: dict[str, np.ndarray | None] = {}
    expected = set()
    for name in names:
        path = folder / f"{sanitize(name)}.npy"
        expected.add(path.name)
        arrays[name] = np.load(path, allow_pickle=False) if path.exists() else None
    extra = sorted(p.name for p in folder.glob("*.npy") if p.name not in expected)
    return arrays, extra


# ---------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------

def export_model(build: Path, name: str, timeout: float) -> dict:
    models = build / "models"
    models.mkdir(parents=True, exist_ok=True)
    small = name.endswith("_small")
    base_name = name[: -len("_small")] if small else name
    base = BASE_MODELS[base_name]
    cmd = [sys.executable, EXPORT, "--out", models, "--models", base] + (["--small"] if small else [])
    # Several e2e tests may export the same model at once (llama_prefill and
    # llama_decode share one export): serialize them.
    with open(models / ".export.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc, seconds = run(cmd, "export", timeout)
    if proc.returncode != 0:
        raise SetupError(f"export.py failed (exit {proc.returncode})")
    sidecar = json.loads((models / f"{name}.json").read_text())
    log(f"export: {seconds:.1f}s")
    return sidecar


def ort_version() -> str:
    pkg = ORT_DIR / "node_modules" / "onnxruntime-node" / "package.json"
    if not pkg.exists():
        raise SetupError("onnxruntime-node is not installed: run scripts/setup.sh "
                         "(or `npm ci --ignore-scripts` in bench/ort)")
    return json.loads(pkg.read_text())["version"]


def node_binary() -> str:
    node = os.environ.get("KILN_NODE") or shutil.which("node") or "/usr/bin/node"
    if not Path(node).exists() and not shutil.which(node):
        raise SetupError("node not found (run scripts/setup.sh or set KILN_NODE)")
    return node


def ort_reference(onnx_path: Path, inputs_npz: Path, input_files: dict[str, Path],
                  out: Path, threads: int, timeout: float) -> None:
    stamp_path = out / "stamp.json"
    stamp = {
        "onnx_sha256": sha256_file(onnx_path),
        "inputs_sha256": sha256_file(inputs_npz),
        "onnxruntime_node": ort_version(),
        "ort_run_sha256": sha256_file(ORT_RUN),
    }
    try:
        if json.loads(stamp_path.read_text()) == stamp:
            log(f"ort: cached reference in {out} (onnxruntime-node {stamp['onnxruntime_node']})")
            return
    except (OSError, ValueError):
        pass
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cmd = [node_binary(), ORT_RUN, onnx_path, "--output-dir", out, "--threads", str(threads)]
    for name, path in input_files.items():
        cmd += ["--input", f"{name}={path}"]
    proc, seconds = run(cmd, "ort_run.js", timeout)
    if proc.returncode != 0:
        raise SetupError(f"ort_run.js failed (exit {proc.returncode})")
    stamp_path.write_text(json.dumps(stamp, indent=2) + "\n")
    log(f"ort: {seconds:.1f}s (onnxruntime-node {stamp['onnxruntime_node']}, {threads} thread(s))")


def report(label: str, results: list[dict], extra: list[str], ok_word: str = "PASS",
           fail_word: str = "FAIL", judge=None) -> bool:
    all_ok = True
    for r in results:
        verdict = judge(r) if judge else (ok_word if r["pass"] else fail_word)
        if verdict == fail_word:
            all_ok = False
        log(f"[{label}] {r['line']} -> {verdict}")
    for name in extra:
        log(f"[{label}] {name}: no such model output -> FAIL")
        all_ok = False
    return all_ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Kiln end-to-end test against ONNX Runtime",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--build", type=Path, required=True, help="build folder (has bin/)")
    parser.add_argument("--model", required=True,
                        help="resnet50, mobilenet_v2, bert, llama_prefill, llama_decode "
                             "(optionally with _small)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for ORT (default 1) and, when given, kiln-run --threads=N")
    parser.add_argument("--devices", default="cpu",
                        help="comma-separated kiln-run devices to run and compare with ORT: "
                             "cpu and emu:<gfx> (the gfx kernels emulated on the CPU); "
                             "default cpu")
    parser.add_argument("--precision", choices=["f32", "f16", "bf16"], default=None,
                        help="kiln-compile --precision for the gfx targets (their matmuls and "
                             "convolutions on the matrix cores)")
    parser.add_argument("--rtol", type=float, default=None,
                        help="per-element relative tolerance (default: by precision)")
    parser.add_argument("--atol", type=float, default=None,
                        help="per-element absolute tolerance, as a fraction of max|ref| "
                             "(default: by precision)")
    parser.add_argument("--min-cos", type=float, default=None,
                        help="least cosine similarity, checked in addition (default: by precision)")
    parser.add_argument("--skip-kiln", action="store_true",
                        help="only export and check the ORT reference against PyTorch")
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds allowed per step (default 3600)")
    args = parser.parse_args(argv)

    name = args.model
    if name.removesuffix("_small") not in BASE_MODELS:
        parser.error(f"unknown model {name!r}")
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    targets = []
    for device in devices:
        if device != "cpu" and not device.startswith("emu:"):
            parser.error(f"unsupported device {device!r} (cpu or emu:<gfx>)")
        target = device.removeprefix("emu:")
        if target not in targets:
            targets.append(target)
    emulation = any(d.startswith("emu:") for d in devices)
    build = args.build.resolve()
    work = build / "e2e" / name
    work.mkdir(parents=True, exist_ok=True)
    bin_dir = build / "bin"
    threads = args.threads or 1
    log(f"e2e {name}: build {build}, work folder {work}")
    tol = dict(TOLERANCES[args.precision or "f32"])
    for key in ("rtol", "atol", "min_cos"):
        if getattr(args, key) is not None:
            tol[key] = getattr(args, key)
    log(f"criterion ({args.precision or 'f32'}): every element |got-ref| <= "
        f"{tol['atol']:g}*max|ref| + {tol['rtol']:g}*|ref|, AND cos(got, ref) >= "
        f"{tol['min_cos']}; dtypes, shapes and names must match")

    try:
        # 1-2. model, inputs
        sidecar = export_model(build, name, args.timeout)
        onnx_path = build / "models" / f"{name}.onnx"
        inputs_npz = build / "models" / f"{name}.inputs.npz"
        input_files = split_npz(inputs_npz, work / "inputs")
        output_names = [o["name"] for o in sidecar["outputs"]]
        log(f"inputs: " + ", ".join(f"{o['name']} {o['dtype']} {o['shape']}" for o in sidecar["inputs"]))
        log(f"outputs: " + ", ".join(output_names))

        # 3. ORT reference and its sanity check against PyTorch
        ort_dir = work / "ort"
        ort_reference(onnx_path, inputs_npz, input_files, ort_dir, threads, args.timeout)
        ort_arrays, ort_extra = load_outputs(ort_dir, output_names)
        missing = [n for n, a in ort_arrays.items() if a is None]
        if missing or ort_extra:
            raise SetupError(f"ORT outputs do not match the model's: missing {missing}, "
                             f"extra {ort_extra}")
        with np.load(build / "models" / f"{name}.torch_outputs.npz") as torch_npz:
            torch_arrays = {n: torch_npz[n] for n in torch_npz.files}

        def judge_torch(r: dict) -> str:
            if r["pass"]:
                return "OK"
            way_off = (not r.get("dtype_ok") or not r.get("shape_ok") or r.get("kind") == "exact"
                       or not r["nonfinite_ok"]
                       or (r["rel_err"] > TORCH_FAIL_REL and r["cos"] < TORCH_FAIL_COS))
            return "FAIL" if way_off else "WARN"

        torch_results = compare_dirs("ort vs torch", ort_arrays, torch_arrays,
                                     TOLERANCES["f32"])
        torch_ok = report("ort vs torch", torch_results, [], ok_word="OK", judge=judge_torch)
        if not torch_ok:
            log(f"e2e {name}: FAIL (the ONNX Runtime reference disagrees with PyTorch)")
            return 1
        if args.skip_kiln:
            log(f"e2e {name}: reference OK ({len(output_names)} outputs); kiln skipped")
            return 0

        # 4. compile
        kiln_compile = bin_dir / "kiln-compile"
        kiln_run = bin_dir / "kiln-run"
        for tool in (kiln_compile, kiln_run):
            if not tool.exists():
                raise SetupError(f"{tool} does not exist (build the project first)")
        # Variants (--precision) keep their own artifact and outputs, so that
        # they never overwrite the plain run's files.
        variant = f"-{args.precision}" if args.precision else ""
        artifact = work / f"model{variant}.kiln"
        artifact.unlink(missing_ok=True)
        compile_cmd = [kiln_compile, onnx_path, "--target=" + ",".join(targets), "-o", artifact]
        if emulation:
            compile_cmd.append("--emulation")
        if args.precision:
            compile_cmd.append(f"--precision={args.precision}")
        proc, seconds = run(compile_cmd, "kiln-compile", args.timeout)
        if proc.returncode != 0 or not artifact.exists():
            log(f"e2e {name}: FAIL (kiln-compile exit {proc.returncode})")
            return 1
        log(f"kiln-compile: {seconds:.1f}s, artifact {artifact.stat().st_size / 2**20:.1f} MiB "
            f"(.onnx {onnx_path.stat().st_size / 2**20:.1f} MiB)")

        # 5-6. run on each device and compare
        all_ok = True
        for device in devices:
            kiln_dir = work / (("kiln" if device == "cpu" else "kiln-" + device.replace(":", "-"))
                               + variant)
            if kiln_dir.exists():
                shutil.rmtree(kiln_dir)
            kiln_dir.mkdir(parents=True)
            cmd = [kiln_run, artifact, f"--device={device}"]
            cmd += [f"--input={n}=@{p}" for n, p in input_files.items()]
            cmd += [f"--output-dir={kiln_dir}"]
            if args.threads is not None:
                cmd += [f"--threads={args.threads}"]
            proc, seconds = run(cmd, "kiln-run", args.timeout)
            if proc.returncode != 0:
                log(f"e2e {name} on {device}: FAIL (kiln-run exit {proc.returncode})")
                all_ok = False
                continue
            log(f"kiln-run --device={device}: {seconds:.1f}s")

            label = "kiln vs ort" if device == "cpu" else f"kiln {device} vs ort"
            kiln_arrays, kiln_extra = load_outputs(kiln_dir, output_names)
            results = compare_dirs(label, kiln_arrays, ort_arrays, tol)
            ok = report(label, results, kiln_extra)
            passed = sum(r["pass"] for r in results)
            log(f"e2e {name} on {device}: {'PASS' if ok else 'FAIL'} ({passed}/{len(results)} "
                f"outputs within tolerance"
                f"{', extra files: ' + ', '.join(kiln_extra) if kiln_extra else ''})")
            all_ok = all_ok and ok
        if len(devices) > 1:
            log(f"e2e {name}: {'PASS' if all_ok else 'FAIL'} on {', '.join(devices)}")
        return 0 if all_ok else 1
    except SetupError as e:
        log(f"e2e {name}: ERROR: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
