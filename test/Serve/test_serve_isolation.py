#!/usr/bin/python3
"""kiln-serve keeps models apart: a model whose run faults or runs past its
time limit is reported and unloaded while the others go on serving, and a
model with a host policy runs on a device of its own, its threads pinned to
the policy's CPUs. A standard-library HTTP client and Debian's grpcio, both
written from the KServe v2 specification.

The repository:
  loop       y = x + 1, n times (an ONNX Loop whose trip count n is an
             input); kiln.run_timeout_ms 300: n = 10^12 is a fault
  loop_keep  the same with kiln.unload_on_fault "false": a late run is an
             error for that request only
  loop_wait  the same as loop, for requests that wait for its session
  relu       batched (dynamic batching), instance_group host_policy
             "pinned" (kiln-serve --host-policy=pinned,cpu-cores=C)
  spin       batched, one instance: y = x + 1 10^12 times (a Loop with a
             constant trip count), kiln.run_timeout_ms 300: every run faults

Checks: loop answers n = 5; a runaway run is 504 (gRPC DEADLINE_EXCEEDED)
after about the limit; relu answers while loop's runaway run holds the
shared device; loop is then UNAVAILABLE in the index with the reason, 404 on
inference, the server stays ready, /metrics counts the faults; loop_keep
stays READY; POST .../load brings loop back; relu's batcher and worker
threads are pinned to C. spin's first request faults (504) while two more
wait in its queue: the unload answers them 503 at once, unrun (two more
runs would take 600 ms and be 504), and counts one fault; loop_wait, the
loop model unbatched, likewise with two requests waiting for its session.
Then each configuration error stops the server with its file, line and
key.

Usage: /usr/bin/python3 test/Serve/test_serve_isolation.py --build build
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import serving
from serving import check, start_server, stop_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Runtime" / "Inputs"))
import make_loop_model  # noqa: E402

RELU = """<
  ir_version: 8,
  opset_import: ["" : 17]
