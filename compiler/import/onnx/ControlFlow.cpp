//===- ControlFlow.cpp - ONNX If, Loop and Scan -> kiln -------------------===//
//
// Control flow is resolved at import wherever it can be: an If whose
// condition is a constant (computed from shapes, which fold, or a graph
// input pinned with --input-value) imports the branch it selects, and Loop
// and Scan are unrolled, their body imported once per iteration with the
// loop-carried values of the one before, while the Loop's trip count and
// condition fold after each iteration; a Scan runs over the static length of
// its scanned axis (opset 8's batched Scan once per batch element).
//
// Otherwise the If or Loop runs at run time: its branches or body become
// private functions of the module (their captured outer values as extra
// arguments), compiled like @main into programs of their own, and a kiln.if
// or kiln.loop runs them (see docs/architecture.md).
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/raw_ostream.h"

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

/// Whether `value` can enter or leave control flow decided at run time: a
/// tensor of static shape, not a sequence, an optional or a value whose size
/// the data decides.
static bool isPlainTensor(Value value) {
  return !getAggregate(value) && !getBounded(value);
}

static bool isOneElement(Type type, unsigned bits) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getNumElements() == 1 && tensor.getElementType().isInteger(bits);
}

/// Runs `attempt`, which builds control flow that runs at run time, with
/// its diagnostics held back. When it fails, the error says that input
/// `input` ('what') would have to be a constant instead, with the reason,
/// so that the --input-value that makes the node fold is named (unless the
/// reason names one itself, or the input is a constant already).
static LogicalResult atRunTimeOrPin(NodeContext &node, unsigned input, StringRef what,
                                    StringRef kind, llvm::function_ref<LogicalResult()> attempt) {
  std::string first;
  LogicalResult result = failure();
  {
    ScopedDiagnosticHandler hold(node.context(), [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && first.empty())
        first = diag.str();
      return success();
    });
    result = attempt();
  }
  if (succeeded(result) || first.empty())
    return result;
  if (StringRef(first).contains("--input-value") || !node.hasInput(input) ||
      node.constantInput(input)) {
    mlir::emitError(node.loc()) << first; // as it was
    return failure();
  }
  // This node's own messages lose their prefix inside the new one.
  StringRef name = node.name();
  if (auto loc = dyn_cast<NameLoc>(node.loc()))
    name = loc.getName().getValue();
  std::string own = ("at node '" + name + "': ").str();
  size_t at = first.find(own);
  if (StringRef(first).starts_with(node.opType()) && at != std::string::npos)
    first = first.substr(at + own.size());
  node.notConstant(input, what, kind, "it cannot run at run time: " + first);
  return failure();
}

