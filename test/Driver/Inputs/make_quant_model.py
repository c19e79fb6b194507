"""Writes a small float model for the --quantize tests into DIR: model.onnx
(Conv + Relu, Flatten, MatMul with an initializer weight, and a MatMul of two
activations, which is not quantized), calibration samples calib/00..05/x.npy,
a sample of the wrong shape (badshape/00/x.npy), an empty folder (empty/),
a sample folder without x.npy (missing/00/), the calibration samples as .npz
archives (calibnpz/, numpy.savez and savez_compressed), bad archives (npzbad/:
not a zip; npzkey/: no array x; npzshape/: x of the wrong shape), and a table
made for another model (foreign.json)."""
import json
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

d = Path(sys.argv[1])
rng = np.random.RandomState(3)
w = numpy_helper.from_array((rng.randn(4, 2, 3, 3) * 0.5).astype(np.float32), "w")
b = numpy_helper.from_array((rng.randn(4) * 0.1).astype(np.float32), "b")
m = numpy_helper.from_array((rng.randn(64, 5) * 0.3).astype(np.float32), "m")
nodes = [
    helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("Relu", ["c"], ["r"], name="relu"),
    helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
    helper.make_node("MatMul", ["f", "m"], ["y"], name="fc"),
    helper.make_node("Transpose", ["y"], ["yt"], name="t", perm=[1, 0]),
    helper.make_node("MatMul", ["yt", "y"], ["gram"], name="gram"),
]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5]),
                       helper.make_tensor_value_info("gram", TensorProto.FLOAT, [5, 5])], [w, b, m])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d / "model.onnx")
(d / "calibnpz").mkdir(parents=True, exist_ok=True)
for i in range(6):
    (d / "calib" / f"{i:02d}").mkdir(parents=True, exist_ok=True)
    x = rng.randn(1, 2, 8, 8).astype(np.float32)
    np.save(d / "calib" / f"{i:02d}" / "x.npy", x)
    # The same samples as .npz archives, stored and deflated.
    (np.savez if i % 2 else np.savez_compressed)(d / "calibnpz" / f"{i:02d}.npz", x=x)
(d / "npzbad").mkdir(exist_ok=True)
(d / "npzbad" / "00.npz").write_bytes(b"this is no zip archive")
(d / "npzkey").mkdir(exist_ok=True)
np.savez(d / "npzkey" / "00.npz", y=np.zeros((1, 2, 8, 8), np.float32))
(d / "npzshape").mkdir(exist_ok=True)
np.savez(d / "npzshape" / "00.npz", x=np.zeros((1, 2, 8, 9), np.float32))
(d / "badshape" / "00").mkdir(parents=True, exist_ok=True)
np.save(d / "badshape" / "00" / "x.npy", rng.randn(1, 2, 8, 9).astype(np.float32))
(d / "empty").mkdir(exist_ok=True)
(d / "missing" / "00").mkdir(parents=True, exist_ok=True)
(d / "foreign.json").write_text(json.dumps({
    "format": "kiln-calibration-table", "version": 1, "model": "other.onnx", "method": "minmax", "samples": 1,
    "tensors": {"input": {"range": [-1.0, 1.0]}, "f": {"range": [0.0, 2.0]}}}))
(d / "extra.json").write_text(json.dumps({
    "format": "kiln-calibration-table", "version": 1, "tensors": {
        "x": {"range": [-4.0, 4.0]}, "f": {"range": [0.0, 2.0]}, "conv_out": {"range": [0.0, 1.0]}}}))
(d / "notjson.json").write_text("{ this is not json")
(d / "badrange.json").write_text(json.dumps({
    "format": "kiln-calibration-table", "version": 1, "tensors": {"x": {"range": [2.0, 1.0]}}}))
