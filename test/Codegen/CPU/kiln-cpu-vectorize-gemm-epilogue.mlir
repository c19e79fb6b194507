// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="dot-isa=avx512vnni" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="fuse-epilogues=false" | FileCheck %s --check-prefix=NOFUSE
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="dot-isa=avx512vnni wide-mr=8 wide-nr=32" | FileCheck %s --check-prefix=WIDE

// Epilogue tiles: a contraction (k = 64, not cache-blocked) between a
// broadcast bias that initializes its accumulator and a ReLU that consumes
// it is tiled together with both to 16 x 16 register tiles, columns outside
// rows: the tile reads the bias into registers, accumulates over the whole
// reduction, applies the ReLU to the accumulator and stores it once. The
// accumulator is never read from memory.
// CHECK-LABEL: func @bias_relu
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: vector.transfer_read %{{.*}} : tensor<16xf32>, vector<16xf32>
// CHECK-NOT: vector.transfer_read {{.*}} : tensor<16x16xf32>, vector<16x16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xf32>)
// CHECK-COUNT-64: vector.fma
// CHECK-NOT: vector.transfer_read {{.*}} : tensor<16x16xf32>, vector<16x16xf32>
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : vector<16x16xf32>
// CHECK-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<16x16xi1>, vector<16x16xf32>
// CHECK-NEXT: vector.transfer_write %{{.*}} : vector<16x16xf32>, tensor<16x16xf32>
// CHECK-NOT: vector<16xf32>
// CHECK: scf.forall.in_parallel
// Without the option: the bias is written to the accumulator tile first,
// the k loop reads and writes it, and the ReLU runs over it in rows of 16.
// NOFUSE-LABEL: func @bias_relu
// NOFUSE: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xf32>)
// NOFUSE: arith.cmpf olt, %{{.*}}, %{{.*}} : vector<16xf32>
// NOFUSE-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<16xi1>, vector<16xf32>
// NOFUSE-NOT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<16x16xi1>, vector<16x16xf32>
// With a wide tile (8 x 32, as on AVX-512): the workgroup's 32 columns are
// one tile wide, its 32 rows four tiles of 8.
// WIDE-LABEL: func @bias_relu
// WIDE: scf.for %{{.*}} = %c0 to %c32 step %c8
// WIDE: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<8x32xf32>)
// WIDE: arith.cmpf olt, %{{.*}}, %{{.*}} : vector<8x32xf32>
// WIDE-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8x32xi1>, vector<8x32xf32>
// WIDE-NEXT: vector.transfer_write %{{.*}} : vector<8x32xf32>, tensor<8x32xf32>
#bias = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @bias_relu(%w: tensor<64x64xf32>, %x: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<64x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %r = scf.forall (%i, %j) = (0, 0) to (64, 64) step (32, 32) shared_outs(%o = %e) -> (tensor<64x64xf32>) {
    %wt = tensor.extract_slice %w[%i, 0] [32, 64] [1, 1] : tensor<64x64xf32> to tensor<32x64xf32>
    %xt = tensor.extract_slice %x[0, %j] [64, 32] [1, 1] : tensor<64x64xf32> to tensor<64x32xf32>
    %bt = tensor.extract_slice %b[%i] [32] [1] : tensor<64xf32> to tensor<32xf32>
    %acc0 = tensor.empty() : tensor<32x32xf32>
    %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]} ins(%bt : tensor<32xf32>) outs(%acc0 : tensor<32x32xf32>) {
    ^bb0(%in: f32, %_: f32):
      linalg.yield %in : f32
    } -> tensor<32x32xf32>
    %mm = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%wt, %xt : tensor<32x64xf32>, tensor<64x32xf32>) outs(%init : tensor<32x32xf32>) {
    ^bb0(%a: f32, %bb: f32, %c: f32):
      %m = arith.mulf %a, %bb : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<32x32xf32>
    %ot = tensor.extract_slice %o[%i, %j] [32, 32] [1, 1] : tensor<64x64xf32> to tensor<32x32xf32>
    %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<32x32xf32>) outs(%ot : tensor<32x32xf32>) {
    ^bb0(%in: f32, %_: f32):
      %v = arith.maximumf %in, %cst : f32
      linalg.yield %v : f32
    } -> tensor<32x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %relu into %o[%i, %j] [32, 32] [1, 1] : tensor<32x32xf32> into tensor<64x64xf32>
    }
  }
  return %r : tensor<64x64xf32>
}

