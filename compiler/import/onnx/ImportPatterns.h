//===- ImportPatterns.h - ONNX op -> kiln patterns --------------*- C++ -*-===//
//
// The importer converts each ONNX node through a pattern keyed by op type and
// the opset version its semantics start at (as in the ONNX operator
// changelog). Patterns live in one file per op family and see the node
// through NodeContext, which hands out inputs, attributes and constant
// operands and records results.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORT_ONNX_IMPORTPATTERNS_H
#define KILN_COMPILER_IMPORT_ONNX_IMPORTPATTERNS_H

#include "kiln/Dialect/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <optional>

namespace onnx {
class GraphProto;
class NodeProto;
class AttributeProto;
class TensorProto;
} // namespace onnx

namespace kiln::onnx_import {

class GraphImporter;

/// Where an import attempt that may be undone started (NodeContext::
/// checkpoint): the ops the builder's block had before its insertion point,
/// the module's last function, and the names mapped.
struct ImportCheckpoint {
  mlir::Block *block = nullptr;
  mlir::Operation *before = nullptr; // last op before the insertion point
  mlir::Operation *next = nullptr;   // the op at the insertion point, or null
  mlir::Operation *lastFunction = nullptr;
  llvm::StringMap<mlir::Value> values;
};

/// What a pattern sees of one ONNX node.
class NodeContext {
public:
  NodeContext(GraphImporter &graph, const onnx::NodeProto &node, int64_t opset,
              mlir::Location loc, mlir::OpBuilder &builder);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location loc() const { return location; }
  mlir::MLIRContext *context() { return b.getContext(); }
  int64_t opset() const { return opsetVersion; }
  llvm::StringRef opType() const;
  llvm::StringRef name() const;

  /// Number of inputs as written (trailing optional inputs may be missing).
  unsigned numInputs() const;
  /// Whether optional input `i` is present (listed with a non-empty name).
  bool hasInput(unsigned i) const;
  /// Input `i`; null when absent. Callers check `hasInput` for optional ones.
  mlir::Value input(unsigned i);
  mlir::RankedTensorType inputType(unsigned i);
  unsigned numOutputs() const;
  /// Whether output `i` is used by the graph (listed with a non-empty name).
  bool hasOutput(unsigned i) const;

  /// Input `i` as a constant known at import time (an initializer, a
  /// Constant node, or a folded shape computation), or null.
  mlir::DenseElementsAttr constantInput(unsigned i);
  /// The integer values of constant input `i`; emits an error naming the
  /// input (`what`) and fails when it is not a constant.
  mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(unsigned i,
                                                           llvm::StringRef what);
  /// The float values of constant scalar/tensor input `i`, or failure.
  mlir::FailureOr<llvm::SmallVector<double>>
  constantFloats(unsigned i, llvm::StringRef what);

  /// Reports that input `i` ('what') must be `kind` ("an integer
  /// constant") known at compile time, naming the graph inputs it comes from
  /// and the --input-value / --input-shape that would fix it.
  /// `reason`, when given, says why (in parentheses after the message).
  void notConstant(unsigned i, llvm::StringRef what, llvm::StringRef kind,
                   llvm::StringRef reason = "");

  bool hasAttr(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t defaultValue) const;
  double floatAttr(llvm::StringRef name, double defaultValue) const;
  std::string stringAttr(llvm::StringRef name,
                         llvm::StringRef defaultValue) const;
  llvm::SmallVector<int64_t> intsAttr(llvm::StringRef name) const;
  llvm::SmallVector<double> floatsAttr(llvm::StringRef name) const;
  /// The values of a list-of-strings attribute (empty when absent).
  llvm::SmallVector<std::string> stringsAttr(llvm::StringRef name) const;
  /// A tensor attribute converted to an elements attribute, or null.
  mlir::ElementsAttr tensorAttr(llvm::StringRef name);
  /// The graph attribute `name` (If's branches, Loop's and Scan's bodies),
  /// or null after a diagnostic when the node has none.
  const onnx::GraphProto *graphAttr(llvm::StringRef name);
  /// Imports `graph` (one of this node's graph attributes) in the current
  /// scope with its inputs bound to `inputs`; its outputs, or failure after
  /// a diagnostic.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  importSubgraph(const onnx::GraphProto &graph, mlir::ValueRange inputs);

