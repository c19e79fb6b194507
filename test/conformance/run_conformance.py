#!/usr/bin/python3
"""The ONNX backend test suite (Debian's libonnx-testdata) through Kiln.

  /usr/bin/python3 test/conformance/run_conformance.py --build BUILD
      [--targets cpu,emu:gfx942,...] [--suites node,simple,...]
      [--jobs N] [--shard I/N] [--filter REGEX]
      [--check DIR] [--write-expected DIR] [--results FILE.json]
      [--report FILE.md --from-results A.json,B.json,...]

Every test of a suite (/usr/share/libonnx-testdata/data/SUITE/TEST: a
model.onnx and test_data_set_*/{input,output}_*.pb) is compiled once with
BUILD/bin/kiln-compile for all the targets asked for (cpu and the gfx chips of
the emu:<gfx> devices, with --emulation); when that fails, once per target,
so that each target gets its own verdict. Every data set is then run with
BUILD/bin/kiln-run on every device and each output compared with the
expected one:
  float outputs: |got - want| <= atol + rtol * |want| per element (the ONNX
      backend's defaults, rtol 1e-3, atol 1e-7), NaN where NaN is expected,
      infinities equal;
  integer and bool outputs: equal;
  dtype and shape: equal.
The outputs of a model that draws random numbers (Bernoulli, Multinomial,
RandomUniform*, RandomNormal*, or a Dropout whose training_mode is true) are
random draws: they are compared statistically instead (compare_random: shape,
dtype, support, range and mean within a tolerance for the sample size; a
Dropout output element by element as 0 or x / (1 - ratio)).

A test passes on a device when it compiles and every output of every data set
matches. When kiln-compile says an operand must be known at compile time and
names the graph input it comes from (a shape or axes given as an input), the
test is compiled again with --input-value pinning that input to the value all
its data sets give, as a user compiling ahead of time would; such passes are
counted and reported as pinned. A failure gets a category (the first word of its reason):
  unsupported-op, opset, dtype, shape-input, control-flow, sequence,
  compile-error, run-error, timeout, mismatch, crash, test-data
(test-data: the test's own data contradicts its model or the operator's
specification; each such test is named in TEST_DATA_ISSUES with the reason).

--check DIR compares the verdicts with the expected-failure lists
DIR/<device>.txt (one `TEST  CATEGORY: reason` per line, `#` comments): it
fails when a test not on the list fails (a regression) and when a listed test
passes (take it off the list), naming each. --write-expected DIR writes the
lists from this run instead. --results writes the verdicts as JSON; --report
renders docs/conformance.md from one or more such files.

Exit status: 0 ok, 1 check failed, 2 usage or set-up error.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

DATA = Path("/usr/share/libonnx-testdata/data")
SUITES = ["node", "simple", "pytorch-converted", "pytorch-operator"]
DEVICES = ["cpu", "emu:gfx942", "emu:gfx950", "emu:gfx1250", "emu:gfx1100", "emu:gfx1201"]
RTOL, ATOL = 1e-3, 1e-7
COMPILE_TIMEOUT, RUN_TIMEOUT = 600, 300


def fail_setup(message: str) -> None:
    print(f"run_conformance: {message}", file=sys.stderr)
    sys.exit(2)


try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:  # pragma: no cover
    fail_setup(f"needs python3-onnx and python3-numpy ({e}); run scripts/setup.sh")


def sanitize(name: str) -> str:
    """kiln-run's file name for an output (see tools/kiln-run)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "output"


# Tests whose data is wrong (ONNX 1.12's test generators), and why: a failure
# of these gets category "test-data" and this reason.
TEST_DATA_ISSUES = {
    "node/test_cast_FLOAT_to_BFLOAT16":
        "the expected bfloat16 values truncate the float32 ones; the Cast "
        "specification (and ONNX Runtime, and Kiln) rounds to nearest even",
    "node/test_castlike_FLOAT_to_BFLOAT16":
        "input 'like' is [1] where the model declares [3, 4], and the expected "
        "bfloat16 values truncate instead of rounding to nearest even",
    "node/test_castlike_FLOAT_to_BFLOAT16_expanded":
        "input 'like' is [1] where the model declares [3, 4], and the expected "
        "bfloat16 values truncate instead of rounding to nearest even",
    "node/test_castlike_BFLOAT16_to_FLOAT":
        "input 'like' is [1] where the model declares [3, 4]",
    "node/test_castlike_BFLOAT16_to_FLOAT_expanded":
        "input 'like' is [1] where the model declares [3, 4]",
}


