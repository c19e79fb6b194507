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
