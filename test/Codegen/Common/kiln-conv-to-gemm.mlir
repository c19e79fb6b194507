// RUN: kiln-opt %s -split-input-file --kiln-conv-to-gemm | FileCheck %s

// 1x1, stride 1: no gather. The image is flattened to [N, C, H*W], the
// filter to [F, C], and one contraction computes out[n, f, p] +=
// w[f, c] * in[n, c, p] (d3 = c is the reduction), expanded back to NCHW.
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @one_by_one
// CHECK-NOT: linalg.conv_2d_nchw_fchw
// CHECK-DAG: %[[I:.*]] = tensor.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : tensor<1x8x4x4xf32> into tensor<1x8x16xf32>
// CHECK-DAG: %[[F:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<16x8x1x1xf32> into tensor<16x8xf32>
// CHECK-DAG: %[[O:.*]] = tensor.collapse_shape %arg2 {{\[}}[0], [1], [2, 3]] : tensor<1x16x4x4xf32> into tensor<1x16x16xf32>
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[W]], #[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[F]], %[[I]] : tensor<16x8xf32>, tensor<1x8x16xf32>) outs(%[[O]] : tensor<1x16x16xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[E:.*]] = tensor.expand_shape %[[G]] {{\[}}[0], [1], [2, 3]] output_shape [1, 16, 4, 4] : tensor<1x16x16xf32> into tensor<1x16x4x4xf32>
// CHECK: return %[[E]]
// CHECK-NOT: kiln.im2col
func.func @one_by_one(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %init: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) outs(%init : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %0 : tensor<1x16x4x4xf32>
}

// -----

// 3x3 (input padded to 10x10, output 8x8): an im2col gather builds the
// [N, C*KH*KW, OH*OW] = [1, 27, 64] patch matrix and is tagged with its
// window: output width 8 (kiln-cpu-distribute tiles it by whole rows), 3x3
// filter, unit strides and dilations (kiln-cpu-vectorize-gemm copies rows);
// the contraction reads the gather and the [F, C*KH*KW] filter.
// CHECK-DAG: #[[GATHER:.*]] = affine_map<(d0, d1, d2) -> (d0, d1 floordiv 9, d2 floordiv 8 + (d1 mod 9) floordiv 3, d2 mod 8 + d1 mod 3)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-LABEL: func @three_by_three
// CHECK-NOT: linalg.conv_2d_nchw_fchw
// CHECK-DAG: %[[F:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<4x3x3x3xf32> into tensor<4x27xf32>
// CHECK-DAG: %[[O:.*]] = tensor.collapse_shape %arg2 {{\[}}[0], [1], [2, 3]] : tensor<1x4x8x8xf32> into tensor<1x4x64xf32>
// CHECK: %[[COLS:.*]] = linalg.generic {indexing_maps = [#[[GATHER]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME: ins(%arg0 : tensor<1x3x10x10xf32>) outs(%{{.*}} : tensor<1x27x64xf32>) attrs = {kiln.im2col = array<i64: 8, 3, 3, 1, 1, 1, 1>}
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[W]], #[[IN]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[F]], %[[COLS]] : tensor<4x27xf32>, tensor<1x27x64xf32>) outs(%[[O]] : tensor<1x4x64xf32>)
// CHECK-NOT: kiln.im2col
// CHECK: tensor.expand_shape %[[G]] {{\[}}[0], [1], [2, 3]] output_shape [1, 4, 8, 8]
func.func @three_by_three(%x: tensor<1x3x10x10xf32>, %w: tensor<4x3x3x3xf32>, %init: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%init : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// A 1x1 convolution with stride 2 is not a plain GEMM over the image: it
// goes through the gather too (output width 2).
// CHECK-LABEL: func @one_by_one_strided
// CHECK-NOT: linalg.conv_2d_nchw_fchw
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<1x8x4x4xf32>) outs(%{{.*}} : tensor<1x8x4xf32>) attrs = {kiln.im2col = array<i64: 2, 1, 1, 2, 2, 1, 1>}
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: outs(%{{.*}} : tensor<1x16x4xf32>)
func.func @one_by_one_strided(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %init: tensor<1x16x2x2xf32>) -> tensor<1x16x2x2xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) outs(%init : tensor<1x16x2x2xf32>) -> tensor<1x16x2x2xf32>
  return %0 : tensor<1x16x2x2xf32>
}

