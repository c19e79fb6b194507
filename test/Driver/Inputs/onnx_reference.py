"""Reference outputs for a small ONNX model, computed at test time.

usage: onnx_reference.py make-input SHAPE SEED OUT.npy
           a float32 array of the given shape (e.g. 1x3x8x8), standard
           normal values from numpy's seeded generator, times 2
       onnx_reference.py check MODEL.onnxtxt NAME=IN.npy... -- NAME=OUT.npy...
           evaluates the model on the inputs and compares each output file
           with the reference: |out - ref| <= 1e-5 * max(1, max |ref|) +
           1e-4 * |ref| (float32 rounding of sums whose terms are as large
           as the output's biggest values)

The reference is ONNX's own evaluator (onnx.reference) when the installed
onnx has it (1.13 and later); otherwise the graph is evaluated node by node
with PyTorch in float64, from the weights onnx.parser reads out of the
model. Only the operators used by the test models are implemented; any
other operator is an error, never a silent guess.
"""
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.parser


def attributes(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def torch_evaluate(model, feeds):
    import torch
    import torch.nn.functional as F

    values = {i.name: torch.from_numpy(onnx.numpy_helper.to_array(i).astype(np.float64))
              for i in model.graph.initializer}
    values.update({k: torch.from_numpy(v.astype(np.float64)) for k, v in feeds.items()})

    def pad2d(x, pads, value):
        # ONNX pads: [top, left, bottom, right]; F.pad: (left, right, top, bottom).
        if not pads or not any(pads):
            return x
        return F.pad(x, (pads[1], pads[3], pads[0], pads[2]), value=value)

    for node in model.graph.node:
        a = attributes(node)
        x = [values[n] for n in node.input if n]
        op = node.op_type
        if op == "Conv":
            if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
                sys.exit("Conv: auto_pad is not implemented by this reference")
            y = F.conv2d(pad2d(x[0], a.get("pads", [0, 0, 0, 0]), 0.0), x[1],
                         x[2] if len(x) > 2 else None, stride=a.get("strides", [1, 1]),
                         dilation=a.get("dilations", [1, 1]), groups=a.get("group", 1))
        elif op == "Relu":
            y = torch.relu(x[0])
        elif op == "MaxPool":
            if a.get("ceil_mode", 0) or a.get("storage_order", 0):
                sys.exit("MaxPool: ceil_mode/storage_order are not implemented by this reference")
            y = F.max_pool2d(pad2d(x[0], a.get("pads", [0, 0, 0, 0]), float("-inf")),
                             a["kernel_shape"], stride=a.get("strides", [1, 1]),
                             dilation=a.get("dilations", [1, 1]))
        elif op == "GlobalAveragePool":
            y = x[0].mean(dim=tuple(range(2, x[0].dim())), keepdim=True)
        elif op == "Flatten":
            axis = a.get("axis", 1) % max(x[0].dim(), 1)
            y = x[0].reshape(int(np.prod(x[0].shape[:axis])), -1)
        elif op == "Gemm":
            A = x[0].T if a.get("transA", 0) else x[0]
            B = x[1].T if a.get("transB", 0) else x[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(x) > 2:
                y = y + a.get("beta", 1.0) * x[2]
        elif op == "Softmax":
            y = torch.softmax(x[0], dim=a.get("axis", -1))
        elif op == "MatMul":
            y = torch.matmul(x[0], x[1])
        elif op == "Add":
            y = x[0] + x[1]
        elif op == "Reshape":
            if a.get("allowzero", 0):
                sys.exit("Reshape: allowzero is not implemented by this reference")
            shape = [int(d) for d in x[1].tolist()]
            shape = [x[0].shape[i] if d == 0 else d for i, d in enumerate(shape)]
            y = x[0].reshape(shape)
        elif op == "ReduceMean":
            if len(x) > 1 or "axes" not in a:
                sys.exit("ReduceMean: only the axes attribute is implemented by this reference")
            y = x[0].mean(dim=tuple(a["axes"]), keepdim=bool(a.get("keepdims", 1)))
        else:
            sys.exit("operator %s is not implemented by this reference" % op)
        values[node.output[0]] = y
    return {o.name: values[o.name].numpy() for o in model.graph.output}


def reference(model, feeds):
    try:
        from onnx.reference import ReferenceEvaluator
    except ImportError:
        print("reference: torch (onnx %s has no onnx.reference)" % onnx.__version__)
        return torch_evaluate(model, feeds)
    print("reference: onnx.reference (onnx %s)" % onnx.__version__)
    names = [o.name for o in model.graph.output]
    return dict(zip(names, ReferenceEvaluator(model).run(None, feeds)))


def pairs(args):
    return dict(arg.split("=", 1) for arg in args)


def main(argv):
    if argv[1] == "make-input":
        shape = [int(d) for d in argv[2].split("x")]
        rng = np.random.default_rng(int(argv[3]))
        np.save(argv[4], (2 * rng.standard_normal(shape)).astype(np.float32))
        return 0
    if argv[1] != "check":
        sys.exit(__doc__)
    model = onnx.parser.parse_model(open(argv[2]).read())
    split = argv.index("--")
    feeds = {k: np.load(v) for k, v in pairs(argv[3:split]).items()}
    refs = reference(model, feeds)
    ok = True
    for name, path in pairs(argv[split + 1:]).items():
        out, ref = np.load(path), refs[name]
        good = out.shape == ref.shape and out.dtype == np.float32
        err = np.abs(out.astype(np.float64) - ref) if good else np.array([np.inf])
        atol = 1e-5 * max(1.0, float(np.abs(ref).max()))
        good = good and bool(np.all(err <= atol + 1e-4 * np.abs(ref)))
        print("%s: %s %s, reference in [%.6g, %.6g], max error %.3g: %s"
              % (name, out.dtype, list(out.shape), ref.min(), ref.max(), err.max(),
                 "ok" if good else "MISMATCH"))
        ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
