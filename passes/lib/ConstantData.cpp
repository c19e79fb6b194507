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

std::optional<std::vector<float>> kiln::constantFilterOfConv2d(ConvOp conv, int64_t kh,
                                                               int64_t kw) {
  auto inType = dyn_cast<RankedTensorType>(conv.getInput().getType());
  auto filterType = dyn_cast<RankedTensorType>(conv.getFilter().getType());
  auto outType = dyn_cast<RankedTensorType>(conv.getType());
  if (!inType || !filterType || !outType || inType.getRank() != 4 ||
      filterType.getRank() != 4 || !inType.hasStaticShape() || !filterType.hasStaticShape() ||
      !outType.hasStaticShape() || !inType.getElementType().isF32() ||
      !filterType.getElementType().isF32() || !outType.getElementType().isF32() ||
      conv.getGroups() != 1 || filterType.getDimSize(2) != kh || filterType.getDimSize(3) != kw)
    return std::nullopt;
  auto cst = conv.getFilter().getDefiningOp<ConstantOp>();
  return cst ? f32ConstantValues(cst) : std::nullopt;
}

Value kiln::reshapeTo(OpBuilder &b, Location loc, Value value, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()), value);
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

std::vector<char> kiln::permuteBytes(ArrayRef<char> bytes, size_t elemSize,
                                     ArrayRef<int64_t> inShape, ArrayRef<int64_t> perm) {
  int64_t rank = inShape.size();
  SmallVector<int64_t> inStrides(rank, 1), outShape(rank), strideOfOut(rank);
  for (int64_t d = rank - 2; d >= 0; --d)
    inStrides[d] = inStrides[d + 1] * inShape[d + 1];
  // out[i] = in[j] where j's index along perm[d] is i's along d.
  for (int64_t d = 0; d < rank; ++d) {
    outShape[d] = inShape[perm[d]];
    strideOfOut[d] = inStrides[perm[d]];
  }
  std::vector<char> out(bytes.size());
  int64_t count = static_cast<int64_t>(bytes.size() / elemSize);
  SmallVector<int64_t> index(rank, 0);
  int64_t source = 0;
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(out.data() + i * elemSize, bytes.data() + source * elemSize, elemSize);
    for (int64_t d = rank - 1; d >= 0; --d) {
      source += strideOfOut[d];
      if (++index[d] < outShape[d])
        break;
      source -= strideOfOut[d] * outShape[d];
      index[d] = 0;
    }
  }
  return out;
}

void kiln::eraseDeadChain(Operation *root) {
  SmallVector<Operation *> dead{root};
  while (!dead.empty()) {
    Operation *op = dead.pop_back_val();
    if (!op->use_empty() || !isPure(op))
      continue;
    SmallVector<Value> operands(op->getOperands());
    op->erase();
    for (Value operand : operands)
      if (Operation *def = operand.getDefiningOp(); def && def->use_empty())
        dead.push_back(def);
  }
}
