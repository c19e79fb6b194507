/*===- CApiSmoke.c - The C API used from C99 ------------------------------===*
 *
 * Compiled as C99 with -pedantic-errors, so kiln/runtime.h stays a C header.
 * Opens the `z = x + y` artifact at `path`, runs it once on x = i and
 * y = 2 * i, and checks z = 3 * i. Returns 0 on success, else writes the
 * reason into `error`.
 *
 *===----------------------------------------------------------------------===*/

#include "kiln/runtime.h"

#include <stdio.h>
#include <string.h>

int kiln_c_api_smoke(const char *path, char *error, size_t error_size) {
  kiln_artifact_t *artifact = NULL;
  kiln_device_t *device = NULL;
  kiln_session_t *session = NULL;
  kiln_device_options_t device_options;
  kiln_tensor_t inputs[2];
  kiln_tensor_t outputs[1];
  kiln_tensor_info_t info;
  int64_t shape[2] = {4, 8};
  float x[32], y[32], z[32];
  int i, result = 1;
  kiln_status_t status = kiln_artifact_open(path, &artifact);
  if (status)
    goto fail;
  status = kiln_artifact_input_info(artifact, 1, &info);
  if (status)
    goto fail;
  if (strcmp(info.name, "y") != 0 || info.dtype != KILN_DTYPE_F32 ||
      info.rank != 2 || info.byte_size != sizeof(y)) {
    snprintf(error, error_size, "unexpected input info");
    goto done;
  }
  kiln_device_options_init(&device_options);
  device_options.thread_count = 2;
  status = kiln_device_create("cpu", &device_options, &device);
  if (status)
    goto fail;
  status = kiln_session_create(device, artifact, NULL, &session);
  if (status)
    goto fail;
  for (i = 0; i < 32; ++i) {
    x[i] = (float)i;
    y[i] = 2.0f * (float)i;
  }
  inputs[0].name = "x";
  inputs[0].dtype = KILN_DTYPE_F32;
  inputs[0].rank = 2;
  inputs[0].shape = shape;
  inputs[0].data = x;
  inputs[0].byte_size = sizeof(x);
  inputs[1] = inputs[0];
  inputs[1].name = "y";
  inputs[1].data = y;
  memset(outputs, 0, sizeof(outputs));
  outputs[0].data = z;
  outputs[0].byte_size = sizeof(z);
  status = kiln_session_run(session, inputs, 2, outputs, 1);
  if (status)
    goto fail;
  for (i = 0; i < 32; ++i) {
    if (z[i] != 3.0f * (float)i) {
      snprintf(error, error_size, "z[%d] is %g", i, (double)z[i]);
      goto done;
    }
  }
  result = 0;
  goto done;
fail:
  snprintf(error, error_size, "%s: %s",
           kiln_status_code_name(kiln_status_code(status)),
           kiln_status_message(status));
  kiln_status_free(status);
done:
  kiln_session_release(session);
  kiln_device_release(device);
  kiln_artifact_release(artifact);
  return result;
}
