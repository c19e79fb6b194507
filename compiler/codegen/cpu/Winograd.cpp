//===- Winograd.cpp - kiln-cpu-winograd-kernels ---------------------------===//
//
// The dispatch of a kiln.winograd_input or kiln.winograd_output becomes its
// workgroup loop and a vector kernel, before the lowering to linalg. One
// vector holds one value of L consecutive tiles of a tile row (L =
// vector-lanes), so F(m, 3)'s constant matrices become vector adds and FMAs
// with the zeros skipped; what is strided in the image (a tile's columns
// are m apart) is moved between the image's layout and the one-tile-per-lane
// layout by shuffles.
//
// Input transform, per channel, image and tile row, per block of L tiles:
//
//   src[i][k]  = input row m ty + i - top, columns cs + L k .. + L
//                (cs: the block's first column less `lead` vectors, so
//                that the left padding is whole zero vectors)
//   T[alpha][k] = sum_i BT[alpha][i] src[i][k]             (along rows)
//   ph[alpha][p] lane t = column m t + p of T[alpha]       (m shuffle trees)
//   E[alpha][o] lane t = column m t + o                    (a phase, shifted
//                                                           by a tile)
//   V[alpha][beta] = sum_j BT[beta][j] E[alpha][j - left]  (along columns)
//
// Output transform, per channel, image and tile row, per block:
//
//   R[p][beta] = sum_alpha AT[p][alpha] M[alpha a + beta]
//   Y[p][q]    = sum_beta AT[q][beta] R[p][beta] + bias
//   output row m ty + p, columns m tx0 + L v .. + L: lane l from Y[p][l % m]
//                lane l / m (+ L v / m), then + residual, ReLU, stored
//
// A row of fewer tiles than lanes (a 14x14 image in F(4,3): 4) puts as many
// whole tile rows in a block as fit, lane r * tiles + t for tile t of row r
// (the phases are then skipped: each column vector is picked from the rows'
// sources directly). Workgroups are blocks of channels; the input
// transform's are first split into the halves of alpha (its outer
// workgroup dimension), the points the next batched GEMM splits first.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "kiln/Dialect/Winograd.h"
#include "lowering/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUWINOGRADKERNELS
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
using namespace kiln;

