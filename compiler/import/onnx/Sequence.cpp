//===- Sequence.cpp - ONNX sequences and optionals -> kiln ----------------===//
//
// Sequences and optionals are resolved at import, as control flow is: a
// sequence whose length is known at compile time is the list of its element
// tensors, an optional is its element or nothing (see Aggregate in
// ImportPatterns.h). The sequence ops then only rearrange that list
// (positions must be constants), SplitToSequence slices a tensor into one,
// ConcatFromSequence concatenates (or stacks) one, SequenceMap imports its
// body once per element, and the optional ops ask whether the element is
// there. Graph inputs and outputs that are sequences or optionals are their
// element tensors (see docs/architecture.md, "Sequences and optionals").
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/BuiltinTypes.h"

#include "onnx/onnx_pb.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

static constexpr llvm::StringLiteral kAggregateAttr = "kiln.aggregate";

Value onnx_import::buildAggregate(OpBuilder &b, Location loc,
                                  Aggregate::Kind kind, ValueRange elements) {
  SmallVector<Type> types(elements.getTypes());
  auto cast = UnrealizedConversionCastOp::create(
      b, loc, TypeRange{TupleType::get(b.getContext(), types)}, elements);
  cast->setAttr(kAggregateAttr,
                b.getStringAttr(kind == Aggregate::Kind::Sequence ? "sequence"
                                                                  : "optional"));
  return cast.getResult(0);
}

std::optional<Aggregate> onnx_import::getAggregate(Value value) {
  auto cast = value ? value.getDefiningOp<UnrealizedConversionCastOp>() : nullptr;
  auto kind = cast ? cast->getAttrOfType<StringAttr>(kAggregateAttr) : nullptr;
  if (!kind)
    return std::nullopt;
  Aggregate aggregate{kind.getValue() == "sequence" ? Aggregate::Kind::Sequence
                                                    : Aggregate::Kind::Optional,
                      {}};
  llvm::append_range(aggregate.elements, cast.getInputs());
  return aggregate;
}

/// Input `i` as a sequence's elements, or failure after a diagnostic.
static FailureOr<SmallVector<Value>> sequenceInput(NodeContext &node, unsigned i,
                                                   StringRef what) {
  std::optional<Aggregate> aggregate = getAggregate(node.input(i));
  if (!aggregate || aggregate->kind != Aggregate::Kind::Sequence) {
    node.emitError() << "input " << i << " ('" << what << "') must be a sequence";
    return failure();
  }
  return aggregate->elements;
}

/// A position into a sequence of `length` elements: constant input `i`
/// (`fallback` when absent), negative ones counting from the end, within
/// [0, length) or, when `end` is allowed, [0, length].
static FailureOr<int64_t> position(NodeContext &node, unsigned i, int64_t length,
                                   int64_t fallback, bool end) {
  int64_t p = fallback;
  if (node.hasInput(i)) {
    auto values = node.constantInts(i, "position");
    if (failed(values))
      return failure();
    if (values->size() != 1) {
      node.emitError() << "position must hold one integer";
      return failure();
    }
    p = values->front();
  }
  int64_t normalized = p < 0 ? p + length : p;
  if (normalized < 0 || normalized > length || (!end && normalized == length)) {
    node.emitError() << "position " << p << " is out of range for a sequence of "
                     << length << " element" << (length == 1 ? "" : "s");
    return failure();
  }
  return normalized;
}

static Value sequence(NodeContext &node, ValueRange elements) {
  return buildAggregate(node.builder(), node.loc(), Aggregate::Kind::Sequence,
                        elements);
}

static LogicalResult convertSequenceEmpty(NodeContext &node) {
  node.setOutput(0, sequence(node, {}));
  return success();
}

static LogicalResult convertSequenceConstruct(NodeContext &node) {
  SmallVector<Value> elements;
  for (unsigned i = 0; i < node.numInputs(); ++i)
    elements.push_back(node.input(i));
  node.setOutput(0, sequence(node, elements));
  return success();
}

static LogicalResult convertSequenceInsert(NodeContext &node) {
  auto elements = sequenceInput(node, 0, "input_sequence");
  if (failed(elements))
    return failure();
  auto at = position(node, 2, elements->size(), elements->size(), /*end=*/true);
  if (failed(at))
    return failure();
  elements->insert(elements->begin() + *at, node.input(1));
  node.setOutput(0, sequence(node, *elements));
  return success();
}

