//===- IntegerDot.cpp - 8-bit contractions as x86 dot products -----------===//
//
// A register tile of an integer GEMM, `vector.contract` of 8-bit operands
// into an i32 accumulator of at most 16 columns, becomes dot-product
// instructions (IntegerDot.h's DotISA). With AVX-512 VNNI, `vpdpbusd`: each i32 lane
// of the accumulator gains the dot product of four uint8 bytes of one
// operand with four int8 bytes of the other. One operand is broadcast (the
// four bytes of one row along k, as one i32 splat), the other holds the
// four k bytes of each of the 16 columns side by side; so a tile of 4 k
// steps is one instruction per accumulator row instead of four widening
// multiply-adds. Exactly one operand must be unsigned: that is what the
// instruction multiplies (uint8 activations x int8 weights, the form the
// quantized lowering produces). Sums of four products cannot overflow i32.
// Without VNNI (or for two operands of one signedness), `vpmaddwd` of the
// bytes widened to 16 bits: each i32 lane gains two products (a pair of k
// steps), then an add; on AVX2 the 16 columns are two ymm halves.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/IntegerDot.h"
#include "codegen/cpu/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <map>
#include <vector>

using namespace mlir;
using kiln::cpu::DotISA;

namespace {

/// An 8-bit operand of an integer contraction: its bytes, the map from the
/// contraction's loops to their dimensions, and whether it is extended
/// unsigned (vector.contract itself sign-extends narrower operands). When
/// the bytes come from a transfer_read that broadcasts and transposes its
/// source into the contraction's iteration space (what linalg's vectorizer
/// makes of a generic contraction), `reread` is that read, to be read again
/// as its plain source tile of `shape` through `plainPermutation`, and `map`
/// says which loop each source dimension follows.
struct ByteOperand {
  Value bytes;
  AffineMap map;
  bool isUnsigned = false;
  bool extended = false; // by an arith.ext op (else by vector.contract)
  // The 2-d vector.transpose the bytes were read through (an interleaved
  // column panel, interleaveDotProductColumns): `bytes` is its input and
  // `map` says so.
  vector::TransposeOp transposed;
  vector::TransferReadOp reread;
  AffineMap plainPermutation;
  SmallVector<int64_t> shape;
};

std::optional<ByteOperand> analyzeByteOperand(Value operand, AffineMap map,
                                              ArrayRef<int64_t> bounds) {
  MLIRContext *ctx = map.getContext();
  ByteOperand result{operand, map};
  if (auto ext = operand.getDefiningOp<arith::ExtSIOp>()) {
    result.bytes = ext.getIn();
    result.extended = true;
  } else if (auto ext = operand.getDefiningOp<arith::ExtUIOp>()) {
    result.bytes = ext.getIn();
    result.isUnsigned = result.extended = true;
  }
  if (auto transpose = result.bytes.getDefiningOp<vector::TransposeOp>();
      transpose && map.getNumResults() == 2 &&
      transpose.getPermutation() == ArrayRef<int64_t>{1, 0}) {
    result.transposed = transpose;
    result.bytes = transpose.getVector();
    result.map = AffineMap::get(map.getNumDims(), 0, {map.getResult(1), map.getResult(0)},
                                map.getContext());
    auto type = dyn_cast<VectorType>(result.bytes.getType());
    if (!type || !type.getElementType().isInteger(8))
      return std::nullopt;
    return result;
  }
  auto type = dyn_cast<VectorType>(result.bytes.getType());
  if (!type || !type.getElementType().isInteger(8))
    return std::nullopt;
  auto read = result.bytes.getDefiningOp<vector::TransferReadOp>();
  if (!read || read.getPermutationMap().isMinorIdentity())
    return result;
  if (read.getMask() || !llvm::all_of(read.getInBoundsValues(), [](bool b) { return b; }))
    return std::nullopt;
  auto sourceType = dyn_cast<ShapedType>(read.getBase().getType());
  AffineMap perm = read.getPermutationMap();
  if (!sourceType || perm.getNumDims() != sourceType.getRank())
    return std::nullopt;
  // Source dimension -> the loop it follows (through vector dimension i).
  SmallVector<std::optional<unsigned>> loopOf(sourceType.getRank());
  for (unsigned i = 0; i < perm.getNumResults(); ++i) {
    if (auto dim = dyn_cast<AffineDimExpr>(perm.getResult(i)))
      loopOf[dim.getPosition()] = map.getDimPosition(i);
    else if (!isa<AffineConstantExpr>(perm.getResult(i)))
      return std::nullopt;
  }
  SmallVector<AffineExpr> loops, dims;
  for (auto [d, loop] : llvm::enumerate(loopOf)) {
    if (!loop)
      continue;
    loops.push_back(getAffineDimExpr(*loop, ctx));
    dims.push_back(getAffineDimExpr(d, ctx));
    result.shape.push_back(bounds[*loop]);
  }
  result.reread = read;
  result.plainPermutation = AffineMap::get(sourceType.getRank(), 0, dims, ctx);
  result.map = AffineMap::get(map.getNumDims(), 0, loops, ctx);
  return result;
}

/// The bytes of `operand`, read again plainly when it says so.
Value materialize(RewriterBase &rewriter, const ByteOperand &operand) {
  if (!operand.reread)
    return operand.bytes;
  vector::TransferReadOp read = operand.reread;
  SmallVector<bool> inBounds(operand.shape.size(), true);
  auto type = VectorType::get(operand.shape, rewriter.getI8Type());
  return vector::TransferReadOp::create(rewriter, read.getLoc(), type, read.getBase(),
                                        read.getIndices(), read.getPadding(),
                                        operand.plainPermutation, ArrayRef<bool>(inBounds));
}

/// How one instruction of a DotISA consumes a tile: `lanes` i32 lanes of
/// accumulator, each gaining the products of `group` consecutive k steps;
/// the operands are the bytes themselves (vpdpbusd) or widened to 16 bits
/// (vpmaddwd, then an add).
struct DotInstruction {
  int64_t lanes;
  int64_t group;
  bool widened;
  StringRef intrinsic;
};

/// Columns of a tile: at most two instructions' lanes (the 32 columns of
/// AVX-512's 8 x 32 tile, the 16 of AVX2's two ymm halves), or, for a
/// single row (a matrix-vector product: LLM decoding, a classifier's last
/// layer), up to 16 instructions' (one accumulator each: no chain of
/// dependent dot products, and each k step reads long runs of the rows).
constexpr int64_t kMaxColumns = 256;
constexpr int64_t kMaxChunks = 2, kMaxRowChunks = 16;

std::optional<DotInstruction> instructionFor(DotISA dot, bool mixedSigns) {
  switch (dot) {
  case DotISA::AVX512VNNI:
    if (mixedSigns)
      return DotInstruction{16, 4, false, "llvm.x86.avx512.vpdpbusd.512"};
    [[fallthrough]];
  case DotISA::AVX512BW:
    return DotInstruction{16, 2, true, "llvm.x86.avx512.pmaddw.d.512"};
  case DotISA::AVX2:
    return DotInstruction{8, 2, true, "llvm.x86.avx2.pmadd.wd"};
  case DotISA::None:
    break;
  }
  return std::nullopt;
}

/// How a contraction maps onto the instruction: lhs rows are broadcast,
/// rhs columns side by side, in chunks of `lanes` columns.
struct DotPlan {
  ByteOperand lhs, rhs;
  bool rhsTransposed;
  int64_t rows, columns, depth;
  DotInstruction instruction;
};

std::optional<DotPlan> analyzeContract(vector::ContractionOp op, DotISA dot) {
  auto accType = dyn_cast<VectorType>(op.getAccType());
  if (op.getKind() != vector::CombiningKind::ADD || !accType || accType.getRank() != 2 ||
      !accType.getElementType().isInteger(32) || accType.isScalable() ||
      accType.getDimSize(1) > kMaxColumns)
    return std::nullopt;
  SmallVector<vector::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators.size() != 3 || iterators[0] != vector::IteratorType::parallel ||
      iterators[1] != vector::IteratorType::parallel ||
      iterators[2] != vector::IteratorType::reduction)
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto map = [&](ArrayRef<AffineExpr> exprs) { return AffineMap::get(3, 0, exprs, ctx); };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps[2] != map({m, n}))
    return std::nullopt;
  SmallVector<int64_t> bounds;
  op.getIterationBounds(bounds);
  if (bounds[1] > kMaxColumns)
    return std::nullopt;
  std::optional<ByteOperand> lhs = analyzeByteOperand(op.getLhs(), maps[0], bounds);
  std::optional<ByteOperand> rhs = analyzeByteOperand(op.getRhs(), maps[1], bounds);
  if (!lhs || !rhs || lhs->map != map({m, k}) ||
      (rhs->map != map({k, n}) && rhs->map != map({n, k})))
    return std::nullopt;
  std::optional<DotInstruction> instruction =
      instructionFor(dot, lhs->isUnsigned != rhs->isUnsigned);
  if (!instruction || bounds[2] % instruction->group != 0 ||
      llvm::divideCeil(bounds[1], instruction->lanes) >
          (bounds[0] == 1 ? kMaxRowChunks : kMaxChunks))
    return std::nullopt;
  return DotPlan{*lhs, *rhs, rhs->map == map({n, k}), bounds[0], bounds[1], bounds[2],
                 *instruction};
}

