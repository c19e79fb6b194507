// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-cpu-distribute --canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-cpu-distribute=target-workgroups=4 --canonicalize | FileCheck %s --check-prefix=FOUR
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-cpu-distribute=column-granule=32 --canonicalize | FileCheck %s --check-prefix=WIDE
//
// The pipeline canonicalizes after distribution (the untiled originals are
// then dead); so does this test, so that "fused" means "only inside the
// forall".
//
// How many workgroups: points of the last op's loop nest / 16384, at least 1
// and at most target-workgroups (64 by default). Parallel dims are split in
// turn (outermost first in dispatches without a contraction, which keeps
// reduced rows whole); the granule of a dim is 16 for the last two parallel
// dims (register tile rows, vector width) and 1 before them; a tile is the
// smallest multiple of the granule at least bound/parts that divides the
// bound (else the dim stays whole). In a dispatch with an im2col gather only
// the image dimension is split first, by whole output rows; when that gives
// fewer than min(16, target) workgroups, the other parallel dims make up the
// rest.
// A GEMM (no gather) whose last op is its matrix (the contraction or an
// elementwise epilogue) is tiled instead by the operands its workgroups read:
// see @matmul.

// Elementwise add + relu on 256x256 = 65536 points: 4 workgroups. Dim 0
// (granule 16) gets 4 parts: tile 64. The add feeds only the relu: the two
// become one generic (linalg's elementwise fusion), in the forall.
// CHECK-LABEL: func @elementwise
// CHECK-SAME: attributes {kiln.dispatch, kiln.workgroup_count = 4 : i64}
// CHECK-NOT: linalg.generic
// CHECK: %[[R:.*]] = scf.forall (%[[I:.*]]) = (0) to (256) step (64) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<256x256xf32>)
// CHECK-DAG: %[[A:.*]] = tensor.extract_slice %arg0[%[[I]], 0] [64, 256] [1, 1]
// CHECK-DAG: %[[B:.*]] = tensor.extract_slice %arg1[%[[I]], 0] [64, 256] [1, 1]
// CHECK: %[[RELU:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<64x256xf32>, tensor<64x256xf32>) outs(%{{.*}} : tensor<64x256xf32>)
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[RELU]] into %[[OUT]][%[[I]], 0] [64, 256] [1, 1]
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
// With target-workgroups=4 nothing changes: 4 is also what the size asks for.
// FOUR-LABEL: func @elementwise
// FOUR-SAME: kiln.workgroup_count = 4 : i64
// FOUR: scf.forall (%{{.*}}) = (0) to (256) step (64)
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @elementwise(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<256x256xf32>
  %0 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<256x256xf32>, tensor<256x256xf32>) outs(%e : tensor<256x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<256x256xf32>
  %1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<256x256xf32>) outs(%e : tensor<256x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %s = arith.maximumf %x, %z : f32
    linalg.yield %s : f32
  } -> tensor<256x256xf32>
  return %1 : tensor<256x256xf32>
}

// -----

// 4x512x512 = 2^20 points: 64 workgroups. Dim 0 (granule 1) gives 4 parts of
// 1; the remaining 16 come from dim 1 (granule 16): tile 32; dim 2 stays
// whole. A 2-d forall with steps (1, 32): 4 * 16 = 64 workgroups.
// CHECK-LABEL: func @three_dims
// CHECK-SAME: kiln.workgroup_count = 64 : i64
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) = (0, 0) to (4, 512) step (1, 32)
// CHECK: tensor.extract_slice %arg0[%[[I]], %[[J]], 0] [1, 32, 512] [1, 1, 1]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x32x512xf32>)
// With at most 4 workgroups, dim 0 alone is split (tile 1, so the forall
// prints in its normalized form).
// FOUR-LABEL: func @three_dims
// FOUR-SAME: kiln.workgroup_count = 4 : i64
// FOUR: scf.forall (%{{.*}}) in (4)
// FOUR: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x512x512xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @three_dims(%a: tensor<4x512x512xf32>) -> tensor<4x512x512xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<4x512x512xf32>
  %0 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<4x512x512xf32>) outs(%e : tensor<4x512x512xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<4x512x512xf32>
  return %0 : tensor<4x512x512xf32>
}

// -----

