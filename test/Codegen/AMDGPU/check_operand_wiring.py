"""Checks, on a GEMM kernel's gpu-stage IR, that every MFMA/WMMA gets its A
operand from the A panel in LDS and its B operand from the B panel, and that
the A panel is filled from the matmul's A argument and the B panel from its B
argument -- so a kernel that passes A twice, or swaps A and B, fails.

Usage: check_operand_wiring.py IR_FILE A_ARG B_ARG
(A_ARG/B_ARG: the kernel argument numbers of the matmul's A and B)."""
import re
import sys

text = open(sys.argv[1]).read()
a_arg, b_arg = "%arg" + sys.argv[2], "%arg" + sys.argv[3]

kernel = re.search(r"gpu\.func @\w+\((.*?)\) workgroup\((.*?)\) kernel", text)
if not kernel:
    sys.exit("no gpu.func with workgroup memory")
panels = re.findall(r"(%arg\d+) : memref<", kernel.group(2))
if len(panels) != 2:
    sys.exit("expected two LDS panels, found %s" % panels)
a_panel, b_panel = panels

# value -> the op that defines it (one op per line); an scf.if stands for
# the values its branches yield.
lines = text.split("\n")
defs = {}
for i, line in enumerate(lines):
    m = re.match(r"\s*(%[\w#]+)(?::\d+)? = (.*)", line)
    if not m:
        continue
    op = m.group(2)
    if op.startswith("scf.if"):
        # Names are scoped per region: resolve the yielded values to the
        # loads inside the branch right here.
        depth, region, loaded = 0, [], []
        for inner in lines[i:]:
            region.append(inner)
            if depth == 1 and inner.strip().startswith("scf.yield"):
                local = {}
                for r in region:
                    d = re.match(r"\s*(%\w+) = (.*)", r)
                    if d:
                        local[d.group(1)] = d.group(2)
                pending = re.findall(r"%\w+", inner.split(":")[0])
                while pending:
                    v = pending.pop()
                    if v not in local:
                        continue
                    d = re.match(r"(?:vector|memref)\.load (%\w+)\[", local[v])
                    if d:
                        loaded.append(d.group(1))
                    else:
                        pending += re.findall(r"%\w+", local[v].split(":")[0])
            depth += inner.count("{") - inner.count("}")
            if depth <= 0 and len(region) > 1:
                break
        op = "loads " + " ".join(loaded)
    defs[m.group(1)] = op


def sources(value, seen=None):
    """The memrefs the vector loads feeding `value` read from."""
    seen = seen if seen is not None else set()
    if value in seen or value not in defs:
        return set()
    seen.add(value)
    op = defs[value]
    m = re.match(r"vector\.load (%\w+)\[", op) or re.match(r"memref\.load (%\w+)\[", op)
    if m:
        return {m.group(1)}
    if op.startswith("loads"):
        return set(op.split()[1:])
    out = set()
    for operand in re.findall(r"%[\w]+", op.split(":")[0]):
        out |= sources(operand, seen)
    return out


checked = 0
for m in re.finditer(r"(amdgpu\.(?:mfma|wmma)) \d+x\d+x\d+ (%\w+) \* (%\w+) \+", text):
    op, a, b = m.groups()
    sa, sb = sources(a), sources(b)
    if sa != {a_panel}:
        sys.exit("%s: A operand %s comes from %s, not the A panel %s" % (op, a, sa, a_panel))
    if sb != {b_panel}:
        sys.exit("%s: B operand %s comes from %s, not the B panel %s" % (op, b, sb, b_panel))
    checked += 1
if checked == 0:
    sys.exit("no matrix instruction found")

# What is stored into each panel comes from the right argument.
for panel, arg in ((a_panel, a_arg), (b_panel, b_arg)):
    stored = set()
    for m in re.finditer(r"(?:vector|memref)\.store (%\w+), " + re.escape(panel) + r"\[", text):
        stored |= sources(m.group(1))
    if stored != {arg}:
        sys.exit("panel %s is filled from %s, expected %s" % (panel, stored, arg))

print("wired: %d matrix instructions take A from %s (filled from %s) and B from %s (filled from %s)"
      % (checked, a_panel, a_arg, b_panel, b_arg))
