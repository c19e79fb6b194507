"""What the kiln-serve tests share: a check counter, starting kiln-serve on
free loopback ports (read back from its first line) and stopping it with
SIGTERM (which must exit 0)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

failures = 0


def check(ok: bool, what: str) -> None:
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


def finish() -> int:
    print("passed" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


def start_server(build: Path, repo: Path, *extra: str):
    """kiln-serve on free ports; returns (process, {"http", "metrics", "grpc"})."""
    server = subprocess.Popen([build / "bin" / "kiln-serve", f"--model-repository={repo}",
                               "--http-port=0", "--metrics-port=0", "--grpc-port=0", *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    m = re.search(r"http://127.0.0.1:(\d+) \(metrics on http://127.0.0.1:(\d+)/metrics, "
                  r"grpc on 127.0.0.1:(\d+)\)", line)
    if not m:
        print("FAIL kiln-serve did not start: " + line + server.stderr.read())
        server.kill()
        sys.exit(1)
    return server, {"http": int(m.group(1)), "metrics": int(m.group(2)), "grpc": int(m.group(3))}


def stop_server(server: subprocess.Popen) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        code = server.wait(timeout=20)
        check(code == 0, f"SIGTERM stops the server (exit {code})")
    except subprocess.TimeoutExpired:
        server.kill()
        check(False, "SIGTERM stops the server within 20 s")
