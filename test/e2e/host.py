"""What the host CPU can do, for the e2e tests whose reference depends on it."""

from pathlib import Path


def host_has_vnni():
    """Whether this CPU has a u8 x s8 dot product (AVX-512 VNNI or AVX-VNNI).
    Without it ONNX Runtime's int8 kernels use vpmaddubsw, whose u8 x s8
    pair sums saturate at 16 bits."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


def host_runs(cpu):
    """Whether code compiled with kiln-compile --cpu=CPU runs on this host:
    host and x86-64-v3 (AVX2, which every supported host has) always;
    x86-64-v4 (AVX-512 F/BW/DQ/VL) only where the CPU has AVX-512 BW."""
    if cpu in ("host", "x86-64-v3"):
        return True
    if cpu == "x86-64-v4":
        try:
            flags = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
        return all(f in flags for f in ("avx512f", "avx512bw", "avx512dq", "avx512vl"))
    return False
