#!/usr/bin/python3
"""Tests of the Python bindings (import kiln), with the standard library's unittest.

  PYTHONPATH=build/python KILN_BUILD=build /usr/bin/python3 test/python/test_kiln.py [-v] [-k NAME]

(ctest -R python runs it.) Models: examples/tiny_cnn.onnxtxt, and small ones
built here with onnx.helper from a seeded generator: an MLP (MatMul, Add,
Relu, Softmax; two outputs), NonZero (an output whose size each run
decides), and bfloat16 casts. They are compiled with kiln.compile and checked:

- against ONNX Runtime (bench/ort/ort_run.js, onnxruntime-node; scripts/setup.sh
  installs it; missing, these tests fail) per element, rtol 1e-5, atol 1e-6;
- bit for bit against kiln-run on the same input (.npy files);
- no copies: outputs are arrays of their own that the runtime filled; a
  C-contiguous input is not copied (tracemalloc sees no allocation of its
  size during the run) while a strided one is converted once, to the same
  answer;
- every error path: status codes and exception classes, messages that name
  the input, file or device; wrong Python types raise TypeError;
- emulated gfx942 against cpu, batch buckets, two Python threads at once.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import unittest
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KILN_BUILD", ROOT / "build")).resolve()
if "PYTHONPATH" not in os.environ:
    sys.path.insert(0, str(BUILD / "python"))

import kiln  # noqa: E402
import onnx  # noqa: E402
import onnx.parser  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ORT_RUN = ROOT / "bench" / "ort" / "ort_run.js"
RTOL, ATOL = 1e-5, 1e-6
WORK = None  # the temporary directory of this run (setUpModule)


def setUpModule():
    global WORK
    WORK = Path(tempfile.mkdtemp(prefix="kiln-python-test-"))


def tearDownModule():
    if os.environ.get("KILN_KEEP_TEST_FILES"):
        print(f"test files kept in {WORK}", file=sys.stderr)
    else:
        shutil.rmtree(WORK, ignore_errors=True)


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


# --- models ---------------------------------------------------------------

def tiny_cnn():
    return onnx.parser.parse_model((ROOT / "examples" / "tiny_cnn.onnxtxt").read_text())


def mlp(batch=16, features=512, hidden=128, classes=10, seed=7):
    """x[batch, features] -> logits (MatMul, Add, Relu, MatMul, Add) and
    probabilities (Softmax). `batch` may be a str: a symbolic dimension."""
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((features, hidden)) / np.sqrt(features)).astype(np.float32)
    b1 = rng.standard_normal(hidden).astype(np.float32) * 0.1
    w2 = (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32)
    b2 = rng.standard_normal(classes).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["l"]),
        helper.make_node("Add", ["l", "b2"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, features])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes]),
         helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [batch, classes])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
         numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mlp_reference(model, x):
    """The MLP in float64 numpy."""
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    h = np.maximum(x.astype(np.float64) @ w["w1"] + w["b1"], 0)
    logits = h @ w["w2"] + w["b2"]
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return {"logits": logits, "probabilities": e / e.sum(-1, keepdims=True)}


def nonzero_model():
    """x[3, 5] -> indices of x > 0: int64[2, N], N <= 15 decided per run."""
    nodes = [helper.make_node("Greater", ["x", "zero"], ["positive"]),
             helper.make_node("NonZero", ["positive"], ["indices"])]
    graph = helper.make_graph(
        nodes, "nonzero",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("indices", TensorProto.INT64, [2, None])],
        [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def bf16_model():
    """b (bfloat16[2, 8]) -> widened (float32, b exactly); x (float32[2, 8]) ->
    narrowed (bfloat16, x rounded to nearest even)."""
    nodes = [helper.make_node("Cast", ["b"], ["widened"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["x"], ["narrowed"], to=TensorProto.BFLOAT16)]
    graph = helper.make_graph(
        nodes, "bf16",
        [helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [2, 8]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("widened", TensorProto.FLOAT, [2, 8]),
         helper.make_tensor_value_info("narrowed", TensorProto.BFLOAT16, [2, 8])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def scale_model():
    """x (float32[4, 6]) times s (a float32 scalar input) -> y."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "s"], ["y"])], "scale",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def bf16_round(x):
    """float32 -> bfloat16 bits, rounded to nearest even (x finite)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


# --- references -----------------------------------------------------------

def run_ort(model, inputs, name):
    """ONNX Runtime's outputs (bench/ort/ort_run.js) for `inputs`."""
    d = WORK / f"ort-{name}"
    d.mkdir()
    onnx.save(model, d / "model.onnx")
    args = []
    for key, value in inputs.items():
        np.save(d / f"{sanitize(key)}.in.npy", value)
        args += ["--input", f"{key}={d / (sanitize(key) + '.in.npy')}"]
    node = os.environ.get("KILN_NODE") or shutil.which("node") or "/usr/bin/node"
    if not (ROOT / "bench/ort/node_modules/onnxruntime-node").is_dir():
        raise AssertionError("onnxruntime-node is not installed: run scripts/setup.sh "
                             "(or `npm ci --ignore-scripts` in bench/ort)")
    proc = subprocess.run([node, ORT_RUN, d / "model.onnx", *args, "--output-dir", d / "out"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"ort_run.js failed ({proc.returncode}): {proc.stderr}")
    return {o.name: np.load(d / "out" / f"{sanitize(o.name)}.npy") for o in model.graph.output}


def run_kiln_run(artifact_path, inputs, name, device="cpu", threads=1):
    """kiln-run's outputs (.npy files) for `inputs`."""
    d = WORK / f"kiln-run-{name}"
    d.mkdir()
    args = []
    for key, value in inputs.items():
        path = d / f"{sanitize(key)}.in.npy"
        np.save(path, value)
        args.append(f"--input={key}=@{path}")
    proc = subprocess.run([BUILD / "bin" / "kiln-run", artifact_path, f"--device={device}",
                           f"--threads={threads}", *args, f"--output-dir={d / 'out'}"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"kiln-run failed ({proc.returncode}): {proc.stderr}")
    return {p.stem: np.load(p) for p in (d / "out").glob("*.npy")}


_cache = {}


def compiled(key, build, **options):
    """kiln.compile(build(), **options) once per key; returns (model, artifact path)."""
    if key not in _cache:
        model = build()
        path = WORK / f"{key}.kiln"
        kiln.compile(model, output=path, **options)
        _cache[key] = (model, path)
    return _cache[key]


def cpu_device():
    return kiln.Device("cpu", threads=1)


# --- tests ----------------------------------------------------------------

class ModuleTest(unittest.TestCase):
    def test_version_is_the_runtime_header_s(self):
        header = (ROOT / "runtime/include/kiln/runtime.h").read_text()
        parts = [re.search(rf"#define KILN_VERSION_{p} (\d+)", header).group(1)
                 for p in ("MAJOR", "MINOR", "PATCH")]
        self.assertEqual(kiln.__version__, ".".join(parts))
        self.assertTrue(kiln.__revision__)

    def test_classes_live_in_the_package(self):
        for cls in (kiln.Artifact, kiln.Device, kiln.Session, kiln.TensorInfo):
            self.assertEqual(cls.__module__, "kiln")
        self.assertTrue(issubclass(kiln.InvalidArgumentError, kiln.Error))
        self.assertTrue(issubclass(kiln.InvalidArgumentError, ValueError))
        self.assertTrue(issubclass(kiln.FileError, OSError))
        self.assertFalse(issubclass(kiln.CompileError, kiln.Error))

    def test_status_codes_are_the_header_s(self):
        header = (ROOT / "runtime/include/kiln/runtime.h").read_text()
        for name, value in re.findall(r"KILN_STATUS_([A-Z_]+) = (\d+)", header):
            self.assertEqual(int(kiln.StatusCode[name]), int(value), name)
        self.assertEqual(kiln._kiln.status_code_description(2), "i/o error")

    def test_extension_links_no_llvm_or_mlir(self):
        readelf = shutil.which("readelf")
        if not readelf:
            self.skipTest("readelf (binutils) not installed")
        dynamic = subprocess.run([readelf, "-d", kiln._kiln.__file__], capture_output=True,
                                 text=True, check=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", dynamic)
        self.assertTrue(needed)
        for lib in needed:
            self.assertNotRegex(lib, r"LLVM|MLIR|python", f"_kiln links {lib}")

    def test_compile_flags(self):
        self.assertEqual(
            kiln.compile_flags(precision="f16", emulation=True, batch_sizes=[1, 4],
                               input_shapes={"x": [1, 3, 224, 224], "y": "2x2"},
                               input_values={"rate": 16000, "shape": (1, 3)},
                               input_absent=["mask"], elide_weights=False,
                               calibration=Path("/samples"), quantize=None),
            ["--precision=f16", "--emulation", "--batch-sizes=1,4",
             "--input-shape=x=1x3x224x224", "--input-shape=y=2x2",
             "--input-value=rate=16000", "--input-value=shape=1,3",
             "--input-absent=mask", "--elide-weights=false", "--calibration=/samples"])
        with self.assertRaisesRegex(TypeError, "targets="):
            kiln.compile_flags(target="cpu")
        with self.assertRaisesRegex(TypeError, "output="):
            kiln.compile_flags(o="x.kiln")


class InfoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model, cls.path = compiled("tiny_cnn", tiny_cnn)
        cls.artifact = kiln.Artifact(cls.path)

    def test_artifact(self):
        a = self.artifact
        self.assertEqual(a.name, str(self.path))
        self.assertEqual(a.targets, ["cpu"])
        self.assertEqual([p.name for p in a.programs], ["main"])
        self.assertEqual(a.programs[0].batch_size, 0)
        self.assertEqual(a.batch_sizes, [])
        self.assertEqual(a.pinned_inputs, {})
        self.assertIn("--target=cpu", a.options)
        self.assertIn("kiln.Artifact(", repr(a))
        # What kiln-run reads from the same file.
        info = subprocess.run([BUILD / "bin" / "kiln-run", self.path, "--print-info"],
                              capture_output=True, text=True, check=True).stdout
        field = lambda pattern: re.search(pattern, info, re.M).group(1)  # noqa: E731
        self.assertEqual(a.producer, field(r"^producer: (.*)$"))
        self.assertEqual(a.model, field(r"^model: (.*)$"))
        self.assertEqual(a.constants_size, int(field(r"^constants: (\d+) bytes")))
        self.assertEqual(a.programs[0].arena_size, int(field(r"'main': arena (\d+) bytes")))
        self.assertEqual(a.programs[0].dispatch_count, int(field(r"(\d+) dispatches")))

    def test_tensor_info(self):
        (image,) = self.artifact.inputs
        (probabilities,) = self.artifact.outputs
        self.assertEqual(image.name, "image")
        self.assertEqual(image.dtype, np.dtype(np.float32))
        self.assertEqual(image.dtype_name, "float32")
        self.assertEqual(image.shape, (1, 3, 8, 8))
        self.assertEqual(image.byte_size, 1 * 3 * 8 * 8 * 4)
        self.assertIsNone(image.extent_axis)
        self.assertEqual((probabilities.name, probabilities.shape), ("probabilities", (1, 4)))
        self.assertEqual(repr(image),
                         "TensorInfo(name='image', dtype='float32', shape=(1, 3, 8, 8))")

    def test_device(self):
        d = kiln.Device("cpu", threads=2)
        self.assertEqual((d.name, d.target, d.thread_count), ("cpu", "cpu", 2))
        self.assertEqual(repr(d), "kiln.Device('cpu', threads=2)")
        self.assertGreaterEqual(kiln.Device().thread_count, 1)
        # Pinned to one CPU: one thread per listed CPU.
        cpu = min(os.sched_getaffinity(0))
        self.assertEqual(kiln.Device("cpu", cpus=str(cpu)).thread_count, 1)
        with self.assertRaisesRegex(kiln.InvalidArgumentError,
                                    "cpu list '1023': CPU 1023 is not one this process"):
            kiln.Device("cpu", cpus="1023")

    def test_run_timeout(self):
        sys.path.insert(0, str(ROOT / "test" / "Runtime" / "Inputs"))
        import make_loop_model
        with tempfile.TemporaryDirectory() as tmp:
            make_loop_model.write(Path(tmp))
            path = Path(tmp) / "loop.kiln"
            kiln.compile(str(Path(tmp) / "loop.onnx"), "cpu", str(path))
            s = kiln.Session(path, cpu_device(), run_timeout_ms=100)
            x = np.load(Path(tmp) / "x.npy")
            self.assertEqual(s.run({"n": np.array(5), "x": x})["y"].tolist(),
                             [5.5, 4.0, 7.0, 5.0])
            with self.assertRaises(kiln.DeadlineExceededError) as caught:
                s.run({"n": np.array(10**12), "x": x})
            self.assertEqual(caught.exception.code, kiln.StatusCode.DEADLINE_EXCEEDED)
            self.assertIn("the run passed its time limit of 100 ms", str(caught.exception))
            self.assertTrue(issubclass(kiln.DeadlineExceededError, TimeoutError))

    def test_session(self):
        s = kiln.Session(self.artifact, cpu_device())
        self.assertIs(s.artifact, self.artifact)
        self.assertEqual(s.program.name, "main")
        self.assertEqual([i.name for i in s.inputs], ["image"])
        self.assertEqual(len(s.dispatches), self.artifact.programs[0].dispatch_count)
        self.assertTrue(all(d.name.startswith("dispatch_") for d in s.dispatches))
        # A path and a device spec work too.
        s2 = kiln.Session(str(self.path), "cpu")
        self.assertEqual(s2.device.name, "cpu")

    def test_profile(self):
        s = kiln.Session(self.artifact, cpu_device(), profile=True)
        x = np.zeros((1, 3, 8, 8), np.float32)
        for _ in range(3):
            s.run({"image": x})
        p = s.profile()
        self.assertEqual(p["runs"], 3)
        self.assertEqual(len(p["dispatch_ns"]), len(s.dispatches))
        self.assertGreater(sum(p["dispatch_ns"]), 0)
        s.reset_profile()
        self.assertEqual(s.profile()["runs"], 0)
        with self.assertRaisesRegex(kiln.InvalidArgumentError, "profiling is not enabled"):
            kiln.Session(self.artifact, cpu_device()).profile()


class ReferenceTest(unittest.TestCase):
    """Outputs against ONNX Runtime and kiln-run."""

    def check_model(self, key, build, inputs):
        model, path = compiled(key, build, targets=["cpu"])
        session = kiln.Session(kiln.Artifact(path), cpu_device())
        got = session.run(inputs)
        self.assertEqual(list(got), [o.name for o in model.graph.output])
        ort = run_ort(model, inputs, key)
        for name, ref in ort.items():
            self.assertEqual(got[name].dtype, ref.dtype, name)
            self.assertEqual(got[name].shape, ref.shape, name)
            np.testing.assert_allclose(got[name], ref, rtol=RTOL, atol=ATOL,
                                       err_msg=f"{key}: {name} vs ONNX Runtime")
        cli = run_kiln_run(path, inputs, key)
        for name, value in got.items():
            np.testing.assert_array_equal(value, cli[sanitize(name)],
                                          err_msg=f"{key}: {name} vs kiln-run")
        return got

    def test_tiny_cnn(self):
        x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
        self.check_model("tiny_cnn", tiny_cnn, {"image": x})

    def test_mlp(self):
        x = np.random.default_rng(2).standard_normal((16, 512)).astype(np.float32)
        self.check_model("mlp", mlp, {"x": x})


class ZeroCopyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        _, path = compiled("mlp", mlp)
        cls.session = kiln.Session(kiln.Artifact(path), cpu_device())
        cls.x = np.random.default_rng(3).standard_normal((16, 512)).astype(np.float32)

    def test_outputs_are_arrays_of_their_own(self):
        a = self.session.run({"x": self.x})
        b = self.session.run({"x": self.x})
        for name in a:
            # Memory of its own (a capsule frees it), 64-byte aligned so the
            # cpu session writes it in place: no array's view.
            self.assertNotIsInstance(a[name].base, np.ndarray, name)
            self.assertEqual(a[name].ctypes.data % 64, 0, name)
            self.assertTrue(a[name].flags.c_contiguous and a[name].flags.writeable, name)
            self.assertFalse(np.shares_memory(a[name], b[name]), name)
            np.testing.assert_array_equal(a[name], b[name])
        self.assertFalse(np.shares_memory(a["logits"], a["probabilities"]))

    def peak_allocation(self, inputs):
        """The largest memory numpy allocated at once during one run."""
        self.session.run(inputs)  # warm: nothing lazily allocated below
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            result = self.session.run(inputs)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        return peak, result

    def test_contiguous_input_is_not_copied(self):
        peak, expected = self.peak_allocation({"x": self.x})
        # The outputs (2 x 16 x 10 floats) and small objects, not the input.
        self.assertLess(peak, self.x.nbytes // 2)

        # A strided view and a Fortran-ordered copy are converted once: the
        # allocation shows, and the answer is the same.
        wide = np.zeros((16, 1024), np.float32)
        wide[:, ::2] = self.x
        for label, x in (("strided", wide[:, ::2]), ("fortran", np.asfortranarray(self.x))):
            self.assertFalse(x.flags.c_contiguous)
            peak, got = self.peak_allocation({"x": x})
            self.assertGreaterEqual(peak, self.x.nbytes, label)
            for name in expected:
                np.testing.assert_array_equal(got[name], expected[name], err_msg=label)

    def test_other_byte_order_and_lists(self):
        expected = self.session.run({"x": self.x})
        swapped = self.x.astype(self.x.dtype.newbyteorder(">"))
        got = self.session.run({"x": swapped})
        np.testing.assert_array_equal(got["logits"], expected["logits"])
        got = self.session.run({"x": self.x.tolist()})  # converted to float32
        np.testing.assert_array_equal(got["logits"], expected["logits"])


class ConversionTest(unittest.TestCase):
    """Values that are no C-contiguous arrays of the input's dtype."""

    def test_scalars_and_array_likes(self):
        _, path = compiled("scale", scale_model)
        session = kiln.Session(path, cpu_device())
        self.assertEqual(session.inputs[1].shape, ())
        x = np.arange(24, dtype=np.float32).reshape(4, 6) / 7
        expected = x * np.float32(2.5)  # one float32 product: exact on both sides

        class Strided:  # __array__ hands out a view that is not C-contiguous
            def __array__(self, dtype=None):
                wide = np.zeros((4, 12), np.float32)
                wide[:, ::2] = x
                return wide[:, ::2]

        for label, value in (("float", 2.5), ("numpy float64 scalar", np.float64(2.5)),
                             ("0-d big-endian", np.array(2.5, ">f4")),
                             ("0-d array", np.array(2.5, np.float32))):
            got = session.run({"x": x, "s": value})["y"]
            np.testing.assert_array_equal(got, expected, err_msg=label)
        np.testing.assert_array_equal(session.run({"x": Strided(), "s": 2.5})["y"], expected)
        with self.assertRaisesRegex(kiln.InvalidArgumentError,
                                    r"input 's': shape \[1\] does not match the model's \[\]"):
            session.run({"x": x, "s": np.array([2.5], np.float32)})


class ExtentOutputTest(unittest.TestCase):
    def test_nonzero(self):
        _, path = compiled("nonzero", nonzero_model)
        artifact = kiln.Artifact(path)
        (info,) = artifact.outputs
        self.assertEqual((info.dtype, info.shape, info.extent_axis), (np.int64, (2, 15), 1))
        session = kiln.Session(artifact, cpu_device())
        rng = np.random.default_rng(4)
        results = []
        for count in (4, 11, 0):
            x = -np.ones((3, 5), np.float32)
            x.flat[rng.choice(15, count, replace=False)] = rng.uniform(0.5, 1.0, count)
            got = session.run({"x": x})["indices"]
            expected = np.stack(np.nonzero(x > 0))
            self.assertEqual(got.shape, (2, count))
            np.testing.assert_array_equal(got, expected)
            # A view of the buffer the runtime wrote (no copy).
            self.assertIsNotNone(got.base)
            self.assertTrue(np.shares_memory(got, got.base) or count == 0)
            results.append((got, expected))
        for got, expected in results:  # later runs did not touch earlier results
            np.testing.assert_array_equal(got, expected)


class Bf16Test(unittest.TestCase):
    def test_bf16_is_uint16_bits(self):
        _, path = compiled("bf16", bf16_model)
        session = kiln.Session(path, cpu_device())
        b_info, x_info = session.inputs
        self.assertEqual((b_info.dtype, b_info.dtype_name), (np.dtype(np.uint16), "bfloat16"))
        self.assertEqual(session.outputs[1].dtype, np.uint16)
        rng = np.random.default_rng(5)
        values = rng.standard_normal((2, 8)).astype(np.float32)
        b = bf16_round(values)
        got = session.run({"b": b, "x": values})
        np.testing.assert_array_equal(got["widened"],
                                      (b.astype(np.uint32) << 16).view(np.float32))
        self.assertEqual(got["narrowed"].dtype, np.uint16)
        np.testing.assert_array_equal(got["narrowed"], bf16_round(values))
        # A float32 array for the bfloat16 input is a dtype error.
        with self.assertRaisesRegex(kiln.InvalidArgumentError,
                                    r"input 'b': dtype float32 does not match the model's "
                                    r"bfloat16 \(numpy uint16 bits\)"):
            session.run({"b": values, "x": values})


class ErrorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model, cls.path = compiled("tiny_cnn", tiny_cnn)
        cls.artifact = kiln.Artifact(cls.path)
        cls.session = kiln.Session(cls.artifact, cpu_device())
        cls.x = np.zeros((1, 3, 8, 8), np.float32)

    def assertError(self, cls, code, pattern, call, *args, **kwargs):
        with self.assertRaisesRegex(cls, pattern) as caught:
            call(*args, **kwargs)
        self.assertEqual(caught.exception.code, code)
        self.assertEqual(caught.exception.code_name, code.name)
        self.assertIsInstance(caught.exception, kiln.Error)
        return caught.exception

    def test_missing_file(self):
        missing = WORK / "no-such.kiln"
        e = self.assertError(kiln.FileError, kiln.StatusCode.IO_ERROR, re.escape(str(missing)),
                             kiln.Artifact, missing)
        self.assertIsInstance(e, OSError)
        self.assertEqual(str(e), e.message)

    def test_corrupt_artifact(self):
        data = bytearray(self.path.read_bytes())
        for offset in range(len(data) // 2, len(data) // 2 + 16):
            data[offset] ^= 0x5A
        corrupt = WORK / "corrupt.kiln"
        corrupt.write_bytes(data)
        self.assertError(kiln.InvalidArtifactError, kiln.StatusCode.INVALID_ARTIFACT,
                         re.escape(str(corrupt)), kiln.Artifact, corrupt)
        self.assertError(kiln.InvalidArtifactError, kiln.StatusCode.INVALID_ARTIFACT,
                         "^garbage", kiln.Artifact.from_bytes, b"not an artifact", "garbage")
        # The bytes intact open from memory.
        a = kiln.Artifact.from_bytes(self.path.read_bytes(), name="tiny")
        self.assertEqual((a.name, a.inputs[0].name), ("tiny", "image"))

    def test_wrong_inputs(self):
        run = self.session.run
        code = kiln.StatusCode.INVALID_ARGUMENT
        self.assertError(kiln.InvalidArgumentError, code,
                         r"input 'image': shape \[1, 3, 4, 4\] does not match the model's "
                         r"\[1, 3, 8, 8\]", run, {"image": np.zeros((1, 3, 4, 4), np.float32)})
        self.assertError(kiln.InvalidArgumentError, code,
                         r"input 'image': dtype float64 does not match the model's "
                         r"float32\[1, 3, 8, 8\]", run, {"image": np.zeros((1, 3, 8, 8))})
        self.assertError(kiln.InvalidArgumentError, code,
                         r"no model input named 'img' \(the model's inputs are: image\)",
                         run, {"img": self.x})
        self.assertError(kiln.InvalidArgumentError, code, r"missing input 'image'", run, {})
        self.assertError(kiln.InvalidArgumentError, code, r"no model input named 'extra'",
                         run, {"image": self.x, "extra": self.x})
        self.assertError(kiln.InvalidArgumentError, code, r"input 'image': cannot convert",
                         run, {"image": [[1, 2], [3]]})

    def test_wrong_python_types(self):
        for bad in (None, [self.x], self.x, "image"):
            with self.assertRaisesRegex(TypeError, "takes a dict"):
                self.session.run(bad)
        with self.assertRaisesRegex(TypeError, "input names must be str"):
            self.session.run({0: self.x})
        with self.assertRaisesRegex(TypeError, "input 'image' is None"):
            self.session.run({"image": None})
        with self.assertRaisesRegex(TypeError, "path"):
            kiln.Artifact(None)
        with self.assertRaises(TypeError):
            kiln.Artifact.from_bytes("a str is no bytes")
        with self.assertRaisesRegex(TypeError, "device spec must be a str"):
            kiln.Device(None)
        with self.assertRaisesRegex(TypeError, "threads must be an int"):
            kiln.Device("cpu", threads="2")
        with self.assertRaisesRegex(TypeError, "kiln.Device or a device spec"):
            kiln.Session(self.artifact, 3)
        with self.assertRaises(TypeError):
            kiln.compile(42)
        # A Mapping other than dict is fine.
        from types import MappingProxyType
        self.assertIn("probabilities", self.session.run(MappingProxyType({"image": self.x})))

    def test_devices(self):
        self.assertError(kiln.UnsupportedError, kiln.StatusCode.UNSUPPORTED, "tpu",
                         kiln.Device, "tpu")
        self.assertError(kiln.InvalidArgumentError, kiln.StatusCode.INVALID_ARGUMENT, "hip:x",
                         kiln.Device, "hip:x")
        self.assertError(kiln.InvalidArgumentError, kiln.StatusCode.INVALID_ARGUMENT,
                         r"threads must be in \[0, 4294967295\], got -1",
                         kiln.Device, "cpu", threads=-1)
        # A cpu-only artifact on an emulated gfx942: no code object for it.
        e = self.assertError(kiln.UnsupportedError, kiln.StatusCode.UNSUPPORTED, "cpu",
                             kiln.Session, self.artifact, kiln.Device("emu:gfx942", threads=1))
        self.assertIn("gfx942", str(e))

    def test_programs(self):
        self.assertError(kiln.InvalidArgumentError, kiln.StatusCode.INVALID_ARGUMENT,
                         r"no program 'nope' \(its programs are: main\)",
                         kiln.Session, self.artifact, "cpu", program="nope")
        self.assertError(kiln.InvalidArgumentError, kiln.StatusCode.INVALID_ARGUMENT,
                         r"program index 3 is out of range",
                         kiln.Session, self.artifact, "cpu", program=3)
        self.assertEqual(kiln.Session(self.artifact, "cpu", program=0).program.name, "main")

    def test_compile_errors(self):
        bad = WORK / "bad.onnxtxt"
        bad.write_text("<ir_version: 8, opset_import: [\"\" : 17]>\n"
                       "bad (float[2] x) => (float[2] y) { y = NoSuchOp(x) }\n")
        with self.assertRaises(kiln.CompileError) as caught:
            kiln.compile(bad)
        e = caught.exception
        self.assertNotEqual(e.returncode, 0)
        self.assertIn("NoSuchOp", e.diagnostics)
        self.assertIn("NoSuchOp", str(e))
        self.assertIn(str(bad), str(e))
        with self.assertRaises(kiln.CompileError) as caught:
            kiln.compile(tiny_cnn(), no_such_option=3)
        self.assertIn("no-such-option", caught.exception.diagnostics)
        with self.assertRaises(kiln.CompileError) as caught:
            kiln.compile(WORK / "missing.onnx")
        self.assertIn("missing.onnx", caught.exception.diagnostics)
        with self.assertRaisesRegex(ValueError, "targets is empty"):
            kiln.compile(tiny_cnn(), targets=[])


class CompileTest(unittest.TestCase):
    def test_in_memory_leaves_no_files(self):
        private = WORK / "tmp"
        private.mkdir()
        saved = tempfile.tempdir
        tempfile.tempdir = str(private)
        try:
            artifact = kiln.compile(tiny_cnn(), targets="cpu")
        finally:
            tempfile.tempdir = saved
        self.assertEqual(list(private.iterdir()), [])
        self.assertEqual(artifact.name, "tiny_cnn.kiln")
        x = np.random.default_rng(6).standard_normal((1, 3, 8, 8)).astype(np.float32)
        _, path = compiled("tiny_cnn", tiny_cnn)
        expected = kiln.Session(path, cpu_device()).run({"image": x})
        got = kiln.Session(artifact, cpu_device()).run({"image": x})
        np.testing.assert_array_equal(got["probabilities"], expected["probabilities"])

    def test_from_path_and_bytes(self):
        a = kiln.compile(ROOT / "examples" / "tiny_cnn.onnxtxt")
        self.assertEqual(a.inputs[0].shape, (1, 3, 8, 8))
        b = kiln.compile(mlp(batch=2).SerializeToString())
        self.assertEqual(b.inputs[0].shape, (2, 512))

    def test_batch_sizes_and_input_shapes(self):
        model = mlp(batch="N")
        a = kiln.compile(model, targets=["cpu"], batch_sizes=[1, 4])
        self.assertEqual([p.name for p in a.programs], ["batch_1", "batch_4"])
        self.assertEqual(a.batch_sizes, [1, 4])
        self.assertEqual(a.programs[1].inputs[0].shape, (4, 512))
        x = np.random.default_rng(7).standard_normal((4, 512)).astype(np.float32)
        s = kiln.Session(a, cpu_device(), batch_size=4)
        self.assertEqual(s.program.name, "batch_4")
        got = s.run({"x": x})
        ref = mlp_reference(model, x)
        np.testing.assert_allclose(got["probabilities"], ref["probabilities"], rtol=1e-4,
                                   atol=1e-6)
        self.assertEqual(got["logits"].shape, (4, 10))

        b = kiln.compile(model, input_shapes={"x": [3, 512]})
        self.assertEqual(b.inputs[0].shape, (3, 512))
        self.assertIn("input-shape", b.options)


class InstallTest(unittest.TestCase):
    def test_installed_package(self):
        """The python and compiler components installed under a prefix: the
        package imports from <prefix>/lib/python3/dist-packages and finds
        <prefix>/bin/kiln-compile, with nothing of the build tree around."""
        prefix = WORK / "prefix"
        for component in ("python", "compiler"):
            subprocess.run(["cmake", "--install", BUILD, "--component", component,
                            "--prefix", prefix], check=True, capture_output=True)
        package = prefix / "lib/python3/dist-packages/kiln"
        self.assertTrue((package / "__init__.py").is_file())
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "KILN_COMPILE", "KILN_BUILD")}
        env.update(PYTHONPATH=str(package.parent), PATH="/usr/bin:/bin")
        script = (
            "import kiln, numpy as np\n"
            "print(kiln.__file__)\n"
            "print(kiln.find_kiln_compile())\n"
            f"a = kiln.compile({str(ROOT / 'examples/tiny_cnn.onnxtxt')!r})\n"
            "p = kiln.Session(a, 'cpu').run({'image': np.ones((1, 3, 8, 8), np.float32)})\n"
            "print(float(p['probabilities'].sum()))\n")
        out = subprocess.run([sys.executable, "-c", script], env=env, cwd=WORK,
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        file, compiler, total = out.stdout.split("\n")[:3]
        self.assertEqual(Path(file), package / "__init__.py")
        self.assertEqual(Path(compiler), prefix / "bin" / "kiln-compile")
        self.assertAlmostEqual(float(total), 1.0, places=5)


class EmulationTest(unittest.TestCase):
    def test_emulated_gfx942_matches_cpu(self):
        for key, build, x in (
                ("tiny_cnn_emu", tiny_cnn,
                 {"image": np.random.default_rng(8).standard_normal((1, 3, 8, 8))}),
                ("mlp_emu", mlp, {"x": np.random.default_rng(9).standard_normal((16, 512))})):
            x = {k: v.astype(np.float32) for k, v in x.items()}
            _, path = compiled(key, build, targets=["cpu", "gfx942"], emulation=True)
            artifact = kiln.Artifact(path)
            self.assertIn("emu:gfx942", artifact.targets)
            device = kiln.Device("emu:gfx942", threads=2)
            self.assertEqual(device.target, "emu:gfx942")
            emu = kiln.Session(artifact, device).run(x)
            cpu = kiln.Session(artifact, cpu_device()).run(x)
            for name in cpu:
                np.testing.assert_allclose(emu[name], cpu[name], rtol=1e-5, atol=1e-6,
                                           err_msg=f"{key}: {name} emu:gfx942 vs cpu")


class ThreadTest(unittest.TestCase):
    def test_two_threads(self):
        _, path = compiled("mlp", mlp)
        artifact = kiln.Artifact(path)
        device = kiln.Device("cpu", threads=1)
        rng = np.random.default_rng(10)
        inputs = [rng.standard_normal((16, 512)).astype(np.float32) for _ in range(8)]
        single = kiln.Session(artifact, device)
        expected = [single.run({"x": x})["probabilities"] for x in inputs]
        shared = kiln.Session(artifact, device)
        failures = []

        def worker(index, session):
            try:
                for step in range(40):
                    k = (index + step) % len(inputs)
                    got = session.run({"x": inputs[k]})["probabilities"]
                    if not np.array_equal(got, expected[k]):
                        failures.append(f"thread {index} step {step}: wrong result")
            except Exception as e:  # noqa: BLE001 - reported below
                failures.append(f"thread {index}: {e!r}")

        # Own sessions on a shared device, then one shared session.
        for sessions in ([kiln.Session(artifact, device), kiln.Session(artifact, device)],
                         [shared, shared]):
            threads = [threading.Thread(target=worker, args=(i, s))
                       for i, s in enumerate(sessions)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.assertEqual(failures, [])

    def test_run_releases_the_gil(self):
        # Two 512x2048x2048 matmuls: tens of milliseconds per run on one
        # thread. While a worker thread is inside run(), this thread must keep
        # running Python code.
        n, batch = 2048, 512
        w = (np.random.default_rng(11).standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w"], ["y"])], "matmuls",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, n])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, n])],
            [numpy_helper.from_array(w, "w")])
        session = kiln.Session(kiln.compile(helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17)])), cpu_device())
        x = np.ones((batch, n), np.float32)
        session.run({"x": x})
        runs, ticks, done = [], [], threading.Event()

        def worker():
            try:
                for _ in range(3):
                    start = time.perf_counter()
                    session.run({"x": x})
                    runs.append((start, time.perf_counter()))
            finally:
                done.set()

        thread = threading.Thread(target=worker)
        thread.start()
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)
        thread.join()
        self.assertEqual(len(runs), 3)
        # The longest this thread waited between two ticks, during the longest
        # run: a run that kept the GIL would stall it for the whole run.
        start, end = max(runs, key=lambda r: r[1] - r[0])
        during = [start] + [t for t in ticks if start < t < end] + [end]
        stall = max(b - a for a, b in zip(during, during[1:]))
        self.assertLess(stall, 0.5 * (end - start),
                        f"this thread stalled {1e3 * stall:.1f} ms during a run of "
                        f"{1e3 * (end - start):.1f} ms")


if __name__ == "__main__":
    unittest.main()