struct ContractToDotProducts : OpRewritePattern<vector::ContractionOp> {
  ContractToDotProducts(MLIRContext *ctx, DotISA dot)
      : OpRewritePattern(ctx), dot(dot) {}

  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<DotPlan> plan = analyzeContract(op, dot);
    if (!plan)
      return rewriter.notifyMatchFailure(op, "not an 8-bit tile of at most 16 i32 columns");
    const DotInstruction &inst = plan->instruction;
    const int64_t lanes = inst.lanes, group = inst.group;
    Value lhsBytes = materialize(rewriter, plan->lhs);
    Value rhsBytes = materialize(rewriter, plan->rhs);
    bool lhsUnsigned = plan->lhs.isUnsigned, rhsUnsigned = plan->rhs.isUnsigned;
    bool rhsTransposed = plan->rhsTransposed;
    int64_t rows = plan->rows, depth = plan->depth, cols = plan->columns;
    int64_t chunks = llvm::divideCeil(cols, lanes);
    assert(chunks <= kMaxRowChunks && "at most 16 instructions' columns");
    constexpr int64_t poison = vector::ShuffleOp::kPoisonIndex;

    Location loc = op.getLoc();
    auto i32 = rewriter.getI32Type();
    Type element = inst.widened ? rewriter.getI16Type() : rewriter.getI8Type();
    auto operandType = VectorType::get({group * lanes}, element);
    auto words = VectorType::get({lanes}, i32);
    auto intrinsic = rewriter.getStringAttr(inst.intrinsic);
    // Bytes widened to 16 bits by their own signedness (vpmaddwd's form).
    auto widen = [&](Value bytes, bool isUnsigned) -> Value {
      if (!inst.widened)
        return bytes;
      auto type = cast<VectorType>(bytes.getType()).clone(element);
      if (isUnsigned)
        return arith::ExtUIOp::create(rewriter, loc, type, bytes);
      return arith::ExtSIOp::create(rewriter, loc, type, bytes);
    };
    auto columnsOf = [&](int64_t chunk) { return std::min(lanes, cols - chunk * lanes); };
    // The `group` k steps from k0 of the chunk's columns, column after
    // column; the lanes of a narrower chunk past its last column are poison
    // (their sums are dropped).
    auto columns = [&](int64_t k0, int64_t chunk) -> Value {
      int64_t c0 = chunk * lanes, width = columnsOf(chunk);
      SmallVector<int64_t> offsets = rhsTransposed ? SmallVector<int64_t>{c0, k0}
                                                   : SmallVector<int64_t>{k0, c0};
      SmallVector<int64_t> sizes = rhsTransposed ? SmallVector<int64_t>{width, group}
                                                 : SmallVector<int64_t>{group, width};
      Value slice = vector::ExtractStridedSliceOp::create(rewriter, loc, rhsBytes, offsets, sizes,
                                                          ArrayRef<int64_t>{1, 1});
      Value flat = vector::ShapeCastOp::create(
          rewriter, loc, VectorType::get({group * width}, rewriter.getI8Type()), slice);
      if (!(rhsTransposed && width == lanes)) {
        // Interleave the k rows with one byte shuffle (vpermb with AVX-512
        // VBMI, unpacks otherwise) rather than a transpose, which LLVM
        // assembles byte by byte.
        SmallVector<int64_t> mask;
        for (int64_t i = 0; i < group * lanes; ++i) {
          int64_t col = i / group, k = i % group;
          mask.push_back(col >= width ? poison : rhsTransposed ? i : k * width + col);
        }
        flat = vector::ShuffleOp::create(rewriter, loc, flat, flat, mask);
      }
      return widen(flat, rhsUnsigned);
    };
    // Row r's `group` k steps from k0 as one i32, in every lane.
    auto broadcastRow = [&](int64_t r, int64_t k0) -> Value {
      Value row = vector::ExtractOp::create(rewriter, loc, lhsBytes, ArrayRef<int64_t>{r});
      Value steps = vector::ExtractStridedSliceOp::create(rewriter, loc, row,
                                                          ArrayRef<int64_t>{k0},
                                                          ArrayRef<int64_t>{group},
                                                          ArrayRef<int64_t>{1});
      steps = widen(steps, lhsUnsigned);
      Value word = vector::BitCastOp::create(rewriter, loc, VectorType::get({1}, i32), steps);
      Value scalar = vector::ExtractOp::create(rewriter, loc, word, ArrayRef<int64_t>{0});
      Value splat = vector::BroadcastOp::create(rewriter, loc, words, scalar);
      return vector::BitCastOp::create(rewriter, loc, operandType, splat);
    };
    // Accumulator rows in chunks of `lanes` (poison past the last column),
    // each one shuffle of the row: LLVM scalarizes odd-sized strided slices
    // (a 12-column row on AVX2), not shuffles.
    SmallVector<SmallVector<Value>> acc(rows);
    for (int64_t r = 0; r < rows; ++r) {
      Value row = vector::ExtractOp::create(rewriter, loc, op.getAcc(), ArrayRef<int64_t>{r});
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        if (chunks == 1 && cols == lanes) {
          acc[r].push_back(row);
          continue;
        }
        SmallVector<int64_t> mask;
        for (int64_t i = 0; i < lanes; ++i)
          mask.push_back(i < columnsOf(chunk) ? chunk * lanes + i : poison);
        acc[r].push_back(vector::ShuffleOp::create(rewriter, loc, row, row, mask));
      }
    }
    for (int64_t k0 = 0; k0 < depth; k0 += group) {
      SmallVector<Value> column;
      for (int64_t chunk = 0; chunk < chunks; ++chunk)
        column.push_back(columns(k0, chunk));
      for (int64_t r = 0; r < rows; ++r) {
        Value row = broadcastRow(r, k0);
        for (int64_t chunk = 0; chunk < chunks; ++chunk) {
          Value &sum = acc[r][chunk];
          if (!inst.widened) {
            // vpdpbusd(acc, uint8 bytes, int8 bytes).
            Value u = lhsUnsigned ? row : column[chunk], s = lhsUnsigned ? column[chunk] : row;
            sum = LLVM::CallIntrinsicOp::create(rewriter, loc, words, intrinsic,
                                                ValueRange{sum, u, s})
                      ->getResult(0);
            continue;
          }
          // vpmaddwd(row pair, column pairs), then vpaddd.
          Value pairs = LLVM::CallIntrinsicOp::create(rewriter, loc, words, intrinsic,
                                                      ValueRange{row, column[chunk]})
                            ->getResult(0);
          sum = arith::AddIOp::create(rewriter, loc, sum, pairs);
        }
      }
    }
    // The chunks back into rows of `cols`: one shuffle per row (chunks <= 2),
    // else each chunk's columns inserted into the row.
    Value result = op.getAcc();
    for (int64_t r = 0; r < rows; ++r) {
      Value row = acc[r][0];
      if (chunks > 2) {
        row = vector::ExtractOp::create(rewriter, loc, op.getAcc(), ArrayRef<int64_t>{r});
        for (int64_t chunk = 0; chunk < chunks; ++chunk) {
          Value part = acc[r][chunk];
          if (columnsOf(chunk) != lanes)
            part = vector::ExtractStridedSliceOp::create(rewriter, loc, part, ArrayRef<int64_t>{0},
                                                         ArrayRef<int64_t>{columnsOf(chunk)},
                                                         ArrayRef<int64_t>{1});
          row = vector::InsertStridedSliceOp::create(rewriter, loc, part, row,
                                                     ArrayRef<int64_t>{chunk * lanes},
                                                     ArrayRef<int64_t>{1});
        }
      } else if (chunks == 2 || cols != lanes) {
        Value high = chunks == 2 ? acc[r][1] : row;
        SmallVector<int64_t> mask;
        for (int64_t i = 0; i < cols; ++i)
          mask.push_back(i < lanes ? i : lanes + (i - lanes));
        row = vector::ShuffleOp::create(rewriter, loc, row, high, mask);
      }
      result = vector::InsertOp::create(rewriter, loc, row, result, ArrayRef<int64_t>{r});
    }
    rewriter.replaceOp(op, result);
    return success();
  }

  DotISA dot;
};