def categorize(stage: str, message: str) -> str:
    """A failure's category, from the stage and Kiln's own diagnostic."""
    m = message.lower()
    first = first_error(message).lower()
    if stage == "compile":
        if first.startswith("unsupported "):
            return "unsupported-op"
        if "opset" in m and ("supports opsets" in m or "opset version" in m):
            return "opset"
        if re.search(r"\b(if|loop|scan)\b.*(subgraph|control flow)", m) or "subgraph" in m:
            return "control-flow"
        if "sequence" in m or "optional" in m:
            return "sequence"
        if "element type" in m or "data type" in m or "dtype" in m or "unsigned" in m:
            return "dtype"
        if "known at compile time" in m or "is not a constant" in m or "not constant" in m \
                or "--input-shape" in m or "--input-value" in m:
            return "shape-input"
        if "internal error" in m or "stack dump" in m or "signal" in m:
            return "crash"
        return "compile-error"
    if stage == "run":
        if "signal" in m or "stack dump" in m:
            return "crash"
        return "run-error"
    return stage


def first_error(text: str) -> str:
    """The first diagnostic line of a tool's output, without the file path."""
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if "error:" in line:
            message = line.split("error:", 1)[1].strip()
            if "unsupported ONNX operator" in message:
                # The operators follow, one node per line: name them.
                ops = []
                for node in lines[n + 1:]:
                    if not node.startswith("  "):
                        break
                    op = node.split()[0]
                    if op not in ops:
                        ops.append(op)
                message = "unsupported " + ", ".join(ops)
            return message
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[0].strip() if lines else "no output"


class Test:
    def __init__(self, suite: str, path: Path):
        self.suite = suite
        self.path = path
        self.name = path.name
        self.key = f"{suite}/{path.name}"

    def load(self):
        """Graph inputs, outputs and op types, and the data sets' files."""
        model = onnx.load(str(self.path / "model.onnx"), load_external_data=False)
        init = {t.name for t in model.graph.initializer}
        self.inputs = [i.name for i in model.graph.input if i.name not in init]
        self.outputs = [o.name for o in model.graph.output]
        # "tensor", "sequence" or "optional" per graph input and output.
        self.kinds = {v.name: v.type.WhichOneof("value").replace("_type", "")
                      for v in list(model.graph.input) + list(model.graph.output)}
        # The test data of ONNX 1.12 stores bfloat16 tensors as uint16 (their
        # bits): the model's element type says what they are.
        self.bfloat16 = {v.name for v in list(model.graph.input) + list(model.graph.output)
                         if v.type.WhichOneof("value") == "tensor_type"
                         and v.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16}
        ops = set()

        def walk(graph):
            for node in graph.node:
                ops.add(node.op_type if node.domain in ("", "ai.onnx")
                        else f"{node.domain}.{node.op_type}")
                for attr in node.attribute:
                    if attr.type == onnx.AttributeProto.GRAPH:
                        walk(attr.g)
                    for g in attr.graphs:
                        walk(g)
        walk(model.graph)
        self.ops = sorted(ops)
        self.datasets = sorted(p for p in self.path.glob("test_data_set_*") if p.is_dir())


def read_tensor(path: Path):
    """A TensorProto .pb file as (name, ndarray, dtype), or ("", None, 0) when
    it does not parse as one."""
    data = path.read_bytes()
    tensor = onnx.TensorProto()
    try:
        tensor.ParseFromString(data)
        if tensor.data_type == 0:
            raise ValueError("not a tensor")
        return tensor.name, numpy_helper.to_array(tensor), tensor.data_type
    except Exception:
        return "", None, 0


