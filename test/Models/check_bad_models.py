"""Feeds kiln-compile truncated and corrupted copies of a real exported model.

Every copy must either import (a flipped byte inside weight data is still a
valid model) or fail with exit code 1 and exactly one `error:` line, and
never crash (a signal, a stack dump, or any other exit code). Truncations
that cut into the protobuf structure must be rejected.

usage: check_bad_models.py KILN_COMPILE MODEL.onnx WORKDIR
"""
import os
import random
import subprocess
import sys


def run(tool, path):
    r = subprocess.run([tool, path, "--elide-weights", "-o", os.devnull],
                       capture_output=True)
    return r.returncode, r.stderr.decode("utf-8", errors="replace")


def check_clean_failure(code, err, what):
    assert code in (0, 1), f"{what}: exit code {code}, stderr:\n{err}"
    assert "Stack dump" not in err and "PLEASE submit" not in err, \
        f"{what}: crashed:\n{err}"
    if code == 1:
        errors = [l for l in err.splitlines() if ": error: " in l]
        assert len(errors) == 1, f"{what}: expected one error line, got:\n{err}"


def main():
    tool, model, workdir = sys.argv[1:4]
    os.makedirs(workdir, exist_ok=True)
    data = open(model, "rb").read()
    rng = random.Random(20261129)
    variant = os.path.join(workdir, "variant.onnx")
    rejected = accepted = 0

    # Truncations: all of them cut a length-delimited field, so all must fail.
    for fraction in (0.0, 0.001, 0.01, 0.25, 0.5, 0.9, 0.999):
        with open(variant, "wb") as f:
            f.write(data[: int(len(data) * fraction)])
        code, err = run(tool, variant)
        check_clean_failure(code, err, f"truncated to {fraction:.1%}")
        assert code == 1, f"truncated to {fraction:.1%} was accepted"
        rejected += 1

    # Corruptions: random byte runs overwritten anywhere, and in the first
    # kilobytes where the graph structure usually lives.
    for i in range(60):
        blob = bytearray(data)
        limit = len(blob) if i % 2 else min(len(blob), 4096)
        at = rng.randrange(limit)
        for j in range(rng.randint(1, 16)):
            if at + j < len(blob):
                blob[at + j] = rng.randrange(256)
        with open(variant, "wb") as f:
            f.write(blob)
        code, err = run(tool, variant)
        check_clean_failure(code, err, f"corruption {i} at byte {at}")
        rejected += code == 1
        accepted += code == 0
    os.remove(variant)
    print(f"{os.path.basename(model)}: {rejected} bad copies rejected cleanly, "
          f"{accepted} still valid models imported, no crash")


if __name__ == "__main__":
    main()
