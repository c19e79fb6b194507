//===- KilnProgramOps.td - the compiled program as IR -------*- tablegen -*-===//
//
// What the graph passes hand to code generation and what the artifact is
// translated from, in the spirit of IREE's HAL executables:
//
//   kiln.program @main   the model's command list: kiln.launch ops whose
//                        operands and results carry #kiln.binding places,
//                        the arena size and where inputs and outputs live;
//   kiln.executable      one per dispatch, holding one kiln.variant per
//                        target (#kiln.target), each with its kiln.export
//                        (workgroups, LDS, FLOPs, bytes) and its module;
//   kiln.binary          the code object of one target, once emitted.
//
// A module may hold several programs (one per batch bucket) sharing the
// executables.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILNPROGRAMOPS_TD
#define KILN_DIALECT_KILNPROGRAMOPS_TD

include "kiln/Dialect/KilnAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"

def Kiln_BindingArrayAttr : TypedArrayAttrBase<Kiln_BindingAttr, "array of #kiln.binding">;

def Kiln_ProgramOp : Kiln_Op<"program", [
    FunctionOpInterface, IsolatedFromAbove]> {
  let summary = "the command list of a compiled model";
  let description = [{
    The model entry after memory planning. Its arguments are the model
    inputs (each with its ONNX name in `kiln.name`), its body holds the
    constants, the reshapes (views of a binding) and one `kiln.launch` per
    dispatch in execution order, and `kiln.return` gives the outputs.
    `arena_size` is the bytes of the arena every intermediate tensor lives
    in; `input_bindings` and `output_bindings` say where each input and
    output lives (`input` / `output` bytes of the arena, or a `constant`).
    `kiln-outline-dispatches` makes the program unplanned (none of these,
    and launches without bindings); `kiln-plan-memory` places everything, and
    from then on every binding is required and checked.

    ```mlir
    kiln.program @main(%x: tensor<1x8xf32> {kiln.name = "x"}) -> (tensor<1x8xf32> {kiln.name = "y"})
        attributes {arena_size = 64 : i64,
                    input_bindings = [#kiln.binding<input, 0, 32>],
                    output_bindings = [#kiln.binding<output, 32, 32>]} {
      %y = kiln.launch @dispatch_0(%x) bindings([#kiln.binding<input, 0, 32>], [#kiln.binding<output, 32, 32>])
          : (tensor<1x8xf32>) -> tensor<1x8xf32>
      kiln.return %y : tensor<1x8xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs,
                       OptionalAttr<I64Attr>:$arena_size,
                       OptionalAttr<Kiln_BindingArrayAttr>:$input_bindings,
                       OptionalAttr<Kiln_BindingArrayAttr>:$output_bindings);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// True once kiln-plan-memory has placed every tensor.
    bool isPlanned() { return getArenaSize().has_value(); }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    llvm::ArrayRef<mlir::Type> getArgumentTypes() { return getFunctionType().getInputs(); }
    llvm::ArrayRef<mlir::Type> getResultTypes() { return getFunctionType().getResults(); }
    bool isDeclaration() { return false; }
  }];
}

def Kiln_ReturnOp : Kiln_Op<"return",
    [Pure, Terminator, ReturnLike, HasParent<"ProgramOp">]> {
  let summary = "the outputs of a program";
  let arguments = (ins Variadic<Kiln_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let hasVerifier = 1;
}

def Kiln_LaunchOp : Kiln_Op<"launch", [
    HasParent<"ProgramOp">, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run one dispatch of the program on its bindings";
  let description = [{
    Runs the executable `callee` (or, before executables are formed, the
    dispatch function of that name) on the tensors of its operands, writing
    its results. `operand_bindings` and `result_bindings` give, one per
    operand and result, where the tensor lives: a program input is an `input`
    binding, a constant a `constant` one, a result `arena` (or `output` when
    the program returns it); sizes match the tensor types.
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<Kiln_Tensor>:$operands,
                       OptionalAttr<Kiln_BindingArrayAttr>:$operand_bindings,
                       OptionalAttr<Kiln_BindingArrayAttr>:$result_bindings);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let assemblyFormat = [{
    $callee `(` $operands `)`
    (`bindings` `(` $operand_bindings^ `,` $result_bindings `)`)?
    attr-dict `:` functional-type($operands, $results)
  }];
  let hasVerifier = 1;
}

def Kiln_IfOp : Kiln_Op<"if", [
    AttrSizedOperandSegments, NoMemoryEffect,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run one of two programs on a condition computed at run time";
  let description = [{
    An ONNX `If` whose condition does not fold. `cond` is a boolean tensor
    of one element; when it holds true the function or program
    `then_branch` runs on `then_operands`, else `else_branch` on
    `else_operands` (each branch's captured outer values), and the branch's
    outputs are the op's results. The branches are private functions of the
    module (programs once dispatches are outlined) with the operand and
    result types of the op.

    In a planned program `operand_bindings` (cond, then the then operands,
    then the else operands) and `result_bindings` place the op's tensors like
    a launch's, and `scratch` is the arena range the branches' own arenas
    are laid out in while the op runs (both start at its offset).

    ```mlir
    %y = kiln.if %c then @if_then_0(%x) else @if_else_1(%x)
        : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$cond, FlatSymbolRefAttr:$then_branch,
                       FlatSymbolRefAttr:$else_branch,
                       Variadic<Kiln_Tensor>:$then_operands,
                       Variadic<Kiln_Tensor>:$else_operands,
                       OptionalAttr<Kiln_BindingArrayAttr>:$operand_bindings,
                       OptionalAttr<Kiln_BindingArrayAttr>:$result_bindings,
                       OptionalAttr<Kiln_BindingAttr>:$scratch);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let assemblyFormat = [{
    $cond `then` $then_branch `(` $then_operands `)` `else` $else_branch `(` $else_operands `)`
    (`bindings` `(` $operand_bindings^ `,` $result_bindings `)`)?
    (`scratch` `(` qualified($scratch)^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_LoopOp : Kiln_Op<"loop", [
    AttrSizedOperandSegments, NoMemoryEffect,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run a program while a counter and a condition say so";
  let description = [{
    An ONNX `Loop` whose trip count or condition is known only at run time,
    or a `Loop` or `Scan` too long to unroll. With `i` counting from 0, the
    body (a private function or program) runs while `i < trip_count` (an i64
    tensor of one element) and the condition (a boolean tensor of one
    element, `cond` before the first iteration, the body's first result
    after each) holds. The body takes
    `(i, cond, carried..., rows..., captures...)` and returns
    `(cond, carried..., scanned...)`: the carried values start as `init` and
    keep their types; `rows` are row `i` of each of `scan_inputs` (stacked
    along their leading dimension, which must have a row for every
    iteration). The op's results are the final carried values, then one
    tensor per scanned body result stacking every iteration's along a new
    leading dimension, whose size the trip count must then be (the importer
    allows scanned results only for loops that cannot end early).

    In a planned program `operand_bindings` (trip count, cond, init, scan
    inputs, captures) and `result_bindings` place the op's tensors like a
    launch's;
    the carried values live in their result bindings between iterations.
    `scratch` is the arena range of the body's own arena and, in its last 64
    bytes, the condition between iterations.

    ```mlir
    %h = kiln.loop @loop_body_0(%n, %true, %h0) captures(%x)
        : (tensor<i64>, tensor<i1>, tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$trip_count, Kiln_Tensor:$cond,
                       FlatSymbolRefAttr:$body,
                       Variadic<Kiln_Tensor>:$init,
                       Variadic<Kiln_Tensor>:$scan_inputs,
                       Variadic<Kiln_Tensor>:$captures,
                       OptionalAttr<Kiln_BindingArrayAttr>:$operand_bindings,
                       OptionalAttr<Kiln_BindingArrayAttr>:$result_bindings,
                       OptionalAttr<Kiln_BindingAttr>:$scratch);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let assemblyFormat = [{
    $body `(` $trip_count `,` $cond (`,` $init^)? `)` (`scan` `(` $scan_inputs^ `)`)?
    `captures` `(` $captures `)`
    (`bindings` `(` $operand_bindings^ `,` $result_bindings `)`)?
    (`scratch` `(` qualified($scratch)^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The results stacking a scanned body result each (after the carried).
    mlir::ResultRange getScanned() { return getResults().drop_front(getInit().size()); }
  }];
}

def Kiln_ExecutableOp : Kiln_Op<"executable", [
    Symbol, SymbolTable, IsolatedFromAbove, NoTerminator, SingleBlock]> {
  let summary = "one dispatch, compiled for every target";
  let description = [{
    Holds one `kiln.variant` per target the dispatch is compiled for, all
    computing the same thing; `kiln.launch` names the executable.

    ```mlir
    kiln.executable @dispatch_0 {
      kiln.variant @cpu target(#kiln.target<"cpu">) {
        kiln.export @dispatch_0 workgroups(8) workgroup_size(1) lds(0) flops(512) bytes(96)
        builtin.module { func.func @dispatch_0(...) ... }
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The variant for `target` ("cpu", "gfx942", ...), or null.
    VariantOp lookupVariant(llvm::StringRef target);
    mlir::Block &getBlock() { return getBody().front(); }
  }];
}

def Kiln_VariantOp : Kiln_Op<"variant", [
    Symbol, HasParent<"ExecutableOp">, IsolatedFromAbove, NoTerminator, SingleBlock]> {
  let summary = "an executable compiled for one target";
  let description = [{
    The dispatch for the target `target`: its `kiln.export` (launch
    geometry and cost) and the `builtin.module` holding the kernel function
    the export names, at whatever stage the target's pipeline has reached.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Kiln_TargetAttr:$target);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name `target` `(` qualified($target) `)` attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The variant's export, and the module holding its kernel.
    ExportOp getExport();
    mlir::ModuleOp getInnerModule();
    mlir::Block &getBlock() { return getBody().front(); }
  }];
}

def Kiln_ExportOp : Kiln_Op<"export", [HasParent<"VariantOp">]> {
  let summary = "the kernel of a variant, its launch geometry and cost";
  let description = [{
    Names the kernel function of the variant's module and carries what the
    runtime and the profiler need: `workgroups` (the grid, in workgroups),
    `workgroup_size` (threads per workgroup; 1 on cpu), `lds` (bytes of
    workgroup memory), `flops` (arithmetic operations of the whole dispatch,
    counted once on its linalg form) and `bytes` (bytes it reads and writes).
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$workgroups,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$workgroup_size,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$lds,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$flops,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$bytes);
  let assemblyFormat = [{
    $kernel `workgroups` `(` $workgroups `)` `workgroup_size` `(` $workgroup_size `)`
    `lds` `(` $lds `)` `flops` `(` $flops `)` `bytes` `(` $bytes `)` attr-dict
  }];
  let hasVerifier = 1;
}

def Kiln_BinaryOp : Kiln_Op<"binary", [Symbol]> {
  let summary = "the code object of one target";
  let description = [{
    What a target's code generation emitted: `format` (`elf-shared-object`,
    `hsaco`, `emu-elf-shared-object`), the LLVM triple, CPU and features it
    was built for, `kernels` (the entry symbol of each executable's kernel,
    in executable order), `kernel_lds` (each kernel's LDS bytes in this
    object: an emulated kernel may lay out more than its gfx export says)
    and the object's bytes as a `dense_resource` blob (never printed in
    full). The launch geometry comes from the exports of the variant the
    object was built from (`emu:gfx942` from `gfx942`).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Kiln_TargetAttr:$target, StrAttr:$format,
                       StrAttr:$triple, StrAttr:$cpu, StrAttr:$features,
                       StrArrayAttr:$kernels, DenseI64ArrayAttr:$kernel_lds,
                       ElementsAttr:$data);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $sym_name `target` `(` qualified($target) `)` `format` `(` $format `)` attr-dict `:` $data
  }];
}

#endif // KILN_DIALECT_KILNPROGRAMOPS_TD
