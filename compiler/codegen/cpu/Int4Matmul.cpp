//===- Int4Matmul.cpp - vector kernels for grouped 4-bit weights ----------===//
//
// kiln-cpu-lower-int4-matmuls: the linalg.generic of a kiln.matmul_int4
// (marked kiln.int4_matmul), on memrefs after bufferization, becomes an
// explicit vector kernel. The codes are only ever read as bytes from memory
// and turned into floats in registers. Per block of W = 16 * vectors
// columns, two kernels:
//
// Few rows (decode): the codes themselves are multiplied, and each group's
// zero point and scale applied once to the group's sums,
//   sum_k x[k] (q[k] - z) s = s (sum_k x[k] q[k] - z sum_k x[k]),
// which takes the subtract and the multiply of every weight out of the loop:
//
//   for m0 in blocks of `rows` rows (then single rows):
//     acc[r][v] = out[m0 + r, n0 + 16 v : +16]
//     for g:
//       lo[r][v] = hi[r][v] = 0
//       for j:                                  (byte rows of the group)
//         lo[r][v] += x[m0 + r, g, 0, j] * float(low nibbles of codes[g, j, ..])
//         hi[r][v] += x[m0 + r, g, 1, j] * float(high nibbles)
//       acc[r][v] += s[g, ..] * (lo + hi - z[g, ..] * sum(x[m0 + r, g, :, :]))
//     out[..] = acc
//
// Many rows (prefill, `buffer-rows` or more): each group's W columns are
// dequantized once into a [2, B / 2, W] buffer on the stack, which a
// register tile of `tile-rows` rows x W columns then reads like a float
// GEMM's panel.
//
// Codes in column panels (kiln-pack-int4-weights, rank-4 codes) are read at
// [c / P, g, j, c mod P]: a block's codes for all of K are one run. The
// columns after the last full 16 (row-major codes only) stay the generic.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/KernelLoops.h"
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
using namespace kiln::cpu;

constexpr int64_t kLanes = 16;

/// The kernel of one generic: its operands and kernel shape.
struct Int4Kernel {
  Value lhs, weights, scale, zero, out;
  Type elem;
  int64_t vectors;
  /// Columns per panel of rank-4 codes, 0 for row-major ones.
  int64_t panel;
  /// [2, B / 2, 16 * vectors] floats for the many-rows kernel, or null.
  Value buffer;

  VectorType floats() const { return VectorType::get({kLanes}, elem); }
  VectorType i32s(ImplicitLocOpBuilder &b) const {
    return VectorType::get({kLanes}, b.getI32Type());
  }

  Value read(ImplicitLocOpBuilder &b, Value base, ValueRange indices, Type element) const {
    return readVector(b, VectorType::get({kLanes}, element), base, indices);
  }

  /// Where column `c` of the block lives: (panel, column in panel) for
  /// rank-4 codes, (c) for row-major ones.
  SmallVector<Value> columnIndex(ImplicitLocOpBuilder &b, Value c) const {
    if (!panel)
      return {c};
    return {arith::DivUIOp::create(b, c, indexConst(b, panel)),
            arith::RemUIOp::create(b, c, indexConst(b, panel))};
  }
  Value codesAt(ImplicitLocOpBuilder &b, ArrayRef<Value> column, Value g, Value j) const {
    SmallVector<Value> at = panel ? SmallVector<Value>{column[0], g, j, column[1]}
                                  : SmallVector<Value>{g, j, column[0]};
    return read(b, weights, at, b.getI8Type());
  }
  Value perColumnAt(ImplicitLocOpBuilder &b, Value base, ArrayRef<Value> column, Value g) const {
    SmallVector<Value> at = panel ? SmallVector<Value>{column[0], g, column[1]}
                                  : SmallVector<Value>{g, column[0]};
    return read(b, base, at, elem);
  }

  /// The two nibbles of 16 code bytes, as floats.
  std::pair<Value, Value> nibbles(ImplicitLocOpBuilder &b, Value bytes) const {
    auto splat = [&](int32_t v) {
      return arith::ConstantOp::create(b, DenseElementsAttr::get(i32s(b), b.getI32IntegerAttr(v).getValue()));
    };
    Value wide = arith::ExtUIOp::create(b, i32s(b), bytes);
    Value lo = arith::AndIOp::create(b, wide, splat(15));
    Value hi = arith::ShRUIOp::create(b, wide, splat(4));
    return {arith::UIToFPOp::create(b, floats(), lo), arith::UIToFPOp::create(b, floats(), hi)};
  }