  /// Imports `graph` into a new private function of the module, for control
  /// flow decided at run time (see GraphImporter::outlineSubgraph): its
  /// inputs have `inputTypes`; `role` ("then", "else", "body") names it.
  /// The builder is left inside the function; `finishOutlined` returns
  /// `results` from it and gives the outer values it captures.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  outlineSubgraph(const onnx::GraphProto &graph, mlir::TypeRange inputTypes,
                  llvm::StringRef role, mlir::func::FuncOp &func,
                  unsigned hiddenInputs = 0);
  llvm::SmallVector<mlir::Value> finishOutlined(mlir::func::FuncOp func,
                                                mlir::ValueRange results);

  /// Records what has been imported so far; `rollback` erases everything
  /// imported since (ops, outlined functions) and forgets the names mapped
  /// since, so that a pattern can try one way (unrolling) and fall back to
  /// another.
  ImportCheckpoint checkpoint();
  void rollback(const ImportCheckpoint &checkpoint);

  /// The builtin element type of ONNX data type `dataType` (a TensorProto
  /// enum value); emits an error naming `what` when unsupported.
  mlir::FailureOr<mlir::Type> dataType(int64_t dataType, llvm::StringRef what);

  /// Records `value` as output `i`.
  void setOutput(unsigned i, mlir::Value value);

  /// Imports this node as the default-domain op `opType` (its pattern at
  /// `opset`, by default the node's) on `inputs` (a null value is an absent
  /// optional input), with this node's attributes but `dropAttrs`; returns
  /// its first `numResults` results, or failure after a diagnostic that
  /// names this node. How a quantized op (com.microsoft QLinearAveragePool)
  /// reuses its float op's pattern between dequantizing its inputs and
  /// quantizing its results.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  importAs(llvm::StringRef opType, llvm::ArrayRef<mlir::Value> inputs,
           unsigned numResults, llvm::ArrayRef<llvm::StringRef> dropAttrs = {},
           std::optional<int64_t> opset = std::nullopt);

  /// An error at this node; the message is prefixed with the node's op type,
  /// opset and name.
  mlir::InFlightDiagnostic emitError();

  /// Normalizes a possibly negative axis against `rank`; emits an error and
  /// fails when it is out of range.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank);

  /// Builds `OpTy` and folds it when its operands are constants. For ops
  /// that infer their result type, the inference runs first, at the node's
  /// location: when it fails (operands whose shapes or types the op does not
  /// accept) the node gets a diagnostic, the import is marked failed, and a
  /// stand-in value (a zero of the first operand's type) lets the pattern
  /// finish without building anything invalid. (The ODS builders would abort
  /// the process instead.)
  template <typename OpTy, typename... Args>
  mlir::Value create(Args &&...args) {
    if constexpr (OpTy::template hasTrait<mlir::InferTypeOpInterface::Trait>() &&
                  OpTy::template hasTrait<mlir::OpTrait::OneResult>()) {
      mlir::OperationState state(location, OpTy::getOperationName());
      // The builder with an explicit result type does not infer; the
      // placeholder is replaced by the inferred type below.
      OpTy::build(b, state, b.getNoneType(), std::forward<Args>(args)...);
      llvm::SmallVector<mlir::Type, 1> inferred;
      std::string why; // the inference's own diagnostic, reported at the node
      mlir::LogicalResult ok = mlir::failure();
      {
        mlir::ScopedDiagnosticHandler capture(b.getContext(), [&](mlir::Diagnostic &diag) {
          if (why.empty())
            why = diag.str();
          return mlir::success();
        });
        ok = OpTy::inferReturnTypes(b.getContext(), location, state.operands,
                                    state.attributes.getDictionary(b.getContext()),
                                    state.getRawProperties(), state.regions, inferred);
      }
      if (mlir::failed(ok))
        return inferenceFailed(OpTy::getOperationName(), state.operands, why);
      if (!withinSizeLimit(inferred))
        return inferenceFailed("", state.operands);
      state.types.assign(inferred.begin(), inferred.end());
      return buildAndFold(state);
    } else {
      mlir::Value result = b.createOrFold<OpTy>(location, std::forward<Args>(args)...);
      return checked(result);
    }
  }

  /// A splat constant of `type` (a scalar when `type` has rank 0).
  mlir::Value splat(mlir::RankedTensorType type, double value);
  /// A rank-0 constant with `like`'s element type.
  mlir::Value scalar(mlir::Type elementType, double value);
  /// kiln.reshape, folded away when the shape does not change.
  mlir::Value reshape(mlir::Value value, llvm::ArrayRef<int64_t> shape);
  /// kiln.cast, folded away when the type does not change.
  mlir::Value cast(mlir::Value value, mlir::Type elementType);