def read_value(path: Path, kind: str, graph_name: str):
    """A data set's .pb file holding a graph input or output of `kind`
    ("tensor", "sequence", "optional"; named `graph_name` when the file names
    none) as (name, parts, flags): parts are the
    (name, ndarray, dtype) tensors Kiln sees (a sequence's elements are
    NAME[i], an optional is its element or nothing) and flags what
    kiln-compile needs to know of the structure (--input-sequence-length,
    --input-absent, --input-shape of sequence elements). None when the file
    cannot be read."""
    if kind == "tensor":
        name, array, dtype = read_tensor(path)
        name = name or graph_name
        return None if array is None else (name, [(name, array, dtype)], [])
    data = path.read_bytes()

    def sequence(proto, name):
        parts, flags = [], [f"--input-sequence-length={name}={len(proto.tensor_values)}"]
        for i, t in enumerate(proto.tensor_values):
            array = numpy_helper.to_array(t)
            element = f"{name}[{i}]"
            parts.append((element, array, t.data_type))
            dims = "x".join(str(d) for d in array.shape) or "scalar"
            flags.append(f"--input-shape={element}={dims}")
        return parts, flags

    try:
        if kind == "sequence":
            proto = onnx.SequenceProto()
            proto.ParseFromString(data)
            if proto.elem_type != onnx.SequenceProto.TENSOR:
                return None
            name = proto.name or graph_name
            return (name, *sequence(proto, name))
        proto = onnx.OptionalProto()
        proto.ParseFromString(data)
        name = proto.name or graph_name
        if proto.elem_type == onnx.OptionalProto.TENSOR:
            t = proto.tensor_value
            return name, [(name, numpy_helper.to_array(t), t.data_type)], []
        if proto.elem_type == onnx.OptionalProto.SEQUENCE:
            return (name, *sequence(proto.sequence_value, name))
        return name, [], [f"--input-absent={name}"]
    except Exception:
        return None


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"


def compare(got: np.ndarray, want: np.ndarray, dtype: int) -> str | None:
    """None when got matches want, else why not."""
    if dtype == onnx.TensorProto.BFLOAT16:
        # numpy_helper gives bfloat16 as its raw uint16 bits (or ml_dtypes);
        # kiln-run writes bfloat16 outputs as exact float32.
        bits = np.asarray(want).view(np.uint16).astype(np.uint32) << 16
        want = bits.view(np.float32)
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype != got.dtype and dtype != onnx.TensorProto.BFLOAT16:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind in "fc" or dtype == onnx.TensorProto.BFLOAT16:
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        gnan, wnan = np.isnan(g), np.isnan(w)
        if (gnan != wnan).any():
            i = int(np.argmax((gnan != wnan).ravel()))
            return f"NaN mismatch at element {i}: got {g.ravel()[i]}, expected {w.ravel()[i]}"
        finite = ~wnan
        ginf, winf = np.isinf(g) & finite, np.isinf(w) & finite
        if (ginf != winf).any() or (g[winf] != w[winf]).any():
            return "infinities differ"
        ok = ~(finite & ~winf) | (np.abs(g - w) <= ATOL + RTOL * np.abs(w))
        if not ok.all():
            bad = int((~ok).sum())
            i = int(np.argmax((~ok).ravel()))
            return (f"{bad} of {w.size} elements off (rtol {RTOL}, atol {ATOL}); "
                    f"element {i}: got {g.ravel()[i]!r}, expected {w.ravel()[i]!r}")
        return None
    if not np.array_equal(got, want):
        bad = int((got != want).sum())
        i = int(np.argmax((got != want).ravel()))
        return f"{bad} of {want.size} elements differ; element {i}: got {got.ravel()[i]}, expected {want.ravel()[i]}"
    return None


RANDOM_OPS = {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike",
              "RandomUniform", "RandomUniformLike"}
# Statistical checks allow this many standard deviations.
SIGMAS = 4.5


