//===- GraphImporter.h - state of one ONNX graph import ---------*- C++ -*-===//
//
// Internal to the importer: the value map, the initializers, the model
// storage that weight blobs point into, and the structural checks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORT_ONNX_GRAPHIMPORTER_H
#define KILN_COMPILER_IMPORT_ONNX_GRAPHIMPORTER_H

#include "import/onnx/ImportPatterns.h"
#include "import/onnx/OnnxImporter.h"

#include "llvm/ADT/StringSet.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/MemoryBuffer.h"

#include "onnx/onnx_pb.h"

#include <memory>

namespace kiln::onnx_import {

/// The parsed model and the mapped external-data files. Weight blobs point
/// into it without copying; each blob holds a reference, so it lives as long
/// as the last blob (or the importer) using it.
struct ModelStorage {
  onnx::ModelProto model;
  std::string modelDir;
  llvm::StringMap<std::unique_ptr<llvm::MemoryBuffer>> externalFiles;
  /// The mapped model file, and the initializers whose raw_data stayed in it
  /// (see WireFormat.h): their bytes point into `modelFile`.
  std::unique_ptr<llvm::MemoryBuffer> modelFile;
  llvm::DenseMap<const onnx::TensorProto *, llvm::ArrayRef<char>> mappedData;
};

/// How a graph input that is a sequence or an optional is made of the
/// function arguments its element tensors become.
struct InputLayout {
  enum class Kind { Tensor, Sequence, Optional };
  Kind kind;
  std::vector<InputLayout> elements;
};

class GraphImporter {
public:
  /// Tensors with at most this many elements are imported as `dense`
  /// attributes (they fold); larger ones as `dense_resource` blobs.
  static constexpr int64_t kInlineElements = 64;

  GraphImporter(mlir::MLIRContext &ctx, mlir::Location fileLoc,
                const ImportOptions &options,
                std::shared_ptr<ModelStorage> storage)
      : ctx(&ctx), fileLoc(fileLoc), options(options),
        storage(std::move(storage)), builder(&ctx) {}

  mlir::OwningOpRef<mlir::ModuleOp> run(const onnx::ModelProto &model);

  /// The checks of run() that libonnx's version converter relies on without
  /// making them itself (it dereferences the producer of every value a node
  /// or the graph uses): every value defined once, every use defined, no
  /// cycle. Run before converting an old opset; failure after a diagnostic.
  mlir::LogicalResult checkGraph(const onnx::GraphProto &graph) {
    std::vector<int> order;
    return checkStructure(graph, order);
  }

  /// `model` for libonnx's checker: mapped initializers become graph inputs.
  onnx::ModelProto withoutMappedData(const onnx::ModelProto &model);

  /// The value named `name`: a node output, a graph input, or an initializer
  /// (materialized on first use). Null when unknown or unreadable.
  mlir::Value lookup(llvm::StringRef name);
  void define(llvm::StringRef name, mlir::Value value) { values[name] = value; }

  mlir::FailureOr<mlir::Type> convertElementType(int32_t dataType,
                                                 llvm::StringRef what);
  mlir::FailureOr<mlir::ElementsAttr>
  convertTensor(const onnx::TensorProto &tensor, llvm::StringRef what);

  /// Imports the nodes of `graph`, a subgraph (If's branches, Loop's and
  /// Scan's bodies) that sees the values of the enclosing scope, with its
  /// inputs bound to `inputs`; returns its outputs. The names it defines are
  /// forgotten afterwards, so a body can be imported once per iteration.
  /// Failure after a diagnostic.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  importSubgraph(const onnx::GraphProto &graph, mlir::ValueRange inputs,
                 llvm::StringRef what);

  /// Imports `graph` as the body of a new private function of the module
  /// (a branch or loop body that runs at run time) whose first arguments
  /// have `inputTypes` and are the graph's inputs; the builder is left at
  /// the end of the function's entry block and the graph's outputs (values
  /// in the function, or of the enclosing scope) are returned. The values
  /// the import defined are forgotten afterwards. `finishOutlined` ends it.
  /// The first `hiddenInputs` arguments are not the graph's (a Scan body
  /// run by kiln.loop also takes the iteration and condition).
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  outlineSubgraph(const onnx::GraphProto &graph, mlir::TypeRange inputTypes,
                  llvm::StringRef what, llvm::StringRef symbolPrefix,
                  mlir::func::FuncOp &func, unsigned hiddenInputs = 0);
  /// Returns `results` from `func` and turns the values of enclosing scopes
  /// that it uses into arguments appended to its inputs (constants are
  /// cloned into it instead); returns those captured values, in argument
  /// order.
  llvm::SmallVector<mlir::Value> finishOutlined(mlir::func::FuncOp func,
                                                mlir::ValueRange results);

