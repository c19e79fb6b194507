"""Writes a float model with one layer that int8 quantization ruins, for the
--accuracy-target tests, into DIR: model.onnx (x [1, 64] -> MatMul 'fc1' ->
Relu -> MatMul 'fc2' -> y [1, 10]), calibration samples calib/00..04/x.npy of
which 00 has one outlier (x[0, 0] = 200, an input that fc1's weights ignore:
its row of fc1's weight is zero, so only fc1's input range is spoiled) and
validation samples valid/00..02/x.npy without one. With fc1's activation
quantized over [-3, 200] its typical inputs round to a handful of levels; fc2's
range is that of ordinary activations."""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

d = Path(sys.argv[1])
rng = np.random.RandomState(5)
w1 = (rng.randn(64, 32) * 0.3).astype(np.float32)
w1[0, :] = 0
w2 = (rng.randn(32, 10) * 0.3).astype(np.float32)
nodes = [
    helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
    helper.make_node("Relu", ["h"], ["r"], name="relu"),
    helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                      [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), d / "model.onnx")
for i in range(5):
    (d / "calib" / f"{i:02d}").mkdir(parents=True, exist_ok=True)
    x = rng.randn(1, 64).astype(np.float32)
    if i == 0:
        x[0, 0] = 200
    np.save(d / "calib" / f"{i:02d}" / "x.npy", x)
for i in range(3):
    (d / "valid" / f"{i:02d}").mkdir(parents=True, exist_ok=True)
    np.save(d / "valid" / f"{i:02d}" / "x.npy", rng.randn(1, 64).astype(np.float32))

# A second model, DIR/muted/model.onnx, where the layer of lowest SQNR barely
# reaches the output: y = loud(x) + 0.001 * quiet(z), two MatMuls on two
# inputs. z's calibration has an outlier of 200 (quiet's SQNR is a few dB),
# x's one of 20 (loud's is ~30 dB, yet all of y's error). Ranked by their own
# SQNR, keeping quiet in float gains nothing; by their effect on the outputs,
# loud alone reaches 0.9999.
m = d / "muted"
wl = (rng.randn(64, 10) * 0.3).astype(np.float32)
wq = (rng.randn(64, 10) * 0.3).astype(np.float32)
nodes = [
    helper.make_node("MatMul", ["x", "wl"], ["l"], name="loud"),
    helper.make_node("MatMul", ["z", "wq"], ["q"], name="quiet"),
    helper.make_node("Mul", ["q", "mute"], ["qm"], name="mute"),
    helper.make_node("Add", ["l", "qm"], ["y"], name="sum"),
]
inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 64]) for n in ("x", "z")]
g = helper.make_graph(nodes, "g", inputs,
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                      [numpy_helper.from_array(wl, "wl"), numpy_helper.from_array(wq, "wq"),
                       numpy_helper.from_array(np.array([1e-3], np.float32), "mute")])
m.mkdir(parents=True, exist_ok=True)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), m / "model.onnx")
for i in range(5):
    (m / "calib" / f"{i:02d}").mkdir(parents=True, exist_ok=True)
    x, z = rng.randn(1, 64).astype(np.float32), rng.randn(1, 64).astype(np.float32)
    if i == 0:
        x[0, 0], z[0, 0] = 20, 200
    np.save(m / "calib" / f"{i:02d}" / "x.npy", x)
    np.save(m / "calib" / f"{i:02d}" / "z.npy", z)
for i in range(3):
    (m / "valid" / f"{i:02d}").mkdir(parents=True, exist_ok=True)
    np.save(m / "valid" / f"{i:02d}" / "x.npy", rng.randn(1, 64).astype(np.float32))
    np.save(m / "valid" / f"{i:02d}" / "z.npy", rng.randn(1, 64).astype(np.float32))

# A third, DIR/branch/model.onnx: an If (its branches outlined as functions
# during the import) before the quantized MatMul 'fc'. The sensitivity
# build's gate for 'fc' belongs to the main function, not the outlined one.
b = d / "branch"
then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                         [helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 16])])
other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                          [helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 16])])
nodes = [helper.make_node("If", ["c"], ["h"], then_branch=then, else_branch=other, name="branch"),
         helper.make_node("MatMul", ["h", "wb"], ["y"], name="fc")]
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16]),
                                   helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                      [numpy_helper.from_array((rng.randn(16, 8) * 0.3).astype(np.float32), "wb")])
b.mkdir(parents=True, exist_ok=True)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), b / "model.onnx")
for i in range(4):
    (b / "calib" / f"{i:02d}").mkdir(parents=True, exist_ok=True)
    np.save(b / "calib" / f"{i:02d}" / "x.npy", rng.randn(1, 16).astype(np.float32))
    np.save(b / "calib" / f"{i:02d}" / "c.npy", np.array(i % 2 == 0))
