//===- CopiesToLinalg.cpp - memref.copy as linalg.copy --------------------===//
//
// kiln-copies-to-linalg: bufferization leaves memref.copy ops, which the
// LLVM lowering would turn into calls to a runtime library that neither the
// cpu code objects nor the gfx kernels link. As linalg.copy they become
// plain loops with the rest of the kernel.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNCOPIESTOLINALG
#include "codegen/common/Passes.h.inc"
} // namespace kiln

namespace {
struct KilnCopiesToLinalgPass
    : kiln::impl::KilnCopiesToLinalgBase<KilnCopiesToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};
} // namespace