// A GEMM whose result is a matrix is tiled by what its workgroups read: r
// rows and c columns read r x K and K x c, so the dispatch reads
// M N K (1/r + 1/c); the tiles are the largest (lowest sum) that still give
// min(8, target) workgroups, each a multiple of 16 dividing its dimension
// (columns: of column-granule when that divides N). 256^3: 8 workgroups of
// 64 x 128 (128 x 64 is as good; wider column tiles are tried first). The
// fill of the accumulator is fused into each workgroup.
// CHECK-LABEL: func @matmul
// CHECK-SAME: kiln.workgroup_count = 8 : i64
// CHECK-NOT: linalg.fill
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) = (0, 0) to (256, 256) step (64, 128)
// CHECK-DAG: tensor.extract_slice %arg0[%[[I]], 0] {{\[}}[[#TM:]], 256] [1, 1]
// CHECK-DAG: tensor.extract_slice %arg1[0, %[[J]]] [256, [[#TN:]]] [1, 1]
// CHECK: %[[F:.*]] = linalg.fill {{.*}} outs(%{{.*}} : tensor<[[#TM]]x[[#TN]]xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<[[#TM]]x256xf32>, tensor<256x[[#TN]]xf32>) outs(%[[F]] : tensor<[[#TM]]x[[#TN]]xf32>)
// CHECK: scf.forall.in_parallel
func.func @matmul(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<256x256xf32>, tensor<256x256xf32>) outs(%f : tensor<256x256xf32>) -> tensor<256x256xf32>
  return %0 : tensor<256x256xf32>
}

// -----

// A batched product (Winograd's 36 points, attention heads): batch tiles
// add no reads, so each workgroup takes whole products ([64, 64] x [64,
// 48]) and, of the batch tiles that read as little, the one with the most
// workgroups (at most target): 12 of one product each. Split by rows
// instead, each workgroup reread its batch's right-hand side.
// CHECK-LABEL: func @batched
// CHECK-SAME: kiln.workgroup_count = 12 : i64
// CHECK: scf.forall (%{{.*}}) in (12)
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x64x48xf32>
func.func @batched(%a: tensor<12x64x64xf32>, %b: tensor<12x64x48xf32>) -> tensor<12x64x48xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<12x64x48xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<12x64x48xf32>) -> tensor<12x64x48xf32>
  %0 = linalg.batch_matmul ins(%a, %b : tensor<12x64x64xf32>, tensor<12x64x48xf32>) outs(%f : tensor<12x64x48xf32>) -> tensor<12x64x48xf32>
  return %0 : tensor<12x64x48xf32>
}

// -----

// A linear layer of 197 tokens (ViT-B/16's MLP) with its bias: the consumer
// is the elementwise add, a [197, 768] matrix. 197 is prime, so the rows
// stay whole and the columns give the workgroups: 8 of 96 (4 of 192 would
// be too few; 12 of 64 read the activations 12 times). With 32-column
// register tiles (column-granule=32) too, since 32 divides 768.
// CHECK-LABEL: func @linear_prime_rows
// CHECK-SAME: kiln.workgroup_count = 8 : i64
// CHECK: scf.forall (%[[J:.*]]) = (0) to (768) step (96)
// CHECK: linalg.matmul {{.*}} -> tensor<197x96xf32>
// CHECK: linalg.generic
// CHECK: scf.forall.in_parallel
// WIDE-LABEL: func @linear_prime_rows
// WIDE: scf.forall (%{{.*}}) = (0) to (768) step (96)
func.func @linear_prime_rows(%a: tensor<197x64xf32>, %b: tensor<64x768xf32>, %bias: tensor<768xf32>) -> tensor<197x768xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<197x768xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<197x768xf32>) -> tensor<197x768xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<197x64xf32>, tensor<64x768xf32>) outs(%f : tensor<197x768xf32>) -> tensor<197x768xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%0, %bias : tensor<197x768xf32>, tensor<768xf32>) outs(%e : tensor<197x768xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<197x768xf32>
  return %1 : tensor<197x768xf32>
}

// -----

