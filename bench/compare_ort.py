#!/usr/bin/python3
"""Kiln vs ONNX Runtime on the CPU: latency side by side, plus compile time,
artifact size and kiln-run's peak memory.

  /usr/bin/python3 bench/compare_ort.py --build build
      [--models resnet50,mobilenet_v2,bert,llama_prefill,llama_decode,torchvision]
      [--threads 1,2] [--rounds 3] [--warmup 10] [--iterations 100]
      [--skip-kiln] [--json-out FILE]

Per model (exported with bench/models/export.py into BUILD/models, cached):
  1. /usr/bin/time -v BUILD/bin/kiln-compile M.onnx --target=cpu -o BUILD/bench/M/model.kiln
     -> compile wall time and peak RSS; artifact size vs .onnx size;
  2. /usr/bin/time -v BUILD/bin/kiln-run model.kiln --device=cpu --input=IN=@IN.npy ...
         --output-dir=... -> kiln-run's peak RSS (one inference);
  3. for each round, for each thread count, alternating which goes first:
       BUILD/bin/kiln-bench model.kiln --device=cpu --threads=N --json
       node bench/ort/ort_run.js M.onnx --bench --threads N --json --input ...
     Both print one JSON line with median_ms, p90_ms, p99_ms. Each figure in
     the table is the median over the rounds; Kiln/ORT is the ratio of the
     medians (below 1: Kiln is faster).
Prints two markdown tables. --skip-kiln measures ORT alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "test" / "e2e"))
from npz_to_npy import split_npz  # noqa: E402
import run_e2e  # noqa: E402  (export and ORT helpers)

ORT_RUN = ROOT / "bench" / "ort" / "ort_run.js"
TIME = "/usr/bin/time"
ALL = ["resnet50", "mobilenet_v2", "bert", "llama_prefill", "llama_decode"]
# The torchvision families of issue 16 (--models torchvision, or by name).
TORCHVISION = ["mobilenet_v3_large", "efficientnet_b0", "regnet_y_400mf", "convnext_tiny",
               "vit_b_16"]


def log(msg: str = "") -> None:
    print(msg, file=sys.stderr, flush=True)


def timed(cmd: list, timeout: float) -> dict:
    """Runs cmd under /usr/bin/time -v; returns exit code, wall seconds, peak
    RSS (MiB), stdout and stderr."""
    cmd = [str(c) for c in cmd]
    log("$ " + " ".join(cmd))
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        start = time.perf_counter()
        proc = subprocess.run([TIME, "-v", "-o", tf.name] + cmd, capture_output=True,
                              text=True, timeout=timeout)
        wall = time.perf_counter() - start
        report = tf.read()
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
    return {"rc": proc.returncode, "wall_s": wall,
            "peak_rss_mib": int(rss.group(1)) / 1024 if rss else None,
            "stdout": proc.stdout, "stderr": proc.stderr}


def last_json_line(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON line in output")


def bench_once(cmd: list, timeout: float) -> dict | None:
    cmd = [str(c) for c in cmd]
    log("$ " + " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        log("  timed out")
        return None
    if proc.returncode != 0:
        log(f"  failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        return None
    try:
        result = last_json_line(proc.stdout)
    except ValueError as e:
        log(f"  {e}: {proc.stdout.strip()[-500:]}")
        return None
    # kiln-bench nests its latencies: {"latency_ms": {"median": ..., "p90": ...}}.
    latency = result.get("latency_ms")
    if isinstance(latency, dict):
        for key in ("median", "p90", "p99"):
            if key in latency:
                result.setdefault(f"{key}_ms", latency[key])
    log("  " + " ".join(f"{k}={result[k]}" for k in ("median_ms", "p90_ms", "p99_ms") if k in result))
    return result


def summarize(runs: list[dict]) -> dict | None:
    runs = [r for r in runs if r]
    if not runs:
        return None
    out = {}
    for key in ("median_ms", "p90_ms", "p99_ms", "throughput_per_s"):
        values = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
        if values:
            out[key] = statistics.median(values)
    if "throughput_per_s" not in out and out.get("median_ms"):
        out["throughput_per_s"] = 1000.0 / out["median_ms"]
    out["rounds"] = len(runs)
    return out


def fmt(x, digits=3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def mib(path: Path) -> float:
    return path.stat().st_size / 2**20


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__)
    p.add_argument("--build", type=Path, required=True)
    p.add_argument("--models", default=",".join(ALL))
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=10, help="ORT warm-up runs per measurement")
    p.add_argument("--iterations", type=int, default=100, help="ORT timed runs per measurement")
    p.add_argument("--kiln-bench-arg", action="append", default=[],
                   help="extra argument for kiln-bench (repeatable)")
    p.add_argument("--skip-kiln", action="store_true", help="measure ONNX Runtime only")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--json-out", type=Path)
    args = p.parse_args(argv)

    build = args.build.resolve()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    models = [x for m in models for x in (TORCHVISION if m == "torchvision" else [m])]
    threads = [int(t) for t in args.threads.split(",")]
    node = run_e2e.node_binary()
    ort_version = run_e2e.ort_version()
    kiln_compile, kiln_run, kiln_bench = (build / "bin" / t for t in
                                          ("kiln-compile", "kiln-run", "kiln-bench"))
    if not args.skip_kiln:
        for tool in (kiln_compile, kiln_run, kiln_bench):
            if not tool.exists():
                log(f"{tool} does not exist (build it, or pass --skip-kiln)")
                return 2
        if not Path(TIME).exists():
            log(f"{TIME} is missing (Debian package 'time')")
            return 2

    results = []
    for name in models:
        log(f"== {name}")
        with contextlib.redirect_stdout(sys.stderr):  # keep stdout for the tables
            run_e2e.export_model(build, name, args.timeout)
        onnx_path = build / "models" / f"{name}.onnx"
        work = build / "bench" / name
        inputs = split_npz(build / "models" / f"{name}.inputs.npz", work / "inputs")
        row = {"model": name, "onnx_mib": mib(onnx_path), "bench": {}}

        kiln_ok = not args.skip_kiln
        artifact = work / "model.kiln"
        if kiln_ok:
            artifact.unlink(missing_ok=True)
            c = timed([kiln_compile, onnx_path, "--target=cpu", "-o", artifact], args.timeout)
            if c["rc"] != 0 or not artifact.exists():
                log(f"  kiln-compile failed (exit {c['rc']}): {c['stderr'].strip()[-2000:]}")
                kiln_ok = False
            else:
                row.update(compile_s=c["wall_s"], compile_rss_mib=c["peak_rss_mib"],
                           artifact_mib=mib(artifact))
        if kiln_ok:
            out_dir = work / "kiln-out"
            shutil.rmtree(out_dir, ignore_errors=True)
            out_dir.mkdir(parents=True)
            r = timed([kiln_run, artifact, "--device=cpu"]
                      + [f"--input={n}=@{f}" for n, f in inputs.items()]
                      + [f"--output-dir={out_dir}"], args.timeout)
            if r["rc"] != 0:
                log(f"  kiln-run failed (exit {r['rc']}): {r['stderr'].strip()[-2000:]}")
            else:
                row.update(run_s=r["wall_s"], run_rss_mib=r["peak_rss_mib"])

        ort_inputs = [a for n, f in inputs.items() for a in ("--input", f"{n}={f}")]
        raw = {t: {"kiln": [], "ort": []} for t in threads}
        for rnd in range(args.rounds):
            for t in threads:
                cmds = {
                    "ort": [node, ORT_RUN, onnx_path, "--bench", "--json", "--threads", t,
                            "--warmup", args.warmup, "--iterations", args.iterations] + ort_inputs,
                }
                if kiln_ok:
                    cmds["kiln"] = [kiln_bench, artifact, "--device=cpu", f"--threads={t}",
                                    "--json"] + args.kiln_bench_arg
                order = sorted(cmds, reverse=(rnd + t) % 2 == 1)  # alternate who goes first
                for who in order:
                    raw[t][who].append(bench_once(cmds[who], args.timeout))
        for t in threads:
            row["bench"][t] = {who: summarize(runs) for who, runs in raw[t].items()}
        results.append(row)

    # Report.
    print(f"ONNX Runtime {ort_version} (onnxruntime-node, CPU EP); medians over "
          f"{args.rounds} round(s); latencies in ms")
    print()
    print("| model | threads | Kiln median | Kiln p90 | Kiln p99 | ORT median | ORT p90 | ORT p99 "
          "| Kiln/ORT | Kiln inf/s | ORT inf/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in results:
        for t, b in row["bench"].items():
            k, o = b.get("kiln") or {}, b.get("ort") or {}
            ratio = (k["median_ms"] / o["median_ms"]) if k.get("median_ms") and o.get("median_ms") else None
            print(f"| {row['model']} | {t} | {fmt(k.get('median_ms'))} | {fmt(k.get('p90_ms'))} | "
                  f"{fmt(k.get('p99_ms'))} | {fmt(o.get('median_ms'))} | {fmt(o.get('p90_ms'))} | "
                  f"{fmt(o.get('p99_ms'))} | {fmt(ratio)} | {fmt(k.get('throughput_per_s'), 1)} | "
                  f"{fmt(o.get('throughput_per_s'), 1)} |")
    if not args.skip_kiln:
        print()
        print("| model | .onnx MiB | artifact MiB | artifact/.onnx | compile s | compile peak RSS MiB "
              "| kiln-run peak RSS MiB |")
        print("|---|---|---|---|---|---|---|")
        for row in results:
            size_ratio = (row["artifact_mib"] / row["onnx_mib"]) if row.get("artifact_mib") else None
            print(f"| {row['model']} | {fmt(row['onnx_mib'], 1)} | {fmt(row.get('artifact_mib'), 1)} | "
                  f"{fmt(size_ratio)} | {fmt(row.get('compile_s'))} | "
                  f"{fmt(row.get('compile_rss_mib'), 0)} | {fmt(row.get('run_rss_mib'), 0)} |")
    if args.json_out:
        args.json_out.write_text(json.dumps({"onnxruntime_node": ort_version, "results": results},
                                            indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
