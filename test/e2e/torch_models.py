#!/usr/bin/python3
"""Small PyTorch / torchvision models for test/e2e/run_torch_models.py,
exported to ONNX with the Debian torch (random weights, fixed seeds).

They cover what ONNX's own backend tests cover thinly: segmentation heads with
Resize and ConvTranspose, recurrent layers (LSTM, GRU, RNN), a transformer
exported in training mode (Dropout nodes with their mask output), control flow
scripted with torch.jit.script (If and Loop that depend on a graph input) and
a few classifiers and op mixes (Einsum, TopK, GatherElements, GroupNorm,
InstanceNorm, ...).

For each model NAME the output folder receives
  NAME.onnx               the model (onnx.checker-clean)
  NAME.inputs.npz         its inputs (fixed seed)
  NAME.torch_outputs.npz  PyTorch's outputs for them
  NAME.json               sidecar: inputs, outputs, op types, pinned inputs,
                          and the cache key (sha256 of this file and the
                          torch / torchvision / onnx versions); a model whose
                          sidecar key matches is not exported again

Usage: /usr/bin/python3 test/e2e/torch_models.py --out DIR [--models a,b] [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench/models"))
from export import op_types  # noqa: E402  (the op types of a model, subgraphs included)

OPSET = 17
WEIGHT_SEED = 0
INPUT_SEED = 1234


@dataclass
class Spec:
    """One model: build() -> (module, inputs); how it is exported."""
    build: Callable[[], tuple[nn.Module, dict[str, np.ndarray]]]
    outputs: list[str]
    # torch.jit.script the module before exporting (control flow survives).
    script: bool = False
    # Export in training mode, without constant folding (Dropout nodes stay).
    training: bool = False
    # Inputs kiln-compile pins with --input-value (their values from the
    # inputs); the comment says why.
    pinned: list[str] = field(default_factory=list)
    note: str = ""


def randomize_norms(model: nn.Module, seed: int = WEIGHT_SEED + 1) -> None:
    """Norm scales/shifts and batch-norm statistics off their defaults, so that
    a compiler that dropped them would be caught."""
    gen = torch.Generator().manual_seed(seed)

    def noise(t: torch.Tensor) -> torch.Tensor:
        return 0.1 * torch.randn(t.shape, generator=gen)

    norms = (nn.LayerNorm, nn.GroupNorm, nn.BatchNorm1d, nn.BatchNorm2d,
             nn.InstanceNorm1d, nn.InstanceNorm2d)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, norms):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(1.0 + noise(m.weight))
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_(noise(m.bias))
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                m.running_mean.copy_(noise(m.running_mean))
                m.running_var.copy_(1.0 + noise(m.running_var).abs())


def randn(*shape: int, seed: int = INPUT_SEED) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def image(size: int = 64, batch: int = 1) -> dict[str, np.ndarray]:
    return {"input": randn(batch, 3, size, size)}


# ---------------------------------------------------------------------------
# Vision: torchvision classifiers and segmentation heads
# ---------------------------------------------------------------------------

class OutOnly(nn.Module):
    """torchvision segmentation models return {"out": ...}: keep the tensor."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def torchvision_model(ctor: Callable[..., nn.Module], size: int, segmentation: bool = False,
                      **kwargs) -> Callable:
    def build():
        torch.manual_seed(WEIGHT_SEED)
        model = ctor(weights=None, **kwargs)
        if segmentation:
            model = OutOnly(model)
        randomize_norms(model)
        return model.eval(), image(size)
    return build