// Column tiles are multiples of column-granule when it divides N: N = 1120
// (32 x 35) by 64 rows, at least 8 workgroups. In 16s the lowest sum is
// 64 x 112 (10 workgroups; 112 = 3 x 32 + 16, whose last 16 columns take a
// narrower register tile). In 32s the column candidates are 32, 160, 224,
// 1120: 64 x 32 (35 workgroups) reads more than 32 x 224 (10), so the rows
// are split too.
// CHECK-LABEL: func @column_granule
// CHECK: scf.forall (%{{.*}}) = (0) to (1120) step (112)
// WIDE-LABEL: func @column_granule
// WIDE-SAME: kiln.workgroup_count = 10 : i64
// WIDE: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (64, 1120) step (32, 224)
func.func @column_granule(%a: tensor<64x64xf32>, %b: tensor<64x1120xf32>) -> tensor<64x1120xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x1120xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x1120xf32>) -> tensor<64x1120xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x1120xf32>) outs(%f : tensor<64x1120xf32>) -> tensor<64x1120xf32>
  return %0 : tensor<64x1120xf32>
}

// -----

// A depthwise convolution as the dispatch's last op: its loops are (n, oh,
// ow, c, kh, kw), so the output rows are the outermost parallel loop split
// first. They are split in 4s (kiln-cpu-vectorize-gemm tiles the taps over
// 4 output rows), not in single rows (each tile then one chain of 49
// dependent multiply-adds for a 7x7 window). 16 x 16 x 32 x 49 points: 24
// workgroups aimed for; rows in 4 parts of 4, then channels in 2 of 16 (the
// width, 16, stays whole): 8.
// CHECK-LABEL: func @depthwise_rows
// CHECK-SAME: kiln.workgroup_count = 8 : i64
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (16, 32) step (4, 16)
// CHECK: linalg.depthwise_conv_2d_nchw_chw {{.*}} -> tensor<1x16x4x16xf32>
func.func @depthwise_rows(%x: tensor<1x32x22x22xf32>, %w: tensor<32x7x7xf32>) -> tensor<1x32x16x16xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x16x16xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
  %0 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x32x22x22xf32>, tensor<32x7x7xf32>) outs(%f : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
  return %0 : tensor<1x32x16x16xf32>
}

// -----

// A transpose (NHWC -> NCHW) read by a residual add: generalized, it merges
// into the add (one op reading x through the permutation), and the loop
// along which x is contiguous (the channels) is split in 16s, the tile
// kiln-cpu-vectorize-gemm transposes in registers: 64 x 32 x 32 points, 4
// workgroups of 16 channels (in 1s, outermost first, they had 1 channel).
// H and W stay adjacent in both operands: collapsed into one loop of 1024.
// CHECK-LABEL: func @transposed_input
// CHECK-SAME: kiln.workgroup_count = 4 : i64
// CHECK-NOT: linalg.transpose
// CHECK: scf.forall (%{{.*}}) = (0) to (64) step (16)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x1024x16xf32>, tensor<1x16x1024xf32>)
// CHECK-NOT: linalg.generic
// CHECK: scf.forall.in_parallel
func.func @transposed_input(%x: tensor<1x32x32x64xf32>, %r: tensor<1x64x32x32xf32>) -> tensor<1x64x32x32xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<1x64x32x32xf32>
  %t = linalg.transpose ins(%x : tensor<1x32x32x64xf32>) outs(%e : tensor<1x64x32x32xf32>) permutation = [0, 3, 1, 2]
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t, %r : tensor<1x64x32x32xf32>, tensor<1x64x32x32xf32>) outs(%e : tensor<1x64x32x32xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<1x64x32x32xf32>
  return %0 : tensor<1x64x32x32xf32>
}

// -----

