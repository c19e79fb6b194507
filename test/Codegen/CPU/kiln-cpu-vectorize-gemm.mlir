// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="mr=4 nr=16 kc=4" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm | FileCheck %s --check-prefix=DEFAULT

// A workgroup's 16x16 tile of a matmul (as kiln-cpu-distribute leaves it),
// K = 64. Register tile 4x16, k step 4: a loop over the 4 row blocks (N = 16
// is taken whole), and inside it the k loop, which carries the 4x16
// accumulator as a vector iter_arg: it starts from zeros in registers (the
// zero fill is tiled with it; filled first, the workgroup's tile went to
// memory and came back), and is written once after the loop. Each k step is
// 4 x 4 outer products, 16 FMAs on vector<16xf32> (a broadcast row element
// times a row of B); no vector.contract is left.
// CHECK-LABEL: func @matmul_in_workgroup
// CHECK: %[[ACC0:.*]] = arith.constant dense<0.000000e+00> : vector<4x16xf32>
// CHECK: scf.forall
// CHECK-NOT: linalg.matmul
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c4
// CHECK-NOT: vector.transfer_read {{.*}} vector<4x16xf32>
// CHECK: %[[K:.*]]:{{[0-9]+}} = scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}%[[ACC:[^ ]*]] = %[[ACC0]]) -> ({{.*}}vector<4x16xf32>)
// CHECK-NOT: vector.transfer_write
// CHECK-NOT: vector.contract
// CHECK: vector.extract %[[ACC]][0] : vector<16xf32> from vector<4x16xf32>
// CHECK-COUNT-16: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NOT: vector.fma
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield {{.*}} : {{.*}}vector<4x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: vector.transfer_write %[[K]]#{{[0-9]+}}, {{.*}} : vector<4x16xf32>, tensor<4x16xf32>
// CHECK-NOT: linalg.matmul
// CHECK-NOT: vector.contract
// CHECK: scf.forall.in_parallel
// The default register tile (16 x 16 x 4) covers the whole 16x16 tile: no
// row loop, 64 FMAs per k step.
// DEFAULT-LABEL: func @matmul_in_workgroup
// DEFAULT-NOT: step %c4 iter_args({{.*}}) -> (tensor<16x16xf32>)
// DEFAULT: %[[ACC0:.*]] = vector.transfer_read %{{.*}} : tensor<16x16xf32>, vector<16x16xf32>
// DEFAULT: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}%{{[^ ]*}} = %[[ACC0]]) -> ({{.*}}vector<16x16xf32>)
// DEFAULT-COUNT-64: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
// DEFAULT-NOT: vector.fma
// DEFAULT: scf.yield
func.func @matmul_in_workgroup(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {kiln.dispatch, kiln.workgroup_count = 16 : i64} {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<64x64xf32>
  %1 = scf.forall (%i, %j) = (0, 0) to (64, 64) step (16, 16) shared_outs(%out = %0) -> (tensor<64x64xf32>) {
    %sa = tensor.extract_slice %a[%i, 0] [16, 64] [1, 1] : tensor<64x64xf32> to tensor<16x64xf32>
    %sb = tensor.extract_slice %b[0, %j] [64, 16] [1, 1] : tensor<64x64xf32> to tensor<64x16xf32>
    %so = tensor.extract_slice %out[%i, %j] [16, 16] [1, 1] : tensor<64x64xf32> to tensor<16x16xf32>
    %f = linalg.fill ins(%cst : f32) outs(%so : tensor<16x16xf32>) -> tensor<16x16xf32>
    %m = linalg.matmul ins(%sa, %sb : tensor<16x64xf32>, tensor<64x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %out[%i, %j] [16, 16] [1, 1] : tensor<16x16xf32> into tensor<64x64xf32>
    }
  }
  return %1 : tensor<64x64xf32>
}

// -----

// A convolution's GEMM generic (out[n, f, p] += w[f, c] * cols[n, c, p], as
// kiln-conv-to-gemm makes it; F = 16, P = 32, C = 8): the unit batch
// dimension is dropped so that each register tile is a plain 2-d contraction,
// and the same outer-product code results: row blocks of 4 and column blocks
// of 16 (in either loop order), a k loop of two steps carrying the vector
// accumulator.
// CHECK-LABEL: func @conv_gemm
// CHECK-DAG: scf.for %{{.*}} = %c0 to %c16 step %c4
// CHECK-DAG: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: %[[ACC0:.*]] = vector.transfer_read %{{.*}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c4 iter_args({{.*}}%{{[^ ]*}} = %[[ACC0]]) -> ({{.*}}vector<4x16xf32>)
// CHECK-NOT: vector.transfer_write
// CHECK-COUNT-16: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<4x16xf32>, tensor<4x16xf32>
// CHECK-NOT: linalg.generic
#filter = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#cols = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @conv_gemm(%w: tensor<16x8xf32>, %x: tensor<1x8x32xf32>, %init: tensor<1x16x32xf32>) -> tensor<1x16x32xf32> attributes {kiln.dispatch} {
  %0 = linalg.generic {indexing_maps = [#filter, #cols, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%w, %x : tensor<16x8xf32>, tensor<1x8x32xf32>) outs(%init : tensor<1x16x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %c : f32
    linalg.yield %s : f32
  } -> tensor<1x16x32xf32>
  return %0 : tensor<1x16x32xf32>
}

// -----

// Integer contractions (i32 accumulators) are register-tiled like float
// ones: each k step is outer products of a broadcast element and a row of
// B, as i32 multiply-adds on vector<16xi32>.
// CHECK-LABEL: func @integer_vectorized
// CHECK-NOT: linalg.matmul
// CHECK: scf.for
// CHECK: %[[B:.*]] = vector.broadcast %{{.*}} : i32 to vector<16xi32>
// CHECK: %[[P:.*]] = arith.muli %[[B]], %{{.*}} : vector<16xi32>
// CHECK: arith.addi %[[P]], %{{.*}} : vector<16xi32>
// CHECK-NOT: vector.contract
// CHECK-NOT: linalg.matmul
func.func @integer_vectorized(%a: tensor<64x64xi32>, %b: tensor<64x64xi32>, %c: tensor<64x64xi32>) -> tensor<64x64xi32> attributes {kiln.dispatch} {
  %0 = linalg.matmul ins(%a, %b : tensor<64x64xi32>, tensor<64x64xi32>) outs(%c : tensor<64x64xi32>) -> tensor<64x64xi32>
  return %0 : tensor<64x64xi32>
}

// -----

// An im2col gather (3x3 window, unit strides, output 8x8 from a padded
// 10x10 input) becomes loops over (n, c, kh, kw, oh) copying one output row
// each, a vector read and a vector write: input row oh + kh from column kw,
// 8 contiguous pixels, into patch row (c * 3 + kh) * 3 + kw at column
// oh * 8. No generic, no tag is left (the one-image loop folds away).
// CHECK-LABEL: func @im2col_row_copies
// CHECK-NOT: kiln.im2col
// CHECK: scf.for %[[C:.*]] = %c0 to %c3 step %c1
// CHECK: scf.for %[[KH:.*]] = %c0 to %c3 step %c1
// CHECK: scf.for %[[KW:.*]] = %c0 to %c3 step %c1
// CHECK: scf.for %[[OH:.*]] = %c0 to %c8 step %c1 iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<1x27x64xf32>)
// CHECK: %[[H:.*]] = arith.addi %[[OH]], %[[KH]] : index
// CHECK: %[[C3:.*]] = arith.muli %[[C]], %c3 : index
// CHECK: %[[CKH:.*]] = arith.addi %[[C3]], %[[KH]] : index
// CHECK: %[[CKH3:.*]] = arith.muli %[[CKH]], %c3 : index
// CHECK: %[[K:.*]] = arith.addi %[[CKH3]], %[[KW]] : index
// CHECK: %[[P:.*]] = arith.muli %[[OH]], %c8 : index
// CHECK: %[[ROW:.*]] = vector.transfer_read %arg0[%c0, %[[C]], %[[H]], %[[KW]]], %{{.*}} {in_bounds = [true]} : tensor<1x3x10x10xf32>, vector<8xf32>
// CHECK: vector.transfer_write %[[ROW]], %[[ACC]][%c0, %[[K]], %[[P]]] {in_bounds = [true]} : vector<8xf32>, tensor<1x27x64xf32>
// CHECK-NOT: linalg.generic
#gather = affine_map<(d0, d1, d2) -> (d0, d1 floordiv 9, d2 floordiv 8 + (d1 mod 9) floordiv 3, d2 mod 8 + d1 mod 3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @im2col_row_copies(%x: tensor<1x3x10x10xf32>) -> tensor<1x27x64xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<1x27x64xf32>
  %cols = linalg.generic {indexing_maps = [#gather, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x3x10x10xf32>) outs(%e : tensor<1x27x64xf32>) attrs = {kiln.im2col = array<i64: 8, 3, 3, 1, 1, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x27x64xf32>
  return %cols : tensor<1x27x64xf32>
}

// -----

// A strided window (1x1 filter, stride 2, output 2x2 from 4x4): each row copy
// reads the span of row 2 * oh its pixels cover (4 lanes, in bounds) and
// keeps every other one with a shuffle, then writes them in one go.
// CHECK-LABEL: func @im2col_strided_row_copies
// CHECK: scf.for %[[OH:.*]] = %c0 to %c2 step %c1
// CHECK: %[[H:.*]] = arith.muli %[[OH]], %c2 : index
// CHECK: %[[SPAN:.*]] = vector.transfer_read %arg0[%c0, %{{.*}}, %[[H]], %c0], %{{.*}} {in_bounds = [true]} : tensor<1x8x4x4xf32>, vector<4xf32>
// CHECK: %[[ROW:.*]] = vector.shuffle %[[SPAN]], %[[SPAN]] [0, 2] : vector<4xf32>, vector<4xf32>
// CHECK: vector.transfer_write %[[ROW]], %{{.*}} {in_bounds = [true]} : vector<2xf32>, tensor<1x8x4xf32>
// CHECK-NOT: linalg.generic
#gather = affine_map<(d0, d1, d2) -> (d0, d1, (d2 floordiv 2) * 2, (d2 mod 2) * 2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @im2col_strided_row_copies(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<1x8x4xf32>
  %cols = linalg.generic {indexing_maps = [#gather, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x8x4x4xf32>) outs(%e : tensor<1x8x4xf32>) attrs = {kiln.im2col = array<i64: 2, 1, 1, 2, 2, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x8x4xf32>
  return %cols : tensor<1x8x4xf32>
}

// -----

// A long strided row (20 pixels, stride 2) is read in pieces of 16 lanes:
// a span of 32 and a shuffle to 16, then a span of 8 and a shuffle to 4,
// put together into the row (one shuffle of the whole 40-lane span into 20
// made LLVM build it lane by lane: ResNet-50's 7x7 stride-2 stem took 2.4x
// its time).
// CHECK-LABEL: func @im2col_long_strided_rows
// CHECK: scf.for %[[OH:.*]] = %c0 to %c2 step %c1
// CHECK: %[[H:.*]] = arith.muli %[[OH]], %c2 : index
// CHECK: %[[SPAN0:.*]] = vector.transfer_read %arg0[%c0, %{{.*}}, %[[H]], %c0], %{{.*}} {in_bounds = [true]} : tensor<1x4x4x40xf32>, vector<32xf32>
// CHECK: %[[P0:.*]] = vector.shuffle %[[SPAN0]], %[[SPAN0]] [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xf32>, vector<32xf32>
// CHECK: %[[ROW0:.*]] = vector.insert_strided_slice %[[P0]], %{{.*}} {offsets = [0], strides = [1]} : vector<16xf32> into vector<20xf32>
// CHECK: %[[SPAN1:.*]] = vector.transfer_read %arg0[%c0, %{{.*}}, %[[H]], %c32], %{{.*}} {in_bounds = [true]} : tensor<1x4x4x40xf32>, vector<8xf32>
// CHECK: %[[P1:.*]] = vector.shuffle %[[SPAN1]], %[[SPAN1]] [0, 2, 4, 6] : vector<8xf32>, vector<8xf32>
// CHECK: %[[ROW:.*]] = vector.insert_strided_slice %[[P1]], %[[ROW0]] {offsets = [16], strides = [1]} : vector<4xf32> into vector<20xf32>
// CHECK: vector.transfer_write %[[ROW]], %{{.*}} {in_bounds = [true]} : vector<20xf32>, tensor<1x4x40xf32>
// CHECK-NOT: linalg.generic
#gather = affine_map<(d0, d1, d2) -> (d0, d1, (d2 floordiv 20) * 2, (d2 mod 20) * 2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @im2col_long_strided_rows(%x: tensor<1x4x4x40xf32>) -> tensor<1x4x40xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<1x4x40xf32>
  %cols = linalg.generic {indexing_maps = [#gather, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x4x4x40xf32>) outs(%e : tensor<1x4x40xf32>) attrs = {kiln.im2col = array<i64: 20, 1, 1, 2, 2, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x4x40xf32>
  return %cols : tensor<1x4x40xf32>
}

// -----

// A gather whose tag does not describe its shapes (27 patch rows are not
// 3 channels x a 2x2 window) is left as it is: it still computes the right
// values, only slower.
// CHECK-LABEL: func @im2col_mismatched_window
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.generic {{.*}} attrs = {kiln.im2col = array<i64: 8, 2, 2, 1, 1, 1, 1>}
// CHECK-NOT: tensor.insert_slice
// CHECK: return
#gather = affine_map<(d0, d1, d2) -> (d0, d1 floordiv 9, d2 floordiv 8 + (d1 mod 9) floordiv 3, d2 mod 8 + d1 mod 3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @im2col_mismatched_window(%x: tensor<1x3x10x10xf32>) -> tensor<1x27x64xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<1x27x64xf32>
  %cols = linalg.generic {indexing_maps = [#gather, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x3x10x10xf32>) outs(%e : tensor<1x27x64xf32>) attrs = {kiln.im2col = array<i64: 8, 2, 2, 1, 1, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x27x64xf32>
  return %cols : tensor<1x27x64xf32>
}

// -----

// Cache blocking: K = 1024 is split into blocks of 256 (the default
// kc-cache), the outermost loop, carrying the output; the register tiles and
// their k loop (64 steps of 4) run inside each block.
// DEFAULT-LABEL: func @cache_blocked
// DEFAULT: scf.for %{{.*}} = %c0 to %c1024 step %c256 iter_args(%{{.*}} = %{{.*}}) -> (tensor<16x32xf32>)
// DEFAULT: tensor.extract_slice %arg0[0, %{{.*}}] [16, 256] [1, 1]
// DEFAULT: tensor.extract_slice %arg1[%{{.*}}, 0] [256, 32] [1, 1]
// DEFAULT: scf.for %{{.*}} = %c0 to %c32 step %c16
// DEFAULT: scf.for %{{.*}} = %c0 to %c256 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xf32>)
// DEFAULT-COUNT-64: vector.fma
// A reduction no block size of at most 256 divides evenly into blocks of
// at least 64 (K = 1028 = 4 x 257) is not blocked.
// DEFAULT-LABEL: func @not_cache_blocked
// DEFAULT-NOT: step %c256
// DEFAULT: scf.for %{{.*}} = %c0 to %c1028 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xf32>)
func.func @cache_blocked(%a: tensor<16x1024xf32>, %b: tensor<1024x32xf32>, %c: tensor<16x32xf32>) -> tensor<16x32xf32> attributes {kiln.dispatch} {
  %0 = linalg.matmul ins(%a, %b : tensor<16x1024xf32>, tensor<1024x32xf32>) outs(%c : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}
func.func @not_cache_blocked(%a: tensor<16x1028xf32>, %b: tensor<1028x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> attributes {kiln.dispatch} {
  %0 = linalg.matmul ins(%a, %b : tensor<16x1028xf32>, tensor<1028x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>
}

// -----

// A one-column partial tile (N = 17 = 16 + 1, as a 7x7 image's 49th pixel
// leaves): lowered to outer products, each k step would be 4 scalar FMAs,
// an instruction per row and k. Its k loop instead carries 4 x 4 partial
// sums (each row's 4 k steps side by side: one vector FMA per row, of the A
// row segment and the 4 B elements of the column), and the rows' partial
// sums are added to the accumulator once, after the loop: one horizontal
// sum per row, none inside the loop.
// CHECK-LABEL: func @one_column_tile
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<4x16xf32>)
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<4x1xf32>, vector<4x1xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}, %[[SUMS:.*]] = %{{.*}}) -> ({{.*}}vector<4x4xf32>)
// CHECK-NOT: vector.reduction
// CHECK: %[[A:.*]] = vector.transfer_read {{.*}} : tensor<4x4xf32>, vector<4x4xf32>
// CHECK: %[[B:.*]] = vector.transfer_read {{.*}} : tensor<4x1xf32>, vector<4x1xf32>
// CHECK: %[[K:.*]] = vector.shape_cast %[[B]] : vector<4x1xf32> to vector<4xf32>
// CHECK: %[[KS:.*]] = vector.broadcast %[[K]] : vector<4xf32> to vector<4x4xf32>
// CHECK: vector.fma %[[A]], %[[KS]], %[[SUMS]] : vector<4x4xf32>
// CHECK-NOT: vector.reduction
// CHECK: scf.yield
// CHECK-COUNT-4: vector.reduction <add>, %{{.*}}, %{{.*}} : vector<4xf32> into f32
// CHECK-NOT: vector.reduction
// CHECK: vector.transfer_write %{{.*}} : vector<4x1xf32>, tensor<4x1xf32>
func.func @one_column_tile(%a: tensor<4x64xf32>, %b: tensor<64x17xf32>, %c: tensor<4x17xf32>) -> tensor<4x17xf32> attributes {kiln.dispatch} {
  %0 = linalg.matmul ins(%a, %b : tensor<4x64xf32>, tensor<64x17xf32>) outs(%c : tensor<4x17xf32>) -> tensor<4x17xf32>
  return %0 : tensor<4x17xf32>
}

// -----

// Small integer contractions (kiln.matmul_integer: i8 or widened i32
// operands, i32 accumulator) are vectorized whole, with two batch dimensions
// (which once became an invalid linalg.batch_matmul, then a vector mask of
// the wrong rank): i8 operands are sign-extended in vector registers.
// CHECK-LABEL: func @integer_not_vectorized
// CHECK-NOT: linalg.batch_matmul
// CHECK-NOT: linalg.generic
// CHECK: arith.muli %{{.*}}, %{{.*}} : vector<5xi32>
// CHECK: arith.extsi %{{.*}} : vector<{{.*}}xi8> to vector<{{.*}}xi32>
// CHECK-NOT: linalg.matmul
// CHECK-NOT: vector.contract
#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#rhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#res = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
func.func @integer_not_vectorized(%a: tensor<2x3x4x8xi32>, %b: tensor<2x3x8x5xi32>, %c: tensor<2x3x4x5xi32>,
                                  %x: tensor<4x8xi8>, %y: tensor<8x6xi8>, %z: tensor<4x6xi32>) -> (tensor<2x3x4x5xi32>, tensor<4x6xi32>) attributes {kiln.dispatch} {
  %0 = linalg.generic {indexing_maps = [#lhs, #rhs, #res], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%a, %b : tensor<2x3x4x8xi32>, tensor<2x3x8x5xi32>) outs(%c : tensor<2x3x4x5xi32>) {
  ^bb0(%in: i32, %in_0: i32, %out: i32):
    %m = arith.muli %in, %in_0 : i32
    %s = arith.addi %out, %m : i32
    linalg.yield %s : i32
  } -> tensor<2x3x4x5xi32>
  %1 = linalg.matmul ins(%x, %y : tensor<4x8xi8>, tensor<8x6xi8>) outs(%z : tensor<4x6xi32>) -> tensor<4x6xi32>
  return %0, %1 : tensor<2x3x4x5xi32>, tensor<4x6xi32>
}

// -----

// Elementwise ops (a bias broadcast along rows, then ReLU) are tiled to rows
// of 16 along the innermost output dimension and vectorized: 40 = 2 x 16 + 8,
// so the full tiles are vector<16xf32> and the peeled tail vector<8xf32>. The
// bias is read once per row and broadcast; ReLU is a compare and a select
// (one vmaxps).
// CHECK-LABEL: func @elementwise_rows
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: vector.transfer_read %{{.*}} : tensor<f32>, vector<f32>
// CHECK: vector.broadcast %{{.*}} : vector<f32> to vector<16xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<16xf32>, tensor<16xf32>
// CHECK: vector.broadcast %{{.*}} : vector<f32> to vector<8xf32>
// CHECK: vector.transfer_write %{{.*}} : vector<8xf32>, tensor<8xf32>
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK-NOT: linalg.generic
#row = affine_map<(d0, d1) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise_rows(%bias: tensor<4xf32>) -> tensor<4x40xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<4x40xf32>
  %b = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]} ins(%bias : tensor<4xf32>) outs(%e : tensor<4x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x40xf32>
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<4x40xf32>) outs(%e : tensor<4x40xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x40xf32>
  return %r : tensor<4x40xf32>
}

// -----

// Left scalar: i1 masks (one byte per element in memory, packed bits in an
// LLVM vector: a vector load of the mask read bits and broke a causal
// attention mask).
// CHECK-LABEL: func @elementwise_mask_not_vectorized
// CHECK-NOT: vector.
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<32xf32>)
// CHECK: arith.select
// CHECK-NOT: vector.
// CHECK: return
#id1 = affine_map<(d0) -> (d0)>
func.func @elementwise_mask_not_vectorized(%m: tensor<32xi1>) -> tensor<32xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<32xf32>
  %a = arith.constant -1.0e9 : f32
  %z = arith.constant 0.0 : f32
  %s = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%m : tensor<32xi1>) outs(%e : tensor<32xf32>) {
  ^bb0(%in: i1, %out: f32):
    %v = arith.select %in, %a, %z : f32
    linalg.yield %v : f32
  } -> tensor<32xf32>
  return %s : tensor<32xf32>
}

// -----

// f32 erf (GELU), exp and tanh become polynomial approximations: vectorized
// in elementwise ops, inline (no libm call) in the scalar code that is left,
// such as a softmax's exp-and-sum reduction. f64 keeps math.exp (libm).
// erf is x P(x^2) / Q(x^2) on x clamped to [-3.925, 3.925] (codegen/common/Erf.cpp): five
// FMAs for each polynomial, one division, the result clamped to [-1, 1];
// none of the selects of MLIR's three intervals.
// CHECK-LABEL: func @approximated_math
// CHECK-NOT: math.erf
// CHECK: %[[X:.*]] = vector.transfer_read
// CHECK: arith.cmpf ogt, %[[X]]
// CHECK: arith.select
// CHECK: arith.cmpf olt
// CHECK: %[[XC:.*]] = arith.select
// CHECK: %[[T:.*]] = arith.mulf %[[XC]], %[[XC]] : vector<16xf32>
// CHECK-COUNT-5: math.fma {{.*}}, %[[T]], {{.*}} : vector<16xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[XC]], {{.*}} : vector<16xf32>
// CHECK-COUNT-5: math.fma {{.*}}, %[[T]], {{.*}} : vector<16xf32>
// CHECK: %[[R:.*]] = arith.divf %[[P]], {{.*}} : vector<16xf32>
// CHECK: arith.cmpf ogt, %[[R]]
// CHECK: arith.select
// CHECK: arith.cmpf olt
// CHECK: %[[E:.*]] = arith.select
// CHECK-NOT: arith.select
// CHECK: vector.transfer_write %[[E]]
// CHECK-NOT: math.erf
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK-NOT: math.exp {{.*}} : f32
// CHECK: math.exp {{.*}} : f64
#id1 = affine_map<(d0) -> (d0)>
#sum = affine_map<(d0) -> ()>
func.func @approximated_math(%x: tensor<32xf32>, %y: tensor<32xf32>, %acc: tensor<f32>, %d: f64) -> (tensor<32xf32>, tensor<f32>, f64) attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<32xf32>
  %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%x : tensor<32xf32>) outs(%e : tensor<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.erf %in : f32
    linalg.yield %v : f32
  } -> tensor<32xf32>
  %s = linalg.generic {indexing_maps = [#id1, #sum], iterator_types = ["reduction"]} ins(%y : tensor<32xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    %a = arith.addf %out, %v : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %de = math.exp %d : f64
  return %r, %s, %de : tensor<32xf32>, tensor<f32>, f64
}

// -----

// f32 exp (codegen/common/Exp.cpp): the input clamped to [-87.68, 89]
// (ordered compares, NaN passes), n = round(x log2 e) by adding 1.5 * 2^23,
// r = x - n ln2 in two FMAs, a degree-6 polynomial (6 FMAs) for 2 e^r, and
// 2^(n - 1) from the rounded value's bits: 15 vector ops, where MLIR's
// approximation (floor, a second clamp, a conversion) took ~21.
// CHECK-LABEL: func @exp_polynomial
// CHECK: %[[X:.*]] = vector.transfer_read
// CHECK: arith.cmpf ogt, %[[X]]
// CHECK: arith.select
// CHECK: arith.cmpf olt
// CHECK: %[[XC:.*]] = arith.select
// CHECK: %[[T:.*]] = math.fma %[[XC]], %{{.*}}, %[[SHIFT:.*]] : vector<16xf32>
// CHECK: %[[N:.*]] = arith.subf %[[T]], %[[SHIFT]] : vector<16xf32>
// CHECK: %[[R0:.*]] = math.fma %[[N]], %{{.*}}, %[[XC]] : vector<16xf32>
// CHECK: %[[R:.*]] = math.fma %[[N]], %{{.*}}, %[[R0]] : vector<16xf32>
// CHECK-COUNT-6: math.fma {{.*}}, %[[R]], {{.*}} : vector<16xf32>
// CHECK: %[[BITS:.*]] = arith.bitcast %[[T]] : vector<16xf32> to vector<16xi32>
// CHECK: %[[SHL:.*]] = arith.shli %[[BITS]], %{{.*}} : vector<16xi32>
// CHECK: %[[ADD:.*]] = arith.addi %[[SHL]], %{{.*}} : vector<16xi32>
// CHECK: %[[SCALE:.*]] = arith.bitcast %[[ADD]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[E:.*]] = arith.mulf %{{.*}}, %[[SCALE]] : vector<16xf32>
// CHECK-NOT: math.floor
// CHECK-NOT: arith.fptosi
// CHECK: vector.transfer_write %[[E]]
#id1 = affine_map<(d0) -> (d0)>
func.func @exp_polynomial(%x: tensor<32xf32>) -> tensor<32xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<32xf32>
  %r = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%x : tensor<32xf32>) outs(%e : tensor<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

// max / min against a constant that is not NaN (ReLU6: Clip(0, 6)) become
// an ordered compare and a select each (codegen/common/Clamps.cpp): NaN in
// x passes through, and x86 takes each as one vmaxps / vminps. A max of two
// variables, or against a NaN constant, stays arith.maximumf.
// CHECK-LABEL: func @clamps_to_constants
// CHECK-DAG: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK-DAG: %[[SIX:.*]] = arith.constant dense<6.000000e+00> : vector<16xf32>
// CHECK-DAG: %[[NAN:.*]] = arith.constant dense<0x7FC00000> : vector<16xf32>
// CHECK: %[[X:.*]] = vector.transfer_read %{{.*}} : tensor<16xf32>, vector<16xf32>
// CHECK: %[[Y:.*]] = vector.transfer_read %{{.*}} : tensor<16xf32>, vector<16xf32>
// CHECK: %[[LT:.*]] = arith.cmpf olt, %[[X]], %[[ZERO]] : vector<16xf32>
// CHECK: %[[LO:.*]] = arith.select %[[LT]], %[[ZERO]], %[[X]]
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[LO]], %[[SIX]] : vector<16xf32>
// CHECK: %[[HI:.*]] = arith.select %[[GT]], %[[SIX]], %[[LO]]
// CHECK: %[[M:.*]] = arith.maximumf %[[HI]], %[[Y]] : vector<16xf32>
// CHECK: arith.maximumf %[[M]], %[[NAN]] : vector<16xf32>
#id1 = affine_map<(d0) -> (d0)>
func.func @clamps_to_constants(%x: tensor<32xf32>, %y: tensor<32xf32>) -> tensor<32xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<32xf32>
  %r = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]} ins(%x, %y : tensor<32xf32>, tensor<32xf32>) outs(%e : tensor<32xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %six = arith.constant 6.0 : f32
    %nan = arith.constant 0x7FC00000 : f32
    %lo = arith.maximumf %in, %zero : f32
    %hi = arith.minimumf %six, %lo : f32
    %m = arith.maximumf %hi, %in2 : f32
    %n = arith.maximumf %m, %nan : f32
    linalg.yield %n : f32
  } -> tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

// A comparison of a row with a scalar (kiln.equal %x, %scalar) has a
// depthwise tap's shape (two inputs, one loop, a rank-0 input) but an i1
// result: left scalar too (a vector<3xi1> store wrote three bits into the
// first byte and left the other two bytes stale).
// CHECK-LABEL: func @compare_with_scalar_not_vectorized
// CHECK-NOT: vector.
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<3xi1>)
// CHECK: arith.cmpi eq
// CHECK-NOT: vector.
// CHECK: return
#id1 = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @compare_with_scalar_not_vectorized(%x: tensor<3xi64>) -> tensor<3xi1> attributes {kiln.dispatch} {
  %c = arith.constant dense<2> : tensor<i64>
  %e = tensor.empty() : tensor<3xi1>
  %r = linalg.generic {indexing_maps = [#id1, #scalar, #id1], iterator_types = ["parallel"]} ins(%x, %c : tensor<3xi64>, tensor<i64>) outs(%e : tensor<3xi1>) {
  ^bb0(%in: i64, %in_0: i64, %out: i1):
    %v = arith.cmpi eq, %in, %in_0 : i64
    linalg.yield %v : i1
  } -> tensor<3xi1>
  return %r : tensor<3xi1>
}
