/*===- kiln/runtime.h - Kiln runtime C API ---------------------------------===*
 *
 * Loads a compiled `.kiln` artifact and runs it. C99-compatible.
 *
 * Error model: every fallible call returns a `kiln_status_t`. NULL means
 * success; anything else is an error the caller owns and frees with
 * `kiln_status_free` (after reading `kiln_status_code` and
 * `kiln_status_message`). Results are returned through `out_` parameters,
 * which are left untouched on error.
 *
 * Objects (artifact, device, session) are reference counted: `*_create` /
 * `*_open` return one reference, `*_retain` adds one, `*_release` drops one
 * and frees the object with the last. A session keeps its device and
 * artifact alive.
 *
 * Threading: artifacts and devices are immutable after creation and may be
 * shared by any number of threads. `kiln_session_run` is thread-safe: calls on
 * one session are serialized by a mutex inside the session (create one session
 * per thread to run in parallel; they then share the device's thread pool,
 * which runs one dispatch at a time).
 *
 * See docs/runtime.md for a walk-through.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===------------------------------ status ------------------------------===*/

typedef enum kiln_status_code_e {
  KILN_STATUS_OK = 0,
  /* The caller passed something wrong: NULL pointer, unknown input name,
     wrong dtype, shape or size, too small an output buffer. */
  KILN_STATUS_INVALID_ARGUMENT = 1,
  /* A file could not be opened, read, mapped or written. */
  KILN_STATUS_IO_ERROR = 2,
  /* The artifact is malformed or corrupted (failed validation). */
  KILN_STATUS_INVALID_ARTIFACT = 3,
  /* Valid request this build or machine cannot serve: unknown device, no
     code object for the device's target, code object that does not load. */
  KILN_STATUS_UNSUPPORTED = 4,
  KILN_STATUS_OUT_OF_MEMORY = 5,
  KILN_STATUS_INTERNAL = 6,
} kiln_status_code_t;

/* NULL is success. */
typedef struct kiln_status_s *kiln_status_t;

/* KILN_STATUS_OK for NULL. */
kiln_status_code_t kiln_status_code(kiln_status_t status);
/* The message, lower-case, naming the file and item; "" for NULL. Valid until
   the status is freed. */
const char *kiln_status_message(kiln_status_t status);
/* Frees an error status; no-op for NULL. */
void kiln_status_free(kiln_status_t status);
/* "ok", "invalid argument", "i/o error", "invalid artifact", ... */
const char *kiln_status_code_name(kiln_status_code_t code);

/*===------------------------------ dtypes ------------------------------===*/

/* Same values as the DType enum of the artifact schema. */
typedef enum kiln_dtype_e {
  KILN_DTYPE_F32 = 0,
  KILN_DTYPE_F16 = 1,
  KILN_DTYPE_BF16 = 2,
  KILN_DTYPE_F64 = 3,
  KILN_DTYPE_I8 = 4,
  KILN_DTYPE_I16 = 5,
  KILN_DTYPE_I32 = 6,
  KILN_DTYPE_I64 = 7,
  KILN_DTYPE_U8 = 8,
  KILN_DTYPE_BOOL = 9, /* one byte per element, 0 or 1 */
  KILN_DTYPE_U16 = 10,
  KILN_DTYPE_U32 = 11,
  KILN_DTYPE_U64 = 12,
} kiln_dtype_t;

/* Bytes per element; 0 for a value outside the enum. */
size_t kiln_dtype_size(kiln_dtype_t dtype);
/* "float32", "float16", "bfloat16", "float64", "int8", "int16", "int32",
   "int64", "uint8", "bool", "uint16", "uint32", "uint64"; "unknown" outside the enum. */
const char *kiln_dtype_name(kiln_dtype_t dtype);

/* A tensor description: name, element type and shape. The strings and arrays
   belong to whoever filled the struct (the artifact, for *_info calls). */
typedef struct kiln_tensor_info_s {
  const char *name;
  kiln_dtype_t dtype;
  size_t rank;
  const int64_t *shape;
  size_t byte_size; /* dtype size times the element count */
} kiln_tensor_info_t;

/*===----------------------------- artifact -----------------------------===*/

typedef struct kiln_artifact_s kiln_artifact_t;

/* Maps `path` read-only and validates all of it (header, checksum, section
   table, manifest, every binding and kernel index) before returning. Errors
   are KILN_STATUS_IO_ERROR or KILN_STATUS_INVALID_ARTIFACT with a message that
   starts with `path`. Constants are used in place from the mapping. */
kiln_status_t kiln_artifact_open(const char *path,
                                 kiln_artifact_t **out_artifact);
/* Same from memory: copies `size` bytes (into 64-byte aligned storage);
   `name` is used in messages. */
kiln_status_t kiln_artifact_open_memory(const void *data, size_t size,
                                        const char *name,
                                        kiln_artifact_t **out_artifact);
void kiln_artifact_retain(kiln_artifact_t *artifact);
void kiln_artifact_release(kiln_artifact_t *artifact);

/* The path or name the artifact was opened with. */
const char *kiln_artifact_name(const kiln_artifact_t *artifact);
/* Manifest strings ("" when absent). */
const char *kiln_artifact_producer(const kiln_artifact_t *artifact);
const char *kiln_artifact_options(const kiln_artifact_t *artifact);
const char *kiln_artifact_model(const kiln_artifact_t *artifact);

/* Graph inputs folded to constants at compile time (kiln-compile
   --input-value): they are no model inputs. `out_name` and `out_value` (the
   value as written, "16000" or "1,3,224,224") stay valid while the artifact
   lives; an index out of range is KILN_STATUS_INVALID_ARGUMENT. */
size_t kiln_artifact_pinned_input_count(const kiln_artifact_t *artifact);
kiln_status_t kiln_artifact_pinned_input(const kiln_artifact_t *artifact,
                                         size_t index, const char **out_name,
                                         const char **out_value);

size_t kiln_artifact_input_count(const kiln_artifact_t *artifact);
size_t kiln_artifact_output_count(const kiln_artifact_t *artifact);
/* The pointers in `out_info` stay valid while the artifact lives. */
kiln_status_t kiln_artifact_input_info(const kiln_artifact_t *artifact,
                                       size_t index,
                                       kiln_tensor_info_t *out_info);
kiln_status_t kiln_artifact_output_info(const kiln_artifact_t *artifact,
                                        size_t index,
                                        kiln_tensor_info_t *out_info);
/* For an output whose size along one axis the data decides (NonZero,
   Unique, NonMaxSuppression, ...): that axis, where the info's shape holds
   the upper bound (and byte_size the bytes at the bound). -1 for outputs
   with a static shape, and for an index out of range. */
int64_t kiln_artifact_output_extent_axis(const kiln_artifact_t *artifact,
                                         size_t index);

/* Targets with a code object ("cpu", "gfx942", ...). */
size_t kiln_artifact_target_count(const kiln_artifact_t *artifact);
const char *kiln_artifact_target(const kiln_artifact_t *artifact,
                                 size_t index); /* NULL if out of range */

/* Programs: one, "main"; or one per batch bucket ("batch_1", "batch_4", ...
   for kiln-compile --batch-sizes=1,4,...), sharing the constants. */
size_t kiln_artifact_program_count(const kiln_artifact_t *artifact);
const char *kiln_artifact_program_name(const kiln_artifact_t *artifact,
                                       size_t index); /* NULL if out of range */
/* The batch bucket of program `index`: dimension 0 of each of its inputs.
   0 for a program without one ("main") and for an index out of range. */
uint32_t kiln_artifact_program_batch_size(const kiln_artifact_t *artifact,
                                          size_t index);
/* The inputs and outputs of program `program`: the model's (same count,
   order, names, dtypes) at that program's shapes; kiln_artifact_input_info
   is program 0's. The pointers stay valid while the artifact lives; an index
   out of range is KILN_STATUS_INVALID_ARGUMENT. */
kiln_status_t kiln_artifact_program_input_info(const kiln_artifact_t *artifact,
                                               size_t program, size_t index,
                                               kiln_tensor_info_t *out_info);
kiln_status_t kiln_artifact_program_output_info(const kiln_artifact_t *artifact,
                                                size_t program, size_t index,
                                                kiln_tensor_info_t *out_info);
/* Arena bytes of program `index`; 0 if out of range. */
uint64_t kiln_artifact_arena_size(const kiln_artifact_t *artifact,
                                  size_t index);
/* Dispatch count of program `index`; 0 if out of range. */
size_t kiln_artifact_dispatch_count(const kiln_artifact_t *artifact,
                                    size_t index);
/* Size of the constants section (0 without one). */
uint64_t kiln_artifact_constants_size(const kiln_artifact_t *artifact);

/*===------------------------------ device ------------------------------===*/

typedef struct kiln_device_s kiln_device_t;

typedef struct kiln_device_options_s {
  /* cpu and emu: threads that run workgroups, including the thread that
     calls kiln_session_run. 0: one per CPU this process may run on. Ignored
     by hip devices. */
  uint32_t thread_count;
} kiln_device_options_t;

/* Fills the defaults. */
void kiln_device_options_init(kiln_device_options_t *options);

/* `spec` names the device: "cpu", or "hip:N" for AMD GPU N as HIP numbers
   them ("hip" is "hip:0"). HIP is loaded at run time (libamdhip64.so, then
   .so.7, .so.6, .so.5; or the path in the environment variable
   KILN_HIP_LIBRARY). Without the HIP runtime, without a GPU, or with N out of
   range the error is KILN_STATUS_UNSUPPORTED with one line starting
   "no AMD GPU found (hip:N): ". "emu:GFX" (GFX one of gfx942, gfx950,
   gfx1100, gfx1201, gfx1250) runs that chip's emulated code object on the
   CPU (x86-64 hosts only; see docs/runtime.md). Other specs are
   KILN_STATUS_UNSUPPORTED (a malformed "hip:..." is
   KILN_STATUS_INVALID_ARGUMENT). `options` may be NULL for defaults. */
