#!/usr/bin/python3
"""Writes the dynamically quantized model equivalent to
`kiln-compile --quantize=int8-dynamic`, in the form ONNX Runtime's dynamic
quantizer writes (DynamicQuantizeLinear + ConvInteger / MatMulInteger).

  /usr/bin/python3 bench/dynamic_from_float.py MODEL.onnx OUT.onnx

Every Conv, Gemm (alpha = beta = 1) and MatMul of MODEL with a constant
weight reads its input 0 through DynamicQuantizeLinear (uint8, the range of
the run) and its weight as int8 per output channel (max |w| / 127, rounded
half to even into [-127, 127], as Kiln quantizes it); the int32 result is
cast to float, scaled by scale_x * scale_w and the bias added. ONNX Runtime
runs it with its own integer kernels: the speed comparison for Kiln's dynamic
INT8 artifacts (docs/performance.md).
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from qdq_from_table import rewritten_model, weight_axis, weight_params


def dynamic_model(model):
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    nodes, new_inits, done = [], [], {}
    for node in model.graph.node:
        axis = weight_axis(node)
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if (axis is None or node.input[1] not in inits
                or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0
                or (node.op_type == "Gemm" and attrs.get("transA", 0))):
            nodes.append(node)
            continue
        x, w, tag = node.input[0], node.input[1], node.output[0]
        if x not in done:
            done[x] = (x + "_dq", x + "_ds", x + "_dz")
            nodes.append(helper.make_node("DynamicQuantizeLinear", [x], list(done[x])))
        xq, xs, xz = done[x]
        q, s = weight_params(inits[w], axis)
        if node.op_type == "Conv":
            shape = [1, -1] + [1] * (q.ndim - 2)
            nodes.append(helper.make_node("ConvInteger", [xq, tag + "_wq", xz], [tag + "_i"], **attrs))
        else:
            if axis == 0:  # Gemm transB: [N, K] -> [K, N]
                q = q.T.copy()
            shape = [-1]
            nodes.append(helper.make_node("MatMulInteger", [xq, tag + "_wq", xz], [tag + "_i"]))
        new_inits += [numpy_helper.from_array(q, tag + "_wq"),
                      numpy_helper.from_array(s.reshape(shape), tag + "_ws")]
        bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
        scaled = tag + "_m" if bias else tag
        nodes += [helper.make_node("Cast", [tag + "_i"], [tag + "_f"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [xs, tag + "_ws"], [tag + "_s"]),
                  helper.make_node("Mul", [tag + "_f", tag + "_s"], [scaled])]
        if bias:
            new_inits.append(numpy_helper.from_array(inits[bias].reshape(shape), tag + "_b"))
            nodes.append(helper.make_node("Add", [scaled, tag + "_b"], [tag]))
    return rewritten_model(model, nodes, new_inits, "_dynamic")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    onnx.save(dynamic_model(onnx.load(sys.argv[1])), sys.argv[2])


if __name__ == "__main__":
    main()
