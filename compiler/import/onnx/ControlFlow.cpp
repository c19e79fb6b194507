//===- ControlFlow.cpp - ONNX If, Loop and Scan -> kiln -------------------===//
//
// Kiln compiles a static program, so control flow is resolved at import:
// If imports the branch its condition selects (the condition must be a
// constant: computed from shapes, which fold, or a graph input pinned with
// --input-value), and Loop and Scan are unrolled, their body imported once per
// iteration with the loop-carried values of the one before. A Loop runs
// while its trip count and condition, both constants after each iteration,
// say so; a Scan runs over the static length of its scanned axis (opset 8's
// batched Scan once per batch element).
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/Matchers.h"

#include <limits>
#include <optional>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// Unrolling imports the body once per iteration: beyond this many the
/// model is refused rather than compiled into an enormous program.
static constexpr int64_t kMaxUnrolledIterations = 1024;

/// The single boolean `value` holds when it is a constant, or none.
static std::optional<bool> constantBool(Value value) {
  DenseElementsAttr attr;
  if (!value || !matchPattern(value, m_Constant(&attr)) ||
      attr.getNumElements() != 1)
    return std::nullopt;
  if (attr.getElementType().isInteger(1))
    return *attr.getValues<bool>().begin();
  if (isa<IntegerType>(attr.getElementType()))
    return !(*attr.getValues<APInt>().begin()).isZero();
  return std::nullopt;
}

/// `parts` stacked along a new dimension `axis` (the parts reshaped to a
/// size-1 dimension there, then concatenated).
static Value stack(NodeContext &node, ArrayRef<Value> parts, int64_t axis) {
  SmallVector<Value> expanded;
  for (Value part : parts) {
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(part.getType()).getShape());
    shape.insert(shape.begin() + axis, 1);
    expanded.push_back(node.reshape(part, shape));
  }
  if (expanded.size() == 1)
    return expanded.front();
  return node.create<ConcatOp>(expanded, axis);
}

static LogicalResult convertIf(NodeContext &node) {
  DenseElementsAttr cond = node.constantInput(0);
  if (!cond) {
    node.notConstant(0, "cond", "a boolean constant");
    return failure();
  }
  std::optional<bool> taken = constantBool(node.input(0));
  if (!taken) {
    node.emitError() << "cond must hold one boolean, got " << cond.getType();
    return failure();
  }
  const onnx::GraphProto *branch =
      node.graphAttr(*taken ? "then_branch" : "else_branch");
  if (!branch)
    return failure();
  auto outputs = node.importSubgraph(*branch, {});
  if (failed(outputs))
    return failure();
  if (outputs->size() != node.numOutputs()) {
    node.emitError() << "the " << (*taken ? "then" : "else") << " branch has "
                     << outputs->size() << " outputs for the node's "
                     << node.numOutputs();
    return failure();
  }
  for (auto [i, value] : llvm::enumerate(*outputs))
    node.setOutput(i, value);
  return success();
}

