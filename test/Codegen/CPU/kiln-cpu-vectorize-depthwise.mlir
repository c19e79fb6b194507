// RUN: kiln-opt %s --kiln-cpu-vectorize-gemm | FileCheck %s

// A depthwise convolution inside a workgroup becomes, per window tap, a
// vector multiply-add of a broadcast weight and 4 output rows of 16 pixels
// (4 independent accumulators: one row made the 9 taps a chain of dependent
// adds), which may fuse into FMAs (fastmath<contract>). The accumulator
// stays in registers across the taps.
// CHECK-LABEL: func @depthwise
// CHECK-NOT: linalg.depthwise_conv_2d_nchw_chw
// CHECK: scf.forall
// CHECK: scf.for {{.*}} step %c4
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}%[[ACC]]) -> ({{.*}}vector<4x16xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: arith.mulf {{.*}} fastmath<contract> : vector<4x16xf32>
// CHECK: arith.addf {{.*}} fastmath<contract> : vector<4x16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<4x16xf32>
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
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}xi8>, vector<4x16xi8>
// CHECK: arith.extsi {{.*}} : vector<4x16xi8> to vector<4x16xi32>
// CHECK: arith.muli {{.*}} : vector<4x16xi32>
// CHECK: arith.addi {{.*}} : vector<4x16xi32>
// CHECK: vector.transfer_write {{.*}} : vector<4x16xi32>
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
// CHECK: %[[ROWS:.*]] = tensor.extract_slice {{.*}} [4, 16] [2, 1] : tensor<7x16xf32> to tensor<4x16xf32>
// CHECK: vector.transfer_read %[[ROWS]]{{.*}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: arith.mulf {{.*}} : vector<4x16xf32>
// CHECK-NOT: vector.gather
// CHECK: vector.transfer_write {{.*}} : vector<4x16xf32>
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
// A tile of 4 output rows reads 4 input rows (every second one) per tap,
// each that way.
// CHECK-LABEL: func @max_pool_stride_2
// CHECK-NOT: linalg.pooling_nchw_max
// CHECK-NOT: [16] [2]
// CHECK: tensor.extract_slice {{.*}} [1, 1, 7, 31] [1, 1, 1, 1]
// CHECK: %[[SPAN0:.*]] = tensor.extract_slice %[[RAWS:.*]][0, 0] [1, 31] [1, 1] : tensor<7x31xf32> to tensor<31xf32>
// CHECK: %[[ROW:.*]] = vector.transfer_read %[[SPAN0]]{{.*}} : tensor<31xf32>, vector<32xf32>
// CHECK: %[[EVEN:.*]] = vector.shuffle %[[ROW]], %[[ROW]] [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
// CHECK: %[[R0:.*]] = vector.insert %[[EVEN]], %{{.*}} [0] : vector<16xf32> into vector<4x16xf32>
// CHECK: tensor.extract_slice %[[RAWS]][2, 0] [1, 31] [1, 1]
// CHECK: vector.insert %{{.*}}, %[[R0]] [1]
// CHECK: tensor.extract_slice %[[RAWS]][4, 0] [1, 31] [1, 1]
// CHECK: tensor.extract_slice %[[RAWS]][6, 0] [1, 31] [1, 1]
// CHECK: %[[TAP:.*]] = vector.insert %{{.*}}, %{{.*}} [3] : vector<16xf32> into vector<4x16xf32>
// CHECK: arith.maximumf %{{.*}}, %[[TAP]] : vector<4x16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<4x16xf32>
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
// CHECK: vector.transfer_read {{.*}} : tensor<{{.*}}>, vector<4x16xf32>
// CHECK: arith.mulf {{.*}} : vector<4x16xf32>
// CHECK: arith.addf {{.*}} : vector<4x16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<4x16xf32>
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

