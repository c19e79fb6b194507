// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="mr=16 nr=16 wide-mr=8 wide-nr=32" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="mr=16 nr=16 wide-mr=8 wide-nr=32 panel-gemm-rows=0" | FileCheck %s --check-prefix=KERNEL
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="mr=16 nr=16 wide-mr=8 wide-nr=32 panel-gemm-rows=64" | FileCheck %s --check-prefix=KERNEL
// RUN: kiln-opt %s -split-input-file --kiln-cpu-vectorize-gemm="mr=16 nr=16 wide-mr=8 wide-nr=32 dot-isa=avx512vnni" | FileCheck %s --check-prefix=INT

// A workgroup of a product by weights in column panels of 32 (the generic of
// kiln.matmul_panels: out[m, n] += x[m, k] * w[n / 32, k, n mod 32]), 32
// rows by 64 columns: one matmul per panel, each reading its panel [16, 32]
// (a slice of w at (panel, 0, 0)) as its right-hand side, register-tiled
// 8 x 32 with no run-time copy of the weights. With panel-gemm-rows=0, or
// more rows required than the workgroup has, the generic stays for the
// panel kernel (kiln-cpu-lower-panel-matmuls). The zero fill of the
// accumulator goes into the register tiles: each starts its k loop from
// zeros in registers (filled whole before the panel loop, the workgroup's
// output went to memory and came back for every tile).
// CHECK-LABEL: func @panels
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8x32xf32>
// CHECK: scf.forall
// CHECK-NOT: linalg.fill
// CHECK: scf.for %[[N:.*]] = %c0 to %c64 step %c32
// CHECK: %[[P:.*]] = affine.apply #{{.*}}(%[[N]])
// CHECK: %[[W:.*]] = tensor.extract_slice %arg1[%[[P]], 0, %{{.*}}] [1, 16, 32] [1, 1, 1] : tensor<2x16x32xf32> to tensor<16x32xf32>
// CHECK-NOT: tensor.empty() : tensor<16x32xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c8
// CHECK-NOT: vector.transfer_read {{.*}} vector<8x32xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c4 iter_args({{.*}}%[[ZERO]]) -> ({{.*}}vector<8x32xf32>)
// CHECK: tensor.extract_slice %[[W]][%{{.*}}, 0] [4, 32] [1, 1]
// CHECK-NOT: kiln.panel_matmul
// KERNEL-LABEL: func @panels
// KERNEL: linalg.generic
// KERNEL-SAME: kiln.panel_matmul
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#wp = affine_map<(d0, d1, d2) -> (d1 floordiv 32, d2, d1 mod 32)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @panels(%x: tensor<32x16xf32>, %w: tensor<2x16x32xf32>) -> tensor<32x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %r = scf.forall (%i) in (1) shared_outs(%o = %e) -> (tensor<32x64xf32>) {
    %f = linalg.fill ins(%cst : f32) outs(%o : tensor<32x64xf32>) -> tensor<32x64xf32>
    %g = linalg.generic {indexing_maps = [#mk, #wp, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %w : tensor<32x16xf32>, tensor<2x16x32xf32>) outs(%f : tensor<32x64xf32>) attrs = {kiln.panel_matmul} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<32x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %g into %o[0, 0] [32, 64] [1, 1] : tensor<32x64xf32> into tensor<32x64xf32>
    }
  }
  return %r : tensor<32x64xf32>
}

// -----

// With a bias add reading the product alone: each panel's matmul is tiled
// with the add and the fill of its accumulator, and then takes the add as
// its register tile's epilogue (one 8 x 32 tile: fill, k loop and add in
// registers, one store).
// CHECK-LABEL: func @panels_epilogue
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c32
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c8
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c4 iter_args({{.*}}) -> ({{.*}}vector<8x32xf32>)
// CHECK: arith.addf %{{.*}} : vector<8x32xf32>
// CHECK-NEXT: vector.transfer_write %{{.*}} : vector<8x32xf32>, tensor<8x32xf32>
// CHECK-NOT: linalg.generic
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#wp = affine_map<(d0, d1, d2) -> (d1 floordiv 32, d2, d1 mod 32)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @panels_epilogue(%x: tensor<32x16xf32>, %w: tensor<2x16x32xf32>, %bias: tensor<64xf32>) -> tensor<32x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %r = scf.forall (%i) in (1) shared_outs(%o = %e) -> (tensor<32x64xf32>) {
    %f = linalg.fill ins(%cst : f32) outs(%o : tensor<32x64xf32>) -> tensor<32x64xf32>
    %g = linalg.generic {indexing_maps = [#mk, #wp, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %w : tensor<32x16xf32>, tensor<2x16x32xf32>) outs(%f : tensor<32x64xf32>) attrs = {kiln.panel_matmul} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<32x64xf32>
    %h = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g, %bias : tensor<32x64xf32>, tensor<64xf32>) outs(%o : tensor<32x64xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<32x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %h into %o[0, 0] [32, 64] [1, 1] : tensor<32x64xf32> into tensor<32x64xf32>
    }
  }
  return %r : tensor<32x64xf32>
}