/// An If whose condition is known only at run time: each branch becomes a
/// private function taking the outer values it captures, and a kiln.if
/// runs one of them.
static LogicalResult convertRuntimeIf(NodeContext &node) {
  Value cond = node.input(0);
  if (!isOneElement(cond.getType(), 1)) {
    node.emitError() << "cond must hold one boolean, got " << cond.getType();
    return failure();
  }
  OpBuilder &b = node.builder();
  struct Branch {
    const char *role;
    func::FuncOp func;
    SmallVector<Value> results;
  };
  Branch branches[2] = {{"then", nullptr, {}}, {"else", nullptr, {}}};
  auto fail = [&]() {
    for (Branch &branch : branches)
      if (branch.func)
        branch.func.erase();
    return failure();
  };
  // Why the branches cannot run at run time: then cond must fold.
  auto needsConstant = [&](const std::string &reason) {
    node.notConstant(0, "cond", "a boolean constant", reason);
    return fail();
  };
  for (Branch &branch : branches) {
    const onnx::GraphProto *graph = node.graphAttr(std::string(branch.role) + "_branch");
    if (!graph)
      return fail();
    OpBuilder::InsertionGuard guard(b);
    auto outputs = node.outlineSubgraph(*graph, {}, branch.role, branch.func);
    if (failed(outputs))
      return fail();
    if (outputs->size() != node.numOutputs()) {
      node.emitError() << "the " << branch.role << " branch has " << outputs->size()
                       << " outputs for the node's " << node.numOutputs();
      return fail();
    }
    for (auto [k, value] : llvm::enumerate(*outputs))
      if (!isPlainTensor(value))
        return needsConstant("output " + std::to_string(k) + " of the " + branch.role +
                             " branch is a sequence, an optional or of a size the data "
                             "decides, which only a branch chosen at compile time can give");
    branch.results = std::move(*outputs);
  }
  for (unsigned k = 0; k < node.numOutputs(); ++k) {
    Type a = branches[0].results[k].getType(), c = branches[1].results[k].getType();
    if (a != c) {
      std::string types;
      llvm::raw_string_ostream os(types);
      os << a << " in the then branch and " << c << " in the else branch";
      return needsConstant("output " + std::to_string(k) + " is " + types +
                           ", and Kiln gives every value one type");
    }
  }
  SmallVector<Value> captures[2];
  for (auto [i, branch] : llvm::enumerate(branches)) {
    OpBuilder::InsertionGuard guard(b);
    captures[i] = node.finishOutlined(branch.func, branch.results);
  }
  auto ifOp = IfOp::create(b, node.loc(), TypeRange(ValueRange(branches[0].results)), cond,
                           branches[0].func.getSymName(), branches[1].func.getSymName(),
                           captures[0], captures[1], /*operand_bindings=*/nullptr,
                           /*result_bindings=*/nullptr, /*scratch=*/nullptr);
  for (auto [i, value] : llvm::enumerate(ifOp.getResults()))
    node.setOutput(i, value);
  return success();
}

