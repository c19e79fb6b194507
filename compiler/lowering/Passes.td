//===- Passes.td -------------------------------------------*- tablegen -*-===//
//
// The kiln -> linalg/tensor/arith lowering (compiler/lowering/).
// Each pass is a kiln-opt flag with a lit test named after that flag.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_PASSES_TD
#define KILN_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnLowerToLinalg : Pass<"kiln-lower-to-linalg"> {
  let summary = "lower kiln ops to linalg, tensor, arith and math";
  let description = [{
    Lowers every kiln op except `kiln.dispatch`, `kiln.yield` and (outside
    dispatch regions) `kiln.reshape` to upstream dialects on tensors: linalg
    named ops for contractions, convolutions and pooling, `linalg.generic`
    for elementwise ops (with numpy broadcasting as indexing maps) and
    reductions, `tensor` ops for data movement.

    arith computes on signless integers only: generics over unsigned tensors
    (`ui8`...) compute on their signless equivalents with the unsigned ops
    (`divui`, `remui`, `maxui`, `cmpi ult`, `extui`, `uitofp`, `fptoui`),
    and at the end every unsigned type in a function without kiln ops left
    (signature, block arguments, constants) becomes the signless type of the
    same width, so later stages never see a signed or unsigned integer type.
  }];
  let dependentDialects = [
    "mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
    "mlir::arith::ArithDialect", "mlir::math::MathDialect",
    "mlir::scf::SCFDialect"
  ];
}

#endif // KILN_LOWERING_PASSES_TD
