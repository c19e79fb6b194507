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
};

struct KilnEmuLane {
  const KilnEmuHooks *hooks;
  void *lds;            // the workgroup's LDS bytes
  uint32_t threadId[3]; // within the workgroup
  uint32_t blockId[3];  // the workgroup's id
  void *runtime;        // the device's own per-lane state
};

typedef void (*KilnEmuKernelFn)(KilnEmuLane *lane, void *const *bindings);

} // extern "C"

namespace kiln::emu {
/// Byte offsets the compiler loads from (static_asserted in EmuDevice.cpp).
constexpr int64_t kLaneHooksOffset = 0;
constexpr int64_t kLaneLdsOffset = 8;
constexpr int64_t kLaneThreadIdOffset = 16;
constexpr int64_t kLaneBlockIdOffset = 28;
constexpr int64_t kHooksBarrierIndex = 0;
constexpr int64_t kHooksMatrixIndex = 1;
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

#endif // KILN_EMU_ABI_H
