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
// W4A8 (int8 activations; the generic's fifth input is amax[m, g], an f32's
// bits in an i32; rank-5
// codes [N / P, K / B, B / 8, P, 4]):
//
//   for m0 in blocks of `rows` rows (then single rows):
//     xq[r, g, p, j] = round_half_even(x[m0 + r, g, p, j] * 127 / amax)
//     xs[r, g] = sum xq[r, g, :, :];  xa[r, g] = amax / 127
//     for n0 in blocks of 16 * vectors columns:
//       acc[r][v] = out[m0 + r, n0 + 16 v : +16]
//       for g:
//         sum[r][v] = 0                                       (i32)
//         for t < B / 8:
//           bytes = codes[n0 / P, g, t, n0 mod P + 16 v : +16, 0:4] (64)
//           sum[r][v] = dot4(sum, bytes & 15, xq[r, g, 0, 4 t : +4])
//           sum[r][v] = dot4(sum, bytes >> 4, xq[r, g, 1, 4 t : +4])
//         acc[r][v] += float(sum - z xs[r, g]) * (xa[r, g] * s[g, ..])
//       out[..] = acc
//
// dot4 is vpdpbusd (four uint8 x int8 products per i32 lane) with VNNI.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/IntegerDot.h"
#include "codegen/cpu/KernelLoops.h"
#include "codegen/cpu/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
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
  DotISA dot;
};

/// The W4A8 kernel of one generic.
struct Int4Int8Kernel {
  Value lhs, amax, codes, scale, zero, out;
  int64_t vectors, panel, half;
  DotISA dot;
  /// [rows, K / B, 2, B / 2] int8 activations, and [rows, K / B] f32 sums
  /// and scales of them, on the stack.
  Value quantized, sums, scales;

  Type f32(ImplicitLocOpBuilder &b) const { return b.getF32Type(); }
  VectorType floats(ImplicitLocOpBuilder &b) const { return VectorType::get({kLanes}, f32(b)); }
  VectorType words(ImplicitLocOpBuilder &b) const {
    return VectorType::get({kLanes}, b.getI32Type());
  }
  VectorType bytes(ImplicitLocOpBuilder &b) const {
    return VectorType::get({4 * kLanes}, b.getI8Type());
  }
  Value splat(ImplicitLocOpBuilder &b, VectorType type, Attribute value) const {
    return arith::ConstantOp::create(b, DenseElementsAttr::get(type, value));
  }

  /// Rows m0 .. m0 + rows - 1 quantized into the buffers' first rows.
  void emitQuantize(ImplicitLocOpBuilder &b, Value m0, int64_t rows) const {
    Value groups = memref::DimOp::create(b, amax, 1);
    int64_t width = std::min<int64_t>(kLanes, half);
    auto type = VectorType::get({width}, f32(b));
    auto ints = VectorType::get({width}, b.getI32Type());
    for (int64_t r = 0; r < rows; ++r) {
      Value row = plus(b, m0, r), slot = indexConst(b, r);
      loop(b, indexConst(b, 0), groups, 1, {}, [&](ImplicitLocOpBuilder &gb, Value g, ValueRange) {
        Value a = arith::BitcastOp::create(gb, f32(gb), memref::LoadOp::create(gb, amax, ValueRange{row, g}));
        auto c = [&](float v) { return arith::ConstantOp::create(gb, gb.getF32FloatAttr(v)); };
        Value positive = arith::CmpFOp::create(gb, arith::CmpFPredicate::OGT, a, c(0.0f));
        Value inv = arith::SelectOp::create(gb, positive, arith::DivFOp::create(gb, c(127.0f), a), c(0.0f));
        Value invs = vector::BroadcastOp::create(gb, type, inv);
        Value total = splat(gb, ints, gb.getI32IntegerAttr(0));
        for (int64_t p = 0; p < 2; ++p) {
          auto chunks = loop(gb, indexConst(gb, 0), indexConst(gb, half), width, {total},
                             [&](ImplicitLocOpBuilder &jb, Value j, ValueRange carried) {
            Value x = readVector(jb, type, lhs, ValueRange{row, g, indexConst(jb, p), j});
            Value q = math::RoundEvenOp::create(jb, arith::MulFOp::create(jb, x, invs));
            Value qi = arith::FPToSIOp::create(jb, ints, q);
            Value qb = arith::TruncIOp::create(jb, VectorType::get({width}, jb.getI8Type()), qi);
            vector::TransferWriteOp::create(jb, qb, quantized, ValueRange{slot, g, indexConst(jb, p), j},
                                            ArrayRef<bool>{true});
            return SmallVector<Value>{arith::AddIOp::create(jb, carried[0], qi)};
          });
          total = chunks.getResult(0);
        }
        Value sum = vector::ReductionOp::create(gb, vector::CombiningKind::ADD, total);
        memref::StoreOp::create(gb, arith::SIToFPOp::create(gb, f32(gb), sum), sums, ValueRange{slot, g});
        memref::StoreOp::create(gb, arith::DivFOp::create(gb, a, c(127.0f)), scales, ValueRange{slot, g});
        return SmallVector<Value>{};
      });
    }
  }