static LogicalResult convertSequenceErase(NodeContext &node) {
  auto elements = sequenceInput(node, 0, "input_sequence");
  if (failed(elements))
    return failure();
  if (elements->empty()) {
    node.emitError() << "erasing from an empty sequence";
    return failure();
  }
  auto at = position(node, 1, elements->size(), -1, /*end=*/false);
  if (failed(at))
    return failure();
  elements->erase(elements->begin() + *at);
  node.setOutput(0, sequence(node, *elements));
  return success();
}

static LogicalResult convertSequenceAt(NodeContext &node) {
  auto elements = sequenceInput(node, 0, "input_sequence");
  if (failed(elements))
    return failure();
  auto at = position(node, 1, elements->size(), 0, /*end=*/false);
  if (failed(at))
    return failure();
  node.setOutput(0, (*elements)[*at]);
  return success();
}

static LogicalResult convertSequenceLength(NodeContext &node) {
  auto elements = sequenceInput(node, 0, "input_sequence");
  if (failed(elements))
    return failure();
  node.setOutput(0, node.scalar(node.builder().getI64Type(), elements->size()));
  return success();
}

static LogicalResult convertSplitToSequence(NodeContext &node) {
  Value input = node.input(0);
  auto type = node.inputType(0);
  auto axis = node.normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (failed(axis))
    return failure();
  int64_t dim = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (!node.hasInput(1)) {
    // Parts of one, without the axis unless keepdims.
    sizes.assign(dim, 1);
    squeeze = node.intAttr("keepdims", 1) == 0;
  } else {
    auto split = node.constantInts(1, "split");
    if (failed(split))
      return failure();
    if (node.inputType(1).getRank() == 0) {
      int64_t chunk = split->front();
      if (chunk <= 0) {
        node.emitError() << "split " << chunk << " must be positive";
        return failure();
      }
      for (int64_t left = dim; left > 0; left -= chunk)
        sizes.push_back(std::min(chunk, left));
    } else {
      sizes = *split;
      if (llvm::any_of(sizes, [](int64_t s) { return s < 0; }) ||
          std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != dim) {
        node.emitError() << "split sizes do not add up to dimension " << *axis
                         << " of size " << dim;
        return failure();
      }
    }
  }
  SmallVector<Value> parts;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    SmallVector<int64_t> starts(type.getRank(), 0), ends(type.getShape()),
        steps(type.getRank(), 1);
    starts[*axis] = offset;
    ends[*axis] = offset + size;
    offset += size;
    Value part = node.create<SliceOp>(input, starts, ends, steps);
    if (squeeze) {
      SmallVector<int64_t> shape(type.getShape());
      shape.erase(shape.begin() + *axis);
      part = node.reshape(part, shape);
    }
    parts.push_back(part);
  }
  node.setOutput(0, sequence(node, parts));
  return success();
}

static LogicalResult convertConcatFromSequence(NodeContext &node) {
  auto elements = sequenceInput(node, 0, "input_sequence");
  if (failed(elements))
    return failure();
  if (elements->empty()) {
    node.emitError() << "concatenating an empty sequence";
    return failure();
  }
  auto first = cast<RankedTensorType>(elements->front().getType());
  bool newAxis = node.intAttr("new_axis", 0) != 0;
  auto axis = node.normalizeAxis(node.intAttr("axis", 0),
                                 first.getRank() + (newAxis ? 1 : 0));
  if (failed(axis))
    return failure();
  SmallVector<Value> parts;
  for (auto [i, element] : llvm::enumerate(*elements)) {
    // (The axis was normalized against the first element's rank.)
    if (cast<RankedTensorType>(element.getType()).getRank() != first.getRank()) {
      node.emitError() << "sequence element " << i << " has rank "
                       << cast<RankedTensorType>(element.getType()).getRank()
                       << ", element 0 has rank " << first.getRank();
      return failure();
    }
    if (!newAxis) {
      parts.push_back(element);
      continue;
    }
    SmallVector<int64_t> shape(cast<RankedTensorType>(element.getType()).getShape());
    shape.insert(shape.begin() + *axis, 1);
    parts.push_back(node.reshape(element, shape));
  }
  node.setOutput(0, parts.size() == 1 ? parts.front()
                                      : node.create<ConcatOp>(parts, *axis));
  return success();
}

