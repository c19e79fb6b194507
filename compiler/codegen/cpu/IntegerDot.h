//===- IntegerDot.h - 8-bit contractions as dot products -------*- C++ -*-===//

#ifndef KILN_CODEGEN_CPU_INTEGERDOT_H
#define KILN_CODEGEN_CPU_INTEGERDOT_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir {
class Operation;
class RewritePatternSet;
} // namespace mlir

namespace kiln::cpu {

/// The x86 dot-product instructions an 8-bit register tile (i32 accumulator
/// of at most 16 columns) lowers to, best first:
///  - AVX512VNNI: `vpdpbusd` (zmm), four uint8 x int8 products per i32 lane
///    accumulated in one instruction, for tiles with exactly one unsigned
///    operand and a reduction a multiple of 4; other sign pairs take the
///    AVX512BW form;
///  - AVX512BW: `vpmaddwd` (zmm) of the bytes widened to 16 bits, two
///    products per i32 lane, then `vpaddd`; any signedness, a reduction a
///    multiple of 2;
///  - AVX2: the same on ymm, 16 columns as two halves of 8.
/// All are exact: products of bytes and their pair sums fit their lanes.
/// (AVX2's `vpmaddubsw`, which ONNX Runtime uses, saturates u8 x s8 pair
/// sums at 16 bits; Kiln does not use it.)
enum class DotISA { None, AVX2, AVX512BW, AVX512VNNI };

/// "none", "avx2", "avx512bw", "avx512vnni" (pass options, --emit output).
llvm::StringRef stringifyDotISA(DotISA dot);
std::optional<DotISA> parseDotISA(llvm::StringRef name);

/// vector.contract tiles of 8-bit operands into i32 accumulators of at most
/// 16 columns -> the dot-product instructions of `dot` (nothing for None).
void populateDotProductPatterns(mlir::RewritePatternSet &patterns, DotISA dot);

/// Integer vector.contract tiles whose 8-bit operands are read broadcast
/// into the whole iteration space (linalg's vectorizer of a generic
/// contraction) read their plain tiles instead, so that they lower to outer
/// products (and match the patterns above).
void populateReadByteTilesPlainlyPatterns(mlir::RewritePatternSet &patterns);

/// Whether `op` is a vector.contract those patterns lower for `dot`;
/// `operands`, when given, receives the ops that feed it the bytes
/// (extensions and reads), which other lowerings must leave alone until
/// then.
bool isDotProductContract(mlir::Operation *op, DotISA dot,
                          llvm::SmallVectorImpl<mlir::Operation *> *operands = nullptr);

} // namespace kiln::cpu

#endif // KILN_CODEGEN_CPU_INTEGERDOT_H