class UNet(nn.Module):
    """Two-level U-Net: ConvTranspose up-sampling on one level, nn.Upsample
    nearest and bilinear on the others, skip connections by Concat."""

    def __init__(self, c: int = 8, classes: int = 3):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                                 nn.Conv2d(o, o, 3, padding=1), nn.ReLU())
        self.enc1, self.enc2, self.enc3 = block(3, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.bottom = block(4 * c, 4 * c)
        self.pool = nn.MaxPool2d(2)
        self.up3 = nn.ConvTranspose2d(4 * c, 4 * c, 2, stride=2)
        self.dec3 = block(8 * c, 2 * c)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec2 = block(4 * c, c)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec1 = block(2 * c, c)
        # An odd ConvTranspose: kernel 3, stride 2, padding 1, output_padding 1.
        self.head = nn.ConvTranspose2d(c, classes, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        b = self.bottom(self.pool(e3))
        d3 = self.dec3(torch.cat([self.up3(b), e3], 1))
        d2 = self.dec2(torch.cat([self.up2(d3), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.head(d1)


class FPNHead(nn.Module):
    """Feature-pyramid head: lateral 1x1 convs, top-down F.interpolate
    (nearest to a size, bilinear align_corners=True, bicubic by scale),
    per-level outputs plus a fused one."""

    def __init__(self, c: int = 16, classes: int = 4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, stride=2, padding=1), nn.ReLU())
        self.c2 = nn.Sequential(nn.Conv2d(c, 2 * c, 3, stride=2, padding=1), nn.ReLU())
        self.c3 = nn.Sequential(nn.Conv2d(2 * c, 4 * c, 3, stride=2, padding=1), nn.ReLU())
        self.c4 = nn.Sequential(nn.Conv2d(4 * c, 4 * c, 3, stride=2, padding=1), nn.ReLU())
        self.lat = nn.ModuleList(nn.Conv2d(k, c, 1) for k in (c, 2 * c, 4 * c, 4 * c))
        self.smooth = nn.ModuleList(nn.Conv2d(c, c, 3, padding=1) for _ in range(3))
        self.cls = nn.Conv2d(4 * c, classes, 1)

    def forward(self, x):
        f1 = self.stem(x)
        f2 = self.c2(f1)
        f3 = self.c3(f2)
        f4 = self.c4(f3)
        p4 = self.lat[3](f4)
        p3 = self.lat[2](f3) + F.interpolate(p4, size=f3.shape[-2:], mode="nearest")
        p2 = self.lat[1](f2) + F.interpolate(p3, scale_factor=2.0, mode="bilinear",
                                             align_corners=True)
        p1 = self.lat[0](f1) + F.interpolate(p2, scale_factor=2.0, mode="bicubic",
                                             align_corners=False)
        p3, p2, p1 = self.smooth[0](p3), self.smooth[1](p2), self.smooth[2](p1)
        size = p1.shape[-2:]
        fused = torch.cat([p1] + [F.interpolate(p, size=size, mode="bilinear",
                                                align_corners=False) for p in (p2, p3, p4)], 1)
        logits = F.interpolate(self.cls(fused), scale_factor=2.0, mode="bilinear",
                               align_corners=False)
        return logits, p4


def unet():
    torch.manual_seed(WEIGHT_SEED)
    model = UNet()
    randomize_norms(model)
    return model.eval(), image(32)


def fpn():
    torch.manual_seed(WEIGHT_SEED)
    return FPNHead().eval(), image(64)


# ---------------------------------------------------------------------------
# Recurrent
# ---------------------------------------------------------------------------

class LSTMModel(nn.Module):
    """Two-layer bidirectional LSTM with given initial states, then a linear
    projection of the last step."""

    def __init__(self, features=16, hidden=24, layers=2, classes=5):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=layers, bidirectional=True,
                            batch_first=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return self.fc(y[:, -1]), h, c


def lstm():
    torch.manual_seed(WEIGHT_SEED)
    batch, seq, feat, hidden, layers = 2, 10, 16, 24, 2
    return LSTMModel(feat, hidden, layers).eval(), {
        "x": randn(batch, seq, feat),
        "h0": randn(2 * layers, batch, hidden, seed=INPUT_SEED + 1),
        "c0": randn(2 * layers, batch, hidden, seed=INPUT_SEED + 2),
    }


class GRUModel(nn.Module):
    """Embedding -> two-layer bidirectional GRU (zero initial state, so the
    exporter leaves initial_h out) -> per-step logits."""

    def __init__(self, vocab=50, emb=16, hidden=20, classes=7):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.gru = nn.GRU(emb, hidden, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, tokens):
        y, h = self.gru(self.emb(tokens))  # seq-major
        return self.fc(y), h


def gru():
    torch.manual_seed(WEIGHT_SEED)
    tokens = np.random.default_rng(INPUT_SEED).integers(0, 50, size=(12, 2), dtype=np.int64)
    return GRUModel().eval(), {"tokens": tokens}


class RNNModel(nn.Module):
    """An Elman RNN with tanh, then one with relu (two ONNX RNN nodes with
    different activations), batch-first."""

    def __init__(self, feat=8, hidden=16):
        super().__init__()
        self.rnn1 = nn.RNN(feat, hidden, nonlinearity="tanh", batch_first=True)
        self.rnn2 = nn.RNN(hidden, hidden, nonlinearity="relu", batch_first=True,
                           bidirectional=True)

    def forward(self, x, h0):
        y, h1 = self.rnn1(x, h0)
        y, h2 = self.rnn2(y)
        return y, h1, h2


def rnn():
    torch.manual_seed(WEIGHT_SEED)
    return RNNModel().eval(), {"x": randn(3, 9, 8),
                               "h0": randn(1, 3, 16, seed=INPUT_SEED + 1)}


# ---------------------------------------------------------------------------
# Transformers
# ---------------------------------------------------------------------------

class TransformerTrain(nn.Module):
    """nn.TransformerEncoder (post-norm and pre-norm layers, relu and gelu),
    exported in training mode: every dropout (p = 0) is an ONNX Dropout with
    training_mode true and a mask output."""

    def __init__(self, d=32, heads=4, ffn=64):
        super().__init__()
        post = nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.0, batch_first=True)
        self.post = nn.TransformerEncoder(post, num_layers=1)
        self.pre = nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.0, activation="gelu",
                                              batch_first=True, norm_first=True)
        self.drop = nn.Dropout(0.0)

    def forward(self, x, mask):
        return self.drop(self.pre(self.post(x, mask=mask)))


def transformer_train():
    torch.manual_seed(WEIGHT_SEED)
    model = TransformerTrain()
    randomize_norms(model)
    seq = 8
    causal = np.triu(np.full((seq, seq), -1e9, dtype=np.float32), k=1)
    # Batch 1: the gfx942 compile time grows fast with the size of the q/k/v
    # Slice kernels (each a single-thread loop LLVM unrolls); at batch 2 the
    # six of them took ~200 s of kiln-compile --target=gfx942.
    return model.train(), {"x": randn(1, seq, 32), "mask": causal}


class ViTBlock(nn.Module):
    """A small vision transformer: patch embedding (strided Conv), class token,
    position embedding, two pre-norm blocks with einsum attention and GELU."""

    def __init__(self, d=32, heads=4, patch=8, size=32, classes=10, depth=2):
        super().__init__()
        self.heads = heads
        self.patch = nn.Conv2d(3, d, patch, stride=patch)
        n = (size // patch) ** 2
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, d))
        self.pos = nn.Parameter(0.02 * torch.randn(1, n + 1, d))
        self.blocks = nn.ModuleList(
            nn.ModuleDict({"n1": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d),
                           "proj": nn.Linear(d, d), "n2": nn.LayerNorm(d),
                           "fc1": nn.Linear(d, 4 * d), "fc2": nn.Linear(4 * d, d)})
            for _ in range(depth))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        b, n, d = x.shape
        x = torch.cat([self.cls.expand(b, 1, d), x], 1) + self.pos
        h = self.heads
        for blk in self.blocks:
            qkv = blk["qkv"](blk["n1"](x)).reshape(b, n + 1, 3, h, d // h)
            q, k, v = qkv.unbind(2)
            att = torch.einsum("bqhd,bkhd->bhqk", q, k) * (d // h) ** -0.5
            att = att.softmax(-1)
            out = torch.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, n + 1, d)
            x = x + blk["proj"](out)
            x = x + blk["fc2"](F.gelu(blk["fc1"](blk["n2"](x))))
        return self.head(self.norm(x[:, 0]))


def vit():
    torch.manual_seed(WEIGHT_SEED)
    model = ViTBlock()
    randomize_norms(model)
    return model.eval(), image(32, batch=2)


# ---------------------------------------------------------------------------
# Audio and op mixes
# ---------------------------------------------------------------------------

class Audio1D(nn.Module):
    """1-D conv front end on a waveform: strided Conv1d, GroupNorm,
    InstanceNorm1d (affine), dilated and grouped Conv1d, PReLU, LeakyReLU,
    AvgPool1d, AdaptiveAvgPool1d."""

    def __init__(self, classes=6):
        super().__init__()
        self.conv1 = nn.Conv1d(1, 16, 9, stride=4, padding=4)
        self.gn = nn.GroupNorm(4, 16)
        self.conv2 = nn.Conv1d(16, 32, 5, dilation=2, padding=4, groups=4)
        self.inorm = nn.InstanceNorm1d(32, affine=True)
        self.prelu = nn.PReLU(32)
        self.pool = nn.AvgPool1d(3, stride=2, padding=1)
        self.conv3 = nn.Conv1d(32, 32, 3, padding=1)
        self.fc = nn.Linear(32, classes)

    def forward(self, wave):
        x = F.leaky_relu(self.gn(self.conv1(wave)), 0.1)
        x = self.pool(self.prelu(self.inorm(self.conv2(x))))
        x = F.gelu(self.conv3(x))
        return self.fc(F.adaptive_avg_pool1d(x, 1).squeeze(-1))


def audio():
    torch.manual_seed(WEIGHT_SEED)
    model = Audio1D()
    randomize_norms(model)
    return model.eval(), {"wave": randn(2, 1, 1024)}


class OpMix(nn.Module):
    """Einsum (bilinear form, batched matmul, trace-like reduction), TopK
    (values and indices), GatherElements (torch.gather), ArgMax, CumSum,
    ScatterElements-free index math, Where."""

    def __init__(self, d=16):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d, d, d) * 0.1)
        self.proj = nn.Linear(d, d)

    def forward(self, x, y, index):
        # x, y [B, N, D]; index [B, N, K] int64 into D
        bil = torch.einsum("bnd,dek,bne->bnk", x, self.w, y)
        mm = torch.einsum("bnd,bmd->bnm", x, y)
        diag = torch.einsum("bnn->bn", mm)
        values, indices = torch.topk(self.proj(bil), k=4, dim=-1)
        gathered = torch.gather(x, 2, index)
        best = torch.argmax(mm, dim=-1)
        run = torch.cumsum(gathered, dim=1)
        sel = torch.where(run > 0, run, 0.5 * run)
        return values, indices, sel, best, diag


