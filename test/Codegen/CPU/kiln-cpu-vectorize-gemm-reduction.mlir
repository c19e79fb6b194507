// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm | FileCheck %s

// A row reduction along the contiguous innermost dimension (softmax's
// maximum) is reduced one row at a time into 16 partial maxima, one vector
// max per 16 elements, and the partial maxima into the row's maximum once,
// after its loop: no scalar loop over the row's elements.
// CHECK-LABEL: func @row_max
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %c4 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16 iter_args({{.*}}) -> ({{.*}}vector<16xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<16xf32>, vector<16xf32>
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NOT: vector.reduction
// CHECK: scf.yield
// CHECK: vector.reduction <maximumf>, %{{.*}}, %{{.*}} : vector<16xf32> into f32
// CHECK-NOT: linalg.generic
// CHECK: scf.forall.in_parallel
#in = affine_map<(r, c, k) -> (r, c, k)>
#out = affine_map<(r, c, k) -> (r, c)>
func.func @row_max(%x: tensor<8x4x64xf32>) -> tensor<8x4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %r = scf.forall (%i) in (8) shared_outs(%o = %e) -> (tensor<8x4xf32>) {
    %xs = tensor.extract_slice %x[%i, 0, 0] [1, 4, 64] [1, 1, 1] : tensor<8x4x64xf32> to tensor<1x4x64xf32>
    %os = tensor.extract_slice %o[%i, 0] [1, 4] [1, 1] : tensor<8x4xf32> to tensor<1x4xf32>
    %init = linalg.fill ins(%ninf : f32) outs(%os : tensor<1x4xf32>) -> tensor<1x4xf32>
    %m = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xs : tensor<1x4x64xf32>) outs(%init : tensor<1x4xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %v = arith.maximumf %acc, %a : f32
      linalg.yield %v : f32
    } -> tensor<1x4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %m into %o[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<8x4xf32>
    }
  }
  return %r : tensor<8x4xf32>
}

// -----

// Softmax's sum of exponentials: the element's exponential (a polynomial by
// the end of the pass) of its difference from the row's maximum (read
// once per row, broadcast) is added into 16 partial sums per row.
// CHECK-LABEL: func @row_sum_exp
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16 iter_args({{.*}}) -> ({{.*}}vector<16xf32>)
// CHECK: arith.subf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NOT: math.exp
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: scf.yield
// CHECK: vector.reduction <add>, %{{.*}}, %{{.*}} : vector<16xf32> into f32
#in = affine_map<(r, k) -> (r, k)>
#row = affine_map<(r, k) -> (r)>
func.func @row_sum_exp(%x: tensor<8x64xf32>, %max: tensor<8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %r = scf.forall (%i) = (0) to (8) step (2) shared_outs(%o = %e) -> (tensor<8xf32>) {
    %xs = tensor.extract_slice %x[%i, 0] [2, 64] [1, 1] : tensor<8x64xf32> to tensor<2x64xf32>
    %ms = tensor.extract_slice %max[%i] [2] [1] : tensor<8xf32> to tensor<2xf32>
    %os = tensor.extract_slice %o[%i] [2] [1] : tensor<8xf32> to tensor<2xf32>
    %init = linalg.fill ins(%zero : f32) outs(%os : tensor<2xf32>) -> tensor<2xf32>
    %s = linalg.generic {indexing_maps = [#in, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%xs, %ms : tensor<2x64xf32>, tensor<2xf32>) outs(%init : tensor<2xf32>) {
    ^bb0(%a: f32, %m: f32, %acc: f32):
      %d = arith.subf %a, %m : f32
      %x2 = math.exp %d : f32
      %v = arith.addf %acc, %x2 : f32
      linalg.yield %v : f32
    } -> tensor<2xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[%i] [2] [1] : tensor<2xf32> into tensor<8xf32>
    }
  }
  return %r : tensor<8xf32>
}

// -----

// A reduction whose reduced dimension is not the inputs' contiguous one (a
// column sum) is not split this way: its rows would be gathers.
// CHECK-LABEL: func @column_sum
// CHECK-NOT: vector.reduction
// CHECK-NOT: vector<16xf32>
#t = affine_map<(c, k) -> (k, c)>
#col = affine_map<(c, k) -> (c)>
func.func @column_sum(%x: tensor<64x8xf32>) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %r = scf.forall (%i) = (0) to (8) step (2) shared_outs(%o = %e) -> (tensor<8xf32>) {
    %xs = tensor.extract_slice %x[0, %i] [64, 2] [1, 1] : tensor<64x8xf32> to tensor<64x2xf32>
    %os = tensor.extract_slice %o[%i] [2] [1] : tensor<8xf32> to tensor<2xf32>
    %init = linalg.fill ins(%zero : f32) outs(%os : tensor<2xf32>) -> tensor<2xf32>
    %s = linalg.generic {indexing_maps = [#t, #col], iterator_types = ["parallel", "reduction"]} ins(%xs : tensor<64x2xf32>) outs(%init : tensor<2xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %v = arith.addf %acc, %a : f32
      linalg.yield %v : f32
    } -> tensor<2xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[%i] [2] [1] : tensor<2xf32> into tensor<8xf32>
    }
  }
  return %r : tensor<8xf32>
}

