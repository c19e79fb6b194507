// RUN: kiln-opt %s --kiln-cpu-vectorize-gemm | FileCheck %s

// A depthwise convolution inside a workgroup becomes, per window tap, a
// vector multiply-add of a broadcast weight and a 16-pixel input row segment.
// CHECK-LABEL: func @depthwise
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
// CHECK: scf.forall
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}>, vector<16xf32>
// CHECK: arith.mulf {{.*}} : vector<16xf32>
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>
func.func @depthwise(%in: tensor<1x4x10x18xf32>, %w: tensor<4x3x3xf32>, %init: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %r = scf.forall (%c) in (4) shared_outs(%o = %init) -> (tensor<1x4x8x16xf32>) {
    %i = tensor.extract_slice %in[0, %c, 0, 0] [1, 1, 10, 18] [1, 1, 1, 1] : tensor<1x4x10x18xf32> to tensor<1x1x10x18xf32>
    %wk = tensor.extract_slice %w[%c, 0, 0] [1, 3, 3] [1, 1, 1] : tensor<4x3x3xf32> to tensor<1x3x3xf32>
    %oi = tensor.extract_slice %o[0, %c, 0, 0] [1, 1, 8, 16] [1, 1, 1, 1] : tensor<1x4x8x16xf32> to tensor<1x1x8x16xf32>
    %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%i, %wk : tensor<1x1x10x18xf32>, tensor<1x3x3xf32>) outs(%oi : tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %d into %o[0, %c, 0, 0] [1, 1, 8, 16] [1, 1, 1, 1] : tensor<1x1x8x16xf32> into tensor<1x4x8x16xf32>
    }
  }
  return %r : tensor<1x4x8x16xf32>
}

// An integer one (8-bit operands into i32, from kiln.conv_integer): the same
// taps as vector multiply-adds of sign-extended bytes.
// CHECK-LABEL: func @depthwise_integer
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}xi8>, vector<16xi8>
// CHECK: arith.extsi {{.*}} : vector<16xi8> to vector<16xi32>
// CHECK: arith.muli {{.*}} : vector<16xi32>
// CHECK: arith.addi {{.*}} : vector<16xi32>
// CHECK: vector.transfer_write {{.*}} : vector<16xi32>
func.func @depthwise_integer(%in: tensor<1x4x10x18xi8>, %w: tensor<4x3x3xi8>, %init: tensor<1x4x8x16xi32>) -> tensor<1x4x8x16xi32> {
  %r = scf.forall (%c) in (4) shared_outs(%o = %init) -> (tensor<1x4x8x16xi32>) {
    %i = tensor.extract_slice %in[0, %c, 0, 0] [1, 1, 10, 18] [1, 1, 1, 1] : tensor<1x4x10x18xi8> to tensor<1x1x10x18xi8>
    %wk = tensor.extract_slice %w[%c, 0, 0] [1, 3, 3] [1, 1, 1] : tensor<4x3x3xi8> to tensor<1x3x3xi8>
    %oi = tensor.extract_slice %o[0, %c, 0, 0] [1, 1, 8, 16] [1, 1, 1, 1] : tensor<1x4x8x16xi32> to tensor<1x1x8x16xi32>
    %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%i, %wk : tensor<1x1x10x18xi8>, tensor<1x3x3xi8>) outs(%oi : tensor<1x1x8x16xi32>) -> tensor<1x1x8x16xi32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %d into %o[0, %c, 0, 0] [1, 1, 8, 16] [1, 1, 1, 1] : tensor<1x1x8x16xi32> into tensor<1x4x8x16xi32>
    }
  }
  return %r : tensor<1x4x8x16xi32>
}