  /// Few rows: rows m0 .. m0 + rows - 1 of the block at n0, the codes
  /// multiplied as they are and each group's sums scaled once.
  void emitStreamRows(ImplicitLocOpBuilder &b, Value m0, Value n0, int64_t rows) const {
    SmallVector<SmallVector<Value>> columns;
    SmallVector<Value> offsets, rowIdx;
    for (int64_t v = 0; v < vectors; ++v) {
      offsets.push_back(plus(b, n0, v * kLanes));
      columns.push_back(columnIndex(b, offsets.back()));
    }
    for (int64_t r = 0; r < rows; ++r)
      rowIdx.push_back(plus(b, m0, r));
    SmallVector<Value> acc;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        acc.push_back(read(b, out, {rowIdx[r], offsets[v]}, elem));
    // A single row keeps its low and high products apart: two chains of
    // multiply-adds per vector instead of one twice as long.
    bool split = rows == 1;
    int64_t sums = rows * vectors * (split ? 2 : 1);
    Value zeroVec = arith::ConstantOp::create(b, DenseElementsAttr::get(floats(), b.getFloatAttr(elem, 0.0).getValue()));
    Value groups = memref::DimOp::create(b, weights, panel ? 1 : 0);
    int64_t half = cast<MemRefType>(lhs.getType()).getDimSize(3);
    auto groupLoop = loop(b, indexConst(b, 0), groups, 1, acc, [&](ImplicitLocOpBuilder &gb, Value g, ValueRange groupAcc) {
      SmallVector<Value> init(sums, zeroVec);
      auto byteLoop = loop(gb, indexConst(gb, 0), indexConst(gb, half), 1, init,
                           [&](ImplicitLocOpBuilder &jb, Value j, ValueRange partial) {
        SmallVector<Value> lo, hi;
        for (int64_t v = 0; v < vectors; ++v) {
          auto [l, h] = nibbles(jb, codesAt(jb, columns[v], g, j));
          lo.push_back(l);
          hi.push_back(h);
        }
        SmallVector<Value> next(partial);
        for (int64_t r = 0; r < rows; ++r) {
          Value a0 = memref::LoadOp::create(jb, lhs, ValueRange{rowIdx[r], g, indexConst(jb, 0), j});
          Value a1 = memref::LoadOp::create(jb, lhs, ValueRange{rowIdx[r], g, indexConst(jb, 1), j});
          Value b0 = vector::BroadcastOp::create(jb, floats(), a0);
          Value b1 = vector::BroadcastOp::create(jb, floats(), a1);
          for (int64_t v = 0; v < vectors; ++v) {
            int64_t at = (r * vectors + v) * (split ? 2 : 1);
            next[at] = vector::FMAOp::create(jb, b0, lo[v], next[at]);
            Value &second = next[split ? at + 1 : at];
            second = vector::FMAOp::create(jb, b1, hi[v], second);
          }
        }
        return next;
      });
      SmallVector<Value> next(groupAcc);
      SmallVector<Value> s, z;
      for (int64_t v = 0; v < vectors; ++v) {
        s.push_back(perColumnAt(gb, scale, columns[v], g));
        z.push_back(perColumnAt(gb, zero, columns[v], g));
      }
      auto wholeGroup = VectorType::get({2, half}, elem);
      for (int64_t r = 0; r < rows; ++r) {
        // sum(x[m0 + r, g, :, :]), in any order.
        Value xs = vector::TransferReadOp::create(
            gb, wholeGroup, lhs, ValueRange{rowIdx[r], g, indexConst(gb, 0), indexConst(gb, 0)},
            arith::ConstantOp::create(gb, gb.getFloatAttr(elem, 0.0)), ArrayRef<bool>{true, true});
        xs = vector::ShapeCastOp::create(gb, VectorType::get({2 * half}, elem), xs);
        auto total = vector::ReductionOp::create(gb, vector::CombiningKind::ADD, xs);
        total.setFastmath(arith::FastMathFlags::reassoc);
        Value xsum = vector::BroadcastOp::create(gb, floats(), total);
        for (int64_t v = 0; v < vectors; ++v) {
          int64_t at = (r * vectors + v) * (split ? 2 : 1);
          Value dot = byteLoop.getResult(at);
          if (split)
            dot = arith::AddFOp::create(gb, dot, byteLoop.getResult(at + 1));
          Value shifted = arith::SubFOp::create(gb, dot, arith::MulFOp::create(gb, z[v], xsum));
          Value &a = next[r * vectors + v];
          a = vector::FMAOp::create(gb, s[v], shifted, a);
        }
      }
      return next;
    });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        vector::TransferWriteOp::create(b, groupLoop.getResult(r * vectors + v), out,
                                        ValueRange{rowIdx[r], offsets[v]},
                                        ArrayRef<bool>{true});
  }