static LogicalResult convertSequenceMap(NodeContext &node) {
  const onnx::GraphProto *body = node.graphAttr("body");
  if (!body)
    return failure();
  auto elements = sequenceInput(node, 0, "input_sequence");
  if (failed(elements))
    return failure();
  size_t length = elements->size();
  // Additional inputs: sequences of the same length give one element per
  // iteration, tensors the same value to every iteration.
  SmallVector<std::optional<SmallVector<Value>>> extra;
  for (unsigned i = 1; i < node.numInputs(); ++i) {
    std::optional<Aggregate> aggregate = getAggregate(node.input(i));
    if (!aggregate) {
      extra.push_back(std::nullopt);
      continue;
    }
    if (aggregate->kind != Aggregate::Kind::Sequence ||
        aggregate->elements.size() != length) {
      node.emitError() << "additional input " << i << " must be a tensor or a "
                       << "sequence of " << length << " elements like input 0";
      return failure();
    }
    extra.push_back(aggregate->elements);
  }
  SmallVector<SmallVector<Value>> outputs(node.numOutputs());
  for (size_t k = 0; k < length; ++k) {
    SmallVector<Value> inputs = {(*elements)[k]};
    for (auto [i, seq] : llvm::enumerate(extra))
      inputs.push_back(seq ? (*seq)[k] : node.input(i + 1));
    auto results = node.importSubgraph(*body, inputs);
    if (failed(results))
      return failure();
    if (results->size() != outputs.size()) {
      node.emitError() << "the body has " << results->size()
                       << " outputs for the node's " << outputs.size();
      return failure();
    }
    for (auto [out, value] : llvm::zip(outputs, *results))
      out.push_back(value);
  }
  for (auto [i, out] : llvm::enumerate(outputs))
    node.setOutput(i, sequence(node, out));
  return success();
}

static LogicalResult convertOptional(NodeContext &node) {
  SmallVector<Value> element;
  if (node.numInputs() > 0 && node.hasInput(0))
    element.push_back(node.input(0));
  node.setOutput(0, buildAggregate(node.builder(), node.loc(),
                                   Aggregate::Kind::Optional, element));
  return success();
}

static LogicalResult convertOptionalHasElement(NodeContext &node) {
  bool has = false;
  if (node.numInputs() > 0 && node.hasInput(0)) {
    std::optional<Aggregate> aggregate = getAggregate(node.input(0));
    // From opset 18 a tensor or a sequence is an optional that has one.
    has = !aggregate || aggregate->kind == Aggregate::Kind::Sequence ||
          !aggregate->elements.empty();
  }
  node.setOutput(0, node.scalar(node.builder().getI1Type(), has));
  return success();
}

static LogicalResult convertOptionalGetElement(NodeContext &node) {
  Value input = node.input(0);
  std::optional<Aggregate> aggregate = getAggregate(input);
  if (!aggregate || aggregate->kind == Aggregate::Kind::Sequence) {
    node.setOutput(0, input); // opset 18: a tensor or sequence is its element
    return success();
  }
  if (aggregate->elements.empty()) {
    node.emitError() << "the optional has no element";
    return failure();
  }
  node.setOutput(0, aggregate->elements.front());
  return success();
}

void onnx_import::registerSequencePatterns(PatternRegistry &r) {
  r.add("SequenceEmpty", 11, convertSequenceEmpty);
  r.add("SequenceConstruct", 11, convertSequenceConstruct);
  r.add("SequenceInsert", 11, convertSequenceInsert);
  r.add("SequenceErase", 11, convertSequenceErase);
  r.add("SequenceAt", 11, convertSequenceAt);
  r.add("SequenceLength", 11, convertSequenceLength);
  r.add("SplitToSequence", 11, convertSplitToSequence);
  r.add("ConcatFromSequence", 11, convertConcatFromSequence);
  r.add("SequenceMap", 17, convertSequenceMap);
  r.add("Optional", 15, convertOptional);
  r.add("OptionalHasElement", 15, convertOptionalHasElement);
  r.add("OptionalGetElement", 15, convertOptionalGetElement);
}
