//===- RowReductions.cpp - row reductions on gfx: lanes per row, LDS sums -===//
//
// Softmax, LayerNorm, RMSNorm and their kin reduce along the last dimension
// and then scale the same row. The generic path gives a whole row to one
// thread, which walks it element by element with a load in flight at a time:
// a BERT-style encoder's softmax (512 rows of 128) ran on two workgroups.
// This builder gives each row L lanes (a power of two, up to 256): each lane
// loads its chunks of the row (16 bytes at a time, adjacent lanes adjacent
// chunks), combines them into a partial per reduction, the partials meet in
// LDS behind one barrier, and every lane of the row combines them pairwise in
// the same order, so all lanes hold the same value. Values that have the
// row's shape stay in registers between the phases: a row is read from memory
// once.
//
//===----------------------------------------------------------------------===//

#include "codegen/amdgpu/Passes.h"
#include "targets/GfxTargets.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNGPUBUILDROWREDUCTIONS
#include "codegen/amdgpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

/// Rows of fewer elements stay one thread's work on the generic path.
constexpr int64_t kMinRowLength = 16;
/// A lane holds at most this many chunks of a row (registers).
constexpr int64_t kMaxChunks = 8;
/// Threads per workgroup.
constexpr int64_t kWorkgroupThreads = 256;

/// The neutral element of a reduction's combining op, or null.
TypedAttr identityOf(Operation *combiner, Type type) {
  auto fp = dyn_cast<FloatType>(type);
  auto in = dyn_cast<IntegerType>(type);
  return TypeSwitch<Operation *, TypedAttr>(combiner)
      .Case<arith::AddFOp>([&](auto) -> TypedAttr {
        // -0 + x is x for every x, +0 included.
        return fp ? FloatAttr::get(fp, APFloat::getZero(fp.getFloatSemantics(), true))
                  : nullptr;
      })
      .Case<arith::MulFOp>([&](auto) -> TypedAttr {
        return fp ? FloatAttr::get(fp, 1.0) : nullptr;
      })
      .Case<arith::MaximumFOp, arith::MaxNumFOp>([&](auto) -> TypedAttr {
        return fp ? FloatAttr::get(fp, APFloat::getInf(fp.getFloatSemantics(), true)) : nullptr;
      })
      .Case<arith::MinimumFOp, arith::MinNumFOp>([&](auto) -> TypedAttr {
        return fp ? FloatAttr::get(fp, APFloat::getInf(fp.getFloatSemantics(), false))
                  : nullptr;
      })
      .Case<arith::AddIOp, arith::OrIOp, arith::XOrIOp>([&](auto) -> TypedAttr {
        return in ? IntegerAttr::get(in, 0) : nullptr;
      })
      .Case<arith::MulIOp>([&](auto) -> TypedAttr {
        return in ? IntegerAttr::get(in, 1) : nullptr;
      })
      .Case<arith::MaxSIOp>([&](auto) -> TypedAttr {
        return in ? IntegerAttr::get(in, APInt::getSignedMinValue(in.getWidth())) : nullptr;
      })
      .Case<arith::MinSIOp>([&](auto) -> TypedAttr {
        return in ? IntegerAttr::get(in, APInt::getSignedMaxValue(in.getWidth())) : nullptr;
      })
      .Case<arith::MaxUIOp>([&](auto) -> TypedAttr {
        return in ? IntegerAttr::get(in, 0) : nullptr;
      })
      .Case<arith::MinUIOp, arith::AndIOp>([&](auto) -> TypedAttr {
        return in ? IntegerAttr::get(in, APInt::getAllOnes(in.getWidth())) : nullptr;
      })
      .Default([](Operation *) -> TypedAttr { return nullptr; });
}

/// A reduction along the last dimension: the payload yields
/// `combiner(out, g)` (either operand order), `g` not reading `out`.
struct Reduction {
  linalg::LinalgOp op;
  Operation *combiner;
  unsigned outOperand; // the combiner's operand that is `out`
  TypedAttr identity;
};

