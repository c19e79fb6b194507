#!/usr/bin/python3
"""Checks of `kiln-inspect --perf --json` against independent sources.

  mca    the main loop's cycles per iteration against llvm-mca-22 run on the
         same loop cut from kiln-compile's --emit=isa text (the label with
         the most matrix instructions up to the last branch back to it);
  rates  on the targets kiln-inspect times with LLVM's model, the matrix
         pipe's cycles per matrix instruction, in clocks, against the clocks
         the chip's published rate gives (m*n*k*2 over the peak per SIMD);
  rank   every chip estimates the --worse artifact's program slower than
         the --better one's;
  svg    the roofline picture parses as XML and has one dot per estimated
         dispatch with flops and bytes.

Exit status 1 with a message on the first failed check.
"""

import argparse
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree


def fail(message):
    print("check_perf: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def load(path):
    with open(path) as f:
        return json.load(f)


def target_of(report, name):
    for t in report["targets"]:
        if t["target"] == name:
            return t
    fail("no target %s in the report" % name)


def main_loop(isa_text):
    """The instructions from the label with the most matrix instructions in
    [label, last branch to it] through that branch."""
    lines = [line.split(";")[0].rstrip() for line in isa_text.splitlines()]
    labels = {}
    for i, line in enumerate(lines):
        m = re.match(r"^(\.LBB\d+_\d+):", line)
        if m:
            labels[m.group(1)] = i
    best = None
    for label, start in labels.items():
        ends = [i for i, line in enumerate(lines)
                if i > start and re.search(r"\bs_(c?branch\w*)\s+" + re.escape(label) + r"\b", line)]
        if not ends:
            continue
        end = ends[-1]
        body = [l.strip() for l in lines[start + 1:end + 1]
                if l.strip() and not l.strip().startswith(".") and not l.strip().endswith(":")]
        matrix = sum(1 for l in body if re.match(r"v_(mfma|wmma)", l))
        if best is None or matrix > best[0]:
            best = (matrix, body)
    if best is None:
        fail("no loop in the ISA text")
    return best[1]


def check_mca(args):
    report = load(args.json)
    kernel = target_of(report, args.target)["kernels"][0]
    loop = kernel.get("loop")
    if not loop:
        fail("kernel %s has no timed loop: %s" % (kernel["name"], kernel.get("loop_error")))
    with open(args.isa) as f:
        body = main_loop(f.read())
    if abs(len(body) - loop["instructions"]) > 0:
        fail("the ISA's loop has %d instructions, kiln-inspect's %d"
             % (len(body), loop["instructions"]))
    # Branch targets: llvm-mca needs a label for them to parse.
    text = "\n".join(re.sub(r"(s_c?branch\w*)\s+\S+", r"\1 .Lhead", l) for l in body)
    mca = subprocess.run(
        [args.llvm_mca, "-mtriple=amdgcn-amd-amdhsa", "-mcpu=" + args.target,
         "-iterations=100"],
        input=".Lhead:\n" + text + "\n", capture_output=True, text=True)
    m = re.search(r"Total Cycles:\s+(\d+)", mca.stdout)
    if mca.returncode != 0 or not m:
        fail("llvm-mca failed: " + mca.stderr[-2000:])
    expected = int(m.group(1)) / 100
    got = loop["cycles_per_iteration"]
    if abs(got - expected) > 0.01 * expected:
        fail("cycles per iteration: kiln-inspect %.2f, llvm-mca %.2f" % (got, expected))
    print("mca %s: %d instructions, %.2f cycles per iteration (llvm-mca %.2f)"
          % (args.target, len(body), got, expected))


def check_rates(args):
    report = load(args.json)
    checked = 0
    for t in report["targets"]:
        for kernel in t["kernels"]:
            loop = kernel.get("loop")
            if not loop or not loop["matrix_instructions"] or not loop["model"].startswith("LLVM MCA"):
                continue
            m = re.search(r"(\d+)x(\d+)x(\d+)", loop["matrix_instruction"])
            flop = 2 * int(m.group(1)) * int(m.group(2)) * int(m.group(3))
            per_instruction = (loop["matrix_cycles"] * loop["clocks_per_cycle"]
                               / loop["matrix_instructions"])
            for chip in t["chips"]:
                peak = chip["f16_tflops"] if "f16" in loop["matrix_instruction"] else chip["int8_tops"]
                if not peak or not chip["compute_units"] or not chip["peak_clock_mhz"]:
                    continue
                per_simd_clock = peak * 1e12 / (chip["compute_units"] * t["simds_per_cu"]
                                                * chip["peak_clock_mhz"] * 1e6)
                rate_clocks = flop / per_simd_clock
                if abs(per_instruction - rate_clocks) > 0.03 * rate_clocks:
                    fail("%s on %s: LLVM's model keeps the matrix pipe %.2f clocks per %s, "
                         "the published rate gives %.2f"
                         % (t["target"], chip["name"], per_instruction,
                            loop["matrix_instruction"], rate_clocks))
                print("rates %s %s: %s %.2f clocks (LLVM) vs %.2f (published rate)"
                      % (t["target"], chip["name"], loop["matrix_instruction"], per_instruction,
                         rate_clocks))
                checked += 1
    if checked < args.at_least:
        fail("only %d chips checked, expected at least %d" % (checked, args.at_least))


def program_seconds(report):
    out = {}
    for t in report["targets"]:
        for chip in t["chips"]:
            if chip["known"]:
                out[(t["target"], chip["name"])] = chip["seconds"]
    return out


def check_rank(args):
    better = program_seconds(load(args.better))
    worse = program_seconds(load(args.worse))
    common = sorted(set(better) & set(worse))
    if len(common) < args.at_least:
        fail("only %d chips estimated in both, expected at least %d" % (len(common), args.at_least))
    for key in common:
        if not worse[key] > better[key]:
            fail("%s %s: the worse variant is estimated at %.1f us, not slower than %.1f us"
                 % (key[0], key[1], worse[key] * 1e6, better[key] * 1e6))
        print("rank %s %s: %.1f us < %.1f us (%.2fx)"
              % (key[0], key[1], better[key] * 1e6, worse[key] * 1e6, worse[key] / better[key]))


def check_svg(args):
    report = load(args.json)
    root = ElementTree.parse(args.svg).getroot()
    circles = [e for e in root.iter() if e.tag.endswith("circle")]
    expected = 0
    for t in report["targets"]:
        for chip in t["chips"]:
            expected += sum(1 for d in chip["dispatches"]
                            if d["known"] and d["flops"] and d["bytes"])
    if len(circles) != expected:
        fail("%d dots in the picture, %d estimated dispatches" % (len(circles), expected))
    print("svg: %d dots" % len(circles))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("mca")
    p.add_argument("--json", required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--isa", required=True)
    p.add_argument("--llvm-mca", required=True)
    p.set_defaults(run=check_mca)
    p = sub.add_parser("rates")
    p.add_argument("--json", required=True)
    p.add_argument("--at-least", type=int, default=1)
    p.set_defaults(run=check_rates)
    p = sub.add_parser("rank")
    p.add_argument("--better", required=True)
    p.add_argument("--worse", required=True)
    p.add_argument("--at-least", type=int, default=1)
    p.set_defaults(run=check_rank)
    p = sub.add_parser("svg")
    p.add_argument("--json", required=True)
    p.add_argument("svg")
    p.set_defaults(run=check_svg)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