// -----

// A global average pool's sum: linalg.reduce over the trailing H and W of a
// workgroup's 2 channels of 14x14. The input is collapsed to rows of 196
// and reduced like a row: 12 vector adds of 16 elements into 16 partial
// sums, then the last 4 elements (196 = 12 x 16 + 4) into the first 4 of
// them, all vectorized; one horizontal sum per row. (As a named op over two
// dimensions it was a scalar loop nest.)
// CHECK-LABEL: func @global_pool_sum
// CHECK: scf.forall
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<1x2x14x14xf32> into tensor<1x2x196xf32>
// CHECK-NOT: linalg.reduce
// CHECK: scf.for %{{.*}} = %c0 to %c192 step %c16 iter_args({{.*}}) -> ({{.*}}vector<16xf32>)
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: scf.yield
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK: vector.reduction <add>, %{{.*}}, %{{.*}} : vector<16xf32> into f32
// CHECK-NOT: linalg.generic
// CHECK: scf.forall.in_parallel
func.func @global_pool_sum(%x: tensor<1x8x14x14xf32>) -> tensor<1x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8xf32>
  %r = scf.forall (%i) = (0) to (8) step (2) shared_outs(%o = %e) -> (tensor<1x8xf32>) {
    %xs = tensor.extract_slice %x[0, %i, 0, 0] [1, 2, 14, 14] [1, 1, 1, 1] : tensor<1x8x14x14xf32> to tensor<1x2x14x14xf32>
    %os = tensor.extract_slice %o[0, %i] [1, 2] [1, 1] : tensor<1x8xf32> to tensor<1x2xf32>
    %init = linalg.fill ins(%zero : f32) outs(%os : tensor<1x2xf32>) -> tensor<1x2xf32>
    %s = linalg.reduce { arith.addf } ins(%xs : tensor<1x2x14x14xf32>) outs(%init : tensor<1x2xf32>) dimensions = [2, 3]
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %s into %o[0, %i] [1, 2] [1, 1] : tensor<1x2xf32> into tensor<1x8xf32>
    }
  }
  return %r : tensor<1x8xf32>
}

// -----

// A reduction over every dimension in a dispatch of one workgroup (the
// minimum of an activation that dynamic quantization takes at run time):
// the input becomes one row of 3 x 100 = 300 elements, [1, 300], reduced
// like any row into 16 partial minima (18 vector minimums, then the last 12
// elements into the first 12 lanes) and one horizontal minimum. (Left alone
// it was a scalar loop with a NaN check per element.) A dispatch of more
// workgroups without a workgroup loop is left alone.
// CHECK-LABEL: func @whole_minimum
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2]] : tensor<1x3x100xf32> into tensor<300xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [1, 300] : tensor<300xf32> into tensor<1x300xf32>
// CHECK-NOT: linalg.reduce
// CHECK: scf.for %{{.*}} = %c0 to %c288 step %c16 iter_args({{.*}}) -> ({{.*}}vector<16xf32>)
// CHECK: arith.minimumf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: scf.yield
// CHECK: arith.minimumf %{{.*}}, %{{.*}} : vector<12xf32>
// CHECK: vector.reduction <minimumf>, %{{.*}}, %{{.*}} : vector<16xf32> into f32
// CHECK: tensor.collapse_shape %{{.*}} [] : tensor<1xf32> into tensor<f32>
// CHECK-LABEL: func @whole_minimum_many_workgroups
// CHECK: linalg.reduce
func.func @whole_minimum(%x: tensor<1x3x100xf32>) -> tensor<f32> attributes {kiln.workgroup_count = 1 : i64} {
  %inf = arith.constant 0x7F800000 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%inf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %m = linalg.reduce { arith.minimumf } ins(%x : tensor<1x3x100xf32>) outs(%init : tensor<f32>) dimensions = [0, 1, 2]
  return %m : tensor<f32>
}
func.func @whole_minimum_many_workgroups(%x: tensor<1x3x100xf32>) -> tensor<f32> attributes {kiln.workgroup_count = 2 : i64} {
  %inf = arith.constant 0x7F800000 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%inf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %m = linalg.reduce { arith.minimumf } ins(%x : tensor<1x3x100xf32>) outs(%init : tensor<f32>) dimensions = [0, 1, 2]
  return %m : tensor<f32>
}