/// What the builder found in a dispatch.
struct RowPlan {
  SmallVector<int64_t> shape; // S: the rows' dimensions, then the row
  int64_t rows = 1, length = 0;
  linalg::LinalgOp root;      // its result returned: elementwise over S,
                              // or (rowResult) a row value
  bool rowResult = false;     // one value per row: a reduction's, or of
                              // ops on the rows after it
  SmallVector<Reduction> reductions; // in program order
  /// Lanes per row, elements per chunk, chunks per lane, rows per workgroup.
  int64_t lanes = 1, width = 1, chunks = 1, rowsPerGroup = 1;
};

/// How a value of the dispatch is indexed by the kernel.
enum class Kind { Full, Row, Global, Other };

/// `value` is an argument of the dispatch or a constant, seen through
/// reshapes: the kernel reads it from memory.
bool isGlobal(Value value) {
  while (true) {
    if (isa<BlockArgument>(value))
      return true;
    Operation *def = value.getDefiningOp();
    if (isa<arith::ConstantOp>(def))
      return true;
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) {
      value = def->getOperand(0);
      continue;
    }
    return false;
  }
}

bool allParallel(linalg::LinalgOp op) {
  return llvm::all_of(op.getIteratorTypesArray(), [](utils::IteratorType t) {
    return t == utils::IteratorType::parallel;
  });
}

/// The rows' shape, with or without a trailing 1.
bool isRowShape(ArrayRef<int64_t> shape, ArrayRef<int64_t> full) {
  ArrayRef<int64_t> rows = full.drop_back();
  return shape == rows || (shape.size() == full.size() && shape.drop_back() == rows &&
                           shape.back() == 1);
}

/// The map that reads a row value of shape `valueShape` from loops
/// `domain` (the full or the row domain).
bool isRowMap(AffineMap map, ArrayRef<int64_t> valueShape, ArrayRef<int64_t> domain,
              ArrayRef<int64_t> full) {
  MLIRContext *ctx = map.getContext();
  unsigned r = full.size();
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d + 1 < r; ++d)
    exprs.push_back(getAffineDimExpr(d, ctx));
  if (valueShape.size() == r)
    exprs.push_back(getAffineConstantExpr(0, ctx));
  if (map == AffineMap::get(domain.size(), 0, exprs, ctx))
    return true;
  // The row domain with a trailing 1 reads [R..., 1] values as they are.
  return domain.size() == r && valueShape.size() == r && map.isIdentity();
}

