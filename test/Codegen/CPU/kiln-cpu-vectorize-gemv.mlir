// RUN: kiln-opt %s --kiln-cpu-vectorize-gemm | FileCheck %s

// A one-row product (LLM decoding) streams long weight row segments: its
// register tile is one row of 256 lanes (16 vectors of 16), 4 k steps per
// iteration, the accumulator carried as a vector through the k loop.
// CHECK-LABEL: func @gemv
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<1x256xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<4x256xf32>, vector<4x256xf32>
// CHECK-COUNT-4: vector.fma {{.*}} : vector<256xf32>
// CHECK-NOT: vector.fma
func.func @gemv(%a: tensor<1x64xf32>, %b: tensor<64x512xf32>, %init: tensor<1x512xf32>) -> tensor<1x512xf32> {
  %r = scf.forall (%j) = (0) to (512) step (256) shared_outs(%o = %init) -> (tensor<1x512xf32>) {
    %bs = tensor.extract_slice %b[0, %j] [64, 256] [1, 1] : tensor<64x512xf32> to tensor<64x256xf32>
    %os = tensor.extract_slice %o[0, %j] [1, 256] [1, 1] : tensor<1x512xf32> to tensor<1x256xf32>
    %m = linalg.matmul ins(%a, %bs : tensor<1x64xf32>, tensor<64x256xf32>) outs(%os : tensor<1x256xf32>) -> tensor<1x256xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[0, %j] [1, 256] [1, 1] : tensor<1x256xf32> into tensor<1x512xf32>
    }
  }
  return %r : tensor<1x512xf32>
}

// The attention of one decoded token: per head (batch), one query row times
// the transposed keys ([1 x 8] x [8 x 32]). The unit row is kept through the
// unit-dimension folding, so the tile is a 1 x 32 outer product per k step
// (broadcast + FMA along the keys), not 32 dot products of length 4 reduced
// with horizontal sums.
// CHECK-LABEL: func @batched_one_row
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c4 iter_args({{.*}}) -> ({{.*}}vector<1x32xf32>)
// CHECK-NOT: vector.reduction
// CHECK-COUNT-4: vector.fma {{.*}} : vector<32xf32>
// CHECK-NOT: vector.reduction
#q = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#k = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#s = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
func.func @batched_one_row(%q: tensor<1x8x1x8xf32>, %k: tensor<1x8x8x32xf32>, %init: tensor<1x8x1x32xf32>) -> tensor<1x8x1x32xf32> {
  %r = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x8x1x8xf32>, tensor<1x8x8x32xf32>) outs(%init : tensor<1x8x1x32xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x8x1x32xf32>
  return %r : tensor<1x8x1x32xf32>
}
