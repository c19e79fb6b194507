// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm | FileCheck %s

// A workgroup of an elementwise op that reads x transposed (NHWC -> NCHW,
// with a residual add): tiled 16 x 16 along the output's rows and the loop
// along which x is contiguous (the channels), so x is read as 16 rows of 16
// contiguous floats and transposed in registers by shuffles (lowered with
// VectorTransposeLowering::Shuffle16x16), where 16 output columns read one
// element of x per line. The residual is read as plain rows.
// CHECK-LABEL: func @transposed_read
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1
// CHECK: vector.transfer_read %{{.*}} : tensor<16x16xf32>, vector<16x16xf32>
// CHECK-COUNT-32: vector.shuffle {{.*}} : vector<16xf32>, vector<16xf32>
// CHECK: arith.addf %{{.*}} : vector<16x16xf32>
// CHECK-NOT: vector.gather
#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @transposed_read(%x: tensor<1x16x16x16xf32>, %r: tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32> {
  %e = tensor.empty() : tensor<1x16x16x16xf32>
  %out = scf.forall (%i) in (1) shared_outs(%o = %e) -> (tensor<1x16x16x16xf32>) {
    %0 = linalg.generic {indexing_maps = [#nhwc, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
        ins(%x, %r : tensor<1x16x16x16xf32>, tensor<1x16x16x16xf32>) outs(%o : tensor<1x16x16x16xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<1x16x16x16xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %0 into %o[0, 0, 0, 0] [1, 16, 16, 16] [1, 1, 1, 1] : tensor<1x16x16x16xf32> into tensor<1x16x16x16xf32>
    }
  }
  return %out : tensor<1x16x16x16xf32>
}
