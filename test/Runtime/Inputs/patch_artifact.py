"""Patches bytes of a .kiln artifact for the runtime's error tests.

usage: patch_artifact.py IN OUT ACTION [ARGS...] [--fix-checksum]

actions:
  truncate N                  keep the first N bytes (negative: drop -N)
  flip OFFSET                 xor the byte at OFFSET with 0x40
  u32 OFFSET VALUE            store a little-endian u32
  section-offset INDEX VALUE  set the offset of section table entry INDEX
  binding KIND OFFSET SIZE NEW_OFFSET
                              rewrite every FlatBuffers Binding struct
                              (kind, offset, size) in the file so that it
                              starts at NEW_OFFSET (a program input and the
                              dispatch reading it hold the same binding)

--fix-checksum recomputes the header checksum afterwards (FNV-1a 64 over
little-endian words, checksum field as zero, zero padding), so the check
under test is reached.
"""
import struct
import sys

MASK = (1 << 64) - 1


def checksum(data):
    data = bytearray(data)
    data[24:32] = bytes(8)
    data += bytes(-len(data) % 8)
    h = 0xcbf29ce484222325
    for (word,) in struct.iter_unpack("<Q", data):
        h = ((h ^ word) * 0x100000001b3) & MASK
    return h


def main(argv):
    fix = "--fix-checksum" in argv
    argv = [a for a in argv if a != "--fix-checksum"]
    source, target, action, args = argv[1], argv[2], argv[3], argv[4:]
    data = bytearray(open(source, "rb").read())
    if action == "truncate":
        data = data[: int(args[0])]
    elif action == "flip":
        data[int(args[0])] ^= 0x40
    elif action == "u32":
        struct.pack_into("<I", data, int(args[0]), int(args[1]))
    elif action == "section-offset":
        struct.pack_into("<Q", data, 64 + 32 * int(args[0]) + 8, int(args[1]))
    elif action == "binding":
        kind, offset, size, new = (int(a) for a in args)
        old = struct.pack("<B7xQQ", kind, offset, size)
        if data.count(old) == 0:
            sys.exit("binding %s not found" % args[:3])
        data = data.replace(old, struct.pack("<B7xQQ", kind, new, size))
    else:
        sys.exit("unknown action " + action)
    if fix:
        struct.pack_into("<Q", data, 24, checksum(data))
    open(target, "wb").write(data)


if __name__ == "__main__":
    main(sys.argv)
