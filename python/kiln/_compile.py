"""kiln.compile: the kiln-compile driver run as a subprocess."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ._errors import CompileError
from ._kiln import Artifact

# Keyword options that are not kiln-compile flags spelled with dashes.
_RENAMED = {
    "input_shapes": "input-shape",
    "input_values": "input-value",
    "input_sequence_lengths": "input-sequence-length",
}
# Flags kiln.compile sets itself.
_RESERVED = {
    "target": "pass targets=[...]",
    "targets": "pass targets=[...]",
    "o": "pass output=PATH",
    "emit": "kiln.compile always writes an artifact; run kiln-compile --emit=... for IR",
}
# Options whose dict values are shapes: {"x": [1, 3, 224, 224]} -> x=1x3x224x224.
_SHAPE_OPTIONS = {"input_shapes"}


def _value_text(key, value):
    if isinstance(value, (list, tuple)):
        separator = "x" if key in _SHAPE_OPTIONS else ","
        return separator.join(_value_text(key, v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def compile_flags(**options):
    """The kiln-compile flags for keyword options (see kiln.compile)."""
    flags = []
    for key, value in options.items():
        if key in _RESERVED:
            raise TypeError(f"kiln.compile: option {key!r}: {_RESERVED[key]}")
        flag = "--" + _RENAMED.get(key, key.replace("_", "-"))
        if value is None:
            continue
        if value is True:
            flags.append(flag)
        elif value is False:
            flags.append(f"{flag}=false")
        elif isinstance(value, dict):
            # Repeatable NAME=VALUE options.
            flags += [f"{flag}={name}={_value_text(key, v)}" for name, v in value.items()]
        elif isinstance(value, (list, tuple, set, frozenset)) and key == "input_absent":
            flags += [f"{flag}={name}" for name in value]
        else:
            flags.append(f"{flag}={_value_text(key, value)}")
    return flags


def find_kiln_compile():
    """The kiln-compile executable: $KILN_COMPILE; the installed one next to
    this package (<prefix>/bin for <prefix>/lib/python3/dist-packages/kiln);
    the build tree's (<build>/bin for <build>/python/kiln); or the PATH's."""
    env = os.environ.get("KILN_COMPILE")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise CompileError(f"KILN_COMPILE={env} is not an executable file")
        return env
    package = Path(__file__).resolve().parent
    candidates = [package.parents[3] / "bin" / "kiln-compile",
                  package.parents[1] / "bin" / "kiln-compile"]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("kiln-compile")
    if found:
        return found
    searched = ", ".join(str(c) for c in candidates)
    raise CompileError("kiln-compile not found: set KILN_COMPILE, or install it "
                       f"(Debian package kiln-compiler); searched {searched} and the PATH")


def _is_model_proto(model):
    return hasattr(model, "SerializeToString") and hasattr(model, "graph")


def compile(model, targets=("cpu",), output=None, *, verbose=False, **options):
    """Compiles an ONNX model with kiln-compile and returns the kiln.Artifact.

    model: a path (str or os.PathLike) to a .onnx or .onnxtxt file, an
        onnx.ModelProto, or the bytes of a serialized ONNX model.
    targets: "cpu", gfx names or chips ("gfx942", "mi300x"), a list of them,
        or one comma-separated str (kiln-compile --target).
    output: where to write the .kiln file; None keeps it in memory only (it
        is written to a temporary directory, read back and deleted).
    verbose: print kiln-compile's output (its reports) on stderr.
    options: kiln-compile flags by keyword, underscores for dashes:
        precision="f16" -> --precision=f16, emulation=True -> --emulation,
        batch_sizes=[1, 4] -> --batch-sizes=1,4,
        input_shapes={"x": [1, 3, 224, 224]} -> --input-shape=x=1x3x224x224,
        input_values={"rate": 16000} -> --input-value=rate=16000,
        input_absent=["mask"] -> --input-absent=mask; False -> --flag=false;
        None leaves a flag out. kiln-compile rejects unknown ones.

    A failed compile raises kiln.CompileError with kiln-compile's diagnostics.
    """
    if isinstance(targets, str):
        targets = [targets]
    targets = [str(t) for t in targets]
    if not targets:
        raise ValueError("kiln.compile: targets is empty (e.g. targets=['cpu'])")
    flags = compile_flags(**options)
    exe = find_kiln_compile()

    with tempfile.TemporaryDirectory(prefix="kiln-compile-") as work:
        work = Path(work)
        if _is_model_proto(model):
            model_path = work / "model.onnx"
            model_path.write_bytes(model.SerializeToString())
            stem = re.sub(r"[^A-Za-z0-9._-]", "_", model.graph.name) or "model"
            label = f"the onnx.ModelProto {model.graph.name!r}"
        elif isinstance(model, (bytes, bytearray, memoryview)):
            model_path = work / "model.onnx"
            model_path.write_bytes(bytes(model))
            stem = "model"
            label = "the ONNX model bytes"
        elif isinstance(model, (str, os.PathLike)):
            model_path = os.fspath(model)
            if isinstance(model_path, bytes):
                model_path = os.fsdecode(model_path)
            if model_path.startswith("-"):  # no option to kiln-compile
                model_path = os.path.join(".", model_path)
            stem = Path(model_path).stem
            label = model_path
        else:
            raise TypeError("kiln.compile: model must be a path, an onnx.ModelProto or "
                            f"the bytes of an ONNX model, got {type(model).__name__}")
        out_path = Path(output) if output is not None else work / f"{stem}.kiln"
        command = [exe, str(model_path), "--target=" + ",".join(targets), *flags,
                   "-o", str(out_path)]
        try:
            proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            raise CompileError(f"cannot run {exe}: {e}", command=command) from e
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
        if verbose:
            sys.stderr.write(stdout + stderr)
        if proc.returncode != 0:
            diagnostics = stderr.strip() or stdout.strip()
            raise CompileError(f"kiln-compile failed on {label} (exit status "
                               f"{proc.returncode}):\n{diagnostics}",
                               diagnostics=stderr, returncode=proc.returncode, command=command)
        if not out_path.is_file():
            raise CompileError(f"kiln-compile exited 0 but wrote no {out_path}",
                               diagnostics=stderr, returncode=proc.returncode, command=command)
        if output is not None:
            return Artifact(out_path)
        return Artifact.from_bytes(out_path.read_bytes(), name=f"{stem}.kiln")