/// An integer contraction whose byte operands linalg's vectorizer read
/// broadcast into the whole iteration space (vector<M x N x K> each), read
/// again as their plain tiles (vector<M x K>, vector<K x N>) with the maps
/// that say so: outer products then broadcast one operand's element against
/// a row of the other instead of multiplying M x N x K elements and summing
/// along K.
struct ReadByteTilesPlainly : OpRewritePattern<vector::ContractionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &rewriter) const override {
    auto accType = dyn_cast<VectorType>(op.getAccType());
    if (op.getKind() != vector::CombiningKind::ADD || !accType ||
        !accType.getElementType().isInteger(32))
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    SmallVector<int64_t> bounds;
    op.getIterationBounds(bounds);
    std::optional<ByteOperand> lhs = analyzeByteOperand(op.getLhs(), maps[0], bounds);
    std::optional<ByteOperand> rhs = analyzeByteOperand(op.getRhs(), maps[1], bounds);
    if (!lhs || !rhs || (!lhs->reread && !rhs->reread))
      return failure();
    auto operand = [&](const ByteOperand &b) -> Value {
      Value bytes = materialize(rewriter, b);
      if (!b.extended)
        return bytes;
      auto wide = cast<VectorType>(bytes.getType()).clone(rewriter.getI32Type());
      if (b.isUnsigned)
        return arith::ExtUIOp::create(rewriter, op.getLoc(), wide, bytes);
      return arith::ExtSIOp::create(rewriter, op.getLoc(), wide, bytes);
    };
    Value a = operand(*lhs), b = operand(*rhs);
    rewriter.replaceOpWithNewOp<vector::ContractionOp>(
        op, a, b, op.getAcc(), rewriter.getAffineMapArrayAttr({lhs->map, rhs->map, maps[2]}),
        op.getIteratorTypes(), op.getKind());
    return success();
  }
};

} // namespace

