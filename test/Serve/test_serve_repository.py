#!/usr/bin/python3
"""kiln-serve's model repository extension (REST: index, load, unload) and
hot reload, with a standard-library HTTP client written from the KServe v2
specification.

A repository of "add" (z = x + y), "mlp" (batched, dynamic batching with a
300 ms queue delay, so requests stay in flight) and "broken" (a model.kiln
that is not an artifact). With --exit-on-error=false the server starts,
reports "broken" (warning, index entry UNAVAILABLE with the reason, 404 on
inference, not ready); unloading "mlp" while requests wait in its queue
answers all of them correctly and then 404s; loading it again serves again;
replacing add's artifact and loading it switches its results (hot reload);
repairing "broken" and loading it makes the server ready; each misuse is a
clear error. With the default --exit-on-error=true the broken model stops the
server.

Usage: /usr/bin/python3 test/Serve/test_serve_repository.py --build build
"""

from __future__ import annotations

import http.client
import json
import os
import re
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

ADD = """<
  ir_version: 8,
  opset_import: ["" : 17]
>
g (float[2, 3] x, float[2, 3] y) => (float[2, 3] z)
{
  z = %s(x, y)
}
"""

MLP = """<
  ir_version: 8,
  opset_import: ["" : 17]
>
g (float[N, 4] x) => (float[N, 4] y)
{
  y = Relu(x)
}
"""

MLP_CONFIG = """max_batch_size: 4
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 300000 }
"""



def call(port: int, method: str, path: str, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    data = None if body is None else json.dumps(body)
    conn.request(method, path, body=data)
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    return r.status, (json.loads(raw) if raw else None)


def infer_add(port: int):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 10, np.float32)
    status, body = call(port, "POST", "/v2/models/add/infer", {"inputs": [
        {"name": "x", "shape": [2, 3], "datatype": "FP32", "data": x.ravel().tolist()},
        {"name": "y", "shape": [2, 3], "datatype": "FP32", "data": y.ravel().tolist()}]})
    if status != 200:
        return status, body
    return status, np.array(body["outputs"][0]["data"], np.float32).reshape(2, 3) - x


