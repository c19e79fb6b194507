"""Checks every Kiln tool's --help and --version (test/Driver/help.test).

Compiler tools (LLVM's command line): --help shows only the tool's own
categories, every option it lists is in --llvm-help, and none of libLLVM's
backend options (which --llvm-help must still show). Runtime tools (their own
parsers): --help documents --version. Every tool: `TOOL --version` starts with
"TOOL MAJOR.MINOR.PATCH (revision R)" and exits 0.
"""
import os
import re
import subprocess
import sys

TOOLS = sys.argv[1]
# libLLVM's own (static) options: in --llvm-help, never in --help.
LLVM_OPTIONS = ("--aarch64-neon-syntax", "--amdgpu-bypass-slow-div", "--x86-use-vzeroupper",
                "--polly", "--ir2vec-kind", "--bpf-stack-size", "--arm-implicit-it",
                "--amdgpu-sdwa-peephole", "--debug-pass", "--color")
# kiln-compile shows nothing of LLVM's or MLIR's, not even an MLIR pass.
FOREIGN = {"kiln-compile": ("--aarch64-", "--amdgpu-", "--x86-", "--polly", "--arm-",
                            "--ir2vec-", "--remarks-", "--bpf-", "--debug-", "--print-",
                            "--mlir-"),
           "kiln-opt": LLVM_OPTIONS}
CATEGORIES = {
    "kiln-compile": {"Generic Options", "kiln-compile options",
                     "kiln-compile quantization options"},
    # mlir-opt's options (with its remark filters) and the pass list, which
    # includes MLIR's amdgpu-* and arm-* passes.
    "kiln-opt": {"Generic Options", "General options", "Remark Options"},
}
failures = []


def run(tool, *args):
    result = subprocess.run([os.path.join(TOOLS, tool)] + list(args), capture_output=True,
                            text=True)
    if result.returncode != 0:
        failures.append("%s %s exited %d: %s" % (tool, " ".join(args), result.returncode,
                                                  result.stderr[-500:]))
    return result.stdout


def options(text):
    return set(re.findall(r"^\s+(--?[a-zA-Z][\w.-]*)", text, re.MULTILINE))


for tool, allowed in CATEGORIES.items():
    help_text = run(tool, "--help")
    headers = set(re.findall(r"^(\S.*[Oo]ptions):$", help_text, re.MULTILINE))
    if not headers <= allowed:
        failures.append("%s --help has categories %s" % (tool, sorted(headers - allowed)))
    listed = options(help_text)
    everything = options(run(tool, "--llvm-help"))
    foreign = sorted(o for o in listed if o.startswith(FOREIGN[tool]))
    if foreign:
        failures.append("%s --help lists %s" % (tool, foreign[:10]))
    if not listed <= everything:
        failures.append("%s --help lists what --llvm-help does not: %s" %
                        (tool, sorted(listed - everything)[:10]))
    missing = [o for o in LLVM_OPTIONS if o not in everything and o != "--polly"]
    if missing:
        failures.append("%s --llvm-help lacks LLVM's %s" % (tool, missing))
    for required in ("--help", "--version", "--llvm-help"):
        if required not in listed:
            failures.append("%s --help lacks %s" % (tool, required))
    print("%s: --help %d options in %s; --llvm-help %d" % (tool, len(listed), sorted(headers),
                                                          len(everything)))

for tool in ("kiln-run", "kiln-bench", "kiln-inspect", "kiln-serve", "kiln-loadgen"):
    if "--version" not in run(tool, "--help"):
        failures.append("%s --help does not mention --version" % tool)

for tool in ("kiln-compile", "kiln-opt", "kiln-run", "kiln-bench", "kiln-inspect",
             "kiln-serve", "kiln-loadgen"):
    first = run(tool, "--version").splitlines()[:1]
    if not first or not re.match(r"^%s \d+\.\d+\.\d+ \(revision \S+\)$" % tool, first[0]):
        failures.append("%s --version starts with %r" % (tool, first))

if failures:
    sys.exit("FAIL:\n  " + "\n  ".join(failures))
print("PASS")