void kiln::cpu::populateReadByteTilesPlainlyPatterns(RewritePatternSet &patterns) {
  patterns.add<ReadByteTilesPlainly>(patterns.getContext());
}

bool kiln::cpu::isDotProductContract(Operation *op, DotISA dot,
                                     SmallVectorImpl<Operation *> *operands) {
  auto contract = dyn_cast<vector::ContractionOp>(op);
  if (!contract)
    return false;
  std::optional<DotPlan> plan = analyzeContract(contract, dot);
  if (!plan)
    return false;
  if (operands) {
    for (Value v : {contract.getLhs(), contract.getRhs()})
      if (Operation *def = v.getDefiningOp(); def && isa<arith::ExtSIOp, arith::ExtUIOp>(def))
        operands->push_back(def);
    for (const ByteOperand &b : {plan->lhs, plan->rhs}) {
      if (Operation *def = b.bytes.getDefiningOp())
        operands->push_back(def);
      if (b.transposed)
        operands->push_back(b.transposed);
    }
  }
  return true;
}

/// Whether `v` is a multiple of `factor` by construction: a constant, the
/// induction variable of a loop whose bounds and step are, or sums and
/// products of those.
static bool isMultipleOf(OpFoldResult ofr, int64_t factor) {
  if (std::optional<int64_t> c = getConstantIntValue(ofr))
    return *c % factor == 0;
  auto v = dyn_cast<Value>(ofr);
  if (!v)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    Operation *owner = arg.getOwner()->getParentOp();
    if (auto loop = dyn_cast<scf::ForOp>(owner))
      return arg == loop.getInductionVar() && isMultipleOf(loop.getLowerBound(), factor) &&
             isMultipleOf(loop.getStep(), factor);
    if (auto forall = dyn_cast<scf::ForallOp>(owner)) {
      unsigned i = arg.getArgNumber();
      return i < forall.getRank() && isMultipleOf(forall.getMixedLowerBound()[i], factor) &&
             isMultipleOf(forall.getMixedStep()[i], factor);
    }
    return false;
  }
  if (auto add = v.getDefiningOp<arith::AddIOp>())
    return isMultipleOf(add.getLhs(), factor) && isMultipleOf(add.getRhs(), factor);
  if (auto mul = v.getDefiningOp<arith::MulIOp>())
    return isMultipleOf(mul.getLhs(), factor) || isMultipleOf(mul.getRhs(), factor);
  return false;
}

