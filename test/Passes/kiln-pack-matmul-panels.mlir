// RUN: kiln-opt %s -split-input-file --kiln-pack-matmul-panels | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-pack-matmul-panels="unfused=false" | FileCheck %s --check-prefix=FUSED
// RUN: not kiln-opt %s -split-input-file --kiln-pack-matmul-panels="panel=8" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: kiln-opt %s -split-input-file --kiln-pack-matmul-panels="max-rows=1000000" | FileCheck %s --check-prefix=NOLIMIT

// A matmul of 2 rows by a constant [3, 20] weight: the weight becomes 2
// panels of 16, [2, 3, 16], the second holding columns 16..19 and 12 zero
// columns. Element [k, n] is 100 k + n here, so panel 0 row k is 100 k +
// 0..15 and panel 1 row k is 100 k + 16..19, then zeros.
// CHECK-LABEL: func.func @pack
// CHECK: %[[W:.*]] = kiln.constant dense_resource<[[BLOB:matmul_panels_0]]> : tensor<2x3x16xf32>
// CHECK: kiln.matmul_panels %arg0, %[[W]] {columns = 20 : i64} : (tensor<1x2x3xf32>, tensor<2x3x16xf32>) -> tensor<1x2x20xf32>
// CHECK-NOT: kiln.matmul %
// CHECK: [[BLOB]]: "0x10000000
// Panel 1, row 0 starts at float 48: 16, 17, 18, 19 (0x41800000 ...), zeros.
// CHECK-SAME: 00008041000088410000904100009841000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
func.func @pack(%x: tensor<1x2x3xf32>) -> tensor<1x2x20xf32> {
  %w = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0],
                            [100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0],
                            [200.0, 201.0, 202.0, 203.0, 204.0, 205.0, 206.0, 207.0, 208.0, 209.0, 210.0, 211.0, 212.0, 213.0, 214.0, 215.0, 216.0, 217.0, 218.0, 219.0]]> : tensor<3x20xf32>
  %y = kiln.matmul %x, %w : (tensor<1x2x3xf32>, tensor<3x20xf32>) -> tensor<1x2x20xf32>
  return %y : tensor<1x2x20xf32>
}

// -----

// More than max-rows rows (64 here; kiln-compile sets no limit) with an
// elementwise op reading the product, a weight computed at run time, a
// batched weight, an f16
// weight (the cpu kernel is f32's), rows spread over more than 8 indices
// of the dimensions before the rows ([16, 1, 3]: the panel kernel would
// stream the weight 16 times; fewer than 128 rows, so the unit dimension
// counts): left as they are.
// CHECK-LABEL: func.func @unpacked
// CHECK-COUNT-5: kiln.matmul %
// CHECK-NOT: kiln.matmul_panels
func.func @unpacked(%x: tensor<65x3xf32>, %y: tensor<1x3xf32>, %v: tensor<3x16xf32>, %b: tensor<2x3x16xf32>) -> (tensor<65x16xf32>, tensor<1x16xf32>, tensor<2x1x16xf32>, tensor<1x16xf16>, tensor<16x1x16xf32>) {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<3x16xf32>
  %mm = kiln.matmul %x, %w : (tensor<65x3xf32>, tensor<3x16xf32>) -> tensor<65x16xf32>
  %0 = kiln.relu %mm : tensor<65x16xf32>
  %1 = kiln.matmul %y, %v : (tensor<1x3xf32>, tensor<3x16xf32>) -> tensor<1x16xf32>
  %c = kiln.constant dense<1.0> : tensor<2x3x16xf32>
  %2 = kiln.matmul %y, %c : (tensor<1x3xf32>, tensor<2x3x16xf32>) -> tensor<2x1x16xf32>
  %h = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<3x16xf16>
  %z = kiln.constant dense<1.0> : tensor<1x3xf16>
  %3 = kiln.matmul %z, %h : (tensor<1x3xf16>, tensor<3x16xf16>) -> tensor<1x16xf16>
  %s = kiln.constant dense<1.0> : tensor<16x1x3xf32>
  %4 = kiln.matmul %s, %w : (tensor<16x1x3xf32>, tensor<3x16xf32>) -> tensor<16x1x16xf32>
  %5 = kiln.relu %4 : tensor<16x1x16xf32>
  return %0, %1, %2, %3, %5 : tensor<65x16xf32>, tensor<1x16xf32>, tensor<2x1x16xf32>, tensor<1x16xf16>, tensor<16x1x16xf32>
}

// -----

