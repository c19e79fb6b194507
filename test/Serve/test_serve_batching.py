#!/usr/bin/python3
"""kiln-serve with batch buckets, config.pbtxt, dynamic batching, the binary
tensor extension and /metrics, with clients written from the KServe v2
specification (the standard library's HTTP client), not Kiln's.

A small MLP (y = relu(x W + b), W 6x12, weights drawn here) is compiled with
--batch-sizes=1,2,4,8 into two models of one repository: "batched"
(config.pbtxt: max_batch_size 8, dynamic_batching with a 20 ms delay and a
bounded queue) and "single" (max_batch_size 8, no dynamic_batching: every
request runs alone). Checks, each output per element against numpy
(|kiln - numpy| <= 1e-5 + 1e-5 |numpy|):
  - requests of 1 to 8 rows, JSON and binary (Inference-Header-Content-Length,
    binary_data_size, binary_data_output), sent by 16 concurrent clients;
  - the batched model ran fewer batches than requests, the single one one per
    request (from /metrics, whose counters must add up);
  - overload: 4x more concurrent clients than the queue holds, every request
    answered (outputs or 429), none lost, the server still up;
  - every kind of malformed binary request gets a 400 naming the problem;
  - config.pbtxt errors stop the server with the file, line and field.

Usage: /usr/bin/python3 test/Serve/test_serve_batching.py --build build
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

import serving
from serving import check, start_server, stop_server

rng = np.random.RandomState(11)
W = rng.uniform(-1, 1, (6, 12)).astype(np.float32)
B = rng.uniform(-0.5, 0.5, 12).astype(np.float32)


def floats(a) -> str:
    return ", ".join(repr(float(v)) for v in np.asarray(a).ravel())


MLP = f"""<
  ir_version: 8,
  opset_import: ["" : 17]
