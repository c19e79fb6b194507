// RUN: kiln-opt %s -split-input-file --kiln-narrow-matmul-weights | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-narrow-matmul-weights=precision=bf16 | FileCheck %s --check-prefix=BF16
// RUN: not kiln-opt %s -split-input-file --kiln-narrow-matmul-weights=precision=f8 2>&1 | FileCheck %s --check-prefix=BAD

// The constant f32 weight of a matmul is stored in f16, rounded to nearest
// with ties to even (1 + 2^-11, halfway between 1 and 1 + 2^-10, goes
// down to 1; 1 + 3 2^-11, halfway between 1 + 2^-10 and 1 + 2^-9, up to
// 1 + 2^-9 = 1.00195),
// and read through a cast back to f32; an operand that is no constant
// stays.
// CHECK-LABEL: func @matmul
// CHECK: %[[H:.*]] = kiln.constant dense<{{\[}}[1.000000e+00, 1.000000e+00], [1.001950e+00, 0.000000e+00]]> : tensor<2x2xf16>
// CHECK: %[[C:.*]] = kiln.cast %[[H]] : tensor<2x2xf16> to tensor<2x2xf32>
// CHECK: kiln.matmul %{{.*}}, %[[C]] : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
// BF16-LABEL: func @matmul
// BF16: kiln.constant dense<{{\[}}[1.000000e+00, 1.000000e+00], [1.000000e+00, 0.000000e+00]]> : tensor<2x2xbf16>
// BF16: kiln.cast %{{.*}} : tensor<2x2xbf16> to tensor<2x2xf32>
// BAD: kiln-narrow-matmul-weights: precision must be f16 or bf16, got 'f8'
func.func @matmul(%x: tensor<3x2xf32>, %w: tensor<2x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %c = kiln.constant dense<[[1.0, 1.00048828125], [1.00146484375, 0.0]]> : tensor<2x2xf32>
  %0 = kiln.matmul %x, %c : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %1 = kiln.matmul %x, %w : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// A convolution's filter and a matmul's panels too.
// CHECK-LABEL: func @filter_and_panels
// CHECK: kiln.cast %{{.*}} : tensor<4x2x3x3xf16> to tensor<4x2x3x3xf32>
// CHECK: kiln.conv
// CHECK: kiln.cast %{{.*}} : tensor<1x8x16xf16> to tensor<1x8x16xf32>
// CHECK: kiln.matmul_panels
func.func @filter_and_panels(%x: tensor<1x2x5x5xf32>, %y: tensor<1x8xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x16xf32>) {
  %f = kiln.constant dense<0.5> : tensor<4x2x3x3xf32>
  %p = kiln.constant dense<0.25> : tensor<1x8x16xf32>
  %0 = kiln.conv %x, %f {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  %1 = kiln.matmul_panels %y, %p {columns = 16 : i64} : (tensor<1x8xf32>, tensor<1x8x16xf32>) -> tensor<1x16xf32>
  return %0, %1 : tensor<1x4x3x3xf32>, tensor<1x16xf32>
}