// A convolution through im2col (output 12x12, so the gather's maps read
// `p mod 12`), followed by relu and a trailing expand_shape. Only the image
// dimension of the [1, 768, 144] result is tiled, by whole output rows: the
// granule is lcm(12, 16) = 48 (four rows, three whole 16-lane vectors; the
// gathered block of 9 x 48 floats is far below kIm2ColBlockBytes). The
// image alone gives 3 workgroups, fewer than min(4, target): the output
// channels are split too, into ceil(4 / 3) = 2 parts of 384, for 6
// workgroups. The bias fill, the gather, the GEMM and the relu are all
// inside; the gather reads the 6 input rows the four output rows need.
// CHECK-LABEL: func @im2col
// CHECK-SAME: kiln.workgroup_count = 6 : i64
// CHECK-NOT: linalg.generic
// CHECK: %[[R:.*]] = scf.forall (%[[C:.*]], %[[P:.*]]) = (0, 0) to (768, 144) step (384, 48)
// CHECK: tensor.extract_slice %arg0[0, 0, %{{.*}}, %{{.*}}] [1, 1, 6, 14] [1, 1, 1, 1]
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x9x48xf32>) attrs = {kiln.im2col = array<i64: 12, 3, 3, 1, 1, 1, 1>}
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x384x48xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<1x384x48xf32>)
// CHECK: arith.maximumf
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %[[C]], %[[P]]] [1, 384, 48] [1, 1, 1]
// CHECK-NOT: linalg.generic
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]]
// CHECK: return %[[E]]
// With at most 4 workgroups: the same.
// FOUR-LABEL: func @im2col
// FOUR-SAME: kiln.workgroup_count = 6 : i64
// FOUR: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (768, 144) step (384, 48)
// FOUR: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x9x48xf32>) attrs = {kiln.im2col = array<i64: 12, 3, 3, 1, 1, 1, 1>}
#bias = affine_map<(d0, d1, d2) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#gather = affine_map<(d0, d1, d2) -> (d0, d1 floordiv 9, d2 floordiv 12 + (d1 mod 9) floordiv 3, d2 mod 12 + d1 mod 3)>
#filter = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#cols = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @im2col(%x: tensor<1x1x14x14xf32>, %w: tensor<768x1x3x3xf32>, %b: tensor<768xf32>) -> tensor<1x768x12x12xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x768x144xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%b : tensor<768xf32>) outs(%e : tensor<1x768x144xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x768x144xf32>
  %filter = tensor.collapse_shape %w [[0], [1, 2, 3]] : tensor<768x1x3x3xf32> into tensor<768x9xf32>
  %ce = tensor.empty() : tensor<1x9x144xf32>
  %cols = linalg.generic {indexing_maps = [#gather, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x1x14x14xf32>) outs(%ce : tensor<1x9x144xf32>) attrs = {kiln.im2col = array<i64: 12, 3, 3, 1, 1, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x9x144xf32>
  %gemm = linalg.generic {indexing_maps = [#filter, #cols, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%filter, %cols : tensor<768x9xf32>, tensor<1x9x144xf32>) outs(%init : tensor<1x768x144xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %m = arith.mulf %in, %in_1 : f32
    %a = arith.addf %m, %out : f32
    linalg.yield %a : f32
  } -> tensor<1x768x144xf32>
  %relu = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%gemm : tensor<1x768x144xf32>) outs(%e : tensor<1x768x144xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %cst : f32
    linalg.yield %m : f32
  } -> tensor<1x768x144xf32>
  %r = tensor.expand_shape %relu [[0], [1], [2, 3]] output_shape [1, 768, 12, 12] : tensor<1x768x144xf32> into tensor<1x768x12x12xf32>
  return %r : tensor<1x768x12x12xf32>
}

// -----

// Small dispatches are one workgroup and stay untiled: 64x64 = 4096 points.
// CHECK-LABEL: func @tiny
// CHECK-SAME: attributes {kiln.dispatch, kiln.workgroup_count = 1 : i64}
// CHECK-NOT: scf.forall
// CHECK: linalg.copy
func.func @tiny(%a: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<64x64xf32>
  %0 = linalg.copy ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}

// -----

// Functions that are not dispatches are not touched.
// CHECK-LABEL: func @not_a_dispatch
// CHECK-NOT: kiln.workgroup_count
// CHECK-NOT: scf.forall
// CHECK: linalg.matmul ins(%arg0, %arg1 : tensor<256x256xf32>, tensor<256x256xf32>)
func.func @not_a_dispatch(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>, %c: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<256x256xf32>, tensor<256x256xf32>) outs(%c : tensor<256x256xf32>) -> tensor<256x256xf32>
  return %0 : tensor<256x256xf32>
}

// -----