/// The interleaved copy of `source` ([..., K, N] bytes, static): `[..., K/4,
/// N * 4]`, element (g, 4 n + i) being source's (4 g + i, n), built right
/// after its definition, 16 columns at a time (and the rest). (Its rows are
/// flat so that every transfer of it is one contiguous 1-d vector: a 2-d
/// one of rows of 4 bytes is lowered to one 4-byte move per column.)
static Value buildInterleaved(RewriterBase &rewriter, Value source) {
  auto type = cast<RankedTensorType>(source.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = type.getRank(), k = shape[rank - 2], n = shape[rank - 1];
  SmallVector<int64_t> packedShape(shape.drop_back(2));
  packedShape.append({k / 4, n * 4});
  Location loc = source.getLoc();
  rewriter.setInsertionPointAfterValue(source);
  Value packed = tensor::EmptyOp::create(rewriter, loc, packedShape, type.getElementType());
  Value poison = ub::PoisonOp::create(rewriter, loc, type.getElementType());
  auto cst = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(rewriter, loc, v); };
  // One nest over the outer dims, the k groups and `chunks` column blocks of
  // `width` from column `first`.
  auto nest = [&](Value into, int64_t first, int64_t width, int64_t chunks) -> Value {
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t extent : shape.drop_back(2)) {
      lbs.push_back(cst(0));
      ubs.push_back(cst(extent));
      steps.push_back(cst(1));
    }
    lbs.append({cst(0), cst(0)});
    ubs.append({cst(k / 4), cst(chunks)});
    steps.append({cst(1), cst(1)});
    scf::LoopNest loops = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{into},
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange iters) -> scf::ValueVector {
          Value group = ivs[rank - 2];
          Value column = arith::AddIOp::create(
              b, l, arith::ConstantIndexOp::create(b, l, first),
              arith::MulIOp::create(b, l, ivs[rank - 1], arith::ConstantIndexOp::create(b, l, width)));
          SmallVector<Value> from(ivs.drop_back(2));
          from.push_back(arith::MulIOp::create(b, l, group, arith::ConstantIndexOp::create(b, l, 4)));
          from.push_back(column);
          SmallVector<bool> inBounds = {true, true};
          Value rows = vector::TransferReadOp::create(
              b, l, VectorType::get({4, width}, type.getElementType()), source, from, poison,
              ArrayRef<bool>(inBounds));
          Value flat = vector::ShapeCastOp::create(
              b, l, VectorType::get({4 * width}, type.getElementType()), rows);
          SmallVector<int64_t> mask;
          for (int64_t i = 0; i < 4 * width; ++i)
            mask.push_back((i % 4) * width + i / 4);
          flat = vector::ShuffleOp::create(b, l, flat, flat, mask);
          SmallVector<Value> to(ivs.drop_back(2));
          to.append({group, arith::MulIOp::create(b, l, column,
                                                  arith::ConstantIndexOp::create(b, l, 4))});
          SmallVector<bool> inBoundsRow = {true};
          return {vector::TransferWriteOp::create(b, l, flat, iters[0], to,
                                                  ArrayRef<bool>(inBoundsRow))
                      .getResult()};
        });
    return loops.results.front();
  };
  constexpr int64_t chunk = 16;
  if (n / chunk > 0)
    packed = nest(packed, 0, chunk, n / chunk);
  if (n % chunk != 0)
    packed = nest(packed, n - n % chunk, n % chunk, 1);
  return packed;
}

