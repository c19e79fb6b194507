#!/usr/bin/env python3
"""Checks that each layer of Kiln includes only the layers it may depend on.

The pipeline runs import -> graph passes -> lowering -> codegen/common ->
{cpu, amdgpu} -> emulator -> driver; a layer's files may include headers of
the layers before it, never of a later one or of a sibling target (cpu and
amdgpu share code only through codegen/common). The runtime includes nothing
of the compiler, MLIR or LLVM. Quote includes are resolved the way the build
resolves them (the compiler root, the dialect and pass include roots, the
runtime's public include directories); system headers are classified by
their first path component.

Usage: check_layering.py ROOT  (prints every violation, exits 1 if any)
"""
import os
import re
import sys

# layer -> source folders (relative to the root)
LAYERS = {
    "dialect": ["dialects"],
    "import": ["compiler/import"],
    "graph": ["passes"],
    "lowering": ["compiler/lowering"],
    "targets": ["compiler/targets"],
    "codegen-common": ["compiler/codegen/common"],
    "cpu": ["compiler/codegen/cpu"],
    "amdgpu": ["compiler/codegen/amdgpu"],
    "emulator": ["compiler/codegen/emulator"],
    # The translation of the final module reads IR; the writer beside it does not.
    "artifact-translation": ["compiler/artifact/TranslateToArtifact.cpp",
                             "compiler/artifact/TranslateToArtifact.h"],
    "artifact-writer": ["compiler/artifact"],
    "driver": ["compiler/driver"],
    "runtime": ["runtime"],
}
# layer -> layers it may include (besides itself)
ALLOWED = {
    "dialect": set(),
    "import": {"dialect"},
    "graph": {"dialect"},
    "lowering": {"dialect", "graph"},
    "targets": set(),
    "codegen-common": {"dialect", "graph"},
    "cpu": {"dialect", "graph", "lowering", "codegen-common"},
    "amdgpu": {"dialect", "graph", "lowering", "codegen-common", "targets"},
    "emulator": {"dialect", "graph", "codegen-common", "amdgpu", "targets", "runtime-public"},
    "artifact-translation": {"dialect", "graph", "artifact-writer", "runtime-public"},
    "artifact-writer": {"runtime-public"},
    "driver": {"dialect", "graph", "lowering", "codegen-common", "cpu", "amdgpu", "emulator",
               "targets", "artifact-writer", "artifact-translation", "runtime-public"},
    "runtime": {"runtime-public"},
}
# Headers outside the project that only the compiler side may include.
COMPILER_ONLY_PREFIXES = ("mlir/", "llvm/", "llvm-c/", "onnx/", "google/protobuf/")


def layer_of_path(rel):
    for layer, folders in LAYERS.items():
        for folder in folders:
            if rel == folder or rel.startswith(folder + "/"):
                return layer
    return None


def resolve(root, including, header):
    """The layer a quoted include lands in, or None for a non-project one."""
    if header.startswith(("kiln/Dialect/",)):
        return "dialect"
    if header.startswith("kiln/Passes/"):
        return "graph"
    if header.startswith("kiln/support/") or header in (
            "kiln/runtime.h", "kiln/runtime.hpp", "kiln/artifact.hpp", "kiln/emu_abi.h",
            "ArtifactFormat.h", "kiln_artifact_generated.h"):
        return "runtime-public"
    local = os.path.join(os.path.dirname(including), header)
    if os.path.exists(local):
        return layer_of_path(os.path.relpath(local, root))
    from_compiler = os.path.join(root, "compiler", header)
    if os.path.exists(from_compiler) or header.endswith(".h.inc"):
        return layer_of_path(os.path.relpath(from_compiler, root))
    return None


INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def check(root):
    violations = []
    seen = set()
    for folders in LAYERS.values():
        for folder in folders:
            for dirpath, _, files in os.walk(os.path.join(root, folder)):
                for name in sorted(files):
                    if not name.endswith((".h", ".hpp", ".cpp", ".c", ".def")):
                        continue
                    path = os.path.join(dirpath, name)
                    rel = os.path.relpath(path, root)
                    if rel in seen:
                        continue
                    seen.add(rel)
                    layer = layer_of_path(rel)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        for lineno, line in enumerate(f, 1):
                            m = INCLUDE.match(line)
                            if not m:
                                continue
                            header = m.group(2)
                            if layer == "runtime" and header.startswith(COMPILER_ONLY_PREFIXES):
                                violations.append(f"{rel}:{lineno}: the runtime includes "
                                                  f"'{header}' (no MLIR, LLVM or ONNX there)")
                                continue
                            if header.startswith(("runtime/", "compiler/", "tools/", "test/")):
                                violations.append(f"{rel}:{lineno}: '{header}' is spelled from "
                                                  "the source root, which no library exports")
                                continue
                            target = resolve(root, path, header)
                            if target is None or target == layer:
                                continue
                            if layer == "runtime" and target == "runtime-public":
                                continue
                            if target not in ALLOWED[layer]:
                                violations.append(f"{rel}:{lineno}: layer '{layer}' includes "
                                                  f"'{header}' of layer '{target}'")
    return violations


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    violations = check(os.path.abspath(root))
    for v in violations:
        print(v)
    print(f"{len(violations)} layering violation(s)")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
