/* run_model.c - runs a .kiln artifact through the installed Kiln runtime's C
 * API (kiln/runtime.h).
 *
 *   run_model MODEL.kiln [DEVICE]       DEVICE: cpu (default), hip:0, emu:gfx942
 *
 * Fills every input with the pattern x[i] = (i % 17) / 17 - 0.5 (floating
 * point inputs; integer inputs get i % 17), runs once and prints each output's
 * name, type, shape and values (at most 16, exactly: %.9g).
 *
 * Build against an install:   cc run_model.c $(pkg-config --cflags --libs kiln-runtime)
 * or with CMake:              find_package(KilnRuntime) (see CMakeLists.txt). */
#include <kiln/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the error, frees it and returns 1; returns 0 for success. */
static int failed(kiln_status_t status, const char *what) {
  if (!status)
    return 0;
  fprintf(stderr, "run_model: %s: %s (%s)\n", what, kiln_status_message(status),
          kiln_status_code_name(kiln_status_code(status)));
  kiln_status_free(status);
  return 1;
}

static void fill(void *data, kiln_dtype_t dtype, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    double v = (double)(i % 17) / 17.0 - 0.5;
    switch (dtype) {
    case KILN_DTYPE_F32: ((float *)data)[i] = (float)v; break;
    case KILN_DTYPE_F64: ((double *)data)[i] = v; break;
    case KILN_DTYPE_I32: ((int32_t *)data)[i] = (int32_t)(i % 17); break;
    case KILN_DTYPE_I64: ((int64_t *)data)[i] = (int64_t)(i % 17); break;
    default: memset(data, 0, count * kiln_dtype_size(dtype)); return;
    }
  }
}

static void print_values(const kiln_tensor_t *t) {
  size_t count = t->byte_size / kiln_dtype_size(t->dtype);
  printf("output %s %s [", t->name, kiln_dtype_name(t->dtype));
  for (size_t d = 0; d < t->rank; ++d)
    printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
  printf("]:");
  for (size_t i = 0; i < count && i < 16; ++i) {
    if (t->dtype == KILN_DTYPE_F32)
      printf(" %.9g", ((const float *)t->data)[i]);
    else if (t->dtype == KILN_DTYPE_I64)
      printf(" %lld", (long long)((const int64_t *)t->data)[i]);
    else
      printf(" ?");
  }
  printf("\n");
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: run_model MODEL.kiln [cpu|hip:N|emu:GFX]\n");
    return 2;
  }
  printf("kiln runtime %s (%s)\n", kiln_version(), kiln_revision());
  kiln_artifact_t *artifact = NULL;
  kiln_device_t *device = NULL;
  kiln_session_t *session = NULL;
  int result = 1;
  if (failed(kiln_artifact_open(argv[1], &artifact), "opening the artifact") ||
      failed(kiln_device_create(argc > 2 ? argv[2] : "cpu", NULL, &device),
             "creating the device") ||
      failed(kiln_session_create(device, artifact, NULL, &session), "creating the session"))
    goto done;

  size_t input_count = kiln_artifact_input_count(artifact);
  size_t output_count = kiln_artifact_output_count(artifact);
  kiln_tensor_t *inputs = calloc(input_count + 1, sizeof(kiln_tensor_t));
  kiln_tensor_t *outputs = calloc(output_count + 1, sizeof(kiln_tensor_t));
  for (size_t i = 0; i < input_count; ++i) {
    kiln_tensor_info_t info;
    if (failed(kiln_artifact_input_info(artifact, i, &info), "reading an input"))
      goto free_tensors;
    inputs[i].name = info.name;
    inputs[i].dtype = info.dtype;
    inputs[i].rank = info.rank;
    inputs[i].shape = info.shape;
    inputs[i].byte_size = info.byte_size;
    inputs[i].data = malloc(info.byte_size ? info.byte_size : 1);
    fill(inputs[i].data, info.dtype, info.byte_size / kiln_dtype_size(info.dtype));
  }
  for (size_t i = 0; i < output_count; ++i) {
    kiln_tensor_info_t info;
    if (failed(kiln_artifact_output_info(artifact, i, &info), "reading an output"))
      goto free_tensors;
    outputs[i].byte_size = info.byte_size;
    outputs[i].data = malloc(info.byte_size ? info.byte_size : 1);
  }
  if (!failed(kiln_session_run(session, inputs, input_count, outputs, output_count), "running")) {
    for (size_t i = 0; i < output_count; ++i)
      print_values(&outputs[i]);
    result = 0;
  }
free_tensors:
  for (size_t i = 0; i < input_count; ++i)
    free(inputs[i].data);
  for (size_t i = 0; i < output_count; ++i)
    free(outputs[i].data);
  free(inputs);
  free(outputs);
done:
  kiln_session_release(session);
  kiln_device_release(device);
  kiln_artifact_release(artifact);
  return result;
}
