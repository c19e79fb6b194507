//===- OnnxImporter.h - ONNX model -> kiln IR -------------------*- C++ -*-===//
//
// Public entry of the ONNX importer: reads a binary `.onnx` (with external
// data files next to it) or ONNX text syntax (`.onnxtxt`) and builds a module
// with `func.func @main` made of kiln ops.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORT_ONNX_ONNXIMPORTER_H
#define KILN_COMPILER_IMPORT_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

namespace kiln::onnx_import {

/// The opsets of the default ONNX domain the importer accepts.
inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 21;

struct ImportOptions {
  /// Static shapes for graph inputs, by ONNX name (from --input-shape). They
  /// pin dynamic dimensions; static dimensions must agree.
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// Values pinned to graph inputs, by ONNX name (from --input-value): the
  /// input becomes a constant of its type (a scalar for one value, else the
  /// input's shape, or 1-D when it has none), so what depends on it folds.
  /// The numbers as written, in row-major order.
  llvm::StringMap<llvm::SmallVector<std::string>> inputValues;
  /// The lengths of graph inputs that are sequences, by ONNX name (from
  /// --input-sequence-length): element i becomes the input NAME[i].
  llvm::StringMap<int64_t> inputSequenceLengths;
  /// Graph inputs that are optionals without an element (--input-absent).
  llvm::StringMap<bool> absentInputs;
  /// Run libonnx's checker on models whose opset it knows (<= 17).
  bool runChecker = true;
  /// A batch bucket (kiln-compile --batch-sizes): dimension 0 of every graph
  /// input that is not pinned by --input-value takes this size, over
  /// --input-shape's. The model must leave that dimension dynamic (or fix it
  /// to this size): a model that fixes its batch cannot be rebatched. 0: no
  /// bucket.
  int64_t batchSize = 0;

  /// Post-training quantization (compiler/quantize). A node is quantizable
  /// when it is a Conv, MatMul or Gemm of the main graph whose input 0 is a
  /// float tensor and whose weight (input 1) is a constant, and neither its
  /// name nor its op type is in `quantizeExclude`; its input 0 is the
  /// activation the calibration measures, named by its ONNX tensor name.
  ///
  /// With `observeQuantizable`, every such activation also becomes an output
  /// of the model (after its own outputs, once per tensor), and the module
  /// lists their names in `kiln.observed_tensors` (kObservedTensorsAttr).
  bool observeQuantizable = false;
  /// The quantization of each activation, by ONNX name: a quantizable node
  /// reads its input 0 through kiln.quantize and kiln.dequantize with these
  /// parameters (the node's other users keep the float tensor). A
  /// quantizable activation without an entry, or an entry no quantizable
  /// node reads, is an error: the table was made for another model.
  struct Quantization {
    double scale = 1;
    int64_t zeroPoint = 0;
    bool isSigned = false; // int8, else uint8
  };
  llvm::StringMap<Quantization> quantizeActivations;
  bool quantize = false; // quantizeActivations applies (it may be empty)
  /// Dynamic quantization (--quantize=int8-dynamic): every quantizable
  /// MatMul and Gemm reads its input 0 through kiln.quantize and
  /// kiln.dequantize with uint8 parameters computed at run time from the
  /// tensor's range (DynamicQuantizeLinear's), no table.
  bool quantizeDynamic = false;
  /// Sensitivity analysis (with `quantize`): every quantized node is
  /// imported twice, from its quantized activation and from its float one.
  /// The graph goes on from float + g * (quantized - float), g the node's
  /// gate: a program input of shape [1] named NODE#gate, after the model's
  /// inputs. With every gate 0 each quantized copy sees exactly the float
  /// model's input and differs from its float copy only by that node's own
  /// quantization error; with some gates 1, the outputs are those of the
  /// model with just those nodes quantized. Both copies' outputs 0 follow the
  /// model's outputs (and the observed ones), named NODE#float and
  /// NODE#int8; the module lists the nodes in `kiln.shadowed_nodes`
  /// (kShadowedNodesAttr).
  bool shadowQuantized = false;
  /// Node names (unnamed nodes by the name reports give them: their first
  /// output) and op types kept in float. A table may still hold ranges for
  /// the activations only they read.
  llvm::SmallVector<std::string> quantizeExclude;
  /// Weight-only 4-bit quantization (--quantize=int4-weights): the module
  /// lists the MatMul and Gemm nodes of the main graph that
  /// `quantizeExclude` names (by name or op type) in `kiln.float_nodes`
  /// (kFloatNodesAttr), which kiln-quantize-int4-weights leaves in float.
  bool int4Weights = false;
};


/// Parses "NAME=1x3x224x224" into `options`; returns an error message on bad
/// syntax, or an empty string.
std::string parseInputShape(llvm::StringRef spec, ImportOptions &options);

/// Parses "NAME=16000" or "NAME=1,3,224,224" into `options`; returns an
/// error message on bad syntax, or an empty string.
std::string parseInputValue(llvm::StringRef spec, ImportOptions &options);

/// Parses "NAME=N" (--input-sequence-length) into `options`; returns an
/// error message on bad syntax, or an empty string.
std::string parseInputSequenceLength(llvm::StringRef spec, ImportOptions &options);

/// Imports the model at `path`. Every problem is reported through the
/// context's diagnostic engine (one error naming the node, op type and opset
/// where there is one) and yields a null module.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &context,
                                                 llvm::StringRef path,
                                                 const ImportOptions &options);

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_IMPORT_ONNX_ONNXIMPORTER_H