std::optional<RowPlan> matchRows(func::FuncOp func) {
  Block &body = func.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!ret || ret.getNumOperands() != 1)
    return std::nullopt;
  RowPlan plan;
  plan.root = ret.getOperand(0).getDefiningOp<linalg::LinalgOp>();
  if (!plan.root || plan.root->getNumResults() != 1 || !plan.root.hasPureTensorSemantics())
    return std::nullopt;
  // S, the full domain: the root's loops when it is elementwise over its
  // result; when it returns one value per row (it is the dispatch's first
  // reduction, or elementwise over that reduction's rows: a range's
  // minimum, a mean), that reduction's loops. That reduction reads one
  // value over its whole domain (a contraction, which reads two through
  // other maps, is the GEMM builders' or the generic path's).
  linalg::LinalgOp firstReduction;
  for (Operation &op : body.without_terminator())
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(&op); linalgOp && !allParallel(linalgOp)) {
      if (linalgOp.getNumDpsInputs() == 1 &&
          linalgOp.getMatchingIndexingMap(linalgOp.getDpsInputOperand(0)).isIdentity())
        firstReduction = linalgOp;
      break;
    }
  bool elementwiseRoot =
      allParallel(plan.root) &&
      plan.root.getIndexingMapMatchingResult(plan.root->getResult(0)).isIdentity();
  if (firstReduction && (firstReduction == plan.root ||
                         (elementwiseRoot && ArrayRef<int64_t>(plan.root.getStaticLoopRanges()) ==
                                                 ArrayRef<int64_t>(
                                                     firstReduction.getStaticLoopRanges())
                                                     .drop_back()))) {
    plan.rowResult = true;
    plan.shape = firstReduction.getStaticLoopRanges();
  } else if (elementwiseRoot) {
    plan.shape = plan.root.getStaticLoopRanges();
  } else {
    return std::nullopt;
  }
  if (plan.shape.empty() || ShapedType::isDynamicShape(plan.shape))
    return std::nullopt;
  plan.length = plan.shape.back();
  for (int64_t d : ArrayRef(plan.shape).drop_back())
    plan.rows *= d;
  if (plan.length < kMinRowLength)
    return std::nullopt;
  ArrayRef<int64_t> full = plan.shape;
  SmallVector<int64_t> rowDomain(full.drop_back());

  // Every op: constants, empties, reshapes, and linalg ops over S (full
  // elementwise, reductions of the last dimension) or over the rows.
  DenseMap<Value, Kind> kinds;
  auto kindOf = [&](Value v) -> Kind {
    if (isGlobal(v))
      return Kind::Global;
    auto it = kinds.find(v);
    return it == kinds.end() ? Kind::Other : it->second;
  };
  if (!llvm::all_of(func.getArgumentTypes(), llvm::IsaPred<RankedTensorType>))
    return std::nullopt;
  for (Operation &op : body.without_terminator()) {
    if (isa<arith::ConstantOp, tensor::EmptyOp>(op))
      continue;
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
      Value src = op.getOperand(0);
      auto type = cast<RankedTensorType>(op.getResult(0).getType());
      if (kindOf(src) == Kind::Global)
        continue;
      if (kindOf(src) != Kind::Row || !isRowShape(type.getShape(), full))
        return std::nullopt;
      kinds[op.getResult(0)] = Kind::Row;
      continue;
    }
    auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
    if (!linalgOp || linalgOp->getNumResults() != 1 || !linalgOp.hasPureTensorSemantics() ||
        linalgOp.getNumDpsInits() != 1)
      return std::nullopt;
    // Payloads: no indices, nothing from outside but constants.
    bool clean = true;
    linalgOp.getBlock()->walk([&](Operation *inner) {
      if (isa<linalg::IndexOp>(inner) || inner->getNumRegions() != 0)
        clean = false;
      for (Value operand : inner->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && !linalgOp->isAncestor(def) && !isa<arith::ConstantOp>(def))
          clean = false;
    });
    if (!clean)
      return std::nullopt;
    SmallVector<int64_t> loops = linalgOp.getStaticLoopRanges();
    Value result = linalgOp->getResult(0);
    ArrayRef<int64_t> resultShape = cast<RankedTensorType>(result.getType()).getShape();
    OpOperand *init = linalgOp.getDpsInitOperand(0);
    Kind kind;
    if (isa<linalg::FillOp>(op)) {
      if (!isRowShape(resultShape, full) || !op.getOperand(0).getDefiningOp<arith::ConstantOp>())
        return std::nullopt;
      kinds[result] = Kind::Row;
      continue;
    }
    if (allParallel(linalgOp)) {
      if (!linalgOp.getMatchingIndexingMap(init).isIdentity() ||
          linalgOp.payloadUsesValueFromOperand(init))
        return std::nullopt;
      if (ArrayRef<int64_t>(loops) == full)
        kind = Kind::Full;
      else if (isRowShape(loops, full))
        kind = Kind::Row;
      else
        return std::nullopt;
    } else {
      // A reduction of the last dimension into the rows.
      SmallVector<utils::IteratorType> iters = linalgOp.getIteratorTypesArray();
      if (ArrayRef<int64_t>(loops) != full || iters.back() != utils::IteratorType::reduction ||
          !llvm::all_of(ArrayRef(iters).drop_back(),
                        [](auto t) { return t == utils::IteratorType::parallel; }) ||
          resultShape != ArrayRef<int64_t>(rowDomain) ||
          !isRowMap(linalgOp.getMatchingIndexingMap(init), resultShape, full, full))
        return std::nullopt;
      Block *payload = linalgOp.getBlock();
      auto yield = cast<linalg::YieldOp>(payload->getTerminator());
      Value out = linalgOp.getMatchingBlockArgument(init);
      Operation *combiner = yield.getOperand(0).getDefiningOp();
      if (!combiner || combiner->getBlock() != payload || combiner->getNumOperands() != 2 ||
          combiner->getNumResults() != 1 || !out.hasOneUse() || combiner->getNumRegions() != 0)
        return std::nullopt;
      unsigned outOperand = combiner->getOperand(0) == out ? 0 : 1;
      if (combiner->getOperand(outOperand) != out)
        return std::nullopt;
      TypedAttr identity = identityOf(combiner, out.getType());
      if (!identity)
        return std::nullopt;
      // The init: a row value of the dispatch, or an argument.
      Kind initKind = kindOf(init->get());
      if (initKind != Kind::Row && initKind != Kind::Global)
        return std::nullopt;
      plan.reductions.push_back({linalgOp, combiner, outOperand, identity});
      kind = Kind::Row;
    }
    // Inputs: arguments and constants through any map; values of the
    // dispatch at their own position (full) or their row's.
    for (OpOperand *input : linalgOp.getDpsInputOperands()) {
      Kind k = kindOf(input->get());
      AffineMap map = linalgOp.getMatchingIndexingMap(input);
      auto type = dyn_cast<RankedTensorType>(input->get().getType());
      if (!type)
        return std::nullopt;
      if (k == Kind::Global)
        continue;
      if (k == Kind::Full && ArrayRef<int64_t>(loops) == full && map.isIdentity())
        continue;
      if (k == Kind::Row && isRowMap(map, type.getShape(), loops, full))
        continue;
      return std::nullopt;
    }
    kinds[result] = kind;
  }
  if (plan.reductions.empty())
    return std::nullopt;
  if (plan.rowResult) {
    auto resultShape =
        cast<RankedTensorType>(plan.root->getResult(0).getType()).getShape();
    if (kindOf(plan.root->getResult(0)) != Kind::Row || resultShape != ArrayRef(rowDomain))
      return std::nullopt;
  }

  // Chunks of 16 bytes where the row allows (4 elements of 32 bits); lanes
  // so that a lane has at most 4 chunks (registers), up to 256.
  Type elem = cast<RankedTensorType>(plan.root->getResult(0).getType()).getElementType();
  int64_t bits = elem.getIntOrFloatBitWidth();
  plan.width = std::max<int64_t>(1, 128 / std::max<int64_t>(bits, 8));
  while (plan.width > 1 && plan.length % plan.width != 0)
    plan.width /= 2;
  int64_t vectors = llvm::divideCeil(plan.length, plan.width);
  plan.lanes = std::min<int64_t>(64, llvm::PowerOf2Ceil(vectors));
  plan.chunks = llvm::divideCeil(vectors, plan.lanes);
  while (plan.chunks > 4 && plan.lanes < kWorkgroupThreads) {
    plan.lanes *= 2;
    plan.chunks = llvm::divideCeil(vectors, plan.lanes);
  }
  if (plan.chunks > kMaxChunks)
    return std::nullopt;
  plan.rowsPerGroup = std::min<int64_t>(kWorkgroupThreads / plan.lanes,
                                        llvm::PowerOf2Ceil(plan.rows));
  return plan;
}

