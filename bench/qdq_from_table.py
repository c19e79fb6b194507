#!/usr/bin/python3
"""Writes the QDQ model equivalent to a Kiln calibration table.

  /usr/bin/python3 bench/qdq_from_table.py MODEL.onnx TABLE.json OUT.onnx

Every Conv, Gemm (transB=1 weights) and MatMul of MODEL whose input 0 has a
range in TABLE gets QuantizeLinear + DequantizeLinear on that input (uint8
asymmetric from the range, as `kiln-compile --quantize=int8` derives it) and
its weight as DequantizeLinear of int8 per output channel (max |w| / 127,
rounded half to even into [-127, 127]). ONNX Runtime runs the result with its
own integer kernels: the reference and the speed comparison for Kiln's INT8
artifacts (test/e2e/run_quantized_vs_ort.py, docs/performance.md).
"""

import json
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def activation_params(lo, hi):
    """uint8 asymmetric, as Kiln derives it from a table range."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if not hi - lo > 1e-30:
        return np.float32(1), np.uint8(0)
    scale = np.float32((hi - lo) / 255.0)
    zp = np.clip(np.rint(-lo / np.float64(scale)), 0, 255)
    return scale, np.uint8(zp)


def weight_params(w, axis):
    """int8 symmetric per channel along `axis`: max |w| / 127, round half even."""
    moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    amax = np.abs(moved).max(axis=1).astype(np.float32)
    scale = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = w.shape[axis]
    q = np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale


def weight_axis(node):
    """The output-channel axis of the weight (input 1), or None."""
    if node.op_type == "Conv":
        return 0
    if node.op_type == "Gemm":
        trans = [a.i for a in node.attribute if a.name == "transB"]
        return 0 if trans and trans[0] else 1
    if node.op_type == "MatMul":
        return 1
    return None


def rewritten_model(model, nodes, new_inits, suffix):
    """`model` with `nodes` as its graph, its initializers that they still
    read and `new_inits`, at opset 13 or its own if later."""
    used = {i for n in nodes for i in n.input}
    kept = [i for i in model.graph.initializer if i.name in used]
    graph = helper.make_graph(nodes, model.graph.name + suffix, list(model.graph.input),
                              list(model.graph.output), kept + new_inits)
    opset = max(13, max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def qdq_model(model, table, only=None):
    """`model` with Q/DQ on each activation of `table` and int8 weights; with
    `only` (a set of node names), just those nodes quantized."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    tensors = table["tensors"]
    nodes, new_inits, done = [], [], set()
    for node in model.graph.node:
        axis = weight_axis(node)
        if (axis is None or node.input[0] not in tensors or node.input[1] not in inits
                or (only is not None and node.name not in only)):
            nodes.append(node)
            continue
        x = node.input[0]
        if x not in done:
            scale, zp = activation_params(*tensors[x]["range"])
            new_inits += [numpy_helper.from_array(np.array(scale, np.float32), x + "_scale"),
                          numpy_helper.from_array(np.array(zp, np.uint8), x + "_zp")]
            nodes += [helper.make_node("QuantizeLinear", [x, x + "_scale", x + "_zp"], [x + "_q"]),
                      helper.make_node("DequantizeLinear", [x + "_q", x + "_scale", x + "_zp"], [x + "_dq"])]
            done.add(x)
        w = node.input[1]
        q, s = weight_params(inits[w], axis)
        new_inits += [numpy_helper.from_array(q, w + "_q"), numpy_helper.from_array(s, w + "_scale")]
        nodes.append(helper.make_node("DequantizeLinear", [w + "_q", w + "_scale"], [w + "_dq"], axis=axis))
        copy = helper.make_node(node.op_type, [x + "_dq", w + "_dq"] + list(node.input[2:]), list(node.output),
                                name=node.name)
        copy.attribute.extend(node.attribute)
        nodes.append(copy)
    return rewritten_model(model, nodes, new_inits, "_qdq")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model = onnx.load(sys.argv[1])
    with open(sys.argv[2]) as f:
        table = json.load(f)
    onnx.save(qdq_model(model, table), sys.argv[3])


if __name__ == "__main__":
    main()