Value indexConst(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// Lane `lane` of vector `vector` of a list; `kAny` for a lane whose value
/// does not matter.
struct Lane {
  static constexpr unsigned kAny = ~0u;
  unsigned vector = kAny;
  int64_t lane = 0;
};

/// The vector whose lane t is `lanes[t]` of `vectors` (all of one type): one
/// shuffle when the lanes come from two vectors or fewer, else a tree of
/// them (each half of the vectors gathered, then merged).
Value pickLanes(OpBuilder &b, Location loc, ArrayRef<Value> vectors, ArrayRef<Lane> lanes) {
  // Zero vectors (the padding) are all one: lanes of any come from the
  // first.
  std::optional<unsigned> firstZero;
  SmallVector<Lane> uniqueLanes(lanes);
  for (Lane &l : uniqueLanes) {
    if (l.vector == Lane::kAny || !matchPattern(vectors[l.vector], m_AnyZeroFloat()))
      continue;
    if (!firstZero)
      firstZero = l.vector;
    l.vector = *firstZero;
  }
  lanes = uniqueLanes;
  SmallVector<unsigned> used;
  for (const Lane &l : lanes)
    if (l.vector != Lane::kAny && !llvm::is_contained(used, l.vector))
      used.push_back(l.vector);
  assert(!used.empty() && "no lane to pick");
  int64_t width = cast<VectorType>(vectors[used[0]].getType()).getNumElements();
  if (used.size() <= 2) {
    Value first = vectors[used[0]];
    Value second = used.size() == 2 ? vectors[used[1]] : first;
    SmallVector<int64_t> mask;
    bool identity = used.size() == 1 && int64_t(lanes.size()) == width;
    for (auto [t, l] : llvm::enumerate(lanes)) {
      int64_t lane = l.vector == Lane::kAny ? int64_t(t) % width : l.lane;
      identity &= lane == int64_t(t);
      mask.push_back(l.vector == used[0] || l.vector == Lane::kAny ? lane : width + lane);
    }
    if (identity)
      return first;
    return vector::ShuffleOp::create(b, loc, first, second, mask);
  }
  size_t half = used.size() / 2;
  ArrayRef<unsigned> low = ArrayRef(used).take_front(half);
  SmallVector<Lane> lowLanes, highLanes;
  for (const Lane &l : lanes) {
    bool isLow = llvm::is_contained(low, l.vector);
    lowLanes.push_back(isLow ? l : Lane{});
    highLanes.push_back(isLow ? Lane{} : l);
  }
  Value lo = pickLanes(b, loc, vectors, lowLanes);
  Value hi = pickLanes(b, loc, vectors, highLanes);
  SmallVector<int64_t> mask;
  int64_t n = lanes.size();
  for (auto [t, l] : llvm::enumerate(lanes))
    mask.push_back(llvm::is_contained(low, l.vector) ? int64_t(t) : n + int64_t(t));
  return vector::ShuffleOp::create(b, loc, lo, hi, mask);
}

/// Emits the kernels of one dispatch function.
class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc, int64_t lanes)
      : b(b), loc(loc), lanes(lanes), f32(b.getF32Type()),
        vectorType(VectorType::get({lanes}, b.getF32Type())) {}

  /// sum_i coefs[i] values[i], null values being zeros and zero
  /// coefficients skipped; null when every term is zero.
  Value combine(ArrayRef<double> coefs, ArrayRef<Value> values) {
    Value acc;
    for (auto [c, v] : llvm::zip(coefs, values)) {
      if (c == 0 || !v)
        continue;
      if (!acc) {
        acc = c == 1    ? v
              : c == -1 ? arith::NegFOp::create(b, loc, v).getResult()
                        : arith::MulFOp::create(b, loc, v, splat(c)).getResult();
        continue;
      }
      if (c == 1)
        acc = arith::AddFOp::create(b, loc, acc, v);
      else if (c == -1)
        acc = arith::SubFOp::create(b, loc, acc, v);
      else
        acc = vector::FMAOp::create(b, loc, v, splat(c), acc);
    }
    return acc;
  }

  Value splat(double value) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(vectorType, b.getFloatAttr(f32, value)));
  }
  Value orZero(Value v) { return v ? v : splat(0.0); }

  /// A row of `lanes` elements of `source` at `indices` (the last index the
  /// first column); lanes past the last dimension's end read as zeros.
  Value readRow(Value source, ArrayRef<Value> indices) {
    auto rank = cast<ShapedType>(source.getType()).getRank();
    return vector::TransferReadOp::create(b, loc, vectorType, source, indices,
                                          arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0)),
                                          AffineMap::getMinorIdentityMap(rank, 1, b.getContext()),
                                          ArrayRef<bool>{false});
  }

  /// `value` written to `dest` at `indices`: its first `valid` lanes when
  /// given, else those within the last dimension.
  Value writeRow(Value value, Value dest, ArrayRef<Value> indices,
                 std::optional<int64_t> valid = std::nullopt) {
    auto rank = cast<ShapedType>(dest.getType()).getRank();
    Value mask;
    if (valid && *valid < lanes)
      mask = vector::ConstantMaskOp::create(b, loc, VectorType::get({lanes}, b.getI1Type()),
                                            ArrayRef<int64_t>{*valid});
    return vector::TransferWriteOp::create(
               b, loc, value, dest, indices,
               AffineMapAttr::get(AffineMap::getMinorIdentityMap(rank, 1, b.getContext())), mask,
               b.getBoolArrayAttr({valid.has_value()}))
        .getResult();
  }

  Value add(Value lhs, int64_t rhs) {
    return rhs == 0 ? lhs : arith::AddIOp::create(b, loc, lhs, indexConst(b, loc, rhs)).getResult();
  }
  Value mul(Value lhs, int64_t rhs) {
    return rhs == 1 ? lhs : arith::MulIOp::create(b, loc, lhs, indexConst(b, loc, rhs)).getResult();
  }

  /// The workgroup loop: dimension `splits[i].first` of the result in
  /// `splits[i].second` blocks (the first split the outermost: consecutive
  /// workgroups share it); `body(offsets, slice)` returns the computed
  /// slice, whose offsets along the split dimensions are `offsets`.
  Value workgroupLoop(RankedTensorType type, ArrayRef<std::pair<unsigned, int64_t>> splits,
                      function_ref<Value(ArrayRef<Value> offsets, Value slice)> body) {
    SmallVector<OpFoldResult> lbs, ubs, steps;
    for (auto [dim, count] : splits) {
      lbs.push_back(b.getIndexAttr(0));
      ubs.push_back(b.getIndexAttr(type.getDimSize(dim)));
      steps.push_back(b.getIndexAttr(type.getDimSize(dim) / count));
    }
    Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), f32);
    auto forall = scf::ForallOp::create(b, loc, lbs, ubs, steps, ValueRange{empty}, std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)), sizes, strides;
    for (int64_t size : type.getShape()) {
      sizes.push_back(b.getIndexAttr(size));
      strides.push_back(b.getIndexAttr(1));
    }
    SmallVector<Value> ivs;
    for (auto [i, split] : llvm::enumerate(splits)) {
      ivs.push_back(forall.getInductionVar(i));
      offsets[split.first] = ivs.back();
      sizes[split.first] = steps[i];
    }
    Value shared = forall.getRegionIterArgs()[0];
    Value slice = tensor::ExtractSliceOp::create(b, loc, shared, offsets, sizes, strides);
    Value result = body(ivs, slice);
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(b, loc, result, shared, offsets, sizes, strides);
    return forall.getResult(0);
  }

  /// `then(acc)` when `cond`, else `otherwise(acc)`.
  Value select(Value cond, Value acc, function_ref<Value(Value)> then,
               function_ref<Value(Value)> otherwise) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{acc.getType()}, cond, /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    scf::YieldOp::create(b, loc, then(acc));
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(b, loc, otherwise(acc));
    return ifOp.getResult(0);
  }

  /// for iv in [lb, ub) step `step`: acc = body(iv, acc).
  Value loop(int64_t lb, int64_t ub, Value init, function_ref<Value(Value iv, Value acc)> body,
             int64_t step = 1) {
    auto forOp = scf::ForOp::create(b, loc, indexConst(b, loc, lb), indexConst(b, loc, ub),
                                    indexConst(b, loc, step), ValueRange{init});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forOp.getBody());
    Value result = body(forOp.getInductionVar(), forOp.getRegionIterArgs()[0]);
    scf::YieldOp::create(b, loc, result);
    return forOp.getResult(0);
  }

  OpBuilder &b;
  Location loc;
  int64_t lanes;
  Type f32;
  VectorType vectorType;
};