// -----

// An integer GEMM: the zero fill becomes the accumulator's initial value in
// registers, the 8-bit tile stays a vector.contract for the dot-product
// lowering, and the zero-point correction is subtracted in registers.
// CHECK-LABEL: func @integer
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK-NOT: linalg.fill
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xi32>)
// CHECK: vector.contract {{.*}} : vector<16x4xi32>, vector<4x16xi32> into vector<16x16xi32>
// CHECK: arith.subi %{{.*}}, %{{.*}} : vector<16x16xi32>
// CHECK-NEXT: vector.transfer_write %{{.*}} : vector<16x16xi32>, tensor<16x16xi32>
// NOFUSE-LABEL: func @integer
// 8-bit tiles keep 16 columns (one dot-product instruction) with a wide tile.
// WIDE-LABEL: func @integer
// WIDE-NOT: vector<8x32xi32>
// WIDE: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xi32>)
// WIDE-NOT: vector<8x32xi32>
// WIDE-LABEL: func @blocked
// NOFUSE: arith.subi %{{.*}}, %{{.*}} : vector<16xi32>
#bias = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @integer(%w: tensor<64x64xi8>, %x: tensor<64x64xi8>, %zp: tensor<64xi32>) -> tensor<64x64xi32> {
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<64x64xi32>
  %r = scf.forall (%i, %j) = (0, 0) to (64, 64) step (32, 32) shared_outs(%o = %e) -> (tensor<64x64xi32>) {
    %wt = tensor.extract_slice %w[%i, 0] [32, 64] [1, 1] : tensor<64x64xi8> to tensor<32x64xi8>
    %xt = tensor.extract_slice %x[0, %j] [64, 32] [1, 1] : tensor<64x64xi8> to tensor<64x32xi8>
    %zt = tensor.extract_slice %zp[%i] [32] [1] : tensor<64xi32> to tensor<32xi32>
    %acc0 = tensor.empty() : tensor<32x32xi32>
    %init = linalg.fill ins(%c0 : i32) outs(%acc0 : tensor<32x32xi32>) -> tensor<32x32xi32>
    %mm = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%wt, %xt : tensor<32x64xi8>, tensor<64x32xi8>) outs(%init : tensor<32x32xi32>) {
    ^bb0(%a: i8, %b: i8, %c: i32):
      %a32 = arith.extsi %a : i8 to i32
      %b32 = arith.extui %b : i8 to i32
      %m = arith.muli %a32, %b32 : i32
      %s = arith.addi %c, %m : i32
      linalg.yield %s : i32
    } -> tensor<32x32xi32>
    %ot = tensor.extract_slice %o[%i, %j] [32, 32] [1, 1] : tensor<64x64xi32> to tensor<32x32xi32>
    %sub = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %zt : tensor<32x32xi32>, tensor<32xi32>) outs(%ot : tensor<32x32xi32>) {
    ^bb0(%in: i32, %z: i32, %_: i32):
      %v = arith.subi %in, %z : i32
      linalg.yield %v : i32
    } -> tensor<32x32xi32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %sub into %o[%i, %j] [32, 32] [1, 1] : tensor<32x32xi32> into tensor<64x64xi32>
    }
  }
  return %r : tensor<64x64xi32>
}

// -----