  /// sum + the dot products of 16 columns' 4 code bytes (`codes4`, each
  /// 0..15) with the 4 int8 activations `word` (an i32 in every lane).
  /// VNNI: one vpdpbusd. AVX-512BW / AVX2: vpmaddubsw (uint8 x int8 pair
  /// sums in i16, which cannot saturate: 2 x 15 x 128 < 2^15) and vpmaddwd
  /// by ones, on zmm or on two ymm halves. Otherwise each byte's products
  /// by shifts and i32 multiplies.
  Value dot4(ImplicitLocOpBuilder &b, Value sum, Value codes4, Value word) const {
    Value activations = vector::BitCastOp::create(b, bytes(b), word);
    auto call = [&](StringRef name, Type type, ValueRange args) {
      return LLVM::CallIntrinsicOp::create(b, type, b.getStringAttr(name), args)->getResult(0);
    };
    if (dot == DotISA::AVX512VNNI)
      return call("llvm.x86.avx512.vpdpbusd.512", words(b), {sum, codes4, activations});
    if (dot == DotISA::AVX512BW || dot == DotISA::AVX2) {
      bool zmm = dot == DotISA::AVX512BW;
      int64_t width = zmm ? 64 : 32;
      StringRef maddubs = zmm ? "llvm.x86.avx512.pmaddubs.w.512" : "llvm.x86.avx2.pmadd.ub.sw";
      StringRef maddwd = zmm ? "llvm.x86.avx512.pmaddw.d.512" : "llvm.x86.avx2.pmadd.wd";
      auto pairs = VectorType::get({width / 2}, b.getI16Type());
      auto quads = VectorType::get({width / 4}, b.getI32Type());
      Value ones = splat(b, pairs, b.getI16IntegerAttr(1));
      SmallVector<Value> parts;
      for (int64_t at = 0; at < 64; at += width) {
        auto half = [&](Value v) -> Value {
          if (zmm)
            return v;
          return vector::ExtractStridedSliceOp::create(b, v, ArrayRef<int64_t>{at},
                                                       ArrayRef<int64_t>{width},
                                                       ArrayRef<int64_t>{1});
        };
        Value p = call(maddubs, pairs, {half(codes4), half(activations)});
        parts.push_back(call(maddwd, quads, {p, ones}));
      }
      Value total = parts[0];
      if (!zmm) {
        SmallVector<int64_t> mask;
        for (int64_t i = 0; i < kLanes; ++i)
          mask.push_back(i);
        total = vector::ShuffleOp::create(b, parts[0], parts[1], mask);
      }
      return arith::AddIOp::create(b, sum, total);
    }
    Value w = vector::BitCastOp::create(b, words(b), codes4);
    auto lanes = [&](int32_t v) { return splat(b, words(b), b.getI32IntegerAttr(v)); };
    for (int32_t i = 0; i < 4; ++i) {
      Value code = arith::AndIOp::create(b, arith::ShRUIOp::create(b, w, lanes(8 * i)), lanes(255));
      Value x = arith::ShRSIOp::create(b, arith::ShLIOp::create(b, word, lanes(24 - 8 * i)), lanes(24));
      sum = arith::AddIOp::create(b, sum, arith::MulIOp::create(b, code, x));
    }
    return sum;
  }

