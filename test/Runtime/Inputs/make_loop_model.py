"""Writes DIR/loop.onnx, a model whose run time its input decides: y = x
plus 1, n times, as an ONNX Loop with trip count n (the graph input).
Also DIR/n.npy (5), DIR/big.npy (10^12: a run that would take hours) and
DIR/x.npy. (Loop's numerics are checked against ONNX's test data by the
conformance suite; this model is for run-time limits.)

usage: make_loop_model.py DIR
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h


def loop_model() -> onnx.ModelProto:
    body = h.make_graph(
        [h.make_node("Identity", ["c"], ["c_out"]),
         h.make_node("Constant", [], ["one"],
                     value=h.make_tensor("one", T.FLOAT, [], [1.0])),
         h.make_node("Add", ["a", "one"], ["a_out"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []),
         h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("a", T.FLOAT, [4])],
        [h.make_tensor_value_info("c_out", T.BOOL, []),
         h.make_tensor_value_info("a_out", T.FLOAT, [4])])
    graph = h.make_graph(
        [h.make_node("Constant", [], ["cond"],
                     value=h.make_tensor("cond", T.BOOL, [], [True])),
         h.make_node("Loop", ["n", "cond", "x"], ["y"], body=body)],
        "loop",
        [h.make_tensor_value_info("n", T.INT64, []),
         h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, [4])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def write(out: Path) -> None:
    """loop.onnx and its inputs into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    model = loop_model()
    onnx.save(model, out / "loop.onnx")
    x = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    np.save(out / "x.npy", x)
    np.save(out / "n.npy", np.array(5, np.int64))
    np.save(out / "big.npy", np.array(10**12, np.int64))


if __name__ == "__main__":
    write(Path(sys.argv[1]))
