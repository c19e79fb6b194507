"""Copies a HSACO and corrupts its AMDGPU metadata (msgpack) in place: the
marker of the first key, the string "amdhsa.kernels", becomes 0x80, an empty
map, so a map is used as a map key (which LLVM's msgpack::Document cannot
compare). Checksums do not apply: ELF notes have none.

usage: corrupt_note.py IN.hsaco OUT.hsaco
"""
import sys

data = bytearray(open(sys.argv[1], "rb").read())
key = b"amdhsa.kernels"
at = data.find(bytes([0xA0 | len(key)]) + key)
if at < 0:
    sys.exit("corrupt_note.py: no amdhsa.kernels key in " + sys.argv[1])
data[at] = 0x80
open(sys.argv[2], "wb").write(data)
