#!/usr/bin/python3
"""Throughput and latency of kiln-serve with and without dynamic batching, in
one run (the two models alternate per concurrency level on one server).

  /usr/bin/python3 bench/serve/throughput.py --build build [--seconds 5]
      [--concurrency 1,8,32] [--threads 2] [--model cnn|encoder]

The model: a small CNN (three 3x3 convolutions, 32 channels, on 3x64x64
inputs, global average pooling, a 10-way classifier; random weights drawn
here), or with --model encoder a BERT-style encoder (make_encoder), compiled
with --batch-sizes=1,4,8,16,32. "single" has max_batch_size 32
and no dynamic_batching (each request runs alone, batch 1); "batched" has
dynamic_batching with max_queue_delay_microseconds 1000. kiln-loadgen sends
single-row requests with the binary tensor extension over loopback, for
--seconds per model and level. Prints the model's batch-1 latency from
kiln-bench and the server's overhead per request over it (REST and gRPC, one
client), then requests/s and p50/p99 latency per model and level and the
batched/single throughput ratio.
"""
import argparse
import json
import subprocess
import sys
import tempfile
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


def make_encoder(path: Path) -> None:
    """A BERT-style encoder: two post-norm transformer layers (d 128, 4 heads,
    feed-forward 256) on [N, 32, 128] float inputs, mean-pooled into an 8-way
    head; random weights, exported by torch with a dynamic batch axis."""
    import torch
    torch.manual_seed(0)

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layer = torch.nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = torch.nn.Linear(128, 8)

        def forward(self, x):
            return self.head(self.encoder(x).mean(dim=1))

    torch.onnx.export(Encoder().eval(), torch.randn(1, 32, 128), str(path), input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=14)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True, type=Path)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--model", choices=["cnn", "encoder"], default="cnn")
    args = p.parse_args()
    bin_dir = args.build.resolve() / "bin"
    with tempfile.TemporaryDirectory(prefix="kiln-serve-bench-") as tmp:
        work = Path(tmp)
        (make_model if args.model == "cnn" else make_encoder)(work / "cnn.onnx")
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
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test" / "Serve"))
        import serving
        server, ports = serving.start_server(args.build.resolve(), repo, f"--threads={args.threads}")
        try:
            def level(model, concurrency, transport):
                target = (f"--url=http://127.0.0.1:{ports['http']}" if transport == "rest"
                          else f"--grpc=127.0.0.1:{ports['grpc']}")
                out = subprocess.run([bin_dir / "kiln-loadgen", f"--model={model}", target,
                                      f"--concurrency={concurrency}", f"--duration={args.seconds}",
                                      "--warmup=1", "--json"], capture_output=True, text=True,
                                     check=True).stdout
                return json.loads(out)[0]

            # The model's own latency at batch 1 (kiln-bench, same threads), for the
            # server's overhead per request.
            bench = json.loads(subprocess.run(
                [bin_dir / "kiln-bench", repo / "single" / "1" / "model.kiln", "--batch=1",
                 f"--threads={args.threads}", "--min-time=3", "--json"],
                capture_output=True, text=True, check=True).stdout)
            print(f"kiln-bench batch 1: median {bench['latency_ms']['median']:.3f} ms")
            for transport in ["rest", "grpc"]:
                lv = level("single", 1, transport)
                print(f"{transport}: concurrency 1, p50 {lv['latency_ms']['p50']:.3f} ms, overhead "
                      f"{lv['latency_ms']['p50'] - bench['latency_ms']['median']:.3f} ms per request")
            print(f"{'clients':>8} {'model':>8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} errors")
            for c in [int(v) for v in args.concurrency.split(",")]:
                rates = {}
                for model in ["single", "batched"]:
                    lv = level(model, c, "rest")
                    rates[model] = lv["requests_per_second"]
                    print(f"{c:>8} {model:>8} {lv['requests_per_second']:8.1f} "
                          f"{lv['latency_ms']['p50']:8.2f} {lv['latency_ms']['p99']:8.2f} "
                          f"{sum(lv['errors'].values())}")
                print(f"{c:>8} {'ratio':>8} {rates['batched'] / rates['single']:8.2f}x")
        finally:
            serving.stop_server(server)


if __name__ == "__main__":
    sys.exit(main())