// -----

// The epilogue is collapsed onto the GEMM's [N, F, H*W] space: the bias
// broadcast that initializes the accumulator and the relu after it become
// 3-d generics, so the whole dispatch is one fusable loop nest with a single
// expand_shape at the end.
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func @conv_bias_relu
// CHECK: %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[BIAS]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg2 : tensor<16xf32>) outs(%{{.*}} : tensor<1x16x16xf32>)
// CHECK: %[[G:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-SAME: outs(%[[INIT]] : tensor<1x16x16xf32>)
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID3]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[G]] : tensor<1x16x16xf32>)
// CHECK: arith.maximumf
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]] {{\[}}[0], [1], [2, 3]] output_shape [1, 16, 4, 4]
// CHECK-NEXT: return %[[E]]
#bias = affine_map<(d0, d1, d2, d3) -> (d1)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv_bias_relu(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x1x1xf32>, %b: tensor<16xf32>) -> tensor<1x16x4x4xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<1x16x4x4xf32>
  %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%b : tensor<16xf32>) outs(%e : tensor<1x16x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<1x16x4x4xf32>
  %conv = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) outs(%init : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%conv : tensor<1x16x4x4xf32>) outs(%e : tensor<1x16x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %cst : f32
    linalg.yield %m : f32
  } -> tensor<1x16x4x4xf32>
  return %relu : tensor<1x16x4x4xf32>
}

// -----

// Other convolutions are left alone (depthwise here).
// CHECK-LABEL: func @depthwise
// CHECK: linalg.depthwise_conv_2d_nchw_chw
// CHECK-NOT: linalg.generic
// CHECK-NOT: kiln.im2col
func.func @depthwise(%x: tensor<1x4x10x10xf32>, %w: tensor<4x3x3xf32>, %init: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %0 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x4x10x10xf32>, tensor<4x3x3xf32>) outs(%init : tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// An integer 1x1 convolution (kiln.conv_integer with signed i8 operands)
// reads i8 into an i32 accumulator: the GEMM sign-extends both operands as
// the convolution did.
// CHECK-LABEL: func @one_by_one_i8
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<6x8xi8>, tensor<1x8x25xi8>) outs(%{{.*}} : tensor<1x6x25xi32>)
// CHECK-NEXT: ^bb0(%[[W:.*]]: i8, %[[I:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK-NEXT: %[[WW:.*]] = arith.extsi %[[W]] : i8 to i32
// CHECK-NEXT: %[[IW:.*]] = arith.extsi %[[I]] : i8 to i32
// CHECK-NEXT: %[[P:.*]] = arith.muli %[[WW]], %[[IW]] : i32
// CHECK-NEXT: arith.addi %[[ACC]], %[[P]] : i32
func.func @one_by_one_i8(%x: tensor<1x8x5x5xi8>, %w: tensor<6x8x1x1xi8>, %init: tensor<1x6x5x5xi32>) -> tensor<1x6x5x5xi32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x5x5xi8>, tensor<6x8x1x1xi8>) outs(%init : tensor<1x6x5x5xi32>) -> tensor<1x6x5x5xi32>
  return %0 : tensor<1x6x5x5xi32>
}

// -----

// An integer convolution of an i8 filter into an i32 accumulator: the filter
// is extended (signed, as the convolution's own cast) before the im2col
// rewrite reshapes it, so the contraction reads i32 on both sides (the
// reshape must not reinterpret i8 data as i32).
// CHECK-LABEL: func @mixed_integer
// CHECK: %[[WIDE:.*]] = linalg.generic
// CHECK-SAME: ins(%{{.*}} : tensor<3x18xi8>) outs(%{{.*}} : tensor<3x18xi32>)
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: %[[COLS:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<1x2x4x4xi32>) outs(%{{.*}} : tensor<1x18x4xi32>) attrs = {kiln.im2col
// CHECK: linalg.generic {{.*}} ins(%[[WIDE]], %[[COLS]] : tensor<3x18xi32>, tensor<1x18x4xi32>)
func.func @mixed_integer(%x: tensor<1x2x4x4xi32>, %w: tensor<3x2x3x3xi8>, %init: tensor<1x3x2x2xi32>) -> tensor<1x3x2x2xi32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x2x4x4xi32>, tensor<3x2x3x3xi8>) outs(%init : tensor<1x3x2x2xi32>) -> tensor<1x3x2x2xi32>
  return %0 : tensor<1x3x2x2xi32>
}