// Requantization (what `--quantize=int8` ends each integer layer with:
// scale, divide by the next layer's scale, round half to even, clamp,
// uint8) rides in the register tile like any other epilogue: math.roundeven
// is as vectorizable as floor. Before, the round kept the whole epilogue
// out of the tile and scalar, and a standalone quantize ran one vdivss per
// element. The second function is such a standalone quantize: rows of 16.
// CHECK-LABEL: func @requantize
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xi32>)
// CHECK: arith.sitofp %{{.*}} : vector<16x16xi32> to vector<16x16xf32>
// CHECK: math.roundeven %{{.*}} : vector<16x16xf32>
// CHECK: arith.fptoui %{{.*}} : vector<16x16xf32> to vector<16x16xi8>
// CHECK-NEXT: vector.transfer_write %{{.*}} : vector<16x16xi8>, tensor<16x16xi8>
// CHECK-LABEL: func @quantize
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c16
// CHECK: math.roundeven %{{.*}} : vector<16xf32>
// CHECK: arith.fptoui %{{.*}} : vector<16xf32> to vector<16xi8>
// NOFUSE-LABEL: func @requantize
// NOFUSE: math.roundeven %{{.*}} : vector<16xf32>
#scale = affine_map<(d0, d1) -> (d0)>
#rq_id = affine_map<(d0, d1) -> (d0, d1)>
#rq_lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rq_rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#rq_out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @requantize(%w: tensor<64x64xi8>, %x: tensor<64x64xi8>, %s: tensor<64xf32>) -> tensor<64x64xi8> {
  %c0 = arith.constant 0 : i32
  %next = arith.constant 0.05 : f32
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 255.0 : f32
  %e = tensor.empty() : tensor<64x64xi8>
  %r = scf.forall (%i, %j) = (0, 0) to (64, 64) step (32, 32) shared_outs(%o = %e) -> (tensor<64x64xi8>) {
    %wt = tensor.extract_slice %w[%i, 0] [32, 64] [1, 1] : tensor<64x64xi8> to tensor<32x64xi8>
    %xt = tensor.extract_slice %x[0, %j] [64, 32] [1, 1] : tensor<64x64xi8> to tensor<64x32xi8>
    %st = tensor.extract_slice %s[%i] [32] [1] : tensor<64xf32> to tensor<32xf32>
    %acc0 = tensor.empty() : tensor<32x32xi32>
    %init = linalg.fill ins(%c0 : i32) outs(%acc0 : tensor<32x32xi32>) -> tensor<32x32xi32>
    %mm = linalg.generic {indexing_maps = [#rq_lhs, #rq_rhs, #rq_out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%wt, %xt : tensor<32x64xi8>, tensor<64x32xi8>) outs(%init : tensor<32x32xi32>) {
    ^bb0(%a: i8, %b: i8, %c: i32):
      %a32 = arith.extsi %a : i8 to i32
      %b32 = arith.extui %b : i8 to i32
      %m = arith.muli %a32, %b32 : i32
      %sum = arith.addi %c, %m : i32
      linalg.yield %sum : i32
    } -> tensor<32x32xi32>
    %ot = tensor.extract_slice %o[%i, %j] [32, 32] [1, 1] : tensor<64x64xi8> to tensor<32x32xi8>
    %q = linalg.generic {indexing_maps = [#rq_id, #scale, #rq_id], iterator_types = ["parallel", "parallel"]} ins(%mm, %st : tensor<32x32xi32>, tensor<32xf32>) outs(%ot : tensor<32x32xi8>) {
    ^bb0(%in: i32, %sc: f32, %_: i8):
      %f = arith.sitofp %in : i32 to f32
      %m = arith.mulf %f, %sc : f32
      %d = arith.divf %m, %next : f32
      %rd = math.roundeven %d : f32
      %c1 = arith.maximumf %rd, %lo : f32
      %c2 = arith.minimumf %c1, %hi : f32
      %u = arith.fptoui %c2 : f32 to i8
      linalg.yield %u : i8
    } -> tensor<32x32xi8>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %q into %o[%i, %j] [32, 32] [1, 1] : tensor<32x32xi8> into tensor<64x64xi8>
    }
  }
  return %r : tensor<64x64xi8>
}

