#!/usr/bin/python3
"""kiln-serve against the KServe v2 REST protocol, with a client written
from the specification (the standard library's HTTP client), not Kiln's.

Builds a model repository (add: versions 1 and 2; mixed: int32, bool, fp16
and an output whose size the data decides), starts kiln-serve on a free
loopback port, and checks health, server and model metadata, inference
(flat and nested data, versions, requested outputs, ids) against numpy, and
one error reply per kind of bad request (status and {"error": ...}), then
that SIGTERM stops the server.

Usage: /usr/bin/python3 test/Serve/test_kiln_serve.py --build build
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import tempfile
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

MIXED = """<
  ir_version: 8,
  opset_import: ["" : 17]
>
g (int32[4] a, bool[4] m, float16[2] h) => (int32[4] doubled, bool[4] flipped, float16[2] half, int64[1, N] where)
{
  two = Constant<value = int32 {2}>()
  doubled = Mul(a, two)
  flipped = Not(m)
  kf = Constant<value = float {0.5}>()
  k = Cast<to = 10>(kf)
  half = Mul(h, k)
  where = NonZero(m)
}
"""



class Client:
    def __init__(self, port: int):
        self.port = port

    def request(self, method: str, path: str, body=None, content_type="application/json"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        conn.request(method, path, body=data,
                     headers={"Content-Type": content_type} if data is not None else {})
        response = conn.getresponse()
        raw = response.read()
        conn.close()
        try:
            parsed = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            parsed = raw
        return response.status, parsed


def compile_model(build: Path, text: str, out: Path, work: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    source = work / (out.parent.parent.name + out.parent.name + ".onnxtxt")
    source.write_text(text)
    subprocess.run([build / "bin" / "kiln-compile", source, "--target=cpu", "-o", out], check=True)


def main() -> int:
    build = serving.build_dir()
    with tempfile.TemporaryDirectory(prefix="kiln-serve-") as tmp:
        work = Path(tmp)
        repo = work / "repo"
        compile_model(build, ADD % "Add", repo / "add" / "1" / "model.kiln", work)
        compile_model(build, ADD % "Sub", repo / "add" / "2" / "model.kiln", work)
        compile_model(build, MIXED, repo / "mixed" / "1" / "model.kiln", work)
        (repo / "add" / "config.pbtxt").write_text("name: \"add\"\nplatform: \"onnxruntime_onnx\"\n")

        server, ports = start_server(build, repo, "--threads=1")
        client = Client(ports["http"])
        try:
            run_checks(client)
        finally:
            stop_server(server)

        # A repository the server cannot serve: a clear error, exit 1.
        empty = work / "empty"
        empty.mkdir()
        proc = subprocess.run([build / "bin" / "kiln-serve", f"--model-repository={empty}",
                               "--http-port=0", "--metrics-port=0", "--grpc-port=0"], capture_output=True, text=True, timeout=30)
        check(proc.returncode == 1 and "holds no model" in proc.stderr,
              "an empty repository is refused: " + proc.stderr.strip())
        broken = work / "broken" / "m" / "1"
        broken.mkdir(parents=True)
        (broken / "model.kiln").write_bytes(b"not an artifact")
        proc = subprocess.run([build / "bin" / "kiln-serve",
                               f"--model-repository={work / 'broken'}", "--http-port=0", "--metrics-port=0", "--grpc-port=0"],
                              capture_output=True, text=True, timeout=30)
        check(proc.returncode == 1 and "model.kiln" in proc.stderr,
              "a model that does not load stops the server: " + proc.stderr.strip())
    return serving.finish()


def run_checks(client: Client) -> None:
    status, body = client.request("GET", "/v2/health/live")
    check(status == 200 and body is None, f"GET /v2/health/live: {status}")
    status, body = client.request("GET", "/v2/health/ready")
    check(status == 200, f"GET /v2/health/ready: {status}")
    status, body = client.request("GET", "/v2")
    check(status == 200 and body.get("name") == "kiln-serve" and "extensions" in body,
          f"GET /v2: {body}")

    status, body = client.request("GET", "/v2/models/add")
    check(status == 200 and body["name"] == "add" and body["versions"] == ["1", "2"]
          and body["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [2, 3]},
                                 {"name": "y", "datatype": "FP32", "shape": [2, 3]}]
          and body["outputs"] == [{"name": "z", "datatype": "FP32", "shape": [2, 3]}],
          f"model metadata: {body}")
    status, body = client.request("GET", "/v2/models/mixed")
    where = [o for o in body["outputs"] if o["name"] == "where"]
    check(status == 200 and where == [{"name": "where", "datatype": "INT64", "shape": [1, -1]}],
          f"a data-dependent dimension is -1 in the metadata: {where}")
    for path in ("/v2/models/add/ready", "/v2/models/add/versions/1/ready",
                 "/v2/models/add/versions/2"):
        status, _ = client.request("GET", path)
        check(status == 200, f"GET {path}: {status}")

    rng = np.random.RandomState(0)
    x = rng.randn(2, 3).astype(np.float32)
    y = rng.randn(2, 3).astype(np.float32)

    def add_request(**extra):
        request = {"inputs": [
            {"name": "x", "shape": [2, 3], "datatype": "FP32", "data": x.tolist()},  # nested
            {"name": "y", "shape": [2, 3], "datatype": "FP32", "data": y.ravel().tolist()},  # flat
        ]}
        request.update(extra)
        return request

    for path, want, version in (("/v2/models/add/infer", x - y, "2"),
                                ("/v2/models/add/versions/1/infer", x + y, "1"),
                                ("/v2/models/add/versions/2/infer", x - y, "2")):
        status, body = client.request("POST", path, add_request(id="req-7"))
        ok = status == 200 and body["model_name"] == "add" and body["model_version"] == version \
            and body["id"] == "req-7" and len(body["outputs"]) == 1
        if ok:
            out = body["outputs"][0]
            got = np.array(out["data"], np.float32).reshape(out["shape"])
            ok = out["name"] == "z" and out["datatype"] == "FP32" and out["shape"] == [2, 3] \
                and np.array_equal(got, want)
        check(ok, f"POST {path}: z equals numpy's (version {version})")

    # What `curl -d @request.json` sends: the form content type, a body past
    # cpp-httplib's 8 KiB default for forms (padded with whitespace).
    padded = json.dumps(add_request()) + " " * 20000
    status, body = client.request("POST", "/v2/models/add/infer", padded,
                                  content_type="application/x-www-form-urlencoded")
    check(status == 200 and np.array_equal(np.array(body["outputs"][0]["data"], np.float32)
                                           .reshape(2, 3), x - y),
          f"a 20 KB JSON request sent as a form (curl -d): {status}")

    a = np.array([3, -7, 2147483647 // 2, 0], np.int32)
    m = np.array([True, False, True, True])
    h = np.array([1.5, -3.0], np.float16)
    request = {"inputs": [
        {"name": "a", "shape": [4], "datatype": "INT32", "data": a.tolist()},
        {"name": "m", "shape": [4], "datatype": "BOOL", "data": m.tolist()},
        {"name": "h", "shape": [2], "datatype": "FP16", "data": h.astype(float).tolist()},
    ], "outputs": [{"name": "doubled"}, {"name": "flipped"}, {"name": "half"}, {"name": "where"}]}
    status, body = client.request("POST", "/v2/models/mixed/infer", request)
    outs = {o["name"]: o for o in body.get("outputs", [])} if status == 200 else {}
    check(status == 200 and outs.get("doubled", {}).get("data") == (a * 2).tolist()
          and outs["doubled"]["datatype"] == "INT32", "INT32 data")
    check(outs.get("flipped", {}).get("data") == (~m).tolist()
          and outs["flipped"]["datatype"] == "BOOL", "BOOL data")
    check(outs.get("half", {}).get("data") == (h * np.float16(0.5)).astype(float).tolist()
          and outs["half"]["datatype"] == "FP16", "FP16 data")
    check(outs.get("where", {}).get("shape") == [1, 3]
          and outs["where"]["data"] == np.nonzero(m)[0].tolist(),
          f"an output of data-dependent size comes at its run-time shape: {outs.get('where')}")
    request["outputs"] = [{"name": "half"}]
    status, body = client.request("POST", "/v2/models/mixed/infer", request)
    check(status == 200 and [o["name"] for o in body["outputs"]] == ["half"],
          "only the requested outputs are returned")

    def error(method, path, body, status_wanted, text):
        status, reply = client.request(method, path, body)
        ok = status == status_wanted and isinstance(reply, dict) and text in reply.get("error", "")
        check(ok, f"{method} {path}: {status} {reply}")

    bad_x = add_request()
    error("POST", "/v2/models/nope/infer", add_request(), 404, "model 'nope' is not in the repository")
    error("POST", "/v2/models/add/versions/9/infer", add_request(), 404, "has no version '9'")
    error("GET", "/v2/models/nope", None, 404, "not in the repository")
    error("GET", "/v3", None, 404, "no route")
    error("POST", "/v2/models/add/infer", "{not json", 400, "not JSON")
    error("POST", "/v2/models/add/infer", {"outputs": []}, 400, "'inputs' array")
    bad_x["inputs"][0]["shape"] = [3, 2]
    error("POST", "/v2/models/add/infer", bad_x, 400, "shape [3, 2], the model takes [2, 3]")
    bad_x = add_request()
    bad_x["inputs"][0]["datatype"] = "FP64"
    error("POST", "/v2/models/add/infer", bad_x, 400, "datatype FP64, the model takes FP32")
    bad_x = add_request()
    bad_x["inputs"][0]["data"] = [1, 2, 3]
    error("POST", "/v2/models/add/infer", bad_x, 400, "3 elements of data, the shape holds 6")
    bad_x = add_request()
    bad_x["inputs"][0]["data"] = ["a"] * 6
    error("POST", "/v2/models/add/infer", bad_x, 400, "is not a FP32 value")
    bad_x = add_request()
    del bad_x["inputs"][1]
    error("POST", "/v2/models/add/infer", bad_x, 400, "missing input 'y'")
    bad_x = add_request()
    bad_x["inputs"].append(dict(bad_x["inputs"][0]))
    error("POST", "/v2/models/add/infer", bad_x, 400, "given twice")
    bad_x = add_request()
    bad_x["inputs"][0]["name"] = "q"
    error("POST", "/v2/models/add/infer", bad_x, 400, "no model input named 'q'")
    error("POST", "/v2/models/add/infer", add_request(outputs=[{"name": "w"}]), 400,
          "no model output named 'w'")
    over = dict(request)
    over["inputs"] = [dict(i) for i in request["inputs"]]
    over["inputs"][0]["data"] = [2 ** 31, 0, 0, 0]
    error("POST", "/v2/models/mixed/infer", over, 400, "is not a INT32 value")
    binary = add_request()
    binary["inputs"][0]["parameters"] = {"binary_data_size": 24}
    error("POST", "/v2/models/add/infer", binary, 400,
          "binary_data_size 24, but only 0 bytes of binary data are left in the request")


if __name__ == "__main__":
    sys.exit(main())
