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

/* The release this header belongs to (CMake's project version is read from
   these lines). */
#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------- version ------------------------------===*/

/* The library's version, "MAJOR.MINOR.PATCH": compare with the KILN_VERSION_*
   macros to detect a program built against other headers. */
const char *kiln_version(void);
/* The source revision the library was built from (the git commit, with
   "-dirty" for uncommitted changes), or "unknown" outside a git checkout. */
const char *kiln_revision(void);

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
  /* The request was not run: the batcher's queue was full, the request
     timed out in it, or the batcher is shutting down. Retry later. */
  KILN_STATUS_UNAVAILABLE = 7,
  /* The run was stopped at its time limit (run_timeout_us of the session or
     batcher options) before it finished. */
  KILN_STATUS_DEADLINE_EXCEEDED = 8,
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
  /* cpu and emu: the CPUs the device's threads may run on, in Linux's
     cpuset list format ("0-3,8"); NULL or "" leaves them unpinned. Every
     thread the runtime starts for the device (its workers and the batcher
     threads of its sessions) is pinned to the set; the threads that call
     kiln_session_run themselves are not touched. With thread_count 0 the
     device gets one thread per listed CPU. A malformed list, or a CPU this
     process may not run on, is KILN_STATUS_INVALID_ARGUMENT. Ignored by hip
     devices. */
  const char *cpu_list;
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
/* The chips an "emu:GFX" device can emulate ("gfx942", ...), by index;
   NULL past the last. */
size_t kiln_emulated_target_count(void);
const char *kiln_emulated_target(size_t index);

/*===----------------------------- session ------------------------------===*/

typedef struct kiln_session_s kiln_session_t;

/* A traced event (kiln_session_options_t.trace_callback,
   kiln_batcher_options_t.trace_callback): times are nanoseconds of the
   monotonic clock (CLOCK_MONOTONIC, std::chrono::steady_clock). */
typedef struct kiln_trace_event_s {
  const char *category; /* "dispatch", "batch" or "queue" */
  const char *name;     /* the kernel's name; "batch"; "queue" */
  uint64_t start_ns;
  uint64_t duration_ns;
  /* batch: its rows (before padding) and bucket; queue: the request's rows.
     0 for a dispatch. */
  uint64_t rows, bucket;
} kiln_trace_event_t;
/* Called on the thread that ran the event, after it; the event is valid
   during the call only. Must be thread-safe when shared. */
typedef void (*kiln_trace_callback_t)(void *user_data, const kiln_trace_event_t *event);

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
  /* Non-NULL: called after every dispatch of a run on a cpu or emu device
     (hip devices do not trace). */
  kiln_trace_callback_t trace_callback;
  void *trace_user_data;
  /* Nonzero (emu:GFX devices only, else KILN_STATUS_INVALID_ARGUMENT):
     collect LDS bank-conflict and global coalescing statistics of every LDS
     and global access site (see kiln_session_emu_site_stats). The runs are
     several times slower; their results are the same. */
  int enable_emu_stats;
  /* Nonzero: a run that has not finished after this many microseconds
     stops before its next dispatch, copy or jump and fails with
     KILN_STATUS_DEADLINE_EXCEEDED (a model whose Loop runs longer than it
     should). A dispatch already running finishes first; on a hip device
     the limit is checked where the program waits for the GPU (its control
     flow), so a program without control flow is queued whole. */
  uint64_t run_timeout_us;
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
   On the cpu device an output whose `data` is 64-byte aligned is written
     in place: the kernels write it (and may use its bytes as scratch
     earlier in the run) instead of the arena, and no copy follows; other
     outputs are copied out of the arena after the run. Either way the
     buffer holds the output, and nothing else, when the run returns.
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
/* Clears the profile and the emu statistics. */
void kiln_session_reset_profile(kiln_session_t *session);

/* Memory statistics of an emulated device (enable_emu_stats). An access site
   is one LDS or global load or store operation of a kernel as the compiler
   built it (a vector load is one access of its whole width, as the gfx
   instruction it becomes). The k-th execution of a site by the lanes of a
   wave is one wave-level access ("execution"). LDS: an access is served in
   phases of lds_banks * lds_bank_bytes bytes, each as many cycles as the
   most distinct dwords one bank must deliver; ideal_cycles counts one cycle
   per phase. Global: the distinct cache lines (and 64-byte segments) the
   lanes' bytes touch, counted from the start of the arena or the constants.
   The model of each chip and its sources: docs/runtime.md. */
