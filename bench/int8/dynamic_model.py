#!/usr/bin/python3
"""Writes the dynamically quantized ONNX model equivalent to
`kiln-compile --quantize=int8-dynamic`, for ONNX Runtime to run with its own
integer kernels (the speed reference for Kiln's dynamic INT8 artifacts).

  /usr/bin/python3 bench/int8/dynamic_model.py MODEL.onnx OUT.onnx

Every MatMul of MODEL by a constant 2-D float weight becomes what ONNX
Runtime's dynamic quantizer makes of it: DynamicQuantizeLinear of the
activation (uint8, the run's range), MatMulInteger by the weight as int8 per
output column (max |w| / 127, rounded half to even into [-127, 127], as
Kiln quantizes it) with the activation's zero point, Cast to float, Mul by
the activation's scale times the weight's. Other nodes stay as they are.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def per_column(w):
    scale = (np.abs(w).max(axis=0) / 127).astype(np.float32)
    scale = np.where(scale > 0, scale, np.float32(1)).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    model = onnx.load(sys.argv[1])
    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    nodes, quantized = [], 0
    for node in graph.node:
        w = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if w is None or len(w.dims) != 2 or w.data_type != TensorProto.FLOAT:
            nodes.append(node)
            continue
        tag = f"dq{quantized}"
        quantized += 1
        q, scale = per_column(numpy_helper.to_array(w))
        graph.initializer.extend([numpy_helper.from_array(q, f"{tag}_q"),
                                  numpy_helper.from_array(scale, f"{tag}_s")])
        x = node.input[0]
        nodes.extend([
            helper.make_node("DynamicQuantizeLinear", [x], [f"{tag}_xq", f"{tag}_xs", f"{tag}_xz"]),
            helper.make_node("MatMulInteger", [f"{tag}_xq", f"{tag}_q", f"{tag}_xz"], [f"{tag}_acc"]),
            helper.make_node("Cast", [f"{tag}_acc"], [f"{tag}_accf"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{tag}_xs", f"{tag}_s"], [f"{tag}_scale"]),
            helper.make_node("Mul", [f"{tag}_accf", f"{tag}_scale"], [node.output[0]]),
        ])
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.save(model, sys.argv[2])
    print(f"{quantized} MatMuls quantized dynamically -> {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