// Stride (2, 1), as text recognizers downsample the height only: the window
// still moves by 1 along the width, so each tap reads a contiguous 16-pixel
// input row segment (one vector load), not a gather over 16 channels.
// CHECK-LABEL: func @depthwise_stride_2_1
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}>, vector<16xf32>
// CHECK: arith.mulf {{.*}} : vector<16xf32>
// CHECK-NOT: vector.gather
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>
func.func @depthwise_stride_2_1(%in: tensor<1x4x9x18xf32>, %w: tensor<4x3x3xf32>, %init: tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32> {
  %r = scf.forall (%c) in (4) shared_outs(%o = %init) -> (tensor<1x4x4x16xf32>) {
    %i = tensor.extract_slice %in[0, %c, 0, 0] [1, 1, 9, 18] [1, 1, 1, 1] : tensor<1x4x9x18xf32> to tensor<1x1x9x18xf32>
    %wk = tensor.extract_slice %w[%c, 0, 0] [1, 3, 3] [1, 1, 1] : tensor<4x3x3xf32> to tensor<1x3x3xf32>
    %oi = tensor.extract_slice %o[0, %c, 0, 0] [1, 1, 4, 16] [1, 1, 1, 1] : tensor<1x4x4x16xf32> to tensor<1x1x4x16xf32>
    %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>}
      ins(%i, %wk : tensor<1x1x9x18xf32>, tensor<1x3x3xf32>) outs(%oi : tensor<1x1x4x16xf32>) -> tensor<1x1x4x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %d into %o[0, %c, 0, 0] [1, 1, 4, 16] [1, 1, 1, 1] : tensor<1x1x4x16xf32> into tensor<1x4x4x16xf32>
    }
  }
  return %r : tensor<1x4x4x16xf32>
}

// Max pooling, 3x3 stride 2 (ResNet's stem): per window tap a vector max
// over 16 output pixels of the workgroup's channel. The input row, strided
// by 2 (the vectorizer takes no strided map: a strided slice first), is
// read as the contiguous 31 elements it spans, into 32 lanes (the last
// masked off), and every second lane kept by one shuffle: no gather.
// CHECK-LABEL: func @max_pool_stride_2
// CHECK-NOT: linalg.pooling_nchw_max
// CHECK-NOT: [16] [2]
// CHECK: tensor.extract_slice {{.*}} [1, 1, 1, 31] [1, 1, 1, 1]
// CHECK: %[[ROW:.*]] = vector.transfer_read {{.*}} : tensor<31xf32>, vector<32xf32>
// CHECK: %[[EVEN:.*]] = vector.shuffle %[[ROW]], %[[ROW]] [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
// CHECK: arith.maximumf %{{.*}}, %[[EVEN]] : vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>
func.func @max_pool_stride_2(%in: tensor<1x4x33x33xf32>, %init: tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32> {
  %r = scf.forall (%c) in (4) shared_outs(%o = %init) -> (tensor<1x4x16x16xf32>) {
    %window = tensor.empty() : tensor<3x3xf32>
    %i = tensor.extract_slice %in[0, %c, 0, 0] [1, 1, 33, 33] [1, 1, 1, 1] : tensor<1x4x33x33xf32> to tensor<1x1x33x33xf32>
    %oi = tensor.extract_slice %o[0, %c, 0, 0] [1, 1, 16, 16] [1, 1, 1, 1] : tensor<1x4x16x16xf32> to tensor<1x1x16x16xf32>
    %p = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%i, %window : tensor<1x1x33x33xf32>, tensor<3x3xf32>) outs(%oi : tensor<1x1x16x16xf32>) -> tensor<1x1x16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %p into %o[0, %c, 0, 0] [1, 1, 16, 16] [1, 1, 1, 1] : tensor<1x1x16x16xf32> into tensor<1x4x16x16xf32>
    }
  }
  return %r : tensor<1x4x16x16xf32>
}

