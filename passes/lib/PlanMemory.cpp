//===- PlanMemory.cpp - one arena per program, offsets from liveness ------===//
//
// Every tensor the program (@main after outlining) holds at run time gets a
// 64-byte aligned offset in one arena: the model inputs and the result of
// every dispatch call. A reshape aliases its operand's bytes. Buffers are
// placed largest first at the lowest offset that does not overlap a buffer
// whose live range intersects (live from definition to last use; inputs
// from the start, outputs to the end).
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNPLANMEMORY
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

constexpr uint64_t kAlignment = 64;

uint64_t alignUp(uint64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

struct Buffer {
  Value value;      // the defining value (input argument or call result)
  uint64_t size;
  unsigned start, end;  // live range in op indices, inclusive
  uint64_t offset = 0;
};

struct KilnPlanMemoryPass : kiln::impl::KilnPlanMemoryBase<KilnPlanMemoryPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func->hasAttr("kiln.program"))
        if (failed(plan(func)))
          return signalPassFailure();
  }

  LogicalResult plan(func::FuncOp func) {
    Block &block = func.getBody().front();
    // Buffer of every value held in the arena (aliases map to their source).
    llvm::DenseMap<Value, unsigned> bufferOf;
    SmallVector<Buffer> buffers;
    auto addBuffer = [&](Value v, unsigned at) {
      bufferOf[v] = buffers.size();
      buffers.push_back({v, alignUp(storageBytes(cast<RankedTensorType>(v.getType()))), at, at});
    };
    auto use = [&](Value v, unsigned at) {
      auto it = bufferOf.find(v);
      if (it != bufferOf.end())
        buffers[it->second].end = std::max(buffers[it->second].end, at);
    };

    for (BlockArgument arg : block.getArguments())
      addBuffer(arg, 0);
    unsigned index = 1;
    for (Operation &op : block) {
      for (Value operand : op.getOperands())
        use(operand, index);
      if (auto reshape = dyn_cast<ReshapeOp>(op)) {
        auto it = bufferOf.find(reshape.getInput());
        if (it != bufferOf.end())
          bufferOf[reshape.getResult()] = it->second;
      } else if (isa<func::CallOp>(op)) {
        for (Value result : op.getResults())
          addBuffer(result, index);
      } else if (!isa<ConstantOp, func::ReturnOp>(op)) {
        return op.emitOpError("cannot be placed in the program's arena; "
                              "expected only dispatch calls, constants and reshapes");
      }
      ++index;
    }
    // Outputs stay live to the end, inputs from the start.
    for (Value result : block.getTerminator()->getOperands())
      use(result, index);

    SmallVector<unsigned> order = llvm::to_vector(llvm::seq<unsigned>(0, buffers.size()));
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      return buffers[a].size > buffers[b].size;
    });
    SmallVector<unsigned> placed;
    uint64_t arenaSize = 0;
    for (unsigned i : order) {
      Buffer &buf = buffers[i];
      // Intervals of placed buffers that are live at the same time, by offset.
      SmallVector<std::pair<uint64_t, uint64_t>> busy;
      for (unsigned j : placed) {
        const Buffer &other = buffers[j];
        if (other.start <= buf.end && buf.start <= other.end)
          busy.push_back({other.offset, other.offset + other.size});
      }
      llvm::sort(busy);
      uint64_t offset = 0;
      for (auto [lo, hi] : busy) {
        if (offset + buf.size <= lo)
          break;
        offset = std::max(offset, hi);
      }
      buf.offset = offset;
      arenaSize = std::max(arenaSize, offset + buf.size);
      placed.push_back(i);
    }

    OpBuilder b(func);
    auto i64 = b.getI64Type();
    SmallVector<Attribute> inputOffsets;
    for (BlockArgument arg : block.getArguments())
      inputOffsets.push_back(b.getIntegerAttr(i64, buffers[bufferOf[arg]].offset));
    func->setAttr(kInputOffsetsAttr, b.getArrayAttr(inputOffsets));
    func->setAttr(kArenaSizeAttr, b.getIntegerAttr(i64, arenaSize));
    for (Operation &op : block) {
      if (!isa<func::CallOp, ReshapeOp>(op))
        continue;
      SmallVector<Attribute> offsets;
      for (Value result : op.getResults()) {
        auto it = bufferOf.find(result);
        if (it == bufferOf.end())
          continue;
        offsets.push_back(b.getIntegerAttr(i64, buffers[it->second].offset));
      }
      if (!offsets.empty())
        op.setAttr(kArenaOffsetAttr, offsets.size() == 1 ? offsets.front()
                                                         : b.getArrayAttr(offsets));
    }
    return success();
  }
};
} // namespace
