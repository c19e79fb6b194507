// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-plan-memory | FileCheck %s

// The planner's rule: every buffer (model input or launch result) takes
// align64(bytes) and is live from its definition to its last use (inputs from
// the start, the program's results to the end; a reshape is an alias, so its
// uses extend its operand's buffer). Buffers are placed largest first (ties in
// order of definition) at the lowest offset that does not overlap a placed
// buffer whose live range intersects, and that lies neither across the
// bounds of a returned buffer nor, for a returned buffer, around part of
// another (the runtime may move a returned buffer's range, and every binding
// inside it, to the caller's output buffer: a slice view of a buffer across
// its bounds would move without the rest). The plan is written as #kiln.binding
// attributes: `input` for model inputs, `output` for what the program returns
// (also seen through a reshape), `arena` for the rest.
//
// Op indices: the arguments are defined at 0, the ops of @main count from 1,
// the return is 6 and the results stay live to 7.
//   %x  input   16xf32  =  64 B   live [0, 5]  (read by @f and @k)
//   %a  @f      32xf32  = 128 B   live [1, 2]
//   %b  @g      10xf32  =  40 B -> 64 B (alignment)
//                                 live [2, 7]  (through the reshape %r, which
//                                               @h reads and @main returns)
//   %c  @h      48xf32  = 192 B   live [4, 5]
//   %d  @k       8xf32  =  32 B -> 64 B   live [5, 7] (returned)
// Placement, largest first:
//   %c -> 0    (nothing placed yet)
//   %a -> 0    (shares %c's bytes: %a is dead before %c is defined)
//   %x -> 192  (live with %a [0,128) and %c [0,192))
//   %b -> 256  (live with %a, %c and %x)
//   %d -> 320  (live with %c, %x and %b; not %a)
// Arena: 384 bytes. The reshape has its operand's offset; sizes are the
// tensors' own bytes (40, not the aligned 64).
// CHECK-LABEL: kiln.program @main
// CHECK-SAME: arena_size = 384 : i64
// CHECK-SAME: input_bindings = [#kiln.binding<input, 192, 64>]
// CHECK-SAME: output_bindings = [#kiln.binding<output, 320, 32>, #kiln.binding<output, 256, 40>]
// CHECK-NEXT: kiln.launch @f(%arg0) bindings([#kiln.binding<input, 192, 64>], [#kiln.binding<arena, 0, 128>])
// CHECK-NEXT: kiln.launch @g(%{{.*}}) bindings([#kiln.binding<arena, 0, 128>], [#kiln.binding<output, 256, 40>])
// CHECK-NEXT: kiln.reshape
// CHECK-NEXT: kiln.launch @h(%{{.*}}) bindings([#kiln.binding<output, 256, 40>], [#kiln.binding<arena, 0, 192>])
// CHECK-NEXT: kiln.launch @k(%{{.*}}, %arg0) bindings([#kiln.binding<arena, 0, 192>, #kiln.binding<input, 192, 64>], [#kiln.binding<output, 320, 32>])
// CHECK-NEXT: kiln.return
func.func private @f(tensor<16xf32>) -> tensor<32xf32>
func.func private @g(tensor<32xf32>) -> tensor<10xf32>
func.func private @h(tensor<2x5xf32>) -> tensor<48xf32>
func.func private @k(tensor<48xf32>, tensor<16xf32>) -> tensor<8xf32>
kiln.program @main(%x: tensor<16xf32>) -> (tensor<8xf32>, tensor<2x5xf32>) {
  %a = kiln.launch @f(%x) : (tensor<16xf32>) -> tensor<32xf32>
  %b = kiln.launch @g(%a) : (tensor<32xf32>) -> tensor<10xf32>
  %r = kiln.reshape %b : tensor<10xf32> -> tensor<2x5xf32>
  %c = kiln.launch @h(%r) : (tensor<2x5xf32>) -> tensor<48xf32>
  %d = kiln.launch @k(%c, %x) : (tensor<48xf32>, tensor<16xf32>) -> tensor<8xf32>
  kiln.return %d, %r : tensor<8xf32>, tensor<2x5xf32>
}

// -----

