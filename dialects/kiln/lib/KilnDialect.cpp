//===- KilnDialect.cpp - kiln dialect registration ------------------------===//
//
// Registers the kiln ops and materializes folded constants as kiln.constant.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnDialect.h"

using namespace mlir;
using namespace kiln;

#include "kiln/Dialect/KilnOpsDialect.cpp.inc"

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "kiln/Dialect/KilnOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder,
                                            Attribute value, Type type,
                                            Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
