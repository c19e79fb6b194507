//===- Driver.h - the kiln-compile pipeline ---------------------*- C++ -*-===//
//
// The stages of the compiler after import, each one stop-able with
// --emit=<stage>, and the emission of the .kiln artifact.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_DRIVER_H
#define KILN_DRIVER_DRIVER_H

#include "compiler/codegen/cpu/CPUCodegen.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>

namespace kiln::driver {

enum class Stage { Kiln, Dispatch, Linalg, LLVM, Assembly, Artifact };

struct CompileOptions {
  Stage stopAfter = Stage::Artifact;
  cpu::CPUOptions cpu;
  std::string modelPath;
  std::string commandLine; // recorded in the artifact
  /// Called after every stage with the stage name and the IR (for
  /// --dump-ir); may be empty.
  std::function<void(llvm::StringRef stage, mlir::Operation *ir)> dumpStage;
};

/// Registers every dialect and interface the pipeline uses.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// Runs the pipeline on an imported module up to `options.stopAfter`.
/// For Stage::Kiln..LLVM, `module` holds the IR of that stage on return
/// (for LLVM: the kernels module). For Assembly, `text` receives the x86-64
/// assembly. For Artifact, the artifact is written to `outputPath`.
mlir::LogicalResult compile(mlir::OwningOpRef<mlir::ModuleOp> &module,
                            const CompileOptions &options,
                            const std::string &outputPath, std::string &text);

} // namespace kiln::driver

#endif // KILN_DRIVER_DRIVER_H