// Reuse below a live buffer: %p dies when %q is defined, so %r (defined
// after %p's last use) takes %p's bytes below %q. The constant is op 1.
//   %x  input    8xf32 =  32 B -> 64  live [0, 2]
//   %p  @f      32xf32 = 128 B        live [2, 3]
//   %q  @g      16xf32 =  64 B        live [3, 4]
//   %r  @h      16xf32 =  64 B        live [4, 6] (returned; return is 5)
// Largest first, ties in order of definition: %p, %x, %q, %r.
//   %p -> 0; %x -> 128 (live with %p); %q -> 128 (live with %p, not %x);
//   %r -> 192 (live only with %q at [128, 192); the gap below it is inside
//   %p's [0, 128), which must not lie around part of a returned buffer).
// Arena: 256 bytes.
// Constants are not in the arena: each takes the next 64-byte place of the
// program's constant pool (%w at 0, %v at 64 after %w's 16 bytes). A function
// is not planned.
// CHECK-LABEL: func.func @helper
// CHECK-NOT: binding
// CHECK-LABEL: kiln.program @main
// CHECK-SAME: arena_size = 256 : i64
// CHECK-SAME: input_bindings = [#kiln.binding<input, 128, 32>]
// CHECK-NEXT: kiln.constant dense<1.000000e+00> : tensor<4xf32>{{$}}
// CHECK-NEXT: kiln.constant dense<2.000000e+00> : tensor<4xf32>{{$}}
// CHECK-NEXT: kiln.launch @f(%arg0) bindings([#kiln.binding<input, 128, 32>], [#kiln.binding<arena, 0, 128>])
// CHECK-NEXT: kiln.launch @g(%{{.*}}) bindings([#kiln.binding<arena, 0, 128>], [#kiln.binding<arena, 128, 64>])
// CHECK-NEXT: kiln.launch @h(%{{.*}}, %{{.*}}, %{{.*}}) bindings([#kiln.binding<arena, 128, 64>, #kiln.binding<constant, 0, 16>, #kiln.binding<constant, 64, 16>], [#kiln.binding<output, 192, 64>])
func.func private @f(tensor<8xf32>) -> tensor<32xf32>
func.func private @g(tensor<32xf32>) -> tensor<16xf32>
func.func private @h(tensor<16xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<16xf32>
func.func @helper(%x: tensor<8xf32>) -> tensor<32xf32> {
  %0 = call @f(%x) : (tensor<8xf32>) -> tensor<32xf32>
  return %0 : tensor<32xf32>
}
kiln.program @main(%x: tensor<8xf32>) -> tensor<16xf32> {
  %w = kiln.constant dense<1.0> : tensor<4xf32>
  %v = kiln.constant dense<2.0> : tensor<4xf32>
  %p = kiln.launch @f(%x) : (tensor<8xf32>) -> tensor<32xf32>
  %q = kiln.launch @g(%p) : (tensor<32xf32>) -> tensor<16xf32>
  %r = kiln.launch @h(%q, %w, %v) : (tensor<16xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<16xf32>
  kiln.return %r : tensor<16xf32>
}

// -----

// Several inputs are all live from the start, so they never share bytes even
// when one is read only once; a launch with two results gets a binding per
// result; a result nobody reads is live only at its launch; i1 takes a byte
// per element.
//   %x  input   64xf32 = 256 B        live [0, 1]
//   %y  input    4xf32 =  16 B -> 64  live [0, 2]
//   %m  @f#0   100xi1  = 100 B -> 128 live [1, 4] (returned; return is 3)
//   %n  @f#1    16xf32 =  64 B        live [1, 1] (never read)
//   %o  @g       8xf32 =  32 B -> 64  live [2, 4] (returned)
// Largest first: %x, %m, %y, %n, %o.
//   %x -> 0; %m -> 256; %y -> 384; %n -> 448 (live with all three);
//   %o -> 512 (%x and %n are dead, but %o, returned, may not lie inside
//   %x's [0, 256) or %n's [448, 512); live with %m and %y).
// Arena: 576 bytes.
// CHECK-LABEL: kiln.program @main
// CHECK-SAME: arena_size = 576 : i64
// CHECK-SAME: input_bindings = [#kiln.binding<input, 0, 256>, #kiln.binding<input, 384, 16>]
// CHECK-SAME: output_bindings = [#kiln.binding<output, 256, 100>, #kiln.binding<output, 512, 32>]
// CHECK-NEXT: kiln.launch @f(%arg0) bindings([#kiln.binding<input, 0, 256>], [#kiln.binding<output, 256, 100>, #kiln.binding<arena, 448, 64>])
// CHECK-NEXT: kiln.launch @g(%arg1) bindings([#kiln.binding<input, 384, 16>], [#kiln.binding<output, 512, 32>])
func.func private @f(tensor<64xf32>) -> (tensor<100xi1>, tensor<16xf32>)
func.func private @g(tensor<4xf32>) -> tensor<8xf32>
kiln.program @main(%x: tensor<64xf32>, %y: tensor<4xf32>) -> (tensor<100xi1>, tensor<8xf32>) {
  %m, %n = kiln.launch @f(%x) : (tensor<64xf32>) -> (tensor<100xi1>, tensor<16xf32>)
  %o = kiln.launch @g(%y) : (tensor<4xf32>) -> tensor<8xf32>
  kiln.return %m, %o : tensor<100xi1>, tensor<8xf32>
}

// -----

// Sub-byte tensors take one byte per element (as the code generators store
// them): two live 128 x i4 buffers need 128 B each, not 64 B or nothing.
// Several programs in one module are planned each on its own. The returned
// %c does not take bytes inside %x, %a or %b's, dead by then: 384.
// CHECK-LABEL: kiln.program @sub_byte
// CHECK-SAME: arena_size = 448 : i64
// CHECK-NEXT: kiln.launch @to_i4(%arg0) bindings([#kiln.binding<input, 0, 128>], [#kiln.binding<arena, 128, 128>])
// CHECK-NEXT: kiln.launch @to_i4(%arg0) bindings([#kiln.binding<input, 0, 128>], [#kiln.binding<arena, 256, 128>])
// CHECK-LABEL: kiln.program @second
// CHECK-SAME: arena_size = 64 : i64
func.func private @to_i4(tensor<128xi8>) -> tensor<128xi4>
func.func private @use(tensor<128xi4>, tensor<128xi4>) -> tensor<4xi32>
kiln.program @sub_byte(%x: tensor<128xi8>) -> tensor<4xi32> {
  %a = kiln.launch @to_i4(%x) : (tensor<128xi8>) -> tensor<128xi4>
  %b = kiln.launch @to_i4(%x) : (tensor<128xi8>) -> tensor<128xi4>
  %c = kiln.launch @use(%a, %b) : (tensor<128xi4>, tensor<128xi4>) -> tensor<4xi32>
  kiln.return %c : tensor<4xi32>
}
kiln.program @second(%x: tensor<4xi32>) -> tensor<4xi32> {
  kiln.return %x : tensor<4xi32>
}

// -----

// Control flow: the branches (after @main in the module) are planned first;
// the kiln.if gets a scratch range as large as the larger branch arena,
// live while it runs, so it overlaps neither its operands nor its result.
//   @small: arena 64 (its input); @large: 64 input + 64 launch result = 128.
//   @main: %c 1 B, %x 16 B, %y 16 B (returned), scratch 128 B, all live at
//   the kiln.if: scratch -> 0, then %c -> 128, %x -> 192, %y -> 256.
// CHECK-LABEL: kiln.program @main
// CHECK-SAME: arena_size = 320 : i64
// CHECK-NEXT: kiln.if %arg0 then @small(%arg1) else @large(%arg1)
// CHECK-SAME: bindings([#kiln.binding<input, 128, 1>, #kiln.binding<input, 192, 16>, #kiln.binding<input, 192, 16>], [#kiln.binding<output, 256, 16>])
// CHECK-SAME: scratch(#kiln.binding<arena, 0, 128>)
// CHECK-LABEL: kiln.program private @small
// CHECK-SAME: arena_size = 64 : i64
// CHECK-LABEL: kiln.program private @large
// CHECK-SAME: arena_size = 128 : i64
func.func private @neg(tensor<4xf32>) -> tensor<4xf32>
kiln.program @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kiln.if %c then @small(%x) else @large(%x) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  kiln.return %y : tensor<4xf32>
}
kiln.program private @small(%a: tensor<4xf32>) -> tensor<4xf32> {
  kiln.return %a : tensor<4xf32>
}
kiln.program private @large(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = kiln.launch @neg(%a) : (tensor<4xf32>) -> tensor<4xf32>
  kiln.return %b : tensor<4xf32>
}

// -----

// A loop's scratch holds its body's arena and, in 64 more bytes, the
// condition between iterations: body arena 192 (i 8 B, c 1 B, h 16 B) +
// 64 = 256 at offset 0; the trip count, cond and init follow.
// CHECK-LABEL: kiln.program @main
// CHECK-SAME: arena_size = 512 : i64
// CHECK-NEXT: kiln.loop @body(%arg0, %arg1, %arg2) captures()
// CHECK-SAME: scratch(#kiln.binding<arena, 0, 256>)
kiln.program @main(%n: tensor<i64>, %c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %h = kiln.loop @body(%n, %c, %x) captures() : (tensor<i64>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  kiln.return %h : tensor<4xf32>
}
kiln.program private @body(%i: tensor<i64>, %c: tensor<i1>, %h: tensor<4xf32>) -> (tensor<i1>, tensor<4xf32>) {
  kiln.return %c, %h : tensor<i1>, tensor<4xf32>
}

// -----

func.func private @branch(tensor<4xf32>) -> tensor<4xf32>
// expected-error @+1 {{'kiln.program' op runs itself through kiln.if or kiln.loop}}
kiln.program @main(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kiln.if %c then @main(%c, %x) else @main(%c, %x) : (tensor<i1>, tensor<i1>, tensor<4xf32>, tensor<i1>, tensor<4xf32>) -> tensor<4xf32>
  kiln.return %y : tensor<4xf32>
}

// -----

// A slice that is a view (one contiguous range of its operand's bytes, at a
// 64-byte aligned offset) is an alias like a reshape: no buffer of its own;
// its binding is its operand's offset plus its own (heads 8-9 of [1, 12,
// 4, 8] f32: 8 x 4 x 8 x 4 = 1024 bytes in), its size its own bytes, and
// its uses keep the operand's buffer live (%h, read through %k by @k,
// stays live to @k; @g's result takes the input's bytes, dead by then).
// CHECK-LABEL: kiln.program @main
// CHECK-SAME: arena_size = 1856 : i64
// CHECK: %[[H:.*]] = kiln.launch @proj(%arg0) bindings([#kiln.binding<input, 1536, 64>], [#kiln.binding<arena, 0, 1536>])
// CHECK-NEXT: %[[Q:.*]] = kiln.slice %[[H]] {{.*}} -> tensor<1x8x4x8xf32>
// CHECK-NEXT: %[[K:.*]] = kiln.slice %[[H]] {{.*}} -> tensor<1x2x4x8xf32>
// CHECK-NEXT: kiln.launch @g(%[[Q]]) bindings([#kiln.binding<arena, 0, 1024>], [#kiln.binding<output, 1536, 256>])
// CHECK-NEXT: kiln.launch @k(%[[K]]) bindings([#kiln.binding<arena, 1024, 256>], [#kiln.binding<output, 1792, 64>])
func.func private @proj(tensor<16xf32>) -> tensor<1x12x4x8xf32>
func.func private @g(tensor<1x8x4x8xf32>) -> tensor<64xf32>
func.func private @k(tensor<1x2x4x8xf32>) -> tensor<16xf32>
kiln.program @main(%x: tensor<16xf32>) -> (tensor<64xf32>, tensor<16xf32>) {
  %h = kiln.launch @proj(%x) : (tensor<16xf32>) -> tensor<1x12x4x8xf32>
  %q = kiln.slice %h {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 8, 4, 8>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x12x4x8xf32> -> tensor<1x8x4x8xf32>
  %k = kiln.slice %h {starts = array<i64: 0, 8, 0, 0>, ends = array<i64: 1, 10, 4, 8>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x12x4x8xf32> -> tensor<1x2x4x8xf32>
  %a = kiln.launch @g(%q) : (tensor<1x8x4x8xf32>) -> tensor<64xf32>
  %b = kiln.launch @k(%k) : (tensor<1x2x4x8xf32>) -> tensor<16xf32>
  kiln.return %a, %b : tensor<64xf32>, tensor<16xf32>
}