def opmix():
    torch.manual_seed(WEIGHT_SEED)
    rng = np.random.default_rng(INPUT_SEED)
    b, n, d, k = 2, 8, 16, 5
    return OpMix(d).eval(), {
        "x": rng.standard_normal((b, n, d), dtype=np.float32),
        "y": rng.standard_normal((b, n, d), dtype=np.float32),
        "index": rng.integers(0, d, size=(b, n, k), dtype=np.int64),
    }


# ---------------------------------------------------------------------------
# Control flow (torch.jit.script)
# ---------------------------------------------------------------------------

class ScriptLoop(nn.Module):
    """A Loop whose trip count is the int64 input `steps`, carrying a hidden
    state, with a branch on a loop-invariant input `mode` inside."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.cell = nn.Linear(d, d)
        self.alt = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, steps: torch.Tensor, mode: torch.Tensor):
        h = x
        for _ in range(int(steps)):
            if bool(mode > 0):
                h = torch.tanh(self.cell(h)) + x
            else:
                h = torch.sigmoid(self.alt(h))
        return h


def script_loop():
    torch.manual_seed(WEIGHT_SEED)
    return ScriptLoop().eval(), {"x": randn(2, 16), "steps": np.array(3, dtype=np.int64),
                                 "mode": np.array(1, dtype=np.int64)}


class ScriptDataIf(nn.Module):
    """A branch on the data itself (the sign of x's mean): nothing to pin."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x: torch.Tensor):
        if bool(x.mean() > 0):
            y = torch.relu(self.a(x))
        else:
            y = -torch.relu(self.b(x))
        return y


def script_data_if():
    torch.manual_seed(WEIGHT_SEED)
    return ScriptDataIf().eval(), {"x": randn(4, 16)}


class MaskSelect(nn.Module):
    """Boolean-mask indexing and nonzero (sizes the data decides): a scale of
    the positive entries of a projection, and their coordinates."""

    def __init__(self, d: int = 8):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor):
        y = self.proj(x)
        picked = y[y > 0] * 2.0
        return torch.nonzero(y > 0.5), torch.sigmoid(picked)