static LogicalResult convertIf(NodeContext &node) {
  DenseElementsAttr cond = node.constantInput(0);
  if (!cond)
    return atRunTimeOrPin(node, 0, "cond", "a boolean constant",
                          [&] { return convertRuntimeIf(node); });
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

namespace {
/// How unrolling a Loop ended.
enum class Unrolled { Done, Failed, AtRunTime };
} // namespace

/// Unrolls a Loop whose trip count and initial condition are constants:
/// the body is imported once per iteration while its condition folds to
/// true. AtRunTime (nothing reported) when the condition does not fold or
/// the loop runs more than kMaxUnrolledIterations: it must run at run time.
static Unrolled unrollLoop(NodeContext &node, const onnx::GraphProto &body,
                           int64_t tripCount, bool running) {
  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  SmallVector<Value> carried;
  for (unsigned i = 2; i < node.numInputs(); ++i)
    carried.push_back(node.input(i));
  size_t scanOutputs = 0;
  SmallVector<SmallVector<Value>> scanned;
  for (int64_t iteration = 0; running && iteration < tripCount; ++iteration) {
    if (iteration == kMaxUnrolledIterations)
      return Unrolled::AtRunTime;
    SmallVector<Value> inputs{node.scalar(i64, iteration),
                              node.scalar(i1, 1)};
    inputs.append(carried);
    auto outputs = node.importSubgraph(body, inputs);
    if (failed(outputs))
      return Unrolled::Failed;
    if (outputs->size() < 1 + carried.size()) {
      node.emitError() << "the body has " << outputs->size()
                       << " outputs; expected the condition and "
                       << carried.size() << " loop-carried values";
      return Unrolled::Failed;
    }
    std::optional<bool> cond = constantBool(outputs->front());
    if (!cond)
      return Unrolled::AtRunTime;
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
    return Unrolled::Failed;
  }
  for (auto [i, value] : llvm::enumerate(carried))
    node.setOutput(i, value);
  for (unsigned k = carried.size(); k < node.numOutputs(); ++k) {
    if (scanned.empty() || scanned[k - carried.size()].empty()) {
      if (node.hasOutput(k)) {
        node.emitError() << "the loop runs no iteration, so its scan output "
                         << k << " has no known shape";
        return Unrolled::Failed;
      }
      continue;
    }
    node.setOutput(k, stack(node, scanned[k - carried.size()], 0));
  }
  return Unrolled::Done;
}

/// Body output `k` of a loop run at run time as the value it returns: a
/// plain tensor of `wanted`'s type (reshaped when only the shape differs,
/// [1] for [] say) when `wanted` is given. Null after an error saying that
/// `role` ("the loop-carried value") must keep its type.
static Value bodyResult(NodeContext &node, Value value, size_t k, Type wanted,
                        StringRef role) {
  if (!isPlainTensor(value)) {
    node.emitError() << "body output " << k
                     << " is a sequence, an optional or of a size the data decides; Kiln "
                        "runs a loop over those only when it can unroll it";
    return nullptr;
  }
  auto type = cast<RankedTensorType>(value.getType());
  auto want = dyn_cast_or_null<RankedTensorType>(wanted);
  if (!want || type == want)
    return value;
  if (type.getElementType() != want.getElementType() ||
      type.getNumElements() != want.getNumElements()) {
    node.emitError() << "body output " << k << " is " << type << " where " << role << " is "
                     << want
                     << "; a loop that runs at run time keeps the types of its values (a "
                        "trip count and condition known at compile time would unroll it)";
    return nullptr;
  }
  return node.reshape(value, want.getShape());
}

/// The result types of a kiln.loop: the carried values', then each scanned
/// body result stacked `rows` times along a new leading dimension.
static SmallVector<Type> loopResultTypes(ValueRange carried, ArrayRef<Value> scanned,
                                         int64_t rows) {
  SmallVector<Type> types(carried.getTypes());
  for (Value row : scanned) {
    auto type = cast<RankedTensorType>(row.getType());
    SmallVector<int64_t> shape{rows};
    llvm::append_range(shape, type.getShape());
    types.push_back(RankedTensorType::get(shape, type.getElementType()));
  }
  return types;
}

/// A Loop whose trip count or condition is known only at run time: the body
/// becomes a private function taking (iteration, cond, carried...,
/// captures...) and a kiln.loop runs it. Scan outputs need a loop that
/// runs exactly its constant trip count.
static LogicalResult convertRuntimeLoop(NodeContext &node, const onnx::GraphProto &body) {
  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  auto scalarType = [](Type element) { return RankedTensorType::get({}, element); };
  Value trip = node.hasInput(0)
                   ? node.input(0)
                   : node.create<ConstantOp>(DenseElementsAttr::get(
                         scalarType(i64), APInt(64, std::numeric_limits<int64_t>::max())));
  if (!isOneElement(trip.getType(), 64)) {
    node.emitError() << "M must hold one int64 trip count, got " << trip.getType();
    return failure();
  }
  Value cond = node.hasInput(1) ? node.input(1) : node.scalar(i1, 1);
  if (!isOneElement(cond.getType(), 1)) {
    node.emitError() << "cond must hold one boolean, got " << cond.getType();
    return failure();
  }
  SmallVector<Value> init;
  SmallVector<Type> inputTypes{scalarType(i64), scalarType(i1)};
  for (unsigned i = 2; i < node.numInputs(); ++i) {
    Value v = node.input(i);
    if (!isPlainTensor(v)) {
      node.emitError() << "loop-carried input " << i
                       << " is a sequence, an optional or of a size the data decides; "
                          "Kiln runs loops over those only when it can unroll them "
                          "(a trip count and condition known at compile time)";
      return failure();
    }
    init.push_back(v);
    inputTypes.push_back(v.getType());
  }
  size_t carried = init.size();
  func::FuncOp func;
  auto fail = [&]() {
    if (func)
      func.erase();
    return failure();
  };
  SmallVector<Value> results, captures;
  {
    OpBuilder::InsertionGuard guard(b);
    auto outputs = node.outlineSubgraph(body, inputTypes, "body", func);
    if (failed(outputs))
      return fail();
    if (outputs->size() < 1 + carried) {
      node.emitError() << "the body has " << outputs->size()
                       << " outputs; expected the condition and " << carried
                       << " loop-carried values";
      return fail();
    }
    for (auto [k, value] : llvm::enumerate(*outputs)) {
      Type want = k == 0 ? Type(scalarType(i1)) : k <= carried ? init[k - 1].getType() : Type();
      Value result = bodyResult(node, value, k, want,
                                k == 0 ? "the condition" : "the loop-carried value");
      if (!result)
        return fail();
      results.push_back(result);
    }
    size_t scans = results.size() - 1 - carried;
    if (node.numOutputs() != carried + scans) {
      node.emitError() << "the node has " << node.numOutputs()
                       << " outputs; the body gives " << carried
                       << " loop-carried values and " << scans << " scan outputs";
      return fail();
    }
    captures = node.finishOutlined(func, results);
  }
  // Scan outputs stack one row per iteration, as many as the constant trip
  // count. A loop that can end earlier also counts its iterations (a
  // carried value after the others) and its scan outputs are Bounded by
  // that count, the rows past it zeros.
  size_t scans = results.size() - 1 - carried;
  int64_t rows = 0;
  bool early = false;
  if (scans) {
    DenseElementsAttr m = node.hasInput(0) ? node.constantInput(0) : nullptr;
    if (!m) {
      node.notConstant(0, "M", "an integer constant",
                       "the loop has scan outputs, one row per iteration");
      return fail();
    }
    rows = (*m.getValues<APInt>().begin()).getSExtValue();
    if (rows < 0 || rows > kMaxTensorElements) {
      node.emitError() << "M is " << rows << ", which scan outputs cannot have rows for";
      return fail();
    }
    std::optional<bool> initial = node.hasInput(1) ? constantBool(cond) : std::optional(true);
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    Value next = ret.getOperand(0);
    while (auto reshape = next.getDefiningOp<ReshapeOp>())
      next = reshape.getInput();
    bool endless = next == func.getArgument(1) || constantBool(next) == std::optional(true);
    early = initial != std::optional(true) || !endless;
  }
  SmallVector<Value> loopInit(init);
  if (early) {
    OpBuilder::InsertionGuard guard(b);
    Block &entry = func.getBody().front();
    BlockArgument count = entry.insertArgument(2 + carried, scalarType(i64), func.getLoc());
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    b.setInsertionPoint(ret);
    Value next = node.create<AddOp>(count, node.scalar(i64, 1));
    SmallVector<Value> operands(ret.getOperands());
    operands.insert(operands.begin() + 1 + carried, next);
    ret->setOperands(operands);
    func.setType(b.getFunctionType(entry.getArgumentTypes(), ValueRange(operands).getTypes()));
  }
  if (early)
    loopInit.push_back(node.scalar(i64, 0));
  SmallVector<Type> resultTypes =
      loopResultTypes(loopInit, ArrayRef(results).drop_front(1 + carried), rows);
  auto loop = LoopOp::create(b, node.loc(), resultTypes, trip, cond, func.getSymName(), loopInit,
                             /*scan_inputs=*/ValueRange(), captures, /*operand_bindings=*/nullptr,
                             /*result_bindings=*/nullptr, /*scratch=*/nullptr);
  for (size_t i = 0; i < carried; ++i)
    node.setOutput(i, loop.getResult(i));
  for (size_t k = 0; k < scans; ++k) {
    Value stacked = loop.getResult(loopInit.size() + k);
    if (!early) {
      node.setOutput(carried + k, stacked);
      continue;
    }
    // Rows at or past the count are zeros (a consumer indexing with them
    // stays in range).
    Value count = loop.getResult(carried);
    auto type = cast<RankedTensorType>(stacked.getType());
    SmallVector<int64_t> column(type.getRank(), 1);
    column[0] = rows;
    auto iotaType = RankedTensorType::get({rows}, i64);
    SmallVector<APInt> indices;
    for (int64_t r = 0; r < rows; ++r)
      indices.push_back(APInt(64, r));
    Value iota = node.reshape(node.create<ConstantOp>(DenseElementsAttr::get(iotaType, indices)),
                              column);
    Value kept = node.create<LessOp>(iota, count);
    Value zero = node.scalar(type.getElementType(), 0);
    Value masked = node.create<SelectOp>(kept, stacked, zero);
    node.setOutput(carried + k, buildBounded(b, node.loc(), masked, 0, count));
  }
  return success();
}

static LogicalResult convertLoop(NodeContext &node) {
  const onnx::GraphProto *body = node.graphAttr("body");
  if (!body)
    return failure();
  if (!node.hasInput(0) && !node.hasInput(1)) {
    node.emitError() << "a Loop with neither a trip count nor a condition "
                        "never ends";
    return failure();
  }
  // Unrolled when the trip count and the initial condition are constants
  // and the body's condition folds in every iteration; else run at run time.
  int64_t tripCount = std::numeric_limits<int64_t>::max();
  std::optional<bool> running = true;
  bool constant = true;
  if (node.hasInput(0)) {
    DenseElementsAttr m = node.constantInput(0);
    if (m && (m.getNumElements() != 1 || !isa<IntegerType>(m.getElementType()))) {
      node.emitError() << "M must hold one trip count";
      return failure();
    }
    constant &= bool(m);
    if (m)
      tripCount = (*m.getValues<APInt>().begin()).getSExtValue();
  }
  if (node.hasInput(1)) {
    running = node.constantInput(1) ? constantBool(node.input(1)) : std::nullopt;
    constant &= running.has_value();
  }
  // When it cannot run at run time, the error names the input to pin.
  unsigned blame = node.hasInput(0) && !node.constantInput(0) ? 0 : 1;
  auto atRunTime = [&] {
    return atRunTimeOrPin(node, blame, blame ? "cond" : "M",
                          blame ? "a boolean constant" : "an integer constant",
                          [&] { return convertRuntimeLoop(node, *body); });
  };
  if (!constant)
    return atRunTime();

  ImportCheckpoint checkpoint = node.checkpoint();
  switch (unrollLoop(node, *body, tripCount, *running)) {
  case Unrolled::Done:
    return success();
  case Unrolled::Failed:
    return failure();
  case Unrolled::AtRunTime:
    break;
  }
  node.rollback(checkpoint);
  return atRunTime();
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
  // (Range first: num_scan_inputs may be any int64, and the difference must
  // not overflow.)
  if (scanInputs < 1 || scanInputs > (int64_t)node.numInputs() - 1) {
    node.emitError() << "num_scan_inputs must be between 1 and the "
                     << node.numInputs() - 1 << " inputs after sequence_lens";
    return failure();
  }
  int64_t states = (int64_t)node.numInputs() - 1 - scanInputs;
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

/// `value` reversed along dimension 0.
static Value reverseRows(NodeContext &node, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> starts(type.getRank(), 0), ends(type.getShape()),
      steps(type.getRank(), 1);
  starts[0] = type.getDimSize(0) - 1;
  ends[0] = -1;
  steps[0] = -1;
  return node.create<SliceOp>(value, starts, ends, steps);
}

/// `value` with dimension `from` moved to position `to` (the others keep
/// their order).
static Value moveDim(NodeContext &node, Value value, int64_t from, int64_t to) {
  if (from == to)
    return value;
  int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
  SmallVector<int64_t> order;
  for (int64_t d = 0; d < rank; ++d)
    if (d != from)
      order.push_back(d);
  order.insert(order.begin() + to, from);
  return node.create<TransposeOp>(value, order);
}

/// A Scan too long to unroll: a kiln.loop over its `length` steps whose
/// body takes row t of each scan input (its scanned axis moved to the
/// front, reversed for direction 1) and stacks each scan output along a
/// new leading axis (moved to its scan_output_axes and reversed for
/// scan_output_directions afterwards).
static LogicalResult convertRuntimeScan(NodeContext &node, const onnx::GraphProto &body,
                                        ArrayRef<Value> states, ArrayRef<Value> sequences,
                                        ArrayRef<int64_t> axes, ArrayRef<int64_t> directions,
                                        int64_t length) {
  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  auto scalarType = [](Type element) { return RankedTensorType::get({}, element); };
  SmallVector<Value> stacked;
  SmallVector<Type> inputTypes{scalarType(i64), scalarType(i1)};
  for (Value state : states) {
    if (!isPlainTensor(state)) {
      node.emitError() << "a state of a Scan longer than " << kMaxUnrolledIterations
                       << " steps is a sequence, an optional or of a size the data decides";
      return failure();
    }
    inputTypes.push_back(state.getType());
  }
  for (auto [j, sequence] : llvm::enumerate(sequences)) {
    Value rows = moveDim(node, sequence, axes[j], 0);
    if (directions[j])
      rows = reverseRows(node, rows);
    stacked.push_back(rows);
    auto type = cast<RankedTensorType>(rows.getType());
    inputTypes.push_back(RankedTensorType::get(type.getShape().drop_front(),
                                               type.getElementType()));
  }
  size_t carried = states.size();
  func::FuncOp func;
  auto fail = [&]() {
    if (func)
      func.erase();
    return failure();
  };
  SmallVector<Value> results, captures;
  {
    OpBuilder::InsertionGuard guard(b);
    auto outputs = node.outlineSubgraph(body, inputTypes, "body", func, /*hiddenInputs=*/2);
    if (failed(outputs))
      return fail();
    if (outputs->size() < carried) {
      node.emitError() << "the body has " << outputs->size() << " outputs for " << carried
                       << " states";
      return fail();
    }
    results.push_back(node.scalar(i1, 1)); // a Scan runs all its steps
    for (auto [k, value] : llvm::enumerate(*outputs)) {
      Value result =
          bodyResult(node, value, k, k < carried ? states[k].getType() : Type(), "the state");
      if (!result)
        return fail();
      results.push_back(result);
    }
    captures = node.finishOutlined(func, results);
  }
  if (node.numOutputs() != results.size() - 1) {
    node.emitError() << "the node has " << node.numOutputs() << " outputs; the body gives "
                     << carried << " states and " << results.size() - 1 - carried
                     << " scan outputs";
    return failure();
  }
  SmallVector<Type> resultTypes =
      loopResultTypes(states, ArrayRef(results).drop_front(1 + carried), length);
  Value trip = node.create<ConstantOp>(DenseElementsAttr::get(scalarType(i64), APInt(64, length)));
  auto loop = LoopOp::create(b, node.loc(), resultTypes, trip, node.scalar(i1, 1),
                             func.getSymName(), states, stacked, captures,
                             /*operand_bindings=*/nullptr, /*result_bindings=*/nullptr,
                             /*scratch=*/nullptr);
  size_t scans = results.size() - 1 - carried;
  SmallVector<int64_t> outputAxes = node.intsAttr("scan_output_axes");
  SmallVector<int64_t> outputDirections = node.intsAttr("scan_output_directions");
  outputAxes.resize(scans, 0);
  outputDirections.resize(scans, 0);
  for (auto [i, value] : llvm::enumerate(loop.getResults())) {
    if (i < carried) {
      node.setOutput(i, value);
      continue;
    }
    size_t k = i - carried;
    int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
    auto axis = node.normalizeAxis(outputAxes[k], rank);
    if (failed(axis))
      return failure();
    Value out = outputDirections[k] ? reverseRows(node, value) : value;
    node.setOutput(i, moveDim(node, out, 0, *axis));
  }
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
  SmallVector<Value> carried;
  for (int64_t i = 0; i < states; ++i)
    carried.push_back(node.input(i));
  if (length > kMaxUnrolledIterations)
    return convertRuntimeScan(node, *body, carried, sequences, inputAxes, inputDirections,
                              length);
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
