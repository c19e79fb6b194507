// RUN: kiln-opt %s -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s

// kiln.if and kiln.loop before outlining: their branches and bodies are
// private functions.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = kiln.if %{{.*}} then @then(%{{.*}}) else @else(%{{.*}}, %{{.*}}) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: kiln.loop @body(%{{.*}}, %{{.*}}, %[[Y]]) captures(%{{.*}}) : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>)
func.func private @then(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func private @else(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = kiln.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}
func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<4xf32>, %x: tensor<4xf32>)
    -> (tensor<i1>, tensor<4xf32>, tensor<4xf32>) {
  %s = kiln.add %h, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %c, %s, %s : tensor<i1>, tensor<4xf32>, tensor<4xf32>
}
func.func @main(%c: tensor<i1>, %x: tensor<4xf32>, %n: tensor<i64>) -> (tensor<4xf32>, tensor<3x4xf32>) {
  %y = kiln.if %c then @then(%x) else @else(%x, %x) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h, %rows = kiln.loop @body(%n, %c, %y) captures(%x) : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>)
  return %h, %rows : tensor<4xf32>, tensor<3x4xf32>
}

// -----

// In a planned program: bindings like a launch's and a scratch range.
// CHECK-LABEL: kiln.program private @branch
// CHECK-LABEL: kiln.program @main
// CHECK: kiln.if %{{.*}} then @branch(%{{.*}}) else @branch(%{{.*}}) bindings([#kiln.binding<input, 0, 1>, #kiln.binding<input, 64, 16>, #kiln.binding<input, 64, 16>], [#kiln.binding<output, 128, 16>]) scratch(#kiln.binding<arena, 192, 64>)
kiln.program private @branch(%a: tensor<4xf32>) -> tensor<4xf32>
    attributes {arena_size = 64 : i64, input_bindings = [#kiln.binding<input, 0, 16>],
                output_bindings = [#kiln.binding<input, 0, 16>]} {
  kiln.return %a : tensor<4xf32>
}
kiln.program @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32>
    attributes {arena_size = 256 : i64,
                input_bindings = [#kiln.binding<input, 0, 1>, #kiln.binding<input, 64, 16>],
                output_bindings = [#kiln.binding<output, 128, 16>]} {
  %y = kiln.if %c then @branch(%x) else @branch(%x)
      bindings([#kiln.binding<input, 0, 1>, #kiln.binding<input, 64, 16>, #kiln.binding<input, 64, 16>],
               [#kiln.binding<output, 128, 16>]) scratch(#kiln.binding<arena, 192, 64>)
      : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  kiln.return %y : tensor<4xf32>
}

// -----

// A loop with scan inputs: the body takes row i of each after the carried
// values.
// CHECK-LABEL: func.func @scan
// CHECK: kiln.loop @rows(%{{.*}}, %{{.*}}, %{{.*}}) scan(%{{.*}}) captures(%{{.*}}) : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<7x4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<7x4xf32>)
func.func private @rows(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<4xf32>, %r: tensor<4xf32>, %x: tensor<4xf32>)
    -> (tensor<i1>, tensor<4xf32>, tensor<4xf32>) {
  %s = kiln.add %h, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %c, %s, %x : tensor<i1>, tensor<4xf32>, tensor<4xf32>
}
func.func @scan(%n: tensor<i64>, %c: tensor<i1>, %h0: tensor<4xf32>, %seq: tensor<7x4xf32>, %x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<7x4xf32>) {
  %h, %out = kiln.loop @rows(%n, %c, %h0) scan(%seq) captures(%x) : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<7x4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<7x4xf32>)
  return %h, %out : tensor<4xf32>, tensor<7x4xf32>
}