// -----

// An integer 3x3 convolution of int8 bytes gathers bytes, not i32: the
// gather flips each byte's top bit (x + 128 as uint8) and the GEMM
// multiplies the sign-extended filter by the zero-extended columns, then
// subtracts 128 * (the filter's row sums): sum w * x = sum w * (x + 128) -
// 128 * sum w. Nothing is widened to i32 before the GEMM.
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func @im2col_i8
// CHECK-NOT: tensor<1x8x10x10xi32>
// CHECK: %[[COLS:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<1x8x10x10xi8>) outs(%{{.*}} : tensor<1x72x64xi8>) attrs = {kiln.im2col = array<i64: 8, 3, 3, 1, 1, 1, 1>}
// CHECK-NEXT: ^bb0(%[[X:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT: %[[F:.*]] = arith.xori %[[X]], %{{.*}} : i8
// CHECK-NEXT: linalg.yield %[[F]] : i8
// CHECK: %[[W:.*]] = tensor.collapse_shape %arg1 {{\[}}[0], [1, 2, 3]] : tensor<16x8x3x3xi8> into tensor<16x72xi8>
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%[[W]], %[[COLS]] : tensor<16x72xi8>, tensor<1x72x64xi8>) outs(%{{.*}} : tensor<1x16x64xi32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: i8, %[[B:.*]]: i8, %[[ACC:.*]]: i32):
// CHECK-NEXT: arith.extsi %[[A]] : i8 to i32
// CHECK-NEXT: arith.extui %[[B]] : i8 to i32
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<16x72xi8>) outs(%{{.*}} : tensor<16xi32>)
// CHECK: linalg.generic {indexing_maps = [#{{[^,]*}}, #[[ROW]], #{{[^,]*}}], {{.*}}} ins(%[[G]], %[[S]] : tensor<1x16x64xi32>, tensor<16xi32>)
// CHECK-NEXT: ^bb0(%[[P:.*]]: i32, %[[Q:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT: %[[M:.*]] = arith.muli %[[Q]], %{{.*}} : i32
// CHECK-NEXT: arith.subi %[[P]], %[[M]] : i32
func.func @im2col_i8(%x: tensor<1x8x10x10xi8>, %w: tensor<16x8x3x3xi8>, %o: tensor<1x16x8x8xi32>) -> tensor<1x16x8x8xi32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x8x10x10xi8>, tensor<16x8x3x3xi8>) outs(%o : tensor<1x16x8x8xi32>) -> tensor<1x16x8x8xi32>
  return %0 : tensor<1x16x8x8xi32>
}

// -----

// A [32, 1, 128] x [128, 384] matmul is a [32, 384] GEMM expanded to
// [32, 1, 384]; its bias add (the bias indexed by the last dimension alone)
// drops the unit dimension, so that the epilogue collapses onto the GEMM with
// no reshape between them (else every workgroup of the epilogue would
// recompute the whole GEMM). The expand_shape moves after the epilogue.
// CHECK-LABEL: func @matmul_unit_dim_bias
// CHECK: %[[G:.*]] = linalg.matmul
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[B:.*]] = linalg.generic
// CHECK-SAME: ins(%[[G]], %arg2 : tensor<32x384xf32>, tensor<384xf32>)
// CHECK: arith.addf
// CHECK: tensor.expand_shape %[[B]] {{\[}}[0, 1], [2]] output_shape [32, 1, 384]
func.func @matmul_unit_dim_bias(%x: tensor<32x1x128xf32>, %w: tensor<128x384xf32>, %b: tensor<384xf32>) -> tensor<32x1x384xf32> {
  %zero = arith.constant 0.0 : f32
  %xc = tensor.collapse_shape %x [[0], [1, 2]] : tensor<32x1x128xf32> into tensor<32x128xf32>
  %e = tensor.empty() : tensor<32x384xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x384xf32>) -> tensor<32x384xf32>
  %m = linalg.matmul ins(%xc, %w : tensor<32x128xf32>, tensor<128x384xf32>) outs(%f : tensor<32x384xf32>) -> tensor<32x384xf32>
  %me = tensor.expand_shape %m [[0], [1, 2]] output_shape [32, 1, 384] : tensor<32x384xf32> into tensor<32x1x384xf32>
  %o = tensor.empty() : tensor<32x1x384xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%me, %b : tensor<32x1x384xf32>, tensor<384xf32>) outs(%o : tensor<32x1x384xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<32x1x384xf32>
  return %r : tensor<32x1x384xf32>
}