// Torch's sequence-first attention at batch 1: [197, 1, 3] is 197 rows in
// one stream once unit dimensions are dropped (128 rows or more: every
// workgroup takes the GEMM register tiles, which fold the leading
// dimensions into M): packed, bias add and all, without a row limit (as
// kiln-compile runs the pass); a [16, 1, 3] lhs (@unpacked) stays.
// NOLIMIT-LABEL: func.func @sequence_first
// NOLIMIT: %[[P:.*]] = kiln.matmul_panels %arg0, %{{.*}} {columns = 16 : i64} : (tensor<197x1x3xf32>, tensor<1x3x16xf32>) -> tensor<197x1x16xf32>
// NOLIMIT: kiln.add %[[P]]
// NOLIMIT-LABEL: func.func @mid_rows
func.func @sequence_first(%x: tensor<197x1x3xf32>, %b: tensor<16xf32>) -> tensor<197x1x16xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<3x16xf32>
  %y = kiln.matmul %x, %w : (tensor<197x1x3xf32>, tensor<3x16xf32>) -> tensor<197x1x16xf32>
  %z = kiln.add %y, %b : (tensor<197x1x16xf32>, tensor<16xf32>) -> tensor<197x1x16xf32>
  return %z : tensor<197x1x16xf32>
}

// -----

// 16 rows in one dimension (at most max-rows, 64 by default) with a relu
// reading the product: packed (the GEMM register tiles then read the panels,
// with the relu as their epilogue).
// CHECK-LABEL: func.func @mid_rows
// CHECK: kiln.matmul_panels %arg0, %{{.*}} {columns = 16 : i64} : (tensor<1x16x3xf32>, tensor<1x3x16xf32>) -> tensor<1x16x16xf32>
// CHECK: kiln.relu
func.func @mid_rows(%x: tensor<1x16x3xf32>) -> tensor<1x16x16xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<3x16xf32>
  %0 = kiln.matmul %x, %w : (tensor<1x16x3xf32>, tensor<3x16xf32>) -> tensor<1x16x16xf32>
  %1 = kiln.relu %0 : tensor<1x16x16xf32>
  return %1 : tensor<1x16x16xf32>
}

// -----

// More rows than max-rows, but nothing elementwise reads the product (an
// LLM head, a projection before a reshape): packed, unless unfused=false.
// CHECK-LABEL: func.func @head
// CHECK: kiln.matmul_panels %arg0, %{{.*}} {columns = 16 : i64} : (tensor<65x3xf32>, tensor<1x3x16xf32>) -> tensor<65x16xf32>
// FUSED-LABEL: func.func @head
// FUSED: kiln.matmul %arg0
func.func @head(%x: tensor<65x3xf32>) -> tensor<65x16xf32> {
  %w = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<3x16xf32>
  %0 = kiln.matmul %x, %w : (tensor<65x3xf32>, tensor<3x16xf32>) -> tensor<65x16xf32>
  return %0 : tensor<65x16xf32>
}

// -----

// An 8-bit product of 2 rows by a constant [3, 32] int8 weight without zero
// points (uint8 activations): two panels of 16, [2, 3, 16] i8, the i32
// result. Element [k, n] is 10 k + n: panel 0 holds rows 0..15, 10..25 and
// 20..35 of columns 0..15, panel 1 the same rows of columns 16..31.
// CHECK-LABEL: func.func @pack_integer
// CHECK: %[[W:.*]] = kiln.constant dense_resource<[[BLOB:matmul_panels_0]]> : tensor<2x3x16xi8>
// CHECK: kiln.matmul_panels %arg0, %[[W]] {columns = 32 : i64} : (tensor<1x2x3xui8>, tensor<2x3x16xi8>) -> tensor<1x2x32xi32>
// CHECK-NOT: kiln.matmul_integer
// CHECK: [[BLOB]]: "0x10000000000102030405060708090A0B0C0D0E0F0A0B0C0D0E0F101112131415161718191415161718191A1B1C1D1E1F20212223101112131415161718191A1B1C1D1E1F1A1B1C1D1E1F202122232425262728292425262728292A2B2C2D2E2F30313233"
func.func @pack_integer(%x: tensor<1x2x3xui8>) -> tensor<1x2x32xi32> {
  %w = kiln.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31],
                            [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41],
                            [20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51]]> : tensor<3x32xi8>
  %y = kiln.matmul_integer %x, %w : (tensor<1x2x3xui8>, tensor<3x32xi8>) -> tensor<1x2x32xi32>
  return %y : tensor<1x2x32xi32>
}

// -----

// 8-bit products the panels do not take: more than 8 rows (the GEMM tiles
// interleave their column blocks), a zero point, a weight computed at run
// time, uint8 weights, 5 columns (a panel of 16 would compute 3x the
// work). (Non-splat weights: a splat has no bytes to pack.)
// CHECK-LABEL: func.func @integer_unpacked
// CHECK-COUNT-5: kiln.matmul_integer
// CHECK-NOT: kiln.matmul_panels
func.func @integer_unpacked(%x: tensor<9x3xui8>, %y: tensor<1x3xui8>, %z: tensor<ui8>, %v: tensor<3x16xi8>) -> (tensor<9x16xi32>, tensor<1x16xi32>, tensor<1x16xi32>, tensor<1x16xi32>, tensor<1x5xi32>) {
  %w = kiln.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]]> : tensor<3x16xi8>
  %u = kiln.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]]> : tensor<3x16xui8>
  %0 = kiln.matmul_integer %x, %w : (tensor<9x3xui8>, tensor<3x16xi8>) -> tensor<9x16xi32>
  %1 = kiln.matmul_integer %y, %w lhs_zero_point(%z) : (tensor<1x3xui8>, tensor<3x16xi8>, tensor<ui8>) -> tensor<1x16xi32>
  %2 = kiln.matmul_integer %y, %v : (tensor<1x3xui8>, tensor<3x16xi8>) -> tensor<1x16xi32>
  %3 = kiln.matmul_integer %y, %u : (tensor<1x3xui8>, tensor<3x16xui8>) -> tensor<1x16xi32>
  %n = kiln.constant dense<[[1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]]> : tensor<3x5xi8>
  %4 = kiln.matmul_integer %y, %n : (tensor<1x3xui8>, tensor<3x5xi8>) -> tensor<1x5xi32>
  return %0, %1, %2, %3, %4 : tensor<9x16xi32>, tensor<1x16xi32>, tensor<1x16xi32>, tensor<1x16xi32>, tensor<1x5xi32>
}

// -----

// Columns that are not whole panels (136 = 8 x 16 + 8): the product is
// computed for all 9 panels, the last one's 8 zero columns included, and
// sliced to 136 (the padding is at most an eighth of the work).
// CHECK-LABEL: func.func @integer_partial_panel
// CHECK: %[[P:.*]] = kiln.matmul_panels %arg0, %{{.*}} {columns = 144 : i64} : (tensor<1x1xui8>, tensor<9x1x16xi8>) -> tensor<1x144xi32>
// CHECK: kiln.slice %[[P]] {ends = array<i64: 1, 136>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<1x144xi32> -> tensor<1x136xi32>
// CHECK-NOT: kiln.matmul_integer
func.func @integer_partial_panel(%y: tensor<1x1xui8>) -> tensor<1x136xi32> {
  %w = kiln.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35]]> : tensor<1x136xi8>
  %0 = kiln.matmul_integer %y, %w : (tensor<1x1xui8>, tensor<1x136xi8>) -> tensor<1x136xi32>
  return %0 : tensor<1x136xi32>
}

// -----

// BAD: error: kiln-pack-matmul-panels: panel must be a positive multiple of 16, got 8
func.func @bad_panel() {
  return
}

// -----

// A few-row product whose N (136) is not whole panels of 16 but whose
// padding (8) is at most N / 8 is computed for whole panels (144 columns),
// so that its workgroups can split the columns in panels; its bias add
// takes the padding too (the bias padded with zeros), and a slice takes the
// first 136 columns of the sum.
// CHECK-LABEL: func.func @whole_panels_bias
// CHECK: %[[W:.*]] = kiln.constant dense_resource<matmul_panels_0> : tensor<9x2x16xf32>
// CHECK: %[[P:.*]] = kiln.matmul_panels %arg0, %[[W]] {columns = 144 : i64} : (tensor<1x2xf32>, tensor<9x2x16xf32>) -> tensor<1x144xf32>
// CHECK: %[[B:.*]] = kiln.constant dense_resource<matmul_panels_bias_1> : tensor<144xf32>
// CHECK: %[[S:.*]] = kiln.add %[[P]], %[[B]] : (tensor<1x144xf32>, tensor<144xf32>) -> tensor<1x144xf32>
// CHECK: %[[Y:.*]] = kiln.slice %[[S]] {ends = array<i64: 1, 136>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<1x144xf32> -> tensor<1x136xf32>
// CHECK: return %[[Y]]
// CHECK-NOT: kiln.constant dense<
// CHECK: matmul_panels_bias_1: "0x{{........}}000000000000803F00000040{{[0-9A-F]+}}0000000000000000"
func.func @whole_panels_bias(%x: tensor<1x2xf32>) -> tensor<1x136xf32> {
  %w = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0], [3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<2x136xf32>
  %b = kiln.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 96.0, 97.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0, 128.0, 129.0, 130.0, 131.0, 132.0, 133.0, 134.0, 135.0]> : tensor<136xf32>
  %y = kiln.matmul %x, %w : (tensor<1x2xf32>, tensor<2x136xf32>) -> tensor<1x136xf32>
  %z = kiln.add %y, %b : (tensor<1x136xf32>, tensor<136xf32>) -> tensor<1x136xf32>
  return %z : tensor<1x136xf32>
}