typedef enum kiln_emu_access_kind_e {
  KILN_EMU_LDS_LOAD = 0,
  KILN_EMU_LDS_STORE = 1,
  KILN_EMU_GLOBAL_LOAD = 2,
  KILN_EMU_GLOBAL_STORE = 3,
} kiln_emu_access_kind_t;

/* The chip's model the statistics follow. */
typedef struct kiln_emu_memory_model_s {
  const char *chip; /* "gfx942" */
  uint32_t wave_size;
  uint32_t lds_banks;
  uint32_t lds_bank_bytes;
  uint32_t cache_line_bytes;
  int provisional;   /* nonzero: no public documentation confirms it yet */
  const char *basis; /* one line naming the model's figures */
} kiln_emu_memory_model_t;

typedef struct kiln_emu_site_stats_s {
  size_t dispatch;            /* index in the program */
  const char *kernel;         /* the dispatch's kernel name */
  uint32_t site;              /* index in program order within the kernel */
  kiln_emu_access_kind_t kind;
  const char *op;             /* "vector.load vector<8xf16> from memref<64x32xf16>" */
  const char *location;       /* the op's source (ONNX nodes; "" if unknown) */
  uint32_t bytes_per_lane;
  uint64_t executions;        /* wave-level accesses */
  uint64_t lane_accesses;     /* lanes that took part, summed */
  uint64_t requested_bytes;   /* lane_accesses * bytes_per_lane */
  /* LDS (zero for global sites) */
  uint64_t ideal_cycles;
  uint64_t cycles;
  uint64_t conflicted_executions; /* executions that took extra cycles */
  double max_degree;              /* worst execution's cycles / ideal */
  /* global (zero for LDS sites) */
  uint64_t cache_lines;
  uint64_t segments_64;
} kiln_emu_site_stats_t;

/* The model of the session's emu device; KILN_STATUS_INVALID_ARGUMENT
   without enable_emu_stats. */
kiln_status_t kiln_session_emu_memory_model(const kiln_session_t *session,
                                            kiln_emu_memory_model_t *out_model);
/* The sites executed since creation or the last reset, ordered by dispatch
   and site; 0 without enable_emu_stats. */
size_t kiln_session_emu_site_count(kiln_session_t *session);
/* Site `index` (< kiln_session_emu_site_count). Strings stay valid while the
   session lives. */
kiln_status_t kiln_session_emu_site_stats(kiln_session_t *session,
                                          size_t index,
                                          kiln_emu_site_stats_t *out_stats);

/*===----------------------------- batcher ------------------------------===*/

/* Dynamic batching: requests of a few rows each are queued, gathered into
   one batch, padded with zero rows to the nearest compiled batch bucket
   (kiln-compile --batch-sizes), run as one program, and split back. The
   artifact needs batch buckets, and every input and output of every bucket
   has the bucket's size as dimension 0. Thread-safe: any thread may submit. */
typedef struct kiln_batcher_s kiln_batcher_t;

typedef enum kiln_timeout_action_e {
  KILN_TIMEOUT_REJECT = 0, /* a request past its timeout is answered
                              KILN_STATUS_UNAVAILABLE without running */
  KILN_TIMEOUT_DELAY = 1,  /* it stays queued, behind every other request */
} kiln_timeout_action_t;

typedef struct kiln_batcher_options_s {
  /* How long the oldest queued request waits for others before its batch
     runs anyway, in microseconds (0: run what is queued at once). */
  uint64_t max_queue_delay_us;
  /* Batch sizes to form when enough rows are queued, largest first wins
     (NULL/0: the largest bucket). Each must be at most the largest bucket. */
  const uint32_t *preferred_batch_sizes;
  size_t preferred_batch_size_count;
  /* Requests queued at most (per priority level); a submit beyond it is
     KILN_STATUS_UNAVAILABLE at once. 0: unbounded. */
  uint64_t max_queue_size;
  /* Priority levels 1..priority_levels (1 is served first); 0 means one
     level. A request with priority 0 takes default_priority_level. */
  uint32_t priority_levels;
  uint32_t default_priority_level;
  /* Queue timeout of a request that gives none, in microseconds (0: none),
     and what happens when it passes. */
  uint64_t default_timeout_us;
  kiln_timeout_action_t timeout_action;
  /* Batches run at once: each instance has its own sessions (one per
     bucket) and thread; they share the device (default 1). */
  uint32_t instance_count;
  /* Nonzero: no batching; every request runs alone, in the smallest bucket
     that holds its rows (the queue, priorities and timeouts still apply). */
  int single_requests;
  /* Non-NULL: called for every batch run, every request's time in the
     queue, and (through the sessions) every dispatch. */
  kiln_trace_callback_t trace_callback;
  void *trace_user_data;
  /* Nonzero: every run of a batch stops after this many microseconds (see
     kiln_session_options_t.run_timeout_us); its requests fail with
     KILN_STATUS_DEADLINE_EXCEEDED. */
  uint64_t run_timeout_us;
} kiln_batcher_options_t;