static LogicalResult convertLoop(NodeContext &node) {
  const onnx::GraphProto *body = node.graphAttr("body");
  if (!body)
    return failure();
  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  int64_t tripCount = std::numeric_limits<int64_t>::max();
  if (node.hasInput(0)) {
    auto m = node.constantInts(0, "M");
    if (failed(m))
      return failure();
    if (m->size() != 1) {
      node.emitError() << "M must hold one trip count";
      return failure();
    }
    tripCount = m->front();
  }
  bool running = true;
  if (node.hasInput(1)) {
    if (!node.constantInput(1)) {
      node.notConstant(1, "cond", "a boolean constant");
      return failure();
    }
    std::optional<bool> cond = constantBool(node.input(1));
    if (!cond) {
      node.emitError() << "cond must hold one boolean";
      return failure();
    }
    running = *cond;
  }
  if (!node.hasInput(0) && !node.hasInput(1)) {
    node.emitError() << "a Loop with neither a trip count nor a condition "
                        "never ends";
    return failure();
  }
  SmallVector<Value> carried;
  for (unsigned i = 2; i < node.numInputs(); ++i)
    carried.push_back(node.input(i));
  size_t scanOutputs = 0;
  SmallVector<SmallVector<Value>> scanned;
  for (int64_t iteration = 0; running && iteration < tripCount; ++iteration) {
    if (iteration == kMaxUnrolledIterations) {
      node.emitError() << "the loop runs more than " << kMaxUnrolledIterations
                       << " iterations, which Kiln does not unroll";
      return failure();
    }
    SmallVector<Value> inputs{node.scalar(i64, iteration),
                              node.scalar(i1, 1)};
    inputs.append(carried);
    auto outputs = node.importSubgraph(*body, inputs);
    if (failed(outputs))
      return failure();
    if (outputs->size() < 1 + carried.size()) {
      node.emitError() << "the body has " << outputs->size()
                       << " outputs; expected the condition and "
                       << carried.size() << " loop-carried values";
      return failure();
    }
    std::optional<bool> cond = constantBool(outputs->front());
    if (!cond) {
      node.emitError() << "the body's condition is computed at run time; "
                          "Kiln unrolls loops whose iterations are known at "
                          "compile time";
      return failure();
    }
    running = *cond;
    for (size_t i = 0; i < carried.size(); ++i)
      carried[i] = (*outputs)[1 + i];
    scanOutputs = outputs->size() - 1 - carried.size();
    scanned.resize(scanOutputs);
    for (size_t k = 0; k < scanOutputs; ++k)
      scanned[k].push_back((*outputs)[1 + carried.size() + k]);
  }
  if (node.numOutputs() != carried.size() + scanOutputs &&
      !(scanned.empty() && node.numOutputs() >= carried.size())) {
    node.emitError() << "the node has " << node.numOutputs()
                     << " outputs; the body gives " << carried.size()
                     << " loop-carried values and " << scanOutputs
                     << " scan outputs";
    return failure();
  }
  for (auto [i, value] : llvm::enumerate(carried))
    node.setOutput(i, value);
  for (unsigned k = carried.size(); k < node.numOutputs(); ++k) {
    if (scanned.empty() || scanned[k - carried.size()].empty()) {
      if (node.hasOutput(k)) {
        node.emitError() << "the loop runs no iteration, so its scan output "
                         << k << " has no known shape";
        return failure();
      }
      continue;
    }
    node.setOutput(k, stack(node, scanned[k - carried.size()], 0));
  }
  return success();
}

/// Imports `body` once per step t < `length` of a Scan: its inputs are
/// `carried` (updated to the body's first outputs after every step) and
/// step t of each of `sequences` along its axis (from the end when its
/// direction is 1); the body's other outputs of every step are appended to
/// `scanned`, one list per scan output.
static LogicalResult scanSteps(NodeContext &node, const onnx::GraphProto &body,
                               SmallVectorImpl<Value> &carried,
                               ArrayRef<Value> sequences, ArrayRef<int64_t> axes,
                               ArrayRef<int64_t> directions, int64_t length,
                               SmallVectorImpl<SmallVector<Value>> &scanned) {
  for (int64_t t = 0; t < length; ++t) {
    SmallVector<Value> inputs(carried.begin(), carried.end());
    for (auto [j, sequence] : llvm::enumerate(sequences)) {
      auto type = cast<RankedTensorType>(sequence.getType());
      int64_t step = directions[j] ? length - 1 - t : t;
      SmallVector<int64_t> starts(type.getRank(), 0),
          ends(type.getShape()), steps(type.getRank(), 1);
      starts[axes[j]] = step;
      ends[axes[j]] = step + 1;
      Value slice = node.create<SliceOp>(sequence, starts, ends, steps);
      SmallVector<int64_t> shape(type.getShape());
      shape.erase(shape.begin() + axes[j]);
      inputs.push_back(node.reshape(slice, shape));
    }
    auto outputs = node.importSubgraph(body, inputs);
    if (failed(outputs))
      return failure();
    if (outputs->size() < carried.size()) {
      node.emitError() << "the body has " << outputs->size()
                       << " outputs for " << carried.size() << " states";
      return failure();
    }
    for (size_t i = 0; i < carried.size(); ++i)
      carried[i] = (*outputs)[i];
    scanned.resize(outputs->size() - carried.size());
    for (size_t k = 0; k < scanned.size(); ++k)
      scanned[k].push_back((*outputs)[carried.size() + k]);
  }
  return success();
}