/// Builds the kernel of a matched dispatch on memrefs.
class RowKernelBuilder {
public:
  RowKernelBuilder(OpBuilder &b, Location loc, const RowPlan &plan, ArrayRef<Value> args,
                   bool skipLane)
      : b(b), loc(loc), plan(plan), args(args), skipLane(skipLane) {}

  /// The kernel; its LDS bytes.
  int64_t build(Value output);

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value apply(AffineExpr expr, ValueRange operands) {
    return affine::AffineApplyOp::create(
        b, loc, AffineMap::get(operands.size(), 0, expr), operands);
  }
  /// An old constant (payloads read scalars defined above them), cloned once.
  Value outer(Value v) {
    auto it = outerValues.find(v);
    if (it != outerValues.end())
      return it->second;
    Operation *clone = b.clone(*v.getDefiningOp());
    return outerValues[v] = clone->getResult(0);
  }
  /// A global (argument or constant, through reshapes) as a memref.
  Value memrefOf(Value v);
  /// The indices `map` gives at loop indices `loops`.
  SmallVector<Value> mapIndices(AffineMap map, ArrayRef<Value> loops);
  /// Loads global `v` through `map` at loop indices `loops`.
  Value loadGlobal(Value v, AffineMap map, ArrayRef<Value> loops);
  /// Element `e` of chunk `c` of full value `v`.
  Value full(Value v, int64_t c, int64_t e);
  /// The row value `v` of this lane's row.
  Value row(Value v);
  /// Operand `input` of `op` at chunk c, element e (-1: the row domain).
  Value operandAt(linalg::LinalgOp op, OpOperand *input, int64_t c, int64_t e);
  /// Runs `op`'s payload on `inputs`: the value it yields, or with
  /// `stopAt`, the value of that op's operand `operand` (the payload stops
  /// before it).
  Value payload(linalg::LinalgOp op, ArrayRef<Value> inputs, Operation *stopAt = nullptr,
                unsigned operand = 0);
  /// Loop indices of chunk c, element e (e = -1: the row domain).
  SmallVector<Value> loopIndices(linalg::LinalgOp op, int64_t c, int64_t e);
  void reduce(const Reduction &red, Value lds);

