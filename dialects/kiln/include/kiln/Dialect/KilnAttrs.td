//===- KilnAttrs.td - kiln dialect attributes ---------------*- tablegen -*-===//
//
// The typed attributes of the compiled program: where each tensor a launch
// binds lives (#kiln.binding) and what a variant of an executable is compiled
// for (#kiln.target). They carry the contract between the memory planner, the
// code generators and the artifact translation, and the dialect verifies them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILNATTRS_TD
#define KILN_DIALECT_KILNATTRS_TD

include "kiln/Dialect/KilnDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Kiln_BindingKind : I32EnumAttr<"BindingKind", "where a bound tensor lives", [
    I32EnumAttrCase<"Arena", 0, "arena">,
    I32EnumAttrCase<"Constant", 1, "constant">,
    I32EnumAttrCase<"Input", 2, "input">,
    I32EnumAttrCase<"Output", 3, "output">,
  ]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

class Kiln_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Kiln_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Kiln_BindingAttr : Kiln_Attr<"Binding", "binding"> {
  let summary = "where one tensor of a launch lives at run time";
  let description = [{
    `kind` says which memory `offset` counts from: `arena` (an intermediate
    tensor in the program's arena), `input` / `output` (arena bytes holding a
    model input, which the runtime copies in, or a model output, which it
    copies out), or `constant` (the artifact's constants section). `size` is
    the tensor's bytes. Written by `kiln-plan-memory`; offsets are 64-byte
    aligned.

    ```mlir
    #kiln.binding<arena, 4096, 1024>
    ```
  }];
  let parameters = (ins
    EnumParameter<Kiln_BindingKind>:$kind,
    "uint64_t":$offset,
    "uint64_t":$size);
  let assemblyFormat = "`<` $kind `,` $offset `,` $size `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The end of the bound bytes.
    uint64_t getEnd() const { return getOffset() + getSize(); }
  }];
}

def Kiln_TargetAttr : Kiln_Attr<"Target", "target"> {
  let summary = "what a variant of an executable is compiled for";
  let description = [{
    `name` is `cpu`, a gfx target (`gfx942`, `gfx950`, `gfx1100`, `gfx1201`,
    `gfx1250`) or the emulation of one on the host (`emu:gfx942`, ...);
    `options` holds the target's code generation options (for example
    `{precision = "f16"}` for the gfx matrix cores).

    ```mlir
    #kiln.target<"gfx942", {precision = "f16"}>
    ```
  }];
  let parameters = (ins
    StringRefParameter<"target name">:$name,
    OptionalParameter<"mlir::DictionaryAttr">:$options);
  let assemblyFormat = "`<` $name (`,` $options^)? `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True for the gfx targets (not cpu, not emulated).
    bool isGfx() const { return getName().starts_with("gfx"); }
    bool isCpu() const { return getName() == "cpu"; }
  }];
}

#endif // KILN_DIALECT_KILNATTRS_TD
