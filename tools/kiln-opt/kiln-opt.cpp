//===- kiln-opt.cpp - The kiln optimizer driver ---------------------------===//
//
// Runs kiln and upstream MLIR passes on .mlir files, like mlir-opt; the lit
// suite drives every dialect and pass test through it.
//
//===----------------------------------------------------------------------===//

#include "codegen/amdgpu/Passes.h"
#include "codegen/common/Passes.h"
#include "codegen/cpu/CPUCodegen.h"
#include "codegen/cpu/Passes.h"
#include "codegen/emulator/Passes.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Passes/Passes.h"
#include "lowering/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  // One registration per layer, in pipeline order.
  kiln::registerKilnPasses();
  kiln::registerKilnLoweringPasses();
  kiln::registerKilnCodegenCommonPasses();
  kiln::registerKilnCPUPasses();
  kiln::registerKilnAMDGPUPasses();
  kiln::registerKilnEmulatorPasses();
  // The target pipelines, so that any stage runs from a .mlir file.
  kiln::cpu::registerCPUPipelines();
  kiln::gfx::registerGfxPipelines();
  kiln::emu::registerEmulatorPipelines();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<kiln::KilnDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