/// Element `b` of `value`'s leading (batch) dimension, without it.
static Value batchElement(NodeContext &node, Value value, int64_t b) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> starts(type.getRank(), 0), ends(type.getShape()),
      steps(type.getRank(), 1);
  starts[0] = b;
  ends[0] = b + 1;
  return node.reshape(node.create<SliceOp>(value, starts, ends, steps),
                      type.getShape().drop_front());
}

/// Scan of opsets 8: the inputs are an optional sequence_lens, the states
/// and the scan inputs, all with a batch dimension 0 and scanned along
/// dimension 1 (`directions` per scan input); every batch element is a scan
/// of its own, and the outputs stack them along dimension 0 again.
static LogicalResult convertScan8(NodeContext &node) {
  const onnx::GraphProto *body = node.graphAttr("body");
  if (!body)
    return failure();
  int64_t scanInputs = node.intAttr("num_scan_inputs", 0);
  int64_t states = (int64_t)node.numInputs() - 1 - scanInputs;
  if (scanInputs < 1 || states < 0) {
    node.emitError() << "num_scan_inputs must be between 1 and the "
                     << node.numInputs() - 1 << " inputs after sequence_lens";
    return failure();
  }
  SmallVector<int64_t> directions = node.intsAttr("directions");
  if (directions.empty())
    directions.assign(scanInputs, 0);
  if ((int64_t)directions.size() != scanInputs) {
    node.emitError() << "directions needs one entry per scan input";
    return failure();
  }
  SmallVector<Value> inputs;
  for (unsigned i = 1; i < node.numInputs(); ++i) {
    inputs.push_back(node.input(i));
    auto type = cast<RankedTensorType>(inputs.back().getType());
    int64_t minRank = i > (unsigned)states ? 2 : 1;
    if (type.getRank() < minRank ||
        type.getDimSize(0) != cast<RankedTensorType>(inputs.front().getType()).getDimSize(0)) {
      node.emitError() << "input " << i << " needs the batch dimension 0 the "
                       << "other inputs have" << (minRank == 2 ? " and a scan dimension 1" : "");
      return failure();
    }
  }
  int64_t batch = cast<RankedTensorType>(inputs.front().getType()).getDimSize(0);
  int64_t length = cast<RankedTensorType>(inputs[states].getType()).getDimSize(1);
  for (int64_t j = 0; j < scanInputs; ++j) {
    if (cast<RankedTensorType>(inputs[states + j].getType()).getDimSize(1) != length) {
      node.emitError() << "scan input " << j << " does not have the "
                       << length << " steps of the first";
      return failure();
    }
  }
  if (node.hasInput(0)) {
    auto lens = node.constantInts(0, "sequence_lens");
    if (failed(lens))
      return failure();
    if (llvm::any_of(*lens, [&](int64_t n) { return n != length; })) {
      node.emitError() << "sequence_lens shorter than the " << length
                       << " steps of the scan inputs are not supported";
      return failure();
    }
  }
  if (length * batch > kMaxUnrolledIterations) {
    node.emitError() << "the scan runs " << length * batch << " iterations, more than "
                     << "the " << kMaxUnrolledIterations << " Kiln unrolls";
    return failure();
  }
  SmallVector<SmallVector<Value>> stateParts(states), scanParts;
  for (int64_t b = 0; b < batch; ++b) {
    SmallVector<Value> carried, sequences;
    for (int64_t i = 0; i < states; ++i)
      carried.push_back(batchElement(node, inputs[i], b));
    for (int64_t j = 0; j < scanInputs; ++j)
      sequences.push_back(batchElement(node, inputs[states + j], b));
    SmallVector<SmallVector<Value>> scanned;
    SmallVector<int64_t> axes(scanInputs, 0);
    if (failed(scanSteps(node, *body, carried, sequences, axes, directions,
                         length, scanned)))
      return failure();
    for (int64_t i = 0; i < states; ++i)
      stateParts[i].push_back(carried[i]);
    scanParts.resize(scanned.size());
    for (auto [k, parts] : llvm::enumerate(scanned))
      scanParts[k].push_back(stack(node, parts, 0));
  }
  if (node.numOutputs() != stateParts.size() + scanParts.size()) {
    node.emitError() << "the node has " << node.numOutputs()
                     << " outputs; the body gives " << stateParts.size()
                     << " states and " << scanParts.size() << " scan outputs";
    return failure();
  }
  for (auto [i, parts] : llvm::enumerate(stateParts))
    node.setOutput(i, stack(node, parts, 0));
  for (auto [k, parts] : llvm::enumerate(scanParts))
    node.setOutput(stateParts.size() + k, stack(node, parts, 0));
  return success();
}

