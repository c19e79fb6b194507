//===- TileAndFuse.cpp - a dispatch's last op tiled, producers fused ------===//
//
// What the cpu workgroup distribution and the gfx per-thread distribution
// share: find the op a dispatch function's result comes from, tile it into
// one scf.forall and fuse every producer into the tile.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Passes.h"

#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

TilingInterface kiln::findDispatchConsumer(func::FuncOp func) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (ret.getNumOperands() != 1)
    return nullptr;
  Value value = ret.getOperand(0);
  while (Operation *def = value.getDefiningOp()) {
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) {
      value = def->getOperand(0);
      continue;
    }
    return dyn_cast<TilingInterface>(def);
  }
  return nullptr;
}

LogicalResult kiln::tileAndFuseIntoForall(TilingInterface consumer, ArrayRef<int64_t> tiles) {
  IRRewriter rewriter(consumer);
  scf::SCFTileAndFuseOptions options;
  options.tilingOptions.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
  options.tilingOptions.setTileSizes(getAsIndexOpFoldResult(consumer->getContext(), tiles));
  FailureOr<scf::SCFTileAndFuseResult> result =
      scf::tileConsumerAndFuseProducersUsingSCF(rewriter, consumer, options);
  if (failed(result))
    return failure();
  for (OpResult res : consumer->getResults())
    rewriter.replaceAllUsesWith(res, result->replacements.lookup(res));
  return success();
}