/// The block of columns an interleaved copy is made of: `base` itself, or
/// its slice at `offsets` / `sizes` (unit strides), taken right before
/// `anchor` (the outermost loop of the workgroup none of the slice's
/// operands depend on, or the op the slice replaces).
struct ColumnBlock {
  Value base;
  SmallVector<OpFoldResult> offsets, sizes;
  Operation *anchor = nullptr;
  bool sliced = false;

  /// Identifies the block: blocks with one key get one copy.
  std::vector<const void *> key() const {
    std::vector<const void *> k = {base.getAsOpaquePointer()};
    for (OpFoldResult ofr : llvm::concat<const OpFoldResult>(offsets, sizes))
      k.push_back(ofr.getOpaqueValue());
    return k;
  }
};

/// The scf.for whose induction variable `v` is, with a zero lower bound and
/// constant bounds (nothing otherwise).
static std::optional<std::pair<scf::ForOp, int64_t>> tileLoopOf(Value v, int64_t size) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg)
    return std::nullopt;
  auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
  if (!loop || arg != loop.getInductionVar())
    return std::nullopt;
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *lb != 0 || *step != size || *ub % *step != 0)
    return std::nullopt;
  return std::make_pair(loop, *ub);
}

/// The column block of the tensor `root` a tile reads through `terms`
/// (per dimension of `root`, the values its index is the sum of), within
/// the workgroup `forall` (or the function). A slice of another tensor
/// taken per iteration of tile loops (its offset in a dimension the loop's
/// induction variable, its size the loop's step: a k step's 4 rows, a
/// column tile) is widened to the whole range of those loops, and the
/// loops' induction variables join the read's index there, so that the
/// block is sliced, and interleaved, outside them.
static ColumnBlock columnBlockOf(Value root, SmallVectorImpl<SmallVector<OpFoldResult>> &terms,
                                 scf::ForallOp forall) {
  ColumnBlock block{root};
  auto slice = root.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice || !slice.hasUnitStride() || slice.getSourceType().getRank() != slice.getType().getRank()) {
    block.anchor = root.getDefiningOp();
    return block;
  }
  block.base = slice.getSource();
  block.sliced = true;
  block.offsets = slice.getMixedOffsets();
  block.sizes = slice.getMixedSizes();
  ArrayRef<int64_t> sourceShape = slice.getSourceType().getShape();
  for (unsigned d = 0; d < block.offsets.size(); ++d) {
    std::optional<int64_t> size = getConstantIntValue(block.sizes[d]);
    auto offset = dyn_cast<Value>(block.offsets[d]);
    if (!size || !offset)
      continue;
    std::optional<std::pair<scf::ForOp, int64_t>> loop = tileLoopOf(offset, *size);
    if (!loop || loop->second > sourceShape[d] || (forall && !forall->isAncestor(loop->first)))
      continue;
    terms[d].insert(terms[d].begin(), offset);
    block.offsets[d] = OpBuilder(slice).getIndexAttr(0);
    block.sizes[d] = OpBuilder(slice).getIndexAttr(loop->second);
  }
  // The outermost enclosing loop of the workgroup that none of the block's
  // values depend on.
  SmallVector<Value> operands = {block.base};
  for (OpFoldResult ofr : llvm::concat<OpFoldResult>(block.offsets, block.sizes))
    if (auto v = dyn_cast<Value>(ofr))
      operands.push_back(v);
  block.anchor = slice;
  while (auto loop = dyn_cast<scf::ForOp>(block.anchor->getParentOp())) {
    if (!llvm::all_of(operands, [&](Value v) { return loop.isDefinedOutsideOfLoop(v); }))
      break;
    block.anchor = loop;
  }
  return block;
}

