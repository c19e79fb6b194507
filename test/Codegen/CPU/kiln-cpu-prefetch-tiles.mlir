// RUN: kiln-opt %s -split-input-file --kiln-cpu-prefetch-tiles | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-cpu-prefetch-tiles="min-bytes=0" | FileCheck %s --check-prefix=ALL

// A 16 x 16 register tile over the rows of a 4 MiB weight matrix (a 1x1
// convolution 1024 -> 1024): each k step reads 16 bytes of each of 16
// rows, so a line of a row lasts 4 steps, and each step prefetches 4 rows
// of the next row tile (the one the tile loop reaches next; on its last
// iteration, its own), the rows whose turn it is. The other operand's
// address does not move with the row loop: it gets none.
// CHECK-LABEL: func @rows_of_weights
// CHECK: %[[NEXT:.*]] = arith.addi %[[M:.*]], %c16
// CHECK: %[[IN:.*]] = arith.cmpi slt, %[[NEXT]], %c1024
// CHECK: %[[SEL:.*]] = arith.select %[[IN]], %[[NEXT]], %[[M]]
// CHECK: scf.for %[[K:.*]] = %c0 to %c1024 step %c4
// CHECK: %[[NEXTA:.*]] = memref.subview %{{.*}}[%[[SEL]], %[[K]]] [16, 4] [1, 1]
// CHECK: %[[STEP:.*]] = arith.divui
// CHECK: %[[PHASE:.*]] = arith.remui %[[STEP]], %c4
// CHECK-COUNT-4: memref.prefetch %[[NEXTA]][%{{.*}}, %c0], read, locality<3>, data
// CHECK-NOT: memref.prefetch
// CHECK: vector.transfer_read
// CHECK-NOT: memref.prefetch
// CHECK: scf.yield
func.func @rows_of_weights(%w: memref<1024x1024xf32>, %x: memref<1024x16xf32>, %y: memref<1024x16xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c1024 = arith.constant 1024 : index
  %f0 = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<16x16xf32>
  scf.for %m = %c0 to %c1024 step %c16 {
    %acc = scf.for %k = %c0 to %c1024 step %c4 iter_args(%a = %zero) -> (vector<16x16xf32>) {
      %ws = memref.subview %w[%m, %k] [16, 4] [1, 1] : memref<1024x1024xf32> to memref<16x4xf32, strided<[1024, 1], offset: ?>>
      %xs = memref.subview %x[%k, 0] [4, 16] [1, 1] : memref<1024x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
      %wv = vector.transfer_read %ws[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<16x4xf32, strided<[1024, 1], offset: ?>>, vector<16x4xf32>
      %xv = vector.transfer_read %xs[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<4x16xf32, strided<[16, 1], offset: ?>>, vector<4x16xf32>
      %r = vector.contract {indexing_maps = [affine_map<(i, j, l) -> (i, l)>, affine_map<(i, j, l) -> (l, j)>, affine_map<(i, j, l) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %wv, %xv, %a : vector<16x4xf32>, vector<4x16xf32> into vector<16x16xf32>
      scf.yield %r : vector<16x16xf32>
    }
    %ys = memref.subview %y[%m, 0] [16, 16] [1, 1] : memref<1024x16xf32> to memref<16x16xf32, strided<[16, 1], offset: ?>>
    vector.transfer_write %acc, %ys[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32, strided<[16, 1], offset: ?>>
  }
  return
}

// -----

// Columns outside, a wide tile (8 x 32) over the columns of a 2 MiB
// right-hand side: a k step reads two lines of each of its 4 rows, all 8
// are prefetched for the next column tile. The left-hand operand does not
// move with the column loop.
// CHECK-LABEL: func @columns_of_weights
// CHECK: scf.for %{{.*}} = %c0 to %c256 step %c4
// CHECK-COUNT-8: memref.prefetch
// CHECK-NOT: memref.prefetch
// CHECK: scf.yield
func.func @columns_of_weights(%x: memref<8x256xf32>, %w: memref<256x2048xf32>, %y: memref<8x2048xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %c2048 = arith.constant 2048 : index
  %f0 = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<8x32xf32>
  scf.for %n = %c0 to %c2048 step %c32 {
    %acc = scf.for %k = %c0 to %c256 step %c4 iter_args(%a = %zero) -> (vector<8x32xf32>) {
      %xs = memref.subview %x[0, %k] [8, 4] [1, 1] : memref<8x256xf32> to memref<8x4xf32, strided<[256, 1], offset: ?>>
      %ws = memref.subview %w[%k, %n] [4, 32] [1, 1] : memref<256x2048xf32> to memref<4x32xf32, strided<[2048, 1], offset: ?>>
      %xv = vector.transfer_read %xs[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<8x4xf32, strided<[256, 1], offset: ?>>, vector<8x4xf32>
      %wv = vector.transfer_read %ws[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<4x32xf32, strided<[2048, 1], offset: ?>>, vector<4x32xf32>
      %r = vector.contract {indexing_maps = [affine_map<(i, j, l) -> (i, l)>, affine_map<(i, j, l) -> (l, j)>, affine_map<(i, j, l) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %xv, %wv, %a : vector<8x4xf32>, vector<4x32xf32> into vector<8x32xf32>
      scf.yield %r : vector<8x32xf32>
    }
    %ys = memref.subview %y[0, %n] [8, 32] [1, 1] : memref<8x2048xf32> to memref<8x32xf32, strided<[2048, 1], offset: ?>>
    vector.transfer_write %acc, %ys[%c0, %c0] {in_bounds = [true, true]} : vector<8x32xf32>, memref<8x32xf32, strided<[2048, 1], offset: ?>>
  }
  return
}

// -----

// A weight matrix of 64 KiB (below min-bytes, 256 KiB by default) is mostly
// in cache: no prefetch. With min-bytes=0 it gets them; a k loop that is
// not inside a loop over tiles never does.
// CHECK-LABEL: func @small_weights
// CHECK-NOT: memref.prefetch
// ALL-LABEL: func @small_weights
// ALL: scf.for
// ALL: scf.for
// ALL-COUNT-4: memref.prefetch
// ALL-NOT: memref.prefetch
// ALL: return
func.func @small_weights(%w: memref<64x256xf32>, %x: memref<256x16xf32>, %y: memref<64x16xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %f0 = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<16x16xf32>
  scf.for %m = %c0 to %c64 step %c16 {
    %acc = scf.for %k = %c0 to %c256 step %c4 iter_args(%a = %zero) -> (vector<16x16xf32>) {
      %ws = memref.subview %w[%m, %k] [16, 4] [1, 1] : memref<64x256xf32> to memref<16x4xf32, strided<[256, 1], offset: ?>>
      %xs = memref.subview %x[%k, 0] [4, 16] [1, 1] : memref<256x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
      %wv = vector.transfer_read %ws[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<16x4xf32, strided<[256, 1], offset: ?>>, vector<16x4xf32>
      %xv = vector.transfer_read %xs[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<4x16xf32, strided<[16, 1], offset: ?>>, vector<4x16xf32>
      %r = vector.contract {indexing_maps = [affine_map<(i, j, l) -> (i, l)>, affine_map<(i, j, l) -> (l, j)>, affine_map<(i, j, l) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %wv, %xv, %a : vector<16x4xf32>, vector<4x16xf32> into vector<16x16xf32>
      scf.yield %r : vector<16x16xf32>
    }
    %ys = memref.subview %y[%m, 0] [16, 16] [1, 1] : memref<64x16xf32> to memref<16x16xf32, strided<[16, 1], offset: ?>>
    vector.transfer_write %acc, %ys[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32, strided<[16, 1], offset: ?>>
  }
  %acc2 = scf.for %k = %c0 to %c256 step %c4 iter_args(%a = %zero) -> (vector<16x16xf32>) {
    %ws = memref.subview %w[0, %k] [16, 4] [1, 1] : memref<64x256xf32> to memref<16x4xf32, strided<[256, 1], offset: ?>>
    %wv = vector.transfer_read %ws[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<16x4xf32, strided<[256, 1], offset: ?>>, vector<16x4xf32>
    %xs = memref.subview %x[%k, 0] [4, 16] [1, 1] : memref<256x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>
    %xv = vector.transfer_read %xs[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<4x16xf32, strided<[16, 1], offset: ?>>, vector<4x16xf32>
    %r = vector.contract {indexing_maps = [affine_map<(i, j, l) -> (i, l)>, affine_map<(i, j, l) -> (l, j)>, affine_map<(i, j, l) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %wv, %xv, %a : vector<16x4xf32>, vector<4x16xf32> into vector<16x16xf32>
    scf.yield %r : vector<16x16xf32>
  }
  return
}

// -----

// Columns outside rows (an epilogue tile's loop order) over a 2 MiB image
// (a 1x1 convolution's right-hand side, 512 x 1024): the column panel stays
// while the row loop runs, so it is the next column tile's panel that is
// prefetched, during the last row tiles (up to 4; 3 of these 4), each its
// share of the panel's rows. Those iterations run as a loop of their own
// after the row loop (a branch in every k loop slowed the other row
// tiles); at k step k, tile j asks for the 2 lines of each of the 4 rows
// from (j * 512 + k) / 3 (at most 508), at the next column tile. The
// weights (128 KiB) get none.
// CHECK-LABEL: func @panel_of_next_column
// CHECK: scf.for %[[N:.*]] = %c0 to %c1024 step %c32
// CHECK: %[[NEXT:.*]] = arith.select
// CHECK: %[[SPLIT:.*]] = arith.constant 16 : index
// CHECK: scf.for %{{.*}} = %c0 to %[[SPLIT]] step %c16
// CHECK-NOT: memref.prefetch
// CHECK: vector.transfer_write
// CHECK: scf.for %[[M:.*]] = %[[SPLIT]] to %c64 step %c16
// CHECK: scf.for %[[K:.*]] = %c0 to %c512 step %c4
// CHECK: %[[J0:.*]] = arith.subi %[[M]], %[[SPLIT]]
// CHECK: %[[J:.*]] = arith.divui %[[J0]]
// CHECK: %[[ROW0:.*]] = arith.divui %{{.*}}, %c3
// CHECK: %[[ROW1:.*]] = arith.addi %[[ROW0]]
// CHECK: %[[ROW:.*]] = arith.minui %[[ROW1]], %c508
// CHECK: %[[PANEL:.*]] = memref.subview %{{.*}}[%[[ROW]], %[[NEXT]]] [4, 32] [1, 1]
// CHECK-COUNT-8: memref.prefetch %[[PANEL]]
// CHECK-NOT: memref.prefetch
// CHECK: scf.yield
func.func @panel_of_next_column(%w: memref<64x512xf32>, %x: memref<512x1024xf32>, %y: memref<64x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %c1024 = arith.constant 1024 : index
  %f0 = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<16x32xf32>
  scf.for %n = %c0 to %c1024 step %c32 {
    scf.for %m = %c0 to %c64 step %c16 {
      %acc = scf.for %k = %c0 to %c512 step %c4 iter_args(%a = %zero) -> (vector<16x32xf32>) {
        %ws = memref.subview %w[%m, %k] [16, 4] [1, 1] : memref<64x512xf32> to memref<16x4xf32, strided<[512, 1], offset: ?>>
        %xs = memref.subview %x[%k, %n] [4, 32] [1, 1] : memref<512x1024xf32> to memref<4x32xf32, strided<[1024, 1], offset: ?>>
        %wv = vector.transfer_read %ws[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<16x4xf32, strided<[512, 1], offset: ?>>, vector<16x4xf32>
        %xv = vector.transfer_read %xs[%c0, %c0], %f0 {in_bounds = [true, true]} : memref<4x32xf32, strided<[1024, 1], offset: ?>>, vector<4x32xf32>
        %r = vector.contract {indexing_maps = [affine_map<(i, j, l) -> (i, l)>, affine_map<(i, j, l) -> (l, j)>, affine_map<(i, j, l) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %wv, %xv, %a : vector<16x4xf32>, vector<4x32xf32> into vector<16x32xf32>
        scf.yield %r : vector<16x32xf32>
      }
      %ys = memref.subview %y[%m, %n] [16, 32] [1, 1] : memref<64x1024xf32> to memref<16x32xf32, strided<[1024, 1], offset: ?>>
      vector.transfer_write %acc, %ys[%c0, %c0] {in_bounds = [true, true]} : vector<16x32xf32>, memref<16x32xf32, strided<[1024, 1], offset: ?>>
    }
  }
  return
}