  /// The four int8 activations of buffer row `slot` at [g, p, 4 t], as an
  /// i32 broadcast to every lane.
  Value activationWord(ImplicitLocOpBuilder &b, Value slot, Value g, int64_t p, Value t) const {
    Value j = arith::MulIOp::create(b, t, indexConst(b, 4));
    Value four = readVector(b, VectorType::get({4}, b.getI8Type()), quantized,
                            ValueRange{slot, g, indexConst(b, p), j});
    Value word = vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), four);
    Value scalar = vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
    return vector::BroadcastOp::create(b, words(b), scalar);
  }

  /// Rows m0 .. m0 + rows - 1 (buffer rows 0 .. rows - 1) by the columns at
  /// n0.
  void emitBlock(ImplicitLocOpBuilder &b, Value m0, Value n0, int64_t rows) const {
    Value c = arith::DivUIOp::create(b, n0, indexConst(b, panel));
    Value l0 = arith::RemUIOp::create(b, n0, indexConst(b, panel));
    SmallVector<Value> offsets, rowIdx, slots, lanes;
    for (int64_t v = 0; v < vectors; ++v) {
      offsets.push_back(plus(b, n0, v * kLanes));
      lanes.push_back(plus(b, l0, v * kLanes));
    }
    for (int64_t r = 0; r < rows; ++r) {
      rowIdx.push_back(plus(b, m0, r));
      slots.push_back(indexConst(b, r));
    }
    SmallVector<Value> acc;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        acc.push_back(readVector(b, floats(b), out, {rowIdx[r], offsets[v]}));
    // A single row keeps the low and high nibbles' sums apart: two chains
    // of dependent dot products per vector instead of one twice as long.
    bool split = rows == 1;
    int64_t count = rows * vectors * (split ? 2 : 1);
    Value groups = memref::DimOp::create(b, amax, 1);
    // The codes with each panel row's 4 x P bytes as one dimension.
    Value flat = memref::CollapseShapeOp::create(
        b, codes, SmallVector<ReassociationIndices>{{0}, {1}, {2}, {3, 4}});
    Value mask = splat(b, bytes(b), b.getI8IntegerAttr(15));
    Value four = splat(b, bytes(b), b.getI8IntegerAttr(4));
    auto groupLoop = loop(b, indexConst(b, 0), groups, 1, acc, [&](ImplicitLocOpBuilder &gb, Value g, ValueRange carried) {
      SmallVector<Value> init(count, splat(gb, words(gb), gb.getI32IntegerAttr(0)));
      auto quadLoop = loop(gb, indexConst(gb, 0), indexConst(gb, half / 4), 1, init,
                           [&](ImplicitLocOpBuilder &tb, Value t, ValueRange partial) {
        SmallVector<Value> lo, hi;
        for (int64_t v = 0; v < vectors; ++v) {
          Value at = arith::MulIOp::create(tb, lanes[v], indexConst(tb, 4));
          Value raw = readVector(tb, bytes(tb), flat, ValueRange{c, g, t, at});
          lo.push_back(arith::AndIOp::create(tb, raw, mask));
          hi.push_back(arith::ShRUIOp::create(tb, raw, four));
        }
        SmallVector<Value> next(partial);
        for (int64_t r = 0; r < rows; ++r) {
          Value low = activationWord(tb, slots[r], g, 0, t);
          Value high = activationWord(tb, slots[r], g, 1, t);
          for (int64_t v = 0; v < vectors; ++v) {
            int64_t at = (r * vectors + v) * (split ? 2 : 1);
            next[at] = dot4(tb, next[at], lo[v], low);
            Value &second = next[split ? at + 1 : at];
            second = dot4(tb, second, hi[v], high);
          }
        }
        return next;
      });
      SmallVector<Value> next(carried), s, z;
      for (int64_t v = 0; v < vectors; ++v) {
        s.push_back(readVector(gb, floats(gb), scale, ValueRange{c, g, lanes[v]}));
        z.push_back(readVector(gb, floats(gb), zero, ValueRange{c, g, lanes[v]}));
      }
      for (int64_t r = 0; r < rows; ++r) {
        Value xs = vector::BroadcastOp::create(
            gb, floats(gb), memref::LoadOp::create(gb, sums, ValueRange{slots[r], g}));
        Value xa = vector::BroadcastOp::create(
            gb, floats(gb), memref::LoadOp::create(gb, scales, ValueRange{slots[r], g}));
        for (int64_t v = 0; v < vectors; ++v) {
          int64_t at = (r * vectors + v) * (split ? 2 : 1);
          Value sum = quadLoop.getResult(at);
          if (split)
            sum = arith::AddIOp::create(gb, sum, quadLoop.getResult(at + 1));
          // Exact: every term is a whole number below 2^24.
          Value exact = arith::SubFOp::create(gb, arith::SIToFPOp::create(gb, floats(gb), sum),
                                              arith::MulFOp::create(gb, z[v], xs));
          Value term = arith::MulFOp::create(gb, exact, arith::MulFOp::create(gb, xa, s[v]));
          Value &a = next[r * vectors + v];
          a = arith::AddFOp::create(gb, a, term);
        }
      }
      return next;
    });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        vector::TransferWriteOp::create(b, groupLoop.getResult(r * vectors + v), out,
                                        ValueRange{rowIdx[r], offsets[v]}, ArrayRef<bool>{true});
  }
};

