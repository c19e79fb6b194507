// RUN: kiln-opt %s -split-input-file --kiln-cpu-distribute --canonicalize | FileCheck %s

// Regression test for a fixed bug: in an im2col dispatch whose last op is the GEMM itself (a
// convolution with no bias add or activation after it; in ResNet, the
// strided downsample convolution, whose residual add joins the other
// branch's dispatch), the image dimension is not tiled by the image-only
// rule. The pass marks "every loop but the last" of the consumer as not
// tileable, meaning the image dimension to be the one left; that holds for an
// elementwise epilogue (loops n, f, p) but the GEMM's loops are (n, f, p, k):
// the last one is the reduction, so the image dimension is masked out too
// and the first choice of tiles is empty. Only the fallback for "too few
// workgroups" then tiles, and it stops at min(16, target) workgroups.
//
// Here: 3x3 convolution, 64 -> 64 channels, 64x64 output (OW = 64), so
// 64 * 4096 * 576 points and a target of 64 workgroups. By the image-only
// rule that is 64 tiles of one output row each (granule 64), and the
// channels are not split (64 >= 16). The pass gives 16 workgroups instead
// (before commit 11a149a it gave 1). Now: 64.

// CHECK-LABEL: func @im2col_no_epilogue
// CHECK-SAME: kiln.workgroup_count = 64 : i64
// CHECK: scf.forall (%{{.*}}) = (0) to (4096) step (64)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x576x64xf32>) attrs = {kiln.im2col = array<i64: 64, 3, 3, 1, 1, 1, 1>}
#gather = affine_map<(d0, d1, d2) -> (d0, d1 floordiv 9, d2 floordiv 64 + (d1 mod 9) floordiv 3, d2 mod 64 + d1 mod 3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#filter = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#cols = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @im2col_no_epilogue(%x: tensor<1x64x66x66xf32>, %w: tensor<64x64x3x3xf32>) -> tensor<1x64x64x64xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x64x4096xf32>
  %init = linalg.fill ins(%cst : f32) outs(%e : tensor<1x64x4096xf32>) -> tensor<1x64x4096xf32>
  %filter = tensor.collapse_shape %w [[0], [1, 2, 3]] : tensor<64x64x3x3xf32> into tensor<64x576xf32>
  %ce = tensor.empty() : tensor<1x576x4096xf32>
  %cols = linalg.generic {indexing_maps = [#gather, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x64x66x66xf32>) outs(%ce : tensor<1x576x4096xf32>) attrs = {kiln.im2col = array<i64: 64, 3, 3, 1, 1, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x576x4096xf32>
  %gemm = linalg.generic {indexing_maps = [#filter, #cols, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%filter, %cols : tensor<64x576xf32>, tensor<1x576x4096xf32>) outs(%init : tensor<1x64x4096xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %m = arith.mulf %in, %in_1 : f32
    %a = arith.addf %m, %out : f32
    linalg.yield %a : f32
  } -> tensor<1x64x4096xf32>
  %r = tensor.expand_shape %gemm [[0], [1], [2, 3]] output_shape [1, 64, 64, 64] : tensor<1x64x4096xf32> into tensor<1x64x64x64xf32>
  return %r : tensor<1x64x64x64xf32>
}

// -----

// Output rows of 28 (OW = 28): tiles of lcm(28, 16) = 112 points, four rows
// whose gathered block, 1152 x 112 floats (504 KiB), stays within
// kIm2ColBlockBytes: 7 workgroups.
// CHECK-LABEL: func @im2col_rows_of_28
// CHECK-SAME: kiln.workgroup_count = 7 : i64
// CHECK: scf.forall (%{{.*}}) = (0) to (784) step (112)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1152x112xf32>) attrs = {kiln.im2col = array<i64: 28, 3, 3, 1, 1, 1, 1>}
#gather = affine_map<(d0, d1, d2) -> (d0, d1 floordiv 9, d2 floordiv 28 + (d1 mod 9) floordiv 3, d2 mod 28 + d1 mod 3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#filter = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#cols = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @im2col_rows_of_28(%x: tensor<1x128x30x30xf32>, %w: tensor<128x128x3x3xf32>) -> tensor<1x128x784xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x128x784xf32>
  %init = linalg.fill ins(%cst : f32) outs(%e : tensor<1x128x784xf32>) -> tensor<1x128x784xf32>
  %filter = tensor.collapse_shape %w [[0], [1, 2, 3]] : tensor<128x128x3x3xf32> into tensor<128x1152xf32>
  %ce = tensor.empty() : tensor<1x1152x784xf32>
  %cols = linalg.generic {indexing_maps = [#gather, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x128x30x30xf32>) outs(%ce : tensor<1x1152x784xf32>) attrs = {kiln.im2col = array<i64: 28, 3, 3, 1, 1, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x1152x784xf32>
  %gemm = linalg.generic {indexing_maps = [#filter, #cols, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%filter, %cols : tensor<128x1152xf32>, tensor<1x1152x784xf32>) outs(%init : tensor<1x128x784xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %m = arith.mulf %in, %in_1 : f32
    %a = arith.addf %m, %out : f32
    linalg.yield %a : f32
  } -> tensor<1x128x784xf32>
  return %gemm : tensor<1x128x784xf32>
}

// -----

// The same rows with twice the input channels: 2304 x 112 floats (1 MiB)
// would exceed kIm2ColBlockBytes, so tiles stay at one row of 28 points
// (28 * ceil(16 / 28)): 28 workgroups.
// CHECK-LABEL: func @im2col_rows_of_28_deep
// CHECK-SAME: kiln.workgroup_count = 28 : i64
// CHECK: scf.forall (%{{.*}}) = (0) to (784) step (28)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2304x28xf32>) attrs = {kiln.im2col = array<i64: 28, 3, 3, 1, 1, 1, 1>}
#gather = affine_map<(d0, d1, d2) -> (d0, d1 floordiv 9, d2 floordiv 28 + (d1 mod 9) floordiv 3, d2 mod 28 + d1 mod 3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#filter = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#cols = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @im2col_rows_of_28_deep(%x: tensor<1x256x30x30xf32>, %w: tensor<128x256x3x3xf32>) -> tensor<1x128x784xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x128x784xf32>
  %init = linalg.fill ins(%cst : f32) outs(%e : tensor<1x128x784xf32>) -> tensor<1x128x784xf32>
  %filter = tensor.collapse_shape %w [[0], [1, 2, 3]] : tensor<128x256x3x3xf32> into tensor<128x2304xf32>
  %ce = tensor.empty() : tensor<1x2304x784xf32>
  %cols = linalg.generic {indexing_maps = [#gather, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<1x256x30x30xf32>) outs(%ce : tensor<1x2304x784xf32>) attrs = {kiln.im2col = array<i64: 28, 3, 3, 1, 1, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x2304x784xf32>
  %gemm = linalg.generic {indexing_maps = [#filter, #cols, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%filter, %cols : tensor<128x2304xf32>, tensor<1x2304x784xf32>) outs(%init : tensor<1x128x784xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %m = arith.mulf %in, %in_1 : f32
    %a = arith.addf %m, %out : f32
    linalg.yield %a : f32
  } -> tensor<1x128x784xf32>
  return %gemm : tensor<1x128x784xf32>
}

// -----

// A batch of 4 images: the batch is split first, one image per workgroup,
// then each image's rows with the target left (64 / 4 = 16) in tiles of
// lcm(28, 16) = 112 points: 7 per image, 28 in all. No workgroup gathers
// rows of several images into one block.
// CHECK-LABEL: func @im2col_batch
// CHECK-SAME: kiln.workgroup_count = 28 : i64
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (4, 784) step (1, 112)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x1152x112xf32>) attrs = {kiln.im2col = array<i64: 28, 3, 3, 1, 1, 1, 1>}
#gather = affine_map<(d0, d1, d2) -> (d0, d1 floordiv 9, d2 floordiv 28 + (d1 mod 9) floordiv 3, d2 mod 28 + d1 mod 3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#filter = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#cols = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @im2col_batch(%x: tensor<4x128x30x30xf32>, %w: tensor<128x128x3x3xf32>) -> tensor<4x128x784xf32> attributes {kiln.dispatch} {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<4x128x784xf32>
  %init = linalg.fill ins(%cst : f32) outs(%e : tensor<4x128x784xf32>) -> tensor<4x128x784xf32>
  %filter = tensor.collapse_shape %w [[0], [1, 2, 3]] : tensor<128x128x3x3xf32> into tensor<128x1152xf32>
  %ce = tensor.empty() : tensor<4x1152x784xf32>
  %cols = linalg.generic {indexing_maps = [#gather, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<4x128x30x30xf32>) outs(%ce : tensor<4x1152x784xf32>) attrs = {kiln.im2col = array<i64: 28, 3, 3, 1, 1, 1, 1>} {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x1152x784xf32>
  %gemm = linalg.generic {indexing_maps = [#filter, #cols, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%filter, %cols : tensor<128x1152xf32>, tensor<4x1152x784xf32>) outs(%init : tensor<4x128x784xf32>) {
  ^bb0(%in: f32, %in_1: f32, %out: f32):
    %m = arith.mulf %in, %in_1 : f32
    %a = arith.addf %m, %out : f32
    linalg.yield %a : f32
  } -> tensor<4x128x784xf32>
  return %gemm : tensor<4x128x784xf32>
}
