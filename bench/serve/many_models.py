#!/usr/bin/python3
"""Aggregate throughput of kiln-serve with 1, 4 and 16 models loaded and
driven at once, as a fraction of one model alone, in one run.

  /usr/bin/python3 bench/serve/many_models.py --build build [--seconds 5]
      [--models 1,4,16] [--concurrency 16] [--threads 2]

Every model is the small CNN of bench/serve/throughput.py (its own copy of
the artifact, compiled with --batch-sizes=1,4,8,16,32) with dynamic batching
(1 ms delay). For each count N, N of the loaded models are driven at once by
N kiln-loadgen processes (REST, binary tensors, single-row requests) sharing
--concurrency requests in flight between them; the aggregate requests/s is
compared with N = 1 on the same server (all 16 models stay loaded
throughout, so memory and threads are those of 16).
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import throughput  # noqa: E402  (the model)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True, type=Path)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--models", default="1,4,16")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    bin_dir = args.build.resolve() / "bin"
    counts = [int(v) for v in args.models.split(",")]
    with tempfile.TemporaryDirectory(prefix="kiln-many-models-") as tmp:
        work = Path(tmp)
        throughput.make_model(work / "cnn.onnx")
        subprocess.run([bin_dir / "kiln-compile", work / "cnn.onnx", "--target=cpu",
                        "--batch-sizes=1,4,8,16,32", "-o", work / "cnn.kiln"], check=True,
                       stdout=subprocess.DEVNULL)
        repo = work / "repo"
        for i in range(max(counts)):
            (repo / f"m{i}" / "1").mkdir(parents=True)
            shutil.copy(work / "cnn.kiln", repo / f"m{i}" / "1" / "model.kiln")
            (repo / f"m{i}" / "config.pbtxt").write_text(
                "max_batch_size: 32\ndynamic_batching { max_queue_delay_microseconds: 1000 }\n")
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test" / "Serve"))
        import serving
        server, ports = serving.start_server(args.build.resolve(), repo, f"--threads={args.threads}")
        try:
            base = None
            print(f"{'models':>6} {'req/s':>9} {'per model':>10} {'p99 ms (worst)':>15} {'of one':>7}")
            for n in counts:
                per = max(1, args.concurrency // n)
                procs = [subprocess.Popen([bin_dir / "kiln-loadgen", f"--model=m{i}",
                                           f"--url=http://127.0.0.1:{ports['http']}",
                                           f"--concurrency={per}", f"--duration={args.seconds}",
                                           "--warmup=1", "--json"],
                                          stdout=subprocess.PIPE, text=True) for i in range(n)]
                levels = [json.loads(proc.communicate()[0])[0] for proc in procs]
                total = sum(lv["requests_per_second"] for lv in levels)
                worst = max(lv["latency_ms"]["p99"] for lv in levels)
                errors = sum(sum(lv["errors"].values()) for lv in levels)
                base = base or total
                print(f"{n:>6} {total:9.1f} {total / n:10.1f} {worst:15.2f} {total / base:7.2f}"
                      + (f"  ({errors} errors)" if errors else ""))
        finally:
            serving.stop_server(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
