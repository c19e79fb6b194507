//===- FormDispatches.cpp - group kiln ops into kiln.dispatch regions -----===//
//
// A dispatch is one kernel. Roots (matmul, conv, pooling, reductions,
// softmax, normalizations) each start one; elementwise consumers of a
// dispatch's single result join it while they are its only user and keep its
// shape (bias, activation, residual add), and for roots that are not
// contractions, single-use elementwise producers join too; a contraction
// takes in the cast of a constant weight only it reads and the transpose of
// one stored k-fastest (with transposed-operands, a matmul also takes in the
// transposes and broadcasts of operands it alone reads, and the transpose of
// its result); a concat takes in its single-use slices. A Winograd
// transform takes in nothing. Every other
// op except constants, reshapes and contiguous slices (views, handled by
// memory planning) and
// control flow (kiln.if and kiln.loop, commands of the program) gets a
// dispatch of its own.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNFORMDISPATCHES
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

bool kiln::isElementwiseOp(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp, AndOp,
             OrOp, XorOp, EqualOp, LessOp, LessEqualOp, GreaterOp,
             GreaterEqualOp, ShiftLeftOp, ShiftRightOp, SelectOp, AbsOp, NegOp,
             SignOp, ReluOp, SigmoidOp, TanhOp, ExpOp, LogOp, SqrtOp, RsqrtOp,
             ReciprocalOp, ErfOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp,
             SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp, FloorOp, CeilOp,
             RoundOp, SoftplusOp, NotOp, GeluOp,
             ClipOp, LeakyReluOp, EluOp, HardSigmoidOp, CastOp, ExpandOp>(op);
}