  static std::string nodeName(const onnx::NodeProto &node);
  static std::string describeNode(const onnx::NodeProto &node);

  /// An error at the model file.
  mlir::InFlightDiagnostic error();

private:
  friend class NodeContext;
  /// Checks that every value `graph` uses is defined once (by the graph or,
  /// when `nested`, by the enclosing scope) and orders its nodes
  /// topologically (a node's subgraphs count as using what they capture).
  mlir::LogicalResult checkStructure(const onnx::GraphProto &graph,
                                     std::vector<int> &order,
                                     bool nested = false);
  /// Converts the nodes of `graph` in `order` through the pattern registry.
  mlir::LogicalResult importNodes(const onnx::GraphProto &graph,
                                  llvm::ArrayRef<int> order, bool mainGraph = false);
  /// The activation (input 0) of `node` when post-training quantization
  /// applies to it (see ImportOptions::observeQuantizable), else empty.
  std::string quantizableActivation(const onnx::NodeProto &node);
  /// Whether --quantize-exclude names `node` (its op type, its name, or
  /// for an unnamed node the name nodeName gives it).
  bool excludedFromQuantization(const onnx::NodeProto &node) const;
  /// The quantized-then-dequantized value of activation `name` (made once).
  /// `name` read through kiln.quantize and kiln.dequantize with uint8
  /// parameters computed at run time (once per tensor).
  mlir::Value dynamicallyQuantized(const std::string &name, const onnx::NodeProto &node);
  mlir::FailureOr<mlir::Value> fakeQuantized(const std::string &name,
                                             const onnx::NodeProto &node);
  mlir::LogicalResult checkSupported(const onnx::GraphProto &graph);
  mlir::FailureOr<mlir::RankedTensorType>
  inputType(const std::string &name, const onnx::TypeProto &type);
  /// Appends the function arguments graph input `name` of `type` becomes
  /// (a sequence of --input-sequence-length N: N elements named NAME[i]; an
  /// optional: its element, or nothing with --input-absent) and returns how
  /// they make it up.
  mlir::FailureOr<InputLayout>
  flattenInput(const std::string &name, const onnx::TypeProto &type,
               llvm::SmallVectorImpl<mlir::Type> &argTypes,
               llvm::SmallVectorImpl<std::string> &argNames);
  /// The value of an input laid out as `layout` from `args`, from `next` on.
  mlir::Value buildInput(const InputLayout &layout, mlir::ValueRange args,
                         unsigned &next);
  /// Appends the function results graph output `name` holding `value`
  /// becomes: a sequence's elements named NAME[i], an optional's element (or
  /// nothing when it has none); a Bounded value its padded tensor, with
  /// its extent queued in `extents` (result index, axis, extent value).
  struct PendingExtent {
    unsigned result;
    int64_t axis;
    mlir::Value extent;
  };
  void flattenOutput(const std::string &name, mlir::Value value,
                     llvm::SmallVectorImpl<mlir::Value> &results,
                     llvm::SmallVectorImpl<std::string> &names,
                     llvm::SmallVectorImpl<PendingExtent> &extents);
  /// The constant a graph input pinned with --input-value becomes.
  mlir::FailureOr<mlir::DenseElementsAttr>
  pinnedValue(const onnx::ValueInfoProto &info, llvm::ArrayRef<std::string> values);
  mlir::FailureOr<llvm::ArrayRef<char>>
  externalData(const onnx::TensorProto &tensor, llvm::StringRef what,
               int64_t bytes);

  mlir::MLIRContext *ctx;
  mlir::Location fileLoc;
  const ImportOptions &options;
  std::shared_ptr<ModelStorage> storage;
  mlir::OpBuilder builder;
  int64_t opset = 0;
  bool failedConversion = false;
  llvm::StringMap<mlir::Value> values;
  /// Functions outlined so far (their names are numbered).
  unsigned outlinedCount = 0;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  /// Post-training quantization: the activations observed (in first-use
  /// order) and the fake-quantized values made for them.
  llvm::SmallVector<std::string> observed;
  llvm::StringMap<mlir::Value> fakeQuantizedValues;
  /// Activations that only excluded nodes (--quantize-exclude) would read:
  /// a table may have ranges for them.
  llvm::StringSet<> excludedActivations;
  /// ImportOptions::shadowQuantized: per quantized node, its name, the
  /// output 0 of its float copy and of its quantized copy.
  struct Shadow {
    std::string node;
    mlir::Value real, quantized;
  };
  llvm::SmallVector<Shadow> shadows;
  /// The entry block of the main function (where shadowed nodes' gates are
  /// added as arguments).
  mlir::Block *mainEntry = nullptr;
};

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_IMPORT_ONNX_GRAPHIMPORTER_H