// A workgroup of a grouped convolution with the 4 output channels of its
// group: the register tile takes them all (cpu::groupedChannelTile), one
// 4 x 4 x 16 accumulator (channels x rows x pixels) that the tap loops
// carry in registers. Each window tap reads its 4 input rows once,
// broadcast to the 4 channels, and multiplies them by the 4 channels'
// weights, one broadcast each.
// CHECK-LABEL: func @grouped_channels
// CHECK: scf.forall
// CHECK: %[[ACC:.*]] = vector.transfer_read {{.*}} : tensor<4x4x16xf32>, vector<4x4x16xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}, %{{.*}} = %[[ACC]])
// CHECK: scf.for
// CHECK: scf.for
// CHECK: %[[ROWS:.*]] = vector.transfer_read {{.*}} : tensor<4x16xf32>, vector<4x16xf32>
// CHECK: %[[IN:.*]] = vector.broadcast %[[ROWS]] : vector<4x16xf32> to vector<4x4x16xf32>
// CHECK: %[[W:.*]] = vector.transfer_read {{.*}} : tensor<4xf32>, vector<4xf32>
// CHECK-COUNT-4: vector.broadcast %{{.*}} : f32 to vector<4x16xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[IN]], %{{.*}} : vector<4x4x16xf32>
// CHECK: arith.addf %{{.*}}, %[[P]] {{.*}} : vector<4x4x16xf32>
// CHECK-NOT: vector.transfer_read
// CHECK: scf.yield
// CHECK: vector.transfer_write {{.*}} : vector<4x4x16xf32>, tensor<4x4x16xf32>
func.func @grouped_channels(%in: tensor<1x2x4x10x18xf32>, %w: tensor<2x4x4x3x3xf32>, %init: tensor<1x2x4x8x16xf32>) -> tensor<1x2x4x8x16xf32> {
  %r = scf.forall (%g) in (2) shared_outs(%o = %init) -> (tensor<1x2x4x8x16xf32>) {
    %i = tensor.extract_slice %in[0, %g, 0, 0, 0] [1, 1, 4, 10, 18] [1, 1, 1, 1, 1] : tensor<1x2x4x10x18xf32> to tensor<1x1x4x10x18xf32>
    %wk = tensor.extract_slice %w[%g, 0, 0, 0, 0] [1, 4, 4, 3, 3] [1, 1, 1, 1, 1] : tensor<2x4x4x3x3xf32> to tensor<1x4x4x3x3xf32>
    %oi = tensor.extract_slice %o[0, %g, 0, 0, 0] [1, 1, 4, 8, 16] [1, 1, 1, 1, 1] : tensor<1x2x4x8x16xf32> to tensor<1x1x4x8x16xf32>
    %d = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%i, %wk : tensor<1x1x4x10x18xf32>, tensor<1x4x4x3x3xf32>) outs(%oi : tensor<1x1x4x8x16xf32>) -> tensor<1x1x4x8x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %d into %o[0, %g, 0, 0, 0] [1, 1, 4, 8, 16] [1, 1, 1, 1, 1] : tensor<1x1x4x8x16xf32> into tensor<1x2x4x8x16xf32>
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
// CHECK: vector.insert %[[EVEN]], %{{.*}} [0] : vector<16xf32> into vector<4x16xf32>
// CHECK-COUNT-3: vector.shuffle
// CHECK: %[[TAP:.*]] = vector.insert %{{.*}}, %{{.*}} [3] : vector<16xf32> into vector<4x16xf32>
// CHECK: arith.mulf %[[TAP]], %{{.*}} : vector<4x16xf32>
// CHECK: vector.transfer_write {{.*}} : vector<4x16xf32>
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

// A workgroup's zero-padded window (pad 1 around 6x18 pixels) is never
// copied: each tap reads its rows from the unpadded input, the row index
// clamped into it and masked off when outside (row h - 1 of the first
// output row), the lanes left of column 0 masked off (column w - 1 of the
// first tap), those past its end out of bounds: all read as the padding
// value. The 6 output rows are a tile of 4 and one of 2, and the 18
// columns one of 16 and one of 2: every tile static and vectorized (4x16,
// 4x2, 2x16, 2x2).
// CHECK-LABEL: func @padded_window
// CHECK-NOT: tensor.pad
// CHECK-NOT: linalg.fill
// CHECK: scf.forall
// CHECK: %[[IN:.*]] = tensor.extract_slice %arg0[0, %{{.*}}, 0, 0] [1, 1, 6, 18]
// CHECK: scf.for %[[KH:.*]] = %c0 to %c3
// CHECK: scf.for %[[KW:.*]] = %c0 to %c3
// CHECK: %[[ROW:.*]] = arith.subi %[[KH]], %c1 : index
// CHECK: %[[GE:.*]] = arith.cmpi sge, %[[ROW]], %c0
// CHECK: %[[LT:.*]] = arith.cmpi slt, %[[ROW]], %c6
// CHECK: %[[INSIDE:.*]] = arith.andi %[[GE]], %[[LT]]
// CHECK: %[[LOW:.*]] = arith.maxsi %[[ROW]], %c0
// CHECK: %[[CLAMPED:.*]] = arith.minsi %[[LOW]], %c5
// CHECK: %[[COL:.*]] = arith.subi %[[KW]], %c1 : index
// CHECK: %[[COLS:.*]] = vector.broadcast %[[COL]] : index to vector<16xindex>
// CHECK: %[[LANES:.*]] = arith.addi %[[COLS]], %{{.*}} : vector<16xindex>
// CHECK: %[[RIGHT:.*]] = arith.cmpi sge, %[[LANES]], %{{.*}} : vector<16xindex>
// CHECK: %[[ROWS:.*]] = vector.broadcast %[[INSIDE]] : i1 to vector<16xi1>
// CHECK: %[[MASK:.*]] = arith.andi %[[RIGHT]], %[[ROWS]] : vector<16xi1>
// CHECK: vector.transfer_read %[[IN]][%c0, %c0, %[[CLAMPED]], %[[COL]]], %{{.*}}, %[[MASK]] : tensor<1x1x6x18xf32>, vector<16xf32>
// CHECK-COUNT-3: vector.transfer_read %[[IN]]{{.*}} : tensor<1x1x6x18xf32>, vector<16xf32>
// CHECK: arith.addf {{.*}} : vector<4x16xf32>
// CHECK: vector.transfer_read %[[IN]]{{.*}} : tensor<1x1x6x18xf32>, vector<2xf32>
// CHECK: arith.addf {{.*}} : vector<4x2xf32>
// CHECK: arith.addf {{.*}} : vector<2x16xf32>
// CHECK: arith.addf {{.*}} : vector<2x2xf32>
// CHECK-NOT: linalg.generic
// CHECK: scf.forall.in_parallel
func.func @padded_window(%in: tensor<1x4x6x18xf32>, %w: tensor<4x3x3xf32>, %init: tensor<1x4x6x18xf32>) -> tensor<1x4x6x18xf32> {
  %zero = arith.constant 0.0 : f32
  %r = scf.forall (%c) in (4) shared_outs(%o = %init) -> (tensor<1x4x6x18xf32>) {
    %i = tensor.extract_slice %in[0, %c, 0, 0] [1, 1, 6, 18] [1, 1, 1, 1] : tensor<1x4x6x18xf32> to tensor<1x1x6x18xf32>
    %p = tensor.pad %i low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%a: index, %b: index, %d: index, %e: index):
      tensor.yield %zero : f32
    } : tensor<1x1x6x18xf32> to tensor<1x1x8x20xf32>
    %wk = tensor.extract_slice %w[%c, 0, 0] [1, 3, 3] [1, 1, 1] : tensor<4x3x3xf32> to tensor<1x3x3xf32>
    %oi = tensor.extract_slice %o[0, %c, 0, 0] [1, 1, 6, 18] [1, 1, 1, 1] : tensor<1x4x6x18xf32> to tensor<1x1x6x18xf32>
    %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %wk : tensor<1x1x8x20xf32>, tensor<1x3x3xf32>) outs(%oi : tensor<1x1x6x18xf32>) -> tensor<1x1x6x18xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %d into %o[0, %c, 0, 0] [1, 1, 6, 18] [1, 1, 1, 1] : tensor<1x1x6x18xf32> into tensor<1x4x6x18xf32>
    }
  }
  return %r : tensor<1x4x6x18xf32>
}

