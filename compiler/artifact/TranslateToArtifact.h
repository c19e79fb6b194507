//===- TranslateToArtifact.h - final module -> .kiln ------------*- C++ -*-===//
//
// The artifact is a translation of the compiled module: its kiln.program
// ops (command lists with #kiln.binding places), kiln.executable ops (one
// kernel per dispatch, with the launch geometry and cost of each target in
// its kiln.export) and kiln.binary ops (one code object per target).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_ARTIFACT_TRANSLATETOARTIFACT_H
#define KILN_COMPILER_ARTIFACT_TRANSLATETOARTIFACT_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace kiln::artifact {

struct TranslateOptions {
  std::string producer = "kiln-compile 0.1";
  std::string commandLine; // the options it was compiled with
  std::string model;       // the model's file name
};

/// Writes the artifact `module` describes to `path` (nothing is left behind
/// on failure); errors are emitted on the op they concern.
mlir::LogicalResult translateToArtifact(mlir::ModuleOp module, const TranslateOptions &options,
                                        const std::string &path);

} // namespace kiln::artifact

#endif // KILN_COMPILER_ARTIFACT_TRANSLATETOARTIFACT_H
