//===- PlanMemory.cpp - one arena per program, offsets from liveness ------===//
//
// Every tensor a kiln.program holds at run time gets a 64-byte aligned
// offset in one arena: the model inputs and the result of every launch; its
// constants get places in the program's constant pool. The plan is written
// as #kiln.binding attributes on the program and its launches. A reshape aliases its operand's bytes. Buffers are
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
    for (auto program : getOperation().getOps<ProgramOp>())
      if (failed(plan(program)))
        return signalPassFailure();
  }

  LogicalResult plan(ProgramOp program) {
    Block &block = program.getBody().front();
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
    // Constants: one place each in the program's constant pool, in the order
    // the program first uses them (the artifact stores them in that order).
    llvm::DenseMap<Operation *, uint64_t> constantOffset;
    uint64_t poolSize = 0;

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
      } else if (isa<LaunchOp>(op)) {
        for (Value result : op.getResults())
          addBuffer(result, index);
      } else if (auto cst = dyn_cast<ConstantOp>(op)) {
        uint64_t offset = alignUp(poolSize);
        constantOffset[cst] = offset;
        poolSize = offset + storageBytes(cast<RankedTensorType>(cst.getType()));
      } else if (!isa<ReturnOp>(op)) {
        return op.emitOpError("cannot be placed in the program's arena; "
                              "expected only launches, constants and reshapes");
      }
      ++index;
    }
    // Outputs stay live to the end, inputs from the start.
    auto ret = cast<ReturnOp>(block.getTerminator());
    for (Value result : ret.getOperands())
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

    // Bindings: where each value lives, by what it is.
    llvm::DenseSet<Value> outputs(ret.getOperands().begin(), ret.getOperands().end());
    MLIRContext *ctx = program.getContext();
    std::function<BindingAttr(Value)> bindingOf = [&](Value value) -> BindingAttr {
      uint64_t size = storageBytes(cast<RankedTensorType>(value.getType()));
      if (auto reshape = value.getDefiningOp<ReshapeOp>()) {
        BindingAttr source = bindingOf(reshape.getInput());
        BindingKind kind = source.getKind();
        if (kind == BindingKind::Arena && outputs.contains(value))
          kind = BindingKind::Output;
        return BindingAttr::get(ctx, kind, source.getOffset(), size);
      }
      if (auto cst = value.getDefiningOp<ConstantOp>())
        return BindingAttr::get(ctx, BindingKind::Constant, constantOffset.lookup(cst), size);
      uint64_t offset = buffers[bufferOf.lookup(value)].offset;
      if (isa<BlockArgument>(value))
        return BindingAttr::get(ctx, BindingKind::Input, offset, size);
      // A launch result: output when the program returns it (or a view of it).
      bool returned = outputs.contains(value) ||
                      llvm::any_of(value.getUsers(), [&](Operation *user) {
                        return isa<ReshapeOp>(user) && outputs.contains(user->getResult(0));
                      });
      return BindingAttr::get(ctx, returned ? BindingKind::Output : BindingKind::Arena, offset,
                              size);
    };
    auto bindingsOf = [&](ValueRange values) {
      SmallVector<Attribute> attrs;
      for (Value v : values)
        attrs.push_back(bindingOf(v));
      return ArrayAttr::get(ctx, attrs);
    };
    OpBuilder b(program);
    program.setArenaSizeAttr(b.getI64IntegerAttr(arenaSize));
    program.setInputBindingsAttr(bindingsOf(block.getArguments()));
    program.setOutputBindingsAttr(bindingsOf(ret.getOperands()));
    for (auto launch : block.getOps<LaunchOp>()) {
      launch.setOperandBindingsAttr(bindingsOf(launch.getOperands()));
      launch.setResultBindingsAttr(bindingsOf(launch.getResults()));
    }
    return success();
  }
};
} // namespace
