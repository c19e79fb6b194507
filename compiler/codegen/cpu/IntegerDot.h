//===- IntegerDot.h - 8-bit contractions as dot products -------*- C++ -*-===//

#ifndef KILN_CODEGEN_CPU_INTEGERDOT_H
#define KILN_CODEGEN_CPU_INTEGERDOT_H

#include "llvm/ADT/SmallVector.h"

namespace mlir {
class Operation;
class RewritePatternSet;
} // namespace mlir

namespace kiln::cpu {

/// vector.contract tiles of uint8 x int8 (either side unsigned) into an i32
/// accumulator of 16 columns, with a reduction a multiple of 4 -> AVX-512
/// VNNI `vpdpbusd` (llvm.x86.avx512.vpdpbusd.512), one per accumulator row
/// and 4 k steps. Needs a target with avx512vnni.
void populateVNNIContractPatterns(mlir::RewritePatternSet &patterns);

/// Integer vector.contract tiles whose 8-bit operands are read broadcast
/// into the whole iteration space (linalg's vectorizer of a generic
/// contraction) read their plain tiles instead, so that they lower to outer
/// products (and match the patterns above).
void populateReadByteTilesPlainlyPatterns(mlir::RewritePatternSet &patterns);

/// Whether `op` is a vector.contract those patterns lower; `operands`, when
/// given, receives the ops that feed it the bytes (extensions and reads),
/// which other lowerings must leave alone until then.
bool isDotProductContract(mlir::Operation *op,
                          llvm::SmallVectorImpl<mlir::Operation *> *operands = nullptr);

} // namespace kiln::cpu

#endif // KILN_CODEGEN_CPU_INTEGERDOT_H
