//===- ImportPatterns.cpp - NodeContext and the pattern registry ----------===//
//
// The view of one ONNX node that the per-family patterns use, and the
// opset-keyed registry they are registered in.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/GraphImporter.h"
#include "import/onnx/ImportPatterns.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

//===----------------------------------------------------------------------===//
// PatternRegistry
//===----------------------------------------------------------------------===//

void PatternRegistry::add(StringRef opType, int64_t sinceVersion,
                          PatternFn fn) {
  auto &versions = patterns[opType];
  versions.emplace_back(sinceVersion, std::move(fn));
  llvm::sort(versions, [](const auto &a, const auto &b) {
    return a.first < b.first;
  });
}

const PatternFn *PatternRegistry::lookup(StringRef opType,
                                         int64_t opset) const {
  auto it = patterns.find(opType);
  if (it == patterns.end())
    return nullptr;
  const PatternFn *found = nullptr;
  for (const auto &[since, fn] : it->second)
    if (since <= opset)
      found = &fn;
  return found;
}

int64_t PatternRegistry::firstVersion(StringRef opType) const {
  auto it = patterns.find(opType);
  return it == patterns.end() ? 0 : it->second.front().first;
}

const PatternRegistry &onnx_import::getPatternRegistry() {
  static const PatternRegistry registry = [] {
    PatternRegistry r;
    registerConstantPatterns(r);
    registerElementwisePatterns(r);
    registerMatmulPatterns(r);
    registerConvPatterns(r);
    registerPoolingPatterns(r);
    registerReductionPatterns(r);
    registerNormalizationPatterns(r);
    registerDataMovementPatterns(r);
    registerLossPatterns(r);
    registerControlFlowPatterns(r);
    registerQuantizationPatterns(r);
    registerQLinearPatterns(r);
    registerRecurrentPatterns(r);
    registerResizePatterns(r);
    registerSequencePatterns(r);
    registerSpectralPatterns(r);
    registerLinearAlgebraPatterns(r);
    registerTextPatterns(r);
    registerRandomPatterns(r);
    registerSamplingPatterns(r);
    registerDataDependentPatterns(r);
    registerUniquePatterns(r);
    registerNonMaxSuppressionPatterns(r);
    return r;
  }();
  return registry;
}

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

NodeContext::NodeContext(GraphImporter &graph, const onnx::NodeProto &node,
                         int64_t opset, Location loc, OpBuilder &builder)
    : graph(graph), node(node), opsetVersion(opset), location(loc),
      b(builder) {}

StringRef NodeContext::opType() const { return node.op_type(); }
StringRef NodeContext::name() const { return node.name(); }
unsigned NodeContext::numInputs() const { return node.input_size(); }
unsigned NodeContext::numOutputs() const { return node.output_size(); }

bool NodeContext::hasInput(unsigned i) const {
  return i < (unsigned)node.input_size() && !node.input(i).empty();
}

bool NodeContext::hasOutput(unsigned i) const {
  return i < (unsigned)node.output_size() && !node.output(i).empty();
}

Value NodeContext::input(unsigned i) {
  return hasInput(i) ? graph.lookup(node.input(i)) : Value();
}

RankedTensorType NodeContext::inputType(unsigned i) {
  Value v = input(i);
  return v ? mlir::cast<RankedTensorType>(v.getType()) : nullptr;
}

DenseElementsAttr NodeContext::constantInput(unsigned i) {
  Value v = input(i);
  DenseElementsAttr attr;
  if (v && matchPattern(v, m_Constant(&attr)))
    return attr;
  return nullptr;
}

/// The graph inputs (ONNX names) `value` is computed from, walking its
/// defining ops back to @main's arguments.
static SmallVector<std::string> graphInputsOf(Value value) {
  SmallVector<std::string> names;
  SmallVector<Value> work = {value};
  llvm::DenseSet<Value> seen;
  while (!work.empty() && names.size() < 4) {
    Value v = work.pop_back_val();
    if (!v || !seen.insert(v).second)
      continue;
    if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
      if (auto func = llvm::dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
        if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kOnnxNameAttr))
          names.push_back(name.str());
      continue;
    }
    for (Value operand : v.getDefiningOp()->getOperands())
      work.push_back(operand);
  }
  return names;
}

