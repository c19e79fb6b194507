//===- Passes.h - Emulation of the gfx kernels on the host ------*- C++ -*-===//
//
// Declarations of the emulator's passes (generated from Passes.td next to
// this file).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_EMULATOR_PASSES_H
#define KILN_CODEGEN_EMULATOR_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "codegen/emulator/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/emulator/Passes.h.inc"

namespace emu {
/// Registers --kiln-emu-pipeline='chip=<gfx target or chip name>' (gfx942),
/// buildEmulatorPipeline of EmulatorCodegen.h, for kiln-opt.
void registerEmulatorPipelines();
} // namespace emu

} // namespace kiln

#endif // KILN_CODEGEN_EMULATOR_PASSES_H