namespace {
using namespace kiln;

/// Constants with at most this many elements are cloned into the dispatches
/// that read them instead of becoming bindings.
constexpr int64_t kInlineConstantElements = 64;


bool isContraction(Operation *op) {
  return isa<MatmulOp, MatmulPanelsOp, ConvOp, MatmulIntegerOp, ConvIntegerOp>(op);
}

bool isRoot(Operation *op) {
  return isa<MatmulOp, MatmulPanelsOp, ConvOp, MatmulIntegerOp, ConvIntegerOp, MaxPoolOp,
             AvgPoolOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp,
             ReduceProdOp, ArgMaxOp, ArgMinOp, SoftmaxOp, LayerNormOp,
             RmsNormOp, BatchNormOp>(op);
}

/// A short name for the kind of kernel, used in the dispatch name.
std::string kindName(Operation *op) {
  return op->getName().stripDialect().str();
}

bool isInlinableConstant(Operation *op) {
  auto cst = dyn_cast_or_null<ConstantOp>(op);
  if (!cst)
    return false;
  auto value = dyn_cast<DenseElementsAttr>(cst.getValue());
  return value && (value.isSplat() || value.getNumElements() <= kInlineConstantElements);
}

/// The single user of `value`, if it has exactly one use.
Operation *singleUser(Value value) {
  if (!value.hasOneUse())
    return nullptr;
  return *value.getUsers().begin();
}

/// The transpose of a constant weight (kiln-transpose-matmul-weights'
/// k-fastest weights) that only one op reads, or null.
TransposeOp transposedWeight(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  if (!transpose || !transpose.getInput().getDefiningOp<ConstantOp>() || !value.hasOneUse())
    return nullptr;
  return transpose;
}

/// The contraction that alone reads `cast` of a constant (a weight
/// kiln-narrow-matmul-weights stored in f16 or bf16), or of the transpose
/// of one, in its block, or null.
Operation *narrowedWeightReader(CastOp cast) {
  Operation *user = singleUser(cast.getResult());
  if (!user ||
      !(cast.getInput().getDefiningOp<ConstantOp>() || transposedWeight(cast.getInput())) ||
      !isContraction(user) || user->getBlock() != cast->getBlock())
    return nullptr;
  return user;
}

/// Which matmuls take in the transposes (and broadcasts) of their operands
/// and result (transposed-operands), given transposed-f32.
struct ReadThrough {
  bool operands, f32;
  bool operator()(Operation *op) const {
    if (!operands || !op)
      return false;
    if (!f32 && isa<MatmulOp>(op) &&
        getElementTypeOrSelf(op->getOperand(0).getType()).isF32())
      return false;
    return true;
  }
};

/// The contraction that alone reads `transpose` of a constant, directly or
/// through a narrowing cast, in its block, or null. With `readThrough`, also
/// the matmul that alone reads the transpose of any value.
Operation *transposedWeightReader(TransposeOp transpose, ReadThrough readThrough) {
  Operation *user = singleUser(transpose.getResult());
  if (!user || user->getBlock() != transpose->getBlock())
    return nullptr;
  if (isa<MatmulOp, MatmulIntegerOp>(user) && readThrough(user))
    return user;
  if (!transposedWeight(transpose.getResult()))
    return nullptr;
  if (auto cast = dyn_cast<CastOp>(user))
    return narrowedWeightReader(cast);
  if (!isContraction(user))
    return nullptr;
  return user;
}

/// The kiln.expand (grouped-query attention's K and V heads repeated to the
/// query heads) that `value` is, or reshapes, read only by `value`'s reader:
/// the expand and the reshape, in block order; empty for none.
SmallVector<Operation *> broadcastChain(Value value) {
  Operation *reshape = value.getDefiningOp<ReshapeOp>();
  if (reshape) {
    if (!value.hasOneUse())
      return {};
    value = reshape->getOperand(0);
  }
  auto expand = value.getDefiningOp<ExpandOp>();
  if (!expand || !value.hasOneUse() || (reshape && reshape->getBlock() != expand->getBlock()))
    return {};
  SmallVector<Operation *> chain{expand};
  if (reshape)
    chain.push_back(reshape);
  return chain;
}

/// With transposed-operands, the matmul that reads `expand` alone, through
/// a reshape and a transpose (each optional, each read once), in its
/// block, or null.
Operation *broadcastReader(ExpandOp expand) {
  Operation *user = singleUser(expand.getResult());
  if (isa_and_nonnull<ReshapeOp>(user))
    user = singleUser(user->getResult(0));
  if (auto transpose = dyn_cast_or_null<TransposeOp>(user))
    user = singleUser(transpose.getResult());
  if (!isa_and_nonnull<MatmulOp, MatmulIntegerOp>(user) || user->getBlock() != expand->getBlock())
    return nullptr;
  return user;
}

struct KilnFormDispatchesPass
    : kiln::impl::KilnFormDispatchesBase<KilnFormDispatchesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    const ReadThrough readThrough{transposedOperands, transposedF32};
    // Ops already placed in a group.
    llvm::DenseSet<Operation *> grouped;
    SmallVector<SmallVector<Operation *>> groups;

    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);

    for (Operation *op : ops) {
      if (grouped.contains(op) || op->getDialect() != op->getContext()->getLoadedDialect<KilnDialect>())
        continue;
      // Control flow stays in the program: it runs other programs.
      if (isa<ConstantOp, ReshapeOp, DispatchOp, YieldOp, IfOp, LoopOp>(op))
        continue;
      // A slice that is a view of its input's bytes (one contiguous,
      // aligned range, not returned: the heads of a merged projection)
      // stays, like a reshape.
      if (sliceViews && sliceViewOffset(op))
        continue;
      // A single-use elementwise producer of a non-contraction root waits for
      // its root, which takes it in (ops are visited in block order).
      if (isElementwiseOp(op) && op->getNumResults() == 1)
        if (Operation *user = singleUser(op->getResult(0)))
          if (isRoot(user) && !isContraction(user) && user->getBlock() == op->getBlock())
            continue;
      // A rotary embedding read only by an elementwise op waits for the
      // group that takes that op in (takeRotaryProducers): a decode step's
      // key cache write computes the rotated row where it stores it.
      if (rotaryConsumer(op))
        continue;
      // Likewise the cast of a constant that only a contraction reads (a
      // weight kiln-narrow-matmul-weights stored in f16 or bf16).
      if (auto cast = dyn_cast<CastOp>(op); cast && narrowedWeightReader(cast))
        continue;
      // And the transpose of a constant weight stored k-fastest (or of any
      // operand of a matmul, with transposed-operands).
      if (auto transpose = dyn_cast<TransposeOp>(op);
          transpose && transposedWeightReader(transpose, readThrough))
        continue;
      // And, with transposed-operands, the broadcast of a matmul operand
      // (grouped-query attention's K and V heads).
      if (auto expand = dyn_cast<ExpandOp>(op); expand && readThrough(broadcastReader(expand)))
        continue;
      // Likewise a single-use slice of a concat (the strided tile gathers of
      // kiln-winograd-convs: 36 slices, one kernel).
      if (auto slice = dyn_cast<SliceOp>(op))
        if (Operation *user = singleUser(slice.getResult()))
          if (isa<ConcatOp>(user) && user->getBlock() == op->getBlock())
            continue;
      SmallVector<Operation *> group;
      // Producers first (they precede the root in the block).
      if (isRoot(op) && !isContraction(op)) {
        for (Value operand : op->getOperands()) {
          Operation *producer = operand.getDefiningOp();
          if (producer && isElementwiseOp(producer) && !grouped.contains(producer) &&
              singleUser(operand) == op) {
            group.push_back(producer);
            grouped.insert(producer);
          }
        }
      }
      // A contraction takes in the cast of a constant weight only it reads,
      // and the transpose of one (before the cast, in block order).
      if (isContraction(op)) {
        for (Value operand : op->getOperands()) {
          auto cast = operand.getDefiningOp<CastOp>();
          Value weight = operand;
          if (cast && !grouped.contains(cast) && narrowedWeightReader(cast) == op)
            weight = cast.getInput();
          auto transpose = weight.getDefiningOp<TransposeOp>();
          bool takesTranspose = transpose && !grouped.contains(transpose) &&
                                transposedWeightReader(transpose, readThrough) == op;
          // With transposed-operands, a matmul also takes in the broadcast
          // of an operand (before its transpose), which its GEMM kernel
          // reads through (heads h of a K or V with fewer heads at h / g).
          if (isa<MatmulOp, MatmulIntegerOp>(op) && readThrough(op) && weight == operand)
            for (Operation *member : broadcastChain(takesTranspose ? transpose.getInput() : operand))
              if (!grouped.contains(member)) {
                group.push_back(member);
                grouped.insert(member);
              }
          if (takesTranspose) {
            group.push_back(transpose);
            grouped.insert(transpose);
          }
          if (weight != operand) {
            group.push_back(cast);
            grouped.insert(cast);
          }
        }
      }
      if (auto concat = dyn_cast<ConcatOp>(op)) {
        for (Value operand : concat.getInputs()) {
          auto slice = operand.getDefiningOp<SliceOp>();
          if (slice && !grouped.contains(slice) && singleUser(operand) == op &&
              slice->getBlock() == op->getBlock()) {
            group.push_back(slice);
            grouped.insert(slice);
          }
        }
      }
      group.push_back(op);
      grouped.insert(op);
      // Then the chain of consumers (a Winograd transform is a kernel of its
      // own: kiln-winograd-convs gave the output transform the consumers it
      // computes).
      Operation *last = op;
      bool alone = isa<WinogradInputOp, WinogradOutputOp>(op);
      while (!alone && last->getNumResults() == 1) {
        Operation *user = singleUser(last->getResult(0));
        // With transposed-operands, a matmul (a GEMV's panels too) also
        // takes in the transpose of its result (attention's context back to
        // [B, S, H, D]), or of a reshape of it (a projection split into
        // heads and transposed to them), last.
        if (isa<MatmulOp, MatmulIntegerOp, MatmulPanelsOp>(op) && readThrough(op) && user &&
            user->getBlock() == op->getBlock()) {
          Operation *reshape = isa<ReshapeOp>(user) ? user : nullptr;
          Operation *transpose = reshape ? singleUser(reshape->getResult(0)) : user;
          if (isa_and_nonnull<TransposeOp>(transpose) && !grouped.contains(transpose) &&
              transpose->getBlock() == op->getBlock()) {
            for (Operation *member : {reshape, transpose})
              if (member) {
                group.push_back(member);
                grouped.insert(member);
              }
            alone = true; // nothing after it
            break;
          }
        }
        if (!user || !isElementwiseOp(user) || grouped.contains(user) ||
            user->getBlock() != op->getBlock() || user->getNumResults() != 1 ||
            cast<RankedTensorType>(user->getResult(0).getType()).getShape() !=
                cast<RankedTensorType>(last->getResult(0).getType()).getShape())
          break;
        group.push_back(user);
        grouped.insert(user);
        last = user;
      }
      if (!alone)
        growElementwiseDag(op, group, grouped);
      takeRotaryProducers(group, grouped);
      groups.push_back(std::move(group));
    }

    // A rotary embedding that waited for a group that did not take it.
    for (Operation *op : ops)
      if (isa<RotaryEmbeddingOp>(op) && !grouped.contains(op)) {
        groups.push_back({op});
        grouped.insert(op);
      }

    unsigned index = 0;
    for (auto &group : groups) {
      // Named after its root, or the concat that took in its slices.
      auto named = llvm::find_if(group, [](Operation *op) { return isRoot(op) || isa<ConcatOp>(op); });
      Operation *root = named != group.end() ? *named : group.front();
      std::string name = "dispatch_" + std::to_string(index++) + "_" + kindName(root);
      if (failed(buildDispatch(group, name)))
        return signalPassFailure();
    }
    if (inlineScalars)
      inlineScalarDispatches(func);
    if (epilogueOperands)
      inlineEpilogueOperands(func);
  }

  /// Results of at most this many elements are evaluated again per output
  /// element of the integer matmul that reads them.
  static constexpr int64_t kEpilogueOperandElements = 4096;

  /// The dispatch whose root is a kiln.matmul_integer or kiln.conv_integer
  /// and whose epilogue (elementwise ops) alone reads every result of
  /// `small`, or null.
  static DispatchOp epilogueReader(DispatchOp small) {
    DispatchOp reader;
    for (Operation *user : small->getUsers()) {
      auto dispatch = dyn_cast<DispatchOp>(user);
      if (!dispatch || (reader && dispatch != reader) ||
          dispatch->getBlock() != small->getBlock())
        return nullptr;
      reader = dispatch;
    }
    if (!reader)
      return nullptr;
    Block &body = reader.getBody().front();
    if (!llvm::any_of(body.without_terminator(), llvm::IsaPred<MatmulIntegerOp, ConvIntegerOp>))
      return nullptr;
    for (auto [i, input] : llvm::enumerate(reader.getInputs())) {
      auto result = dyn_cast<OpResult>(input);
      if (!result || result.getOwner() != small)
        continue;
      for (Operation *user : body.getArgument(i).getUsers())
        if (!isElementwiseOp(user) || isa<ExpandOp>(user))
          return nullptr;
    }
    return reader;
  }

  /// An elementwise dispatch of small results (a dynamic quantization's
  /// per-channel products) read only by an integer matmul's or
  /// convolution's epilogue is computed in its dispatch: the gfx GEMM kernels evaluate it per
  /// output element as they store it.
  static void inlineEpilogueOperands(func::FuncOp func) {
    SmallVector<DispatchOp> dispatches;
    func.walk([&](DispatchOp dispatch) { dispatches.push_back(dispatch); });
    for (DispatchOp small : dispatches) {
      if (small->use_empty() || !isElementwiseDispatch(small) ||
          !llvm::all_of(small.getResultTypes(), [](Type type) {
            auto tensor = dyn_cast<RankedTensorType>(type);
            return tensor && tensor.hasStaticShape() &&
                   tensor.getNumElements() <= kEpilogueOperandElements;
          }))
        continue;
      if (DispatchOp reader = epilogueReader(small)) {
        inlineInto(small, reader);
        small->erase();
      }
    }
  }

  /// Whether every op of `dispatch`'s body is elementwise (or a constant).
  static bool isElementwiseDispatch(DispatchOp dispatch) {
    return llvm::all_of(dispatch.getBody().front().without_terminator(), [](Operation &op) {
      return isElementwiseOp(&op) || isInlinableConstant(&op);
    });
  }

  /// Whether `dispatch` is elementwise and every result one element (a
  /// dynamic quantization's zero point and its casts).
  static bool isScalarDispatch(DispatchOp dispatch) {
    return isElementwiseDispatch(dispatch) &&
           llvm::all_of(dispatch.getResultTypes(), [](Type type) {
             auto tensor = dyn_cast<RankedTensorType>(type);
             return tensor && tensor.hasStaticShape() && tensor.getNumElements() == 1;
           });
  }

  /// Computes `scalar`'s body again at the start of `user`'s, in place of
  /// the inputs that are its results; its own inputs become `user`'s.
  static void inlineInto(DispatchOp scalar, DispatchOp user) {
    Block &body = user.getBody().front();
    Block &scalarBody = scalar.getBody().front();
    SmallVector<Value> inputs(user.getInputs());
    unsigned count = inputs.size();
    IRMapping mapping;
    for (auto [arg, input] : llvm::zip(scalarBody.getArguments(), scalar.getInputs())) {
      auto *it = llvm::find(inputs, input);
      if (it != inputs.end()) {
        mapping.map(arg, body.getArgument(it - inputs.begin()));
        continue;
      }
      inputs.push_back(input);
      mapping.map(arg, body.addArgument(input.getType(), input.getLoc()));
    }
    OpBuilder builder = OpBuilder::atBlockBegin(&body);
    for (Operation &op : scalarBody.without_terminator())
      builder.clone(op, mapping);
    auto yield = cast<YieldOp>(scalarBody.getTerminator());
    for (unsigned i = count; i-- > 0;) {
      auto result = dyn_cast<OpResult>(inputs[i]);
      if (!result || result.getOwner() != scalar)
        continue;
      body.getArgument(i).replaceAllUsesWith(
          mapping.lookup(yield.getOperand(result.getResultNumber())));
      body.eraseArgument(i);
      inputs.erase(inputs.begin() + i);
    }
    user->setOperands(inputs);
  }

  /// A dispatch of one-element elementwise results read only by
  /// elementwise dispatches of its block is computed again in each (a few
  /// scalar operations per thread) instead of launched: a dynamic
  /// quantization's zero point, and its casts to f32 (the quantize kernel)
  /// and i32 (the correction's), were three launches per activation. In
  /// block order, so that a chain folds into its last reader.
  static void inlineScalarDispatches(func::FuncOp func) {
    SmallVector<DispatchOp> dispatches;
    func.walk([&](DispatchOp dispatch) { dispatches.push_back(dispatch); });
    for (DispatchOp scalar : dispatches) {
      if (!isScalarDispatch(scalar) || scalar->use_empty())
        continue;
      llvm::SetVector<DispatchOp> users;
      bool eligible = true;
      for (Operation *user : scalar->getUsers()) {
        auto dispatch = dyn_cast<DispatchOp>(user);
        if (!dispatch || dispatch->getBlock() != scalar->getBlock() ||
            !isElementwiseDispatch(dispatch)) {
          eligible = false;
          break;
        }
        users.insert(dispatch);
      }
      if (!eligible)
        continue;
      for (DispatchOp user : users)
        inlineInto(scalar, user);
      scalar->erase();
    }
  }

  /// The elementwise op that alone reads `op`, a rotary embedding, in its
  /// block; it computes the rotation per element, broadcast or not.
  static Operation *rotaryConsumer(Operation *op) {
    if (!isa<RotaryEmbeddingOp>(op))
      return nullptr;
    Operation *user = singleUser(op->getResult(0));
    return user && isElementwiseOp(user) && user->getBlock() == op->getBlock() ? user : nullptr;
  }

  /// Puts each rotary embedding that waits for a member (rotaryConsumer)
  /// into the group, before that member, when the group is elementwise
  /// ops alone (the kernel builders of contractions and row reductions
  /// take elementwise epilogues, not the rotation's gather). One left out
  /// becomes a dispatch of its own at the end (runOnOperation).
  static void takeRotaryProducers(SmallVector<Operation *> &group,
                                  llvm::DenseSet<Operation *> &grouped) {
    if (!llvm::all_of(group, isElementwiseOp))
      return;
    for (size_t i = 0; i < group.size(); ++i)
      for (Value operand : group[i]->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && !grouped.contains(def) && rotaryConsumer(def) == group[i]) {
          group.insert(group.begin() + i, def);
          grouped.insert(def);
          ++i;
        }
      }
  }

  /// Widens a group past its chain of single-use consumers: elementwise
  /// ops that keep the group's shape and read only its values, constants and
  /// values defined before `root` join, as long as one value of the group
  /// is then read outside it (HardSwish x * hard_sigmoid(x) and SiLU x *
  /// sigmoid(x) read the root twice; a residual branch read elsewhere too
  /// keeps the chain). Otherwise the group stays as it was.
  void growElementwiseDag(Operation *root, SmallVector<Operation *> &group,
                          llvm::DenseSet<Operation *> &grouped) {
    if (root->getNumResults() != 1)
      return;
    auto shape = cast<RankedTensorType>(root->getResult(0).getType()).getShape();
    llvm::SmallPtrSet<Operation *, 8> members(group.begin(), group.end());
    SmallVector<Operation *> added;
    auto joins = [&](Operation *user) {
      if (members.contains(user) || grouped.contains(user) || !isElementwiseOp(user) ||
          user->getBlock() != root->getBlock() || user->getNumResults() != 1 ||
          cast<RankedTensorType>(user->getResult(0).getType()).getShape() != shape)
        return false;
      return llvm::all_of(user->getOperands(), [&](Value operand) {
        Operation *def = operand.getDefiningOp();
        return !def || members.contains(def) || isInlinableConstant(def) ||
               (def->getBlock() == root->getBlock() && def->isBeforeInBlock(root));
      });
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (Operation *member : SmallVector<Operation *>(members.begin(), members.end()))
        for (Value result : member->getResults())
          for (Operation *user : result.getUsers())
            if (joins(user)) {
              members.insert(user);
              added.push_back(user);
              changed = true;
            }
    }
    if (added.empty())
      return;
    // One value leaves the group, and its outside users come after every
    // member (the dispatch takes the last member's place).
    Operation *last = nullptr;
    for (Operation *member : members)
      if (!last || last->isBeforeInBlock(member))
        last = member;
    SmallVector<Value> exits;
    for (Operation *member : members)
      for (Value result : member->getResults())
        for (Operation *user : result.getUsers())
          if (!members.contains(user)) {
            if (user->getBlock() == last->getBlock() && user->isBeforeInBlock(last))
              return;
            if (!llvm::is_contained(exits, result))
              exits.push_back(result);
          }
    if (exits.size() != 1)
      return;
    for (Operation *op : added) {
      group.push_back(op);
      grouped.insert(op);
    }
    llvm::sort(group, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  }

  LogicalResult buildDispatch(ArrayRef<Operation *> group, StringRef name) {
    llvm::SmallPtrSet<Operation *, 8> members(group.begin(), group.end());
    llvm::SetVector<Value> inputs;
    SmallVector<Operation *> inlined;
    for (Operation *op : group)
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && members.contains(def))
          continue;
        if (isInlinableConstant(def)) {
          if (!llvm::is_contained(inlined, def))
            inlined.push_back(def);
          continue;
        }
        inputs.insert(operand);
      }
    SmallVector<Value> results;
    for (Operation *op : group)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(),
                         [&](Operation *user) { return !members.contains(user); }))
          results.push_back(result);

    Operation *last = group.back();
    OpBuilder builder(last);
    // The region goes where the last member was; every input dominates it.
    Location loc = group.size() == 1 ? last->getLoc()
                                     : FusedLoc::get(builder.getContext(),
                                                     llvm::map_to_vector(group, [](Operation *op) {
                                                       return op->getLoc();
                                                     }));
    SmallVector<Type> resultTypes = llvm::map_to_vector(results, [](Value v) { return v.getType(); });
    auto dispatch = DispatchOp::create(builder, loc, resultTypes,
                                       builder.getStringAttr(name), inputs.getArrayRef());
    Block *body = builder.createBlock(&dispatch.getBody());
    IRMapping mapping;
    for (Value input : inputs)
      mapping.map(input, body->addArgument(input.getType(), input.getLoc()));
    builder.setInsertionPointToStart(body);
    for (Operation *cst : inlined)
      builder.clone(*cst, mapping);
    for (Operation *op : group)
      builder.clone(*op, mapping);
    YieldOp::create(builder, loc,
                    llvm::map_to_vector(results, [&](Value v) { return mapping.lookup(v); }));
    for (auto [result, replacement] : llvm::zip(results, dispatch.getResults()))
      result.replaceAllUsesWith(replacement);
    for (Operation *op : llvm::reverse(group))
      op->erase();
    return success();
  }
};
} // namespace