private:
  /// Reports a failed type inference of `opName` on `operands` (once per
  /// node) and returns the stand-in value.
  mlir::Value inferenceFailed(llvm::StringRef opName, mlir::ValueRange operands,
                              llvm::StringRef why = "");
  /// False, after a diagnostic at the node, when one of `types` is a tensor
  /// with more than kMaxTensorElements elements.
  bool withinSizeLimit(mlir::TypeRange types);
  /// Creates the op `state` describes, folds it and checks it.
  mlir::Value buildAndFold(const mlir::OperationState &state);
  /// Verifies the op defining `result` (when it was not folded away): an op
  /// whose operand types it does not accept (an integer tensor given to a
  /// float-only op) becomes this node's diagnostic and a stand-in value.
  mlir::Value checked(mlir::Value result);

  GraphImporter &graph;
  const onnx::NodeProto &node;
  /// The node this one stands in for (importAs), whose name diagnostics
  /// give; null for a node of the graph.
  NodeContext *outer = nullptr;
  int64_t opsetVersion;
  mlir::Location location;
  mlir::OpBuilder &b;
};

using PatternFn = std::function<mlir::LogicalResult(NodeContext &)>;

/// All patterns, keyed by op type and the opset each version starts at.
class PatternRegistry {
public:
  /// Registers `fn` for `opType` from opset `sinceVersion` on.
  void add(llvm::StringRef opType, int64_t sinceVersion, PatternFn fn);
  /// The pattern for `opType` at `opset` (the latest one not newer than it).
  const PatternFn *lookup(llvm::StringRef opType, int64_t opset) const;
  /// The oldest opset any pattern of `opType` supports, or 0.
  int64_t firstVersion(llvm::StringRef opType) const;

private:
  llvm::StringMap<std::vector<std::pair<int64_t, PatternFn>>> patterns;
};

/// The registry with every family's patterns (built once).
const PatternRegistry &getPatternRegistry();

// One registration function per op family (one file each).
void registerElementwisePatterns(PatternRegistry &registry);
void registerMatmulPatterns(PatternRegistry &registry);
void registerConvPatterns(PatternRegistry &registry);
void registerPoolingPatterns(PatternRegistry &registry);
void registerReductionPatterns(PatternRegistry &registry);
void registerNormalizationPatterns(PatternRegistry &registry);
void registerDataMovementPatterns(PatternRegistry &registry);
void registerLossPatterns(PatternRegistry &registry);
void registerControlFlowPatterns(PatternRegistry &registry);
void registerQuantizationPatterns(PatternRegistry &registry);
void registerRecurrentPatterns(PatternRegistry &registry);
void registerResizePatterns(PatternRegistry &registry);
void registerSamplingPatterns(PatternRegistry &registry);
void registerConstantPatterns(PatternRegistry &registry);
void registerSequencePatterns(PatternRegistry &registry);

/// A sequence or an optional at import time. Kiln unrolls both: a sequence
/// of known length is its element tensors, an optional holds one element or
/// none. The importer carries one as a value of tuple type (the elements'
/// types) defined by an `unrealized_conversion_cast` of its elements marked
/// `kiln.aggregate`, so that it flows through the value map, subgraph
/// bindings and unrolled control flow like a tensor does. Only the sequence
/// and optional patterns (and Identity, If, Loop) look inside; any other op
/// given one is refused at the node; none survives the import.
struct Aggregate {
  enum class Kind { Sequence, Optional };
  Kind kind;
  /// A sequence's elements; an optional's element (none when empty), a
  /// tensor or a sequence.
  llvm::SmallVector<mlir::Value> elements;
};

/// The value carrying `kind` with `elements`.
mlir::Value buildAggregate(mlir::OpBuilder &b, mlir::Location loc,
                           Aggregate::Kind kind, mlir::ValueRange elements);
/// What `value` carries when it is a sequence or an optional.
std::optional<Aggregate> getAggregate(mlir::Value value);

/// A tensor whose size along one axis is known only at run time (NonZero,
/// Unique, NonMaxSuppression, Compress with a run-time condition): `padded`
/// has that axis at its compile-time upper bound, `extent` (an i64 scalar
/// tensor) is the run-time size, and the entries past it are unspecified.
/// The importer carries one as a value with a dynamic dimension at `axis`,
/// defined by an `unrealized_conversion_cast` of (padded, extent) marked
/// `kiln.bounded`. Only graph outputs (and Identity) take one: a graph
/// output becomes the padded tensor and its extent, and the runtime returns
/// the first `extent` entries (DataDependent.cpp). Any other op given one is
/// refused at the node.
struct Bounded {
  mlir::Value padded;
  int64_t axis;
  mlir::Value extent;
};