/// The most workgroups, at most `target`, that divide `channels`.
int64_t workgroupCount(int64_t channels, int64_t target) {
  for (int64_t count = std::min(channels, std::max<int64_t>(target, 1)); count > 1; --count)
    if (channels % count == 0)
      return count;
  return 1;
}

/// Blocks of `rows` tile rows (the last one shorter) from 0 to `tileRows`:
/// those for which `inside(ty0)` holds (every image row they touch is
/// inside) run as loops, `block(ty0, nullopt, rows)`; the others are
/// emitted with their first row known, `block(ty0, ty0, rows in block)`.
Value tileRowBlocks(KernelBuilder &k, int64_t tileRows, int64_t rows, Value acc,
                    function_ref<bool(int64_t)> inside,
                    function_ref<Value(Value acc, Value ty0, std::optional<int64_t>, int64_t)> block) {
  for (int64_t ty0 = 0; ty0 < tileRows;) {
    int64_t end = ty0;
    while (end + rows <= tileRows && inside(end))
      end += rows;
    if (end > ty0) {
      acc = k.loop(ty0, end, acc, [&](Value ty, Value acc) { return block(acc, ty, std::nullopt, rows); },
                   rows);
      ty0 = end;
      continue;
    }
    int64_t n = std::min(rows, tileRows - ty0);
    acc = block(acc, indexConst(k.b, k.loc, ty0), ty0, n);
    ty0 += n;
  }
  return acc;
}

/// Blocks of tile columns beyond which the middle ones (neither the first,
/// which reads the left padding, nor the last, which may be partial) run as
/// a loop instead of being unrolled: code size stays bounded for wide
/// images.
constexpr int64_t kUnrolledColumnBlocks = 4;

/// The column blocks of `lanes` tiles of a row of `rowTiles`:
/// `block(acc, tx0, tx0 when static, tiles)`.
Value columnBlocks(
    KernelBuilder &k, int64_t rowTiles, Value acc,
    function_ref<Value(Value acc, Value tx0, std::optional<int64_t> tx0Static, int64_t tiles)> block) {
  int64_t lanes = k.lanes, blocks = llvm::divideCeil(rowTiles, lanes);
  auto staticBlock = [&](Value acc, int64_t blk) {
    int64_t tx0 = blk * lanes;
    return block(acc, indexConst(k.b, k.loc, tx0), tx0, std::min(lanes, rowTiles - tx0));
  };
  if (blocks <= kUnrolledColumnBlocks) {
    for (int64_t blk = 0; blk < blocks; ++blk)
      acc = staticBlock(acc, blk);
    return acc;
  }
  acc = staticBlock(acc, 0);
  acc = k.loop(lanes, (blocks - 1) * lanes, acc,
               [&](Value tx0, Value acc) { return block(acc, tx0, std::nullopt, lanes); }, lanes);
  return staticBlock(acc, blocks - 1);
}