  OpBuilder &b;
  Location loc;
  const RowPlan &plan;
  ArrayRef<Value> args;
  bool skipLane;
  Value lane, rowInGroup;
  SmallVector<Value> rowIdx;   // the row's indices (clamped)
  SmallVector<Value> chunkStart; // per chunk: its first element in the row
  SmallVector<Value> chunkValid; // per chunk: i1 or null (always)
  DenseMap<Value, Value> outerValues, memrefs, rows;
  DenseMap<std::pair<Value, int64_t>, SmallVector<Value>> fulls;
  DenseMap<std::tuple<Value, AffineMap, int64_t>, Value> vectorLoads;
};

Value RowKernelBuilder::memrefOf(Value v) {
  auto it = memrefs.find(v);
  if (it != memrefs.end())
    return it->second;
  // Back through the reshapes to the argument or constant.
  SmallVector<Operation *> reshapes;
  Value base = v;
  while (isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(base.getDefiningOp())) {
    reshapes.push_back(base.getDefiningOp());
    base = base.getDefiningOp()->getOperand(0);
  }
  Value mem;
  if (auto arg = dyn_cast<BlockArgument>(base)) {
    mem = args[arg.getArgNumber()];
  } else {
    auto cst = base.getDefiningOp<arith::ConstantOp>();
    auto type = cast<RankedTensorType>(cst.getType());
    mem = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()), outer(cst),
        /*read_only=*/b.getUnitAttr());
  }
  std::reverse(reshapes.begin(), reshapes.end());
  return memrefs[v] = gfx::reshapeMemref(b, loc, mem, reshapes);
}

SmallVector<Value> RowKernelBuilder::loopIndices(linalg::LinalgOp op, int64_t c, int64_t e) {
  SmallVector<Value> loops(rowIdx);
  if (op.getNumLoops() == plan.shape.size())
    loops.push_back(e < 0 ? index(0)
                          : apply(b.getAffineDimExpr(0) + e, {chunkStart[c]}));
  return loops;
}

SmallVector<Value> RowKernelBuilder::mapIndices(AffineMap map, ArrayRef<Value> loops) {
  SmallVector<Value> idx;
  for (AffineExpr expr : map.getResults())
    idx.push_back(affine::AffineApplyOp::create(
        b, loc, AffineMap::get(map.getNumDims(), 0, expr), loops));
  return idx;
}

Value RowKernelBuilder::loadGlobal(Value v, AffineMap map, ArrayRef<Value> loops) {
  return memref::LoadOp::create(b, loc, memrefOf(v), mapIndices(map, loops));
}