/// The block's tensor, sliced before its anchor when it is a slice.
static Value materializeBlock(RewriterBase &rewriter, const ColumnBlock &block) {
  if (!block.sliced)
    return block.base;
  rewriter.setInsertionPoint(block.anchor);
  SmallVector<OpFoldResult> strides(block.offsets.size(), rewriter.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(rewriter, block.anchor->getLoc(), block.base,
                                        block.offsets, block.sizes, strides);
}

/// How many times the loops between `anchor` (where the interleaved copy
/// would be built) and `read` read each element of it: the product of the
/// trip counts of those loops that no index of the read depends on (the
/// row tiles of a column block). Unknown trip counts count once.
static int64_t rereads(Operation *anchor, Operation *read,
                       ArrayRef<SmallVector<OpFoldResult>> terms) {
  llvm::SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  llvm::SmallPtrSet<Value, 8> used;
  for (ArrayRef<OpFoldResult> dim : terms)
    for (OpFoldResult term : dim)
      if (auto v = dyn_cast<Value>(term)) {
        used.insert(v);
        if (Operation *def = v.getDefiningOp())
          (void)getBackwardSlice(def, &slice, options);
      }
  for (Operation *op : slice)
    for (Value operand : op->getOperands())
      used.insert(operand);
  int64_t count = 1;
  for (Operation *op = read->getParentOp(); op && op != anchor->getParentOp();
       op = op->getParentOp()) {
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop || used.contains(loop.getInductionVar()))
      continue;
    if (std::optional<APInt> trips = loop.getStaticTripCount())
      count *= trips->getSExtValue();
  }
  return count;
}