void NodeContext::notConstant(unsigned i, StringRef what, StringRef kind, StringRef reason) {
  InFlightDiagnostic diag = emitError();
  diag << "input " << i << " ('" << what << "') must be " << kind
       << " known at compile time";
  if (!reason.empty())
    diag << " (" << reason << ")";
  Value v = input(i);
  SmallVector<std::string> from = v ? graphInputsOf(v) : SmallVector<std::string>();
  if (from.empty())
    return;
  if (llvm::isa<BlockArgument>(v)) {
    diag << "; it is graph input '" << from.front() << "': pin it with --input-value="
         << from.front() << "=VALUES";
    return;
  }
  diag << "; it is computed from graph input";
  if (from.size() > 1)
    diag << "s";
  for (auto [n, name] : llvm::enumerate(from))
    diag << (n ? ", '" : " '") << name << "'";
  diag << ": pin " << (from.size() > 1 ? "them" : "it") << " with --input-value=NAME=VALUES"
       << " (or its shape with --input-shape, when only the shape is read)";
}

FailureOr<SmallVector<int64_t>> NodeContext::constantInts(unsigned i,
                                                         StringRef what) {
  DenseElementsAttr attr = constantInput(i);
  if (!attr || !isa<IntegerType>(attr.getElementType())) {
    notConstant(i, what, "an integer constant");
    return failure();
  }
  SmallVector<int64_t> result;
  for (const APInt &v : attr.getValues<APInt>())
    result.push_back(v.getSExtValue());
  return result;
}

FailureOr<SmallVector<double>> NodeContext::constantFloats(unsigned i,
                                                          StringRef what) {
  DenseElementsAttr attr = constantInput(i);
  SmallVector<double> result;
  if (attr && isa<FloatType>(attr.getElementType())) {
    for (const APFloat &v : attr.getValues<APFloat>())
      result.push_back(v.convertToDouble());
    return result;
  }
  if (attr && isa<IntegerType>(attr.getElementType())) {
    for (const APInt &v : attr.getValues<APInt>())
      result.push_back((double)v.getSExtValue());
    return result;
  }
  notConstant(i, what, "a constant");
  return failure();
}

