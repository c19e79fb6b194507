/*===- TestKernels.c - Tiny cpu kernels for runtime tests ------------------===*
 *
 * Built as a shared library whose bytes the tests embed in artifacts as the
 * "cpu" code object, so the runtime can be tested without the compiler. Each
 * kernel has the cpu kernel ABI:
 *   void kernel(void *const *bindings, int64_t workgroup_id);
 * Elementwise kernels handle 16 elements per workgroup.
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>

#define KILN_TEST_ELEMENTS_PER_WORKGROUP 16

/* z = x + y. Bindings: x, y, z. */
void add_f32(void *const *bindings, int64_t workgroup) {
  const float *x = (const float *)bindings[0];
  const float *y = (const float *)bindings[1];
  float *z = (float *)bindings[2];
  int64_t base = workgroup * KILN_TEST_ELEMENTS_PER_WORKGROUP;
  for (int64_t i = base; i < base + KILN_TEST_ELEMENTS_PER_WORKGROUP; ++i)
    z[i] = x[i] + y[i];
}

/* out = in * scale[0]. Bindings: in, scale (one float), out. */
void scale_f32(void *const *bindings, int64_t workgroup) {
  const float *in = (const float *)bindings[0];
  const float *scale = (const float *)bindings[1];
  float *out = (float *)bindings[2];
  int64_t base = workgroup * KILN_TEST_ELEMENTS_PER_WORKGROUP;
  for (int64_t i = base; i < base + KILN_TEST_ELEMENTS_PER_WORKGROUP; ++i)
    out[i] = in[i] * scale[0];
}

/* counts[workgroup] += 1, atomically: shows each workgroup ran exactly once.
   Bindings: counts (int32). */
void count_i32(void *const *bindings, int64_t workgroup) {
  int32_t *counts = (int32_t *)bindings[0];
  __atomic_fetch_add(&counts[workgroup], 1, __ATOMIC_RELAXED);
}

/* Records the address of binding 0 (as an integer) in binding 1, so tests can
   check binding alignment. Bindings: any, out (uint64). Workgroup 0 only. */
void address_of(void *const *bindings, int64_t workgroup) {
  if (workgroup == 0)
    *(uint64_t *)bindings[1] = (uint64_t)(uintptr_t)bindings[0];
}
