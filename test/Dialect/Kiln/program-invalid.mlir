// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func private @f(tensor<8xf32>) -> tensor<8xf32>
kiln.program @main(%x: tensor<8xf32>) -> tensor<8xf32>
    attributes {arena_size = 128 : i64, input_bindings = [#kiln.binding<input, 0, 32>],
                output_bindings = [#kiln.binding<output, 64, 32>]} {
  // expected-error @+1 {{'kiln.launch' op result 0 is bound to 16 bytes, its type 'tensor<8xf32>' needs 32}}
  %0 = kiln.launch @f(%x) bindings([#kiln.binding<input, 0, 32>], [#kiln.binding<output, 0, 16>]) : (tensor<8xf32>) -> tensor<8xf32>
  kiln.return %0 : tensor<8xf32>
}

// -----

func.func private @f(tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
kiln.program @main(%x: tensor<8xf32>) -> tensor<8xf32>
    attributes {arena_size = 128 : i64, input_bindings = [#kiln.binding<input, 0, 32>],
                output_bindings = [#kiln.binding<output, 64, 32>]} {
  // expected-error @+1 {{'kiln.launch' op has 1 result bindings for 2 results}}
  %0:2 = kiln.launch @f(%x) bindings([#kiln.binding<input, 0, 32>], [#kiln.binding<output, 64, 32>]) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  kiln.return %0#0 : tensor<8xf32>
}

// -----

func.func private @f(tensor<8xf32>) -> tensor<8xf32>
kiln.program @main(%x: tensor<8xf32>) -> tensor<8xf32>
    attributes {arena_size = 64 : i64, input_bindings = [#kiln.binding<input, 0, 32>],
                output_bindings = [#kiln.binding<output, 0, 32>]} {
  // expected-error @+1 {{'kiln.launch' op operand 0 has a arena binding; its value needs input}}
  %0 = kiln.launch @f(%x) bindings([#kiln.binding<arena, 0, 32>], [#kiln.binding<output, 0, 32>]) : (tensor<8xf32>) -> tensor<8xf32>
  kiln.return %0 : tensor<8xf32>
}

// -----

func.func private @f(tensor<8xf32>) -> tensor<8xf32>
kiln.program @main(%x: tensor<8xf32>) -> tensor<8xf32>
    attributes {arena_size = 64 : i64, input_bindings = [#kiln.binding<input, 0, 32>],
                output_bindings = [#kiln.binding<output, 0, 32>]} {
  // expected-error @+1 {{'kiln.launch' op result 0 is bound past the end of the arena (96 > 64)}}
  %0 = kiln.launch @f(%x) bindings([#kiln.binding<input, 0, 32>], [#kiln.binding<output, 64, 32>]) : (tensor<8xf32>) -> tensor<8xf32>
  kiln.return %0 : tensor<8xf32>
}

// -----

func.func private @f(tensor<8xf32>) -> tensor<8xf32>
// expected-error @+1 {{'kiln.program' op input 0 must have an input binding}}
kiln.program @main(%x: tensor<8xf32>) -> tensor<8xf32>
    attributes {arena_size = 64 : i64, input_bindings = [#kiln.binding<arena, 0, 32>],
                output_bindings = [#kiln.binding<input, 0, 32>]} {
  kiln.return %x : tensor<8xf32>
}

// -----

func.func private @f(tensor<8xf32>) -> tensor<8xf32>
kiln.program @main(%x: tensor<8xf32>) -> tensor<8xf32>
    attributes {arena_size = 64 : i64, input_bindings = [#kiln.binding<input, 0, 32>],
                output_bindings = [#kiln.binding<output, 0, 32>]} {
  // expected-error @+1 {{'kiln.launch' op has no bindings in a program with a memory plan}}
  %0 = kiln.launch @f(%x) : (tensor<8xf32>) -> tensor<8xf32>
  kiln.return %0 : tensor<8xf32>
}

// -----

kiln.program @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'kiln.relu' op cannot be part of a program; expected kiln.launch, kiln.if, kiln.loop, kiln.constant, kiln.reshape, a kiln.slice that is a view (contiguous, 64-byte aligned, of a computed value) or kiln.return}}
  %0 = kiln.relu %x : tensor<8xf32>
  kiln.return %0 : tensor<8xf32>
}

// -----

// A slice that is not a view: rows 0-1 of every one of 4 planes (not one
// contiguous range).
kiln.program @main(%x: tensor<4x4x16xf32>) -> tensor<4x2x16xf32> {
  // expected-error @+1 {{'kiln.slice' op cannot be part of a program}}
  %0 = kiln.slice %x {starts = array<i64: 0, 0, 0>, ends = array<i64: 4, 2, 16>, steps = array<i64: 1, 1, 1>} : tensor<4x4x16xf32> -> tensor<4x2x16xf32>
  kiln.return %0 : tensor<4x2x16xf32>
}

// -----

// Contiguous, but from the 9th float (32 bytes in): not 64-byte aligned.
kiln.program @main(%x: tensor<64xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'kiln.slice' op cannot be part of a program}}
  %0 = kiln.slice %x {starts = array<i64: 8>, ends = array<i64: 24>, steps = array<i64: 1>} : tensor<64xf32> -> tensor<16xf32>
  kiln.return %0 : tensor<16xf32>
}

// -----

kiln.program @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'kiln.launch' op launches 'missing', which is neither a kiln.executable nor a dispatch function}}
  %0 = kiln.launch @missing(%x) : (tensor<8xf32>) -> tensor<8xf32>
  kiln.return %0 : tensor<8xf32>
}

// -----

func.func private @f(tensor<4xf32>) -> tensor<8xf32>
kiln.program @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'kiln.launch' op operand or result types do not match the dispatch function '(tensor<4xf32>) -> tensor<8xf32>'}}
  %0 = kiln.launch @f(%x) : (tensor<8xf32>) -> tensor<8xf32>
  kiln.return %0 : tensor<8xf32>
}

// -----

// expected-error @+1 {{binding offset 8 is not 64-byte aligned}}
func.func private @f() attributes {b = #kiln.binding<arena, 8, 4>}

// -----

// expected-error @+1 {{target 'tpu' is neither cpu, a gfx target (gfx942) nor an emulated one (emu:gfx942)}}
func.func private @f() attributes {t = #kiln.target<"tpu">}

// -----

kiln.executable @d {
  kiln.variant @cpu target(#kiln.target<"cpu">) {
    // expected-error @+1 {{'kiln.export' op names kernel 'other', which the variant's module does not define}}
    kiln.export @other workgroups(1) workgroup_size(1) lds(0) flops(0) bytes(0)
    builtin.module {
      func.func @d() { return }
    }
  }
}

// -----

kiln.executable @d {
  kiln.variant @cpu target(#kiln.target<"cpu">) {
    // expected-error @+1 {{'kiln.export' op has 64 threads per workgroup; cpu workgroups run on one thread}}
    kiln.export @d workgroups(1) workgroup_size(64) lds(0) flops(0) bytes(0)
    builtin.module {
      func.func @d() { return }
    }
  }
}

// -----

kiln.executable @d {
  kiln.variant @gfx942 target(#kiln.target<"gfx942">) {
    // expected-error @+1 {{'kiln.export' op attribute 'workgroups' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
    kiln.export @d workgroups(0) workgroup_size(64) lds(0) flops(0) bytes(0)
    builtin.module {
      func.func @d() { return }
    }
  }
}

// -----

kiln.executable @d {
  kiln.variant @a target(#kiln.target<"cpu">) {
    kiln.export @d workgroups(1) workgroup_size(1) lds(0) flops(0) bytes(0)
    builtin.module {
      func.func @d() { return }
    }
  }
  // expected-error @+1 {{'kiln.variant' op is the second variant for target 'cpu'}}
  kiln.variant @b target(#kiln.target<"cpu">) {
    kiln.export @d workgroups(1) workgroup_size(1) lds(0) flops(0) bytes(0)
    builtin.module {
      func.func @d() { return }
    }
  }
}

// -----

kiln.executable @d {
  // expected-error @+1 {{'kiln.variant' op must hold one kiln.export and one builtin.module, not 0 and 1}}
  kiln.variant @cpu target(#kiln.target<"cpu">) {
    builtin.module {
      func.func @d() { return }
    }
  }
}

// -----

// The marks code generators leave on functions are typed.
// expected-error @+1 {{'kiln.workgroup_count' must be a non-negative i64, not "four"}}
func.func @f() attributes {kiln.workgroup_count = "four"} { return }

// -----

// expected-error @+1 {{unknown kiln attribute 'kiln.arena_offset'}}
func.func @f() attributes {kiln.arena_offset = 0 : i64} { return }

// -----

func.func private @t(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func @main(%c: tensor<2xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.if' op cond must be a boolean tensor of one element, not 'tensor<2xi1>'}}
  %y = kiln.if %c then @t(%x) else @t(%x) : (tensor<2xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func private @t(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.if' op names else branch 'missing', which is neither a function with a body nor a kiln.program}}
  %y = kiln.if %c then @t(%x) else @missing(%x) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func private @t(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'kiln.if' op the then branch 't' has type '(tensor<4xf32>) -> tensor<4xf32>'; the op gives it 'tensor<4xf32>' and expects 'tensor<8xf32>'}}
  %y = kiln.if %c then @t(%x) else @t(%x) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func private @t(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.if' op has bindings outside a program with a memory plan}}
  %y = kiln.if %c then @t(%x) else @t(%x) bindings([], []) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

kiln.program private @branch(%a: tensor<4xf32>) -> tensor<4xf32>
    attributes {arena_size = 64 : i64, input_bindings = [#kiln.binding<input, 0, 16>],
                output_bindings = [#kiln.binding<input, 0, 16>]} {
  kiln.return %a : tensor<4xf32>
}
kiln.program @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32>
    attributes {arena_size = 256 : i64,
                input_bindings = [#kiln.binding<input, 0, 1>, #kiln.binding<input, 64, 16>],
                output_bindings = [#kiln.binding<output, 128, 16>]} {
  // expected-error @+1 {{'kiln.if' op needs a scratch range of at least 0 bytes inside the arena of 256 bytes, not #kiln.binding<arena, 192, 128>}}
  %y = kiln.if %c then @branch(%x) else @branch(%x)
      bindings([#kiln.binding<input, 0, 1>, #kiln.binding<input, 64, 16>, #kiln.binding<input, 64, 16>],
               [#kiln.binding<output, 128, 16>]) scratch(#kiln.binding<arena, 192, 128>)
      : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  kiln.return %y : tensor<4xf32>
}

// -----

kiln.program private @branch(%a: tensor<4xf32>) -> tensor<4xf32>
    attributes {arena_size = 64 : i64, input_bindings = [#kiln.binding<input, 0, 16>],
                output_bindings = [#kiln.binding<input, 0, 16>]} {
  kiln.return %a : tensor<4xf32>
}
kiln.program @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32>
    attributes {arena_size = 256 : i64,
                input_bindings = [#kiln.binding<input, 0, 1>, #kiln.binding<input, 64, 16>],
                output_bindings = [#kiln.binding<output, 128, 16>]} {
  // expected-error @+1 {{'kiln.if' op has no scratch range in a program with a memory plan}}
  %y = kiln.if %c then @branch(%x) else @branch(%x)
      bindings([#kiln.binding<input, 0, 1>, #kiln.binding<input, 64, 16>, #kiln.binding<input, 64, 16>],
               [#kiln.binding<output, 128, 16>])
      : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  kiln.return %y : tensor<4xf32>
}

// -----

func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>) {
  return %c, %h : tensor<i1>, tensor<4xf32>
}
func.func @main(%n: tensor<i32>, %c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.loop' op trip_count must be an i64 tensor of one element, not 'tensor<i32>'}}
  %h = kiln.loop @body(%n, %c, %x) captures() : (tensor<i32>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  return %h : tensor<4xf32>
}

// -----

func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>) {
  return %c, %h : tensor<i1>, tensor<4xf32>
}
func.func @main(%n: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'kiln.loop' op carried values of types 'tensor<4xf32>' must keep them as results}}
  %h = kiln.loop @body(%n, %c, %x) captures() : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<8xf32>
  return %h : tensor<8xf32>
}

// -----

func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>) {
  return %c, %h : tensor<i1>, tensor<4xf32>
}
func.func @main(%n: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.loop' op the body 'body' has type '(tensor<i64>, tensor<i1>, tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>)'; it must take (iteration, cond, carried..., rows..., captures...) and return (cond, carried..., scanned...) for the op's types}}
  %h = kiln.loop @body(%n, %c, %x) captures(%x) : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %h : tensor<4xf32>
}

// -----

func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>, tensor<4xf32>) {
  return %c, %h, %h : tensor<i1>, tensor<4xf32>, tensor<4xf32>
}
func.func @main(%n: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<3x5xf32>) {
  // expected-error @+1 {{'kiln.loop' op scanned result 'tensor<3x5xf32>' does not stack the body's 'tensor<4xf32>'}}
  %h, %r = kiln.loop @body(%n, %c, %x) captures() : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> (tensor<4xf32>, tensor<3x5xf32>)
  return %h, %r : tensor<4xf32>, tensor<3x5xf32>
}

// -----

kiln.program private @body(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>)
    attributes {arena_size = 192 : i64,
                input_bindings = [#kiln.binding<input, 0, 8>, #kiln.binding<input, 64, 1>, #kiln.binding<input, 128, 16>],
                output_bindings = [#kiln.binding<input, 64, 1>, #kiln.binding<input, 128, 16>]} {
  kiln.return %c, %h : tensor<i1>, tensor<4xf32>
}
kiln.program @main(%n: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32>
    attributes {arena_size = 512 : i64,
                input_bindings = [#kiln.binding<input, 0, 8>, #kiln.binding<input, 64, 1>, #kiln.binding<input, 128, 16>],
                output_bindings = [#kiln.binding<output, 192, 16>]} {
  // expected-error @+1 {{'kiln.loop' op needs a scratch range of at least 64 bytes inside the arena of 512 bytes, not #kiln.binding<arena, 256, 32>}}
  %h = kiln.loop @body(%n, %c, %x) captures()
      bindings([#kiln.binding<input, 0, 8>, #kiln.binding<input, 64, 1>, #kiln.binding<input, 128, 16>],
               [#kiln.binding<output, 192, 16>]) scratch(#kiln.binding<arena, 256, 32>)
      : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  kiln.return %h : tensor<4xf32>
}

// -----

func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<4xf32>, %r: tensor<5xf32>) -> (tensor<i1>, tensor<4xf32>) {
  return %c, %h : tensor<i1>, tensor<4xf32>
}
func.func @main(%n: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>, %seq: tensor<7x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.loop' op the body 'body' has type '(tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<5xf32>) -> (tensor<i1>, tensor<4xf32>)'; it must take (iteration, cond, carried..., rows..., captures...) and return (cond, carried..., scanned...) for the op's types}}
  %h = kiln.loop @body(%n, %c, %x) scan(%seq) captures() : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<7x4xf32>) -> tensor<4xf32>
  return %h : tensor<4xf32>
}

// -----

func.func private @body(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<4xf32>, %r: tensor<f32>) -> (tensor<i1>, tensor<4xf32>) {
  return %c, %h : tensor<i1>, tensor<4xf32>
}
func.func @main(%n: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>, %seq: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.loop' op scan input 'tensor<f32>' needs a leading dimension of rows}}
  %h = kiln.loop @body(%n, %c, %x) scan(%seq) captures() : (tensor<i64>, tensor<i1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %h : tensor<4xf32>
}

// -----

// kiln.batch_size (a batch bucket of --batch-sizes) is a positive i64 on a
// public program; a valid one verifies.
kiln.program @batch_4(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {kiln.batch_size = 4 : i64} {
  kiln.return %x : tensor<4x8xf32>
}
// expected-error @+1 {{'kiln.batch_size' must be a positive i64 (below 2^32) on a public kiln.program, not 0 : i64}}
kiln.program @batch_0(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {kiln.batch_size = 0 : i64} {
  kiln.return %x : tensor<4x8xf32>
}

// -----

// expected-error @+1 {{'kiln.batch_size' must be a positive i64 (below 2^32) on a public kiln.program, not 4 : i64}}
kiln.program private @branch(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {kiln.batch_size = 4 : i64} {
  kiln.return %x : tensor<4x8xf32>
}

// -----

// Contiguous and aligned, but returned through a reshape: an output is never
// part of a larger buffer (the runtime writes outputs in place), so this is
// no view.
kiln.program @main(%x: tensor<64xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'kiln.slice' op cannot be part of a program}}
  %0 = kiln.slice %x {starts = array<i64: 16>, ends = array<i64: 32>, steps = array<i64: 1>} : tensor<64xf32> -> tensor<16xf32>
  %1 = kiln.reshape %0 : tensor<16xf32> -> tensor<4x4xf32>
  kiln.return %1 : tensor<4x4xf32>
}