static const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                            StringRef name) {
  for (const auto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

bool NodeContext::hasAttr(StringRef name) const {
  return findAttr(node, name) != nullptr;
}

int64_t NodeContext::intAttr(StringRef name, int64_t defaultValue) const {
  const auto *attr = findAttr(node, name);
  return attr ? attr->i() : defaultValue;
}

double NodeContext::floatAttr(StringRef name, double defaultValue) const {
  const auto *attr = findAttr(node, name);
  return attr ? attr->f() : defaultValue;
}

std::string NodeContext::stringAttr(StringRef name,
                                    StringRef defaultValue) const {
  const auto *attr = findAttr(node, name);
  return attr ? attr->s() : defaultValue.str();
}

SmallVector<int64_t> NodeContext::intsAttr(StringRef name) const {
  const auto *attr = findAttr(node, name);
  if (!attr)
    return {};
  return SmallVector<int64_t>(attr->ints().begin(), attr->ints().end());
}

SmallVector<double> NodeContext::floatsAttr(StringRef name) const {
  const auto *attr = findAttr(node, name);
  if (!attr)
    return {};
  return SmallVector<double>(attr->floats().begin(), attr->floats().end());
}

SmallVector<std::string> NodeContext::stringsAttr(StringRef name) const {
  const auto *attr = findAttr(node, name);
  if (!attr)
    return {};
  return SmallVector<std::string>(attr->strings().begin(),
                                  attr->strings().end());
}

ElementsAttr NodeContext::tensorAttr(StringRef name) {
  const auto *attr = findAttr(node, name);
  if (!attr || !attr->has_t())
    return nullptr;
  FailureOr<ElementsAttr> converted = graph.convertTensor(
      attr->t(), "attribute '" + name.str() + "' of " +
                     GraphImporter::describeNode(node));
  return succeeded(converted) ? *converted : nullptr;
}

const onnx::GraphProto *NodeContext::graphAttr(StringRef name) {
  const auto *attr = findAttr(node, name);
  if (!attr || !attr->has_g()) {
    emitError() << "attribute '" << name << "' (a graph) is missing";
    return nullptr;
  }
  return &attr->g();
}

FailureOr<SmallVector<Value>>
NodeContext::importSubgraph(const onnx::GraphProto &subgraph,
                            ValueRange inputs) {
  // (The importer's builder is this node's: the subgraph's ops are built
  // where this node's are.)
  return graph.importSubgraph(subgraph, inputs,
                              "graph '" + subgraph.name() + "' of " +
                                  GraphImporter::describeNode(node));
}

FailureOr<SmallVector<Value>>
NodeContext::outlineSubgraph(const onnx::GraphProto &subgraph, TypeRange inputTypes,
                             StringRef role, func::FuncOp &func, unsigned hiddenInputs) {
  std::string prefix = (opType().lower() + "_" + role).str();
  return graph.outlineSubgraph(subgraph, inputTypes,
                               "graph '" + subgraph.name() + "' of " +
                                   GraphImporter::describeNode(node),
                               prefix, func, hiddenInputs);
}

SmallVector<Value> NodeContext::finishOutlined(func::FuncOp func, ValueRange results) {
  return graph.finishOutlined(func, results);
}

ImportCheckpoint NodeContext::checkpoint() {
  ImportCheckpoint c;
  c.block = b.getInsertionBlock();
  Block::iterator point = b.getInsertionPoint();
  c.before = point == c.block->begin() ? nullptr : &*std::prev(point);
  c.next = point == c.block->end() ? nullptr : &*point;
  c.lastFunction = &c.block->getParentOp()->getParentOfType<ModuleOp>().getBody()->back();
  c.values = graph.values;
  return c;
}

void NodeContext::rollback(const ImportCheckpoint &c) {
  // Newest first: what an op uses was built before it.
  auto erase = [](Block *in, Operation *after, Operation *end) {
    while (true) {
      Operation *op = end ? end->getPrevNode() : (in->empty() ? nullptr : &in->back());
      if (!op || op == after)
        return;
      op->dropAllUses();
      op->erase();
    }
  };
  erase(c.block, c.before, c.next);
  erase(c.lastFunction->getBlock(), c.lastFunction, nullptr);
  // Initializers materialized at the block's start stay (unused) but are
  // no longer mapped.
  graph.values = c.values;
  b.setInsertionPoint(c.block, c.next ? Block::iterator(c.next) : c.block->end());
}

FailureOr<Type> NodeContext::dataType(int64_t dataType, StringRef what) {
  return graph.convertElementType(
      dataType, (what + " of " + GraphImporter::describeNode(node)).str());
}

void NodeContext::setOutput(unsigned i, Value value) {
  if (!hasOutput(i))
    return;
  // A tensor without elements is known: an empty constant, so that no
  // kernel is ever built to compute nothing.
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (type && type.hasStaticShape() && type.getNumElements() == 0 &&
      !value.getDefiningOp<ConstantOp>())
    value = ConstantOp::create(b, location,
                               DenseElementsAttr::get(type, ArrayRef<Attribute>()));
  graph.define(node.output(i), value);
}

FailureOr<SmallVector<Value>>
NodeContext::importAs(StringRef opType, ArrayRef<Value> inputs, unsigned numResults,
                      ArrayRef<StringRef> dropAttrs, std::optional<int64_t> opset) {
  int64_t version = opset.value_or(opsetVersion);
  const PatternFn *pattern = getPatternRegistry().lookup(opType, version);
  if (!pattern) {
    emitError() << "Kiln has no " << opType << " (opset " << version << ") to import it as";
    return failure();
  }
  // A node of its own, with names no ONNX graph can use (they start with a
  // NUL) bound to the given values for as long as it is imported.
  onnx::NodeProto proxy;
  proxy.set_op_type(opType.str());
  proxy.set_name(GraphImporter::nodeName(node));
  for (const onnx::AttributeProto &attr : node.attribute())
    if (!llvm::is_contained(dropAttrs, attr.name()))
      *proxy.add_attribute() = attr;
  std::string prefix = std::string(1, '\0') + proxy.name() + "/" + opType.str() + "/";
  SmallVector<std::string> bound;
  for (auto [i, value] : llvm::enumerate(inputs)) {
    std::string name;
    if (value) {
      name = prefix + "in" + std::to_string(i);
      graph.define(name, value);
      bound.push_back(name);
    }
    proxy.add_input(name);
  }
  for (unsigned i = 0; i < numResults; ++i) {
    proxy.add_output(prefix + "out" + std::to_string(i));
    bound.push_back(proxy.output(i));
  }
  llvm::scope_exit forget([&] {
    for (const std::string &name : bound)
      graph.values.erase(name);
  });
  NodeContext inner(graph, proxy, version, location, b);
  inner.outer = this;
  if (failed((*pattern)(inner)) || graph.failedConversion)
    return failure();
  SmallVector<Value> results;
  for (unsigned i = 0; i < numResults; ++i) {
    Value result = graph.values.lookup(proxy.output(i));
    if (!result) {
      emitError() << "its " << opType << " produced no result " << i;
      return failure();
    }
    results.push_back(result);
  }
  return results;
}

Value NodeContext::inferenceFailed(StringRef opName, ValueRange operands, StringRef why) {
  if (!graph.failedConversion && !opName.empty()) {
    InFlightDiagnostic diag = emitError();
    if (!why.empty()) {
      diag << why;
    } else {
      diag << "its operands (";
      llvm::interleaveComma(operands.getTypes(), diag);
      diag << ") are not valid for " << opName;
    }
    graph.failedConversion = true;
  }
  // A zero of the first tensor operand's type (or a scalar f32) keeps the
  // rest of the pattern well-typed; the module is discarded.
  RankedTensorType type = RankedTensorType::get({}, b.getF32Type());
  for (Value operand : operands)
    if (auto tensor = llvm::dyn_cast<RankedTensorType>(operand.getType());
        tensor && tensor.hasStaticShape() && tensor.getElementType().isIntOrFloat()) {
      type = tensor;
      break;
    }
  return ConstantOp::create(b, location, llvm::cast<ElementsAttr>(b.getZeroAttr(type)));
}

bool NodeContext::withinSizeLimit(TypeRange types) {
  for (Type type : types) {
    auto tensor = llvm::dyn_cast<RankedTensorType>(type);
    if (!tensor || isWithinSizeLimit(tensor.getShape()))
      continue;
    if (!graph.failedConversion) {
      emitError() << "its result would be " << tensor << ", more than the "
                  << kMaxTensorElements << " elements Kiln supports";
      graph.failedConversion = true;
    }
    return false;
  }
  return true;
}

Value NodeContext::buildAndFold(const OperationState &state) {
  Operation *op = b.create(state);
  SmallVector<Value, 1> folded;
  if (succeeded(b.tryFold(op, folded)) && !folded.empty()) {
    op->erase();
    return folded.front();
  }
  return checked(op->getResult(0));
}

Value NodeContext::checked(Value result) {
  Operation *op = result ? result.getDefiningOp() : nullptr;
  if (!op || isa<ConstantOp>(op) || graph.failedConversion)
    return result;
  if (!withinSizeLimit(op->getResultTypes())) {
    SmallVector<Value> operands(op->getOperands());
    op->erase();
    return inferenceFailed("", operands);
  }
  std::string message;
  {
    ScopedDiagnosticHandler capture(b.getContext(), [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    if (succeeded(mlir::verify(op, /*verifyRecursively=*/false)))
      return result;
  }
  // The op's own words name the kiln op; say which node and inputs.
  SmallVector<Value> operands(op->getOperands());
  emitError() << "cannot be imported with these inputs (" << message << ")";
  graph.failedConversion = true;
  op->erase();
  return inferenceFailed("", operands);
}

InFlightDiagnostic NodeContext::emitError() {
  if (outer)
    return outer->emitError() << "as " << node.op_type() << ": ";
  return mlir::emitError(location)
         << node.op_type() << " (opset " << opsetVersion << ") at node '"
         << GraphImporter::nodeName(node) << "': ";
}

FailureOr<int64_t> NodeContext::normalizeAxis(int64_t axis, int64_t rank) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank) {
    emitError() << "axis " << axis << " is out of range for rank " << rank;
    return failure();
  }
  return normalized;
}

Value NodeContext::splat(RankedTensorType type, double value) {
  Type element = type.getElementType();
  Attribute scalarAttr;
  if (isa<FloatType>(element))
    scalarAttr = b.getFloatAttr(element, value);
  else if (element.isInteger(1))
    scalarAttr = b.getBoolAttr(value != 0);
  else
    scalarAttr = b.getIntegerAttr(element, (int64_t)value);
  return ConstantOp::create(b, location,
                            DenseElementsAttr::get(type, scalarAttr));
}

Value NodeContext::scalar(Type elementType, double value) {
  return splat(RankedTensorType::get({}, elementType), value);
}

Value NodeContext::reshape(Value value, ArrayRef<int64_t> shape) {
  auto type = mlir::cast<RankedTensorType>(value.getType());
  return create<ReshapeOp>(RankedTensorType::get(shape, type.getElementType()),
                           value);
}

Value NodeContext::cast(Value value, Type elementType) {
  auto type = mlir::cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  return create<CastOp>(RankedTensorType::get(type.getShape(), elementType),
                        value);
}

Value onnx_import::i64Tensor(NodeContext &node, ArrayRef<int64_t> shape,
                             ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, node.builder().getI64Type());
  return ConstantOp::create(node.builder(), node.loc(),
                            DenseElementsAttr::get(type, values));
}
