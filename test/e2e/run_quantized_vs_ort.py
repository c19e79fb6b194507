#!/usr/bin/python3
"""Post-training INT8 quantization end to end, against ONNX Runtime.

  /usr/bin/python3 test/e2e/run_quantized_vs_ort.py --build BUILD [--keep]

A small float CNN (two convolutions with ReLU, global average pooling, a fully
connected layer exported as Gemm with transB) is quantized by
`kiln-compile --quantize=int8 --calibration=DIR` for cpu and emulated gfx942,
once per calibration method. The reference is not Kiln's: from the
calibration table Kiln wrote, this script builds the equivalent QDQ model with
bench/qdq_from_table.py (QuantizeLinear/DequantizeLinear on each quantized activation,
uint8 asymmetric from the table's range; int8 weights per output channel,
max |w| / 127, as ONNX Runtime's quantizer makes them) and runs it on ONNX
Runtime. Per element, Kiln's outputs must match ONNX Runtime's within one
quantization step of the last quantized activation times the weights' norm
(the two may round a value that falls on a rounding boundary differently after
float sums in another order), and at least half of the runs must match in
every element to 1e-4.

The same QDQ model compiled by Kiln without --quantize (a pre-quantized
model) must reach the same integer contractions (checked in the dispatch IR)
and give bit-identical outputs to the --quantize artifact. The float model's
cosine similarity with the quantized one (from --quant-report) must be at
least 0.99, and the report's per-layer SQNR must be ONNX Runtime's within
0.1 dB (per layer: the float model against a QDQ model that quantizes only
that layer, on the held-back samples). Exit status 1 on any failure.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from host import host_has_vnni

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# ONNX Runtime's fused int8 kernels on hosts without VNNI use vpmaddubsw,
# whose u8 x s8 pair sums saturate at 16 bits: its results are then not the
# QDQ model's. There the reference runs the QDQ model unfused (graph
# optimization 'basic': DequantizeLinear and float convolutions).
ORT_LEVEL = [] if host_has_vnni() else ["--optimization", "basic"]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from qdq_from_table import activation_params, qdq_model  # noqa: E402
OPSET = 13
rng = np.random.RandomState(11)


def float_model():
    w1 = (rng.randn(8, 3, 3, 3) * 0.4).astype(np.float32)
    b1 = (rng.randn(8) * 0.1).astype(np.float32)
    w2 = (rng.randn(16, 8, 3, 3) * 0.2).astype(np.float32)
    b2 = (rng.randn(16) * 0.1).astype(np.float32)
    w3 = (rng.randn(10, 16) * 0.5).astype(np.float32)
    b3 = (rng.randn(10) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"), (w3, "w3"), (b3, "b3")]]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{r.stdout}{r.stderr}")
    return r


def check_layer_sqnr(model, table, report, calib, d):
    """Kiln's per-layer SQNR against ONNX Runtime's: per layer, the float
    model and a QDQ model quantizing only that layer, both with the layer's
    output as an extra graph output, on the samples Kiln held back (the last
    fifth of the calibration samples)."""
    failures = []
    held = sorted(calib.iterdir())[-max(1, len(list(calib.iterdir())) // 5):]
    layers = {l["node"]: l["sqnr_db"] for l in report["layers"]}
    if sorted(layers) != ["conv1", "conv2", "fc"]:
        return [f"report layers {sorted(layers)}, expected conv1, conv2, fc"]
    for node in model.graph.node:
        if node.name not in layers:
            continue
        out = node.output[0]
        outputs = {o.name for o in model.graph.output}
        extra = [] if out in outputs else [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)]
        ref_model, qdq = onnx.ModelProto(), qdq_model(model, table, only={node.name})
        ref_model.CopyFrom(model)
        ref_model.graph.output.extend(extra)
        qdq.graph.output.extend(extra)
        signal = noise = 0.0
        for kind, m in [("float", ref_model), ("qdq", qdq)]:
            onnx.save(m, d / f"sqnr-{node.name}-{kind}.onnx")
        for sample in held:
            got = {}
            for kind in ["float", "qdq"]:
                o = d / f"sqnr-{node.name}-{kind}-{sample.name}"
                run(["node", ROOT / "bench/ort/ort_run.js", d / f"sqnr-{node.name}-{kind}.onnx",
                     "--input", f"x={sample / 'x.npy'}", "--output-dir", o, *ORT_LEVEL])
                got[kind] = np.load(o / f"{out}.npy").astype(np.float64)
            signal += float((got["float"] ** 2).sum())
            noise += float(((got["float"] - got["qdq"]) ** 2).sum())
        ort = 10 * np.log10(signal / noise)
        kiln = layers[node.name]
        print(f"layer {node.name}: SQNR kiln {kiln:.2f} dB, onnxruntime {ort:.2f} dB")
        # The same quantization on the same inputs: only values that fall on
        # a rounding boundary may round apart.
        if kiln is None or abs(kiln - ort) > 0.1:
            failures.append(f"layer {node.name}: SQNR {kiln} dB, ONNX Runtime's {ort:.2f} dB")
    ranked = sorted(layers, key=lambda n: layers[n])
    print(f"layers by SQNR, lowest first: {', '.join(ranked)}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, type=Path)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    bin_dir = args.build.resolve() / "bin"
    work = Path(tempfile.mkdtemp(prefix="kiln-quant-"))
    failures = []
    compared = exact = 0
    try:
        model = float_model()
        onnx.save(model, work / "cnn.onnx")
        calib = work / "calibration"
        for i in range(10):
            (calib / f"{i:02d}").mkdir(parents=True)
            np.save(calib / f"{i:02d}" / "x.npy", rng.randn(1, 3, 16, 16).astype(np.float32))
        test = [rng.randn(1, 3, 16, 16).astype(np.float32) for _ in range(3)]
        for method in ["minmax", "percentile", "entropy", "mse"]:
            d = work / method
            d.mkdir()
            out = run([bin_dir / "kiln-compile", work / "cnn.onnx", "--target=cpu,gfx942", "--emulation",
                       "--quantize=int8", f"--calibration={calib}", f"--calibration-method={method}",
                       f"--calibration-table={d / 'table.json'}", f"--quant-report={d / 'report.json'}",
                       "-o", d / "q.kiln", f"--dump-ir={d / 'ir'}"]).stdout
            table = json.loads((d / "table.json").read_text())
            report = json.loads((d / "report.json").read_text())
            if sorted(table["tensors"]) != ["f", "r1", "x"]:
                failures.append(f"{method}: table tensors {sorted(table['tensors'])}, expected f, r1, x")
            if report["integer_ops"] != 3:
                failures.append(f"{method}: {report['integer_ops']} integer ops, expected 3 (2 conv, 1 matmul)")
            cosine = min(o["cosine"] for o in report["outputs"])
            if cosine < 0.99:
                failures.append(f"{method}: cosine {cosine:.5f} against the float model < 0.99")
            qdq = qdq_model(model, table)
            onnx.save(qdq, d / "qdq.onnx")
            run([bin_dir / "kiln-compile", d / "qdq.onnx", "--target=cpu,gfx942", "--emulation", "-o", d / "qdq.kiln"])
            dispatch = run([bin_dir / "kiln-compile", d / "qdq.onnx", "--emit=dispatch"]).stdout
            for op, count in [("kiln.conv_integer", 2), ("kiln.matmul_integer", 1)]:
                if dispatch.count(op + " ") != count:
                    failures.append(f"{method}: the QDQ model's dispatch IR has {dispatch.count(op + ' ')} {op}, "
                                    f"expected {count}")
            # One quantization step of the input of fc, through its weights.
            fc_scale, _ = activation_params(*table["tensors"]["f"]["range"])
            w3 = numpy_helper.to_array([i for i in model.graph.initializer if i.name == "w3"][0])
            step = float(fc_scale) * float(np.abs(w3).sum(axis=1).max())
            worst = 0.0
            for i, x in enumerate(test):
                np.save(d / f"x{i}.npy", x)
                run(["node", ROOT / "bench/ort/ort_run.js", d / "qdq.onnx", "--input", f"x={d / f'x{i}.npy'}",
                     "--output-dir", d / f"ort{i}", *ORT_LEVEL])
                ref = np.load(d / f"ort{i}" / "logits.npy")
                outs = {}
                for art in ["q", "qdq"]:
                    for dev in ["cpu", "emu:gfx942"]:
                        o = d / f"{art}-{dev.replace(':', '_')}-{i}"
                        run([bin_dir / "kiln-run", d / f"{art}.kiln", f"--device={dev}", f"--input=x=@{d / f'x{i}.npy'}",
                             f"--output-dir={o}"])
                        outs[art, dev] = np.load(o / "logits.npy")
                for dev in ["cpu", "emu:gfx942"]:
                    if not np.array_equal(outs["q", dev], outs["qdq", dev]):
                        failures.append(f"{method} sample {i} {dev}: --quantize and the QDQ model differ")
                for key, got in outs.items():
                    err = np.abs(got - ref)
                    worst = max(worst, float(err.max()))
                    compared += 1
                    exact += bool((err <= 1e-4 + 1e-4 * np.abs(ref)).all())
                    if not (err <= step).all():
                        failures.append(f"{method} sample {i} {key}: max |kiln - ort| {err.max():.3g} "
                                        f"> one quantization step through fc ({step:.3g})")
            print(f"{method}: cosine vs float {cosine:.5f}, max |kiln - onnxruntime qdq| {worst:.3g} "
                  f"(bound {step:.3g}); {out.splitlines()[0]}")
            if method == "minmax":
                failures += check_layer_sqnr(model, table, report, calib, d)
        # A value on a rounding boundary may round the other way after float
        # sums in another order (one step, bounded above); most runs must
        # still agree with ONNX Runtime to 1e-4 everywhere.
        if exact < compared // 2:
            failures.append(f"only {exact} of {compared} runs agree with ONNX Runtime to 1e-4 everywhere")
        print(f"{exact} of {compared} runs agree with ONNX Runtime to 1e-4 in every element")
    finally:
        if args.keep:
            print(f"work files in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL", f)
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