>
g (float[N, 6] x) => (float[N, 12] y)
<float[6, 12] w = {{{floats(W)}}}, float[12] b = {{{floats(B)}}}>
{{
  h = MatMul(x, w)
  hb = Add(h, b)
  y = Relu(hb)
}}
"""

BATCHED = """name: "batched"
platform: "kiln"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 6 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 12 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
dynamic_batching {
  preferred_batch_size: [ 8 ]
  max_queue_delay_microseconds: 20000
  default_queue_policy { max_queue_size: 64 }
}
"""

SINGLE = """name: "single"
max_batch_size: 8
"""

# A queue of 4 requests that waits 200 ms for a batch of 8 rows: single-row
# requests beyond the fourth are rejected while the batch waits.
BOUNDED = """max_batch_size: 8
dynamic_batching {
  preferred_batch_size: [ 8 ]
  max_queue_delay_microseconds: 200000
  default_queue_policy { max_queue_size: 4 }
}
"""



def reference(x: np.ndarray) -> np.ndarray:
    return np.maximum(x.astype(np.float64) @ W.astype(np.float64) + B, 0)


def close(out: np.ndarray, ref: np.ndarray) -> bool:
    return out.shape == ref.shape and bool(np.all(np.abs(out - ref) <= 1e-5 + 1e-5 * np.abs(ref)))


def post(port: int, path: str, body: bytes, headers: dict):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, body=body, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    header = response.getheader("Inference-Header-Content-Length")
    conn.close()
    return response.status, raw, header


def infer_json(port: int, model: str, x: np.ndarray):
    body = json.dumps({"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                                   "data": x.ravel().tolist()}]}).encode()
    status, raw, _ = post(port, f"/v2/models/{model}/infer", body,
                          {"Content-Type": "application/json"})
    if status != 200:
        return status, json.loads(raw)
    out = json.loads(raw)["outputs"][0]
    return status, np.array(out["data"], np.float32).reshape(out["shape"])


def infer_binary(port: int, model: str, x: np.ndarray):
    header = json.dumps({"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "parameters": {"binary_data_output": True}}).encode()
    status, raw, length = post(port, f"/v2/models/{model}/infer", header + x.tobytes(),
                               {"Inference-Header-Content-Length": str(len(header)),
                                "Content-Type": "application/octet-stream"})
    if status != 200:
        return status, json.loads(raw)
    n = int(length)
    out = json.loads(raw[:n])["outputs"][0]
    size = out["parameters"]["binary_data_size"]
    return status, np.frombuffer(raw[n:n + size], np.float32).reshape(out["shape"])


def metric(text: str, name: str, model: str) -> float:
    m = re.search(r'^%s\{model="%s",version="1"\} (\d+)$' % (name, model), text, re.M)
    return float(m.group(1)) if m else -1


def run_load(port: int, model: str, clients: int, per_client: int, binary_every: int,
             one_row: bool = False):
    """Each client sends requests of 1..8 rows (or 1); returns (status, x, out) each."""
    results, lock = [], threading.Lock()

    def client(c: int):
        local = np.random.RandomState(100 + c)
        for i in range(per_client):
            rows = 1 if one_row else 1 + (c + i) % 8
            x = local.uniform(-2, 2, (rows, 6)).astype(np.float32)
            send = infer_binary if (c + i) % binary_every == 0 else infer_json
            status, out = send(port, model, x)
            with lock:
                results.append((status, x, out))

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def grpc_checks(work: Path, port: int) -> None:
    """The gRPC binding, with stubs generated here by grpc_tools from our
    .proto of the protocol (Debian's python3-grpc-tools)."""
    import grpc
    pb, rpc = serving.grpc_stubs(work)
    stub = rpc.GRPCInferenceServiceStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
    check(stub.ServerLive(pb.ServerLiveRequest()).live, "grpc ServerLive")
    check(stub.ServerReady(pb.ServerReadyRequest()).ready, "grpc ServerReady")
    meta = stub.ServerMetadata(pb.ServerMetadataRequest())
    check(meta.name == "kiln-serve" and "binary_tensor_data" in meta.extensions,
          "grpc ServerMetadata")
    mm = stub.ModelMetadata(pb.ModelMetadataRequest(name="batched"))
    check(list(mm.inputs[0].shape) == [-1, 6] and mm.outputs[0].datatype == "FP32"
          and list(mm.versions) == ["1"], "grpc ModelMetadata: x [-1, 6], versions [1]")
    check(stub.ModelReady(pb.ModelReadyRequest(name="single")).ready, "grpc ModelReady")

    def code_of(call, *a):
        try:
            call(*a)
            return None, ""
        except grpc.RpcError as e:
            return e.code(), e.details()

    code, details = code_of(stub.ModelReady, pb.ModelReadyRequest(name="nope"))
    check(code == grpc.StatusCode.NOT_FOUND and "not in the repository" in details,
          f"grpc: an unknown model is NOT_FOUND: {details}")

    def request(x, raw=True, model="batched", **kw):
        r = pb.ModelInferRequest(model_name=model, id="r1")
        t = r.inputs.add(name="x", datatype="FP32", shape=list(x.shape))
        if raw:
            r.raw_input_contents.append(x.tobytes())
        else:
            t.contents.fp32_contents.extend(x.ravel().tolist())
        for k, v in kw.items():
            setattr(r, k, v)
        return r

    rng_local = np.random.RandomState(5)
    for rows, raw in [(1, True), (3, False), (8, True)]:
        x = rng_local.uniform(-2, 2, (rows, 6)).astype(np.float32)
        resp = stub.ModelInfer(request(x, raw))
        y = np.frombuffer(resp.raw_output_contents[0], np.float32).reshape(resp.outputs[0].shape)
        check(resp.id == "r1" and resp.model_version == "1" and close(y, reference(x)),
              f"grpc ModelInfer, {rows} rows, {'raw' if raw else 'fp32_contents'}: matches numpy")
    x = np.ones((2, 6), np.float32)
    for r, want in [
            (request(np.ones((9, 6), np.float32)), "with n from 1 to 8"),
            (request(np.ones((2, 6), np.float64)), "96 bytes of raw_input_contents, the shape holds 48"),
            (request(x, raw=False, model="single"), None),
    ]:
        code, details = code_of(stub.ModelInfer, r)
        if want is None:
            check(code is None, "grpc ModelInfer on the single-request model")
        else:
            check(code == grpc.StatusCode.INVALID_ARGUMENT and want in details,
                  f"grpc INVALID_ARGUMENT ({want!r}): {details}")
    bad = request(x)
    bad.raw_input_contents.append(b"extra")
    code, details = code_of(stub.ModelInfer, bad)
    check(code == grpc.StatusCode.INVALID_ARGUMENT and "2 raw_input_contents for 1 inputs" in details,
          f"grpc: raw contents that do not match the inputs: {details}")
    bad = pb.ModelInferRequest(model_name="batched")
    bad.inputs.add(name="x", datatype="FP32", shape=[2, 6]).contents.fp32_contents.extend([1.0] * 5)
    code, details = code_of(stub.ModelInfer, bad)
    check(code == grpc.StatusCode.INVALID_ARGUMENT and "do not hold 12 FP32 elements" in details,
          f"grpc: contents of the wrong count: {details}")
    code, details = code_of(stub.ModelInfer, request(x, model="nope"))
    check(code == grpc.StatusCode.NOT_FOUND, "grpc: ModelInfer on an unknown model is NOT_FOUND")
    # Overload through gRPC: the bounded queue answers UNAVAILABLE.
    codes, lock = [], threading.Lock()

    def client():
        c, _ = code_of(stub.ModelInfer, request(np.ones((1, 6), np.float32), model="bounded"))
        with lock:
            codes.append(c)

    threads = [threading.Thread(target=client) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(len(codes) == 24 and codes.count(grpc.StatusCode.UNAVAILABLE) > 0
          and codes.count(None) + codes.count(grpc.StatusCode.UNAVAILABLE) == 24,
          f"grpc overload: {codes.count(None)} answered, "
          f"{codes.count(grpc.StatusCode.UNAVAILABLE)} UNAVAILABLE, none lost")


def main() -> int:
    build = serving.build_dir()
    with tempfile.TemporaryDirectory(prefix="kiln-serve-batching-") as tmp:
        work = Path(tmp)
        source = work / "mlp.onnxtxt"
        source.write_text(MLP)
        repo = work / "repo"
        for name, config in [("batched", BATCHED), ("single", SINGLE), ("bounded", BOUNDED)]:
            (repo / name / "1").mkdir(parents=True)
            (repo / name / "config.pbtxt").write_text(config)
            subprocess.run([build / "bin" / "kiln-compile", source, "--target=cpu",
                            "--batch-sizes=1,2,4,8", "-o", repo / name / "1" / "model.kiln"],
                           check=True)
        server, ports = start_server(build, repo, "--threads=1")
        port, metrics_port, grpc_port = ports["http"], ports["metrics"], ports["grpc"]
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/v2/models/batched")
            meta = json.loads(conn.getresponse().read())
            check(meta.get("max_batch_size") == 8 and meta["inputs"][0]["shape"] == [-1, 6]
                  and meta["outputs"][0]["shape"] == [-1, 12],
                  "metadata: max_batch_size 8, shapes [-1, 6] -> [-1, 12]: " + json.dumps(meta))

            for model in ["batched", "single"]:
                results = run_load(port, model, clients=4 if model == "single" else 16,
                                   per_client=6, binary_every=3)
                good = [r for r in results if r[0] == 200]
                wrong = [r for r in good if not close(r[2], reference(r[1]))]
                check(len(good) == len(results) and not wrong,
                      f"{model}: {len(good)} of {len(results)} requests answered, "
                      f"{len(wrong)} with wrong outputs")

            conn = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=30)
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
            b_ok = metric(text, "kiln_inference_request_success", "batched")
            b_exec = metric(text, "kiln_inference_exec_count", "batched")
            b_rows = metric(text, "kiln_inference_count", "batched")
            s_ok = metric(text, "kiln_inference_request_success", "single")
            s_exec = metric(text, "kiln_inference_exec_count", "single")
            expected_rows = sum(1 + (c + i) % 8 for c in range(16) for i in range(6))
            check(b_ok == 96 and 0 < b_exec < 96 and b_rows == expected_rows,
                  f"metrics: batched ran {b_ok:.0f} requests ({b_rows:.0f} rows, expected "
                  f"{expected_rows}) in {b_exec:.0f} batches")
            check(s_ok == 24 and s_exec == 24,
                  f"metrics: single ran {s_ok:.0f} requests in {s_exec:.0f} runs (one each)")
            hist = re.search(r'^kiln_inference_batch_size_count\{model="batched",version="1"\} '
                             r'(\d+)$', text, re.M)
            check(hist is not None and float(hist.group(1)) == b_exec,
                  "metrics: the batch-size histogram counts every batch")
            check("# TYPE kiln_inference_request_duration_us counter" in text,
                  "metrics: Prometheus HELP/TYPE lines")

            # Overload: 32 clients at once against a queue of 4 requests.
            results = run_load(port, "bounded", clients=32, per_client=3, binary_every=2,
                               one_row=True)
            accepted = [r for r in results if r[0] == 200]
            rejected = [r for r in results if r[0] == 429]
            wrong = [r for r in accepted if not close(r[2], reference(r[1]))]
            check(len(accepted) + len(rejected) == len(results) == 96 and not wrong
                  and len(rejected) > 0 and len(accepted) >= 4
                  and all("queue is full" in r[2]["error"] for r in rejected),
                  f"overload: {len(accepted)} answered, {len(rejected)} rejected with 429, "
                  f"none lost or wrong")
            status, out = infer_json(port, "batched", np.ones((2, 6), np.float32))
            check(status == 200, "the server is still up after the overload")
            conn = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=30)
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
            check(metric(text, "kiln_inference_request_success", "bounded") == len(accepted)
                  and metric(text, "kiln_inference_request_failure", "bounded") == len(rejected),
                  "metrics: the bounded model's successes and failures are the answers")

            grpc_checks(work, grpc_port)

            # kiln-loadgen against this server: REST and gRPC, closed and open loop.
            for target, extra in [([f"--url=http://127.0.0.1:{port}"], ["--concurrency=1,4"]),
                                  ([f"--grpc=127.0.0.1:{grpc_port}"], ["--concurrency=4"]),
                                  ([f"--url=http://127.0.0.1:{port}"], ["--request-rate=50",
                                                                        "--json-data"])]:
                proc = subprocess.run([build / "bin" / "kiln-loadgen", "--model=batched",
                                       "--duration=1", "--warmup=0.2", "--batch=2", "--json",
                                       *target, *extra], capture_output=True, text=True,
                                      timeout=60)
                levels = json.loads(proc.stdout) if proc.returncode == 0 else []
                good = len(levels) == (2 if extra == ["--concurrency=1,4"] else 1) and all(
                    lv["requests"] > 0 and not lv["errors"] and lv["latency_ms"]["p50"] > 0
                    and lv["rows_per_second"] == 2 * lv["requests_per_second"] for lv in levels)
                if "--request-rate=50" in extra and levels:
                    good = good and 30 <= levels[0]["requests"] <= 60
                check(good, f"kiln-loadgen {' '.join(target + extra)}: "
                      + (proc.stderr.strip() or json.dumps(
                          [(lv.get("requests"), lv.get("errors")) for lv in levels])))
            # Soak: thousands of requests, resident memory flat afterwards.
            def rss_kib() -> int:
                status = Path(f"/proc/{server.pid}/status").read_text()
                return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))

            def soak(seconds: str) -> int:
                proc = subprocess.run([build / "bin" / "kiln-loadgen", "--model=batched",
                                       f"--url=http://127.0.0.1:{port}", "--concurrency=8",
                                       "--batch=3", f"--duration={seconds}", "--warmup=0",
                                       "--json"], capture_output=True, text=True, timeout=120)
                levels = json.loads(proc.stdout) if proc.returncode == 0 else [{}]
                return levels[0].get("requests", 0) if not levels[0].get("errors") else -1

            first = soak("1")
            before = rss_kib()
            requests = soak("3")
            after = rss_kib()
            check(first > 0 and requests >= 2000 and after - before <= 4096,
                  f"soak: {requests} requests after {first}, resident memory {before} -> "
                  f"{after} KiB (at most 4 MiB more)")
            proc = subprocess.run([build / "bin" / "kiln-loadgen", "--model=nope",
                                   f"--url=http://127.0.0.1:{port}"], capture_output=True,
                                  text=True, timeout=60)
            check(proc.returncode == 1 and "HTTP 404" in proc.stderr,
                  "kiln-loadgen: an unknown model is an error: " + proc.stderr.strip())

            # Malformed binary requests.
            x = np.ones((2, 6), np.float32)

            def bad(header: dict, data: bytes, length=None, want=""):
                h = json.dumps(header).encode()
                status, raw, _ = post(port, "/v2/models/batched/infer", h + data,
                                      {"Inference-Header-Content-Length":
                                       str(len(h) if length is None else length)})
                message = json.loads(raw).get("error", "") if raw[:1] == b"{" else raw
                check(status == 400 and want in message, f"400 for {want!r}: {message}")

            inp = {"name": "x", "shape": [2, 6], "datatype": "FP32",
                   "parameters": {"binary_data_size": 48}}
            bad({"inputs": [inp]}, x.tobytes()[:40], want="but only 40 bytes of binary data")
            bad({"inputs": [inp]}, x.tobytes() + b"xx", want="2 bytes of binary data follow")
            bad({"inputs": [dict(inp, parameters={"binary_data_size": 40})]}, x.tobytes(),
                want="binary_data_size 40, the shape holds 48 bytes")
            bad({"inputs": [inp]}, x.tobytes(), length=10 ** 6,
                want="Inference-Header-Content-Length 1000000 is more than the body's")
            bad({"inputs": [inp]}, x.tobytes(), length=5, want="not JSON")
            bad({"inputs": [dict(inp, shape=[9, 6])]}, x.tobytes(),
                want="with n from 1 to 8")
        finally:
            stop_server(server)

        # --trace: requests, queueing, batches and dispatches in a Chrome trace.
        trace = work / "serve-trace.json"
        server, ports = start_server(build, repo, "--threads=1", f"--trace={trace}")
        results = run_load(ports["http"], "batched", clients=4, per_client=2, binary_every=2)
        results += run_load(ports["http"], "single", clients=1, per_client=2, binary_every=2)
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
        events = json.loads(trace.read_text())["traceEvents"] if trace.exists() else []
        cats = {}
        for e in events:
            cats.setdefault(e["cat"], []).append(e)
        requests = [e for e in cats.get("request", []) if e["args"]["ok"] == "true"]
        batches = cats.get("batch", [])
        check(code == 0 and len(requests) == len(results) == 10
              and sorted({e["name"] for e in requests}) == ["batched/1", "single/1"]
              and len(cats.get("queue", [])) == 10
              and sum(int(b["args"]["rows"]) for b in batches) == sum(r[1].shape[0] for r in results)
              and all(int(b["args"]["bucket"]) >= int(b["args"]["rows"]) for b in batches)
              and cats.get("dispatch") and all(e["name"].startswith("dispatch_") for e in cats["dispatch"])
              and all(e["ph"] == "X" and e["dur"] >= 0 for e in events),
              f"--trace: {len(requests)} requests, {len(cats.get('queue', []))} queue, "
              f"{len(batches)} batch and {len(cats.get('dispatch', []))} dispatch events")

        # Configuration errors: the file, line and field.
        def refused(config: str, want: str):
            (repo / "batched" / "config.pbtxt").write_text(config)
            proc = subprocess.run([build / "bin" / "kiln-serve", f"--model-repository={repo}",
                                   "--http-port=0", "--metrics-port=0", "--grpc-port=0"],
                                  capture_output=True, text=True, timeout=60)
            message = proc.stderr.strip()
            check(proc.returncode == 1 and want in message, f"refused ({want!r}): {message}")

        path = str(repo / "batched" / "config.pbtxt")
        refused("name: \"batched\"\nmax_batch_sise: 8\n",
                path + ":2:15: Message type \"kiln.serve.ModelConfig\" has no field named "
                "\"max_batch_sise\"")
        refused("max_batch_size: 16\n", path + ":1:1: max_batch_size: 16, but")
        refused("max_batch_size: 16\n", "runs batches of at most 8 (kiln-compile --batch-sizes)")
        refused("dynamic_batching { }\n",
                path + ":1:1: dynamic_batching: dynamic batching needs max_batch_size > 0")
        refused("max_batch_size: 8\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [ 7 ] } ]\n",
                path + ":2:1: input: 'x' has dims [7], the model's are [6] (without the batch "
                "dimension)")
        refused("max_batch_size: 8\ninput [ { name: \"x\" data_type: TYPE_INT32 dims: [ 6 ] } ]\n",
                "'x' is TYPE_INT32, the model's is TYPE_FP32")
        refused("name: \"other\"\n", path + ":1:1: name: 'other' is not the model's directory")
        refused("max_batch_size: 8\ndynamic_batching { preferred_batch_size: [ 9 ] }\n",
                "preferred_batch_size: 9 is not between 1 and max_batch_size (8)")
    return serving.finish()


if __name__ == "__main__":
    sys.exit(main())