// A grouped convolution (2 groups of 4 channels, RegNet's grouped 3x3
// layers) inside a workgroup: per window tap and input channel of the group,
// a vector multiply-add of a broadcast weight and a 16-pixel input row
// segment, like a depthwise one (before, a scalar loop nest).
// CHECK-LABEL: func @grouped
// CHECK-NOT: linalg.conv_2d_ngchw_gfchw
// CHECK: scf.forall
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}>, vector<16xf32>
// CHECK: arith.mulf {{.*}} : vector<16xf32>
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>
func.func @grouped(%in: tensor<1x2x4x10x18xf32>, %w: tensor<2x4x4x3x3xf32>, %init: tensor<1x2x4x8x16xf32>) -> tensor<1x2x4x8x16xf32> {
  %r = scf.forall (%g, %f) in (2, 4) shared_outs(%o = %init) -> (tensor<1x2x4x8x16xf32>) {
    %i = tensor.extract_slice %in[0, %g, 0, 0, 0] [1, 1, 4, 10, 18] [1, 1, 1, 1, 1] : tensor<1x2x4x10x18xf32> to tensor<1x1x4x10x18xf32>
    %wk = tensor.extract_slice %w[%g, %f, 0, 0, 0] [1, 1, 4, 3, 3] [1, 1, 1, 1, 1] : tensor<2x4x4x3x3xf32> to tensor<1x1x4x3x3xf32>
    %oi = tensor.extract_slice %o[0, %g, %f, 0, 0] [1, 1, 1, 8, 16] [1, 1, 1, 1, 1] : tensor<1x2x4x8x16xf32> to tensor<1x1x1x8x16xf32>
    %d = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%i, %wk : tensor<1x1x4x10x18xf32>, tensor<1x1x4x3x3xf32>) outs(%oi : tensor<1x1x1x8x16xf32>) -> tensor<1x1x1x8x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %d into %o[0, %g, %f, 0, 0] [1, 1, 1, 8, 16] [1, 1, 1, 1, 1] : tensor<1x1x1x8x16xf32> into tensor<1x2x4x8x16xf32>
    }
  }
  return %r : tensor<1x2x4x8x16xf32>
}

// A depthwise convolution strided by 2 along the width (MobileNet's
// downsampling layers) is tiled along the output width too, like a unit
// stride one: each tap reads the contiguous span of its 16 strided input
// pixels and keeps every second lane. (Tiled along the channels, as it was
// before the strided rows were read this way, each tap read one pixel of
// several channels: a gather.)
// CHECK-LABEL: func @depthwise_stride_2
// CHECK: scf.forall
// CHECK-NOT: vector<4xf32>
// CHECK: %[[ROW:.*]] = vector.transfer_read {{.*}} : tensor<31xf32>, vector<32xf32>
// CHECK: %[[EVEN:.*]] = vector.shuffle %[[ROW]], %[[ROW]] [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
// CHECK: arith.mulf %[[EVEN]], %{{.*}} : vector<16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<16xf32>
func.func @depthwise_stride_2(%in: tensor<1x4x17x33xf32>, %w: tensor<4x3x3xf32>, %init: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %r = scf.forall (%c) = (0) to (4) step (4) shared_outs(%o = %init) -> (tensor<1x4x8x16xf32>) {
    %i = tensor.extract_slice %in[0, %c, 0, 0] [1, 4, 17, 33] [1, 1, 1, 1] : tensor<1x4x17x33xf32> to tensor<1x4x17x33xf32>
    %wk = tensor.extract_slice %w[%c, 0, 0] [4, 3, 3] [1, 1, 1] : tensor<4x3x3xf32> to tensor<4x3x3xf32>
    %oi = tensor.extract_slice %o[0, %c, 0, 0] [1, 4, 8, 16] [1, 1, 1, 1] : tensor<1x4x8x16xf32> to tensor<1x4x8x16xf32>
    %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%i, %wk : tensor<1x4x17x33xf32>, tensor<4x3x3xf32>) outs(%oi : tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %d into %o[0, %c, 0, 0] [1, 4, 8, 16] [1, 1, 1, 1] : tensor<1x4x8x16xf32> into tensor<1x4x8x16xf32>
    }
  }
  return %r : tensor<1x4x8x16xf32>
}
