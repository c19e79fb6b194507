// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-materialize-executables='targets=cpu,gfx942 precision=f16' | FileCheck %s

// Each dispatch function becomes an executable of the same name with one
// variant per target: its own copy of the function and an export with the
// bytes the dispatch moves (two 4x8xf32 inputs and a 4x8xf32 result: 384 B)
// and the defaults the target pipelines overwrite. gfx variants carry the
// precision; the program's launches now name the executables.
// CHECK-LABEL: kiln.executable @dispatch_0 {
// CHECK-NEXT: kiln.variant @cpu target(#kiln.target<"cpu">) {
// CHECK-NEXT: kiln.export @dispatch_0 workgroups(1) workgroup_size(1) lds(0) flops(0) bytes(384)
// CHECK-NEXT: module {
// CHECK-NEXT: func.func @dispatch_0(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {kiln.dispatch}
// CHECK-NEXT: kiln.add
// CHECK: kiln.variant @gfx942 target(#kiln.target<"gfx942", {precision = "f16"}>) {
// CHECK-NEXT: kiln.export @dispatch_0 workgroups(1) workgroup_size(1) lds(0) flops(0) bytes(384)
// CHECK-NEXT: module {
// CHECK-NEXT: func.func @dispatch_0(
// CHECK-LABEL: kiln.program @main
// CHECK-NEXT: kiln.launch @dispatch_0(%arg0, %arg0)
// CHECK-NOT: func.func
func.func @dispatch_0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {kiln.dispatch} {
  %0 = kiln.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
kiln.program @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.launch @dispatch_0(%x, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  kiln.return %0 : tensor<4x8xf32>
}

// -----

// A table the dispatch only gathers from (an embedding) counts as the rows
// gathered: 2 indices x 16 f32 (128 B) + the indices (16 B) + the result
// (128 B), not the table's 64 KiB. A table also read otherwise counts whole
// (64 KiB + 16 B of indices + a 64 KiB result).
// CHECK-LABEL: kiln.executable @dispatch_gather {
// CHECK: kiln.export @dispatch_gather workgroups(1) workgroup_size(1) lds(0) flops(0) bytes(272)
// CHECK-LABEL: kiln.executable @dispatch_gather_and_add {
// CHECK: kiln.export @dispatch_gather_and_add workgroups(1) workgroup_size(1) lds(0) flops(0) bytes(131088)
func.func @dispatch_gather(%t: tensor<1024x16xf32>, %i: tensor<2xi64>) -> tensor<2x16xf32> attributes {kiln.dispatch} {
  %0 = kiln.gather %t, %i {axis = 0 : i64} : (tensor<1024x16xf32>, tensor<2xi64>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
func.func @dispatch_gather_and_add(%t: tensor<1024x16xf32>, %i: tensor<2xi64>) -> tensor<1024x16xf32> attributes {kiln.dispatch} {
  %0 = kiln.gather %t, %i {axis = 0 : i64} : (tensor<1024x16xf32>, tensor<2xi64>) -> tensor<2x16xf32>
  %1 = kiln.reduce_sum %0 {axes = array<i64: 0>, keepdims = true} : (tensor<2x16xf32>) -> tensor<1x16xf32>
  %2 = kiln.add %t, %1 : (tensor<1024x16xf32>, tensor<1x16xf32>) -> tensor<1024x16xf32>
  return %2 : tensor<1024x16xf32>
}
kiln.program @main(%t: tensor<1024x16xf32>, %i: tensor<2xi64>) -> tensor<1024x16xf32> {
  %0 = kiln.launch @dispatch_gather(%t, %i) : (tensor<1024x16xf32>, tensor<2xi64>) -> tensor<2x16xf32>
  %1 = kiln.launch @dispatch_gather_and_add(%t, %i) : (tensor<1024x16xf32>, tensor<2xi64>) -> tensor<1024x16xf32>
  kiln.return %1 : tensor<1024x16xf32>
}