// Dispatches must have static shapes.
#id1 = affine_map<(d0) -> (d0)>
// expected-error @+1 {{dynamic iteration domain in a dispatch}}
func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> attributes {kiln.dispatch} {
  %0 = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%a : tensor<?xf32>) outs(%a : tensor<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// SiLU after a matmul (x * sigmoid(x), two elementwise ops both reading the
// product): the sigmoid feeds only the multiply and is merged into it, and
// the merged op reads the product once (one operand), so that the register
// tiles of kiln-cpu-vectorize-gemm take it as the matmul's epilogue. The
// matmul itself is not merged (it is not elementwise).
// CHECK-LABEL: func @silu_epilogue
// CHECK: scf.forall
// CHECK: %[[MM:.*]] = linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%[[MM]] : tensor<{{.*}}>) outs(
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: scf.forall.in_parallel
#id2s = affine_map<(d0, d1) -> (d0, d1)>
func.func @silu_epilogue(%a: tensor<256x64xf32>, %b: tensor<64x256xf32>) -> tensor<256x256xf32> attributes {kiln.dispatch} {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %m = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x256xf32>) outs(%f : tensor<256x256xf32>) -> tensor<256x256xf32>
  %s = linalg.generic {indexing_maps = [#id2s, #id2s], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<256x256xf32>) outs(%e : tensor<256x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %n = arith.negf %x : f32
    %x1 = math.exp %n : f32
    %d = arith.addf %x1, %one : f32
    %r = arith.divf %one, %d : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %y = linalg.generic {indexing_maps = [#id2s, #id2s, #id2s], iterator_types = ["parallel", "parallel"]} ins(%m, %s : tensor<256x256xf32>, tensor<256x256xf32>) outs(%e : tensor<256x256xf32>) {
  ^bb0(%x: f32, %g: f32, %o: f32):
    %p = arith.mulf %x, %g : f32
    linalg.yield %p : f32
  } -> tensor<256x256xf32>
  return %y : tensor<256x256xf32>
}

// -----

// A per-row value the consumer broadcasts (a layer norm's 1 / sqrt(var +
// eps) over [rows]) stays its own op: merged into the consumer it would be
// a square root and a division per element instead of per row.
// CHECK-LABEL: func @broadcast_producer_kept
// CHECK: %[[INV:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%{{.*}} : tensor<{{[0-9]+}}xf32>)
// CHECK: math.sqrt
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[INV]] : tensor<{{.*}}>, tensor<{{[0-9]+}}xf32>)
// CHECK-NOT: math.sqrt
// CHECK: scf.forall.in_parallel
#rows = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> (d0, d1)>
#vec = affine_map<(d0) -> (d0)>
func.func @broadcast_producer_kept(%x: tensor<64x768xf32>, %var: tensor<64xf32>) -> tensor<64x768xf32> attributes {kiln.dispatch} {
  %one = arith.constant 1.0 : f32
  %eps = arith.constant 1.0e-6 : f32
  %er = tensor.empty() : tensor<64xf32>
  %inv = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]} ins(%var : tensor<64xf32>) outs(%er : tensor<64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %a = arith.addf %v, %eps : f32
    %s = math.sqrt %a : f32
    %r = arith.divf %one, %s : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  %e = tensor.empty() : tensor<64x768xf32>
  %y = linalg.generic {indexing_maps = [#all, #rows, #all], iterator_types = ["parallel", "parallel"]} ins(%x, %inv : tensor<64x768xf32>, tensor<64xf32>) outs(%e : tensor<64x768xf32>) {
  ^bb0(%a: f32, %i: f32, %o: f32):
    %p = arith.mulf %a, %i : f32
    linalg.yield %p : f32
  } -> tensor<64x768xf32>
  return %y : tensor<64x768xf32>
}

// -----

// A grouped convolution whose groups have 8 output channels: workgroups
// take them in fours (cpu::groupedChannelTile, the register tile's
// channels), never one by one as other dimensions are split.
// CHECK-LABEL: func @grouped_channels
// CHECK-SAME: kiln.workgroup_count = 12
// CHECK: scf.forall ({{.*}}) = (0, 0) to (6, 8) step (1, 4)
func.func @grouped_channels(%in: tensor<1x6x8x58x58xf32>, %w: tensor<6x8x8x3x3xf32>, %b: tensor<6x8xf32>) -> tensor<1x6x8x56x56xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<1x6x8x56x56xf32>
  %init = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d1, d2)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%b : tensor<6x8xf32>) outs(%e : tensor<1x6x8x56x56xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<1x6x8x56x56xf32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%in, %w : tensor<1x6x8x58x58xf32>, tensor<6x8x8x3x3xf32>) outs(%init : tensor<1x6x8x56x56xf32>) -> tensor<1x6x8x56x56xf32>
  return %c : tensor<1x6x8x56x56xf32>
}

