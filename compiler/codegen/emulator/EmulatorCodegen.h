//===- EmulatorCodegen.h - gfx kernels compiled for the host -----*- C++ -*-===//
//
// The emulation of the gfx kernels: the gpu.module of one gfx target, at the
// last point before the ROCDL conversion, rewritten into host functions with
// the ABI of kiln/emu_abi.h and emitted as an x86-64 shared object that
// the runtime's emu:<gfx> device runs one fiber per lane.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_EMULATOR_EMULATORCODEGEN_H
#define KILN_CODEGEN_EMULATOR_EMULATORCODEGEN_H

#include "codegen/amdgpu/GPUCodegen.h"
#include "codegen/common/Passes.h"

namespace kiln::emu {

/// The gpu stage of `target` -> host functions in the LLVM dialect.
void buildEmulatorPipeline(mlir::OpPassManager &pm, const gfx::Target &target);

/// Emits the lowered kernels of `module` (in `kernels` order) as an x86-64
/// shared object for the CPU `hostCPU` with `hostFeatures`: one entry
/// `void name(KilnEmuLane *, void *const *bindings)` per kernel. `assembly`,
/// when non-null, receives the x86-64 assembly instead.
mlir::LogicalResult emitCodeObject(mlir::ModuleOp module, llvm::StringRef hostCPU,
                                   llvm::StringRef hostFeatures,
                                   llvm::ArrayRef<std::string> kernels,
                                   codegen::HostObject &object, std::string *assembly = nullptr);

} // namespace kiln::emu

#endif // KILN_CODEGEN_EMULATOR_EMULATORCODEGEN_H
