#!/usr/bin/python3
"""What the Python bindings add per run call over the runtime alone:
kiln.Session.run's latency against kiln-bench's on the same artifact.

  /usr/bin/python3 bench/python_overhead.py --build build
      [--rounds 5] [--warmup 200] [--iterations 2000] [--json-out FILE]

Models: examples/tiny_cnn.onnxtxt (one 1x3x8x8 input, one 1x4 output, a
microsecond of compute: nearly all of a call is overhead) and an MLP built
here (x[16, 512] -> MatMul 512x128, Add, Relu, MatMul 128x10, Add -> logits
and Softmax probabilities: two outputs), each compiled with
kiln.compile(targets=["cpu"]) into a temporary directory.

Both sides run on one thread (kiln.Device("cpu", threads=1), kiln-bench
--threads=1) with random inputs of the same shapes. Each round, alternating
which goes first, times --iterations calls after --warmup:
  Python:     time.perf_counter_ns() around each session.run({name: array})
              (inputs C-contiguous with the right dtype, so passed without a
              copy; the outputs are new numpy arrays every call)
  kiln-bench: BUILD/bin/kiln-bench MODEL.kiln --device=cpu --threads=1
              --warmup=W --iterations=I --json (its own clock around each
              kiln_session_run, outputs into preallocated buffers)
Printed: per model the median and mean over all rounds' per-round figures,
the overhead (Python - kiln-bench, microseconds) and the ratio.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def mlp_model(batch=16, features=512, hidden=128, classes=10, seed=7):
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    init = {
        "w1": (rng.standard_normal((features, hidden)) / np.sqrt(features)).astype(np.float32),
        "b1": (rng.standard_normal(hidden) * 0.1).astype(np.float32),
        "w2": (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32),
        "b2": (rng.standard_normal(classes) * 0.1).astype(np.float32),
    }
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["l"]),
             helper.make_node("Add", ["l", "b2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, features])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes]),
         helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [batch, classes])],
        [numpy_helper.from_array(v, k) for k, v in init.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def random_inputs(artifact, seed):
    rng = np.random.default_rng(seed)
    return {i.name: rng.uniform(-1, 1, i.shape).astype(i.dtype) for i in artifact.inputs}


def time_python(session, inputs, warmup, iterations):
    """Per-call latencies of session.run in microseconds."""
    run = session.run
    for _ in range(warmup):
        run(inputs)
    clock = time.perf_counter_ns
    samples = []
    for _ in range(iterations):
        start = clock()
        run(inputs)
        samples.append(clock() - start)
    return [s / 1e3 for s in samples]


def time_kiln_bench(build, path, warmup, iterations):
    """kiln-bench's median and mean latency in microseconds."""
    proc = subprocess.run([build / "bin" / "kiln-bench", path, "--device=cpu", "--threads=1",
                           f"--warmup={warmup}", f"--iterations={iterations}", "--json"],
                          capture_output=True, text=True, check=True)
    latency = json.loads(proc.stdout.strip().splitlines()[-1])["latency_ms"]
    return latency["median"] * 1e3, latency["mean"] * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    build = args.build.resolve()
    if "kiln" not in sys.modules:
        sys.path.insert(0, str(build / "python"))
    import kiln
    import onnx.parser

    models = {
        "tiny_cnn": onnx.parser.parse_model((ROOT / "examples/tiny_cnn.onnxtxt").read_text()),
        "mlp_16x512": mlp_model(),
    }
    results = {}
    with tempfile.TemporaryDirectory(prefix="kiln-python-overhead-") as work:
        for name, model in models.items():
            path = Path(work) / f"{name}.kiln"
            artifact = kiln.compile(model, targets=["cpu"], output=path)
            session = kiln.Session(artifact, kiln.Device("cpu", threads=1))
            inputs = random_inputs(artifact, seed=0)
            py_median, py_mean, cli_median, cli_mean = [], [], [], []
            for round_ in range(args.rounds):
                order = ["python", "cli"] if round_ % 2 == 0 else ["cli", "python"]
                for side in order:
                    if side == "python":
                        samples = time_python(session, inputs, args.warmup, args.iterations)
                        py_median.append(statistics.median(samples))
                        py_mean.append(statistics.fmean(samples))
                    else:
                        median, mean = time_kiln_bench(build, path, args.warmup, args.iterations)
                        cli_median.append(median)
                        cli_mean.append(mean)
            r = {
                "python_median_us": statistics.median(py_median),
                "python_mean_us": statistics.median(py_mean),
                "kiln_bench_median_us": statistics.median(cli_median),
                "kiln_bench_mean_us": statistics.median(cli_mean),
            }
            r["overhead_median_us"] = r["python_median_us"] - r["kiln_bench_median_us"]
            r["overhead_mean_us"] = r["python_mean_us"] - r["kiln_bench_mean_us"]
            r["ratio_median"] = r["python_median_us"] / r["kiln_bench_median_us"]
            results[name] = r

    print(f"kiln {kiln.__version__} ({kiln.__revision__}), Python "
          f"{sys.version.split()[0]}, numpy {np.__version__}, 1 thread, {args.rounds} rounds x "
          f"{args.iterations} calls (warmup {args.warmup}); median over rounds")
    print()
    print("| model | kiln-bench median (mean) | session.run median (mean) | "
          "Python overhead median (mean) | ratio |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['kiln_bench_median_us']:.2f} us ({r['kiln_bench_mean_us']:.2f}) "
              f"| {r['python_median_us']:.2f} us ({r['python_mean_us']:.2f}) "
              f"| {r['overhead_median_us']:.2f} us ({r['overhead_mean_us']:.2f}) "
              f"| {r['ratio_median']:.2f}x |")
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