mlir::Value buildBounded(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value padded, int64_t axis, mlir::Value extent);
/// What `value` carries when it is a Bounded value.
std::optional<Bounded> getBounded(mlir::Value value);

/// `rows` (n entries along `axis`) placed along `axis` of a tensor whose
/// size there is `bound`: entry i at position `slots[i]` (a 1-d i64 tensor
/// of n slots, each in [0, bound]; slot `bound` drops the entry). Positions
/// no entry lands on are zero; two entries must not share a slot.
mlir::Value placeRows(NodeContext &node, mlir::Value rows, int64_t axis,
                      mlir::Value slots, int64_t bound);

/// The entries of `rows` along `axis` whose `mask` (a 1-d i1 tensor, one per
/// entry) is set, in order, as a Bounded value (bound: every entry).
mlir::Value compactRows(NodeContext &node, mlir::Value rows, int64_t axis,
                        mlir::Value mask);

/// Input 0 with the axis its `axis` attribute names or, without the
/// attribute, input 0 flattened with axis 0 (Compress, Unique).
mlir::FailureOr<std::pair<mlir::Value, int64_t>> axisOrFlattened(NodeContext &node);

void registerDataDependentPatterns(PatternRegistry &registry);
void registerUniquePatterns(PatternRegistry &registry);
void registerNonMaxSuppressionPatterns(PatternRegistry &registry);
void registerSpectralPatterns(PatternRegistry &registry);
void registerLinearAlgebraPatterns(PatternRegistry &registry);
void registerTextPatterns(PatternRegistry &registry);
void registerRandomPatterns(PatternRegistry &registry);
void registerQLinearPatterns(PatternRegistry &registry);

/// saturate(round_half_even(x / scale) + zeroPoint) as integer type
/// `quantized` (ONNX's linear quantization, a kiln.quantize); `scale` is in
/// x's float type, `zeroPoint` (null for 0) in `quantized`, and both
/// broadcast against x.
mlir::Value quantizeLinear(NodeContext &node, mlir::Value x, mlir::Value scale,
                           mlir::Value zeroPoint, mlir::Type quantized);

/// Whether input `index` (y_zero_point of QLinearConv / QLinearMatMul,
/// which gives the output's type) is an int8 or uint8 tensor; a diagnostic
/// otherwise.
bool isQuantizedOutputZeroPoint(NodeContext &node, unsigned index);

/// DynamicQuantizeLinear's uint8 parameters of `x`, computed at run time from
/// its range including 0: the f32 scale (max - min) / 255 and the ui8 zero
/// point saturate(round(-min / scale)), both rank 0.
std::pair<mlir::Value, mlir::Value> dynamicQuantization(NodeContext &node, mlir::Value x);

/// One uniform draw in [0, 1) per element of `type` (a float tensor type),
/// from Random.cpp's counter-based generator keyed by the node's `seed`
/// attribute or, without one, by its name: the same draws in every run of
/// an artifact. The draws are f64 for f64 and f32 otherwise, with no more
/// random bits than `type`'s element type holds exactly.
mlir::Value uniformDraws(NodeContext &node, mlir::RankedTensorType type);

/// An i64 constant of `shape` holding `values` (row-major).
mlir::Value i64Tensor(NodeContext &node, llvm::ArrayRef<int64_t> shape,
                      llvm::ArrayRef<int64_t> values);

/// The begin-then-end spatial paddings of a Conv or pooling node, from its
/// `pads` or `auto_pad` attribute, for spatial input sizes `in`.
mlir::FailureOr<llvm::SmallVector<int64_t>>
windowPads(NodeContext &node, llvm::ArrayRef<int64_t> in,
           llvm::ArrayRef<int64_t> kernel, llvm::ArrayRef<int64_t> strides,
           llvm::ArrayRef<int64_t> dilations);

/// The attribute `name` with one entry per spatial dimension, defaulting to
/// all `defaultValue`; emits an error when its length is wrong.
mlir::FailureOr<llvm::SmallVector<int64_t>>
spatialAttr(NodeContext &node, llvm::StringRef name, int64_t spatial,
            int64_t defaultValue);

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_IMPORT_ONNX_IMPORTPATTERNS_H
