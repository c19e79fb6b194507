"""Prints one line per gfx kernel of kiln-inspect --json output: target and
symbol, then the resource figures in the order llvm-readelf --notes lists the
metadata keys they come from, then the occupancy.

usage: json_kernels.py FILE.json
"""
import json
import sys

with open(sys.argv[1]) as f:
    doc = json.load(f)
for target in doc["targets"]:
    for k in target["kernels"]:
        if "vgprs" not in k:
            continue
        o = k["occupancy"]
        print(
            f'{target["target"]} {k["symbol"]}: agprs {k["agprs"]} '
            f'lds {k["lds_bytes"]} max_flat {k["max_flat_workgroup_size"]} '
            f'scratch {k["scratch_bytes"]} sgprs {k["sgprs"]} '
            f'sgpr_spills {k["sgpr_spills"]} vgprs {k["vgprs"]} '
            f'vgpr_spills {k["vgpr_spills"]} wave {k["wavefront_size"]} '
            f'occupancy {o["waves_per_simd"]} limited_by {o.get("limited_by")}'
        )
