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