func.func @quantize(%x: tensor<8x64xf32>) -> tensor<8x64xi8> {
  %next = arith.constant 0.05 : f32
  %lo = arith.constant 0.0 : f32
  %hi = arith.constant 255.0 : f32
  %e = tensor.empty() : tensor<8x64xi8>
  %q = linalg.generic {indexing_maps = [#rq_id, #rq_id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x64xf32>) outs(%e : tensor<8x64xi8>) {
  ^bb0(%in: f32, %_: i8):
    %d = arith.divf %in, %next : f32
    %rd = math.roundeven %d : f32
    %c1 = arith.maximumf %rd, %lo : f32
    %c2 = arith.minimumf %c1, %hi : f32
    %u = arith.fptoui %c2 : f32 to i8
    linalg.yield %u : i8
  } -> tensor<8x64xi8>
  return %q : tensor<8x64xi8>
}

// -----

// A reduction longer than kc-cache (512 > 256) is cache-blocked; its
// blocks' partial sums go through memory anyway, so its epilogue stays a
// separate loop in rows of 16.
// CHECK-LABEL: func @blocked
// CHECK: scf.for %{{.*}} = %c0 to %c512 step %c256
// CHECK-NOT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<16x16xi1>, vector<16x16xf32>
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<16xi1>, vector<16xf32>
#bias = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @blocked(%w: tensor<64x512xf32>, %x: tensor<512x64xf32>, %b: tensor<64xf32>) -> tensor<64x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %r = scf.forall (%i, %j) = (0, 0) to (64, 64) step (32, 32) shared_outs(%o = %e) -> (tensor<64x64xf32>) {
    %wt = tensor.extract_slice %w[%i, 0] [32, 512] [1, 1] : tensor<64x512xf32> to tensor<32x512xf32>
    %xt = tensor.extract_slice %x[0, %j] [512, 32] [1, 1] : tensor<512x64xf32> to tensor<512x32xf32>
    %bt = tensor.extract_slice %b[%i] [32] [1] : tensor<64xf32> to tensor<32xf32>
    %acc0 = tensor.empty() : tensor<32x32xf32>
    %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]} ins(%bt : tensor<32xf32>) outs(%acc0 : tensor<32x32xf32>) {
    ^bb0(%in: f32, %_: f32):
      linalg.yield %in : f32
    } -> tensor<32x32xf32>
    %mm = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%wt, %xt : tensor<32x512xf32>, tensor<512x32xf32>) outs(%init : tensor<32x32xf32>) {
    ^bb0(%a: f32, %bb: f32, %c: f32):
      %m = arith.mulf %a, %bb : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<32x32xf32>
    %ot = tensor.extract_slice %o[%i, %j] [32, 32] [1, 1] : tensor<64x64xf32> to tensor<32x32xf32>
    %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<32x32xf32>) outs(%ot : tensor<32x32xf32>) {
    ^bb0(%in: f32, %_: f32):
      %v = arith.maximumf %in, %cst : f32
      linalg.yield %v : f32
    } -> tensor<32x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %relu into %o[%i, %j] [32, 32] [1, 1] : tensor<32x32xf32> into tensor<64x64xf32>
    }
  }
  return %r : tensor<64x64xf32>
}

// -----