def random_outputs(test: Test, inputs):
    """None when `test`'s model draws no random numbers; else {output name:
    x} for every graph output, x being the data input of the training-mode
    Dropout that produces the output (when that input is a graph input),
    None for the others. A Dropout is in training mode when its
    training_mode input is true in the data set, an initializer or a
    Constant node, or is computed."""
    random = any(op in RANDOM_OPS for op in test.ops)
    if not random and "Dropout" not in test.ops:
        return None
    model = onnx.load(str(test.path / "model.onnx"), load_external_data=False)
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    consts = {n.output[0]: n.attribute[0].t for n in graph.node
              if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"}
    given = {n: a for n, a, _ in inputs}

    def value(name):
        if name in given:
            return np.asarray(given[name])
        tensor = inits.get(name, consts.get(name))
        return None if tensor is None else numpy_helper.to_array(tensor)
    dropped = {}
    for node in graph.node:
        if node.op_type != "Dropout" or len(node.input) < 3 or not node.input[2]:
            continue
        mode = value(node.input[2])
        if mode is not None and not mode.any():
            continue
        random = True
        if node.input[0] in given:
            dropped[node.output[0]] = np.asarray(given[node.input[0]])
    if not random:
        return None
    return {o.name: dropped.get(o.name) for o in graph.output}


def compare_random(got: np.ndarray, want: np.ndarray, dtype: int, x=None) -> str | None:
    """None when `got` is a plausible draw of the distribution `want` was
    drawn from, else why not: the values are random, so they are compared by
    shape, dtype, support and moments, not per element.
      all: shape and dtype equal, every value finite;
      Dropout's output of input x: every element 0 or c * x, with c the
        scale the expected output shows (1 / (1 - ratio)), and the kept
        fraction within SIGMAS binomial deviations of 1 / c;
      bool, or only 0 and 1 expected (Bernoulli, Dropout's mask): every
        value 0 or 1;
      other floats: within the expected values' range widened by its width
        on both sides, and the standard deviation within a factor
        exp(SIGMAS * sqrt(1 / (2 (n - 1)) + 1 / (2 (m - 1)))) of the
        expected one;
      all but Dropout's output: the mean within SIGMAS standard errors of
        the difference of two independent sample means,
        sqrt(s_got^2 / n + s_want^2 / m) (not checked for a single draw).
    With ONNX's 10-element Bernoulli tests only gross errors fail the mean;
    the support check does the work there."""
    if dtype == onnx.TensorProto.BFLOAT16:
        # As in compare: the expected bfloat16 bits as exact float32.
        want = (np.asarray(want).view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype != got.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.size == 0:
        return None
    g = got.astype(np.float64).ravel()
    w = want.astype(np.float64).ravel()
    if not np.isfinite(g).all():
        return "non-finite values among random draws"
    if x is not None and x.shape == want.shape:
        xs = x.astype(np.float64).ravel()
        nonzero = (w != 0) & (xs != 0)
        if nonzero.any():
            c = float(np.median(w[nonzero] / xs[nonzero]))
        elif ((g != 0) & (xs != 0)).any():
            c = float(np.median(g[(g != 0) & (xs != 0)] / xs[(g != 0) & (xs != 0)]))
        else:
            return None  # nothing kept in either: no scale to check against
        scaled = c * xs
        ok = (g == 0) | (np.abs(g - scaled) <= ATOL + RTOL * np.abs(scaled))
        if not ok.all():
            i = int(np.argmax(~ok))
            return (f"{int((~ok).sum())} of {g.size} elements are neither 0 nor x * {c:.6g}; "
                    f"element {i}: got {g[i]!r}, x {xs[i]!r}")
        counted = xs != 0
        p = min(1.0, 1.0 / c)
        n = int(counted.sum())
        if n:
            kept = float((g[counted] != 0).mean())
            tol = SIGMAS * np.sqrt(p * (1 - p) / n) + 0.5 / n
            if abs(kept - p) > tol:
                return f"kept fraction {kept:.4g}, expected {p:.4g} +- {tol:.3g} (n = {n})"
        return None
    elif want.dtype == np.bool_ or np.isin(w, (0.0, 1.0)).all():
        outside = ~np.isin(g, (0.0, 1.0))
        if outside.any():
            return f"{int(outside.sum())} values are not 0 or 1, e.g. {g[np.argmax(outside)]!r}"
    elif g.size > 1:
        low, high = w.min(), w.max()
        width = high - low
        if (g < low - width).any() or (g > high + width).any():
            return (f"values in [{g.min():.6g}, {g.max():.6g}], expected within "
                    f"[{low - width:.6g}, {high + width:.6g}] (the expected range widened by its width)")
        sg, sw = g.std(ddof=1), w.std(ddof=1)
        if sw > 0:
            factor = np.exp(SIGMAS * np.sqrt(1 / (2 * (g.size - 1)) + 1 / (2 * (w.size - 1))))
            if not sw / factor <= sg <= sw * factor:
                return f"standard deviation {sg:.6g}, expected {sw:.6g} within a factor {factor:.3g}"
    n, m = g.size, w.size
    if n < 2:
        return None  # one draw: nothing to estimate a spread from
    se = np.sqrt(g.var(ddof=1) / n + w.var(ddof=1) / m)
    tol = SIGMAS * se + ATOL + RTOL * abs(w.mean())
    if abs(g.mean() - w.mean()) > tol:
        return f"mean {g.mean():.6g}, expected {w.mean():.6g} +- {tol:.3g} (n = {n})"
    return None


def chip(device: str) -> str:
    return "cpu" if device == "cpu" else device.split(":", 1)[1]


def value_text(array: np.ndarray) -> str:
    """An array as kiln-compile --input-value writes it: V1,V2,... row-major."""
    flat = np.asarray(array).ravel()
    if flat.dtype.kind not in "biuf":
        return None  # strings: nothing to pin
    if flat.dtype == np.bool_:
        return ",".join("true" if v else "false" for v in flat)
    if flat.dtype.kind in "iu":
        return ",".join(str(int(v)) for v in flat)
    return ",".join(repr(float(v)) for v in flat)


def pins_asked_for(text: str):
    """The graph inputs a kiln-compile diagnostic asks to pin with --input-value."""
    m = re.search(r"it is graph input '([^']*)': pin it with --input-value", text)
    if m:
        return [m.group(1)]
    m = re.search(r"it is computed from graph inputs? ((?:'[^']*'(?:, )?)+): pin", text)
    return re.findall(r"'([^']*)'", m.group(1)) if m else []


def shapes_asked_for(text: str):
    """The graph inputs a kiln-compile diagnostic asks to give a shape with --input-shape."""
    return re.findall(r"(?:pin it|give one) with --input-shape=([^=\s]*)=DIMS", text)


def compile_model(build: Path, test: Test, devices, out: Path, pins=None):
    """kiln-compile for `devices`. Inputs that must be known at compile time
    (a shape given as an input) are pinned with --input-value to the data
    sets' value when every data set gives the same one, as a user compiling
    the model ahead of time would; `pins` receives their names."""
    cmd = [str(build / "bin" / "kiln-compile"), str(test.path / "model.onnx"),
           "--target=" + ",".join(chip(d) for d in devices), "-o", str(out)]
    cmd += getattr(test, "flags", None) or []
    if any(d.startswith("emu:") for d in devices):
        cmd.append("--emulation")
    pinned, shaped = {}, {}
    while True:
        code, text = run(cmd + [f"--input-value={n}={v}" for n, v in pinned.items()]
                         + [f"--input-shape={n}={v}" for n, v in shaped.items()],
                         COMPILE_TIMEOUT)
        asked = [n for n in pins_asked_for(text) if n not in pinned] if code else []
        values = {n: test.values.get(n) for n in asked}
        # A dynamic dimension gets the data sets' shape when they agree, as
        # a user compiling ahead of time for that shape would give it.
        asked_shapes = [n for n in shapes_asked_for(text) if n not in shaped] if code else []
        shapes = {n: test.shapes.get(n) for n in asked_shapes}
        if (not asked and not asked_shapes) or any(
                v is None for v in list(values.values()) + list(shapes.values())):
            break
        pinned.update(values)
        shaped.update(shapes)
    if pins is not None:
        pins.extend(pinned)
    return code, text


def run_test(build: Path, test: Test, devices, work: Path) -> dict:
    """The verdict of `test` on every device: {device: {status, category, reason}}."""
    verdicts = {}
    wdir = work / test.suite / test.name
    shutil.rmtree(wdir, ignore_errors=True)
    wdir.mkdir(parents=True)
    try:
        test.load()
    except Exception as e:
        return {d: {"status": "fail", "category": "compile-error",
                    "reason": f"model does not load: {e}"} for d in devices}
    # Inputs and expected outputs of every data set, as .npy.
    sets = []
    test.flags = None
    for ds in test.datasets:
        inputs, outputs, absent = [], [], []
        bad = None
        for kind, names, dest in (("input", test.inputs, inputs), ("output", test.outputs, outputs)):
            files = sorted(ds.glob(f"{kind}_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
            flags = []
            for i, f in enumerate(files):
                graph_name = names[i] if i < len(names) else f"{kind}_{i}"
                value = read_value(f, test.kinds.get(graph_name, "tensor"), graph_name)
                if value is None:
                    bad = f"{ds.name}/{f.name} does not parse as the model's {kind} '{graph_name}'"
                    break
                name, parts, more = value
                if not parts:
                    absent.append(name)
                dest.extend(parts)
                flags.extend(more)
            if kind == "input":
                # The structure must be the same in every data set: one compile.
                if test.flags is not None and test.flags != flags:
                    bad = "the data sets give sequences of different structure"
                test.flags = flags
        if bad:
            return {d: {"status": "fail", "category": "sequence", "reason": bad} for d in devices}
        sdir = wdir / ds.name
        sdir.mkdir()
        # kiln-run takes a bfloat16 input as a uint16 .npy of its bits.
        for name, array, dtype in inputs:
            if dtype == onnx.TensorProto.BFLOAT16 or name in test.bfloat16:
                array = np.asarray(array).view(np.uint16)
            np.save(sdir / (sanitize(name) + ".in.npy"), array)
        outputs = [(n, a, onnx.TensorProto.BFLOAT16 if n in test.bfloat16 else d)
                   for n, a, d in outputs]
        sets.append((sdir, inputs, outputs, absent))

    # Inputs whose shape is the same in every data set can be given it.
    test.shapes = {}
    for name in {n for _, inputs, _, _ in sets for n, _, _ in inputs}:
        dims = {"x".join(str(d) for d in a.shape) or "scalar"
                for _, inputs, _, _ in sets for n, a, _ in inputs if n == name}
        if len(dims) == 1:
            test.shapes[name] = dims.pop()

    # Inputs whose value is the same in every data set can be pinned.
    test.values = {}
    for name in test.inputs:
        texts = set()
        for _, inputs, _, _ in sets:
            texts.update(value_text(a) for n, a, _ in inputs if n == name)
        if len(texts) == 1 and len(sets) > 0 and None not in texts:
            test.values[name] = texts.pop()

    # One compile for all devices; per device when that fails.
    artifacts = {}
    pins = []
    code, text = compile_model(build, test, devices, wdir / "model.kiln", pins)
    if code == 0:
        artifacts = {d: wdir / "model.kiln" for d in devices}
    elif len(devices) == 1:
        stage_fail = ("timeout", text) if code is None else ("compile", text)
        verdicts[devices[0]] = {"status": "fail",
                                "category": categorize(*stage_fail) if code is not None else "timeout",
                                "reason": first_error(text)}
    else:
        for d in devices:
            path = wdir / f"model.{sanitize(d)}.kiln"
            c, t = compile_model(build, test, [d], path, pins)
            if c == 0:
                artifacts[d] = path
            else:
                verdicts[d] = {"status": "fail",
                               "category": "timeout" if c is None else categorize("compile", t),
                               "reason": first_error(t)}
    for d, artifact in artifacts.items():
        verdict = {"status": "pass"}
        for sdir, inputs, outputs, absent in sets:
            odir = sdir / ("out." + sanitize(d))
            cmd = [str(build / "bin" / "kiln-run"), str(artifact), f"--device={d}",
                   f"--output-dir={odir}"]
            cmd += [f"--input={name}=@{sdir / (sanitize(name) + '.in.npy')}" for name, _, _ in inputs]
            c, t = run(cmd, RUN_TIMEOUT)
            if c != 0:
                verdict = {"status": "fail",
                           "category": "timeout" if c is None else
                           ("crash" if c < 0 else categorize("run", t)),
                           "reason": first_error(t) if c is not None else t}
                break
            why = None
            for name in absent:
                # An optional output without an element: Kiln has no output
                # of that name (nor sequence elements of it).
                if name in test.outputs and list(odir.glob(sanitize(name) + "*.npy")):
                    why = f"{sdir.name} output '{name}': expected an empty optional"
            drawn = random_outputs(test, inputs)
            for name, want, dtype in outputs:
                if why:
                    break
                f = odir / (sanitize(name) + ".npy")
                if not f.exists():
                    why = f"output '{name}' missing"
                    break
                if drawn is not None:
                    why = compare_random(np.load(f), want, dtype, drawn.get(name))
                else:
                    why = compare(np.load(f), want, dtype)
                if why:
                    why = f"{sdir.name} output '{name}': {why}"
                    break
            if why:
                verdict = {"status": "fail", "category": "mismatch", "reason": why}
                break
        if pins and verdict["status"] == "pass":
            verdict["pinned"] = sorted(set(pins))
        verdicts[d] = verdict
    for d, v in verdicts.items():
        if v["status"] == "fail" and test.key in TEST_DATA_ISSUES:
            v.update(category="test-data", reason=TEST_DATA_ISSUES[test.key])
    if all(v["status"] == "pass" for v in verdicts.values()):
        shutil.rmtree(wdir, ignore_errors=True)
    return verdicts


def discover(suites, pattern):
    tests = []
    for suite in suites:
        root = DATA / suite
        if not root.is_dir():
            fail_setup(f"{root} not found: install libonnx-testdata (scripts/setup.sh)")
        for p in sorted(root.iterdir()):
            if (p / "model.onnx").exists() and (not pattern or re.search(pattern, f"{suite}/{p.name}")):
                tests.append(Test(suite, p))
    return tests


def read_expected(path: Path) -> dict:
    expected = {}
    if not path.exists():
        return expected
    for n, line in enumerate(path.read_text().splitlines(), 1):
        # Comments are whole lines: a reason may quote a '#'.
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        expected[parts[0]] = parts[1] if len(parts) > 1 else ""
    return expected


def write_expected(path: Path, device: str, results: dict) -> None:
    lines = [f"# Expected failures of the ONNX backend suite on {device}: one test per line,",
             "# `SUITE/TEST  CATEGORY: reason`. Regenerate with",
             "#   make conformance-expected",
             "# A listed test that passes fails ctest's conformance run: take it off."]
    for key in sorted(results):
        v = results[key].get(device)
        if v and v["status"] != "pass":
            reason = v["reason"].replace("\n", " ")
            if len(reason) > 160:
                reason = reason[:157] + "..."
            lines.append(f"{key}  {v['category']}: {reason}")
    path.write_text("\n".join(lines) + "\n")


def render_report(results: dict, devices, out: Path, meta: dict) -> None:
    """docs/conformance.md from the verdicts (never edited by hand)."""
    suites = [s for s in SUITES if any(k.startswith(s + "/") for k in results)]
    lines = ["# ONNX backend conformance", "",
             "Generated by `make conformance` (test/conformance/run_conformance.py);",
             "do not edit. The tests are Debian's libonnx-testdata "
             f"({meta.get('tests', len(results))} tests: model, inputs and expected outputs), each",
             "compiled by kiln-compile and run by kiln-run on every device, every output",
             f"compared per element (rtol {RTOL}, atol {ATOL}; integers and bools equal).",
             f"Run on {meta.get('date', '')}, {meta.get('seconds', 0):.0f} s on {os.cpu_count()} cores.",
             "", "## Pass rate", "",
             "| suite | tests | " + " | ".join(devices) + " |",
             "|---|---:|" + "---:|" * len(devices)]

    def rate(keys, d):
        passed = sum(1 for k in keys if results[k].get(d, {}).get("status") == "pass")
        return f"{passed} ({100.0 * passed / max(1, len(keys)):.1f}%)"
    def out_of_scope(key):
        """String tensors and the ai.onnx.preview.training ops (the issue's scope)."""
        ops = meta["ops"].get(key, [])
        if any(op == "StringNormalizer" or op.startswith("ai.onnx.preview.training")
               for op in ops):
            return True
        return any("STRING" in v.get("reason", "")
                   for v in results[key].values())
    for s in suites + ["all"]:
        keys = [k for k in results if s == "all" or k.startswith(s + "/")]
        lines.append(f"| {s} | {len(keys)} | " + " | ".join(rate(keys, d) for d in devices) + " |")
    in_scope = [k for k in results if not out_of_scope(k)]
    lines.append(f"| all in scope | {len(in_scope)} | " +
                 " | ".join(rate(in_scope, d) for d in devices) + " |")
    pinned = {d: sum(1 for r in results.values() if r.get(d, {}).get("pinned")) for d in devices}
    lines += ["", "Of the passes, these compiled with inputs pinned by `--input-value` (a shape,",
              "axes or count given as a graph input, pinned to the value every data set gives,",
              "as a user compiling the model ahead of time would): " +
              ", ".join(f"{d} {n}" for d, n in pinned.items()) + "."]
    lines += ["", "## Failures by category", "",
              "| category | " + " | ".join(devices) + " |", "|---|" + "---:|" * len(devices)]
    cats = sorted({v["category"] for r in results.values() for v in r.values() if v["status"] != "pass"})
    for c in cats:
        lines.append(f"| {c} | " + " | ".join(
            str(sum(1 for r in results.values() if r.get(d, {}).get("status") == "fail"
                    and r[d]["category"] == c)) for d in devices) + " |")
    lines += ["", "Out of scope (excluded from \"all in scope\"): string tensors (StringNormalizer,",
              "casts from and to STRING); the ai.onnx.preview.training ops (Gradient, Adagrad,",
              "Adam, Momentum, whose models import only that domain). Category `test-data`: the",
              "test's own data contradicts its model or the specification (the reason says how;",
              "they count as failures).", "",
              "## Operators", "",
              "A test counts for every operator its graph holds; passed/total per device.", "",
              "| operator | " + " | ".join(devices) + " |", "|---|" + "---:|" * len(devices)]
    ops = {}
    for k, r in results.items():
        for op in meta["ops"].get(k, []):
            ops.setdefault(op, []).append(k)
    for op in sorted(ops):
        keys = ops[op]
        lines.append(f"| {op} | " + " | ".join(
            f"{sum(1 for k in keys if results[k].get(d, {}).get('status') == 'pass')}/{len(keys)}"
            for d in devices) + " |")
    out.write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", type=Path, required=False)
    ap.add_argument("--targets", default="cpu")
    ap.add_argument("--suites", default=",".join(SUITES))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--filter", default="")
    ap.add_argument("--check", type=Path)
    ap.add_argument("--write-expected", type=Path)
    ap.add_argument("--results", type=Path)
    ap.add_argument("--report", type=Path)
    ap.add_argument("--from-results", default="")
    ap.add_argument("--work", type=Path)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    devices = [d.strip() for d in args.targets.split(",") if d.strip()]
    for d in devices:
        if d not in DEVICES:
            fail_setup(f"unknown device '{d}' (known: {', '.join(DEVICES)})")

    if args.from_results:
        results, meta = {}, {"ops": {}, "seconds": 0.0}
        for f in args.from_results.split(","):
            data = json.loads(Path(f).read_text())
            for k, v in data["results"].items():
                results.setdefault(k, {}).update(v)
            meta["ops"].update(data["ops"])
            meta["seconds"] += data["seconds"]
            meta["date"] = data["date"]
        meta["tests"] = len(results)
        render_report(results, devices, args.report, meta)
        print(f"wrote {args.report}")
        return 0

    if not args.build:
        fail_setup("--build is required")
    build = args.build.resolve()
    for tool in ("kiln-compile", "kiln-run"):
        if not (build / "bin" / tool).exists():
            fail_setup(f"{build / 'bin' / tool} not built")
    shard, shards = (int(x) for x in args.shard.split("/"))
    tests = discover([s for s in args.suites.split(",") if s], args.filter)
    tests = [t for i, t in enumerate(tests) if i % shards == shard]
    work = (args.work or build / "conformance" / f"shard{shard}").resolve()
    work.mkdir(parents=True, exist_ok=True)

    start = time.time()
    results, ops = {}, {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_test, build, t, devices, work): t for t in tests}
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            t = futures[fut]
            results[t.key] = fut.result()
            ops[t.key] = getattr(t, "ops", [])
            if args.verbose:
                summary = " ".join(f"{d}={v['status']}" for d, v in results[t.key].items())
                print(f"[{n}/{len(tests)}] {t.key}: {summary}", flush=True)
    seconds = time.time() - start

    for s in SUITES:
        keys = [k for k in results if k.startswith(s + "/")]
        if not keys:
            continue
        for d in devices:
            passed = sum(1 for k in keys if results[k][d]["status"] == "pass")
            print(f"{d:12} {s:18} {passed} passed, {len(keys) - passed} failed")
    print(f"{len(tests)} tests on {len(devices)} devices in {seconds:.0f} s")

    if args.results:
        args.results.write_text(json.dumps({
            "date": datetime.date.today().isoformat(), "seconds": seconds,
            "devices": devices, "results": results, "ops": ops}, indent=1, sort_keys=True))
    if args.write_expected:
        args.write_expected.mkdir(parents=True, exist_ok=True)
        for d in devices:
            path = args.write_expected / (sanitize(d) + ".txt")
            # Keep the entries of tests this run did not cover (other shards).
            old = read_expected(path)
            merged = {k: {d: {"status": "fail", "category": v.split(":", 1)[0],
                              "reason": v.split(":", 1)[1].strip() if ":" in v else ""}}
                      for k, v in old.items() if k not in results}
            merged.update(results)
            write_expected(path, d, merged)
        print(f"wrote expected-failure lists to {args.write_expected}")
    if args.check:
        problems = []
        for d in devices:
            expected = read_expected(args.check / (sanitize(d) + ".txt"))
            for k in sorted(results):
                v = results[k][d]
                if v["status"] != "pass" and k not in expected:
                    problems.append(f"{d}: {k} fails and is not on the list "
                                    f"({v['category']}: {v['reason']})")
                elif v["status"] == "pass" and k in expected:
                    problems.append(f"{d}: {k} passes now: take it off "
                                    f"{args.check / (sanitize(d) + '.txt')}")
        for p in problems:
            print(p)
        if problems:
            print(f"{len(problems)} differences from the expected-failure lists")
            return 1
        print("as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