  /// Many rows: every row of the block at n0, group by group, each group's
  /// weights dequantized once into `buffer` and multiplied by register
  /// tiles of `tileRows` rows.
  void emitBufferedColumns(ImplicitLocOpBuilder &b, Value n0, Value m, int64_t tileRows) const {
    SmallVector<SmallVector<Value>> columns;
    SmallVector<Value> offsets;
    for (int64_t v = 0; v < vectors; ++v) {
      offsets.push_back(plus(b, n0, v * kLanes));
      columns.push_back(columnIndex(b, offsets.back()));
    }
    Value groups = memref::DimOp::create(b, weights, panel ? 1 : 0);
    int64_t half = cast<MemRefType>(lhs.getType()).getDimSize(3);
    loop(b, indexConst(b, 0), groups, 1, {}, [&](ImplicitLocOpBuilder &gb, Value g, ValueRange) {
      SmallVector<Value> s, z;
      for (int64_t v = 0; v < vectors; ++v) {
        s.push_back(perColumnAt(gb, scale, columns[v], g));
        z.push_back(perColumnAt(gb, zero, columns[v], g));
      }
      // buffer[p, j, ..] = (nibble p of codes[g, j, ..] - z) * s
      loop(gb, indexConst(gb, 0), indexConst(gb, half), 1, {}, [&](ImplicitLocOpBuilder &jb, Value j, ValueRange) {
        for (int64_t v = 0; v < vectors; ++v) {
          auto [lo, hi] = nibbles(jb, codesAt(jb, columns[v], g, j));
          for (auto [p, code] : llvm::enumerate(SmallVector<Value>{lo, hi})) {
            Value w = arith::MulFOp::create(jb, arith::SubFOp::create(jb, code, z[v]), s[v]);
            vector::TransferWriteOp::create(jb, w, buffer,
                                            ValueRange{indexConst(jb, p), j, indexConst(jb, v * kLanes)},
                                            ArrayRef<bool>{true});
          }
        }
        return SmallVector<Value>{};
      });
      auto tile = [&](ImplicitLocOpBuilder &tb, Value m0, int64_t rows) {
        SmallVector<Value> rowIdx, acc;
        for (int64_t r = 0; r < rows; ++r)
          rowIdx.push_back(plus(tb, m0, r));
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t v = 0; v < vectors; ++v)
            acc.push_back(read(tb, out, {rowIdx[r], offsets[v]}, elem));
        for (int64_t p = 0; p < 2; ++p) {
          auto kLoop = loop(tb, indexConst(tb, 0), indexConst(tb, half), 1, acc,
                            [&](ImplicitLocOpBuilder &kb, Value j, ValueRange carried) {
            SmallVector<Value> w, next(carried);
            for (int64_t v = 0; v < vectors; ++v)
              w.push_back(read(kb, buffer, {indexConst(kb, p), j, indexConst(kb, v * kLanes)}, elem));
            for (int64_t r = 0; r < rows; ++r) {
              Value a = memref::LoadOp::create(kb, lhs, ValueRange{rowIdx[r], g, indexConst(kb, p), j});
              Value bcast = vector::BroadcastOp::create(kb, floats(), a);
              for (int64_t v = 0; v < vectors; ++v)
                next[r * vectors + v] = vector::FMAOp::create(kb, bcast, w[v], next[r * vectors + v]);
            }
            return next;
          });
          acc.assign(kLoop.getResults().begin(), kLoop.getResults().end());
        }
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t v = 0; v < vectors; ++v)
            vector::TransferWriteOp::create(tb, acc[r * vectors + v], out,
                                            ValueRange{rowIdx[r], offsets[v]},
                                            ArrayRef<bool>{true});
      };
      rowBlocks(gb, m, tileRows, tile);
      return SmallVector<Value>{};
    });
  }
};

struct Int4Shape {
  int64_t rows, vectors, tileRows, bufferRows;
};