// One row (a matrix-vector product) keeps its wide one-row register tile.
// CHECK-LABEL: func @onerow
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<1x32xf32>)
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<16xi1>, vector<16xf32>
#bias = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @onerow(%w: tensor<2x64xf32>, %x: tensor<64x64xf32>, %b: tensor<2xf32>) -> tensor<2x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64xf32>
  %r = scf.forall (%i, %j) = (0, 0) to (2, 64) step (1, 32) shared_outs(%o = %e) -> (tensor<2x64xf32>) {
    %wt = tensor.extract_slice %w[%i, 0] [1, 64] [1, 1] : tensor<2x64xf32> to tensor<1x64xf32>
    %xt = tensor.extract_slice %x[0, %j] [64, 32] [1, 1] : tensor<64x64xf32> to tensor<64x32xf32>
    %bt = tensor.extract_slice %b[%i] [1] [1] : tensor<2xf32> to tensor<1xf32>
    %acc0 = tensor.empty() : tensor<1x32xf32>
    %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]} ins(%bt : tensor<1xf32>) outs(%acc0 : tensor<1x32xf32>) {
    ^bb0(%in: f32, %_: f32):
      linalg.yield %in : f32
    } -> tensor<1x32xf32>
    %mm = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%wt, %xt : tensor<1x64xf32>, tensor<64x32xf32>) outs(%init : tensor<1x32xf32>) {
    ^bb0(%a: f32, %bb: f32, %c: f32):
      %m = arith.mulf %a, %bb : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x32xf32>
    %ot = tensor.extract_slice %o[%i, %j] [1, 32] [1, 1] : tensor<2x64xf32> to tensor<1x32xf32>
    %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<1x32xf32>) outs(%ot : tensor<1x32xf32>) {
    ^bb0(%in: f32, %_: f32):
      %v = arith.maximumf %in, %cst : f32
      linalg.yield %v : f32
    } -> tensor<1x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %relu into %o[%i, %j] [1, 32] [1, 1] : tensor<1x32xf32> into tensor<2x64xf32>
    }
  }
  return %r : tensor<2x64xf32>
}

// -----

// 49 columns (a 7x7 image) leave a last tile of 17 lanes after one of 32,
// which LLVM would split element by element: it is cut into a register of
// 16 and a one-column tile (its k loop carrying 8 x 4 partial sums), so the
// product takes the 8 x 32 tile too (ResNet-50's layer4: 0.86x the time of
// 16 x 16 tiles).
// WIDE-LABEL: func @seven_by_seven
// WIDE: iter_args({{.*}}) -> ({{.*}}vector<8x32xf32>)
// WIDE-NOT: vector<{{.*}}x17xf32>
// WIDE: iter_args({{.*}}) -> ({{.*}}vector<8x16xf32>, vector<8x4xf32>)
// WIDE-NOT: vector<{{.*}}x17xf32>
func.func @seven_by_seven(%a: tensor<32x64xf32>, %b: tensor<64x49xf32>, %c: tensor<32x49xf32>) -> tensor<32x49xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x49xf32>) outs(%c : tensor<32x49xf32>) -> tensor<32x49xf32>
  return %0 : tensor<32x49xf32>
}

// -----