static LogicalResult convertScan(NodeContext &node) {
  const onnx::GraphProto *body = node.graphAttr("body");
  if (!body)
    return failure();
  int64_t scanInputs = node.intAttr("num_scan_inputs", 0);
  int64_t states = (int64_t)node.numInputs() - scanInputs;
  if (scanInputs < 1 || states < 0) {
    node.emitError() << "num_scan_inputs must be between 1 and the "
                     << node.numInputs() << " inputs";
    return failure();
  }
  auto attrList = [&](StringRef name, int64_t count) {
    SmallVector<int64_t> values = node.intsAttr(name);
    if (values.empty())
      values.assign(count, 0);
    return values;
  };
  SmallVector<int64_t> inputAxes = attrList("scan_input_axes", scanInputs);
  SmallVector<int64_t> inputDirections =
      attrList("scan_input_directions", scanInputs);
  if ((int64_t)inputAxes.size() != scanInputs ||
      (int64_t)inputDirections.size() != scanInputs) {
    node.emitError() << "scan_input_axes and scan_input_directions need one "
                        "entry per scan input";
    return failure();
  }
  int64_t length = -1;
  SmallVector<Value> sequences;
  for (int64_t j = 0; j < scanInputs; ++j) {
    Value input = node.input(states + j);
    auto type = cast<RankedTensorType>(input.getType());
    auto axis = node.normalizeAxis(inputAxes[j], type.getRank());
    if (failed(axis))
      return failure();
    inputAxes[j] = *axis;
    int64_t size = type.getShape()[*axis];
    if (length >= 0 && size != length) {
      node.emitError() << "scan input " << j << " has " << size
                       << " steps; the others have " << length;
      return failure();
    }
    length = size;
    sequences.push_back(input);
  }
  if (length > kMaxUnrolledIterations) {
    node.emitError() << "the scan runs " << length << " iterations, more than "
                     << "the " << kMaxUnrolledIterations
                     << " Kiln unrolls";
    return failure();
  }
  SmallVector<Value> carried;
  for (int64_t i = 0; i < states; ++i)
    carried.push_back(node.input(i));
  SmallVector<SmallVector<Value>> scanned;
  if (failed(scanSteps(node, *body, carried, sequences, inputAxes,
                       inputDirections, length, scanned)))
    return failure();
  if (node.numOutputs() != carried.size() + scanned.size()) {
    node.emitError() << "the node has " << node.numOutputs()
                     << " outputs; the body gives " << carried.size()
                     << " states and " << scanned.size() << " scan outputs";
    return failure();
  }
  SmallVector<int64_t> outputAxes = attrList("scan_output_axes", scanned.size());
  SmallVector<int64_t> outputDirections =
      attrList("scan_output_directions", scanned.size());
  if (outputAxes.size() != scanned.size() ||
      outputDirections.size() != scanned.size()) {
    node.emitError() << "scan_output_axes and scan_output_directions need "
                        "one entry per scan output";
    return failure();
  }
  for (auto [i, value] : llvm::enumerate(carried))
    node.setOutput(i, value);
  for (auto [k, parts] : llvm::enumerate(scanned)) {
    int64_t rank = cast<RankedTensorType>(parts.front().getType()).getRank();
    auto axis = node.normalizeAxis(outputAxes[k], rank + 1);
    if (failed(axis))
      return failure();
    if (outputDirections[k])
      std::reverse(parts.begin(), parts.end());
    node.setOutput(carried.size() + k, stack(node, parts, *axis));
  }
  return success();
}

void onnx_import::registerControlFlowPatterns(PatternRegistry &r) {
  r.add("If", 7, convertIf);
  r.add("Loop", 7, convertLoop);
  r.add("Scan", 8, convertScan8);
  r.add("Scan", 9, convertScan);
}