// -----

// A dispatch that only subsamples an argument (a strided slice: the input of
// a strided 1x1 convolution after kiln-unstride-pointwise-convs) becomes a
// copy generic tiled into workgroups like an elementwise op (canonicalized
// back to each workgroup's block of the slice), instead of one workgroup
// copying it all.
// CHECK-LABEL: func.func @strided_slice_copy
// CHECK-SAME: kiln.workgroup_count = 8
// CHECK: %[[ALL:.*]] = tensor.extract_slice %arg0[0, 0, 0, 0] [1, 256, 28, 28] [1, 1, 2, 2]
// CHECK: scf.forall (%[[C:.*]]) = (0) to (256) step (32)
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %[[ALL]][0, %[[C]], 0, 0] [1, 32, 28, 28] [1, 1, 1, 1]
// CHECK: tensor.parallel_insert_slice %[[BLOCK]] into %{{.*}}[0, %[[C]], 0, 0] [1, 32, 28, 28]
func.func @strided_slice_copy(%arg0: tensor<1x256x56x56xf32>) -> tensor<1x256x28x28xf32> attributes {kiln.dispatch} {
  %0 = tensor.extract_slice %arg0[0, 0, 0, 0] [1, 256, 28, 28] [1, 1, 2, 2] : tensor<1x256x56x56xf32> to tensor<1x256x28x28xf32>
  return %0 : tensor<1x256x28x28xf32>
}

// -----

// An NHWC -> NCHW transpose with a residual add and a ReLU (ResNet-50's
// layer4 after kiln-transpose-pointwise-convs): H and W stay adjacent and
// in order in every operand, so they are collapsed into one loop of 49
// points before tiling; the transposed read is then [49, C] -> [C, 49],
// which kiln-cpu-vectorize-gemm moves in 16 x 16 tiles (a 7-point W was
// too short for them). The result is expanded back after the workgroups.
#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @transposed_read_collapsed
// CHECK-DAG: %[[RES:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1], [2, 3]] : tensor<1x2048x7x7xf32> into tensor<1x2048x49xf32>
// CHECK-DAG: %[[IN:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1, 2], [3]] : tensor<1x7x7x2048xf32> into tensor<1x49x2048xf32>
// CHECK: scf.forall
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: tensor<1x49x512xf32>, tensor<1x512x49xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3]] output_shape [1, 2048, 7, 7]
func.func @transposed_read_collapsed(%arg0: tensor<1x7x7x2048xf32>, %arg1: tensor<1x2048x7x7xf32>) -> tensor<1x2048x7x7xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<1x2048x7x7xf32>
  %1 = linalg.generic {indexing_maps = [#nhwc, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %arg1 : tensor<1x7x7x2048xf32>, tensor<1x2048x7x7xf32>) outs(%0 : tensor<1x2048x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %2 = arith.addf %a, %b : f32
    %3 = arith.maximumf %2, %cst : f32
    linalg.yield %3 : f32
  } -> tensor<1x2048x7x7xf32>
  return %1 : tensor<1x2048x7x7xf32>
}

// -----

// A transpose whose dimensions all move (NCHW -> NHWC of a 3-d view: no two
// loops stay adjacent) keeps its loops.
#perm3 = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @transposed_read_kept
// CHECK-NOT: tensor.collapse_shape
// CHECK-NOT: tensor.expand_shape
// CHECK: return
func.func @transposed_read_kept(%arg0: tensor<1x2048x49xf32>) -> tensor<1x49x2048xf32> attributes {kiln.dispatch} {
  %0 = tensor.empty() : tensor<1x49x2048xf32>
  %1 = linalg.generic {indexing_maps = [#perm3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<1x2048x49xf32>) outs(%0 : tensor<1x49x2048xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<1x49x2048xf32>
  return %1 : tensor<1x49x2048xf32>
}
