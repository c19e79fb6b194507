#!/usr/bin/python3
"""One line per access site of a kiln-run --emu-stats=FILE.json report, in
site order, for FileCheck:

  site 3 lds store 2 B: x8.00 (max 8) memref.store f16 to memref<64x32xf16>
  site 11 global load 16 B: efficiency 0.500 vector.load vector<8xf16> from ...
"""
import json
import sys

report = json.load(open(sys.argv[1]))
model = report["model"]
print(f"model {model['chip']} wave {model['wave_size']} banks {model['lds_banks']}x"
      f"{model['lds_bank_bytes']} line {model['cache_line_bytes']} "
      f"provisional {str(model['provisional']).lower()}")
for s in sorted(report["sites"], key=lambda s: (s["dispatch"], s["site"])):
    head = f"{s['kernel']} site {s['site']} {s['kind']} {s['bytes_per_lane']} B:"
    if s["kind"].startswith("lds"):
        print(f"{head} x{s['conflict_factor']:.2f} (max {s['max_degree']:g}) {s['op']}")
    else:
        print(f"{head} efficiency {s['efficiency']:.3f} {s['op']}")
