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
  // expected-error @+1 {{'kiln.relu' op cannot be part of a program; expected kiln.launch, kiln.constant, kiln.reshape or kiln.return}}
  %0 = kiln.relu %x : tensor<8xf32>
  kiln.return %0 : tensor<8xf32>
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
