//===- KilnDialect.h - The kiln graph dialect -------------------*- C++ -*-===//
//
// Declares the kiln dialect and its operations (generated from KilnOps.td),
// plus the shape helpers its verifiers, folders and the importer share.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILNDIALECT_H
#define KILN_DIALECT_KILNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Dialect/KilnOpsDialect.h.inc"
#include "kiln/Dialect/KilnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/KilnAttrs.h.inc"

#define GET_OP_CLASSES
#include "kiln/Dialect/KilnOps.h.inc"

namespace kiln {

/// Attribute name carrying the ONNX name of a `@main` argument or result.
inline constexpr llvm::StringLiteral kOnnxNameAttr = "kiln.name";
/// On a `@main` or program result whose size along one axis the data
/// decides (NonZero, Unique, ...): `array<i64: axis, extent>`. The result's
/// type has that axis at its compile-time upper bound, result `extent` (an
/// i64 scalar, named like the output with kExtentNameSuffix) holds the size
/// computed at run time, and only the first that many entries along the
/// axis are the output. Extent results follow the model's outputs and are
/// no model outputs themselves.
inline constexpr llvm::StringLiteral kExtentAttr = "kiln.extent";
inline constexpr llvm::StringLiteral kExtentNameSuffix = "#extent";
/// On the module: the graph inputs pinned to constants at import
/// (--input-value), each ONNX name -> its values as written ("16000",
/// "1,3,224,224"). The artifact records them; they are no program inputs.
inline constexpr llvm::StringLiteral kPinnedInputsAttr = "kiln.pinned_inputs";
/// On a public kiln.program: the batch bucket it runs (kiln-compile
/// --batch-sizes), an i64. The artifact records it per program.
inline constexpr llvm::StringLiteral kBatchSizeAttr = "kiln.batch_size";
/// On the module: the ONNX names of the activations the importer added as
/// outputs for calibration (ImportOptions::observeQuantizable), an array of
/// strings.
inline constexpr llvm::StringLiteral kObservedTensorsAttr = "kiln.observed_tensors";
/// On the module: the ONNX node names --quantize-exclude keeps in float
/// (kiln-quantize-int4-weights leaves their matmuls alone).
inline constexpr llvm::StringLiteral kFloatNodesAttr = "kiln.float_nodes";
/// On a kiln.matmul_integer of 8-bit operands, and on the linalg
/// contraction it lowers to: every value of both operands fits in 4 bits
/// (-8..7 signed, 0..15 unsigned), as a QDQ product quantized to int4 on
/// both sides stores them (kiln-fold-quantized-ops). The values are bytes
/// everywhere (the cpu's 8-bit kernels read them as they are); the gfx
/// targets with a 4-bit matrix instruction (RDNA's iu4 WMMA) take it.
inline constexpr llvm::StringLiteral kFourBitAttr = "kiln.four_bit";
/// On the module: the ONNX node names the importer imported twice for the
/// sensitivity analysis (ImportOptions::shadowQuantized), an array of
/// strings; their outputs are named with these suffixes.
inline constexpr llvm::StringLiteral kShadowedNodesAttr = "kiln.shadowed_nodes";
inline constexpr llvm::StringLiteral kShadowFloatSuffix = "#float";
inline constexpr llvm::StringLiteral kShadowQuantizedSuffix = "#int8";
inline constexpr llvm::StringLiteral kShadowGateSuffix = "#gate";

/// Largest number of elements a folder materializes. Folding exists for the
/// shape computations exported models carry (Shape -> Gather -> Concat ->
/// Reshape chains), not for weights, which stay `dense_resource` blobs.
inline constexpr int64_t kMaxFoldElements = 1 << 16;

/// Multidirectional (numpy) broadcast of two shapes; failure when a pair of
/// dimensions is neither equal nor 1.
llvm::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// Bytes of a tensor at run time: row-major, one byte per element of i1 and
/// of sub-byte integers (as the code generators store them).
uint64_t storageBytes(mlir::RankedTensorType type);

/// When `slice` (a kiln.slice) is a view of its input's bytes: static
/// shapes, steps of 1, the elements it takes one contiguous range (every
/// dimension before the first one it cuts is 1 in the result, every one
/// after it whole), starting at a 64-byte aligned offset, of a value
/// computed at run time (not a constant, through reshapes). Then programs
/// keep it as a view, like a reshape, and the byte offset is returned.
std::optional<uint64_t> sliceViewOffset(mlir::Operation *slice);

/// The most elements a tensor may have: 2^40 (4 TiB of f32, beyond any
/// device's memory). Shapes past it are refused at import, so that shape
/// arithmetic (products, window sizes) never overflows int64.
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;

/// Whether the static dimensions of `shape` multiply to at most
/// kMaxTensorElements (dynamic dimensions are not counted).
bool isWithinSizeLimit(llvm::ArrayRef<int64_t> shape);

/// Output length of one pooled or convolved spatial dimension (0 when the
/// window does not fit; computed without overflow for any inputs, saturating
/// at INT64_MAX, which the size limit then refuses).
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t dilation, int64_t padBegin, int64_t padEnd,
                         bool ceilMode);

} // namespace kiln

#endif // KILN_DIALECT_KILNDIALECT_H
