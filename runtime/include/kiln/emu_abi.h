//===- emu_abi.h - The ABI of emulated gfx kernels --------------*- C++ -*-===//
//
// An emulated gfx kernel is a gfx kernel (same tiling, LDS staging and
// matrix-core instructions) compiled for the host instead of the GPU. The
// compiler (compiler/codegen/emulator) and the emu:<gfx> device
// (runtime/src/EmuDevice.*) agree on what is declared here; the compiler
// takes the field offsets from this header, so the two cannot drift apart.
//
// Every lane of a workgroup runs the kernel entry as its own fiber:
//
//   void entry(KilnEmuLane *lane, void *const *bindings);
//
// `bindings` is the dispatch's binding array, as on the cpu device. Thread and
// workgroup ids are read from `lane`; workgroup memory (LDS) is the byte
// buffer `lane->lds`, shared by the lanes of the workgroup. What needs the
// other lanes goes through `lane->hooks`: the hooks suspend the calling fiber
// until the lanes the operation needs have reached it.
//
// Memory statistics (kiln-run --emu-stats): every LDS and global load and
// store of the kernel, as the gfx kernel wrote it (one site per operation at
// the gpu stage, so a vector<8xf16> load is one 16-byte access, as the
// ds_read_b128 / global_load_dwordx4 it becomes), is preceded by
//
//   if (lane->accessStats) lane->hooks->access(lane, &site, address);
//
// with `accessStats` read once at the kernel's entry: when statistics are
// off a kernel pays one predictable branch per access and nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_EMU_ABI_H
#define KILN_EMU_ABI_H

#include <cstddef>
#include <cstdint>

extern "C" {

struct KilnEmuLane;

/// Flags of a matrix-core operation (amdgpu.wmma's unsignedA/B, clamp).
enum : uint32_t {
  KILN_EMU_UNSIGNED_A = 1u << 0,
  KILN_EMU_UNSIGNED_B = 1u << 1,
  KILN_EMU_CLAMP = 1u << 2,
};

/// What a memory access site does (KilnEmuAccessSite::kind).
enum : uint32_t {
  KILN_EMU_ACCESS_STORE = 1u << 0,  // else a load
  KILN_EMU_ACCESS_GLOBAL = 1u << 1, // else LDS (workgroup memory)
};

/// One load or store operation of a kernel, a constant the compiler emits.
struct KilnEmuAccessSite {
  uint32_t id;    // index in program order within the kernel, from 0
  uint32_t kind;  // KILN_EMU_ACCESS_*
  uint32_t bytes; // bytes each lane accesses (a whole vector)
  uint32_t reserved;
  const char *op;       // e.g. "vector.load vector<8xf16>"
  const char *location; // the op's MLIR location ("" when unknown)
};

struct KilnEmuHooks {
  /// gpu.barrier. `site` identifies the call site within the kernel.
  void (*barrier)(KilnEmuLane *lane, uint32_t site);
  /// A wave-wide matrix-core instruction (amdgpu.mfma / amdgpu.wmma) named
  /// by its ISA mnemonic, e.g. "v_mfma_i32_16x16x32_i8". `a` and `b` are this
  /// lane's A and B operand registers (element i in register i / (32 / bits),
  /// bits (i % (32 / bits)) * bits and up); `c` its C elements (f32 or i32)
  /// and `d` receives its D elements.
  void (*matrix)(KilnEmuLane *lane, uint32_t site, const char *mnemonic,
                 uint32_t flags, const uint32_t *a, const uint32_t *b,
                 const void *c, void *d);
  /// A load or store of this lane at `address` (an LDS address lies in
  /// `lane->lds`), called only when `lane->accessStats` is nonzero. Does not
  /// suspend the lane.
  void (*access)(KilnEmuLane *lane, const KilnEmuAccessSite *site,
                 uint64_t address);
};

struct KilnEmuLane {
  const KilnEmuHooks *hooks;
  void *lds;            // the workgroup's LDS bytes
  uint32_t threadId[3]; // within the workgroup
  uint32_t blockId[3];  // the workgroup's id
  void *runtime;        // the device's own per-lane state
  uint32_t accessStats; // nonzero: call hooks->access before every access
};

typedef void (*KilnEmuKernelFn)(KilnEmuLane *lane, void *const *bindings);

} // extern "C"

namespace kiln::emu {
/// Byte offsets the compiler loads from (static_asserted in EmuDevice.cpp).
constexpr int64_t kLaneHooksOffset = 0;
constexpr int64_t kLaneLdsOffset = 8;
constexpr int64_t kLaneThreadIdOffset = 16;
constexpr int64_t kLaneBlockIdOffset = 28;
constexpr int64_t kLaneAccessStatsOffset = 48;
constexpr int64_t kHooksBarrierIndex = 0;
constexpr int64_t kHooksMatrixIndex = 1;
constexpr int64_t kHooksAccessIndex = 2;
/// Byte offsets of KilnEmuAccessSite's fields (the compiler builds them).
constexpr int64_t kAccessSiteBytes = 32;
/// The format string of emulated code objects in the artifact.
constexpr const char *kCodeObjectFormat = "emu-elf-shared-object";
/// Emulated code objects are stored under the target "emu:<gfx name>".
constexpr const char *kTargetPrefix = "emu:";
} // namespace kiln::emu

static_assert(offsetof(KilnEmuLane, hooks) == kiln::emu::kLaneHooksOffset, "");
static_assert(offsetof(KilnEmuLane, lds) == kiln::emu::kLaneLdsOffset, "");
static_assert(offsetof(KilnEmuLane, threadId) ==
                  kiln::emu::kLaneThreadIdOffset, "");
static_assert(offsetof(KilnEmuLane, blockId) == kiln::emu::kLaneBlockIdOffset,
              "");
static_assert(offsetof(KilnEmuHooks, matrix) ==
                  kiln::emu::kHooksMatrixIndex * sizeof(void *), "");
static_assert(offsetof(KilnEmuHooks, access) ==
                  kiln::emu::kHooksAccessIndex * sizeof(void *), "");
static_assert(offsetof(KilnEmuLane, accessStats) ==
                  kiln::emu::kLaneAccessStatsOffset, "");
static_assert(sizeof(KilnEmuAccessSite) == kiln::emu::kAccessSiteBytes &&
                  offsetof(KilnEmuAccessSite, op) == 16 &&
                  offsetof(KilnEmuAccessSite, location) == 24,
              "the compiler builds sites as {i32, i32, i32, i32, ptr, ptr}");

#endif // KILN_EMU_ABI_H