kiln_status_t kiln_device_create(const char *spec,
                                 const kiln_device_options_t *options,
                                 kiln_device_t **out_device);
void kiln_device_retain(kiln_device_t *device);
void kiln_device_release(kiln_device_t *device);
/* "cpu", "hip:0", "emu:gfx942". */
const char *kiln_device_name(const kiln_device_t *device);
/* The code object target the device runs: "cpu", the GPU's gfx name
   without feature suffixes ("gfx942" for "gfx942:sramecc+:xnack-"), or
   "emu:gfx942" for an emu device. */
const char *kiln_device_target(const kiln_device_t *device);
/* The threads of a cpu or emu device; 0 for a hip device. */
uint32_t kiln_device_thread_count(const kiln_device_t *device);

/*===----------------------------- session ------------------------------===*/

typedef struct kiln_session_s kiln_session_t;

typedef struct kiln_session_options_s {
  /* Program to run by name; NULL runs the first program (or the one of
     batch_size). */
  const char *program;
  /* Nonzero: time every dispatch (see kiln_session_profile). */
  int enable_profiling;
  /* Nonzero: run the program of this batch bucket (with `program` NULL, or
     naming that program). No such bucket is KILN_STATUS_INVALID_ARGUMENT
     listing the artifact's. */
  uint32_t batch_size;
} kiln_session_options_t;

void kiln_session_options_init(kiln_session_options_t *options);

/* Loads the code object of the artifact whose target is the device's (for
   cpu: the "cpu" code object, dlopen'ed from memory; for hip: the one named
   like the GPU, e.g. "gfx942", loaded with hipModuleLoadData; for emu:GFX
   the "emu:GFX" code object, dlopen'ed like cpu), resolves every kernel
   symbol and allocates the arena (zeroed). A hip session also uploads the
   constants section to the GPU, once. No code object for the device's
   target is KILN_STATUS_UNSUPPORTED listing the artifact's targets.
   `options` may be NULL. */
kiln_status_t kiln_session_create(kiln_device_t *device,
                                  kiln_artifact_t *artifact,
                                  const kiln_session_options_t *options,
                                  kiln_session_t **out_session);
void kiln_session_retain(kiln_session_t *session);
void kiln_session_release(kiln_session_t *session);
/* The index of the program the session runs (its inputs and outputs are
   kiln_artifact_program_input_info's and _output_info's for it). */
size_t kiln_session_program_index(const kiln_session_t *session);

/* A tensor passed to or returned from a run. */
typedef struct kiln_tensor_s {
  const char *name;
  kiln_dtype_t dtype;
  size_t rank;
  const int64_t *shape;
  void *data;
  size_t byte_size; /* bytes at `data` (for outputs: the capacity) */
} kiln_tensor_t;

/* Runs the program once.
   inputs: every model input exactly once, in any order, matched by name;
     dtype, shape and byte_size must equal the program's (errors name the
     input and list the expected names).
   outputs: exactly kiln_artifact_output_count entries; outputs[i] receives
     model output i. The caller sets `data` and `byte_size` (the capacity,
     at least the output's size); on success the runtime sets name, dtype,
     rank, shape (pointing into the artifact) and byte_size (bytes written).
     An output with an extent axis (kiln_artifact_output_extent_axis) needs
     the capacity of its bound; its shape then is the run's (pointing into
     the session, valid until its next run), the entries packed row-major.
   Nothing is written to the outputs when validation fails; a GPU error
   during a hip run may leave output data partly written. On an emu device a
   kernel that cannot run as written (mismatched barriers or matrix
   instructions, a deadlock) fails the run with KILN_STATUS_INVALID_ARTIFACT
   and no output written. */
kiln_status_t kiln_session_run(kiln_session_t *session,
                               const kiln_tensor_t *inputs,
                               size_t input_count, kiln_tensor_t *outputs,
                               size_t output_count);

/* One dispatch of the session's program, as its code object describes it.
   Strings stay valid while the session lives. */
typedef struct kiln_dispatch_info_s {
  const char *name;   /* kernel name, e.g. "dispatch_12_conv" */
  const char *symbol; /* entry symbol in the code object */
  const char *ops;    /* ONNX node names fused into the dispatch */
  uint64_t workgroup_count;
  uint64_t flops;
  uint64_t bytes;
  size_t binding_count;
} kiln_dispatch_info_t;

size_t kiln_session_dispatch_count(const kiln_session_t *session);
kiln_status_t kiln_session_dispatch_info(const kiln_session_t *session,
                                         size_t index,
                                         kiln_dispatch_info_t *out_info);

/* Profile since creation or the last reset (needs enable_profiling): the
   number of runs, and per dispatch the total nanoseconds over those runs.
   `out_dispatch_ns` may be NULL; otherwise `count` must equal
   kiln_session_dispatch_count. */
kiln_status_t kiln_session_profile(kiln_session_t *session,
                                   uint64_t *out_run_count,
                                   uint64_t *out_dispatch_ns, size_t count);
void kiln_session_reset_profile(kiln_session_t *session);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */
