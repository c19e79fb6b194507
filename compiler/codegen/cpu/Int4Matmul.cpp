//===- Int4Matmul.cpp - vector kernels for grouped 4-bit weights ----------===//
//
// kiln-cpu-lower-int4-matmuls: the linalg.generic of a kiln.matmul_int4
// (marked kiln.int4_matmul), on memrefs after bufferization, becomes an
// explicit vector kernel. The weights are dequantized in registers, 16 per
// vector, as they stream past: the bytes are the only copy of them that
// ever reaches memory.
//
//   for n0 in full blocks of 16 * vectors columns (then of 16):
//     for m0 in blocks of `rows` rows (then single rows):
//       acc[r][v] = out[m0 + r, n0 + 16 v : +16]
//       for g:                                  (groups along K)
//         s[v], z[v] = scale[g, ..], zero[g, ..]
//         for j:                                (byte rows of the group)
//           lo, hi = the nibbles of weights[g, j, ..] -> (code - z) * s
//           acc[r][v] += lhs[m0 + r, g, 0, j] * lo + lhs[m0 + r, g, 1, j] * hi
//       out[..] = acc
//   the columns after the last full 16: the generic on their subviews.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "lowering/Passes.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNCPULOWERINT4MATMULS
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

constexpr int64_t kLanes = 16;

/// The kernel of one generic: its operands and kernel shape.
struct Int4Kernel {
  Value lhs, weights, scale, zero, out;
  Type elem;
  int64_t vectors;

  VectorType floats() const { return VectorType::get({kLanes}, elem); }

  /// Rows m0 .. m0 + rows - 1 of the column block at n0.
  void emitRows(ImplicitLocOpBuilder &b, Value m0, Value n0, int64_t rows) const {
    Value zeroIdx = arith::ConstantIndexOp::create(b, 0);
    Value oneIdx = arith::ConstantIndexOp::create(b, 1);
    auto column = [&](int64_t v) -> Value {
      return v == 0 ? n0
                    : Value(arith::AddIOp::create(b, n0, arith::ConstantIndexOp::create(b, v * kLanes)));
    };
    auto row = [&](int64_t r) -> Value {
      return r == 0 ? m0
                    : Value(arith::AddIOp::create(b, m0, arith::ConstantIndexOp::create(b, r)));
    };
    SmallVector<Value> columns, rowIdx;
    for (int64_t v = 0; v < vectors; ++v)
      columns.push_back(column(v));
    for (int64_t r = 0; r < rows; ++r)
      rowIdx.push_back(row(r));
    Value fpad = arith::ConstantOp::create(b, b.getFloatAttr(elem, 0.0));
    Value bpad = arith::ConstantOp::create(b, b.getI8IntegerAttr(0));
    auto read = [&](ImplicitLocOpBuilder &at, Value base, ValueRange indices, Type element,
                    Value pad) -> Value {
      return vector::TransferReadOp::create(at, VectorType::get({kLanes}, element), base,
                                            indices, pad, ArrayRef<bool>{true});
    };
    SmallVector<Value> acc;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        acc.push_back(read(b, out, {rowIdx[r], columns[v]}, elem, fpad));

    Value groups = memref::DimOp::create(b, weights, 0);
    Value halves = memref::DimOp::create(b, weights, 1);
    auto groupLoop = scf::ForOp::create(
        b, zeroIdx, groups, oneIdx, acc,
        [&](OpBuilder &nb, Location loc, Value g, ValueRange groupAcc) {
          ImplicitLocOpBuilder gb(loc, nb);
          SmallVector<Value> s, z;
          for (int64_t v = 0; v < vectors; ++v) {
            s.push_back(read(gb, scale, {g, columns[v]}, elem, fpad));
            z.push_back(read(gb, zero, {g, columns[v]}, elem, fpad));
          }
          auto i32s = VectorType::get({kLanes}, gb.getI32Type());
          Value fifteen = arith::ConstantOp::create(gb, DenseElementsAttr::get(i32s, gb.getI32IntegerAttr(15).getValue()));
          Value four = arith::ConstantOp::create(gb, DenseElementsAttr::get(i32s, gb.getI32IntegerAttr(4).getValue()));
          Value low = arith::ConstantIndexOp::create(gb, 0), high = arith::ConstantIndexOp::create(gb, 1);
          auto byteLoop = scf::ForOp::create(
              gb, arith::ConstantIndexOp::create(gb, 0), halves,
              arith::ConstantIndexOp::create(gb, 1), groupAcc,
              [&](OpBuilder &jb0, Location jloc, Value j, ValueRange byteAcc) {
                ImplicitLocOpBuilder jb(jloc, jb0);
                SmallVector<Value> wl, wh;
                for (int64_t v = 0; v < vectors; ++v) {
                  Value bytes = read(jb, weights, {g, j, columns[v]}, jb.getI8Type(), bpad);
                  Value wide = arith::ExtUIOp::create(jb, i32s, bytes);
                  Value lo = arith::AndIOp::create(jb, wide, fifteen);
                  Value hi = arith::ShRUIOp::create(jb, wide, four);
                  auto dequant = [&](Value code) -> Value {
                    Value f = arith::UIToFPOp::create(jb, floats(), code);
                    return arith::MulFOp::create(jb, arith::SubFOp::create(jb, f, z[v]), s[v]);
                  };
                  wl.push_back(dequant(lo));
                  wh.push_back(dequant(hi));
                }
                SmallVector<Value> next(byteAcc);
                for (int64_t r = 0; r < rows; ++r) {
                  Value a0 = memref::LoadOp::create(jb, lhs, ValueRange{rowIdx[r], g, low, j});
                  Value a1 = memref::LoadOp::create(jb, lhs, ValueRange{rowIdx[r], g, high, j});
                  Value b0 = vector::BroadcastOp::create(jb, floats(), a0);
                  Value b1 = vector::BroadcastOp::create(jb, floats(), a1);
                  for (int64_t v = 0; v < vectors; ++v) {
                    Value &a = next[r * vectors + v];
                    a = vector::FMAOp::create(jb, b0, wl[v], a);
                    a = vector::FMAOp::create(jb, b1, wh[v], a);
                  }
                }
                scf::YieldOp::create(jb, next);
              });
          scf::YieldOp::create(gb, byteLoop.getResults());
        });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        vector::TransferWriteOp::create(b, groupLoop.getResult(r * vectors + v), out,
                                        ValueRange{rowIdx[r], columns[v]}, ArrayRef<bool>{true});
  }
};

/// `lo + (hi - lo) - (hi - lo) mod step`: the end of the full steps.
Value fullEnd(ImplicitLocOpBuilder &b, Value lo, Value hi, int64_t step) {
  Value span = arith::SubIOp::create(b, hi, lo);
  Value rest = arith::RemUIOp::create(b, span, arith::ConstantIndexOp::create(b, step));
  return arith::SubIOp::create(b, hi, rest);
}

LogicalResult lowerInt4Matmul(RewriterBase &rewriter, linalg::GenericOp op, int64_t rows,
                              int64_t vectors) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 4 || op.getNumDpsInits() != 1)
    return op.emitOpError("kiln.int4_matmul: expected the generic of a kiln.matmul_int4 on memrefs");
  Int4Kernel kernel{op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInputs()[2],
                    op.getDpsInputs()[3], op.getDpsInits()[0],
                    getElementTypeOrSelf(op.getDpsInits()[0].getType()), vectors};
  if (!isa<FloatType>(kernel.elem))
    return op.emitOpError("kiln.int4_matmul: expected a float result");
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  b.setInsertionPoint(op);
  Value zeroIdx = arith::ConstantIndexOp::create(b, 0);
  Value m = memref::DimOp::create(b, kernel.out, 0);
  Value n = memref::DimOp::create(b, kernel.out, 1);
  // Column blocks of `vectors` x 16, then of 16, then the rest.
  auto columnLoop = [&](Value from, Value to, int64_t count) {
    Int4Kernel k = kernel;
    k.vectors = count;
    scf::ForOp::create(
        b, from, to, arith::ConstantIndexOp::create(b, kLanes * count), ValueRange{},
        [&](OpBuilder &nb, Location loc, Value n0, ValueRange) {
          ImplicitLocOpBuilder cb(loc, nb);
          Value mFull = fullEnd(cb, arith::ConstantIndexOp::create(cb, 0), m, rows);
          scf::ForOp::create(cb, arith::ConstantIndexOp::create(cb, 0), mFull,
                             arith::ConstantIndexOp::create(cb, rows), ValueRange{},
                             [&](OpBuilder &rb, Location rloc, Value m0, ValueRange) {
                               ImplicitLocOpBuilder kb(rloc, rb);
                               k.emitRows(kb, m0, n0, rows);
                               scf::YieldOp::create(kb);
                             });
          if (rows > 1)
            scf::ForOp::create(cb, mFull, m, arith::ConstantIndexOp::create(cb, 1), ValueRange{},
                               [&](OpBuilder &rb, Location rloc, Value m0, ValueRange) {
                                 ImplicitLocOpBuilder kb(rloc, rb);
                                 k.emitRows(kb, m0, n0, 1);
                                 scf::YieldOp::create(kb);
                               });
          scf::YieldOp::create(cb);
        });
  };
  Value nWide = fullEnd(b, zeroIdx, n, kLanes * vectors);
  columnLoop(zeroIdx, nWide, vectors);
  Value nFull = nWide;
  if (vectors > 1) {
    nFull = fullEnd(b, zeroIdx, n, kLanes);
    columnLoop(nWide, nFull, 1);
  }
  int64_t width = kLanes;
  // The last columns: the generic itself on their subviews (unless none
  // can be left).
  std::optional<int64_t> staticN = getConstantIntValue(getAsOpFoldResult(n));
  if (!staticN || *staticN % width != 0) {
    Value rest = arith::SubIOp::create(b, n, nFull);
    auto columns = [&](Value base) -> Value {
      auto type = cast<MemRefType>(base.getType());
      int64_t rank = type.getRank();
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes, strides(rank, b.getIndexAttr(1));
      for (int64_t d = 0; d < rank; ++d)
        sizes.push_back(d == rank - 1 ? OpFoldResult(rest)
                                      : OpFoldResult(memref::getMixedSize(b, b.getLoc(), base, d)));
      offsets.back() = nFull;
      return memref::SubViewOp::create(b, base, offsets, sizes, strides);
    };
    SmallVector<Value> operands = {kernel.lhs, columns(kernel.weights), columns(kernel.scale),
                                   columns(kernel.zero), columns(kernel.out)};
    Operation *tail = mlir::clone(b, op, TypeRange{}, operands);
    tail->removeAttr(kInt4MatmulAttr);
  }
  rewriter.eraseOp(op);
  return success();
}

struct KilnCPULowerInt4MatmulsPass
    : kiln::impl::KilnCPULowerInt4MatmulsBase<KilnCPULowerInt4MatmulsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kInt4MatmulAttr))
        generics.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : generics)
      if (failed(lowerInt4Matmul(rewriter, op, std::max<int64_t>(rows, 1),
                                 std::max<int64_t>(vectors, 1))))
        return signalPassFailure();
  }
};

} // namespace
