//===- KilnDialect.td - The kiln graph dialect --------------*- tablegen -*-===//
//
// The kiln dialect is Kiln's graph-level IR: a compact set of tensor ops that
// the ONNX importer decomposes models into and that the graph passes
// (folding, quantization, fusion, memory planning) transform.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILNDIALECT_TD
#define KILN_DIALECT_KILNDIALECT_TD

include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "Kiln's graph dialect: tensor ops imported from ONNX";
  let description = [{
    Values are builtin ranked tensors. The op set is deliberately compact:
    the ONNX importer decomposes ONNX operators into it (`Gemm` becomes
    `kiln.matmul` plus `kiln.add`, `Flatten` and `Unsqueeze` become
    `kiln.reshape`, and so on), so later passes see one spelling of each
    computation. Every op infers or verifies its result shape; weights are
    `kiln.constant` ops holding `dense_resource` blobs, never printed in IR
    dumps. The model entry is `func.func @main`, whose arguments and results
    carry the ONNX names in the `kiln.name` attribute.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

#endif // KILN_DIALECT_KILNDIALECT_TD
