"""Checks kiln-compile's import of an exported model against the model itself.

The reference is the ONNX file as read by Python's onnx package (not by
Kiln): the @main signature must carry the graph's input and output names,
shapes and element types, and the compute ops must survive one to one
(every Conv becomes a kiln.conv, every MatMul/Gemm a kiln.matmul, every
LayerNormalization a kiln.layer_norm, ...). Prints a one-line summary.

usage: check_import.py KILN_COMPILE MODEL.onnx
"""
import collections
import re
import subprocess
import sys
import time

import onnx

ELEMENT = {1: "f32", 7: "i64", 6: "i32", 9: "i1", 10: "f16", 11: "f64"}
# ONNX op -> the kiln op it must import to, one for one.
ONE_TO_ONE = {
    "Conv": "kiln.conv",
    "MatMul": "kiln.matmul",
    "Gemm": "kiln.matmul",
    "LayerNormalization": "kiln.layer_norm",
    "Softmax": "kiln.softmax",
    "MaxPool": "kiln.max_pool",
    "Erf": "kiln.erf",
    "Sigmoid": "kiln.sigmoid",
}


def tensor_type(value_info):
    t = value_info.type.tensor_type
    dims = "x".join(str(d.dim_value) for d in t.shape.dim)
    return f"tensor<{dims + 'x' if dims else ''}{ELEMENT[t.elem_type]}>"


def main():
    tool, path = sys.argv[1], sys.argv[2]
    model = onnx.load(path, load_external_data=False)
    graph = model.graph
    start = time.monotonic()
    ir = subprocess.run([tool, path, "--elide-weights"], check=True,
                        capture_output=True, text=True).stdout
    seconds = time.monotonic() - start

    signature = re.search(r"func\.func @main\((.*)\) -> \((.*)\) \{", ir)
    assert signature, "no @main in the output"
    args = re.findall(r"%arg\d+: (tensor<[^>]*>) \{kiln\.name = \"([^\"]+)\"\}",
                      signature.group(1))
    results = re.findall(r"(tensor<[^>]*>) \{kiln\.name = \"([^\"]+)\"\}",
                         signature.group(2))
    initializers = {i.name for i in graph.initializer}
    want_args = [(tensor_type(i), i.name) for i in graph.input
                 if i.name not in initializers]
    want_results = [(tensor_type(o), o.name) for o in graph.output]
    assert args == want_args, f"inputs {args} != {want_args}"
    assert results == want_results, f"outputs {results} != {want_results}"

    kiln_ops = collections.Counter(re.findall(r"= (kiln\.[a-z_]+)", ir))
    onnx_ops = collections.Counter(n.op_type for n in graph.node)
    expected = collections.Counter()
    for op, count in onnx_ops.items():
        if op in ONE_TO_ONE:
            expected[ONE_TO_ONE[op]] += count
    for kiln_op, count in expected.items():
        assert kiln_ops[kiln_op] == count, \
            f"{kiln_op}: {kiln_ops[kiln_op]} in kiln IR, {count} in the model"
    total = sum(kiln_ops.values())
    print(f"{path.split('/')[-1]}: {len(graph.node)} ONNX nodes -> {total} kiln ops "
          f"({dict(sorted(expected.items()))}), inputs {len(args)}, "
          f"outputs {len(results)}, {seconds:.2f} s")


if __name__ == "__main__":
    main()
