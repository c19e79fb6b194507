#!/usr/bin/python3
"""Runs docs/getting-started.md: every ```sh block, in order, as one bash
script (set -euo pipefail) from the source root, with HOME a fresh temporary
directory, BUILD the build directory under test, and the server's port 8000
replaced by a free one. Then checks what the walk-through promises appeared.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPECTED = [
    r"kiln-compile \d+\.\d+\.\d+ \(revision \S+\)",     # 2: --version
    r"Execution time report",                           # 4: --timing
    r"code object gfx942",
    r"logits: float32 \[1, 1000\]",                     # 5: kiln-run
    r"top-5 classes: \[",                               # 6: Python
    r"output logits float32 \[1, 1000\]",               # 7: the C example
    r"\"name\":\"mobilenet\"",                          # 8: model metadata
    r"^logits \[1, 1000\]$",                            # 8: inference
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    text = open(os.path.join(ROOT, "docs", "getting-started.md")).read()
    blocks = re.findall(r"^```sh\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    if len(blocks) < 8:
        sys.exit("FAIL: docs/getting-started.md has %d sh blocks" % len(blocks))
    port = str(free_port())
    script = ["set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"]
    for i, block in enumerate(blocks):
        script.append("echo '### block %d'" % (i + 1))
        script.append(re.sub(r"\b8000\b", port, block))
    with tempfile.TemporaryDirectory(prefix="kiln-getting-started-") as home:
        env = dict(os.environ, HOME=home, BUILD=os.path.abspath(args.build))
        env.pop("PYTHONPATH", None)
        result = subprocess.run(["bash", "-c", "\n".join(script)], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=1200)
    output = result.stdout + result.stderr
    if result.returncode != 0:
        sys.exit("FAIL: the walk-through stopped (exit %d); its output:\n%s" %
                 (result.returncode, output[-6000:]))
    missing = [p for p in EXPECTED if not re.search(p, output, re.MULTILINE)]
    if missing:
        sys.exit("FAIL: missing %s in\n%s" % (missing, output[-6000:]))
    print(output[-3000:])
    print("PASS: %d blocks" % len(blocks))


if __name__ == "__main__":
    main()
