//===- Passes.td -------------------------------------------*- tablegen -*-===//
//
// Graph-level passes on kiln IR (passes/): fusion into dispatches, weight
// layouts, outlining and memory planning.
// Each pass is a kiln-opt flag with a lit test named after that flag.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnFoldWeightLayouts : Pass<"kiln-fold-weight-layouts", "mlir::func::FuncOp"> {
  let summary = "apply data movement on weights at compile time";
  let description = [{
    A `kiln.transpose` of a constant (as `Gemm` with `transB = 1` imports:
    the fully connected layer's weight) is computed once here, whatever its
    size, into a new `dense_resource` blob, instead of every run moving the
    bytes. (The folders stop at a size limit because they work on `dense`
    attributes; this pass works on blobs.)
  }];
}

def KilnFormDispatches : Pass<"kiln-form-dispatches", "mlir::func::FuncOp"> {
  let summary = "group kiln ops into kiln.dispatch regions (one kernel each)";
  let description = [{
    Every root op (matmul, conv, pooling, reductions, softmax, normalizations)
    starts a dispatch. Elementwise ops whose operand comes from a dispatch and
    that are its only user join it as consumers (conv + bias + relu + residual
    add is one dispatch); elementwise producers used only by a root join it
    too. Small constants are cloned into the region; weights stay operands.
    The remaining ops other than constants and reshapes become dispatches of
    their own. Reshapes stay outside: they are views of a buffer.
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

def KilnOutlineDispatches : Pass<"kiln-outline-dispatches", "mlir::ModuleOp"> {
  let summary = "turn each kiln.dispatch into a function called from @main";
  let description = [{
    Each `kiln.dispatch` region becomes a `func.func` named after it (marked
    `kiln.dispatch`), and the region is replaced by a `func.call`.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def KilnPlanMemory : Pass<"kiln-plan-memory", "mlir::ModuleOp"> {
  let summary = "place every intermediate tensor of @main in one arena";
  let description = [{
    Assigns each tensor that `@main` computes (and each model input) a
    64-byte aligned offset in one arena, reusing bytes whose tensor is no
    longer live (best fit by liveness over the call order). Reshapes alias
    their operand. Records `kiln.arena_offset` on every value-producing op,
    `kiln.input_offsets` and `kiln.arena_size` on `@main`.
  }];
}

#endif // KILN_PASSES_PASSES_TD