// A pad that no window reads (here the workgroup's result) is made: a fill
// of each side of its border (the first and last row, the first and last
// column; not the whole tile) and one vector copy per source row, at its
// column plus the low padding (bufferized as a tensor.pad, the copy was a
// scalar loop). Rows of 130 pixels are copied in chunks of at most 64 lanes
// (64, 64, 2). A pad by another constant fills with it; a pad outside a
// workgroup stays a pad.
// CHECK-LABEL: func @padded_wide_rows
// CHECK: scf.forall
// CHECK-NOT: linalg.fill {{.*}} tensor<1x1x3x132xf32>
// CHECK: linalg.fill ins(%[[ONE:.*]] : f32) outs(%{{.*}} : tensor<1x1x1x132xf32>)
// CHECK: tensor.insert_slice %{{.*}}[0, 0, 2, 0] [1, 1, 1, 132]
// CHECK: linalg.fill ins(%[[ONE]] : f32) outs(%{{.*}} : tensor<1x1x3x1xf32>)
// CHECK: tensor.insert_slice %{{.*}}[0, 0, 0, 0] [1, 1, 3, 1]
// CHECK: linalg.fill ins(%[[ONE]] : f32) outs(%{{.*}} : tensor<1x1x3x1xf32>)
// CHECK: %[[FILL:.*]] = tensor.insert_slice %{{.*}}[0, 0, 0, 131] [1, 1, 3, 1]
// CHECK: scf.for %[[H:.*]] = %c0 to %c2 step %c1 iter_args(%{{.*}} = %[[FILL]])
// CHECK: vector.transfer_read %{{.*}}[%c0, %c0, %[[H]], %c0{{[_0-9]*}}], %[[ONE]] {in_bounds = [true]} : tensor<1x1x2x130xf32>, vector<64xf32>
// CHECK: vector.transfer_write %{{.*}}[%c0, %c0, %[[H]], %c1{{[_0-9]*}}] {in_bounds = [true]} : vector<64xf32>
// CHECK: vector.transfer_read %{{.*}}[%c0, %c0, %[[H]], %c64{{[_0-9]*}}]{{.*}} vector<64xf32>
// CHECK: vector.transfer_write %{{.*}}[%c0, %c0, %[[H]], %c65{{[_0-9]*}}] {in_bounds = [true]} : vector<64xf32>
// CHECK: vector.transfer_read %{{.*}}[%c0, %c0, %[[H]], %c128{{[_0-9]*}}]{{.*}} vector<2xf32>
// CHECK: vector.transfer_write %{{.*}}[%c0, %c0, %[[H]], %c129{{[_0-9]*}}] {in_bounds = [true]} : vector<2xf32>
// CHECK: tensor.pad
func.func @padded_wide_rows(%wide: tensor<1x4x2x130xf32>) -> (tensor<1x4x3x132xf32>, tensor<1x4x3x132xf32>) {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<1x4x3x132xf32>
  %q = scf.forall (%c) in (4) shared_outs(%o = %e) -> (tensor<1x4x3x132xf32>) {
    %i = tensor.extract_slice %wide[0, %c, 0, 0] [1, 1, 2, 130] [1, 1, 1, 1] : tensor<1x4x2x130xf32> to tensor<1x1x2x130xf32>
    %p = tensor.pad %i low[0, 0, 0, 1] high[0, 0, 1, 1] {
    ^bb0(%a: index, %b: index, %d: index, %f: index):
      tensor.yield %one : f32
    } : tensor<1x1x2x130xf32> to tensor<1x1x3x132xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %p into %o[0, %c, 0, 0] [1, 1, 3, 132] [1, 1, 1, 1] : tensor<1x1x3x132xf32> into tensor<1x4x3x132xf32>
    }
  }
  %outside = tensor.pad %wide low[0, 0, 0, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %d: index, %f: index):
    tensor.yield %one : f32
  } : tensor<1x4x2x130xf32> to tensor<1x4x3x132xf32>
  return %q, %outside : tensor<1x4x3x132xf32>, tensor<1x4x3x132xf32>
}

