//===- ConstantData.cpp - how tensors and constants are stored ------------===//
//
// One definition, shared by memory planning, weight layout folding and
// artifact emission, of a tensor's bytes at run time and of where a
// constant's bytes can be read without a copy.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

std::optional<ArrayRef<char>> kiln::rawConstantBytes(ElementsAttr value) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
    return std::nullopt;
  }
  // Dense attributes store i1 packed and splats once: those need expanding.
  if (auto dense = dyn_cast<DenseElementsAttr>(value))
    if (!dense.isSplat() && !dense.getElementType().isInteger(1))
      return dense.getRawData();
  return std::nullopt;
}
