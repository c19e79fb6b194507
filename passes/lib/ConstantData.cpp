//===- ConstantData.cpp - how tensors and constants are stored ------------===//
//
// One definition, shared by memory planning, weight layout folding and
// artifact emission, of a tensor's bytes at run time and of where a
// constant's bytes can be read without a copy.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "kiln/Dialect/KilnDialect.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

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

std::optional<std::vector<float>> kiln::f32ConstantValues(ConstantOp cst) {
  auto type = cast<RankedTensorType>(cst.getType());
  int64_t count = type.getNumElements();
  if (!type.getElementType().isF32())
    return std::nullopt;
  std::vector<float> values;
  if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue())) {
    values.assign(dense.getValues<float>().begin(), dense.getValues<float>().end());
    return values;
  }
  std::optional<ArrayRef<char>> bytes = rawConstantBytes(cst.getValue());
  if (!bytes || bytes->size() != size_t(count) * 4)
    return std::nullopt;
  values.resize(count);
  std::memcpy(values.data(), bytes->data(), bytes->size());
  return values;
}

Value kiln::bytesConstant(OpBuilder &b, Location loc, RankedTensorType type,
                          ArrayRef<char> bytes, StringRef blobName) {
  ElementsAttr attr;
  if (type.getNumElements() > 64) {
    AsmResourceBlob blob =
        HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(std::max_align_t));
    attr = DenseResourceElementsAttr::get(type, blobName, std::move(blob));
  } else {
    attr = DenseElementsAttr::getFromRawBuffer(type, bytes);
  }
  return ConstantOp::create(b, loc, type, attr);
}

StringRef kiln::nodeNameOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (StringRef found = nodeNameOf(inner); !found.empty())
        return found;
  return "";
}