def infer_mlp(port: int, x: np.ndarray):
    return call(port, "POST", "/v2/models/mlp/infer", {"inputs": [
        {"name": "x", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]})


def replace(src: Path, dst: Path) -> None:
    """Replaces an artifact by rename, as deployments must: the server maps
    the file it loaded, so it must not be rewritten in place."""
    tmp = dst.with_name(dst.name + ".new")
    shutil.copy(src, tmp)
    os.replace(tmp, dst)


def compile_model(build: Path, text: str, out: Path, extra=()):
    src = out.with_suffix(".onnxtxt")
    src.write_text(text)
    subprocess.run([build / "bin" / "kiln-compile", src, "--target=cpu", *extra, "-o", out],
                   check=True)


def main() -> int:
    build = serving.build_dir()
    with tempfile.TemporaryDirectory(prefix="kiln-serve-repo-") as tmp:
        work = Path(tmp)
        compile_model(build, ADD % "Add", work / "add.kiln")
        compile_model(build, ADD % "Sub", work / "sub.kiln")
        compile_model(build, MLP, work / "mlp.kiln", ["--batch-sizes=1,2,4"])
        repo = work / "repo"
        for name in ["add", "mlp", "broken"]:
            (repo / name / "1").mkdir(parents=True)
        shutil.copy(work / "add.kiln", repo / "add" / "1" / "model.kiln")
        shutil.copy(work / "mlp.kiln", repo / "mlp" / "1" / "model.kiln")
        (repo / "mlp" / "config.pbtxt").write_text(MLP_CONFIG)
        (repo / "broken" / "1" / "model.kiln").write_bytes(b"not an artifact")

        # The default: a model that does not load stops the server.
        proc = subprocess.run([build / "bin" / "kiln-serve", f"--model-repository={repo}",
                               "--http-port=0", "--grpc-port=0", "--metrics-port=0"],
                              capture_output=True, text=True, timeout=60)
        check(proc.returncode == 1 and "broken/1/model.kiln" in proc.stderr,
              "--exit-on-error=true (default): the broken model stops the server: "
              + proc.stderr.strip())

        # A memory budget per model version (constants and arenas, from
        # kiln-run --print-info): at add's size, add loads and mlp (three
        # buckets' arenas) does not; both fit 1 MiB (below).
        def memory(path: Path) -> int:
            info = subprocess.run([build / "bin" / "kiln-run", path, "--print-info"],
                                  capture_output=True, text=True, check=True).stdout
            return (int(re.search(r"constants: (\d+)", info).group(1))
                    + sum(int(a) for a in re.findall(r"arena (\d+) bytes", info)))

        limit = memory(repo / "add" / "1" / "model.kiln")
        check(memory(repo / "mlp" / "1" / "model.kiln") > limit, "mlp needs more than add")
        server, ports = start_server(build, repo, "--exit-on-error=false",
                                     f"--model-memory-limit={limit}")
        status, index = call(ports["http"], "POST", "/v2/repository/index", {})
        states = {e["name"]: e for e in index}
        stop_server(server)
        check(states["add"]["state"] == "READY" and states["mlp"]["state"] == "UNAVAILABLE"
              and f"more than --model-memory-limit ({limit})" in states["mlp"]["reason"],
              f"--model-memory-limit={limit}: add loads, mlp does not: " + states["mlp"]["reason"])

        server, ports = start_server(build, repo, "--exit-on-error=false", "--threads=1",
                                     "--model-memory-limit=1M")
        port = ports["http"]
        try:
            status, _ = call(port, "GET", "/v2/health/ready")
            check(status == 400, f"not ready while a model failed to load ({status})")
            status, index = call(port, "POST", "/v2/repository/index", {})
            by_name = {e["name"]: e for e in index}
            check(status == 200 and by_name["add"]["state"] == "READY"
                  and by_name["mlp"]["state"] == "READY"
                  and by_name["broken"]["state"] == "UNAVAILABLE"
                  and "broken/1/model.kiln" in by_name["broken"]["reason"],
                  "index: add and mlp READY, broken UNAVAILABLE with its reason: "
                  + json.dumps(index))
            status, index = call(port, "POST", "/v2/repository/index", {"ready": True})
            check(status == 200 and sorted(e["name"] for e in index) == ["add", "mlp"],
                  "index {ready: true}: the ready models only")
            status, body = infer_add(port)
            check(status == 200 and np.all(body == 10), "add serves x + y")
            status, body = call(port, "POST", "/v2/models/broken/infer", {"inputs": []})
            check(status == 404 and "is unavailable" in body["error"],
                  "inference on the broken model: 404 naming why: " + body["error"])

            # Unload mlp while requests wait in its 300 ms queue.
            results, lock = [], threading.Lock()
            rng = np.random.RandomState(3)
            xs = [rng.uniform(-1, 1, (1, 4)).astype(np.float32) for _ in range(3)]

            def client(x):
                r = infer_mlp(port, x)
                with lock:
                    results.append((x, r))

            threads = [threading.Thread(target=client, args=(x,)) for x in xs]
            for t in threads:
                t.start()
            time.sleep(0.1)
            status, _ = call(port, "POST", "/v2/repository/models/mlp/unload")
            unload_status = status
            for t in threads:
                t.join()
            good = [r for x, r in results if r[0] == 200 and np.allclose(
                np.array(r[1]["outputs"][0]["data"], np.float32).reshape(1, 4), np.maximum(x, 0))]
            check(unload_status == 200 and len(good) == 3,
                  f"unload while 3 requests are queued: {len(good)} of 3 answered right")
            status, body = infer_mlp(port, xs[0])
            check(status == 404 and "unloaded" in body["error"],
                  "after unload: 404: " + body["error"])
            status, body = call(port, "POST", "/v2/repository/models/mlp/unload")
            check(status == 400 and "is not loaded" in body["error"],
                  "unload twice: 400: " + body["error"])
            status, _ = call(port, "GET", "/v2/health/ready")
            check(status == 400, "an unloaded model does not make the server ready (broken does not)")
            status, _ = call(port, "POST", "/v2/repository/models/mlp/load")
            status2, body = infer_mlp(port, xs[1])
            check(status == 200 and status2 == 200, "load mlp again: it serves")

            # Hot reload: add's artifact replaced by Sub, then loaded.
            replace(work / "sub.kiln", repo / "add" / "1" / "model.kiln")
            status, body = infer_add(port)
            check(status == 200 and np.all(body == 10), "the old artifact serves until load")
            status, _ = call(port, "POST", "/v2/repository/models/add/load")
            status2, body = infer_add(port)
            check(status == 200 and status2 == 200 and np.all(body == -10),
                  "after load: the new artifact (x - y) serves")

            # Errors of load.
            status, body = call(port, "POST", "/v2/repository/models/nope/load")
            check(status == 404 and "has no model 'nope'" in body["error"],
                  "load of an unknown model: 404: " + body["error"])
            (repo / "add" / "config.pbtxt").write_text("max_batch_size: 4\n")
            status, body = call(port, "POST", "/v2/repository/models/add/load")
            check(status == 400 and body["error"].startswith("failed to load 'add': ")
                  and "config.pbtxt:1:1: max_batch_size" in body["error"],
                  "load with an invalid config: 400 naming the file and field: " + body["error"])
            status, _ = infer_add(port)
            check(status == 404, "a model whose reload failed is unavailable")
            (repo / "add" / "config.pbtxt").unlink()
            status, _ = call(port, "POST", "/v2/repository/models/add/load")
            check(status == 200 and infer_add(port)[0] == 200, "fixed and loaded: add serves")

            # Repair the broken model.
            replace(work / "add.kiln", repo / "broken" / "1" / "model.kiln")
            status, _ = call(port, "POST", "/v2/repository/models/broken/load")
            ready, _ = call(port, "GET", "/v2/health/ready")
            check(status == 200 and ready == 200, "the repaired model loads; the server is ready")
            status, meta = call(port, "GET", "/v2")
            check("model_repository" in meta["extensions"], "server metadata lists model_repository")

            # The same extension over gRPC.
            import grpc
            pb, rpc = serving.grpc_stubs(work)
            stub = rpc.GRPCInferenceServiceStub(grpc.insecure_channel(f"127.0.0.1:{ports['grpc']}"))

            def code_of(call_, request):
                try:
                    call_(request)
                    return None, ""
                except grpc.RpcError as e:
                    return e.code(), e.details()

            index = stub.RepositoryIndex(pb.RepositoryIndexRequest())
            check(sorted((m.name, m.state) for m in index.models)
                  == [("add", "READY"), ("broken", "READY"), ("mlp", "READY")],
                  "grpc RepositoryIndex: " + str([(m.name, m.version, m.state) for m in index.models]))
            stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="mlp"))
            code, details = code_of(stub.ModelReady, pb.ModelReadyRequest(name="mlp"))
            check(code == grpc.StatusCode.NOT_FOUND and "unloaded" in details,
                  "grpc RepositoryModelUnload: the model is gone: " + details)
            ready = [m.name for m in stub.RepositoryIndex(pb.RepositoryIndexRequest(ready=True)).models]
            check("mlp" not in ready and "add" in ready, "grpc RepositoryIndex ready=true")
            stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="mlp"))
            check(stub.ModelReady(pb.ModelReadyRequest(name="mlp")).ready,
                  "grpc RepositoryModelLoad: the model serves again")
            code, details = code_of(stub.RepositoryModelLoad,
                                    pb.RepositoryModelLoadRequest(model_name="nope"))
            check(code == grpc.StatusCode.NOT_FOUND, "grpc load of an unknown model: NOT_FOUND")
            code, details = code_of(stub.RepositoryModelUnload,
                                    pb.RepositoryModelUnloadRequest(repository_name="x", model_name="mlp"))
            check(code == grpc.StatusCode.INVALID_ARGUMENT and "one repository" in details,
                  "grpc: a repository name is INVALID_ARGUMENT: " + details)
        finally:
            stop_server(server)
    return serving.finish()


if __name__ == "__main__":
    sys.exit(main())
