//===- TestEmuKernels.cpp - Tiny emulated gfx kernels for runtime tests ---===//
//
// Built as a shared library whose bytes the tests embed in artifacts as an
// "emu:gfx942" code object, so sessions on the emu device can be tested
// without the compiler. Each kernel has the emulated-kernel ABI of
// kiln/emu_abi.h and runs in workgroups of 64 lanes.
//
//===----------------------------------------------------------------------===//

#include "kiln/emu_abi.h"

extern "C" {

/// z = x + y for 32 floats, through LDS: lanes 0-31 store x + y, wait at a
/// barrier, and each stores its neighbour's sum (so the barrier matters).
/// Bindings: x, y, z. One workgroup of 64 lanes, 128 LDS bytes.
void add_f32_emu(KilnEmuLane *lane, void *const *bindings) {
  const float *x = static_cast<const float *>(bindings[0]);
  const float *y = static_cast<const float *>(bindings[1]);
  float *z = static_cast<float *>(bindings[2]);
  float *lds = static_cast<float *>(lane->lds);
  uint32_t t = lane->threadId[0];
  if (t < 32)
    lds[t] = x[t] + y[t];
  lane->hooks->barrier(lane, 1);
  if (t < 32) {
    uint32_t next = (t + 1) % 32;
    z[next] = lds[next];
  }
}

/// Half of the wave waits at a matrix instruction the other half never
/// reaches: the emu device must report a deadlock.
void deadlock_emu(KilnEmuLane *lane, void *const *bindings) {
  (void)bindings;
  if (lane->threadId[0] >= 32)
    return;
  uint32_t a[2] = {0, 0}, b[2] = {0, 0};
  float c[4] = {0, 0, 0, 0}, d[4];
  lane->hooks->matrix(lane, 7, "v_mfma_f32_16x16x16_f16", 0, a, b, c, d);
}

} // extern "C"