void kiln::cpu::interleaveDotProductColumns(Operation *func, RewriterBase &rewriter, DotISA dot) {
  if (dot != DotISA::AVX512VNNI)
    return;
  SmallVector<vector::TransferReadOp> reads;
  func->walk([&](vector::ContractionOp op) {
    std::optional<DotPlan> plan = analyzeContract(op, dot);
    if (!plan || plan->rhsTransposed || plan->instruction.widened || plan->depth != 4 ||
        plan->rhs.reread || plan->rhs.transposed)
      return;
    auto read = plan->rhs.bytes.getDefiningOp<vector::TransferReadOp>();
    if (read && !read.getMask() && read.getPermutationMap().isMinorIdentity() &&
        read.getVectorType().getRank() == 2 &&
        llvm::all_of(read.getInBoundsValues(), [](bool b) { return b; }))
      reads.push_back(read);
  });
  std::map<std::vector<const void *>, Value> interleaved;
  for (vector::TransferReadOp read : reads) {
    // Up the slices to the workgroup's tensor, the read's indices as sums of
    // the slices' offsets per dimension of the current source, and where
    // the read's two dimensions are in it.
    Value source = read.getBase();
    auto rankOf = [](Value v) { return cast<ShapedType>(v.getType()).getRank(); };
    SmallVector<SmallVector<OpFoldResult>> terms;
    for (Value index : read.getIndices())
      terms.push_back({index});
    int64_t kDim = rankOf(source) - 2, nDim = rankOf(source) - 1;
    auto forall = read->getParentOfType<scf::ForallOp>();
    auto inWorkgroup = [&](Value v) {
      Operation *scope = v.getParentBlock()->getParentOp();
      return !forall || forall->isAncestor(scope);
    };
    while (auto slice = source.getDefiningOp<tensor::ExtractSliceOp>()) {
      if (!slice.hasUnitStride() || !inWorkgroup(slice.getSource()) ||
          !isa<OpResult>(slice.getSource()))
        break;
      llvm::SmallBitVector dropped = slice.getDroppedDims();
      SmallVector<SmallVector<OpFoldResult>> next;
      int64_t j = 0, newK = -1, newN = -1;
      for (auto [d, offset] : llvm::enumerate(slice.getMixedOffsets())) {
        SmallVector<OpFoldResult> sum = {offset};
        if (!dropped.test(d)) {
          if (j == kDim)
            newK = d;
          if (j == nDim)
            newN = d;
          sum.append(terms[j++]);
        }
        next.push_back(sum);
      }
      terms = std::move(next);
      kDim = newK;
      nDim = newN;
      source = slice.getSource();
    }
    int64_t rank = rankOf(source);
    if (!isa<OpResult>(source) || !inWorkgroup(source) || kDim != rank - 2 || nDim != rank - 1)
      continue;
    ColumnBlock block = columnBlockOf(source, terms, forall);
    // The block's static shape: [..., K, N] with K a multiple of 4.
    SmallVector<int64_t> shape;
    if (block.sliced) {
      for (OpFoldResult size : block.sizes)
        shape.push_back(getConstantIntValue(size).value_or(ShapedType::kDynamic));
    } else {
      auto type = dyn_cast<RankedTensorType>(source.getType());
      if (!type)
        continue;
      llvm::append_range(shape, type.getShape());
    }
    if (llvm::is_contained(shape, ShapedType::kDynamic) || shape[rank - 2] % 4 != 0 ||
        !llvm::all_of(terms[rank - 2], [](OpFoldResult t) { return isMultipleOf(t, 4); }))
      continue;
    Value &packed = interleaved[block.key()];
    if (!packed) {
      if (rereads(block.anchor, read, terms) < kMinInterleavedRereads)
        continue;
      packed = buildInterleaved(rewriter, materializeBlock(rewriter, block));
    }
    rewriter.setInsertionPoint(read);
    Location loc = read.getLoc();
    auto sum = [&](ArrayRef<OpFoldResult> parts) -> Value {
      Value total;
      for (OpFoldResult part : parts) {
        Value v = getValueOrCreateConstantIndexOp(rewriter, loc, part);
        total = total ? arith::AddIOp::create(rewriter, loc, total, v).getResult() : v;
      }
      return total;
    };
    SmallVector<Value> indices;
    for (int64_t d = 0; d + 2 < rank; ++d)
      indices.push_back(sum(terms[d]));
    indices.push_back(arith::DivUIOp::create(rewriter, loc, sum(terms[rank - 2]),
                                             arith::ConstantIndexOp::create(rewriter, loc, 4)));
    indices.push_back(arith::MulIOp::create(rewriter, loc, sum(terms[rank - 1]),
                                            arith::ConstantIndexOp::create(rewriter, loc, 4)));
    VectorType vectorType = read.getVectorType();
    int64_t width = vectorType.getDimSize(1);
    SmallVector<bool> inBounds = {true};
    Value flat = vector::TransferReadOp::create(
        rewriter, loc, VectorType::get({width * 4}, vectorType.getElementType()), packed, indices,
        read.getPadding(), ArrayRef<bool>(inBounds));
    Value columns = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get({width, 4}, vectorType.getElementType()), flat);
    rewriter.replaceOpWithNewOp<vector::TransposeOp>(read, columns, ArrayRef<int64_t>{1, 0});
  }
}

StringRef kiln::cpu::stringifyDotISA(DotISA dot) {
  switch (dot) {
  case DotISA::None:
    return "none";
  case DotISA::AVX2:
    return "avx2";
  case DotISA::AVX512BW:
    return "avx512bw";
  case DotISA::AVX512VNNI:
    return "avx512vnni";
  }
  llvm_unreachable("unknown DotISA");
}

std::optional<DotISA> kiln::cpu::parseDotISA(StringRef name) {
  for (DotISA dot : {DotISA::None, DotISA::AVX2, DotISA::AVX512BW, DotISA::AVX512VNNI})
    if (name == stringifyDotISA(dot))
      return dot;
  return std::nullopt;
}

void kiln::cpu::populateDotProductPatterns(RewritePatternSet &patterns, DotISA dot) {
  if (dot != DotISA::None)
    patterns.add<ContractToDotProducts>(patterns.getContext(), dot);
}

namespace kiln {
#define GEN_PASS_DEF_KILNCPULOWERDOTPRODUCTS
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln

namespace {
struct KilnCPULowerDotProductsPass
    : kiln::impl::KilnCPULowerDotProductsBase<KilnCPULowerDotProductsPass> {
  using KilnCPULowerDotProductsBase::KilnCPULowerDotProductsBase;

  void runOnOperation() override {
    std::optional<kiln::cpu::DotISA> dot = kiln::cpu::parseDotISA(isaName);
    if (!dot) {
      getOperation().emitError() << "unknown dot-product ISA '" << isaName
                                 << "' (none, avx2, avx512bw, avx512vnni)";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    kiln::cpu::populateDotProductPatterns(patterns, *dot);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
