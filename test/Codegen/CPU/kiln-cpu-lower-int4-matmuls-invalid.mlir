// RUN: kiln-opt %s --kiln-cpu-lower-int4-matmuls="vectors=4" -verify-diagnostics -o /dev/null

// Codes in column panels of 32 cannot feed a kernel step of 4 x 16 columns.
#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d3, d4)>
#wp = affine_map<(d0, d1, d2, d3, d4) -> (d1 floordiv 32, d2, d4, d1 mod 32)>
#gp = affine_map<(d0, d1, d2, d3, d4) -> (d1 floordiv 32, d2, d1 mod 32)>
#mn = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1)>
func.func @panel_wider_than_kernel(%x: memref<20x2x2x16xf32>, %w: memref<2x2x16x32xi8>, %s: memref<2x2x32xf32>, %z: memref<2x2x32xf32>, %out: memref<20x64xf32>) {
  // expected-error @+1 {{kiln.int4_matmul: column panels of 32 need whole panels of 16 x 4 columns, got 64 columns}}
  linalg.generic {indexing_maps = [#lhs, #wp, #gp, #gp, #mn], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w, %s, %z : memref<20x2x2x16xf32>, memref<2x2x16x32xi8>, memref<2x2x32xf32>, memref<2x2x32xf32>) outs(%out : memref<20x64xf32>) attrs = {kiln.int4_matmul} {
  ^bb0(%in: f32, %byte: i8, %scale: f32, %zero: f32, %acc: f32):
    %wide = arith.extui %byte : i8 to i32
    %p = linalg.index 3 : index
    %pi = arith.index_cast %p : index to i32
    %c4 = arith.constant 4 : i32
    %shift = arith.muli %pi, %c4 : i32
    %c15 = arith.constant 15 : i32
    %sh = arith.shrui %wide, %shift : i32
    %code = arith.andi %sh, %c15 : i32
    %f = arith.sitofp %code : i32 to f32
    %d = arith.subf %f, %zero : f32
    %wv = arith.mulf %d, %scale : f32
    %prod = arith.mulf %in, %wv : f32
    %sum = arith.addf %acc, %prod : f32
    linalg.yield %sum : f32
  }
  return
}
