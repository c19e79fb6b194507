#!/usr/bin/python3
"""Throughput and latency of kiln-serve with and without dynamic batching, in
one run (the two models alternate per concurrency level on one server).

  /usr/bin/python3 bench/serve/throughput.py --build build [--seconds 5]
      [--concurrency 1,8,32] [--threads 2]

The model: a small CNN (three 3x3 convolutions, 32 channels, on 3x64x64
inputs, global average pooling, a 10-way classifier; random weights drawn
here) compiled with --batch-sizes=1,4,8,16,32. "single" has max_batch_size 32
and no dynamic_batching (each request runs alone, batch 1); "batched" has
dynamic_batching with max_queue_delay_microseconds 1000. Clients are Python
threads sending single-row requests with the binary tensor extension over
loopback; each level runs for --seconds per model. Prints requests/s and
p50/p99 latency per model and level, and the batched/single throughput
ratio.
"""
import argparse
import http.client
import json
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model(path: Path) -> None:
    rng = np.random.RandomState(0)
    inits, nodes, prev, ch = [], [], "x", 3
    for i in range(3):
        w = (rng.randn(32, ch, 3, 3) * (2.0 / (9 * ch)) ** 0.5).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"),
                  numpy_helper.from_array(np.zeros(32, np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1],
                                   strides=[2, 2] if i else [1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        prev, ch = f"r{i}", 32
    inits += [numpy_helper.from_array(rng.randn(10, 32).astype(np.float32), "fw"),
              numpy_helper.from_array(np.zeros(10, np.float32), "fb")]
    nodes += [helper.make_node("GlobalAveragePool", [prev], ["p"]),
              helper.make_node("Flatten", ["p"], ["f"]),
              helper.make_node("Gemm", ["f", "fw", "fb"], ["logits"], transB=1)]
    graph = helper.make_graph(nodes, "cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 64, 64])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
                              inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def request(port, model, body, header_len):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", f"/v2/models/{model}/infer", body=body,
                 headers={"Inference-Header-Content-Length": str(header_len)})
    r = conn.getresponse()
    r.read()
    conn.close()
    return r.status


def level(port, model, concurrency, seconds):
    x = np.random.RandomState(1).randn(1, 3, 64, 64).astype(np.float32)
    header = json.dumps({"inputs": [{"name": "x", "shape": [1, 3, 64, 64], "datatype": "FP32",
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "parameters": {"binary_data_output": True}}).encode()
    body = header + x.tobytes()
    latencies, errors, lock = [], [0], threading.Lock()
    stop = time.monotonic() + seconds

    def client():
        while time.monotonic() < stop:
            t = time.monotonic()
            status = request(port, model, body, len(header))
            with lock:
                if status == 200:
                    latencies.append(time.monotonic() - t)
                else:
                    errors[0] += 1

    start = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    lat = np.array(latencies) * 1000
    return len(latencies) / elapsed, np.percentile(lat, 50), np.percentile(lat, 99), errors[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True, type=Path)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    bin_dir = args.build.resolve() / "bin"
    with tempfile.TemporaryDirectory(prefix="kiln-serve-bench-") as tmp:
        work = Path(tmp)
        make_model(work / "cnn.onnx")
        repo = work / "repo"
        configs = {"single": "max_batch_size: 32\n",
                   "batched": "max_batch_size: 32\ndynamic_batching {\n"
                              "  max_queue_delay_microseconds: 1000\n}\n"}
        for name, config in configs.items():
            (repo / name / "1").mkdir(parents=True)
            (repo / name / "config.pbtxt").write_text(config)
        subprocess.run([bin_dir / "kiln-compile", work / "cnn.onnx", "--target=cpu",
                        "--batch-sizes=1,4,8,16,32", "-o", repo / "single" / "1" / "model.kiln"],
                       check=True, stdout=subprocess.DEVNULL)
        (repo / "batched" / "1" / "model.kiln").write_bytes(
            (repo / "single" / "1" / "model.kiln").read_bytes())
        server = subprocess.Popen([bin_dir / "kiln-serve", f"--model-repository={repo}",
                                   "--http-port=0", "--metrics-port=0", "--grpc-port=0",
                                   f"--threads={args.threads}"],
                                  stdout=subprocess.PIPE, text=True)
        port = int(re.search(r"http://127.0.0.1:(\d+)", server.stdout.readline()).group(1))
        try:
            print(f"{'concurrency':>11} {'model':>8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} errors")
            for c in [int(v) for v in args.concurrency.split(",")]:
                rates = {}
                for model in ["single", "batched"]:
                    rate, p50, p99, errors = level(port, model, c, args.seconds)
                    rates[model] = rate
                    print(f"{c:>11} {model:>8} {rate:8.1f} {p50:8.2f} {p99:8.2f} {errors}")
                print(f"{c:>11} {'ratio':>8} {rates['batched'] / rates['single']:8.2f}x")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