struct KilnCPUWinogradKernelsPass
    : kiln::impl::KilnCPUWinogradKernelsBase<KilnCPUWinogradKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kDispatchAttr))
      return;
    Operation *transform = nullptr;
    for (Operation &op : func.getBody().front())
      if (isa<WinogradInputOp, WinogradOutputOp>(op))
        transform = &op;
    if (!transform)
      return;
    for (Operation &op : func.getBody().front())
      if (&op != transform && !isa<ConstantOp, func::ReturnOp>(op)) {
        op.emitError("a Winograd transform is a dispatch of its own, but this dispatch also has ")
            << op.getName();
        return signalPassFailure();
      }
    if (vectorLanes < 4) {
      func.emitError("vector-lanes must be at least 4");
      return signalPassFailure();
    }
    OpBuilder b(transform);
    KernelBuilder k(b, transform->getLoc(), vectorLanes);
    auto [result, count, flops] = isa<WinogradInputOp>(transform)
                                      ? buildInput(k, cast<WinogradInputOp>(transform))
                                      : buildOutput(k, cast<WinogradOutputOp>(transform));
    transform->getResult(0).replaceAllUsesWith(result);
    transform->erase();
    func->setAttr(kWorkgroupCountAttr, b.getI64IntegerAttr(count));
    func->setAttr(kFlopsAttr, b.getI64IntegerAttr(flops));
  }

  struct Built {
    Value result;
    int64_t workgroups, flops;
  };

  /// Tile rows per block: as many whole rows as fill a vector when a row
  /// has fewer tiles than lanes (14x14 images in F(4,3): 4 rows of 4), else
  /// one, in blocks of `lanes` tiles.
  static int64_t rowsPerBlock(int64_t rowTiles, int64_t lanes) {
    return rowTiles < lanes ? std::max<int64_t>(1, lanes / rowTiles) : 1;
  }

  Built buildInput(KernelBuilder &k, WinogradInputOp op) {
    OpBuilder &b = k.b;
    Location loc = k.loc;
    auto inType = op.getInput().getType();
    auto outType = op.getResult().getType();
    int64_t n = inType.getDimSize(0), c = inType.getDimSize(1), h = inType.getDimSize(2),
            w = inType.getDimSize(3);
    WinogradMatrices wm = winogradMatrices(op.getTile());
    int64_t m = wm.m, a = wm.a, lanes = k.lanes;
    ArrayRef<int64_t> pads = op.getPads();
    int64_t top = pads[0], left = pads[1];
    int64_t th = winogradTiles(h + pads[0] + pads[2] - 2, m);
    int64_t tw = winogradTiles(w + pads[1] + pads[3] - 2, m);
    int64_t rowsPer = rowsPerBlock(tw, lanes);
    // Leading source vectors, so that column `left` before the block is in
    // a source: columns cs + L s with cs = m L blk - L lead.
    int64_t lead = llvm::divideCeil(left, lanes);
    int64_t sources = (lead * lanes + m * (lanes - 1) + a - 1 - left) / lanes + 1;
    auto bt = [&](int64_t r) { return ArrayRef(wm.bt).slice(r * a, a); };
    Value input = op.getInput();
    int64_t count = workgroupCount(c, std::max<int64_t>(1, workgroups / 2));

    // A block of `rows` tile rows from `ty0` (`tyStatic` at the border: the
    // image rows outside known), each of `tiles` tiles from `tx0`, one tile
    // per lane.
    auto block = [&](Value acc, int64_t alphaBegin, int64_t alphaEnd, Value ci, Value ch,
                     Value img, Value ty0, std::optional<int64_t> tyStatic, int64_t rows,
                     Value tx0, std::optional<int64_t> tx0Static, int64_t tiles) -> Value {
      // The first column of source 0: m tx0 - L lead (a middle block's,
      // known only at run time, is past the left padding).
      std::optional<int64_t> cs;
      if (tx0Static)
        cs = m * *tx0Static - lead * lanes;
      Value csValue = k.add(k.mul(tx0, m), -lead * lanes);
      int64_t used = rows * tiles;
      // Source vector s of tile row r: candidate r * sources + s.
      SmallVector<bool> needed(rows * sources, false);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < tiles; ++t)
          for (int64_t o = -left; o < a - left; ++o)
            needed[r * sources + (lead * lanes + m * t + o) / lanes] = true;
      SmallVector<SmallVector<Value>> src(a, SmallVector<Value>(rows * sources));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < a; ++i) {
          if (tyStatic) {
            int64_t row = m * (*tyStatic + r) + i - top;
            if (row < 0 || row >= h)
              continue;
          }
          Value row = k.add(k.mul(ty0, m), m * r + i - top);
          for (int64_t s = 0; s < sources; ++s) {
            if (!needed[r * sources + s] ||
                (cs && (*cs + lanes * s < 0 || *cs + lanes * s >= w)))
              continue;
            src[i][r * sources + s] =
                k.readRow(input, {img, ch, row, k.add(csValue, lanes * s)});
          }
        }
      auto fromSource = [&](int64_t r, int64_t rel) {
        return Lane{unsigned(r * sources + rel / lanes), rel % lanes};
      };
      SmallVector<Value> v;
      for (int64_t alpha = alphaBegin; alpha < alphaEnd; ++alpha) {
        // Along the rows.
        SmallVector<Value> t(rows * sources);
        for (int64_t j = 0; j < rows * sources; ++j) {
          SmallVector<Value> column;
          for (int64_t i = 0; i < a; ++i)
            column.push_back(src[i][j]);
          t[j] = k.combine(bt(alpha), column);
        }
        SmallVector<Value> e(a);
        if (llvm::any_of(t, [](Value x) { return bool(x); })) {
          SmallVector<Value> candidates;
          for (Value x : t)
            candidates.push_back(k.orZero(x));
          // One row: the m phases (column m t + p) first, each other column
          // a phase shifted by a tile.
          if (rows == 1)
            for (int64_t p = 0; p < m; ++p) {
              SmallVector<Lane> picks(lanes);
              for (int64_t q = 0; q < tiles; ++q)
                picks[q] = fromSource(0, lead * lanes + m * q + p);
              candidates.push_back(pickLanes(b, loc, candidates, picks));
            }
          for (int64_t o = -left; o < a - left; ++o) {
            int64_t shift = llvm::divideFloorSigned(o, m), p = o - shift * m;
            SmallVector<Lane> picks(lanes);
            for (int64_t lane = 0; lane < used; ++lane) {
              int64_t r = lane / tiles, q = lane % tiles;
              picks[lane] = rows == 1 && q + shift >= 0 && q + shift < tiles
                                ? Lane{unsigned(sources + p), q + shift}
                                : fromSource(r, lead * lanes + m * q + o);
            }
            e[o + left] = pickLanes(b, loc, candidates, picks);
          }
        }
        // Along the columns.
        for (int64_t beta = 0; beta < a; ++beta)
          v.push_back(k.combine(bt(beta), e));
      }
      Value tile0 = arith::AddIOp::create(
          b, loc, k.mul(arith::AddIOp::create(b, loc, k.mul(img, th), ty0), tw), tx0);
      for (auto [point, value] : llvm::enumerate(v))
        acc = k.writeRow(k.orZero(value), acc, {indexConst(b, loc, point), ci, tile0}, used);
      return acc;
    };

    // Blocks whose image rows are all inside: m ty0 - top >= 0 and
    // m (ty0 + rows - 1) + a - 1 - top < h.
    auto inside = [&](int64_t ty0) {
      return m * ty0 - top >= 0 && m * (ty0 + rowsPer - 1) + a - 1 - top < h;
    };
    // The rows of alpha in two halves, the outer workgroup dimension: the
    // batched GEMM next splits its points first, so with two threads each
    // core writes the points it then reads (in its own cache); the input
    // rows are read twice, the arithmetic is not repeated.
    auto alphaRows = [&](int64_t alphaBegin, int64_t alphaEnd, Value c0, Value slice) {
      return k.loop(0, c / count, slice, [&](Value ci, Value acc) {
        Value ch = arith::AddIOp::create(b, loc, c0, ci);
        return k.loop(0, n, acc, [&](Value img, Value acc) {
          return tileRowBlocks(
              k, th, rowsPer, acc, inside,
              [&](Value acc, Value ty0, std::optional<int64_t> tyStatic, int64_t rows) {
                if (rowsPer > 1)
                  return block(acc, alphaBegin, alphaEnd, ci, ch, img, ty0, tyStatic, rows,
                               indexConst(b, loc, 0), 0, tw);
                return columnBlocks(k, tw, acc, [&](Value acc, Value tx0,
                                                    std::optional<int64_t> tx0Static,
                                                    int64_t tiles) {
                  return block(acc, alphaBegin, alphaEnd, ci, ch, img, ty0, tyStatic, 1, tx0,
                               tx0Static, tiles);
                });
              });
        });
      });
    };
    int64_t half = a / 2;
    Value result = k.workgroupLoop(
        outType, {{0, 2}, {1, count}}, [&](ArrayRef<Value> offsets, Value slice) {
          Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, offsets[0],
                                              indexConst(b, loc, 0));
          return k.select(
              first, slice, [&](Value acc) { return alphaRows(0, half, offsets[1], acc); },
              [&](Value acc) { return alphaRows(half, a, offsets[1], acc); });
        });
    count *= 2;
    // Both stages: a * a outputs of a multiply-adds per tile and channel.
    return {result, count, 4 * a * a * a * c * n * th * tw};
  }

  Built buildOutput(KernelBuilder &k, WinogradOutputOp op) {
    OpBuilder &b = k.b;
    Location loc = k.loc;
    auto outType = op.getResult().getType();
    int64_t n = outType.getDimSize(0), f = outType.getDimSize(1), oh = outType.getDimSize(2),
            ow = outType.getDimSize(3);
    WinogradMatrices wm = winogradMatrices(op.getTile());
    int64_t m = wm.m, a = wm.a, lanes = k.lanes;
    int64_t th = winogradTiles(oh, m), tw = winogradTiles(ow, m);
    int64_t rowsPer = rowsPerBlock(tw, lanes);
    auto at = [&](int64_t r) { return ArrayRef(wm.at).slice(r * a, a); };
    Value product = op.getInput(), bias = op.getBias(), residual = op.getResidual();
    bool relu = op.getRelu();
    int64_t count = workgroupCount(f, workgroups);

    // A block of `rows` tile rows from `ty0` (`tyStatic` for the last,
    // whose output rows past the image are not stored), each of `tiles`
    // tiles from `tx0`.
    auto block = [&](Value acc, Value fi, Value fo, Value img, Value ty0,
                     std::optional<int64_t> tyStatic, int64_t rows, Value tx0,
                     std::optional<int64_t> tx0Static, int64_t tiles, Value biasValue) -> Value {
      Value tile0 = arith::AddIOp::create(
          b, loc, k.mul(arith::AddIOp::create(b, loc, k.mul(img, th), ty0), tw), tx0);
      SmallVector<Value> mv;
      for (int64_t point = 0; point < a * a; ++point)
        mv.push_back(k.readRow(product, {indexConst(b, loc, point), fo, tile0}));
      for (int64_t p = 0; p < m; ++p) {
        // R[p][beta] along alpha, then Y[p][q] along beta.
        SmallVector<Value> r(a);
        for (int64_t beta = 0; beta < a; ++beta) {
          SmallVector<Value> column;
          for (int64_t alpha = 0; alpha < a; ++alpha)
            column.push_back(mv[alpha * a + beta]);
          r[beta] = k.combine(at(p), column);
        }
        SmallVector<Value> y;
        for (int64_t q = 0; q < m; ++q) {
          Value value = k.orZero(k.combine(at(q), r));
          if (biasValue)
            value = arith::AddFOp::create(b, loc, value, biasValue);
          y.push_back(value);
        }
        for (int64_t rr = 0; rr < rows; ++rr) {
          if (tyStatic && m * (*tyStatic + rr) + p >= oh)
            continue;
          Value row = k.add(k.mul(ty0, m), m * rr + p);
          for (int64_t vec = 0; vec * lanes < m * tiles; ++vec) {
            // (A middle block's columns are all inside the image.)
            if (tx0Static && m * *tx0Static + vec * lanes >= ow)
              break;
            Value col = k.add(k.mul(tx0, m), vec * lanes);
            SmallVector<Lane> picks;
            for (int64_t l = 0; l < lanes; ++l) {
              int64_t rel = vec * lanes + l, q = rel / m;
              picks.push_back(q < tiles ? Lane{unsigned(rel % m), rr * tiles + q} : Lane{});
            }
            Value out = pickLanes(b, loc, y, picks);
            SmallVector<Value> indices = {img, fo, row, col};
            if (residual)
              out = arith::AddFOp::create(b, loc, out, k.readRow(residual, indices));
            if (relu)
              out = arith::MaximumFOp::create(b, loc, out, k.splat(0.0));
            indices[1] = fi;
            acc = k.writeRow(out, acc, indices);
          }
        }
      }
      return acc;
    };

    // Blocks whose output rows are all inside.
    auto inside = [&](int64_t ty0) { return m * (ty0 + rowsPer) <= oh; };
    Value result = k.workgroupLoop(outType, {{1, count}}, [&](ArrayRef<Value> offsets, Value slice) {
      return k.loop(0, f / count, slice, [&](Value fi, Value acc) {
        Value fo = arith::AddIOp::create(b, loc, offsets[0], fi);
        Value biasValue;
        if (bias) {
          Value scalar = tensor::ExtractOp::create(b, loc, bias, ValueRange{fo});
          biasValue = vector::BroadcastOp::create(b, loc, k.vectorType, scalar);
        }
        return k.loop(0, n, acc, [&](Value img, Value acc) {
          return tileRowBlocks(
              k, th, rowsPer, acc, inside,
              [&](Value acc, Value ty0, std::optional<int64_t> tyStatic, int64_t rows) {
                if (rowsPer > 1)
                  return block(acc, fi, fo, img, ty0, tyStatic, rows, indexConst(b, loc, 0), 0,
                               tw, biasValue);
                return columnBlocks(k, tw, acc, [&](Value acc, Value tx0,
                                                    std::optional<int64_t> tx0Static,
                                                    int64_t tiles) {
                  return block(acc, fi, fo, img, ty0, tyStatic, 1, tx0, tx0Static, tiles,
                               biasValue);
                });
              });
        });
      });
    });
    // A^T M A per tile and channel, then the bias, residual and ReLU per
    // output.
    int64_t epilogue = (bias ? 1 : 0) + (residual ? 1 : 0) + (relu ? 1 : 0);
    return {result, count,
            (2 * (m * a * a + m * m * a) * th * tw + epilogue * oh * ow) * n * f};
  }
};

} // namespace