def mask_select():
    torch.manual_seed(WEIGHT_SEED)
    return MaskSelect().eval(), {"x": randn(5, 8)}


# ---------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------

seg = torchvision.models.segmentation
tv = torchvision.models
MODELS: dict[str, Spec] = {
    "lraspp_mobilenet_v3_large": Spec(
        torchvision_model(seg.lraspp_mobilenet_v3_large, 64, segmentation=True,
                          weights_backbone=None, num_classes=4), ["out"]),
    "deeplabv3_mobilenet_v3_large": Spec(
        torchvision_model(seg.deeplabv3_mobilenet_v3_large, 64, segmentation=True,
                          weights_backbone=None, num_classes=4), ["out"]),
    "unet": Spec(unet, ["mask"]),
    "fpn": Spec(fpn, ["logits", "p4"]),
    "lstm": Spec(lstm, ["logits", "hn", "cn"]),
    "gru": Spec(gru, ["logits", "hn"]),
    "rnn": Spec(rnn, ["y", "h1", "h2"]),
    "transformer_train": Spec(transformer_train, ["y"], training=True),
    "vit": Spec(vit, ["logits"]),
    "audio1d": Spec(audio, ["logits"]),
    "opmix": Spec(opmix, ["values", "indices", "sel", "best", "diag"]),
    "script_loop": Spec(script_loop, ["h"], script=True, pinned=["steps", "mode"],
                        note="trip count and branch fold only with steps and mode pinned"),
    # The same graph with nothing pinned: needs control flow at run time.
    "script_loop_unpinned": Spec(script_loop, ["h"], script=True),
    "script_data_if": Spec(script_data_if, ["y"], script=True),
    "mask_select": Spec(mask_select, ["coords", "picked"]),
    "squeezenet1_1": Spec(torchvision_model(tv.squeezenet1_1, 64), ["logits"]),
    "shufflenet_v2_x0_5": Spec(torchvision_model(tv.shufflenet_v2_x0_5, 64), ["logits"]),
    "mobilenet_v3_small": Spec(torchvision_model(tv.mobilenet_v3_small, 64), ["logits"]),
    "efficientnet_b0": Spec(torchvision_model(tv.efficientnet_b0, 64), ["logits"]),
}


