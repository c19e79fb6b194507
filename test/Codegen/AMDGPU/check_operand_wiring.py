"""Checks, on a GEMM kernel's gpu-stage IR, that every MFMA/WMMA gets its A
operand from an A panel in LDS and its B operand from a B panel, and that
the A panels are filled from the matmul's A argument and the B panels from
its B argument -- so a kernel that passes A twice, or swaps A and B, fails.
The panels are the kernel's workgroup buffers: A's then B's (two of each
when double-buffered).

Usage: check_operand_wiring.py IR_FILE A_ARG B_ARG
(A_ARG/B_ARG: the kernel argument numbers of the matmul's A and B)."""
import re
import sys

text = open(sys.argv[1]).read()
# A load and the memref it reads (global operands are read by buffer loads).
LOAD = r"(?:vector\.load|memref\.load|amdgpu\.raw_buffer_load) (%\w+)\["
a_arg, b_arg = "%arg" + sys.argv[2], "%arg" + sys.argv[3]

kernel = re.search(r"gpu\.func @\w+\((.*?)\) workgroup\((.*?)\) kernel", text)
if not kernel:
    sys.exit("no gpu.func with workgroup memory")
panels = re.findall(r"(%arg\d+) : memref<", kernel.group(2))
if len(panels) not in (2, 4):
    sys.exit("expected two or four LDS panels, found %s" % panels)
a_panels, b_panels = set(panels[:len(panels) // 2]), set(panels[len(panels) // 2:])

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
                    d = re.match(LOAD, local[v])
                    if d:
                        loaded.append(d.group(1))
                    else:
                        pending += re.findall(r"%\w+", local[v].split(":")[0])
            depth += inner.count("{") - inner.count("}")
            if depth <= 0 and len(region) > 1:
                break
        op = "loads " + " ".join(loaded)
    defs.setdefault(m.group(1), []).append((i, op))

# A loop's carried values (the chunks loaded a step ahead): an iter_arg
# stands for its initial value and for what the loop's yield passes back.
for i, line in enumerate(lines):
    m = re.search(r"scf\.for %\w+ = .* iter_args\((.*?)\) ->", line)
    if not m:
        continue
    pairs = re.findall(r"(%\w+) = (%[\w#]+)", m.group(1))
    depth = 0
    for j in range(i, len(lines)):
        if depth == 1 and lines[j].strip().startswith("scf.yield"):
            yielded = re.findall(r"%[\w#]+", lines[j].split(":")[0])
            for (arg, init), value in zip(pairs, yielded):
                defs.setdefault(arg, []).append((i, "iter %s %d %s" % (init, j, value)))
            break
        depth += lines[j].count("{") - lines[j].count("}")


def sources(value, line, seen=None):
    """The memrefs the vector loads feeding `value` (used at `line`) read
    from. SSA names are scoped per region in printed IR, so a use refers to
    the closest definition above it."""
    seen = seen if seen is not None else set()
    candidates = [(i, op) for i, op in defs.get(value, []) if i < line]
    if not candidates:
        return set()
    def_line, op = candidates[-1]
    if (value, def_line) in seen:
        return set()
    seen.add((value, def_line))
    m = re.match(LOAD, op)
    if m:
        return {m.group(1)}
    if op.startswith("loads"):
        return set(op.split()[1:])
    if op.startswith("iter "):
        _, init, yield_line, yielded = op.split()
        return sources(init, def_line, seen) | sources(yielded, int(yield_line), seen)
    out = set()
    for operand in re.findall(r"%[\w]+", op.split(":")[0]):
        out |= sources(operand, def_line, seen)
    return out


def line_of(offset):
    return text.count("\n", 0, offset)


checked = 0
for m in re.finditer(r"(amdgpu\.(?:mfma|wmma)) \d+x\d+x\d+ (%\w+) \* (%\w+) \+", text):
    op, a, b = m.groups()
    sa, sb = sources(a, line_of(m.start())), sources(b, line_of(m.start()))
    if not sa or not sa <= a_panels:
        sys.exit("%s: A operand %s comes from %s, not the A panels %s"
                 % (op, a, sorted(sa), sorted(a_panels)))
    if not sb or not sb <= b_panels:
        sys.exit("%s: B operand %s comes from %s, not the B panels %s"
                 % (op, b, sorted(sb), sorted(b_panels)))
    checked += 1
if checked == 0:
    sys.exit("no matrix instruction found")

# What is stored into each panel comes from the right argument.
for group, arg in ((a_panels, a_arg), (b_panels, b_arg)):
    for panel in sorted(group):
        stored = set()
        for m in re.finditer(r"(?:vector|memref)\.store (%\w+), " + re.escape(panel) + r"\[",
                             text):
            stored |= sources(m.group(1), line_of(m.start()))
        if stored != {arg}:
            sys.exit("panel %s is filled from %s, expected %s" % (panel, stored, arg))

print("wired: %d matrix instructions take A from %s (filled from %s) and B from %s (filled from %s)"
      % (checked, " ".join(sorted(a_panels)), a_arg, " ".join(sorted(b_panels)), b_arg))
