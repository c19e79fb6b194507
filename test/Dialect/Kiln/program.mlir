// RUN: kiln-opt %s -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s

// A planned program with its executables and a binary round-trips.
// CHECK-LABEL: kiln.executable @dispatch_0 {
// CHECK-NEXT: kiln.variant @cpu target(#kiln.target<"cpu">) {
// CHECK-NEXT: kiln.export @dispatch_0 workgroups(4) workgroup_size(1) lds(0) flops(128) bytes(192)
// CHECK-NEXT: module {
// CHECK-NEXT: func.func @dispatch_0
// CHECK: kiln.variant @gfx942 target(#kiln.target<"gfx942", {precision = "f16"}>) {
// CHECK-NEXT: kiln.export @dispatch_0 workgroups(1) workgroup_size(256) lds(16384) flops(128) bytes(192)
// CHECK-LABEL: kiln.program @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32> {kiln.name = "x"}) -> (tensor<4x8xf32> {kiln.name = "y"})
// CHECK-SAME: arena_size = 256 : i64
// CHECK-SAME: input_bindings = [#kiln.binding<input, 0, 128>]
// CHECK-SAME: output_bindings = [#kiln.binding<output, 128, 128>]
// CHECK-NEXT: %[[W:.*]] = kiln.constant
// CHECK-NEXT: %[[Y:.*]] = kiln.launch @dispatch_0(%[[X]], %[[W]]) bindings([#kiln.binding<input, 0, 128>, #kiln.binding<constant, 0, 128>], [#kiln.binding<output, 128, 128>]) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: kiln.return %[[Y]] : tensor<4x8xf32>
// CHECK: kiln.binary @code_object_cpu target(#kiln.target<"cpu">) format("elf-shared-object")
// CHECK-SAME: kernel_lds = array<i64: 0>
// CHECK-SAME: kernels = ["dispatch_0"]
kiln.executable @dispatch_0 {
  kiln.variant @cpu target(#kiln.target<"cpu">) {
    kiln.export @dispatch_0 workgroups(4) workgroup_size(1) lds(0) flops(128) bytes(192)
    builtin.module {
      func.func @dispatch_0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {kiln.dispatch} {
        %0 = kiln.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
        return %0 : tensor<4x8xf32>
      }
    }
  }
  kiln.variant @gfx942 target(#kiln.target<"gfx942", {precision = "f16"}>) {
    kiln.export @dispatch_0 workgroups(1) workgroup_size(256) lds(16384) flops(128) bytes(192)
    builtin.module {
      func.func @dispatch_0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {kiln.dispatch} {
        %0 = kiln.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
        return %0 : tensor<4x8xf32>
      }
    }
  }
}
kiln.program @main(%x: tensor<4x8xf32> {kiln.name = "x"}) -> (tensor<4x8xf32> {kiln.name = "y"})
    attributes {arena_size = 256 : i64, input_bindings = [#kiln.binding<input, 0, 128>],
                output_bindings = [#kiln.binding<output, 128, 128>]} {
  %w = kiln.constant dense<1.0> : tensor<4x8xf32>
  %y = kiln.launch @dispatch_0(%x, %w) bindings([#kiln.binding<input, 0, 128>, #kiln.binding<constant, 0, 128>], [#kiln.binding<output, 128, 128>]) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  kiln.return %y : tensor<4x8xf32>
}
kiln.binary @code_object_cpu target(#kiln.target<"cpu">) format("elf-shared-object")
    {cpu = "znver3", features = "+avx2", kernel_lds = array<i64: 0>, kernels = ["dispatch_0"],
     triple = "x86_64-unknown-linux-gnu"} : dense<[127, 69, 76, 70]> : tensor<4xi8>

// -----

// An unplanned program (after kiln-outline-dispatches) launches dispatch
// functions and has no bindings yet; several programs may share a module.
// CHECK-LABEL: kiln.program @bucket_1
// CHECK-NEXT: kiln.launch @f(%arg0) : (tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK-LABEL: kiln.program @bucket_4
func.func private @f(tensor<1x4xf32>) -> tensor<1x4xf32>
func.func private @g(tensor<4x4xf32>) -> tensor<4x4xf32>
kiln.program @bucket_1(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %0 = kiln.launch @f(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  kiln.return %0 : tensor<1x4xf32>
}
kiln.program @bucket_4(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = kiln.launch @g(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  kiln.return %0 : tensor<4x4xf32>
}