LogicalResult lowerInt4Matmul(RewriterBase &rewriter, linalg::GenericOp op, Int4Shape shape) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 4 || op.getNumDpsInits() != 1)
    return op.emitOpError("kiln.int4_matmul: expected the generic of a kiln.matmul_int4 on memrefs");
  auto codesType = cast<MemRefType>(op.getDpsInputs()[1].getType());
  int64_t panel = codesType.getRank() == 4 ? codesType.getDimSize(3) : 0;
  Int4Kernel kernel{op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInputs()[2],
                    op.getDpsInputs()[3], op.getDpsInits()[0],
                    getElementTypeOrSelf(op.getDpsInits()[0].getType()), shape.vectors, panel, {}};
  if (!isa<FloatType>(kernel.elem))
    return op.emitOpError("kiln.int4_matmul: expected a float result");
  auto outType = cast<MemRefType>(kernel.out.getType());
  auto lhsType = cast<MemRefType>(kernel.lhs.getType());
  if (lhsType.isDynamicDim(3))
    return op.emitOpError("kiln.int4_matmul: expected a static group size");
  // A workgroup computes whole panels (kiln-cpu-distribute tiles the
  // columns in multiples of the panel), each in blocks of 16 * vectors.
  if (panel && (ShapedType::isDynamic(panel) || panel % (kLanes * shape.vectors) != 0 ||
                outType.isDynamicDim(1) || outType.getDimSize(1) % panel != 0))
    return op.emitOpError("kiln.int4_matmul: column panels of ")
           << panel << " need whole panels of 16 x " << shape.vectors << " columns, got "
           << outType.getDimSize(1) << " columns";
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  b.setInsertionPoint(op);
  Value zeroIdx = indexConst(b, 0);
  Value m = memref::DimOp::create(b, kernel.out, 0);
  Value n = memref::DimOp::create(b, kernel.out, 1);
  bool buffered = !outType.isDynamicDim(0) && outType.getDimSize(0) >= shape.bufferRows;
  if (buffered) {
    // On the function's stack once, not per loop iteration.
    auto func = op->getParentOfType<FunctionOpInterface>();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&func.getFunctionBody().front());
    int64_t half = lhsType.getDimSize(3);
    kernel.buffer = memref::AllocaOp::create(
        b, MemRefType::get({2, half, kLanes * shape.vectors}, kernel.elem), ValueRange{},
        b.getI64IntegerAttr(64));
  }
  // Column blocks of `vectors` x 16, then of 16, then the rest.
  auto columnLoop = [&](Value from, Value to, int64_t count) {
    Int4Kernel k = kernel;
    k.vectors = count;
    if (k.buffer && count != shape.vectors)
      k.buffer = memref::SubViewOp::create(
          b, k.buffer, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(2), b.getIndexAttr(lhsType.getDimSize(3)),
                                 b.getIndexAttr(kLanes * count)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(1)});
    loop(b, from, to, kLanes * count, {}, [&](ImplicitLocOpBuilder &cb, Value n0, ValueRange) {
      if (k.buffer) {
        k.emitBufferedColumns(cb, n0, m, shape.tileRows);
        return SmallVector<Value>{};
      }
      rowBlocks(cb, m, shape.rows, [&](ImplicitLocOpBuilder &kb, Value m0, int64_t rows) {
        k.emitStreamRows(kb, m0, n0, rows);
      });
      return SmallVector<Value>{};
    });
  };
  Value nWide = fullEnd(b, zeroIdx, n, kLanes * shape.vectors);
  columnLoop(zeroIdx, nWide, shape.vectors);
  if (panel) {
    rewriter.eraseOp(op);
    return success();
  }
  Value nFull = nWide;
  if (shape.vectors > 1) {
    nFull = fullEnd(b, zeroIdx, n, kLanes);
    columnLoop(nWide, nFull, 1);
  }
  // The last columns: the generic itself on their subviews (unless none
  // can be left).
  std::optional<int64_t> staticN = getConstantIntValue(getAsOpFoldResult(n));
  if (!staticN || *staticN % kLanes != 0) {
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
    Int4Shape shape{std::max<int64_t>(rows, 1), std::max<int64_t>(vectors, 1),
                    std::max<int64_t>(tileRows, 1), std::max<int64_t>(bufferRows, 1)};
    for (linalg::GenericOp op : generics)
      if (failed(lowerInt4Matmul(rewriter, op, shape)))
        return signalPassFailure();
  }
};

} // namespace