// A depthwise convolution whose result only an elementwise chain reads (bias
// broadcast into its accumulator, ReLU6 after it) is one register tile with
// them: the bias broadcast in registers, 9 taps, the clip, one store per
// tile (before, the bias, the taps and the clip each made a pass over a
// buffer of the workgroup).
// CHECK-LABEL: func @depthwise_epilogue
// CHECK: scf.forall
// CHECK: scf.for {{.*}} step %c4
// CHECK-NOT: linalg.generic
// CHECK: %[[BIAS:.*]] = vector.broadcast %{{.*}} : vector<f32> to vector<4x16xf32>
// CHECK: %[[TAPS:.*]]:3 = scf.for {{.*}} iter_args({{.*}}, %[[ACC:.*]] = %[[BIAS]]) -> ({{.*}}vector<4x16xf32>)
// CHECK: arith.addf %{{.*}} fastmath<contract> : vector<4x16xf32>
// CHECK: %[[NEG:.*]] = arith.cmpf olt, %[[TAPS]]#2, %{{.*}} : vector<4x16xf32>
// CHECK: %[[LOW:.*]] = arith.select %[[NEG]], %{{.*}}, %[[TAPS]]#2
// CHECK: %[[OVER:.*]] = arith.cmpf ogt, %[[LOW]], %{{.*}} : vector<4x16xf32>
// CHECK: %[[HIGH:.*]] = arith.select %[[OVER]], %{{.*}}, %[[LOW]]
// CHECK: vector.transfer_write %[[HIGH]]
// CHECK-NOT: vector.transfer_write
// CHECK-NOT: linalg.generic
// CHECK: scf.forall.in_parallel
func.func @depthwise_epilogue(%in: tensor<1x4x10x18xf32>, %w: tensor<4x3x3xf32>, %b: tensor<4xf32>, %init: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 6.0 : f32
  %r = scf.forall (%c) in (4) shared_outs(%o = %init) -> (tensor<1x4x8x16xf32>) {
    %i = tensor.extract_slice %in[0, %c, 0, 0] [1, 1, 10, 18] [1, 1, 1, 1] : tensor<1x4x10x18xf32> to tensor<1x1x10x18xf32>
    %wk = tensor.extract_slice %w[%c, 0, 0] [1, 3, 3] [1, 1, 1] : tensor<4x3x3xf32> to tensor<1x3x3xf32>
    %bk = tensor.extract_slice %b[%c] [1] [1] : tensor<4xf32> to tensor<1xf32>
    %e = tensor.empty() : tensor<1x1x8x16xf32>
    %bias = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (c)>, affine_map<(n, c, h, w) -> (n, c, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%bk : tensor<1xf32>) outs(%e : tensor<1x1x8x16xf32>) {
    ^bb0(%x: f32, %y: f32):
      linalg.yield %x : f32
    } -> tensor<1x1x8x16xf32>
    %d = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%i, %wk : tensor<1x1x10x18xf32>, tensor<1x3x3xf32>) outs(%bias : tensor<1x1x8x16xf32>) -> tensor<1x1x8x16xf32>
    %oi = tensor.extract_slice %o[0, %c, 0, 0] [1, 1, 8, 16] [1, 1, 1, 1] : tensor<1x4x8x16xf32> to tensor<1x1x8x16xf32>
    %clip = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%d : tensor<1x1x8x16xf32>) outs(%oi : tensor<1x1x8x16xf32>) {
    ^bb0(%x: f32, %y: f32):
      %m = arith.maximumf %x, %lo : f32
      %n = arith.minimumf %m, %hi : f32
      linalg.yield %n : f32
    } -> tensor<1x1x8x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %clip into %o[0, %c, 0, 0] [1, 1, 8, 16] [1, 1, 1, 1] : tensor<1x1x8x16xf32> into tensor<1x4x8x16xf32>
    }
  }
  return %r : tensor<1x4x8x16xf32>
}
