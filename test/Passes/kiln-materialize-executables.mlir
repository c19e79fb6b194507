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