def cache_key(name: str) -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(json.dumps([name, torch.__version__, torchvision.__version__,
                         onnx.__version__, OPSET]).encode())
    return h.hexdigest()




def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


def export(name: str, out: Path, force: bool = False) -> dict:
    """Exports one model unless its sidecar has the current key; returns the sidecar."""
    spec = MODELS[name]
    key = cache_key(name)
    sidecar_path = out / f"{name}.json"
    files = [out / f"{name}{s}" for s in (".onnx", ".inputs.npz", ".torch_outputs.npz")]
    if not force and sidecar_path.exists() and all(f.exists() for f in files):
        try:
            sidecar = json.loads(sidecar_path.read_text())
            if sidecar.get("key") == key:
                return {**sidecar, "cached": True}
        except ValueError:
            pass
    start = time.perf_counter()
    module, inputs = spec.build()
    args = tuple(torch.from_numpy(a) for a in inputs.values())
    with torch.no_grad():
        outputs = module(*args)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    outputs = {n: t.numpy() for n, t in zip(spec.outputs, outputs, strict=True)}
    exported = torch.jit.script(module) if spec.script else module
    tmp = out / f".{name}.{os.getpid()}.onnx"
    mode = torch.onnx.TrainingMode.TRAINING if spec.training else torch.onnx.TrainingMode.EVAL
    with torch.no_grad():
        torch.onnx.export(exported, args, str(tmp), input_names=list(inputs),
                          output_names=spec.outputs, opset_version=OPSET, training=mode,
                          do_constant_folding=not spec.training)
    onnx.checker.check_model(str(tmp), full_check=True)
    model = onnx.load(str(tmp))
    graph_inputs = [i.name for i in model.graph.input
                    if i.name not in {t.name for t in model.graph.initializer}]
    if graph_inputs != list(inputs) or [o.name for o in model.graph.output] != spec.outputs:
        raise RuntimeError(f"{name}: ONNX I/O {graph_inputs} -> "
                           f"{[o.name for o in model.graph.output]} differ from the module's")
    os.replace(tmp, files[0])
    save_npz(files[1], inputs)
    save_npz(files[2], outputs)
    sidecar = {
        "name": name, "key": key,
        "inputs": [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)}
                   for k, v in inputs.items()],
        "outputs": [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype)}
                    for k, v in outputs.items()],
        "pinned": spec.pinned, "training": spec.training, "script": spec.script,
        "op_types": op_types(model),
        "export_seconds": round(time.perf_counter() - start, 2),
    }
    sidecar_path.write_text(json.dumps(sidecar, indent=2) + "\n")
    return {**sidecar, "cached": False}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; known: {', '.join(MODELS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        info = export(name, args.out, args.force)
        status = "cached" if info["cached"] else f"exported in {info['export_seconds']}s"
        print(f"{name}: {status}; ops: {' '.join(info['op_types'])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