Value RowKernelBuilder::operandAt(linalg::LinalgOp op, OpOperand *input, int64_t c, int64_t e) {
  Value v = input->get();
  AffineMap map = op.getMatchingIndexingMap(input);
  if (isGlobal(v)) {
    // Splat constants are their value.
    if (auto cst = v.getDefiningOp<arith::ConstantOp>())
      if (auto dense = dyn_cast<SplatElementsAttr>(cst.getValue()))
        return arith::ConstantOp::create(b, loc, dense.getSplatValue<TypedAttr>());
    unsigned r = plan.shape.size();
    bool alongRow = e >= 0 && plan.width > 1 && map.getNumResults() > 0 &&
                    map.getResults().back() == b.getAffineDimExpr(r - 1) &&
                    llvm::count_if(map.getResults(), [&](AffineExpr x) {
                      return x.isFunctionOfDim(r - 1);
                    }) == 1;
    if (!alongRow)
      return loadGlobal(v, map, loopIndices(op, c, e));
    // Contiguous along the row: one vector load per chunk.
    auto key = std::make_tuple(v, map, c);
    auto it = vectorLoads.find(key);
    if (it == vectorLoads.end()) {
      Value mem = memrefOf(v);
      SmallVector<Value> loops(rowIdx);
      loops.push_back(chunkStart[c]);
      SmallVector<Value> idx = mapIndices(map, loops);
      auto type = VectorType::get({plan.width}, cast<MemRefType>(mem.getType()).getElementType());
      it = vectorLoads.try_emplace(key, vector::LoadOp::create(b, loc, type, mem, idx)).first;
    }
    return vector::ExtractOp::create(b, loc, it->second, e);
  }
  if (e >= 0 && op.getNumLoops() == plan.shape.size() && map.isIdentity() &&
      cast<RankedTensorType>(v.getType()).getShape() == ArrayRef<int64_t>(plan.shape))
    return full(v, c, e);
  return row(v);
}

Value RowKernelBuilder::payload(linalg::LinalgOp op, ArrayRef<Value> inputs, Operation *stopAt,
                                unsigned operand) {
  Block *block = op.getBlock();
  IRMapping map;
  for (auto [arg, value] : llvm::zip(block->getArguments().take_front(inputs.size()), inputs))
    map.map(arg, value);
  for (Operation &inner : block->without_terminator()) {
    if (&inner == stopAt)
      break;
    for (Value operand : inner.getOperands())
      if (!map.contains(operand) && operand.getDefiningOp() &&
          !op->isAncestor(operand.getDefiningOp()))
        map.map(operand, outer(operand));
    b.clone(inner, map);
  }
  if (stopAt)
    return map.lookupOrDefault(stopAt->getOperand(operand));
  Value yielded = block->getTerminator()->getOperand(0);
  return map.lookupOrDefault(yielded);
}

Value RowKernelBuilder::full(Value v, int64_t c, int64_t e) {
  auto &elems = fulls[{v, c}];
  if (elems.empty())
    elems.resize(plan.width);
  if (elems[e])
    return elems[e];
  auto op = cast<linalg::LinalgOp>(v.getDefiningOp());
  SmallVector<Value> inputs;
  for (OpOperand *input : op.getDpsInputOperands())
    inputs.push_back(operandAt(op, input, c, e));
  Value result = payload(op, inputs);
  fulls[{v, c}][e] = result;
  return result;
}

Value RowKernelBuilder::row(Value v) {
  auto it = rows.find(v);
  if (it != rows.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  Value result;
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) {
    result = row(def->getOperand(0));
  } else if (auto fill = dyn_cast<linalg::FillOp>(def)) {
    Value scalar = fill.getInputs()[0];
    result = scalar.getDefiningOp() ? outer(scalar) : scalar;
  } else {
    // (Reductions are built in program order: their results are in `rows`.)
    auto op = cast<linalg::LinalgOp>(def);
    assert(llvm::none_of(plan.reductions,
                         [&](const Reduction &red) { return red.op == def; }) &&
           "reductions are built in program order");
    SmallVector<Value> inputs;
    for (OpOperand *input : op.getDpsInputOperands())
      inputs.push_back(operandAt(op, input, 0, -1));
    result = payload(op, inputs);
  }
  return rows[v] = result;
}