/// The W4A8 generic (inputs x, codes, scale, zero, amax) as the kernel
/// above; a generic it cannot take stays, unmarked.
LogicalResult lowerInt4Int8Matmul(RewriterBase &rewriter, linalg::GenericOp op, Int4Shape shape) {
  auto codesType = cast<MemRefType>(op.getDpsInputs()[1].getType());
  auto lhsType = cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto outType = cast<MemRefType>(op.getDpsInits()[0].getType());
  int64_t panel = codesType.getRank() == 5 ? codesType.getDimSize(3) : 0;
  int64_t half = lhsType.getDimSize(3);
  int64_t width = kLanes * shape.vectors;
  if (!panel || ShapedType::isDynamic(panel) || panel % width != 0 ||
      ShapedType::isDynamic(half) || half % 4 != 0 || half % std::min<int64_t>(kLanes, half) != 0 ||
      lhsType.isDynamicDim(1) || !lhsType.getElementType().isF32() ||
      outType.isDynamicDim(1) || outType.getDimSize(1) % panel != 0) {
    op->removeAttr(kInt4MatmulAttr);
    return success();
  }
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  Int4Int8Kernel kernel{op.getDpsInputs()[0], op.getDpsInputs()[4], op.getDpsInputs()[1],
                        op.getDpsInputs()[2], op.getDpsInputs()[3], op.getDpsInits()[0],
                        shape.vectors, panel, half, shape.dot, {}, {}, {}};
  {
    // On the function's stack once, not per loop iteration.
    auto func = op->getParentOfType<FunctionOpInterface>();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&func.getFunctionBody().front());
    int64_t groups = lhsType.getDimSize(1);
    auto stackBuffer = [&](ArrayRef<int64_t> shape, Type element) -> Value {
      return memref::AllocaOp::create(b, MemRefType::get(shape, element), ValueRange{},
                                      b.getI64IntegerAttr(64));
    };
    kernel.quantized = stackBuffer({shape.rows, groups, 2, half}, b.getI8Type());
    kernel.sums = stackBuffer({shape.rows, groups}, b.getF32Type());
    kernel.scales = stackBuffer({shape.rows, groups}, b.getF32Type());
  }
  b.setInsertionPoint(op);
  Value m = memref::DimOp::create(b, kernel.out, 0);
  Value n = memref::DimOp::create(b, kernel.out, 1);
  rowBlocks(b, m, shape.rows, [&](ImplicitLocOpBuilder &rb, Value m0, int64_t rows) {
    kernel.emitQuantize(rb, m0, rows);
    loop(rb, indexConst(rb, 0), n, width, {}, [&](ImplicitLocOpBuilder &cb, Value n0, ValueRange) {
      kernel.emitBlock(cb, m0, n0, rows);
      return SmallVector<Value>{};
    });
  });
  rewriter.eraseOp(op);
  return success();
}

LogicalResult lowerInt4Matmul(RewriterBase &rewriter, linalg::GenericOp op, Int4Shape shape) {
  if (op.hasPureBufferSemantics() && op.getNumDpsInputs() == 5 && op.getNumDpsInits() == 1)
    return lowerInt4Int8Matmul(rewriter, op, shape);
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
    std::optional<DotISA> dot = parseDotISA(dotISA);
    if (!dot) {
      getOperation().emitError() << "kiln-cpu-lower-int4-matmuls: unknown dot-isa '" << dotISA
                                 << "' (expected none, avx2, avx512bw or avx512vnni)";
      return signalPassFailure();
    }
    Int4Shape shape{std::max<int64_t>(rows, 1), std::max<int64_t>(vectors, 1),
                    std::max<int64_t>(tileRows, 1), std::max<int64_t>(bufferRows, 1), *dot};
    for (linalg::GenericOp op : generics)
      if (failed(lowerInt4Matmul(rewriter, op, shape)))
        return signalPassFailure();
  }
};

} // namespace