// Partial tiles (a dispatch of MobileNet-v3 at batch 4): 40 rows are 16 +
// 16 + 8 and 196 columns 12 x 16 + 4, so the epilogue tiles come in four
// static shapes. (The column loop was peeled before the row loop at first:
// the last column's row loop kept a dynamic tile, which was not vectorized
// and kept the pass's marker attribute, an error.)
// CHECK-LABEL: func @partial_tiles
// CHECK-NOT: kiln.fused_tile
// CHECK-NOT: x?x
// CHECK-DAG: arith.addf %{{.*}}, %{{.*}} : vector<16x16xf32>
// CHECK-DAG: arith.addf %{{.*}}, %{{.*}} : vector<16x4xf32>
// CHECK-DAG: arith.addf %{{.*}}, %{{.*}} : vector<8x16xf32>
// CHECK-DAG: arith.addf %{{.*}}, %{{.*}} : vector<8x4xf32>
// CHECK-NOT: kiln.fused_tile
// CHECK-NOT: x?x
// With the wide tile: 40 rows are 5 x 8, and 196 columns 6 x 32 + 4 (a last
// tile of a power of two lanes is fine).
// WIDE-LABEL: func @partial_tiles
// WIDE-DAG: arith.addf %{{.*}}, %{{.*}} : vector<8x32xf32>
// WIDE-DAG: arith.addf %{{.*}}, %{{.*}} : vector<8x4xf32>
// WIDE-NOT: x?x
#map = affine_map<(d0, d1, d2) -> (d1)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#map3 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @partial_tiles(%arg0: tensor<4x240x14x14xf32>, %arg1: tensor<40x240x1x1xf32>, %arg2: tensor<4x40x14x14xf32>) -> tensor<4x40x14x14xf32> {
    %cst = arith.constant dense<0.000000e+00> : tensor<40xf32>
    %0 = tensor.empty() : tensor<4x40x14x14xf32>
    %collapsed = tensor.collapse_shape %0 [[0], [1], [2, 3]] : tensor<4x40x14x14xf32> into tensor<4x40x196xf32>
    %collapsed_0 = tensor.collapse_shape %arg0 [[0], [1], [2, 3]] : tensor<4x240x14x14xf32> into tensor<4x240x196xf32>
    %collapsed_1 = tensor.collapse_shape %arg1 [[0], [1, 2, 3]] : tensor<40x240x1x1xf32> into tensor<40x240xf32>
    %collapsed_2 = tensor.collapse_shape %arg2 [[0], [1], [2, 3]] : tensor<4x40x14x14xf32> into tensor<4x40x196xf32>
    %1 = scf.forall (%arg3) in (4) shared_outs(%arg4 = %collapsed) -> (tensor<4x40x196xf32>) {
      %extracted_slice = tensor.extract_slice %collapsed_0[%arg3, 0, 0] [1, 240, 196] [1, 1, 1] : tensor<4x240x196xf32> to tensor<1x240x196xf32>
      %extracted_slice_3 = tensor.extract_slice %collapsed[%arg3, 0, 0] [1, 40, 196] [1, 1, 1] : tensor<4x40x196xf32> to tensor<1x40x196xf32>
      %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%cst : tensor<40xf32>) outs(%extracted_slice_3 : tensor<1x40x196xf32>) {
      ^bb0(%in: f32, %out: f32):
        linalg.yield %in : f32
      } -> tensor<1x40x196xf32>
      %3 = linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%collapsed_1, %extracted_slice : tensor<40x240xf32>, tensor<1x240x196xf32>) outs(%2 : tensor<1x40x196xf32>) {
      ^bb0(%in: f32, %in_6: f32, %out: f32):
        %5 = arith.mulf %in, %in_6 : f32
        %6 = arith.addf %out, %5 : f32
        linalg.yield %6 : f32
      } -> tensor<1x40x196xf32>
      %extracted_slice_4 = tensor.extract_slice %collapsed_2[%arg3, 0, 0] [1, 40, 196] [1, 1, 1] : tensor<4x40x196xf32> to tensor<1x40x196xf32>
      %extracted_slice_5 = tensor.extract_slice %arg4[%arg3, 0, 0] [1, 40, 196] [1, 1, 1] : tensor<4x40x196xf32> to tensor<1x40x196xf32>
      %4 = linalg.generic {indexing_maps = [#map1, #map1, #map1], iterator_types = ["parallel", "parallel", "parallel"]} ins(%3, %extracted_slice_4 : tensor<1x40x196xf32>, tensor<1x40x196xf32>) outs(%extracted_slice_5 : tensor<1x40x196xf32>) {
      ^bb0(%in: f32, %in_6: f32, %out: f32):
        %5 = arith.addf %in, %in_6 : f32
        linalg.yield %5 : f32
      } -> tensor<1x40x196xf32>
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %4 into %arg4[%arg3, 0, 0] [1, 40, 196] [1, 1, 1] : tensor<1x40x196xf32> into tensor<4x40x196xf32>
      }
    }
    %expanded = tensor.expand_shape %1 [[0], [1], [2, 3]] output_shape [4, 40, 14, 14] : tensor<4x40x196xf32> into tensor<4x40x14x14xf32>
    return %expanded : tensor<4x40x14x14xf32>
  }

