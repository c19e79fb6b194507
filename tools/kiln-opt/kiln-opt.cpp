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
#include "driver/CommandLine.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Passes/Passes.h"
#include "lowering/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  // libLLVM's and libMLIR's static options (backends, Polly, ...): not
  // kiln-opt's, so --help leaves them out (--llvm-help lists them).
  llvm::DenseSet<llvm::cl::Option *> foreign = kiln::driver::registeredOptions();
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
  std::string header = mlir::registerCLIOptions("Kiln optimizer driver\n", registry);
  std::vector<const char *> args = kiln::driver::setUpCommandLineHiding("kiln-opt", argc, argv, foreign);
  auto [input, output] =
      mlir::parseCLIOptions(int(args.size()), const_cast<char **>(args.data()), header);
  return mlir::asMainReturnCode(mlir::MlirOptMain(int(args.size()),
                                                  const_cast<char **>(args.data()), input,
                                                  output, registry));
}
