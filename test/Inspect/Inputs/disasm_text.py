"""Prints the instructions of a disassembly listing, one per line, as plain
text: tabs become spaces, and addresses, encodings, comments and branch-target
annotations (<symbol+0x10>) are dropped. Reads llvm-objdump -d
--no-show-raw-insn --no-leading-addr output ("objdump") or kiln-inspect
--disassemble output ("inspect"), so the two can be compared with diff.
objdump goes on past a symbol's end up to the next symbol, through the
alignment padding (s_nop 0, int3, nop): trailing padding is left out.

usage: disasm_text.py objdump|inspect FILE
"""
import re
import sys


def clean(text):
    text = text.split("//")[0].replace("\t", " ").strip()
    return re.sub(r"\s*<[^<>]*>$", "", text)


PADDING = {"s_nop 0", "int3", "nop"}


def main():
    mode, path = sys.argv[1], sys.argv[2]
    lines = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if mode == "objdump":
                if re.match(r"^ *\t", line):
                    lines.append(clean(line))
            else:
                m = re.match(r"^  [0-9a-f]{4,}:  (.*) // [0-9a-f ]+$", line)
                if m:
                    lines.append(clean(m.group(1)))
    if mode == "objdump":
        while lines and lines[-1] in PADDING:
            lines.pop()
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