// -----

// A grouped convolution's ReLU epilogue read it through the collapse of its
// grouped layout [N, G, F/G, H, W]: the epilogue is expanded to the grouped
// layout instead and the collapse moves after it, so that the epilogue's
// workgroups fuse the convolution (before, every workgroup recomputed all
// of it outside its tile).
// CHECK-LABEL: func @grouped_epilogue
// CHECK: %[[CONV:.*]] = linalg.conv_2d_ngchw_gfchw
// CHECK: %[[RELU:.*]] = linalg.generic {{.*}} ins(%[[CONV]] : tensor<1x2x4x8x8xf32>)
// CHECK: } -> tensor<1x2x4x8x8xf32>
// CHECK: %[[OUT:.*]] = tensor.collapse_shape %[[RELU]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x4x8x8xf32> into tensor<1x8x8x8xf32>
// CHECK: return %[[OUT]]
func.func @grouped_epilogue(%in: tensor<1x2x4x10x10xf32>, %w: tensor<2x4x4x3x3xf32>, %init: tensor<1x2x4x8x8xf32>) -> tensor<1x8x8x8xf32> attributes {kiln.dispatch} {
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%in, %w : tensor<1x2x4x10x10xf32>, tensor<2x4x4x3x3xf32>) outs(%init : tensor<1x2x4x8x8xf32>) -> tensor<1x2x4x8x8xf32>
  %flat = tensor.collapse_shape %c [[0], [1, 2], [3], [4]] : tensor<1x2x4x8x8xf32> into tensor<1x8x8x8xf32>
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%flat : tensor<1x8x8x8xf32>) outs(%e : tensor<1x8x8x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}

// -----

// Its initial value too: the bias broadcast to [N, F, H, W] and read through
// an expand_shape to the grouped layout is made in the grouped layout
// instead (the bias itself expanded to [G, F/G]), so that the workgroups of
// the convolution fuse it; behind the reshape every workgroup broadcast the
// whole bias again.
// CHECK-LABEL: func @grouped_bias_init
// CHECK: %[[B:.*]] = tensor.expand_shape %arg2 {{\[}}[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<2x4xf32>) outs(%{{.*}} : tensor<1x2x4x8x8xf32>)
// CHECK: linalg.conv_2d_ngchw_gfchw {{.*}} outs(%[[INIT]] : tensor<1x2x4x8x8xf32>)
func.func @grouped_bias_init(%in: tensor<1x2x4x10x10xf32>, %w: tensor<2x4x4x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x2x4x8x8xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<1x8x8x8xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%b : tensor<8xf32>) outs(%e : tensor<1x8x8x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<1x8x8x8xf32>
  %init = tensor.expand_shape %bias [[0], [1, 2], [3], [4]] output_shape [1, 2, 4, 8, 8] : tensor<1x8x8x8xf32> into tensor<1x2x4x8x8xf32>
  %c = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%in, %w : tensor<1x2x4x10x10xf32>, tensor<2x4x4x3x3xf32>) outs(%init : tensor<1x2x4x8x8xf32>) -> tensor<1x2x4x8x8xf32>
  return %c : tensor<1x2x4x8x8xf32>
}
