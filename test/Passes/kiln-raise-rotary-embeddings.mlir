// RUN: kiln-opt %s -split-input-file --kiln-raise-rotary-embeddings | FileCheck %s

// The rotary embedding of a query as LLaMA-style exports write it:
// x * cos + concat(-x[..., 16:], x[..., :16]) * sin becomes one
// kiln.rotary_embedding, and the chain is gone.
// CHECK-LABEL: func @llama_query
// CHECK-NEXT: %[[Y:.*]] = kiln.rotary_embedding %arg0, %arg1, %arg2 : (tensor<1x8x128x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>) -> tensor<1x8x128x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @llama_query(%x: tensor<1x8x128x32xf32>, %cos: tensor<128x32xf32>, %sin: tensor<128x32xf32>) -> tensor<1x8x128x32xf32> {
  %c = kiln.mul %x, %cos : (tensor<1x8x128x32xf32>, tensor<128x32xf32>) -> tensor<1x8x128x32xf32>
  %hi = kiln.slice %x {starts = array<i64: 0, 0, 0, 16>, ends = array<i64: 1, 8, 128, 32>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x8x128x32xf32> -> tensor<1x8x128x16xf32>
  %n = kiln.neg %hi : tensor<1x8x128x16xf32>
  %lo = kiln.slice %x {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 8, 128, 16>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x8x128x32xf32> -> tensor<1x8x128x16xf32>
  %r = kiln.concat %n, %lo {axis = 3 : i64} : (tensor<1x8x128x16xf32>, tensor<1x8x128x16xf32>) -> tensor<1x8x128x32xf32>
  %s = kiln.mul %r, %sin : (tensor<1x8x128x32xf32>, tensor<128x32xf32>) -> tensor<1x8x128x32xf32>
  %y = kiln.add %c, %s : (tensor<1x8x128x32xf32>, tensor<1x8x128x32xf32>) -> tensor<1x8x128x32xf32>
  return %y : tensor<1x8x128x32xf32>
}

// -----

// Operands in the other orders, the negation as a product by -1, rank 3,
// f16, cos and sin of rank 1; x stays for its other reader.
// CHECK-LABEL: func @other_orders
// CHECK-NEXT: %[[Y:.*]] = kiln.rotary_embedding %arg0, %arg1, %arg2 : (tensor<2x4x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<2x4x8xf16>
// CHECK-NEXT: %[[Z:.*]] = kiln.relu %arg0
// CHECK-NEXT: return %[[Y]], %[[Z]]
func.func @other_orders(%x: tensor<2x4x8xf16>, %cos: tensor<8xf16>, %sin: tensor<8xf16>) -> (tensor<2x4x8xf16>, tensor<2x4x8xf16>) {
  %m1 = kiln.constant dense<-1.0> : tensor<1xf16>
  %hi = kiln.slice %x {starts = array<i64: 0, 0, 4>, ends = array<i64: 2, 4, 8>, steps = array<i64: 1, 1, 1>} : tensor<2x4x8xf16> -> tensor<2x4x4xf16>
  %n = kiln.mul %m1, %hi : (tensor<1xf16>, tensor<2x4x4xf16>) -> tensor<2x4x4xf16>
  %lo = kiln.slice %x {starts = array<i64: 0, 0, 0>, ends = array<i64: 2, 4, 4>, steps = array<i64: 1, 1, 1>} : tensor<2x4x8xf16> -> tensor<2x4x4xf16>
  %r = kiln.concat %n, %lo {axis = 2 : i64} : (tensor<2x4x4xf16>, tensor<2x4x4xf16>) -> tensor<2x4x8xf16>
  %s = kiln.mul %sin, %r : (tensor<8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %c = kiln.mul %cos, %x : (tensor<8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %y = kiln.add %s, %c : (tensor<2x4x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %z = kiln.relu %x : tensor<2x4x8xf16>
  return %y, %z : tensor<2x4x8xf16>, tensor<2x4x8xf16>
}

// -----

// Not a rotation: the halves in the wrong order (concat(x[..., :16],
// -x[..., 16:])), the slices of another tensor, the rotated half read
// twice, a negation by -2. Nothing changes.
// CHECK-LABEL: func @left_alone
// CHECK-NOT: kiln.rotary_embedding
// CHECK: return
func.func @left_alone(%x: tensor<4x32xf32>, %w: tensor<4x32xf32>, %cos: tensor<32xf32>, %sin: tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>) {
  %c = kiln.mul %x, %cos : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  // Swapped halves.
  %hi0 = kiln.slice %x {starts = array<i64: 0, 16>, ends = array<i64: 4, 32>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x16xf32>
  %n0 = kiln.neg %hi0 : tensor<4x16xf32>
  %lo0 = kiln.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 4, 16>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x16xf32>
  %r0 = kiln.concat %lo0, %n0 {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %s0 = kiln.mul %r0, %sin : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %y0 = kiln.add %c, %s0 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // The rotated half of %w, the cosine term of %x.
  %c1 = kiln.mul %x, %cos : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %hi1 = kiln.slice %w {starts = array<i64: 0, 16>, ends = array<i64: 4, 32>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x16xf32>
  %n1 = kiln.neg %hi1 : tensor<4x16xf32>
  %lo1 = kiln.slice %w {starts = array<i64: 0, 0>, ends = array<i64: 4, 16>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x16xf32>
  %r1 = kiln.concat %n1, %lo1 {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %s1 = kiln.mul %r1, %sin : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %y1 = kiln.add %c1, %s1 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // The rotated half also returned.
  %c2 = kiln.mul %x, %cos : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %hi2 = kiln.slice %x {starts = array<i64: 0, 16>, ends = array<i64: 4, 32>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x16xf32>
  %n2 = kiln.neg %hi2 : tensor<4x16xf32>
  %lo2 = kiln.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 4, 16>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x16xf32>
  %r2 = kiln.concat %n2, %lo2 {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %s2 = kiln.mul %r2, %sin : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %y2 = kiln.add %c2, %s2 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  // A product by -2 is not a negation.
  %m2 = kiln.constant dense<-2.0> : tensor<f32>
  %c3 = kiln.mul %x, %cos : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %hi3 = kiln.slice %x {starts = array<i64: 0, 16>, ends = array<i64: 4, 32>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x16xf32>
  %n3 = kiln.mul %hi3, %m2 : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %lo3 = kiln.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 4, 16>, steps = array<i64: 1, 1>} : tensor<4x32xf32> -> tensor<4x16xf32>
  %r3 = kiln.concat %n3, %lo3 {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %s3 = kiln.mul %r3, %sin : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %y3 = kiln.add %c3, %s3 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %y0, %y1, %y2, %r2, %y3 : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// GPT-J-style interleaved pairs: x * cos + rotate_every_two(x) * sin, with
// rotate_every_two(x) = stack(-x[..., 1::2], x[..., ::2], -1) flattened
// (strided slices, the negation, unsqueezes at -1 as reshapes, a concat
// along the new axis, a reshape back), becomes one rotation with
// interleaved = true.
// CHECK-LABEL: func.func @every_two
// CHECK-NEXT: %[[Y:.*]] = kiln.rotary_embedding %arg0, %arg1, %arg2 {interleaved = true} : (tensor<1x2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @every_two(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<1x2x4x8xf32> {
  %c = kiln.mul %x, %cos : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %even = kiln.slice %x {ends = array<i64: 1, 2, 4, 8>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 2>} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %odd = kiln.slice %x {ends = array<i64: 1, 2, 4, 8>, starts = array<i64: 0, 0, 0, 1>, steps = array<i64: 1, 1, 1, 2>} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %e = kiln.reshape %even : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x1xf32>
  %n = kiln.neg %odd : tensor<1x2x4x4xf32>
  %o = kiln.reshape %n : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x1xf32>
  %pairs = kiln.concat %o, %e {axis = 4 : i64} : (tensor<1x2x4x4x1xf32>, tensor<1x2x4x4x1xf32>) -> tensor<1x2x4x4x2xf32>
  %r = kiln.reshape %pairs : tensor<1x2x4x4x2xf32> -> tensor<1x2x4x8xf32>
  %s = kiln.mul %r, %sin : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %y = kiln.add %c, %s : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// -----

// Near miss: the pairs stacked the other way round, (x[2i], -x[2i+1]), is
// not a rotation by +sin: the chain stays.
// CHECK-LABEL: func.func @every_two_swapped
// CHECK-NOT: kiln.rotary_embedding
// CHECK: kiln.concat
func.func @every_two_swapped(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) -> tensor<1x2x4x8xf32> {
  %c = kiln.mul %x, %cos : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %even = kiln.slice %x {ends = array<i64: 1, 2, 4, 8>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 2>} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %odd = kiln.slice %x {ends = array<i64: 1, 2, 4, 8>, starts = array<i64: 0, 0, 0, 1>, steps = array<i64: 1, 1, 1, 2>} : tensor<1x2x4x8xf32> -> tensor<1x2x4x4xf32>
  %e = kiln.reshape %even : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x1xf32>
  %n = kiln.neg %odd : tensor<1x2x4x4xf32>
  %o = kiln.reshape %n : tensor<1x2x4x4xf32> -> tensor<1x2x4x4x1xf32>
  %pairs = kiln.concat %e, %o {axis = 4 : i64} : (tensor<1x2x4x4x1xf32>, tensor<1x2x4x4x1xf32>) -> tensor<1x2x4x4x2xf32>
  %r = kiln.reshape %pairs : tensor<1x2x4x4x2xf32> -> tensor<1x2x4x8xf32>
  %s = kiln.mul %r, %sin : (tensor<1x2x4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  %y = kiln.add %c, %s : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}
