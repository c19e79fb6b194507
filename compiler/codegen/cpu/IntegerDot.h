//===- IntegerDot.h - 8-bit contractions as dot products -------*- C++ -*-===//

#ifndef KILN_CODEGEN_CPU_INTEGERDOT_H
#define KILN_CODEGEN_CPU_INTEGERDOT_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace mlir {
class Operation;
class RewritePatternSet;
class RewriterBase;
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

/// With VNNI, the column operand of each 8-bit register tile (4 k rows of
/// up to 32 columns, read from a tensor of the workgroup: an im2col buffer,
/// a packed panel, the workgroup's slice of the input) is read from an
/// interleaved copy of that tensor made once, right where it is defined:
/// `[..., K, N]` -> `[..., K/4, N, 4]`, each column's four k bytes side by
/// side, which is the operand `vpdpbusd` takes. The tile's read becomes one
/// contiguous load and a `vector.transpose` (exact: it is the same 4 x w
/// bytes), which the dot-product patterns take as the operand itself;
/// before, every row tile interleaved the same columns again with byte
/// shuffles. Reads whose k offset is not provably a multiple of 4 stay.
void interleaveDotProductColumns(mlir::Operation *func, mlir::RewriterBase &rewriter, DotISA dot);

/// Reads of each element of an interleaved copy (row tiles of its column
/// block) below which making the copy costs more than interleaving in every
/// tile (a 1x1 convolution's workgroup of 4 row tiles by all its columns:
/// 0.23 -> 0.28 ms with the copy; 16 and more row tiles: 8-13% faster).
constexpr int64_t kMinInterleavedRereads = 8;

} // namespace kiln::cpu

#endif // KILN_CODEGEN_CPU_INTEGERDOT_H