void RowKernelBuilder::reduce(const Reduction &red, Value lds) {
  linalg::LinalgOp op = red.op;
  Type type = red.identity.getType();
  Value identity = arith::ConstantOp::create(b, loc, red.identity);
  auto combine = [&](Value acc, Value x) {
    IRMapping map;
    map.map(red.combiner->getOperand(red.outOperand), acc);
    map.map(red.combiner->getOperand(1 - red.outOperand), x);
    return b.clone(*red.combiner, map)->getResult(0);
  };
  // This lane's partial over its chunks.
  Value partial = identity;
  for (int64_t c = 0; c < plan.chunks; ++c) {
    for (int64_t e = 0; e < plan.width; ++e) {
      SmallVector<Value> inputs;
      for (OpOperand *input : op.getDpsInputOperands())
        inputs.push_back(operandAt(op, input, c, e));
      Value g = payload(op, inputs, red.combiner, 1 - red.outOperand);
      if (chunkValid[c])
        g = arith::SelectOp::create(b, loc, chunkValid[c], g, identity);
      partial = combine(partial, g);
    }
  }
  // The row's partials meet in LDS; every lane of the row combines them in
  // the same order.
  memref::StoreOp::create(b, loc, partial, lds, ValueRange{rowInGroup, lane});
  gpu::BarrierOp::create(b, loc);
  // (Pairwise, so that the chain of dependent combines is log2 L long.)
  int64_t step = std::min<int64_t>(4, plan.lanes);
  SmallVector<Value> parts;
  for (int64_t j = 0; j < plan.lanes; j += step) {
    Value part = vector::LoadOp::create(b, loc, VectorType::get({step}, type), lds,
                                        ValueRange{rowInGroup, index(j)});
    for (int64_t k = skipLane && j == 0 ? 1 : 0; k < step; ++k)
      parts.push_back(vector::ExtractOp::create(b, loc, part, k));
  }
  while (parts.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2)
      next.push_back(combine(parts[i], parts[i + 1]));
    if (parts.size() % 2)
      next.push_back(parts.back());
    parts = std::move(next);
  }
  Value total = parts.empty() ? identity : parts.front();
  // And the init.
  OpOperand *init = op.getDpsInitOperand(0);
  Value start = isGlobal(init->get()) ? loadGlobal(init->get(), op.getMatchingIndexingMap(init),
                                                   loopIndices(op, 0, 0))
                                      : row(init->get());
  rows[op->getResult(0)] = combine(start, total);
}

int64_t RowKernelBuilder::build(Value output) {
  int64_t L = plan.lanes, V = plan.width;
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  lane = apply(d0 % L, {tid});
  rowInGroup = apply(d0.floorDiv(L), {tid});
  Value rowId = apply(d0 * plan.rowsPerGroup + d1.floorDiv(L), {block, tid});
  Value rowValid;
  if (plan.rows % plan.rowsPerGroup != 0)
    rowValid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rowId,
                                     index(plan.rows));
  Value rowC = arith::MinUIOp::create(b, loc, rowId, index(plan.rows - 1));
  ArrayRef<int64_t> rowShape = ArrayRef(plan.shape).drop_back();
  if (!rowShape.empty()) {
    auto delin = affine::AffineDelinearizeIndexOp::create(b, loc, rowC, rowShape);
    rowIdx.assign(delin.getResults().begin(), delin.getResults().end());
  }
  // Chunk c of a lane: elements (c L + lane) V ... + V - 1; the last chunks
  // may pass the row's end (loads clamped, partials neutral, no stores).
  for (int64_t c = 0; c < plan.chunks; ++c) {
    Value start = apply((d0 + c * L) * V, {lane});
    Value valid;
    if ((c + 1) * L * V > plan.length) {
      valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, start,
                                    index(plan.length));
      start = arith::MinUIOp::create(b, loc, start, index(plan.length - V));
    }
    chunkStart.push_back(start);
    chunkValid.push_back(valid);
  }

  int64_t ldsBytes = 0;
  for (const Reduction &red : plan.reductions) {
    Type type = red.identity.getType();
    auto alloca = memref::AllocaOp::create(
        b, loc, MemRefType::get({plan.rowsPerGroup, L}, type));
    alloca->setAttr(kWorkgroupMemoryAttr, b.getUnitAttr());
    ldsBytes += plan.rowsPerGroup * L * llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
    reduce(red, alloca);
  }

  Value root = plan.root->getResult(0);
  if (plan.rowResult) {
    // One value per row, stored by the row's first lane.
    Value value = row(root);
    Value guard = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
    if (rowValid)
      guard = arith::AndIOp::create(b, loc, guard, rowValid);
    OpBuilder::InsertionGuard insertion(b);
    auto ifOp = scf::IfOp::create(b, loc, guard, /*withElseRegion=*/false);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    memref::StoreOp::create(b, loc, value, output, rowIdx);
    return ldsBytes;
  }
  // The root, chunk by chunk.
  auto elemType = cast<RankedTensorType>(root.getType()).getElementType();
  for (int64_t c = 0; c < plan.chunks; ++c) {
    SmallVector<Value> elems;
    for (int64_t e = 0; e < V; ++e)
      elems.push_back(full(root, c, e));
    Value guard = chunkValid[c];
    if (rowValid)
      guard = guard ? arith::AndIOp::create(b, loc, guard, rowValid).getResult() : rowValid;
    OpBuilder::InsertionGuard insertion(b);
    if (guard) {
      auto ifOp = scf::IfOp::create(b, loc, guard, /*withElseRegion=*/false);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    }
    SmallVector<Value> idx(rowIdx);
    idx.push_back(chunkStart[c]);
    if (V == 1) {
      memref::StoreOp::create(b, loc, elems[0], output, idx);
    } else {
      Value vec = vector::FromElementsOp::create(b, loc, VectorType::get({V}, elemType), elems);
      vector::StoreOp::create(b, loc, vec, output, idx);
    }
  }
  return ldsBytes;
}