>
g (float[N, 4] x) => (float[N, 4] y)
{
  y = Relu(x)
}
"""

LOOP_CONFIG = """parameters { key: "kiln.run_timeout_ms" value { string_value: "300" } }
"""
LOOP_KEEP_CONFIG = """parameters { key: "kiln.run_timeout_ms" value { string_value: "300" } }
parameters { key: "kiln.unload_on_fault" value { string_value: "false" } }
"""
SPIN_CONFIG = """max_batch_size: 4
dynamic_batching { max_queue_delay_microseconds: 0 }
instance_group [ { count: 1 kind: KIND_CPU } ]
parameters { key: "kiln.run_timeout_ms" value { string_value: "300" } }
"""
RELU_CONFIG = """max_batch_size: 4
dynamic_batching { max_queue_delay_microseconds: 100 }
instance_group [ { count: 1 kind: KIND_CPU host_policy: "pinned" } ]
"""


def spin_model(path: Path) -> None:
    """y = x + 1, 10^12 times, x of [N, 4]: a batched model whose every run
    passes any time limit."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    body = h.make_graph(
        [h.make_node("Identity", ["c"], ["c_out"]),
         h.make_node("Constant", [], ["one"], value=h.make_tensor("one", T.FLOAT, [], [1.0])),
         h.make_node("Add", ["a", "one"], ["a_out"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("a", T.FLOAT, ["N", 4])],
        [h.make_tensor_value_info("c_out", T.BOOL, []),
         h.make_tensor_value_info("a_out", T.FLOAT, ["N", 4])])
    graph = h.make_graph(
        [h.make_node("Constant", [], ["n"], value=h.make_tensor("n", T.INT64, [], [10**12])),
         h.make_node("Constant", [], ["cond"], value=h.make_tensor("cond", T.BOOL, [], [True])),
         h.make_node("Loop", ["n", "cond", "x"], ["y"], body=body)],
        "spin", [h.make_tensor_value_info("x", T.FLOAT, ["N", 4])],
        [h.make_tensor_value_info("y", T.FLOAT, ["N", 4])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def queued_requests_of_a_fault(port: int, model: str = "spin") -> None:
    """One request to `model` runs (and faults) while two wait: in spin's
    batcher queue, or (loop_wait, unbatched) for its session."""
    replies = {}

    def infer(key: str) -> None:
        start = time.monotonic()
        if model == "spin":
            reply = call(port, "POST", "/v2/models/spin/infer", {"inputs": [
                {"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [0.0, 1.0, 2.0, 3.0]}]})
        else:
            reply = infer_loop(port, model, 10**12)
        replies[key] = (reply, time.monotonic() - start)

    first = threading.Thread(target=infer, args=("first",))
    first.start()
    time.sleep(0.1)  # the first request's batch is running
    queued = [threading.Thread(target=infer, args=(k,)) for k in ("second", "third")]
    for t in queued:
        t.start()
    for t in [first, *queued]:
        t.join()
    (status, body), seconds = replies["first"]
    check(status == 504 and "time limit of 300 ms" in body["error"],
          f"{model}: the running request passes its limit ({status}, {seconds:.2f} s)")
    for key in ("second", "third"):
        (status, body), seconds = replies[key]
        check(status == 503 and "unloaded after a fault of version 1" in body["error"]
              and seconds < 0.45,
              f"{model}: the {key} request, queued, is answered 503 unrun after {seconds:.2f} s: "
              f"{body['error']}")


def call(port: int, method: str, path: str, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, body=None if body is None else json.dumps(body))
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    return r.status, (json.loads(raw) if raw else None)


def infer_loop(port: int, model: str, n: int):
    x = [0.5, -1.0, 2.0, 0.0]
    return call(port, "POST", f"/v2/models/{model}/infer", {"inputs": [
        {"name": "n", "shape": [], "datatype": "INT64", "data": [n]},
        {"name": "x", "shape": [4], "datatype": "FP32", "data": x}]})


def loop_ok(reply) -> bool:
    status, body = reply
    return status == 200 and body["outputs"][0]["data"] == [5.5, 4.0, 7.0, 5.0]


def infer_relu(port: int):
    x = np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)
    status, body = call(port, "POST", "/v2/models/relu/infer", {"inputs": [
        {"name": "x", "shape": [1, 4], "datatype": "FP32", "data": x.ravel().tolist()}]})
    return status == 200 and body["outputs"][0]["data"] == [0.0, 2.0, 0.0, 4.0]


def thread_cpus(pid: int) -> list[str]:
    """Cpus_allowed_list of each thread of process `pid`."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                out.append(line.split(":", 1)[1].strip())
    return out


def grpc_deadline(work: Path, port: int) -> None:
    import grpc
    pb, rpc = serving.grpc_stubs(work)
    stub = rpc.GRPCInferenceServiceStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
    r = pb.ModelInferRequest(model_name="loop_keep")
    r.inputs.add(name="n", datatype="INT64", shape=[]).contents.int64_contents.append(10**12)
    r.inputs.add(name="x", datatype="FP32", shape=[4]).contents.fp32_contents.extend(
        [0.5, -1.0, 2.0, 0.0])
    try:
        stub.ModelInfer(r)
        check(False, "grpc: a run past its limit fails")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.DEADLINE_EXCEEDED and "time limit" in e.details(),
              f"grpc: a run past its limit is DEADLINE_EXCEEDED: {e.details()}")


def main() -> int:
    build = serving.build_dir()
    allowed = sorted(os.sched_getaffinity(0))
    pinned = str(allowed[-1])
    with tempfile.TemporaryDirectory(prefix="kiln-serve-isolation-") as tmp:
        work = Path(tmp)
        make_loop_model.write(work)
        compile_ = lambda src, out, *extra: subprocess.run(
            [build / "bin" / "kiln-compile", src, "--target=cpu", *extra, "-o", out], check=True)
        compile_(work / "loop.onnx", work / "loop.kiln")
        (work / "relu.onnxtxt").write_text(RELU)
        compile_(work / "relu.onnxtxt", work / "relu.kiln", "--batch-sizes=1,2,4")
        spin_model(work / "spin.onnx")
        compile_(work / "spin.onnx", work / "spin.kiln", "--batch-sizes=1,2,4")
        repo = work / "repo"
        for name, artifact, config in [("loop", "loop.kiln", LOOP_CONFIG),
                                       ("loop_keep", "loop.kiln", LOOP_KEEP_CONFIG),
                                       ("loop_wait", "loop.kiln", LOOP_CONFIG),
                                       ("relu", "relu.kiln", RELU_CONFIG),
                                       ("spin", "spin.kiln", SPIN_CONFIG)]:
            (repo / name / "1").mkdir(parents=True)
            shutil.copy(work / artifact, repo / name / "1" / "model.kiln")
            (repo / name / "config.pbtxt").write_text(config)

        server, ports = start_server(build, repo, f"--host-policy=pinned,cpu-cores={pinned}")
        port = ports["http"]
        try:
            check(loop_ok(infer_loop(port, "loop", 5)), "loop: n = 5 gives x + 5")
            check(infer_relu(port), "relu serves")

            # relu's batcher and workers are pinned; the server's own threads
            # are not (when the process may run on more than one CPU).
            cpus = thread_cpus(server.pid)
            serving_cpus = ",".join(str(c) for c in allowed)
            check(cpus.count(pinned) >= 1,
                  f"a thread (relu's batcher) runs on CPU {pinned} only: {sorted(set(cpus))}")
            if len(allowed) > 1:
                check(any(c != pinned for c in cpus),
                      f"the other threads are not pinned ({serving_cpus})")

            # A runaway run holds the shared device; relu, on its own device,
            # answers meanwhile.
            late = {}

            def runaway():
                start = time.monotonic()
                late["reply"] = infer_loop(port, "loop", 10**12)
                late["seconds"] = time.monotonic() - start

            t = threading.Thread(target=runaway)
            t.start()
            time.sleep(0.05)
            answered = sum(infer_relu(port) for _ in range(5))
            during = t.is_alive()
            t.join()
            check(answered == 5 and during,
                  f"relu answers 5 of 5 while loop's run is stuck ({answered}, still stuck: {during})")
            status, body = late["reply"]
            check(status == 504 and "time limit of 300 ms" in body["error"]
                  and late["seconds"] < 5,
                  f"the runaway run: {status} after {late['seconds']:.2f} s: {body['error']}")

            status, index = call(port, "POST", "/v2/repository/index", {})
            states = {e["name"]: e for e in index}
            check(states["loop"]["state"] == "UNAVAILABLE"
                  and "unloaded after a fault of version 1" in states["loop"]["reason"]
                  and "time limit" in states["loop"]["reason"],
                  "loop is UNAVAILABLE with its reason: " + states["loop"]["reason"])
            check(states["relu"]["state"] == "READY" and states["loop_keep"]["state"] == "READY",
                  "relu and loop_keep stay READY")
            status, body = infer_loop(port, "loop", 5)
            check(status == 404 and "unloaded after a fault" in body["error"],
                  "inference on the faulted model: 404 naming why")
            status, _ = call(port, "GET", "/v2/health/ready")
            check(status == 200, f"the server stays ready ({status})")
            check(infer_relu(port), "relu still serves")

            # loop_keep: its late run fails that request only.
            status, body = infer_loop(port, "loop_keep", 10**12)
            check(status == 504, f"loop_keep: a late run is 504 ({status})")
            grpc_deadline(work, ports["grpc"])
            status, _ = call(port, "GET", "/v2/models/loop_keep/ready")
            check(status == 200 and loop_ok(infer_loop(port, "loop_keep", 5)),
                  "loop_keep (unload_on_fault false) stays ready and serves")

            queued_requests_of_a_fault(port)
            queued_requests_of_a_fault(port, "loop_wait")

            conn = http.client.HTTPConnection("127.0.0.1", ports["metrics"], timeout=30)
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
            conn.close()
            check('kiln_model_fault_count{model="loop"} 1' in text
                  and 'kiln_model_fault_count{model="loop_keep"} 2' in text
                  and 'kiln_model_fault_count{model="spin"} 1' in text
                  and 'kiln_model_fault_count{model="loop_wait"} 1' in text,
                  "/metrics counts the faults per model (the queued requests are none)")

            status, _ = call(port, "POST", "/v2/repository/models/loop/load")
            check(status == 200 and loop_ok(infer_loop(port, "loop", 5)),
                  "POST .../load brings loop back")
        finally:
            stop_server(server)
        # The warning names the model and the fault.
        err = server.stderr.read()
        check("model 'loop' version 1 faulted and was unloaded" in err,
              "the fault is reported on stderr")
        check("model 'spin' version 1 faulted and was unloaded (the other models go on; "
              "2 queued requests answered unrun)" in err,
              "spin's fault is reported with the requests it answered unrun")
        check("model 'loop_wait' version 1 faulted and was unloaded (the other models go on; "
              "2 queued requests answered unrun)" in err,
              "loop_wait's fault (unbatched) is reported with the requests it answered unrun")

        # Configuration errors: file, line and key.
        config = repo / "loop" / "config.pbtxt"

        def refused(text: str, want: str, *extra: str):
            config.write_text(text)
            proc = subprocess.run([build / "bin" / "kiln-serve", f"--model-repository={repo}",
                                   "--http-port=0", "--metrics-port=0", "--grpc-port=0",
                                   f"--host-policy=pinned,cpu-cores={pinned}", *extra],
                                  capture_output=True, text=True, timeout=60)
            message = proc.stderr.strip()
            check(proc.returncode == 1 and want in message, f"refused ({want!r}): {message}")

        refused('parameters { key: "kiln.run_timeout_ms" value { string_value: "300" } }\n'
                'parameters { key: "kiln.threads" value { string_value: "2" } }\n',
                f"{config}:2:1: parameters 'kiln.threads': unknown parameter")
        refused('parameters { key: "kiln.run_timeout_ms" value { string_value: "soon" } }\n',
                f"{config}:1:1: parameters 'kiln.run_timeout_ms': 'soon' is not a time limit")
        refused('parameters { key: "kiln.unload_on_fault" value { string_value: "yes" } }\n',
                "parameters 'kiln.unload_on_fault': 'yes' is not true or false")
        refused('instance_group [ { kind: KIND_CPU host_policy: "other" } ]\n',
                f"{config}:1:1: instance_group: host_policy 'other' is not one the server was given")
        refused('instance_group [ { kind: KIND_CPU host_policy: "far" } ]\n',
                "host_policy 'far': cpu list '1023': CPU 1023 is not one this process may run on",
                "--host-policy=far,cpu-cores=1023")
        proc = subprocess.run([build / "bin" / "kiln-serve", f"--model-repository={repo}",
                               "--host-policy=x,numa-node=0"], capture_output=True, text=True)
        check(proc.returncode == 1 and "'numa-node' is not a setting kiln-serve has"
              in proc.stderr, "--host-policy: an unknown setting: " + proc.stderr.strip())
    return serving.finish()


if __name__ == "__main__":
    sys.exit(main())
