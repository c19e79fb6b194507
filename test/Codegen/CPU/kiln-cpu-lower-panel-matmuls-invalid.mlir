// RUN: kiln-opt %s --kiln-cpu-lower-panel-matmuls -verify-diagnostics -o /dev/null

// Panels of 8 columns: a 16-column vector would span two.
#mk = affine_map<(d0, d1, d2) -> (d0, d2)>
#wp = affine_map<(d0, d1, d2) -> (d1 floordiv 8, d2, d1 mod 8)>
#mn = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @narrow_panels(%x: memref<1x8xf32>, %w: memref<2x8x8xf32>, %out: memref<1x16xf32>) {
  // expected-error @+1 {{kiln.panel_matmul: panels of 8 columns are not a multiple of 16}}
  linalg.generic {indexing_maps = [#mk, #wp, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<1x8xf32>, memref<2x8x8xf32>) outs(%out : memref<1x16xf32>) attrs = {kiln.panel_matmul} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