struct KilnGPUBuildRowReductionsPass
    : kiln::impl::KilnGPUBuildRowReductionsBase<KilnGPUBuildRowReductionsPass> {
  using KilnGPUBuildRowReductionsBase::KilnGPUBuildRowReductionsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    bool failed = false;
    const gfx::Target *target = gfx::builderTarget(func, chip, failed);
    if (failed)
      return signalPassFailure();
    if (!target)
      return;
    // (The GEMM builder's faults leave these kernels alone: the driver hands
    // both passes the same one.)
    if (!testFault.empty() && !llvm::is_contained({"skip-lane", "swap-operands", "shift-lanes",
                                                   "window-taps"},
                                                  testFault)) {
      func.emitError("unknown test fault '")
          << testFault << "' (known: swap-operands, shift-lanes, window-taps, skip-lane)";
      return signalPassFailure();
    }
    std::optional<RowPlan> plan = matchRows(func);
    if (!plan)
      return;

    Block &entry = func.getBody().front();
    auto resultType = cast<RankedTensorType>(plan->root->getResult(0).getType());
    SmallVector<Type> argTypes;
    for (Type t : func.getArgumentTypes()) {
      auto tensor = cast<RankedTensorType>(t);
      argTypes.push_back(MemRefType::get(tensor.getShape(), tensor.getElementType()));
    }
    argTypes.push_back(MemRefType::get(resultType.getShape(), resultType.getElementType()));
    Block *newEntry = new Block();
    SmallVector<Value> args;
    for (Type t : argTypes)
      args.push_back(newEntry->addArgument(t, func.getLoc()));
    OpBuilder b(func.getContext());
    b.setInsertionPointToStart(newEntry);
    int64_t ldsBytes = RowKernelBuilder(b, func.getLoc(), *plan, args, testFault == "skip-lane")
                           .build(args.back());
    func::ReturnOp::create(b, func.getLoc());

    func.getBody().push_front(newEntry);
    entry.dropAllDefinedValueUses();
    entry.erase();
    func.setType(b.getFunctionType(argTypes, {}));
    int64_t groups = llvm::divideCeil(plan->rows, plan->rowsPerGroup);
    func->setAttr(kWorkgroupCountAttr, b.getI64IntegerAttr(groups));
    func->setAttr(kWorkgroupSizeAttr, b.getI64IntegerAttr(plan->rowsPerGroup * plan->lanes));
    func->setAttr(kLdsBytesAttr, b.getI64IntegerAttr(ldsBytes));
  }
};
} // namespace
