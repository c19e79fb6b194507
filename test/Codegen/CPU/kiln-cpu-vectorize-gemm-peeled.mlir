// RUN: kiln-opt %s --kiln-cpu-vectorize-gemm="mr=4 nr=16 kc=4" | FileCheck %s

// Regression test for a fixed bug: when a GEMM dimension is not a multiple of the register tile,
// the value each k loop of the peeled nest yields goes through a tensor.cast
// pair (tensor<4x16xf32> -> tensor<4x?xf32> -> tensor<4x16xf32>), and the
// pattern set the pass applies just before hoistLoopInvariantSubsets has no
// tensor.cast folding. So the accumulator is not hoisted: every k step
// re-reads and re-writes it through the tensor (vector.transfer_read and
// vector.transfer_write inside the k loop), in the full tiles as well as in
// the partial one. Running --canonicalize --loop-invariant-subset-hoisting
// on the pass's output hoists it as expected. The CPU pipeline hits this in
// every convolution whose workgroup tile of output pixels is not a multiple
// of 16, e.g. a 3x3 convolution with a 7x7 output (ResNet's last stage): the
// 49 pixels are 3 full column blocks of 16 and a peeled one, and the k loops
// of both (576 steps each) carry the accumulator through memory.

// N = 24 = 16 + 8: full 4x16 tiles and a peeled 4x8 tile per row block; both
// k loops should carry their accumulator as a vector iter_arg.
// CHECK-LABEL: func @matmul_peeled_n
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<4x16xf32>)
// CHECK-NOT: vector.transfer_write
// CHECK: vector.fma
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<4x16xf32>, tensor<4x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<4x8xf32>)
// CHECK-NOT: vector.transfer_write
// CHECK: vector.fma
// CHECK-NOT: vector.transfer_write
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: vector.transfer_write {{.*}} : vector<4x8xf32>, tensor<4x8xf32>
func.func @matmul_peeled_n(%a: tensor<16x64xf32>, %b: tensor<64x24xf32>, %c: tensor<16x24xf32>) -> tensor<16x24xf32> attributes {kiln.dispatch} {
  %0 = linalg.matmul ins(%a, %b : tensor<16x64xf32>, tensor<64x24xf32>) outs(%c : tensor<16x24xf32>) -> tensor<16x24xf32>
  return %0 : tensor<16x24xf32>
}