void kiln_batcher_options_init(kiln_batcher_options_t *options);

/* Creates the sessions (instance_count per bucket) and the worker threads.
   An artifact without batch buckets, or whose inputs or outputs do not all
   have the bucket as dimension 0 (or have an extent axis), is
   KILN_STATUS_INVALID_ARGUMENT naming the tensor. */
kiln_status_t kiln_batcher_create(kiln_device_t *device,
                                  kiln_artifact_t *artifact,
                                  const kiln_batcher_options_t *options,
                                  kiln_batcher_t **out_batcher);
/* Stops accepting requests, runs the ones queued, waits for them and frees
   the batcher. */
void kiln_batcher_destroy(kiln_batcher_t *batcher);
/* Closes the batcher without running what is queued (a model unloaded after
   a fault): every queued request is answered KILN_STATUS_UNAVAILABLE with
   `reason` as its message, and so is every later submit; batches already
   running finish. Returns the number of requests answered. The batcher
   still needs kiln_batcher_destroy. NULL `reason`: "the batcher was
   closed". */
size_t kiln_batcher_close(kiln_batcher_t *batcher, const char *reason);

/* Called once per request, on a batcher thread (or, when submit fails, not
   at all). On success `outputs` holds every model output with this
   request's rows (dimension 0 = the request's); the data is valid only
   during the call. `status` is the caller's to free. */
typedef void (*kiln_batcher_callback_t)(void *user_data, kiln_status_t status,
                                        const kiln_tensor_t *outputs,
                                        size_t output_count);

/* Queues one request: every model input once, each with the same number of
   rows n along dimension 0 (1 <= n <= the largest bucket) and otherwise the
   model's shape. The inputs are copied before submit returns. `priority` 0
   takes the default level; `timeout_us` 0 the default timeout. Errors
   (returned, and the callback is not called): KILN_STATUS_INVALID_ARGUMENT
   for inputs that do not fit, KILN_STATUS_UNAVAILABLE when the queue is full
   or the batcher is shutting down. */
kiln_status_t kiln_batcher_submit(kiln_batcher_t *batcher,
                                  const kiln_tensor_t *inputs,
                                  size_t input_count, uint32_t priority,
                                  uint64_t timeout_us,
                                  kiln_batcher_callback_t callback,
                                  void *user_data);

/* Counters since creation. Durations are cumulative nanoseconds: queue
   (submit to the start of its batch), compute (gathering the inputs,
   running, splitting the outputs), request (submit to the callback's
   return). batch_histogram[i] counts batches of i + 1 rows (before
   padding), for i < histogram_size. */
typedef struct kiln_batcher_stats_s {
  uint64_t requests_succeeded;
  uint64_t requests_failed;   /* run errors, timeouts */
  uint64_t requests_rejected; /* queue full at submit */
  uint64_t inferences;        /* rows run for requests (no padding) */
  uint64_t executions;        /* batches run */
  uint64_t queue_ns, compute_ns, request_ns;
  uint64_t queue_depth;       /* requests queued now */
  uint64_t batch_histogram[64];
  size_t histogram_size;      /* the largest bucket, at most 64 */
} kiln_batcher_stats_t;

kiln_status_t kiln_batcher_stats(kiln_batcher_t *batcher,
                                 kiln_batcher_stats_t *out_stats);
/* The largest bucket (the largest n a request may have). */
uint32_t kiln_batcher_max_batch_size(const kiln_batcher_t *batcher);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */
