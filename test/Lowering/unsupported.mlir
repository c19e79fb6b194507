// RUN: kiln-opt --kiln-lower-to-linalg -split-input-file -verify-diagnostics %s

// What the lowering rejects, with the error the user sees: an error on the op
// naming the reason, then the conversion's own.

// Unsigned integers have no arith operations; they need a conversion to
// signless types before this pass.
func.func @reduce_unsigned(%x: tensor<4x6xui8>) -> tensor<4xui8> {
  // expected-error @+2 {{'kiln.reduce_max' op cannot be lowered to linalg: element type 'ui8' is not a float or a signless integer}}
  // expected-error @+1 {{failed to legalize operation 'kiln.reduce_max' that was explicitly marked illegal}}
  %0 = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x6xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

func.func @argmax_unsigned(%x: tensor<4x6xui16>) -> tensor<4xi64> {
  // expected-error @+2 {{'kiln.argmax' op cannot be lowered to linalg: element type 'ui16' is not a float or a signless integer}}
  // expected-error @+1 {{failed to legalize operation 'kiln.argmax'}}
  %0 = kiln.argmax %x {axis = 1 : i64, keepdims = false} : (tensor<4x6xui16>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @conv_unsigned(%x: tensor<1x1x4x4xui8>, %w: tensor<1x1x2x2xui8>) -> tensor<1x1x3x3xui8> {
  // expected-error @+2 {{'kiln.conv' op cannot be lowered to linalg: element type 'ui8' is not a float or a signless integer}}
  // expected-error @+1 {{failed to legalize operation 'kiln.conv'}}
  %0 = kiln.conv %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xui8>, tensor<1x1x2x2xui8>) -> tensor<1x1x3x3xui8>
  return %0 : tensor<1x1x3x3xui8>
}

// -----

// Every shape must be static (the importer guarantees it for models).
func.func @softmax_dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+2 {{'kiln.softmax' op cannot be lowered to linalg: dynamic shapes are not supported}}
  // expected-error @+1 {{failed to legalize operation 'kiln.softmax'}}
  %0 = kiln.softmax %x {axis = 1 : i64} : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @pool_dynamic(%x: tensor<1x2x?x8xf32>) -> tensor<1x2x?x4xf32> {
  // expected-error @+2 {{'kiln.max_pool' op cannot be lowered to linalg: dynamic shapes are not supported}}
  // expected-error @+1 {{failed to legalize operation 'kiln.max_pool'}}
  %0 = kiln.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x2x?x8xf32>) -> tensor<1x2x?x4xf32>
  return %0 : tensor<1x2x?x4xf32>
}