// -----

// A chain of epilogue ops (a bottleneck block's last 1x1 convolution: bias,
// residual add, ReLU), each the only user of the one before, is one
// epilogue: the add reads the residual's tile and the ReLU applies in
// registers before the one store; no ReLU pass over a stored tile is left.
// CHECK-LABEL: func @residual_chain
// CHECK: scf.forall
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c16
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c4 iter_args({{.*}}) -> ({{.*}}vector<16x16xf32>)
// CHECK-COUNT-64: vector.fma
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<16x16xf32>
// CHECK: arith.cmpf olt, %{{.*}}, %{{.*}} : vector<16x16xf32>
// CHECK-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<16x16xi1>, vector<16x16xf32>
// CHECK-NEXT: vector.transfer_write
// CHECK-NOT: arith.select
// CHECK: scf.forall.in_parallel
// NOFUSE-LABEL: func @residual_chain
// NOFUSE: scf.for %{{.*}} = %c0 to %c32 step %c1
// NOFUSE: arith.cmpf olt, %{{.*}}, %{{.*}} : vector<16xf32>
// NOFUSE-NEXT: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<16xi1>, vector<16xf32>
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#bias = affine_map<(m, n) -> (m)>
func.func @residual_chain(%w: tensor<64x64xf32>, %x: tensor<64x64xf32>, %b: tensor<64xf32>, %res: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %r = scf.forall (%i, %j) = (0, 0) to (64, 64) step (32, 32) shared_outs(%o = %e) -> (tensor<64x64xf32>) {
    %wt = tensor.extract_slice %w[%i, 0] [32, 64] [1, 1] : tensor<64x64xf32> to tensor<32x64xf32>
    %xt = tensor.extract_slice %x[0, %j] [64, 32] [1, 1] : tensor<64x64xf32> to tensor<64x32xf32>
    %bt = tensor.extract_slice %b[%i] [32] [1] : tensor<64xf32> to tensor<32xf32>
    %rt = tensor.extract_slice %res[%i, %j] [32, 32] [1, 1] : tensor<64x64xf32> to tensor<32x32xf32>
    %acc0 = tensor.empty() : tensor<32x32xf32>
    %init = linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel"]} ins(%bt : tensor<32xf32>) outs(%acc0 : tensor<32x32xf32>) {
    ^bb0(%in: f32, %_: f32):
      linalg.yield %in : f32
    } -> tensor<32x32xf32>
    %mm = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%wt, %xt : tensor<32x64xf32>, tensor<64x32xf32>) outs(%init : tensor<32x32xf32>) {
    ^bb0(%a: f32, %bb: f32, %c: f32):
      %m = arith.mulf %a, %bb : f32
      %s = arith.addf %c, %m : f32
      linalg.yield %s : f32
    } -> tensor<32x32xf32>
    %sum0 = tensor.empty() : tensor<32x32xf32>
    %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %rt : tensor<32x32xf32>, tensor<32x32xf32>) outs(%sum0 : tensor<32x32xf32>) {
    ^bb0(%in: f32, %in2: f32, %_: f32):
      %v = arith.addf %in, %in2 : f32
      linalg.yield %v : f32
    } -> tensor<32x32xf32>
    %ot = tensor.extract_slice %o[%i, %j] [32, 32] [1, 1] : tensor<64x64xf32> to tensor<32x32xf32>
    %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%sum : tensor<32x32xf32>) outs(%ot : tensor<32x32xf32>) {
    ^bb0(%in: f32, %_: f32):
      %v = arith.maximumf %in, %cst : f32
      linalg.yield %v : f32
    } -> tensor<32x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %relu into %o[%i, %j] [32, 32] [1, 1] : tensor<32x32xf32> into tensor<64x64xf32>
    }
  }
  return %r : tensor<64x64xf32>
}
