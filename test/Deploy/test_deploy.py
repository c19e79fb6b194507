#!/usr/bin/python3
"""The deployment files (deploy/) against what the build provides.

  /usr/bin/python3 test/Deploy/test_deploy.py --build build

- The KServe manifests parse as YAML, are a ServingRuntime and an
  InferenceService of the serving.kserve.io API that name each other (runtime
  name, model format "kiln", the v2 protocol), and the Prometheus annotation
  names the runtime's --metrics-port.
- Every argument of the runtime's container and of the Containerfile's
  ENTRYPOINT/CMD is an option kiln-serve accepts (its --help), every port an
  argument sets is a declared containerPort / EXPOSE, and the probes use
  kiln-serve's health routes on its HTTP port.
- kiln-serve starts with exactly the runtime's arguments (the ports swapped
  for free ones, the repository for a test one) and answers the probes.
- The Containerfile's runtime stage installs, from Debian, the packages that
  provide every shared library `ldd` lists for the built kiln-serve (libc,
  libstdc++ and libgcc are in the base image).
"""
import argparse
import http.client
import json
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE_PACKAGES = {"libc6", "libstdc++6", "libgcc-s1", "zlib1g"}
failures = 0


def check(ok: bool, what: str) -> None:
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def flag_name(arg: str) -> str:
    return arg.split("=", 1)[0]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True, type=Path)
    build = parser.parse_args().build.resolve()
    serve = build / "bin" / "kiln-serve"
    helptext = subprocess.run([serve, "--help"], capture_output=True, text=True).stdout
    known = set(re.findall(r"(--[a-z-]+)", helptext))
    check({"--model-repository", "--http-port", "--grpc-port", "--metrics-port"} <= known,
          "kiln-serve --help lists its options: " + " ".join(sorted(known)))

    runtime = yaml.safe_load((ROOT / "deploy/kserve/servingruntime.yaml").read_text())
    service = yaml.safe_load((ROOT / "deploy/kserve/inferenceservice.yaml").read_text())
    check(runtime["apiVersion"].startswith("serving.kserve.io/") and
          runtime["kind"] == "ServingRuntime", "servingruntime.yaml is a ServingRuntime")
    check(service["apiVersion"].startswith("serving.kserve.io/") and
          service["kind"] == "InferenceService", "inferenceservice.yaml is an InferenceService")
    model = service["spec"]["predictor"]["model"]
    formats = [f["name"] for f in runtime["spec"]["supportedModelFormats"]]
    check(model["runtime"] == runtime["metadata"]["name"] and model["modelFormat"]["name"] in formats
          and model["protocolVersion"] in runtime["spec"]["protocolVersions"]
          and "grpc-v2" in runtime["spec"]["protocolVersions"],
          "the InferenceService names the runtime, its model format and the v2 protocol")
    container = runtime["spec"]["containers"][0]
    args = container["args"]
    unknown = [a for a in args if flag_name(a) not in known]
    check(not unknown, f"every runtime argument is a kiln-serve option (unknown: {unknown})")
    ports = {flag_name(a): int(a.split("=", 1)[1]) for a in args if a.split("=")[0].endswith("-port")}
    declared = {p["containerPort"] for p in container["ports"]}
    check(set(ports.values()) <= declared, f"the ports the arguments set {ports} are declared {declared}")
    annotations = runtime["metadata"]["annotations"]
    check(int(annotations["prometheus.kserve.io/port"]) == ports["--metrics-port"]
          and annotations["prometheus.kserve.io/path"] == "/metrics",
          "the Prometheus annotation names --metrics-port and /metrics")
    for probe, route in [("readinessProbe", "/v2/health/ready"), ("livenessProbe", "/v2/health/live")]:
        get = container[probe]["httpGet"]
        check(get["path"] == route and get["port"] == ports["--http-port"],
              f"{probe}: {route} on the HTTP port")

    containerfile = (ROOT / "deploy/Containerfile").read_text()
    entry = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", containerfile, re.M).group(1))
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", containerfile, re.M).group(1))
    exposed = {int(p) for p in re.search(r"^EXPOSE (.*)$", containerfile, re.M).group(1).split()}
    image_args = entry[1:] + cmd
    unknown = [a for a in image_args if flag_name(a) not in known]
    check(entry[0] == "/usr/local/bin/kiln-serve" and not unknown,
          f"the image runs kiln-serve with its options (unknown: {unknown})")
    image_ports = {int(a.split("=")[1]) for a in image_args if flag_name(a).endswith("-port")}
    check(image_ports == exposed, f"the image exposes the ports it listens on {sorted(exposed)}")
    check(runtime["spec"]["containers"][0]["command"][0] == entry[0],
          "the runtime runs the image's kiln-serve")

    # The libraries kiln-serve loads, against the runtime stage's packages.
    stage = containerfile.split("FROM debian:bookworm-slim", 1)[1]
    install = re.search(r"apt-get install -y --no-install-recommends(.*?)&&", stage, re.S).group(1)
    packages = set(install.replace("\\", " ").split())
    needed = set()
    for line in subprocess.run(["ldd", serve], capture_output=True, text=True).stdout.splitlines():
        m = re.search(r"=> (/\S+)", line)
        if not m:
            continue
        real = subprocess.run(["readlink", "-f", m.group(1)], capture_output=True, text=True).stdout.strip()
        owner = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True)
        if owner.returncode != 0:
            owner = subprocess.run(["dpkg", "-S", m.group(1)], capture_output=True, text=True)
        if owner.returncode == 0:
            needed.add(owner.stdout.split(":")[0])
    missing = sorted(needed - packages - BASE_IMAGE_PACKAGES)
    check(needed and not missing,
          f"the runtime stage installs the packages of kiln-serve's libraries (missing: {missing})")

    # kiln-serve starts with the runtime's arguments and answers the probes.
    with tempfile.TemporaryDirectory(prefix="kiln-deploy-") as tmp:
        repo = Path(tmp) / "repo" / "m" / "1"
        repo.mkdir(parents=True)
        src = Path(tmp) / "m.onnxtxt"
        src.write_text('<\n  ir_version: 8,\n  opset_import: ["" : 17]\n>\n'
                       'g (float[2] x) => (float[2] y)\n{\n  y = Relu(x)\n}\n')
        subprocess.run([build / "bin" / "kiln-compile", src, "--target=cpu", "-o", repo / "model.kiln"],
                       check=True)
        run_args = []
        for a in args:
            name = flag_name(a)
            if name == "--model-repository":
                a = f"--model-repository={Path(tmp) / 'repo'}"
            elif name == "--host":
                a = "--host=127.0.0.1"
            elif name.endswith("-port"):
                a = f"{name}=0"
            run_args.append(a)
        server = subprocess.Popen([serve, *run_args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        line = server.stdout.readline()
        m = re.search(r"http://127.0.0.1:(\d+)", line)
        try:
            ok = False
            if m:
                codes = []
                for route in ["/v2/health/live", "/v2/health/ready"]:
                    conn = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=30)
                    conn.request("GET", route)
                    codes.append(conn.getresponse().status)
                ok = codes == [200, 200]
            check(ok, "kiln-serve starts with the runtime's arguments and answers the probes: "
                  + (line.strip() or server.stderr.read()))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
    print("passed" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
