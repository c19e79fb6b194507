/*===- TestKernelsAlt.c - A second kernel library for runtime tests -------===*
 *
 * Same symbol as TestKernels.c, different result: `add_f32` computes
 * z = x - y. Sessions of two artifacts carrying these two libraries must each
 * run their own code (the loader must not confuse the two objects).
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>

void add_f32(void *const *bindings, int64_t workgroup) {
  const float *x = (const float *)bindings[0];
  const float *y = (const float *)bindings[1];
  float *z = (float *)bindings[2];
  for (int64_t i = workgroup * 16; i < workgroup * 16 + 16; ++i)
    z[i] = x[i] - y[i];
}
