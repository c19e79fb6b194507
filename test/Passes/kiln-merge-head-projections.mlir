// RUN: kiln-opt %s -split-input-file --kiln-merge-head-projections | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-merge-head-projections --kiln-form-dispatches='transposed-operands=true slice-views=true' | FileCheck %s --check-prefix=DISPATCH

// A BERT-style layer's projections: Q and V to [1, H, S, D], K to K^T
// [1, H, D, S], each with a bias. One product by the three weights side by
// side (row r: Wq's row r, then Wk's, then Wv's), the biases side by side,
// split into 3 x 2 heads once; Q, K and V are slices of it (K transposed
// after its slice). Weights 2x4 each: q = [[1..4], [5..8]], k = [[9..12],
// [13..16]], v = [[17..20], [21..24]]; biases [0.5 x 4], [1.5 x 4], [2.5 x
// 4].
// CHECK-LABEL: func.func @bert_layer
// CHECK: %[[W:.*]] = kiln.constant dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 9.000000e+00, 1.000000e+01, 1.100000e+01, 1.200000e+01, 1.700000e+01, 1.800000e+01, 1.900000e+01, 2.000000e+01], [5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00, 1.300000e+01, 1.400000e+01, 1.500000e+01, 1.600000e+01, 2.100000e+01, 2.200000e+01, 2.300000e+01, 2.400000e+01]]> : tensor<2x12xf32>
// CHECK: %[[Y:.*]] = kiln.matmul %arg0, %[[W]] : (tensor<1x16x2xf32>, tensor<2x12xf32>) -> tensor<1x16x12xf32>
// CHECK: %[[B:.*]] = kiln.constant dense<[5.000000e-01, 5.000000e-01, 5.000000e-01, 5.000000e-01, 1.500000e+00, 1.500000e+00, 1.500000e+00, 1.500000e+00, 2.500000e+00, 2.500000e+00, 2.500000e+00, 2.500000e+00]> : tensor<12xf32>
// CHECK: %[[YB:.*]] = kiln.add %[[Y]], %[[B]]
// CHECK: %[[R:.*]] = kiln.reshape %[[YB]] : tensor<1x16x12xf32> -> tensor<1x16x6x2xf32>
// CHECK: %[[H:.*]] = kiln.transpose %[[R]] {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x16x6x2xf32> -> tensor<1x6x16x2xf32>
// CHECK: %[[Q:.*]] = kiln.slice %[[H]] {ends = array<i64: 1, 2, 16, 2>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK: %[[K:.*]] = kiln.slice %[[H]] {ends = array<i64: 1, 4, 16, 2>, starts = array<i64: 0, 2, 0, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK: %[[KT:.*]] = kiln.transpose %[[K]] {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x16x2xf32> -> tensor<1x2x2x16xf32>
// CHECK: %[[V:.*]] = kiln.slice %[[H]] {ends = array<i64: 1, 6, 16, 2>, starts = array<i64: 0, 4, 0, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK-NOT: kiln.matmul %arg0
// CHECK: %[[S:.*]] = kiln.matmul %[[Q]], %[[KT]]
// CHECK: kiln.matmul %[[S]], %[[V]]
// The matmul takes in its result's transpose into heads; the slices are
// views (no dispatch); the scores' matmul takes in K's transpose.
// DISPATCH-LABEL: func.func @bert_layer
// DISPATCH: %[[H:.*]] = kiln.dispatch "dispatch_0_matmul"
// DISPATCH: kiln.matmul
// DISPATCH-NEXT: kiln.add
// DISPATCH-NEXT: kiln.reshape
// DISPATCH-NEXT: kiln.transpose
// DISPATCH: %[[Q:.*]] = kiln.slice %[[H]]
// DISPATCH-NEXT: %[[K:.*]] = kiln.slice %[[H]]
// DISPATCH-NEXT: %[[V:.*]] = kiln.slice %[[H]]
// DISPATCH-NEXT: %[[S:.*]] = kiln.dispatch "dispatch_1_matmul" (%[[K]], %[[Q]])
// DISPATCH: kiln.transpose
// DISPATCH-NEXT: kiln.matmul
// DISPATCH: kiln.dispatch "dispatch_2_matmul" (%[[S]], %[[V]])
func.func @bert_layer(%x: tensor<1x16x2xf32>) -> tensor<1x2x16x2xf32> {
  %wq = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %wk = kiln.constant dense<[[9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]> : tensor<2x4xf32>
  %wv = kiln.constant dense<[[17.0, 18.0, 19.0, 20.0], [21.0, 22.0, 23.0, 24.0]]> : tensor<2x4xf32>
  %bq = kiln.constant dense<0.5> : tensor<4xf32>
  %bk = kiln.constant dense<1.5> : tensor<4xf32>
  %bv = kiln.constant dense<2.5> : tensor<4xf32>
  %q0 = kiln.matmul %x, %wq : (tensor<1x16x2xf32>, tensor<2x4xf32>) -> tensor<1x16x4xf32>
  %q1 = kiln.add %q0, %bq : (tensor<1x16x4xf32>, tensor<4xf32>) -> tensor<1x16x4xf32>
  %q2 = kiln.reshape %q1 : tensor<1x16x4xf32> -> tensor<1x16x2x2xf32>
  %q = kiln.transpose %q2 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x16x2x2xf32> -> tensor<1x2x16x2xf32>
  %k0 = kiln.matmul %x, %wk : (tensor<1x16x2xf32>, tensor<2x4xf32>) -> tensor<1x16x4xf32>
  %k1 = kiln.add %bk, %k0 : (tensor<4xf32>, tensor<1x16x4xf32>) -> tensor<1x16x4xf32>
  %k2 = kiln.reshape %k1 : tensor<1x16x4xf32> -> tensor<1x16x2x2xf32>
  %kt = kiln.transpose %k2 {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x16x2x2xf32> -> tensor<1x2x2x16xf32>
  %v0 = kiln.matmul %x, %wv : (tensor<1x16x2xf32>, tensor<2x4xf32>) -> tensor<1x16x4xf32>
  %v1 = kiln.add %v0, %bv : (tensor<1x16x4xf32>, tensor<4xf32>) -> tensor<1x16x4xf32>
  %v2 = kiln.reshape %v1 : tensor<1x16x4xf32> -> tensor<1x16x2x2xf32>
  %v = kiln.transpose %v2 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x16x2x2xf32> -> tensor<1x2x16x2xf32>
  %s = kiln.matmul %q, %kt : (tensor<1x2x16x2xf32>, tensor<1x2x2x16xf32>) -> tensor<1x2x16x16xf32>
  %o = kiln.matmul %s, %v : (tensor<1x2x16x16xf32>, tensor<1x2x16x2xf32>) -> tensor<1x2x16x2xf32>
  return %o : tensor<1x2x16x2xf32>
}

// -----

// LLaMA-style grouped-query projections without biases: 4 query heads, 2
// key heads; the value projection reads another activation (not merged).
// CHECK-LABEL: func.func @grouped_query
// CHECK: kiln.matmul %arg0, %{{.*}} : (tensor<1x8x4xf32>, tensor<4x12xf32>) -> tensor<1x8x12xf32>
// CHECK-NOT: kiln.add
// CHECK: kiln.reshape %{{.*}} : tensor<1x8x12xf32> -> tensor<1x8x6x2xf32>
// CHECK: kiln.slice {{.*}} -> tensor<1x4x8x2xf32>
// CHECK: kiln.slice {{.*}} -> tensor<1x2x8x2xf32>
// CHECK: kiln.matmul %arg1, %{{.*}} : (tensor<1x8x4xf32>, tensor<4x4xf32>) -> tensor<1x8x4xf32>
func.func @grouped_query(%x: tensor<1x8x4xf32>, %y: tensor<1x8x4xf32>) -> (tensor<1x4x8x2xf32>, tensor<1x2x8x2xf32>, tensor<1x2x8x2xf32>) {
  %wq = kiln.constant dense_resource<wq> : tensor<4x8xf32>
  %wk = kiln.constant dense_resource<wk> : tensor<4x4xf32>
  %wv = kiln.constant dense_resource<wk> : tensor<4x4xf32>
  %q0 = kiln.matmul %x, %wq : (tensor<1x8x4xf32>, tensor<4x8xf32>) -> tensor<1x8x8xf32>
  %q1 = kiln.reshape %q0 : tensor<1x8x8xf32> -> tensor<1x8x4x2xf32>
  %q = kiln.transpose %q1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x4x2xf32> -> tensor<1x4x8x2xf32>
  %k0 = kiln.matmul %x, %wk : (tensor<1x8x4xf32>, tensor<4x4xf32>) -> tensor<1x8x4xf32>
  %k1 = kiln.reshape %k0 : tensor<1x8x4xf32> -> tensor<1x8x2x2xf32>
  %k = kiln.transpose %k1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x2xf32> -> tensor<1x2x8x2xf32>
  %v0 = kiln.matmul %y, %wv : (tensor<1x8x4xf32>, tensor<4x4xf32>) -> tensor<1x8x4xf32>
  %v1 = kiln.reshape %v0 : tensor<1x8x4xf32> -> tensor<1x8x2x2xf32>
  %v = kiln.transpose %v1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x2xf32> -> tensor<1x2x8x2xf32>
  return %q, %k, %v : tensor<1x4x8x2xf32>, tensor<1x2x8x2xf32>, tensor<1x2x8x2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      wq: "0x040000000000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F0000803F",
      wk: "0x0400000000000040000000400000004000000040000000400000004000000040000000400000004000000040000000400000004000000040000000400000004000000040"
    }
  }
#-}

// -----

// Left alone: batch 2 (each projection's heads would not be one range), a
// projection read twice, different head sizes.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-2: kiln.matmul %arg0
// CHECK-NOT: kiln.slice
// CHECK-COUNT-2: kiln.matmul %arg1
// CHECK-NOT: kiln.slice
// CHECK: return
func.func @left_alone(%x: tensor<2x8x4xf32>, %z: tensor<1x8x4xf32>) -> (tensor<2x2x8x2xf32>, tensor<2x2x8x2xf32>, tensor<1x2x8x2xf32>, tensor<1x8x4xf32>, tensor<1x1x8x4xf32>) {
  %w = kiln.constant dense<1.0> : tensor<4x4xf32>
  %w2 = kiln.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<4x4xf32>
  %a0 = kiln.matmul %x, %w2 : (tensor<2x8x4xf32>, tensor<4x4xf32>) -> tensor<2x8x4xf32>
  %a1 = kiln.reshape %a0 : tensor<2x8x4xf32> -> tensor<2x8x2x2xf32>
  %a = kiln.transpose %a1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x2x2xf32> -> tensor<2x2x8x2xf32>
  %b0 = kiln.matmul %x, %w2 : (tensor<2x8x4xf32>, tensor<4x4xf32>) -> tensor<2x8x4xf32>
  %b1 = kiln.reshape %b0 : tensor<2x8x4xf32> -> tensor<2x8x2x2xf32>
  %b = kiln.transpose %b1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<2x8x2x2xf32> -> tensor<2x2x8x2xf32>
  %c0 = kiln.matmul %z, %w2 : (tensor<1x8x4xf32>, tensor<4x4xf32>) -> tensor<1x8x4xf32>
  %c1 = kiln.reshape %c0 : tensor<1x8x4xf32> -> tensor<1x8x2x2xf32>
  %c = kiln.transpose %c1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x2xf32> -> tensor<1x2x8x2xf32>
  %d0 = kiln.matmul %z, %w2 : (tensor<1x8x4xf32>, tensor<4x4xf32>) -> tensor<1x8x4xf32>
  %d1 = kiln.reshape %d0 : tensor<1x8x4xf32> -> tensor<1x8x1x4xf32>
  %d = kiln.transpose %d1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x1x4xf32> -> tensor<1x1x8x4xf32>
  return %a, %b, %c, %c0, %d : tensor<2x2x8x2xf32>, tensor<2x2x8x2xf32>, tensor<1x2x8x2xf32>, tensor<1x8x4xf32>, tensor<1x1x8x4xf32>
}

// -----

// The query and key heads rotated with the same tables: one rotation over
// the merged heads (here all of them, so no slice before it), the query's
// and key's heads slices of it.
// CHECK-LABEL: func.func @rotary_heads
// CHECK: %[[H:.*]] = kiln.transpose %{{.*}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x6x2xf32> -> tensor<1x6x8x2xf32>
// CHECK-NEXT: %[[R:.*]] = kiln.rotary_embedding %[[H]], %arg1, %arg2 : (tensor<1x6x8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<1x6x8x2xf32>
// CHECK-NEXT: %[[Q:.*]] = kiln.slice %[[R]] {ends = array<i64: 1, 4, 8, 2>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT: %[[K:.*]] = kiln.slice %[[R]] {ends = array<i64: 1, 6, 8, 2>, starts = array<i64: 0, 4, 0, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK-NOT: kiln.rotary_embedding
// CHECK: %[[N:.*]] = kiln.neg %[[K]]
// CHECK: return %[[Q]], %[[N]]
// The merged rotation is one dispatch; the key's heads are a view of it
// (the query's, returned, are copied: an output is never part of a larger
// buffer).
// DISPATCH-LABEL: func.func @rotary_heads
// DISPATCH: %[[H:.*]] = kiln.dispatch "dispatch_0_matmul"
// DISPATCH: %[[R:.*]] = kiln.dispatch "dispatch_1_rotary_embedding" (%[[H]], %arg1, %arg2)
// DISPATCH: kiln.dispatch "dispatch_2_slice" (%[[R]])
// DISPATCH: %[[K:.*]] = kiln.slice %[[R]]
// DISPATCH-NEXT: kiln.dispatch "dispatch_3_neg" (%[[K]])
func.func @rotary_heads(%x: tensor<1x8x4xf32>, %cos: tensor<8x2xf32>, %sin: tensor<8x2xf32>) -> (tensor<1x4x8x2xf32>, tensor<1x2x8x2xf32>) {
  %wq = kiln.constant dense_resource<rope_wq> : tensor<4x8xf32>
  %wk = kiln.constant dense_resource<rope_wk> : tensor<4x4xf32>
  %q0 = kiln.matmul %x, %wq : (tensor<1x8x4xf32>, tensor<4x8xf32>) -> tensor<1x8x8xf32>
  %q1 = kiln.reshape %q0 : tensor<1x8x8xf32> -> tensor<1x8x4x2xf32>
  %q = kiln.transpose %q1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x4x2xf32> -> tensor<1x4x8x2xf32>
  %k0 = kiln.matmul %x, %wk : (tensor<1x8x4xf32>, tensor<4x4xf32>) -> tensor<1x8x4xf32>
  %k1 = kiln.reshape %k0 : tensor<1x8x4xf32> -> tensor<1x8x2x2xf32>
  %k = kiln.transpose %k1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x2xf32> -> tensor<1x2x8x2xf32>
  %rq = kiln.rotary_embedding %q, %cos, %sin : (tensor<1x4x8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<1x4x8x2xf32>
  %rk = kiln.rotary_embedding %k, %cos, %sin : (tensor<1x2x8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<1x2x8x2xf32>
  %n = kiln.neg %rk : tensor<1x2x8x2xf32>
  return %rq, %n : tensor<1x4x8x2xf32>, tensor<1x2x8x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      rope_wq: "0x040000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042",
      rope_wk: "0x040000000000803F0000004000004040000080400000A0400000C0400000E040000000410000104100002041000030410000404100005041000060410000704100008041"
    }
  }
#-}

// -----

// With other tables the key's rotation stays apart.
// CHECK-LABEL: func.func @rotary_other_tables
// CHECK: kiln.rotary_embedding %{{.*}}, %arg1, %arg2 : (tensor<1x4x8x2xf32>
// CHECK: kiln.rotary_embedding %{{.*}}, %arg3, %arg2 : (tensor<1x2x8x2xf32>
func.func @rotary_other_tables(%x: tensor<1x8x4xf32>, %cos: tensor<8x2xf32>, %sin: tensor<8x2xf32>, %cos2: tensor<8x2xf32>) -> (tensor<1x4x8x2xf32>, tensor<1x2x8x2xf32>) {
  %wq = kiln.constant dense_resource<rope_wq> : tensor<4x8xf32>
  %wk = kiln.constant dense_resource<rope_wk> : tensor<4x4xf32>
  %q0 = kiln.matmul %x, %wq : (tensor<1x8x4xf32>, tensor<4x8xf32>) -> tensor<1x8x8xf32>
  %q1 = kiln.reshape %q0 : tensor<1x8x8xf32> -> tensor<1x8x4x2xf32>
  %q = kiln.transpose %q1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x4x2xf32> -> tensor<1x4x8x2xf32>
  %k0 = kiln.matmul %x, %wk : (tensor<1x8x4xf32>, tensor<4x4xf32>) -> tensor<1x8x4xf32>
  %k1 = kiln.reshape %k0 : tensor<1x8x4xf32> -> tensor<1x8x2x2xf32>
  %k = kiln.transpose %k1 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x8x2x2xf32> -> tensor<1x2x8x2xf32>
  %rq = kiln.rotary_embedding %q, %cos, %sin : (tensor<1x4x8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<1x4x8x2xf32>
  %rk = kiln.rotary_embedding %k, %cos2, %sin : (tensor<1x2x8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<1x2x8x2xf32>
  %n = kiln.neg %rk : tensor<1x2x8x2xf32>
  return %rq, %n : tensor<1x4x8x2xf32>, tensor<1x2x8x2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      rope_wq: "0x040000000000803F0000004000004040000080400000A0400000C0400000E0400000004100001041000020410000304100004041000050410000604100007041000080410000884100009041000098410000A0410000A8410000B0410000B8410000C0410000C8410000D0410000D8410000E0410000E8410000F0410000F84100000042",
      rope_wk: "0x040000000000803F0000004000004040000080400000A0400000C0400000E040000000410000104100002041000030410000404100005041000060410000704100008041"
    }
  }
#-}
