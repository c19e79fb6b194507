// RUN: kiln-opt %s -split-input-file --kiln-transpose-matmul-weights | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-transpose-matmul-weights=min-rows=16 | FileCheck %s --check-prefix=ROWS

// The constant [K, N] = [8, 9] weight of a 16-row product is stored [9, 8]
// (k fastest: its first row is column 0 of the weight, 0, 9, 18, 27, ...)
// and read through a transpose back to [8, 9]. With min-rows=16 the
// product is too small and nothing changes.
// CHECK-LABEL: func @f32_weight
// CHECK: %[[T:.*]] = kiln.constant dense_resource<k_major_weight_0> : tensor<9x8xf32>
// CHECK: %[[W:.*]] = kiln.transpose %[[T]] {permutation = array<i64: 1, 0>} : tensor<9x8xf32> -> tensor<8x9xf32>
// CHECK: kiln.matmul %{{.*}}, %[[W]] : (tensor<16x8xf32>, tensor<8x9xf32>) -> tensor<16x9xf32>
// CHECK: k_major_weight_0: "0x{{[0-9A-F]+}}0000000000001041000090410000D841
// ROWS-LABEL: func @f32_weight
// ROWS-NOT: kiln.transpose
func.func @f32_weight(%x: tensor<16x8xf32>) -> tensor<16x9xf32> {
  %w = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0], [18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0], [27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0], [36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0], [45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0], [54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0], [63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0]]> : tensor<8x9xf32>
  %0 = kiln.matmul %x, %w : (tensor<16x8xf32>, tensor<8x9xf32>) -> tensor<16x9xf32>
  return %0 : tensor<16x9xf32>
}

// -----

// A weight kiln-narrow-matmul-weights stored in f16 is transposed under its
// cast; rows counted over the lhs's leading dimensions (2 x 8).
// CHECK-LABEL: func @narrowed_weight
// CHECK: %[[T:.*]] = kiln.constant dense_resource<k_major_weight_0> : tensor<9x8xf16>
// CHECK: %[[W:.*]] = kiln.transpose %[[T]] {{.*}} : tensor<9x8xf16> -> tensor<8x9xf16>
// CHECK: %[[C:.*]] = kiln.cast %[[W]] : tensor<8x9xf16> to tensor<8x9xf32>
// CHECK: kiln.matmul %{{.*}}, %[[C]]
func.func @narrowed_weight(%x: tensor<2x8x8xf32>) -> tensor<2x8x9xf32> {
  %h = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0], [18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0], [27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0], [36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0], [45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0], [54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0], [63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0]]> : tensor<8x9xf16>
  %c = kiln.cast %h : tensor<8x9xf16> to tensor<8x9xf32>
  %0 = kiln.matmul %x, %c : (tensor<2x8x8xf32>, tensor<8x9xf32>) -> tensor<2x8x9xf32>
  return %0 : tensor<2x8x9xf32>
}

// -----

// Unchanged: a product of 8 rows (a GEMV, which reads B along n), a weight
// another op reads too, a splat, a small weight (cloned into its dispatch),
// a weight that is no constant, and an integer weight.
// CHECK-LABEL: func @unchanged
// CHECK-NOT: kiln.transpose
// CHECK: return
func.func @unchanged(%x: tensor<8x8xf32>, %y: tensor<16x8xf32>, %z: tensor<16x2xf32>, %v: tensor<8x9xf32>)
    -> (tensor<8x9xf32>, tensor<16x9xf32>, tensor<8x9xf32>, tensor<16x9xf32>, tensor<16x2xf32>, tensor<16x9xf32>) {
  %w = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0], [18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0], [27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0], [36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0], [45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0], [54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0], [63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0]]> : tensor<8x9xf32>
  %0 = kiln.matmul %x, %w : (tensor<8x8xf32>, tensor<8x9xf32>) -> tensor<8x9xf32>
  %s = kiln.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0], [18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0], [27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0], [36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0], [45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0], [54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0], [63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0]]> : tensor<8x9xf32>
  %1 = kiln.matmul %y, %s : (tensor<16x8xf32>, tensor<8x9xf32>) -> tensor<16x9xf32>
  %2 = kiln.add %s, %v : (tensor<8x9xf32>, tensor<8x9xf32>) -> tensor<8x9xf32>
  %p = kiln.constant dense<0.5> : tensor<8x9xf32>
  %3 = kiln.matmul %y, %p : (tensor<16x8xf32>, tensor<8x9xf32>) -> tensor<16x9xf32>
  %q = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %4 = kiln.matmul %z, %q : (tensor<16x2xf32>, tensor<2x2xf32>) -> tensor<16x2xf32>
  %5 = kiln.matmul %y, %v : (tensor<16x8xf32>, tensor<8x9xf32>) -> tensor<16x9xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<8x9xf32>, tensor<16x9xf32>, tensor<8x9xf32>, tensor<16x9xf32>, tensor<16x2xf32>, tensor<16x9xf32>
}

// -----

// The int8 weight of an integer product (uint8 activations, as
// --quantize=int8-dynamic leaves them) is transposed too; one with a weight
// zero point is not (the lowering sums the weight's columns next to the
// product).
// CHECK-LABEL: func @integer_weights
// CHECK: %[[T:.*]] = kiln.constant dense_resource<k_major_weight_0> : tensor<9x8xi8>
// CHECK: %[[W:.*]] = kiln.transpose %[[T]] {{.*}} : tensor<9x8xi8> -> tensor<8x9xi8>
// CHECK: kiln.matmul_integer %{{.*}}, %[[W]] : (tensor<16x8xui8>, tensor<8x9xi8>) -> tensor<16x9xi32>
// CHECK-NOT: kiln.transpose
// CHECK: kiln.matmul_integer
// CHECK: k_major_weight_0: "0x{{[0-9A-F]+}}0009121B242D363F010A
func.func @integer_weights(%u: tensor<16x8xui8>, %zu: tensor<ui8>, %zw: tensor<i8>) -> (tensor<16x9xi32>, tensor<16x9xi32>) {
  %b = kiln.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15, 16, 17], [18, 19, 20, 21, 22, 23, 24, 25, 26], [27, 28, 29, 30, 31, 32, 33, 34, 35], [36, 37, 38, 39, 40, 41, 42, 43, 44], [45, 46, 47, 48, 49, 50, 51, 52, 53], [54, 55, 56, 57, 58, 59, 60, 61, 62], [63, 64, 65, 66, 67, 68, 69, 70, 71]]> : tensor<8x9xi8>
  %0 = kiln.matmul_integer %u, %b : (tensor<16x8xui8>, tensor<8x9xi8>) -> tensor<16x9xi32>
  %c = kiln.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15, 16, 17], [18, 19, 20, 21, 22, 23, 24, 25, 26], [27, 28, 29, 30, 31, 32, 33, 34, 35], [36, 37, 38, 39, 40, 41, 42, 43, 44], [45, 46, 47, 48, 49, 50, 51, 52, 53], [54, 55, 56, 57, 58, 59, 60, 61, 62], [63, 64, 65, 66, 67, 68, 69, 70, 71]]> : tensor<8x9xi8>
  %1 = kiln.matmul_integer %u, %c lhs_zero_point(%zu) rhs_zero_point(%zw) : (tensor<16x8xui8>, tensor<8x9xi8>, tensor<ui8>, tensor<i8>) -> tensor<16x9xi32>
  return %0, %1 : tensor<16x9xi32>, tensor<16x9xi32>
}