// -----

// A reduction longer than the cache block (kc-cache, 256): blocked first,
// outside the panel loop, so that each block of x stays in cache while both
// panels read it; the blocks of a panel's weights are [256, 32] slices.
// CHECK-LABEL: func @panels_blocked
// CHECK: scf.for %[[K:.*]] = %c0 to %c512 step %c256
// CHECK: %[[BLOCK:.*]] = tensor.extract_slice %arg1[0, %[[K]], 0] [2, 256, 32] [1, 1, 1]
// CHECK: scf.for %[[N:.*]] = %c0 to %c64 step %c32
// CHECK: tensor.extract_slice %[[BLOCK]][%{{.*}}, 0, %{{.*}}] [1, 256, 32] [1, 1, 1] : tensor<2x256x32xf32> to tensor<256x32xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c4 iter_args({{.*}}) -> ({{.*}}vector<8x32xf32>)
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#wp = affine_map<(d0, d1, d2) -> (d1 floordiv 32, d2, d1 mod 32)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @panels_blocked(%x: tensor<32x512xf32>, %w: tensor<2x512x32xf32>) -> tensor<32x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %r = scf.forall (%i) in (1) shared_outs(%o = %e) -> (tensor<32x64xf32>) {
    %f = linalg.fill ins(%cst : f32) outs(%o : tensor<32x64xf32>) -> tensor<32x64xf32>
    %g = linalg.generic {indexing_maps = [#mk, #wp, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %w : tensor<32x512xf32>, tensor<2x512x32xf32>) outs(%f : tensor<32x64xf32>) attrs = {kiln.panel_matmul} {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<32x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %g into %o[0, 0] [32, 64] [1, 1] : tensor<32x64xf32> into tensor<32x64xf32>
    }
  }
  return %r : tensor<32x64xf32>
}

// -----

// An 8-bit product by int8 weights in panels (kiln.matmul_panels of a
// kiln.matmul_integer), one row, the only workgroup (no scf.forall): one
// product per panel whatever the rows (the panel kernel is float only),
// each a generic that keeps the body's extensions (uint8 activations
// zero-extended; linalg.matmul would sign-extend them) and reads its panel
// [16, 32] in place; its register tile is the one-row 1 x 32 tile the
// dot-product lowering takes (test/Codegen/CPU/kiln-cpu-lower-dot-products.mlir).
// INT-LABEL: func @integer_panels
// INT-NOT: scf.forall
// INT: scf.for %[[N:.*]] = %c0 to %c64 step %c32
// INT: %[[W:.*]] = tensor.extract_slice %arg1[%{{.*}}, 0, %{{.*}}] [1, 16, 32] [1, 1, 1] : tensor<2x16x32xi8> to tensor<16x32xi8>
// INT: scf.for %{{.*}} = %c0 to %c16 step %c4 iter_args({{.*}}) -> ({{.*}}vector<1x32xi32>)
// INT: arith.extui %{{.*}} : vector<1x4xi8> to vector<1x4xi32>
// INT: arith.extsi %{{.*}} : vector<4x32xi8> to vector<4x32xi32>
// INT: vector.contract {{.*}} : vector<1x4xi32>, vector<4x32xi32> into vector<1x32xi32>
// INT-NOT: kiln.panel_matmul
#imk = affine_map<(d0, d1, d2) -> (d0, d2)>
#iwp = affine_map<(d0, d1, d2) -> (d1 floordiv 32, d2, d1 mod 32)>
#imn = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @integer_panels(%x: tensor<1x16xi8>, %w: tensor<2x16x32xi8>) -> tensor<1x64xi32> {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x64xi32>
  %f = linalg.fill ins(%zero : i32) outs(%e : tensor<1x64xi32>) -> tensor<1x64xi32>
  %g = linalg.generic {indexing_maps = [#imk, #iwp, #imn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<1x16xi8>, tensor<2x16x32xi8>) outs(%f : tensor<1x64xi32>) attrs = {kiln.panel_matmul} {
  ^bb0(%a: i8, %b: i8, %acc: i32):
    %a32 = arith.extui %a : i8 to i32
    %b32 = arith.extsi %b : i8 to i32
    %p = arith.muli %a32, %b32 : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<1x64xi32>
  return %g : tensor<1x64xi32>
}
