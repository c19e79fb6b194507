//===- GemmBuilder.cpp - matrix-core GEMM kernels for gfx targets ---------===//
//
// A dispatch whose work is one contraction (matmul, batched matmul, a 1x1
// convolution after lowering: anything with one m, one n and one k loop)
// followed by elementwise ops is rebuilt as a matrix-core kernel, written
// directly in gpu/memref/vector/scf/arith/amdgpu ops:
//
// - a workgroup of 4 waves computes a 64 x 64 tile of the output; each wave
//   a 32 x 32 quarter as 2 x 2 tiles of 16 x 16 MFMA/WMMA instructions
//   (the target table's tiling and instruction shape give these numbers);
// - each K step (two instructions deep) the workgroup stages its A panel
//   (64 x KT) and B panel (stored as 64 x KT, k fastest) in LDS, loading
//   from global memory in 16-byte vectors (buffer loads) along the
//   contiguous dimension where the shapes allow, converting f32 to f16/bf16
//   on the way when --precision asks for it; the panels are double-buffered
//   (the next step's global loads are issued before the current step's
//   multiplies, one barrier per step; the target table says how LLVM
//   should order a step's instructions: scheduleStep);
// - each lane then reads its operand fragments from LDS following the
//   instruction's lane layout (the target table, checked against AMD's
//   tables) and issues the instruction;
// - the dispatch's elementwise epilogue (bias, activation, residual) is
//   applied to each accumulator element in registers and stored once.
//
// One parameterized builder serves every target: the instruction, its shape
// and lane layout, the tiling and the LDS limit come from the gfx target
// table (targets/GfxTargets.cpp). A kernel whose panels need more LDS than
// a workgroup may allocate on the chip is an error.
//
//===----------------------------------------------------------------------===//

#include "codegen/amdgpu/GPUCodegen.h"
#include "codegen/amdgpu/Passes.h"
#include "kiln/Dialect/KilnDialect.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <numeric>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNGPUBUILDGEMMS
#include "codegen/amdgpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;
using gfx::reshapeMemref;
using gfx::MatrixInput;
using gfx::MatrixInstruction;

/// A contraction operand: a function argument seen through reshapes.
struct Source {
  BlockArgument arg;
  SmallVector<Operation *> reshapes; // from the argument to the operand
  /// Then collapsed with these groups (the filter of an implicit GEMM as
  /// [F][C*KH*KW]); empty for none.
  SmallVector<ReassociationIndices> collapse;
  AffineMap map;                     // loop dims -> operand indices
  /// Zero padding before each dimension: `map` gives indices into the
  /// padded operand, which are shifted back and bounds-checked (an implicit
  /// GEMM's image under a tensor.pad); empty for none.
  SmallVector<int64_t> lowPad;
  /// The operand is the argument transposed (a weight
  /// kiln-transpose-matmul-weights stored k-fastest, read through a
  /// linalg.transpose): operand dimension d is argument dimension
  /// permutation[d]. traceOperands folds it into `map`, which then indexes
  /// the argument. Empty for none.
  SmallVector<int64_t> permutation;
  /// The operand is the argument broadcast along dimensions it repeats
  /// (grouped-query attention's K and V heads, kiln.expand to the query
  /// heads), then possibly reshaped and transposed: operand indices ->
  /// argument indices (after `reshapes`), with `floordiv` where a
  /// collapsed dimension meets a repeated one. traceOperands composes it
  /// into `map`. Null for none.
  AffineMap operandMap;
  bool isUnsigned = false;
  /// Unsigned bytes staged as signed ones minus 128 (x ^ 0x80), for MFMA,
  /// which multiplies signed bytes only; the kernel adds back 128 times the
  /// other operand's sums along k (see `corrections`).
  bool flipSign = false;
  /// 4-bit values (one per byte in memory) staged for an 8-bit instruction:
  /// each byte extended from its low four bits by the operand's signedness.
  bool fourBit = false;
};

/// B of a 4-bit weight-only matmul (kiln.matmul_int4's generic): codes
/// [K / G, G / 2, N] (byte [g, j, n] holds row g G + j in its low four bits,
/// g G + G / 2 + j in its high ones), scales and zero points [K / G, N], all
/// f32 but the codes; dequantized while staged, (code - zero) * scale, then
/// rounded to the compute type (f16/bf16): W4A16.
struct Int4Weights {
  Value codes, scale, zero; // the generic's operands (arguments or constants)
  int64_t group = 0;
  /// W4A8's column panels: codes [N / P, K / G, G / 8, P, 4] (byte [c, g,
  /// t, l, i] holds rows g G + 4 t + i and g G + G / 2 + 4 t + i of column
  /// c P + l), scales and zero points [N / P, K / G, P]; 0 otherwise.
  int64_t panel = 0;
};

struct GemmPlan {
  linalg::LinalgOp contraction; // or the convolution of an implicit GEMM
  AffineMap outMap;             // loop dims -> indices of its result
  unsigned mDim, nDim, kDim;
  SmallVector<unsigned> batchDims;
  SmallVector<int64_t> bounds;
  Source a, b;
  /// Set for a W4A16 matmul: B comes from these instead of `b`.
  std::optional<Int4Weights> int4;
  /// Set for a W4A8 matmul (kiln.matmul_int4 with int8_activations): A is
  /// quantized to int8 per row and group while staged, B's codes minus
  /// their zero points are staged as int8, each group's i32 sums are scaled
  /// into f32 accumulators as the group ends (KernelBuilder::flushGroup).
  std::optional<Int4Weights> w4a8;
  /// Set for a few-row product by a weight in column panels
  /// (kiln.matmul_panels' generic, B [N / P, K, P]): the columns per panel
  /// P of a GEMV kernel, which needs no matrix instruction.
  int64_t gemvPanel = 0;
  /// A GEMV whose B is row-major along n ([..., K, N] through `b.map`, an
  /// argument such as a KV cache), read in column blocks of gemvPanel.
  bool gemvRowMajor = false;
  /// A W4A16 GEMV (int4 set, gemvRowMajor): the code bytes, columns, each
  /// lane reads per row.
  int64_t int4Gemv = 0;
  /// An implicit GEMM's window (matchImplicitGemm): B is the image [batch,
  /// C, H, W] (unpadded) at (img, c, oh sh + kh dh - ph, ow sw + kw dw - pw),
  /// k = (c, kh, kw), n = (img, oh, ow).
  struct Window {
    int64_t C = 0, KH = 0, KW = 0, OH = 0, OW = 0;
    int64_t strides[2] = {1, 1}, dilations[2] = {1, 1}, pads[2] = {0, 0};
    /// A grouped convolution: the image is [batch, G, C, H, W], the group
    /// the GEMM's batch loop.
    bool grouped = false;
  };
  std::optional<Window> window;
  /// The accumulator's initial value when it is not zero (a bias broadcast
  /// over the output): computed per element and added after the K loop.
  linalg::GenericOp init;
  SmallVector<linalg::GenericOp> epilogue;
  SmallVector<Operation *> resultReshapes; // from the last value to the return
  /// The last value is returned transposed, after the reshapes (attention's
  /// context back from heads to [B, S, H, D]; a projection split into heads
  /// and transposed to them): result dimension d is the reshaped value's
  /// dimension resultPermutation[d]; stores go there, their indices carried
  /// through the reshapes. Empty for none.
  SmallVector<int64_t> resultPermutation;
  const MatrixInstruction *inst = nullptr;
  Type computeType; // element type in LDS and the instruction
  Type accType;     // f32 or i32
};

/// Follows collapse/expand_shape back to a function argument.
std::optional<Source> traceSource(Value value) {
  Source source;
  while (true) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (!isa<func::FuncOp>(arg.getOwner()->getParentOp()))
        return std::nullopt;
      source.arg = arg;
      std::reverse(source.reshapes.begin(), source.reshapes.end());
      return source;
    }
    Operation *def = value.getDefiningOp();
    if (!isa_and_nonnull<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
      return std::nullopt;
    source.reshapes.push_back(def);
    value = def->getOperand(0);
  }
}

/// Like traceSource, also through a linalg.transpose of an argument (a
/// weight kiln-transpose-matmul-weights stored k-fastest).
std::optional<Source> traceTransposed(Value value) {
  auto transpose = value.getDefiningOp<linalg::TransposeOp>();
  if (!transpose)
    return traceSource(value);
  std::optional<Source> source = traceSource(transpose.getInput());
  if (!source || !source->reshapes.empty())
    return std::nullopt;
  source->permutation.assign(transpose.getPermutation().begin(), transpose.getPermutation().end());
  return source;
}

/// Like traceSource, also through an elementwise extension of a narrower
/// float (a weight kiln-narrow-matmul-weights stored in f16 or bf16, read
/// through a cast), and reshapes after it (a grouped convolution's filter):
/// the kernel reads the narrow argument. Either may be transposed
/// (traceTransposed) where nothing is reshaped after it.
std::optional<Source> traceWidened(Value value) {
  SmallVector<Operation *> later; // reshapes after the extension, last first
  Value widened = value;
  while (isa_and_nonnull<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(widened.getDefiningOp())) {
    later.push_back(widened.getDefiningOp());
    widened = widened.getDefiningOp()->getOperand(0);
  }
  if (auto generic = widened.getDefiningOp<linalg::GenericOp>()) {
    Block *body = generic.getBody();
    if (generic.getNumDpsInputs() == 1 && generic.getNumDpsInits() == 1 &&
        llvm::all_of(generic.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }) &&
        body->getOperations().size() == 2) {
      auto ext = dyn_cast<arith::ExtFOp>(body->front());
      if (ext && ext.getIn() == body->getArgument(0) &&
          body->getTerminator()->getOperand(0) == ext.getResult()) {
        std::optional<Source> source = traceTransposed(generic.getDpsInputs()[0]);
        if (source && !source->permutation.empty() && !later.empty())
          return std::nullopt;
        if (source)
          source->reshapes.append(later.rbegin(), later.rend());
        return source;
      }
    }
  }
  return traceTransposed(value);
}

/// An operand that broadcasts an argument (Source::operandMap): a
/// linalg.transpose (optional) of a collapse_shape (optional) of a
/// linalg.generic that copies its one input, read through a projected
/// permutation, to more dimensions; the input an argument seen through
/// reshapes. Grouped-query attention's K (transposed) and V: heads [B, G,
/// S, D] repeated to [B, G, R, S, D] and collapsed to [B, G R, S, D], read
/// at head h as (h floordiv R).
std::optional<Source> traceBroadcast(Value value) {
  MLIRContext *ctx = value.getContext();
  unsigned rank = cast<RankedTensorType>(value.getType()).getRank();
  SmallVector<AffineExpr> idx; // indices into `value`, from operand dims
  for (unsigned d = 0; d < rank; ++d)
    idx.push_back(getAffineDimExpr(d, ctx));
  if (auto transpose = value.getDefiningOp<linalg::TransposeOp>()) {
    SmallVector<AffineExpr> input(idx.size());
    for (auto [d, p] : llvm::enumerate(transpose.getPermutation()))
      input[p] = idx[d];
    idx = std::move(input);
    value = transpose.getInput();
  }
  if (auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>()) {
    RankedTensorType src = collapse.getSrcType();
    if (!src.hasStaticShape())
      return std::nullopt;
    SmallVector<AffineExpr> expanded(src.getRank());
    for (auto [g, group] : llvm::enumerate(collapse.getReassociationIndices())) {
      AffineExpr rest = idx[g];
      for (size_t i = group.size(); i-- > 0;) {
        int64_t size = src.getDimSize(group[i]);
        expanded[group[i]] = i == 0 ? rest : rest % size;
        rest = rest.floorDiv(size);
      }
    }
    idx = std::move(expanded);
    value = collapse.getSrc();
  }
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return std::nullopt;
  Block *body = generic.getBody();
  AffineMap in = generic.getIndexingMapsArray()[0], out = generic.getIndexingMapsArray()[1];
  if (body->getOperations().size() != 1 ||
      body->getTerminator()->getOperand(0) != body->getArgument(0) || !out.isIdentity() ||
      !in.isProjectedPermutation() || in.getNumResults() >= in.getNumDims())
    return std::nullopt;
  std::optional<Source> source = traceSource(generic.getDpsInputs()[0]);
  if (!source)
    return std::nullopt;
  SmallVector<AffineExpr> argIdx;
  for (AffineExpr e : in.getResults())
    argIdx.push_back(idx[cast<AffineDimExpr>(e).getPosition()]);
  source->operandMap = simplifyAffineMap(AffineMap::get(rank, 0, argIdx, ctx));
  return source;
}

/// `map` (loops -> operand indices) as loops -> argument indices for
/// `source`'s permutation.
AffineMap throughPermutation(const Source &source, AffineMap map) {
  if (source.permutation.empty())
    return map;
  SmallVector<AffineExpr> results(map.getNumResults());
  for (auto [d, argDim] : llvm::enumerate(source.permutation))
    results[argDim] = map.getResult(d);
  return AffineMap::get(map.getNumDims(), map.getNumSymbols(), results, map.getContext());
}

/// Whether the contraction body extends block argument `index` as unsigned.
bool extendsUnsigned(linalg::LinalgOp op, unsigned index) {
  Value arg = op.getBlock()->getArgument(index);
  return llvm::any_of(arg.getUsers(), [](Operation *user) { return isa<arith::ExtUIOp>(user); });
}

std::optional<MatrixInput> matrixInputFor(Type a, Type b, gfx::Precision precision) {
  // An f32 operand with a 16-bit precision is staged in it: it may meet a
  // weight stored in that type (kiln-narrow-matmul-weights).
  MLIRContext *ctx = a.getContext();
  Type narrow = precision == gfx::Precision::F16    ? Type(Float16Type::get(ctx))
                : precision == gfx::Precision::BF16 ? Type(BFloat16Type::get(ctx))
                                                    : Type();
  if (narrow && a.isF32() && b == narrow)
    a = narrow;
  if (narrow && b.isF32() && a == narrow)
    b = narrow;
  if (a != b)
    return std::nullopt;
  if (a.isF16())
    return MatrixInput::F16;
  if (a.isBF16())
    return MatrixInput::BF16;
  if (a.isF32() && precision == gfx::Precision::F16)
    return MatrixInput::F16;
  if (a.isF32() && precision == gfx::Precision::BF16)
    return MatrixInput::BF16;
  if (a.isInteger(8))
    return MatrixInput::I8;
  if (a.isInteger(4))
    return MatrixInput::I4;
  // f32 at f32 precision: the f32 matrix instruction where the chip has
  // one (CDNA); elsewhere chooseInstruction finds none (the generic path).
  if (a.isF32() && precision == gfx::Precision::F32)
    return MatrixInput::F32;
  return std::nullopt;
}

/// Whether `generic` is elementwise over `shape` (all loops parallel,
/// identity output map, output value unused) with every input a function
/// argument seen through reshapes, a constant, or a value `carried` (the
/// contraction's result or an earlier epilogue value, read through an
/// identity map), and no values captured from above but constants: then
/// the GEMM kernel can evaluate it per output element.
/// A generic's payload reads nothing from outside but constants.
bool capturesNothing(linalg::GenericOp generic) {
  bool captures = false;
  generic.getRegion().walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      if (!generic.getRegion().isAncestor(operand.getParentRegion()) &&
          !operand.getDefiningOp<arith::ConstantOp>())
        captures = true;
  });
  return !captures;
}

/// A value the epilogue reads that the dispatch computes from arguments and
/// constants alone, elementwise over its own shape (a dynamic
/// quantization's per-channel products, kiln-form-dispatches'
/// epilogue-operands): the kernel evaluates it per output element.
bool isSideValue(Value value, int depth = 0) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || depth > 32 || generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !generic.getMatchingIndexingMap(generic.getDpsInitOperand(0)).isIdentity() ||
      !generic.getMatchingBlockArgument(generic.getDpsInitOperand(0)).use_empty() ||
      !capturesNothing(generic))
    return false;
  return llvm::all_of(generic.getDpsInputOperands(), [&](OpOperand *input) {
    return traceSource(input->get()) || input->get().getDefiningOp<arith::ConstantOp>() ||
           isSideValue(input->get(), depth + 1);
  });
}

bool isElementwiseOverOutput(linalg::GenericOp generic, ArrayRef<int64_t> shape,
                             const llvm::SetVector<Value> &carried) {
  if (generic.getNumDpsInits() != 1 || generic.getNumParallelLoops() != generic.getNumLoops() ||
      cast<RankedTensorType>(generic->getResult(0).getType()).getShape() != shape)
    return false;
  if (!generic.getMatchingIndexingMap(generic.getDpsInitOperand(0)).isIdentity() ||
      !generic.getMatchingBlockArgument(generic.getDpsInitOperand(0)).use_empty() ||
      carried.contains(generic.getDpsInitOperand(0)->get()))
    return false;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    if (carried.contains(input->get())) {
      if (!generic.getMatchingIndexingMap(input).isIdentity())
        return false;
    } else if (!traceSource(input->get()) && !input->get().getDefiningOp<arith::ConstantOp>() &&
               !isSideValue(input->get())) {
      return false;
    }
  }
  return capturesNothing(generic);
}

/// A and B of a two-input contraction: function arguments seen through
/// reshapes, with the contraction's maps and signedness; false otherwise.
bool traceOperands(linalg::LinalgOp op, GemmPlan &plan) {
  auto trace = [](Value operand) {
    std::optional<Source> source = traceWidened(operand);
    return source ? source : traceBroadcast(operand);
  };
  std::optional<Source> a = trace(op.getDpsInputs()[0]);
  std::optional<Source> b = trace(op.getDpsInputs()[1]);
  if (!a || !b)
    return false;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  a->map = throughPermutation(*a, maps[0]);
  b->map = throughPermutation(*b, maps[1]);
  for (Source *source : {&*a, &*b})
    if (source->operandMap)
      source->map = simplifyAffineMap(source->operandMap.compose(source->map));
  a->isUnsigned = extendsUnsigned(op, 0);
  b->isUnsigned = extendsUnsigned(op, 1);
  plan.a = *a;
  plan.b = *b;
  return true;
}

/// Rows a GEMV kernel takes at most: each lane keeps M accumulators of its
/// 16 bytes of a panel row (kiln-compile packs products of at most 8 rows
/// for gfx targets).
constexpr int64_t kMaxGemvRows = 8;

bool matchImplicitGemm(linalg::LinalgOp conv, GemmPlan &plan);
bool matchInt4Gemm(linalg::LinalgOp op, gfx::Precision precision, GemmPlan &plan);
bool matchW4A8Gemm(linalg::LinalgOp op, GemmPlan &plan);
bool matchPanelGemv(linalg::LinalgOp op, GemmPlan &plan);
void chooseRowMajorGemv(GemmPlan &plan);
std::optional<GemmPlan> finishPlan(func::FuncOp func, const gfx::Target &target,
                                   gfx::Precision precision, GemmPlan &plan);

/// Recognizes "one contraction + elementwise epilogue" in a dispatch
/// function on tensors; nullopt leaves it to the generic path.
std::optional<GemmPlan> matchGemm(func::FuncOp func, const gfx::Target &target,
                                  gfx::Precision precision) {
  GemmPlan plan;
  SmallVector<linalg::LinalgOp> contractions;
  bool other = false;
  func.walk([&](Operation *op) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      if (linalg::isaContractionOpInterface(linalgOp) ||
          isa<linalg::Conv2DNchwFchwOp, linalg::Conv2DNgchwGfchwOp>(op) ||
          op->hasAttr(kInt4MatmulAttr) || op->hasAttr(kPanelMatmulAttr))
        contractions.push_back(linalgOp);
      return;
    }
    if (op == func || isa<func::ReturnOp, tensor::EmptyOp, tensor::CollapseShapeOp,
                          tensor::ExpandShapeOp, tensor::PadOp, arith::ConstantOp>(op) ||
        op->getParentOfType<linalg::LinalgOp>() || op->getParentOfType<tensor::PadOp>())
      return;
    other = true;
  });
  if (contractions.size() != 1 || other)
    return std::nullopt;
  linalg::LinalgOp op = contractions.front();
  if (op->hasAttr(kInt4MatmulAttr)) {
    plan.contraction = op;
    if (op.getNumDpsInputs() == 5 ? !matchW4A8Gemm(op, plan)
                                  : !matchInt4Gemm(op, precision, plan))
      return std::nullopt;
    return finishPlan(func, target, precision, plan);
  }
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics())
    return std::nullopt;
  plan.contraction = op;
  if (op->hasAttr(kPanelMatmulAttr)) {
    if (!matchPanelGemv(op, plan))
      return std::nullopt;
    return finishPlan(func, target, precision, plan);
  }
  if (isa<linalg::Conv2DNchwFchwOp, linalg::Conv2DNgchwGfchwOp>(op.getOperation())) {
    if (!matchImplicitGemm(op, plan))
      return std::nullopt;
    return finishPlan(func, target, precision, plan);
  }
  FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
    return std::nullopt;
  plan.outMap = op.getIndexingMapsArray()[2];
  plan.bounds = op.getStaticLoopRanges();
  if (llvm::any_of(plan.bounds, ShapedType::isDynamic))
    return std::nullopt;
  // One m, n and k loop each; others of extent 1 (a 1x1 convolution's batch
  // of one image is an n loop) stay at 0.
  auto single = [&](ArrayRef<unsigned> loops) -> std::optional<unsigned> {
    std::optional<unsigned> chosen;
    for (unsigned d : loops) {
      if (plan.bounds[d] == 1)
        continue;
      if (chosen)
        return std::nullopt;
      chosen = d;
    }
    return chosen ? chosen : std::optional<unsigned>(loops.back());
  };
  std::optional<unsigned> m = single(dims->m), n = single(dims->n), k = single(dims->k);
  if (!m || !n || !k)
    return std::nullopt;
  plan.mDim = *m;
  plan.nDim = *n;
  plan.kDim = *k;
  plan.batchDims.assign(dims->batch.begin(), dims->batch.end());

  if (!traceOperands(op, plan))
    return std::nullopt;
  chooseRowMajorGemv(plan);
  return finishPlan(func, target, precision, plan);
}

/// A 2-D NCHW convolution as an implicit GEMM over virtual loops (m, n, k):
/// m = output channel, n = (image, output row, output column), k = (input
/// channel, kernel row, kernel column). A is the filter seen as
/// [F][C*KH*KW] (contiguous along k), B the image read through the
/// convolution's window (im2col on the fly, zeros in the padding).
///
/// A grouped one (linalg.conv_2d_ngchw_gfchw: [N, G, C, H, W] x [G, F, C,
/// KH, KW] -> [N, G, F, OH, OW], per group) adds a batch loop g (dim 3):
/// each group is its own GEMM, A the filter seen as [G][F][C*KH*KW].
bool matchImplicitGemm(linalg::LinalgOp conv, GemmPlan &plan) {
  bool grouped = isa<linalg::Conv2DNgchwGfchwOp>(conv.getOperation());
  auto inType = cast<RankedTensorType>(conv.getDpsInputs()[0].getType()); // padded
  auto filterType = cast<RankedTensorType>(conv.getDpsInputs()[1].getType());
  auto outType = cast<RankedTensorType>(conv.getDpsInits()[0].getType());
  if (!inType.hasStaticShape() || !filterType.hasStaticShape() || !outType.hasStaticShape())
    return false;
  auto attrValues = [&](StringRef name) {
    SmallVector<int64_t> values;
    if (auto attr = conv->getAttrOfType<DenseIntElementsAttr>(name))
      values.assign(attr.getValues<int64_t>().begin(), attr.getValues<int64_t>().end());
    return values;
  };
  SmallVector<int64_t> strides = attrValues("strides"), dilations = attrValues("dilations");
  if (strides.size() != 2 || dilations.size() != 2)
    return false;
  // Grouped shapes have G after the batch (image) and before the filter's F.
  int64_t g0 = grouped ? 1 : 0;
  int64_t batch = outType.getDimSize(0), G = grouped ? outType.getDimSize(1) : 1;
  int64_t F = outType.getDimSize(1 + g0);
  int64_t OH = outType.getDimSize(2 + g0), OW = outType.getDimSize(3 + g0);
  int64_t C = filterType.getDimSize(1 + g0), KH = filterType.getDimSize(2 + g0),
          KW = filterType.getDimSize(3 + g0);

  // The image: an argument, or a zero tensor.pad of one.
  Value image = conv.getDpsInputs()[0];
  SmallVector<int64_t> lowPad;
  if (auto pad = image.getDefiningOp<tensor::PadOp>()) {
    Value padValue = pad.getConstantPaddingValue();
    if (!padValue || !(matchPattern(padValue, m_AnyZeroFloat()) || matchPattern(padValue, m_Zero())))
      return false;
    if (llvm::any_of(pad.getStaticLow(), ShapedType::isDynamic))
      return false;
    lowPad.assign(pad.getStaticLow().begin(), pad.getStaticLow().end());
    image = pad.getSource();
  }
  std::optional<Source> a = traceWidened(conv.getDpsInputs()[1]);
  std::optional<Source> b = traceSource(image);
  if (!a || !b || !a->permutation.empty())
    return false;
  MLIRContext *ctx = conv.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx), g = getAffineDimExpr(3, ctx);
  AffineExpr img = n.floorDiv(OH * OW), oh = n.floorDiv(OW) % OH, ow = n % OW;
  AffineExpr c = k.floorDiv(KH * KW), kh = k.floorDiv(KW) % KH, kw = k % KW;
  AffineExpr ih = oh * strides[0] + kh * dilations[0], iw = ow * strides[1] + kw * dilations[1];
  unsigned dims = grouped ? 4 : 3;
  if (grouped) {
    a->collapse = {{0}, {1}, {2, 3, 4}};
    a->map = AffineMap::get(dims, 0, {g, m, k}, ctx);
    b->map = AffineMap::get(dims, 0, {img, g, c, ih, iw}, ctx);
    plan.outMap = AffineMap::get(dims, 0, {img, g, m, oh, ow}, ctx);
    plan.bounds = {F, batch * OH * OW, C * KH * KW, G};
    plan.batchDims = {3};
  } else {
    a->collapse = {{0}, {1, 2, 3}};
    a->map = AffineMap::get(dims, 0, {m, k}, ctx);
    b->map = AffineMap::get(dims, 0, {img, c, ih, iw}, ctx);
    plan.outMap = AffineMap::get(dims, 0, {img, m, oh, ow}, ctx);
    plan.bounds = {F, batch * OH * OW, C * KH * KW};
  }
  b->lowPad = lowPad;
  a->isUnsigned = extendsUnsigned(conv, 1);
  b->isUnsigned = extendsUnsigned(conv, 0);
  plan.a = *a;
  plan.b = *b;
  plan.mDim = 0;
  plan.nDim = 1;
  plan.kDim = 2;
  GemmPlan::Window window;
  window.C = C;
  window.KH = KH;
  window.KW = KW;
  window.OH = OH;
  window.OW = OW;
  window.grouped = grouped;
  for (int d = 0; d < 2; ++d) {
    window.strides[d] = strides[d];
    window.dilations[d] = dilations[d];
    window.pads[d] = lowPad.empty() ? 0 : lowPad[2 + g0 + d];
  }
  plan.window = window;
  return true;
}

/// A kiln.matmul_int4 generic as a GEMM over virtual loops (m, n, k = g G +
/// h G / 2 + j): A [M, K] (split into [M, K / G, 2, G / 2] in the generic)
/// traced to its argument, the weights' operands (arguments or constants)
/// stored in `slot`, the maps and bounds set.
bool planInt4Product(linalg::LinalgOp op, int64_t M, int64_t N, int64_t K, GemmPlan &plan,
                     std::optional<Int4Weights> &slot, const Int4Weights &weights) {
  std::optional<Source> a = traceSource(op.getDpsInputs()[0]);
  if (!a || a->reshapes.empty() || !isa<tensor::ExpandShapeOp>(a->reshapes.back()))
    return false;
  auto split = cast<tensor::ExpandShapeOp>(a->reshapes.back());
  if (split.getSrcType().getShape() != ArrayRef<int64_t>{M, K})
    return false;
  a->reshapes.pop_back();
  for (Value v : {weights.codes, weights.scale, weights.zero})
    if (!traceSource(v) && !v.getDefiningOp<arith::ConstantOp>())
      return false;
  MLIRContext *ctx = op.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  a->map = AffineMap::get(3, 0, {m, k}, ctx);
  plan.a = *a;
  // B's map says which loops it follows (k, then n, contiguous along n).
  plan.b.map = AffineMap::get(3, 0, {k, n}, ctx);
  slot = weights;
  plan.outMap = AffineMap::get(3, 0, {m, n}, ctx);
  plan.bounds = {M, N, K};
  plan.mDim = 0;
  plan.nDim = 1;
  plan.kDim = 2;
  return true;
}

/// kiln.matmul_int4's generic (loops m, n, g, h, j; A [M, K] seen as [M,
/// K / G, 2, G / 2]) as a GEMM over virtual loops (m, n, k = g G + h G / 2 +
/// j) whose B is dequantized while staged. Only with 16-bit activations (an
/// f16/bf16 model, or --precision=f16|bf16): W4A16. With f32 ones the
/// generic path keeps cpu's f32 arithmetic. At most kMaxGemvRows rows (a
/// decode step), with any float activations, make a GEMV kernel that
/// streams the codes in f32 arithmetic (GemmPlan::int4Gemv).
bool matchInt4Gemm(linalg::LinalgOp op, gfx::Precision precision, GemmPlan &plan) {
  if (op.getNumDpsInputs() != 4 || op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics())
    return false;
  auto xType = cast<RankedTensorType>(op.getDpsInputs()[0].getType());
  auto codesType = cast<RankedTensorType>(op.getDpsInputs()[1].getType());
  if (xType.getRank() != 4 || codesType.getRank() != 3 || !xType.hasStaticShape() ||
      !codesType.hasStaticShape())
    return false;
  Type elem = xType.getElementType();
  bool sixteen = elem.isF16() || elem.isBF16() ||
                 (elem.isF32() && precision != gfx::Precision::F32);
  int64_t M = xType.getDimSize(0), groups = codesType.getDimSize(0),
          half = codesType.getDimSize(1), N = codesType.getDimSize(2);
  bool gemv = M <= kMaxGemvRows && N % 4 == 0;
  if (!sixteen && !gemv)
    return false;
  if (!planInt4Product(op, M, N, groups * 2 * half, plan, plan.int4,
                       Int4Weights{op.getDpsInputs()[1], op.getDpsInputs()[2],
                                   op.getDpsInputs()[3], 2 * half}))
    return false;
  if (gemv) {
    // v columns per lane (16, 8 or 4 code bytes: fewer for more rows, whose
    // accumulators take 2 v VGPRs each), 8 lanes per row; fewer lanes (down
    // to 2) while the grid has under 128 panels.
    int64_t v = M <= 2 ? 16 : M <= 4 ? 8 : 4;
    while (N % v != 0)
      v /= 2;
    int64_t lanes = 8;
    while (lanes > 2 && N / (lanes * v) < 128)
      lanes /= 2;
    plan.gemvPanel = lanes * v;
    plan.gemvRowMajor = true;
    plan.int4Gemv = v;
  }
  return true;
}

/// kiln.matmul_int4's W4A8 generic (inputs x [M, K / G, 2, G / 2] f32,
/// codes in W4A8 panels [N / P, K / G, G / 8, P, 4], scales and zero points
/// [N / P, K / G, P], amax [M, K / G] from a generic of the same dispatch)
/// as a GEMM over virtual loops (m, n, k) on the int8 matrix cores. The
/// kernel computes each row's group maxima itself (the amax generic is left
/// out), so the value is the op's definition to the bit: the cpu kernel's.
bool matchW4A8Gemm(linalg::LinalgOp op, GemmPlan &plan) {
  if (op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics())
    return false;
  auto xType = cast<RankedTensorType>(op.getDpsInputs()[0].getType());
  auto codesType = cast<RankedTensorType>(op.getDpsInputs()[1].getType());
  auto scaleType = cast<RankedTensorType>(op.getDpsInputs()[2].getType());
  if (xType.getRank() != 4 || codesType.getRank() != 5 || !xType.hasStaticShape() ||
      !codesType.hasStaticShape() || !xType.getElementType().isF32() ||
      !scaleType.getElementType().isF32() || codesType.getDimSize(4) != 4)
    return false;
  if (!op.getDpsInputs()[4].getDefiningOp<linalg::GenericOp>())
    return false;
  int64_t M = xType.getDimSize(0), groups = codesType.getDimSize(1),
          half = xType.getDimSize(3), panel = codesType.getDimSize(3),
          N = codesType.getDimSize(0) * panel;
  if (panel % 4 != 0 || half % 4 != 0 ||
      cast<RankedTensorType>(op->getResult(0).getType()).getShape() != ArrayRef<int64_t>{M, N})
    return false;
  return planInt4Product(op, M, N, groups * 2 * half, plan, plan.w4a8,
                         Int4Weights{op.getDpsInputs()[1], op.getDpsInputs()[2],
                                     op.getDpsInputs()[3], 2 * half, panel});
}

/// kiln.matmul_panels' generic (out[m, n] += lhs[m, k] w[n / P, k, n mod
/// P], lhs [M, K] seen through its reshape, M <= kMaxGemvRows), float or
/// 8-bit: a GEMV kernel streams the panels.
bool matchPanelGemv(linalg::LinalgOp op, GemmPlan &plan) {
  auto lhsType = cast<RankedTensorType>(op.getDpsInputs()[0].getType());
  auto wType = cast<RankedTensorType>(op.getDpsInputs()[1].getType());
  if (lhsType.getRank() != 2 || wType.getRank() != 3 || !lhsType.hasStaticShape() ||
      !wType.hasStaticShape() || lhsType.getDimSize(0) > kMaxGemvRows)
    return false;
  if (!traceOperands(op, plan))
    return false;
  plan.outMap = op.getIndexingMapsArray()[2];
  plan.bounds = op.getStaticLoopRanges();
  plan.mDim = 0;
  plan.nDim = 1;
  plan.kDim = 2;
  plan.gemvPanel = wType.getDimSize(2);
  return true;
}

/// A GEMV's arithmetic: vector multiply-adds in f32 (exact products of
/// 16-bit floats) or i32 (8-bit operands, each extended by its signedness);
/// its panels are read in their own type.
bool chooseGemvTypes(GemmPlan &plan, Type aType, Type bType) {
  MLIRContext *ctx = aType.getContext();
  // (Float B may be narrower than A: a weight stored in f16 or bf16. f64
  // stays on the generic path: the accumulators are f32.)
  auto gemvFloat = [](Type t) { return t.isF32() || t.isF16() || t.isBF16(); };
  if (gemvFloat(aType) && gemvFloat(bType) && (aType == bType || aType.isF32()))
    plan.accType = Float32Type::get(ctx);
  else if (aType.isInteger(8) && bType.isInteger(8))
    plan.accType = IntegerType::get(ctx, 32);
  else
    return false;
  plan.computeType = bType;
  return true;
}

/// The matrix instruction for A and B of these types, and the types staged
/// in LDS and accumulated; false when the target has none.
bool chooseInstruction(GemmPlan &plan, const gfx::Target &target, gfx::Precision precision,
                       Type aType, Type bType, bool fourBitValues) {
  std::optional<MatrixInput> input = matrixInputFor(aType, bType, precision);
  if (!input)
    return false;
  // 8-bit operands whose values fit in 4 bits (kFourBitAttr: a QDQ int4
  // product): the 4-bit instruction where the chip has one, the staged
  // bytes packed into nibbles per fragment. Such values also fit signed
  // bytes: no sign flip on MFMA for an unsigned one.
  if (fourBitValues && *input == MatrixInput::I8 && target.gemmInstruction(MatrixInput::I4))
    input = MatrixInput::I4;
  plan.inst = target.gemmInstruction(*input);
  // 4-bit values are 8-bit values too: a chip without a 4-bit instruction
  // (CDNA, gfx1250) takes its 8-bit one, the operands extended to bytes as
  // they are staged (the staged type is i8 either way). Unsigned 4-bit
  // values (0..15) are non-negative int8 values: no sign flip on MFMA.
  bool widenedFourBit = false;
  if (!plan.inst && *input == MatrixInput::I4) {
    plan.inst = target.gemmInstruction(MatrixInput::I8);
    widenedFourBit = true;
    plan.a.fourBit = plan.b.fourBit = true;
  }
  if (!plan.inst)
    return false;
  // MFMA multiplies signed bytes only. One unsigned 8-bit operand (uint8
  // activations against int8 weights, as quantized models have them) is
  // staged as x - 128 and corrected in the kernel; its padding (an implicit
  // GEMM's) would have to be flipped too, which is not built.
  if (!plan.inst->wmma && !widenedFourBit && !fourBitValues &&
      (plan.a.isUnsigned || plan.b.isUnsigned)) {
    if (*input != MatrixInput::I8 || (plan.a.isUnsigned && plan.b.isUnsigned))
      return false;
    Source &flipped = plan.a.isUnsigned ? plan.a : plan.b;
    if (!flipped.lowPad.empty())
      return false;
    flipped.flipSign = true;
  }
  MLIRContext *ctx = aType.getContext();
  switch (*input) {
  case MatrixInput::F16:
    plan.computeType = Float16Type::get(ctx);
    plan.accType = Float32Type::get(ctx);
    break;
  case MatrixInput::BF16:
    plan.computeType = BFloat16Type::get(ctx);
    plan.accType = Float32Type::get(ctx);
    break;
  case MatrixInput::I8:
  case MatrixInput::I4:
    plan.computeType = IntegerType::get(ctx, 8); // i4 is narrowed per fragment
    plan.accType = IntegerType::get(ctx, 32);
    break;
  case MatrixInput::F32:
    plan.computeType = plan.accType = Float32Type::get(ctx);
    break;
  }
  return true;
}

/// Whether `map` indexes its operand by plain loop dims.
bool plainIndices(AffineMap map) {
  // A loop dim divided by a constant (a broadcast operand's repeated heads,
  // Source::operandMap) stays in bounds wherever the dim does.
  return llvm::all_of(map.getResults(), [](AffineExpr e) {
    auto div = dyn_cast<AffineBinaryOpExpr>(e);
    return isa<AffineDimExpr>(e) ||
           (div && div.getKind() == AffineExprKind::FloorDiv && isa<AffineDimExpr>(div.getLHS()) &&
            isa<AffineConstantExpr>(div.getRHS()));
  });
}

/// Whether `map` indexes its operand by plain loop dims, loop `dim` last
/// (the operand is contiguous along it).
bool contiguousAlong(AffineMap map, unsigned dim) {
  if (!plainIndices(map) || map.getNumResults() == 0)
    return false;
  auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
  return last && last.getPosition() == dim;
}

/// A contraction of at most kMaxGemvRows rows whose B is contiguous along n
/// (an attention product over a KV cache at a decode step: scores x V) is a
/// GEMV on B as it is, in column blocks of 8 lanes x 16 bytes (64 f16
/// columns, a 128-byte line per row): a matrix-core tile of 64 rows would
/// compute one. Needs plain indices and n columns in whole 16-byte chunks.
void chooseRowMajorGemv(GemmPlan &plan) {
  if (plan.bounds[plan.mDim] > kMaxGemvRows)
    return;
  Type bType = getElementTypeOrSelf(plan.b.arg.getType());
  if (!plainIndices(plan.a.map) || !contiguousAlong(plan.b.map, plan.nDim) ||
      !bType.isIntOrFloat() || bType.getIntOrFloatBitWidth() < 8)
    return;
  int64_t v = 128 / bType.getIntOrFloatBitWidth(), N = plan.bounds[plan.nDim];
  if (N % v != 0)
    return;
  plan.gemvPanel = std::min<int64_t>(8 * v, N);
  while (plan.gemvPanel % v != 0 || (8 * v) % plan.gemvPanel != 0)
    plan.gemvPanel -= v;
  plan.gemvRowMajor = true;
}

/// The accumulator's start, the instruction and the epilogue, common to
/// contractions and implicit GEMMs.
std::optional<GemmPlan> finishPlan(func::FuncOp func, const gfx::Target &target,
                                   gfx::Precision precision, GemmPlan &plan) {
  linalg::LinalgOp op = plan.contraction;

  // The accumulator starts at zero, or at an elementwise function of the
  // arguments (a bias), added after the K loop.
  Value initValue = op.getDpsInits()[0];
  if (auto fill = initValue.getDefiningOp<linalg::FillOp>()) {
    if (!(matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
          matchPattern(fill.getInputs()[0], m_Zero())))
      return std::nullopt;
  } else if (auto generic = initValue.getDefiningOp<linalg::GenericOp>()) {
    if (!generic->hasOneUse() ||
        !isElementwiseOverOutput(generic, cast<RankedTensorType>(initValue.getType()).getShape(),
                                 {}))
      return std::nullopt;
    plan.init = generic;
  } else {
    return std::nullopt;
  }

  // A W4A16 B is dequantized into A's type (then the compute type); W4A8
  // stages both as int8.
  Type aType = plan.w4a8 ? IntegerType::get(op.getContext(), 8)
                         : getElementTypeOrSelf(plan.a.arg.getType());
  Type bType = plan.int4 || plan.w4a8 ? aType : getElementTypeOrSelf(plan.b.arg.getType());
  if (!(plan.gemvPanel ? chooseGemvTypes(plan, aType, bType)
                       : chooseInstruction(plan, target, precision, aType, bType,
                                           op->hasAttr(kFourBitAttr))))
    return std::nullopt;
  Type resultType = getElementTypeOrSelf(op->getResult(0).getType());
  // (W4A8's i32 group sums become f32 as each group ends.)
  if (isa<IntegerType>(plan.accType) != isa<IntegerType>(resultType) && !plan.w4a8)
    return std::nullopt;

  // The epilogue: elementwise generics over the contraction's output space
  // that read its result or earlier epilogue values through identity maps
  // (a chain, or a graph: SiLU's x * sigmoid(x) reads x twice), in program
  // order; every value but the last is read by epilogue generics only.
  Value value = op->getResult(0);
  auto outputType = cast<RankedTensorType>(value.getType());
  llvm::SetVector<Value> carried;
  carried.insert(value);
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode()) {
    auto generic = dyn_cast<linalg::GenericOp>(next);
    if (!generic || llvm::none_of(generic->getOperands(),
                                  [&](Value v) { return carried.contains(v); }))
      continue;
    if (!isElementwiseOverOutput(generic, outputType.getShape(), carried))
      return std::nullopt;
    plan.epilogue.push_back(generic);
    carried.insert(generic->getResult(0));
  }
  value = carried.back();
  for (Value v : carried)
    if (v != value && llvm::any_of(v.getUsers(), [&](Operation *user) {
          return !llvm::is_contained(plan.epilogue, user);
        }))
      return std::nullopt;
  // The last value reaches the return through reshapes only, or through
  // one transpose alone.
  while (value.hasOneUse()) {
    Operation *user = *value.getUsers().begin();
    if (isa<func::ReturnOp>(user))
      return func.getNumResults() == 1 ? std::optional<GemmPlan>(plan) : std::nullopt;
    if (auto transpose = dyn_cast<linalg::TransposeOp>(user);
        transpose && plan.resultPermutation.empty() && value == transpose.getInput()) {
      plan.resultPermutation.assign(transpose.getPermutation().begin(),
                                    transpose.getPermutation().end());
      value = transpose->getResult(0);
      if (!value.hasOneUse() || !isa<func::ReturnOp>(*value.getUsers().begin()))
        return std::nullopt;
      continue;
    }
    if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user))
      return std::nullopt;
    plan.resultReshapes.push_back(user);
    value = user->getResult(0);
  }
  return std::nullopt;
}

/// Wiring bugs the builder can be told to make, so that tests can prove the
/// emulation catches them (never used outside tests).
enum class Fault { None, SwapOperands, ShiftLanes, WindowTaps };

/// The shape of one kernel: the workgroup's waves and tiles, from the target
/// table's tiling and its instruction's m, n and k.
struct KernelShape {
  int64_t wavesM, wavesN, waveTilesM, waveTilesN;
  int64_t threads;      // waves * wave size
  int64_t waveM, waveN; // output rows / columns per wave
  int64_t tileM, tileN; // output rows / columns per workgroup
  int64_t kt;           // K per step: the instructions of a step
  int64_t ldsBytes;     // two pairs of A and B panels
  gfx::StepSchedule schedule; // how a step's instructions are ordered
  bool loadAhead;             // global loads two steps ahead

  KernelShape(const gfx::Target &target, const gfx::GemmTiling &tiling,
              const MatrixInstruction &inst, Type computeType)
      : wavesM(tiling.wavesM), wavesN(tiling.wavesN), waveTilesM(tiling.waveTilesM),
        waveTilesN(tiling.waveTilesN), threads(wavesM * wavesN * target.waveSize),
        waveM(waveTilesM * inst.m), waveN(waveTilesN * inst.n), tileM(wavesM * waveM),
        tileN(wavesN * waveN), kt(tiling.stepInstructions * inst.k),
        ldsBytes(2 * (tileM + tileN) * kt * (computeType.getIntOrFloatBitWidth() / 8)),
        schedule(computeType.getIntOrFloatBitWidth() >= 16 ? tiling.schedule16
                                                           : tiling.schedule8),
        loadAhead(computeType.getIntOrFloatBitWidth() >= 16 ? tiling.loadAhead16
                                                            : tiling.loadAhead8) {}
};

/// What the GEMM and GEMV kernels share: index arithmetic over the plan's
/// loops, the dispatch's tensors as memrefs, and the elementwise epilogue
/// of one output element.
class KernelBase {
protected:
  KernelBase(OpBuilder &b, Location loc, const GemmPlan &plan) : b(b), loc(loc), plan(plan) {}

  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value apply(AffineExpr e, ValueRange operands) {
    return affine::AffineApplyOp::create(b, loc, AffineMap::get(operands.size(), 0, e),
                                         operands);
  }
  /// Operand indices of `map` at the given loop values (null = 0).
  SmallVector<Value> indices(AffineMap map, ArrayRef<Value> loops) {
    SmallVector<Value> operands;
    for (Value v : loops)
      operands.push_back(v ? v : c(0));
    SmallVector<Value> out;
    for (AffineExpr e : map.getResults())
      out.push_back(affine::AffineApplyOp::create(b, loc, AffineMap::get(map.getNumDims(), 0, e),
                                                  operands));
    return out;
  }
  Value cmpLt(Value x, int64_t bound) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, c(bound));
  }
  /// The loop values of the contraction at (m, n, k) in this workgroup's
  /// batch (null = 0).
  SmallVector<Value> loopValues(Value m, Value n, Value k) {
    SmallVector<Value> loops(plan.bounds.size());
    for (auto [d, v] : llvm::zip(plan.batchDims, batchIdx))
      loops[d] = v;
    loops[plan.mDim] = m;
    loops[plan.nDim] = n;
    loops[plan.kDim] = k;
    return loops;
  }
  /// `value` where `condition` holds, else zeros.
  Value zeroUnless(Value condition, Value value) {
    return arith::SelectOp::create(
        b, loc, condition, value,
        arith::ConstantOp::create(b, loc, value.getType(), b.getZeroAttr(value.getType())));
  }
  /// A tensor of the dispatch as a memref: a function argument seen
  /// through reshapes, or a constant the dispatch holds (a bias, W4A16
  /// scales), bufferized into a global later.
  Value memrefOf(Value v, ArrayRef<Value> args) {
    if (auto cst = v.getDefiningOp<arith::ConstantOp>()) {
      auto type = cast<RankedTensorType>(cst.getType());
      return bufferization::ToBufferOp::create(
          b, loc, MemRefType::get(type.getShape(), type.getElementType()),
          b.clone(*cst)->getResult(0), /*read_only=*/b.getUnitAttr());
    }
    std::optional<Source> src = traceSource(v);
    return reshapeMemref(b, loc, args[src->arg.getArgNumber()], src->reshapes);
  }
  /// An elementwise generic of the dispatch at output element `outIdx`:
  /// its inputs loaded from the arguments, or taken from `values` (the
  /// contraction's and earlier epilogue generics' values there).
  Value evaluate(linalg::GenericOp generic, const DenseMap<Value, Value> &values,
                 ArrayRef<Value> outIdx, ArrayRef<Value> args);
  /// Output element (m, n): the contraction's sum `value` (in the
  /// accumulator's type) plus the accumulator's start, through the
  /// dispatch's elementwise ops, stored.
  void storeElement(Value value, Value m, Value n, ArrayRef<Value> args, Value output);

  OpBuilder &b;
  Location loc;
  const GemmPlan &plan;
  /// This workgroup's batch indices.
  SmallVector<Value> batchIdx;
};

/// Builds the matrix-core kernel of a GemmPlan into a function body on
/// memrefs: `plan` (set-up), then `mainLoop` (its prologue, `loadStep`,
/// `multiplyStep` and `storeStep`) and `epilogue`.
class KernelBuilder : KernelBase {
public:
  KernelBuilder(OpBuilder &b, Location loc, const GemmPlan &plan, const gfx::Target &target,
                const KernelShape &shape, Fault fault)
      : KernelBase(b, loc, plan), inst(*plan.inst), shape(shape), waveSize(target.waveSize),
        fault(fault) {}

  /// Builds the kernel; `workgroups` receives its workgroup count.
  void build(ArrayRef<Value> args, Value output, int64_t &workgroups);

private:
  /// Vector width along the operand's contiguous dimension `dim` (a loop
  /// dim), or 1 when the operand's innermost index is not that loop.
  int64_t vectorWidth(const Source &src, unsigned dim, Type elem, int64_t tileExtent) {
    AffineMap map = src.map;
    if (map.getNumResults() == 0)
      return 1;
    auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (!last || last.getPosition() != dim)
      return 1;
    // Sub-byte elements are one per byte in memory (as LLVM stores a
    // scalar i4), but packed in a vector: load them one at a time.
    if (elem.getIntOrFloatBitWidth() < 8)
      return 1;
    int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
    int64_t v = std::min<int64_t>(16 / bytes, tileExtent);
    while (v > 1 && plan.bounds[dim] % v != 0)
      v /= 2;
    return v;
  }

  /// The conjunction of `conditions` (null entries left out), or null when
  /// there are none: every index is in bounds by construction.
  Value allOf(ArrayRef<Value> conditions) {
    Value all;
    for (Value c : conditions)
      if (c)
        all = all ? Value(arith::AndIOp::create(b, loc, all, c)) : c;
    return all;
  }

  /// Loads `v` elements of `src` (starting at loop values `loops`, along
  /// loop dim `along`) as a vector of the compute type, zeros when
  /// `inBounds` (null: always in bounds) is false.
  ///
  /// With `mask`, a branch-free load leaves the zeroing to the caller: the
  /// condition goes to *mask (null: nothing to zero), so that the select,
  /// which waits for the load, can be placed where the value is used.
  Value loadChunk(Value memref, const Source &src, SmallVector<Value> loops, Value inBounds,
                  int64_t v, Value *mask = nullptr) {
    auto memrefType = cast<MemRefType>(memref.getType());
    Type elem = memrefType.getElementType();
    auto vecType = VectorType::get({v}, elem);
    // An operand indexed by plain loop dims (no padding, no window) loads
    // without a branch: each index clamped into the operand (a chunk of v
    // starts at a multiple of v, and v divides the dimension), then zeros
    // selected where the chunk is out of bounds. Branches around the loads
    // kept LLVM from scheduling the main loop across them.
    if (src.lowPad.empty() && plainIndices(src.map)) {
      SmallVector<Value> idx = indices(src.map, loops);
      Value value;
      if (bufferLoads(memrefType)) {
        // A buffer load: past the end of the operand it reads zeros (no
        // clamp needed), and only vmcnt counts it.
        SmallVector<Value> i32;
        for (Value i : idx)
          i32.push_back(arith::IndexCastOp::create(b, loc, b.getI32Type(), i));
        value = amdgpu::RawBufferLoadOp::create(b, loc, v == 1 ? elem : Type(vecType), memref,
                                                i32, true, nullptr, nullptr);
        if (v == 1)
          value = vector::BroadcastOp::create(b, loc, vecType, value);
      } else {
        if (inBounds)
          for (size_t d = 0; d < idx.size(); ++d) {
            int64_t last = memrefType.getDimSize(d) - (d + 1 == idx.size() ? v : 1);
            idx[d] = arith::MinUIOp::create(b, loc, idx[d], c(std::max<int64_t>(0, last)));
          }
        value = v == 1 ? Value(vector::BroadcastOp::create(
                             b, loc, vecType, memref::LoadOp::create(b, loc, memref, idx)))
                       : Value(vector::LoadOp::create(b, loc, vecType, memref, idx));
      }
      value = flipSignBits(src, value, vecType);
      // A step's chunks (`mask` given) of a float wider than the compute
      // type stay as loaded: storeStep converts them where they are stored,
      // so that the conversion, which waits for the load, comes after the
      // step's multiplies (the LLaMA-style prefill's f32 activations on
      // gfx942: the loop waited 46 cycles for loads issued 35 instructions
      // before).
      if (!(mask && deferredConversion(elem)))
        value = toComputeType(src, value, elem, v);
      if (mask)
        *mask = inBounds;
      else if (inBounds)
        value = zeroUnless(inBounds, value);
      return value;
    }
    if (!inBounds)
      inBounds = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    // Indices into a padded operand: shifted back, and in the padding
    // (negative, or past the end) the chunk is zero.
    SmallVector<Value> padded;
    if (!src.lowPad.empty()) {
      padded = indices(src.map, loops);
      for (auto [d, low] : llvm::enumerate(src.lowPad)) {
        if (low != 0)
          padded[d] = arith::SubIOp::create(b, loc, padded[d], c(low));
        inBounds = arith::AndIOp::create(b, loc, inBounds,
                                         cmpLt(padded[d], memrefType.getDimSize(d)));
      }
    }
    SmallVector<Value> idx = src.lowPad.empty() ? indices(src.map, loops) : padded;
    if (bufferLoads(memrefType)) {
      // A gathered chunk (an implicit GEMM's window, zeros in the padding)
      // without a branch: out of bounds, the indices move to one past the
      // operand's last element, where a buffer load reads zeros. A branch
      // per chunk made each load wait for the one before (16 round trips
      // to memory per K step of a 3x3 convolution).
      SmallVector<Value> i32;
      for (auto [d, i] : llvm::enumerate(idx)) {
        Value past = c(d == 0 ? memrefType.getDimSize(0) : 0);
        Value at = arith::SelectOp::create(b, loc, inBounds, i, past);
        i32.push_back(arith::IndexCastOp::create(b, loc, b.getI32Type(), at));
      }
      Value value = amdgpu::RawBufferLoadOp::create(b, loc, v == 1 ? elem : Type(vecType), memref,
                                                    i32, true, nullptr, nullptr);
      if (v == 1)
        value = vector::BroadcastOp::create(b, loc, vecType, value);
      return toComputeType(src, flipSignBits(src, value, vecType), elem, v);
    }
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{vecType}, inBounds, true, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value value;
      if (v == 1) {
        Value scalar = memref::LoadOp::create(b, loc, memref, idx);
        value = vector::BroadcastOp::create(b, loc, vecType, scalar);
      } else {
        value = vector::LoadOp::create(b, loc, vecType, memref, idx);
      }
      value = flipSignBits(src, value, vecType);
      scf::YieldOp::create(b, loc, value);
      b.setInsertionPointToStart(ifOp.elseBlock());
      Value zero = arith::ConstantOp::create(b, loc, vecType, b.getZeroAttr(vecType));
      scf::YieldOp::create(b, loc, zero);
    }
    return toComputeType(src, ifOp.getResult(0), elem, v);
  }

  /// Whether a step's chunks of `elem` are converted to the compute type
  /// where storeStep stores them rather than where they are loaded.
  bool deferredConversion(Type elem) const {
    return !plan.w4a8 && isa<FloatType>(elem) && elem != plan.computeType;
  }

  /// Whether operand loads from `type` are buffer loads (MUBUF): when the
  /// operand's bytes fit a buffer's 32-bit offsets. A load past the end then
  /// reads zeros instead of faulting, so no index is clamped, and the wave
  /// counts it on vmcnt only: LLVM's machine model (llvm-mca) counts a
  /// global_load on lgkmcnt too, as a FLAT access that might reach LDS, so
  /// an LDS wait after it waited for it (63 cycles per step on gfx950).
  bool bufferLoads(MemRefType type) const {
    if (!type.hasStaticShape())
      return false;
    int64_t bytes = type.getNumElements() * (type.getElementTypeBitWidth() / 8);
    return bytes < (int64_t(1) << 31);
  }

  /// uint8 x as the int8 x - 128 (a loaded chunk of `src`).
  Value flipSignBits(const Source &src, Value value, VectorType vecType) {
    if (!src.flipSign)
      return value;
    // Out of bounds stays 0: the other operand is 0 there too (k past K),
    // or the row is not stored. Four bytes per 32-bit XOR (LLVM leaves a
    // byte vector's XOR byte by byte).
    int64_t v = vecType.getNumElements();
    Type flipType = vecType;
    if (v % 4 == 0) {
      flipType = VectorType::get({v / 4}, b.getI32Type());
      value = vector::BitCastOp::create(b, loc, flipType, value);
    }
    Type lane = getElementTypeOrSelf(flipType);
    auto signBits = DenseElementsAttr::get(
        cast<ShapedType>(flipType), APInt::getSplat(lane.getIntOrFloatBitWidth(), APInt(8, 0x80)));
    value = arith::XOrIOp::create(b, loc, value,
                                  arith::ConstantOp::create(b, loc, flipType, signBits));
    if (flipType != vecType)
      value = vector::BitCastOp::create(b, loc, vecType, value);
    return value;
  }

  /// A loaded chunk of `elem` converted to the compute type (W4A8's f32
  /// activations stay f32 until storeW4A8Step quantizes them).
  Value toComputeType(const Source &src, Value value, Type elem, int64_t v) {
    Type ct = plan.computeType;
    if (plan.w4a8)
      return value;
    if (src.fourBit && elem.getIntOrFloatBitWidth() == 8) {
      // Each byte's low four bits, zero- or sign-extended; four bytes per
      // 32-bit word where the chunk has whole words: x = w & 0x0F0F0F0F,
      // then the sign bit (8) times 0x1E sets the high nibble (8 * 30 =
      // 0xF0, no carry between bytes). Bytes shifted one at a time cost
      // LLVM two 16-bit shifts each.
      auto vecType = cast<VectorType>(value.getType());
      Type lane = b.getI8Type();
      Value x = value;
      if (v % 4 == 0) {
        lane = b.getI32Type();
        x = vector::BitCastOp::create(b, loc, VectorType::get({v / 4}, lane), value);
      }
      auto laneType = cast<VectorType>(x.getType());
      auto splat = [&](uint32_t bytePattern) {
        APInt bits = APInt::getSplat(lane.getIntOrFloatBitWidth(), APInt(8, bytePattern));
        return arith::ConstantOp::create(b, loc, laneType, DenseElementsAttr::get(laneType, bits));
      };
      x = arith::AndIOp::create(b, loc, x, splat(0x0F));
      if (!src.isUnsigned) {
        Value sign = arith::AndIOp::create(b, loc, x, splat(0x08));
        Value times30 = arith::ConstantOp::create(
            b, loc, laneType,
            DenseElementsAttr::get(laneType, APInt(lane.getIntOrFloatBitWidth(), 0x1E)));
        x = arith::OrIOp::create(b, loc, x, arith::MulIOp::create(b, loc, sign, times30));
      }
      return x.getType() == vecType ? x : Value(vector::BitCastOp::create(b, loc, vecType, x));
    }
    if (elem != ct) {
      auto ctType = VectorType::get({v}, ct);
      if (isa<FloatType>(elem))
        value = arith::TruncFOp::create(b, loc, ctType, value);
      else if (elem.getIntOrFloatBitWidth() < ct.getIntOrFloatBitWidth())
        value = src.isUnsigned ? Value(arith::ExtUIOp::create(b, loc, ctType, value))
                               : Value(arith::ExtSIOp::create(b, loc, ctType, value));
    }
    return value;
  }

  /// `v` dequantized int4 weights of a W4A16 B at row `k`, columns `n`..
  /// (code - zero) * scale in the scales' type (as the cpu's kernel
  /// computes them), then rounded to the compute type; zeros out of bounds.
  Value loadInt4Chunk(Value n, Value k, Value inBounds, int64_t v) {
    auto outType = VectorType::get({v}, plan.computeType);
    if (!inBounds)
      inBounds = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{outType}, inBounds, true, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      AffineExpr d0 = b.getAffineDimExpr(0);
      int64_t group = plan.int4->group, half = group / 2;
      Value g = apply(d0.floorDiv(group), {k});
      Value h = apply((d0 % group).floorDiv(half), {k});
      Value j = apply(d0 % half, {k});
      Type i32 = b.getI32Type();
      auto wide = VectorType::get({v}, i32);
      Value bytes = vector::LoadOp::create(b, loc, VectorType::get({v}, b.getI8Type()), bMem,
                                           ValueRange{g, j, n});
      Value shift = arith::MulIOp::create(
          b, loc, arith::IndexCastOp::create(b, loc, i32, h),
          arith::ConstantIntOp::create(b, loc, i32, 4));
      Value code = arith::AndIOp::create(
          b, loc,
          arith::ShRUIOp::create(b, loc, arith::ExtUIOp::create(b, loc, wide, bytes),
                                 vector::BroadcastOp::create(b, loc, wide, shift)),
          arith::ConstantOp::create(b, loc, wide, DenseElementsAttr::get(wide, APInt(32, 15))));
      Type paramType = cast<MemRefType>(scaleMem.getType()).getElementType();
      auto paramVec = VectorType::get({v}, paramType);
      Value scale = vector::LoadOp::create(b, loc, paramVec, scaleMem, ValueRange{g, n});
      Value zero = vector::LoadOp::create(b, loc, paramVec, zeroMem, ValueRange{g, n});
      Value w = arith::MulFOp::create(
          b, loc,
          arith::SubFOp::create(b, loc, arith::SIToFPOp::create(b, loc, paramVec, code), zero),
          scale);
      if (paramType != plan.computeType)
        w = arith::TruncFOp::create(b, loc, outType, w);
      scf::YieldOp::create(b, loc, w);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, loc,
                           Value(arith::ConstantOp::create(b, loc, outType, b.getZeroAttr(outType))));
    }
    return ifOp.getResult(0);
  }

  /// One lane's operand fragment from an LDS panel [rows][KT]: row `row`,
  /// k offset `k0` + the layout's k of each element.
  /// Where element k of panel row `row` lives: the panels are XOR-swizzled
  /// in 16-byte granules (swizzleGranule elements), granule g of row r at
  /// g ^ (((r >> 1) ^ (r >> 3)) % swizzleGroups). Unswizzled, panel rows 64
  /// bytes apart all start in bank 0 or 16: the 16 lanes that read 8 bytes
  /// of 16 consecutive rows at the same k (one LDS phase on CDNA) met 8-way
  /// bank conflicts, and so did the transposing B stores, whose lanes write
  /// rows 8 apart (kiln-run --emu-stats). r >> 1 spreads consecutive rows,
  /// r >> 3 rows 8 apart: 2-way for both. Every store and read stays inside
  /// one granule, so the accesses keep their width. Unswizzled (granule 0)
  /// where a read is wider than a granule (RDNA3's 32-byte fragments).
  Value swizzled(Value row, Value k) {
    if (swizzleGranule == 0)
      return k;
    Value spread = arith::XOrIOp::create(b, loc, arith::ShRUIOp::create(b, loc, row, c(1)),
                                         arith::ShRUIOp::create(b, loc, row, c(3)));
    Value group = arith::AndIOp::create(b, loc, spread, c(swizzleGroups - 1));
    return arith::XOrIOp::create(b, loc, k,
                                 arith::MulIOp::create(b, loc, group, c(swizzleGranule)));
  }

  Value fragment(Value lds, Value row, Value k0) {
    SmallVector<Value> chunks;
    int64_t chunks_n = inst.perLane / inst.kChunk;
    auto chunkType = VectorType::get({inst.kChunk}, plan.computeType);
    for (int64_t ch = 0; ch < chunks_n; ++ch) {
      Value k = apply(b.getAffineDimExpr(0) + b.getAffineDimExpr(1) * inst.kGroupStride +
                          ch * inst.kBlockStride,
                      {k0, group});
      chunks.push_back(
          vector::LoadOp::create(b, loc, chunkType, lds, ValueRange{row, swizzled(row, k)}));
    }
    // Concatenate with shuffles (convert-gpu-to-rocdl lowers those, not
    // strided slices).
    while (chunks.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < chunks.size(); i += 2) {
        int64_t n = cast<VectorType>(chunks[i].getType()).getNumElements();
        SmallVector<int64_t> mask(2 * n);
        std::iota(mask.begin(), mask.end(), 0);
        next.push_back(vector::ShuffleOp::create(b, loc, chunks[i], chunks[i + 1], mask));
      }
      chunks = next;
    }
    Value frag = chunks.front();
    if (inst.input == MatrixInput::I4)
      frag = packNibbles(frag);
    return frag;
  }

  /// int8 values (in -8..7, or 0..15) -> the packed vector<N x i4> operand:
  /// element i in bits 4 * (i % 8) of 32-bit register i / 8. Four bytes at
  /// a time: their low nibbles masked, each OR-ed with itself shifted right
  /// by 4 (bytes 0 and 2 of a word then hold nibble pairs), and every other
  /// byte kept (a byte shuffle, v_perm_b32). A plain trunci to vector<N x i4>
  /// goes through scratch; element by element shifts and ors cost 4 per
  /// nibble and spilled 4-bit tiles on gfx1201.
  Value packNibbles(Value bytes) {
    int64_t n = inst.perLane;
    auto words = VectorType::get({n / 4}, b.getI32Type());
    Value w = vector::BitCastOp::create(b, loc, words, bytes);
    auto splat = [&](uint32_t v) {
      return arith::ConstantOp::create(b, loc, words,
                                       DenseElementsAttr::get(words, APInt(32, v)));
    };
    w = arith::AndIOp::create(b, loc, w, splat(0x0F0F0F0F));
    w = arith::OrIOp::create(b, loc, w, arith::ShRUIOp::create(b, loc, w, splat(4)));
    Value merged = vector::BitCastOp::create(b, loc, VectorType::get({n}, b.getI8Type()), w);
    SmallVector<int64_t> even;
    for (int64_t i = 0; i < n; i += 2)
      even.push_back(i);
    Value packed = vector::ShuffleOp::create(b, loc, merged, merged, even);
    return vector::BitCastOp::create(b, loc, VectorType::get({n}, b.getIntegerType(4)), packed);
  }

  Value multiply(Value a, Value bv, Value acc) {
    if (fault == Fault::SwapOperands)
      std::swap(a, bv);
    // One element per lane (v_mfma_f32_16x16x4_f32): amdgpu.mfma takes it
    // as a scalar.
    if (!inst.wmma && inst.perLane == 1) {
      a = vector::ExtractOp::create(b, loc, a, ArrayRef<int64_t>{0});
      bv = vector::ExtractOp::create(b, loc, bv, ArrayRef<int64_t>{0});
    }
    if (inst.wmma)
      return amdgpu::WMMAOp::create(b, loc, acc.getType(), inst.m, inst.n, inst.k, a, bv, acc,
                                    /*subwordOffset=*/0, plan.a.isUnsigned, plan.b.isUnsigned);
    return amdgpu::MFMAOp::create(b, loc, acc.getType(), inst.m, inst.n, inst.k,
                                  /*blocks=*/1, a, bv, acc);
  }

  /// The correction accumulators of a flipped operand: with A staged as
  /// A - 128, sum_k A B = sum_k (A - 128) B + 128 sum_k B, and the second
  /// term is an instruction of B's fragment against a fragment of -128s,
  /// whose result (the same in every row of the tile) is subtracted in the
  /// epilogue: one per B tile (per A tile when B is the flipped one).
  int64_t corrections() const {
    return plan.a.flipSign ? shape.waveTilesN : plan.b.flipSign ? shape.waveTilesM : 0;
  }
  /// The correction of accumulator tile (tm, tn) among the loop values, or
  /// -1 for none.
  int64_t correctionIndex(int64_t tm, int64_t tn) const {
    int64_t tiles = shape.waveTilesM * shape.waveTilesN;
    return plan.a.flipSign ? tiles + tn : plan.b.flipSign ? tiles + tm : -1;
  }

  // The steps of `build`, in order.
  void createPanels(ArrayRef<Value> args);
  void createIds();
  void planStaging();
  /// A's chunk j of the step at `k0`, its zeroing left to the caller
  /// (*mask, as loadChunk); *kOut receives its k.
  Value loadAChunk(int64_t j, Value k0, Value *mask, Value *kOut = nullptr);
  SmallVector<Value> loadStep(Value k0);
  /// An implicit GEMM's B through a table of its window (windowTable),
  /// when every thread's B chunks are single elements in rows the same
  /// across its wave; else nothing is planned and loadChunk gathers them.
  void planWindowTable();
  /// The B chunks of the step at `k0` through the window table, in the
  /// image's element type (storeStep converts them).
  SmallVector<Value> loadWindowStep(Value k0);
  void storeStep(ArrayRef<Value> values, int buffer);
  scf::ForOp mainLoop();
  void multiplyStep(int buffer, MutableArrayRef<Value> acc, Value k0);
  void scheduleStep();
  SmallVector<Value> transposeBytes(ArrayRef<Value> rows);
  void epilogue(scf::ForOp loop, ArrayRef<Value> args, Value output);

  // W4A8 (GemmPlan::w4a8).
  int64_t quantGroup() const { return plan.w4a8->group; }
  int64_t quantGroups() const { return K / plan.w4a8->group; }
  /// Before the main loop: each of the tile's rows' largest magnitude per
  /// group, as 127 / amax and amax / 127 in LDS.
  void quantizationScales();
  SmallVector<Value> loadW4A8Step(Value k0);
  void storeW4A8Step(ArrayRef<Value> loaded, int buffer);
  /// Adds each accumulator tile's group sums (i32, group `qg`) to its f32
  /// sums, scaled, and zeroes them; `guarded`: only when qg < K / G.
  void flushGroup(MutableArrayRef<Value> acc, Value qg, bool guarded);
  /// Groups shorter than the instruction's k: per group of an
  /// instruction's k range, which of this lane's A elements lie in it
  /// (kOf of the lane layout); computed once, before the main loop.
  void createPartMasks();
  SmallVector<Value> partMasks;

  const MatrixInstruction &inst;
  const KernelShape &shape;
  int64_t waveSize;
  Fault fault;

  int64_t M = 0, N = 0, K = 0;
  int64_t batches = 1, tilesM = 0, tilesN = 0;
  /// The operands as memrefs; two pairs of LDS panels, k fastest: A
  /// [tileM][KT], B [tileN][KT].
  Value aMem, bMem, aLds[2], bLds[2];
  /// A W4A16 B's scales and zero points ([K / G, N]; bMem holds its codes),
  /// or W4A8's ([N / P, K / G, P]).
  Value scaleMem, zeroMem;
  /// W4A8: per tile row and group, 127 / amax and amax / 127 (f32, [tileM][K
  /// / G]).
  Value invLds, ascaleLds;
  /// The origin of this workgroup's output tile; this thread's wave
  /// position and lane within the wave.
  Value tid, m0, n0, waveM, waveN, laneInGroup, group;

  /// Staging: one K step's A and B chunks, loaded from global memory (zeros
  /// past the edges), then stored to a pair of panels. This thread's chunks
  /// depend on its id only: computed once, used by every step.
  struct Chunk {
    Value chunk, row, col; // row/col in the panel (B: k/n when along n)
  };
  int64_t va = 1, vb = 1;
  bool bAlongN = false;
  /// B chunks loaded along n cover `bRows` consecutive k rows, so that the
  /// transposed panel [n][k] is written 32 bits (bRows elements of k) per
  /// store instead of one element.
  int64_t bRows = 1;
  /// The panels' XOR swizzle (swizzled()): granule in elements (0: none)
  /// and granules per panel row.
  int64_t swizzleGranule = 0, swizzleGroups = 0;
  int64_t aChunks = 0, bChunks = 0, aPerThread = 0, bPerThread = 0;
  SmallVector<Chunk> aChunkAt, bChunkAt;
  /// An implicit GEMM's window as data: for each K step, row group (the
  /// thread's B rows, tid / tileN, the same across a wave) and B chunk, the
  /// element's offset in the image and its tap, packed as c H W + kh dh W +
  /// kw dw | (kh KW + kw) << 24 ([steps][groups][bPerThread] i32; rows past
  /// K carry tap 31, which no pixel has). Per thread: the image flattened,
  /// the offset of its output pixel's window origin (img C H W + (oh sh -
  /// ph) W + ow sw - pw) and the taps inside the image, one bit each. A
  /// chunk's k then costs one word of a scalar load per step instead of a
  /// division by the window's size and a bounds check per element.
  Value windowTable, windowImage, windowRow, windowBase, windowTaps;
};

void KernelBuilder::build(ArrayRef<Value> args, Value output, int64_t &workgroups) {
  M = plan.bounds[plan.mDim];
  N = plan.bounds[plan.nDim];
  K = plan.bounds[plan.kDim];
  for (unsigned d : plan.batchDims)
    batches *= plan.bounds[d];
  tilesM = llvm::divideCeil(M, shape.tileM);
  tilesN = llvm::divideCeil(N, shape.tileN);
  workgroups = batches * tilesM * tilesN;

  createPanels(args);
  createIds();
  planStaging();
  planWindowTable();
  if (plan.w4a8) {
    quantizationScales();
    createPartMasks();
  }
  scf::ForOp loop = mainLoop();
  epilogue(loop, args, output);
}

void KernelBuilder::createPanels(ArrayRef<Value> args) {
  auto operandMemref = [&](const Source &src) {
    Value mem = reshapeMemref(b, loc, args[src.arg.getArgNumber()], src.reshapes);
    if (!src.collapse.empty())
      mem = memref::CollapseShapeOp::create(b, loc, mem, src.collapse);
    return mem;
  };
  aMem = operandMemref(plan.a);
  if (plan.w4a8) {
    bMem = memrefOf(plan.w4a8->codes, args);
    scaleMem = memrefOf(plan.w4a8->scale, args);
    zeroMem = memrefOf(plan.w4a8->zero, args);
    auto quantLds = [&]() {
      auto alloca = memref::AllocaOp::create(
          b, loc, MemRefType::get({shape.tileM, quantGroups()}, b.getF32Type()));
      alloca->setAttr(kWorkgroupMemoryAttr, b.getUnitAttr());
      return alloca.getResult();
    };
    invLds = quantLds();
    ascaleLds = quantLds();
  } else if (plan.int4) {
    bMem = memrefOf(plan.int4->codes, args);
    scaleMem = memrefOf(plan.int4->scale, args);
    zeroMem = memrefOf(plan.int4->zero, args);
  } else {
    bMem = operandMemref(plan.b);
  }
  auto newLds = [&](int64_t rows) {
    auto alloca = memref::AllocaOp::create(b, loc, MemRefType::get({rows, shape.kt},
                                                                   plan.computeType));
    alloca->setAttr(kWorkgroupMemoryAttr, b.getUnitAttr());
    return alloca.getResult();
  };
  // Two pairs of panels: while the waves multiply from one pair, the next K
  // step's global loads are in flight and then land in the other.
  aLds[0] = newLds(shape.tileM);
  aLds[1] = newLds(shape.tileM);
  bLds[0] = newLds(shape.tileN);
  bLds[1] = newLds(shape.tileN);
}

void KernelBuilder::createIds() {
  // Workgroup -> (batch, tile row, tile column); thread -> (wave, lane).
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  auto wg = affine::AffineDelinearizeIndexOp::create(b, loc, block,
                                                     ArrayRef<int64_t>{batches, tilesM, tilesN});
  SmallVector<int64_t> batchBounds;
  for (unsigned d : plan.batchDims)
    batchBounds.push_back(plan.bounds[d]);
  if (!batchBounds.empty()) {
    auto del = affine::AffineDelinearizeIndexOp::create(b, loc, wg.getResult(0), batchBounds);
    batchIdx.assign(del.getResults().begin(), del.getResults().end());
  }
  AffineExpr d0 = b.getAffineDimExpr(0);
  m0 = apply(d0 * shape.tileM, {wg.getResult(1)});
  n0 = apply(d0 * shape.tileN, {wg.getResult(2)});
  Value wave = apply(d0.floorDiv(waveSize), {tid});
  Value lane = apply(d0 % waveSize, {tid});
  waveM = apply(d0.floorDiv(shape.wavesN), {wave});
  waveN = apply(d0 % shape.wavesN, {wave});
  laneInGroup = apply(d0 % inst.m, {lane});
  group = apply(d0.floorDiv(inst.m), {lane});
}

void KernelBuilder::planStaging() {
  Type aElem = cast<MemRefType>(aMem.getType()).getElementType();
  Type bElem = cast<MemRefType>(bMem.getType()).getElementType();
  const int64_t kt = shape.kt, threads = shape.threads;
  va = vectorWidth(plan.a, plan.kDim, aElem, kt);
  int64_t vbN = vectorWidth(plan.b, plan.nDim, bElem, shape.tileN);
  int64_t vbK = vectorWidth(plan.b, plan.kDim, bElem, kt);
  if (plan.w4a8) {
    // A: 4 f32 along k (one int8 word once quantized). B: 16 code bytes,
    // 4 rows of 4 columns, a word per column.
    va = std::min<int64_t>(4, kt);
    vbN = 1;
    vbK = 4;
  } else if (plan.int4) {
    // Codes along n: up to 16 bytes, dequantized to as many values.
    vbN = std::min<int64_t>(16, shape.tileN);
    while (vbN > 1 && plan.bounds[plan.nDim] % vbN != 0)
      vbN /= 2;
  }
  bAlongN = vbN > 1 || vbK == 1;
  vb = bAlongN ? vbN : vbK;
  // Two 16-bit halves pack into a dword with one v_perm; four bytes as a
  // 4 x 4 byte transpose of whole words (storeStep: transposeBytes), which
  // is what made packing them pay (from_elements of four bytes took LLVM a
  // dozen shifts and ors each: 693 instead of 264 instructions in the i8
  // main loop on gfx942).
  int64_t computeBits = plan.computeType.getIntOrFloatBitWidth();
  if (bAlongN && vb > 1 && !plan.int4 && (computeBits == 16 || (computeBits == 8 && vb % 4 == 0))) {
    bRows = 32 / computeBits;
    while (bRows > 1 && kt % bRows != 0)
      bRows /= 2;
    // Bytes: 4 x vb blocks, vb narrowed so that every thread has one (a
    // thread without one would branch around its stores in the loop), or
    // kept where every thread has several (gfx1250's 128 x 128 tile of
    // 64-deep instructions: 2 each; stored byte by byte, its int8 loop was
    // 1001 instructions for 64 WMMAs).
    if (computeBits == 8) {
      int64_t narrowed = shape.tileN * kt / (4 * threads);
      if (bRows == 4 && narrowed >= 4 && narrowed % 4 == 0 && vb % narrowed == 0)
        vb = narrowed;
      else if (bRows != 4 || narrowed % vb != 0)
        bRows = 1;
    }
  }
  aChunks = shape.tileM * kt / va;
  bChunks = shape.tileN * kt / (vb * bRows);
  if (plan.w4a8)
    bChunks = shape.tileN * kt / 16;
  int64_t bits = plan.computeType.getIntOrFloatBitWidth();
  // Each swizzled fragment address is a register of its own (the XOR does
  // not fold into the LDS offset). 4 x 4 tiles of int8 reached 264 VGPRs on
  // gfx950 with byte-wise B stores; with the byte transposes and buffer
  // loads they need 216 (gfx942 158), two waves per SIMD, and the swizzle
  // makes their fragment reads 2-way instead of 8-way and their B stores
  // 4-way instead of 16-way (the emulator's statistics). LLVM MCA times
  // gfx950's int8 loop at 1.79x the bound with it, 1.62x without: MCA does
  // not see bank conflicts. Not for uint8 x int8 in 4 x 4 tiles, whose
  // correction accumulators took gfx950 to 268 VGPRs with it (one wave per
  // SIMD; 232 without).
  bool largeTiles = shape.waveTilesM * shape.waveTilesN > 4;
  bool corrected = plan.a.flipSign || plan.b.flipSign;
  if (bits >= 8 && inst.kChunk * bits <= 128 && kt * bits >= 256 && va * bits <= 128 &&
      (bAlongN || vb * bits <= 128) && !(largeTiles && corrected) &&
      inst.input != MatrixInput::I4) { // int4 fragments spilled on gfx1201 with it
    swizzleGranule = 128 / bits;
    swizzleGroups = kt / swizzleGranule;
    if (!llvm::isPowerOf2_64(swizzleGroups))
      swizzleGranule = swizzleGroups = 0;
  }
  aPerThread = llvm::divideCeil(aChunks, threads);
  bPerThread = llvm::divideCeil(bChunks, threads);
  AffineExpr d0 = b.getAffineDimExpr(0);
  for (int64_t j = 0; j < aPerThread; ++j) {
    Value chunk = apply(d0 + j * threads, {tid});
    aChunkAt.push_back(
        {chunk, apply(d0.floorDiv(kt / va), {chunk}), apply((d0 % (kt / va)) * va, {chunk})});
  }
  for (int64_t j = 0; j < bPerThread; ++j) {
    Value chunk = apply(d0 + j * threads, {tid});
    if (plan.w4a8) {
      // Columns fastest: a wave's loads are consecutive 16-byte pieces of a
      // panel's rows. (row, col) = (k, n) of the chunk's first element.
      int64_t perRow = shape.tileN / 4;
      bChunkAt.push_back(
          {chunk, apply(d0.floorDiv(perRow) * 4, {chunk}), apply((d0 % perRow) * 4, {chunk})});
      continue;
    }
    int64_t perRow = (bAlongN ? shape.tileN : kt) / vb;
    bChunkAt.push_back({chunk, apply(d0.floorDiv(perRow) * bRows, {chunk}),
                        apply((d0 % perRow) * vb, {chunk})});
  }
}

void KernelBuilder::planWindowTable() {
  if (!plan.window || plan.int4 || plan.w4a8 || !bAlongN || vb != 1 || bRows != 1)
    return;
  auto imageType = cast<MemRefType>(bMem.getType());
  const GemmPlan::Window &w = *plan.window;
  int64_t rank = w.grouped ? 5 : 4;
  if (imageType.getRank() != rank || !imageType.hasStaticShape() ||
      !imageType.getLayout().isIdentity() || !bufferLoads(imageType) ||
      (w.grouped && batchIdx.size() != 1))
    return;
  int64_t C = imageType.getDimSize(rank - 3), H = imageType.getDimSize(rank - 2),
          W = imageType.getDimSize(rank - 1);
  int64_t G = w.grouped ? imageType.getDimSize(1) : 1;
  int64_t taps = w.KH * w.KW, threads = shape.threads, perRow = shape.tileN;
  // Rows the same across a wave, every thread the same number of chunks,
  // a bit per tap below 31, offsets in 24 bits.
  int64_t last = (C - 1) * H * W + (w.KH - 1) * w.dilations[0] * W + (w.KW - 1) * w.dilations[1];
  if (C != w.C || taps > 31 || perRow % waveSize != 0 || threads % perRow != 0 ||
      bChunks % threads != 0 || last >= (int64_t(1) << 24))
    return;
  int64_t groups = threads / perRow;
  // Loads run up to two steps ahead of the last step.
  int64_t steps = llvm::divideCeil(K, shape.kt) + 3;
  SmallVector<int32_t> entries;
  entries.reserve(steps * groups * bPerThread);
  for (int64_t s = 0; s < steps; ++s)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t j = 0; j < bPerThread; ++j) {
        int64_t k = s * shape.kt + g + j * groups;
        if (k >= K) {
          entries.push_back(31 << 24);
          continue;
        }
        int64_t ch = k / taps, tap = k % taps, kh = tap / w.KW, kw = tap % w.KW;
        if (fault == Fault::WindowTaps)
          std::swap(kh, kw); // the window read transposed (square windows)
        int64_t offset = ch * H * W + kh * w.dilations[0] * W + kw * w.dilations[1];
        entries.push_back(static_cast<int32_t>(offset | (tap << 24)));
      }
  Type i32 = b.getI32Type();
  auto tableType = RankedTensorType::get({steps, groups, bPerThread}, i32);
  Value table = arith::ConstantOp::create(
      b, loc, tableType, DenseElementsAttr::get(tableType, ArrayRef<int32_t>(entries)));
  windowTable = bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(tableType.getShape(), i32), table, /*read_only=*/b.getUnitAttr());
  ReassociationIndices all(rank);
  std::iota(all.begin(), all.end(), 0);
  windowImage = memref::CollapseShapeOp::create(b, loc, bMem, ArrayRef<ReassociationIndices>{all});
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1),
             d2 = b.getAffineDimExpr(2);
  // The row group is the same across the wave, which LLVM does not see in
  // tid / tileN: said with a broadcast, so the table is read with scalar
  // loads.
  Value row = arith::IndexCastOp::create(b, loc, i32, apply(d0.floorDiv(perRow), {tid}));
  row = gpu::SubgroupBroadcastOp::create(b, loc, row, nullptr,
                                         gpu::BroadcastType::first_active_lane);
  windowRow = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), row);
  Value n = apply(d0 + d1, {n0, bChunkAt[0].col});
  Value img = apply(d0.floorDiv(w.OH * w.OW), {n});
  Value oh = apply(d0.floorDiv(w.OW) % w.OH, {n});
  Value ow = apply(d0 % w.OW, {n});
  Value base = apply(d0 * (G * C * H * W) + (d1 * w.strides[0] - w.pads[0]) * W +
                         d2 * w.strides[1] - w.pads[1],
                     {img, oh, ow});
  // A group's channels follow the previous group's.
  if (w.grouped)
    base = apply(d0 + d1 * (C * H * W), {base, batchIdx[0]});
  windowBase = arith::IndexCastOp::create(b, loc, i32, base);
  // Which taps of this pixel's window lie inside the image (unsigned
  // compares: above the top or left of it is a huge index).
  SmallVector<Value> inRows, inCols;
  for (int64_t kh = 0; kh < w.KH; ++kh)
    inRows.push_back(cmpLt(
        apply(d0 * w.strides[0] + (kh * w.dilations[0] - w.pads[0]), {oh}), H));
  for (int64_t kw = 0; kw < w.KW; ++kw)
    inCols.push_back(cmpLt(
        apply(d0 * w.strides[1] + (kw * w.dilations[1] - w.pads[1]), {ow}), W));
  Value mask = arith::ConstantIntOp::create(b, loc, i32, 0);
  for (int64_t kh = 0; kh < w.KH; ++kh)
    for (int64_t kw = 0; kw < w.KW; ++kw) {
      Value inside = arith::AndIOp::create(b, loc, inRows[kh], inCols[kw]);
      Value bit = arith::ShLIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i32, inside),
                                        arith::ConstantIntOp::create(b, loc, i32, kh * w.KW + kw));
      mask = arith::OrIOp::create(b, loc, mask, bit);
    }
  // Columns past N (a tile that does not divide it) read nothing.
  if (N % shape.tileN)
    mask = arith::SelectOp::create(b, loc, cmpLt(n, N), mask,
                                   arith::ConstantIntOp::create(b, loc, i32, 0));
  windowTaps = mask;
}

SmallVector<Value> KernelBuilder::loadWindowStep(Value k0) {
  Type i32 = b.getI32Type();
  auto imageType = cast<MemRefType>(windowImage.getType());
  Type elem = imageType.getElementType();
  auto i32c = [&](int64_t v) { return arith::ConstantIntOp::create(b, loc, i32, v); };
  Value step = apply(b.getAffineDimExpr(0).floorDiv(shape.kt), {k0});
  Value entries = vector::LoadOp::create(b, loc, VectorType::get({bPerThread}, i32), windowTable,
                                         ValueRange{step, windowRow, c(0)});
  Value past = i32c(imageType.getNumElements());
  SmallVector<Value> values;
  for (int64_t j = 0; j < bPerThread; ++j) {
    Value entry = vector::ExtractOp::create(b, loc, entries, j);
    Value offset = arith::AndIOp::create(b, loc, entry, i32c((1 << 24) - 1));
    Value tap = arith::ShRUIOp::create(b, loc, entry, i32c(24));
    Value bit = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, windowTaps, tap),
                                      i32c(1));
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, bit, i32c(0));
    // Outside the image: one past its last element, where the buffer load
    // reads zeros.
    Value at = arith::SelectOp::create(b, loc, inside,
                                       arith::AddIOp::create(b, loc, windowBase, offset), past);
    Value value = amdgpu::RawBufferLoadOp::create(b, loc, elem, windowImage, ValueRange{at}, true,
                                                  nullptr, nullptr);
    auto vecType = VectorType::get({1}, elem);
    value = vector::BroadcastOp::create(b, loc, vecType, value);
    values.push_back(flipSignBits(plan.b, value, vecType));
  }
  return values;
}

Value KernelBuilder::loadAChunk(int64_t j, Value k0, Value *mask, Value *kOut) {
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  const Chunk &ch = aChunkAt[j];
  Value m = apply(d0 + d1, {m0, ch.row});
  Value k = apply(d0 + d1, {k0, ch.col});
  if (kOut)
    *kOut = k;
  // Rows past M only where the tile does not divide it; k past K where
  // the next step's prefetch runs past the end.
  Value ok = allOf({M % shape.tileM ? cmpLt(m, M) : Value(), cmpLt(k, K),
                    aChunks % shape.threads ? cmpLt(ch.chunk, aChunks) : Value()});
  return loadChunk(aMem, plan.a, loopValues(m, nullptr, k), ok, va, mask);
}

SmallVector<Value> KernelBuilder::loadStep(Value k0) {
  if (plan.w4a8)
    return loadW4A8Step(k0);
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  // The chunks, then for each the condition storeStep zeroes it by (null:
  // none); the loads are issued here, before the step's multiplies, and
  // waited for only where the chunks are stored after them.
  SmallVector<Value> values, masks;
  // What a chunk past the operand holds matters only where it is
  // multiplied into an output that is stored: k past K when the last
  // iteration multiplies a step past K (2 KT does not divide K). Rows past
  // M and columns past N reach only outputs that are never stored, and the
  // prefetch past K of the last iteration is never multiplied; their loads
  // are only clamped into the operand.
  bool zeroPastK = K % (2 * shape.kt) != 0;
  for (int64_t j = 0; j < aPerThread; ++j) {
    masks.emplace_back();
    values.push_back(loadAChunk(j, k0, &masks.back()));
    if (!zeroPastK)
      masks.back() = Value();
  }
  if (windowTable) {
    // Zeros past K and in the padding come from the table.
    for (Value v : loadWindowStep(k0)) {
      values.push_back(v);
      masks.emplace_back();
    }
  }
  for (int64_t j = 0; j < bPerThread && !windowTable; ++j) {
    const Chunk &ch = bChunkAt[j];
    Value kLocal = bAlongN ? ch.row : ch.col, nLocal = bAlongN ? ch.col : ch.row;
    Value n = apply(d0 + d1, {n0, nLocal});
    for (int64_t r = 0; r < bRows; ++r) {
      Value k = apply(d0 + d1 + r, {k0, kLocal});
      Value ok = allOf({N % shape.tileN ? cmpLt(n, N) : Value(), cmpLt(k, K),
                        bChunks % shape.threads ? cmpLt(ch.chunk, bChunks) : Value()});
      masks.emplace_back();
      values.push_back(plan.int4 ? loadInt4Chunk(n, k, ok, vb)
                                 : loadChunk(bMem, plan.b, loopValues(nullptr, n, k), ok, vb,
                                             &masks.back()));
      if (!zeroPastK)
        masks.back() = Value();
    }
  }
  values.append(masks.begin(), masks.end());
  return values;
}

/// Rows r0..r3 of bytes (vector<Vxi8>, V a multiple of 4) as the columns
/// of their 4 x 4 blocks, vectors of V / 4 words: result j holds, in its
/// word q, bytes (r0[4q + j],
/// r1[4q + j], r2[4q + j], r3[4q + j]). Two rounds of masks, shifts and ors
/// on whole words, each output word made from two inputs (what the AMDGPU
/// backend turns into one v_perm_b32 or v_and_or_b32 each):
///   p = (r0 & 0x00FF00FF) | (r1 & 0x00FF00FF) << 8     bytes r0[0] r1[0] r0[2] r1[2]
///   q = (r0 >> 8 & 0x00FF00FF) | (r1 & 0xFF00FF00)     bytes r0[1] r1[1] r0[3] r1[3]
/// (and s, t from r2, r3), then columns 0 and 2 from p and s, 1 and 3 from q
/// and t: (p & 0xFFFF) | s << 16 and p >> 16 | (s & 0xFFFF0000).
SmallVector<Value> KernelBuilder::transposeBytes(ArrayRef<Value> rows) {
  auto byteType = cast<VectorType>(rows.front().getType());
  int64_t words = byteType.getNumElements() / 4;
  auto wordType = VectorType::get({words}, b.getI32Type());
  auto splat = [&](uint32_t value) {
    return arith::ConstantOp::create(
        b, loc, wordType, DenseElementsAttr::get(wordType, APInt(32, value))).getResult();
  };
  auto band = [&](Value x, uint32_t m) { return arith::AndIOp::create(b, loc, x, splat(m)).getResult(); };
  auto shl = [&](Value x, uint32_t n) { return arith::ShLIOp::create(b, loc, x, splat(n)).getResult(); };
  auto shr = [&](Value x, uint32_t n) { return arith::ShRUIOp::create(b, loc, x, splat(n)).getResult(); };
  auto bor = [&](Value x, Value y) { return arith::OrIOp::create(b, loc, x, y).getResult(); };
  SmallVector<Value> w;
  for (Value row : rows)
    w.push_back(vector::BitCastOp::create(b, loc, wordType, row));
  auto pairs = [&](Value x, Value y, Value &even, Value &odd) {
    even = bor(band(x, 0x00FF00FF), shl(band(y, 0x00FF00FF), 8));
    odd = bor(band(shr(x, 8), 0x00FF00FF), band(y, 0xFF00FF00));
  };
  Value p, q, s, t;
  pairs(w[0], w[1], p, q);
  pairs(w[2], w[3], s, t);
  auto low = [&](Value x, Value y) { return bor(band(x, 0x0000FFFF), shl(y, 16)); };
  auto high = [&](Value x, Value y) { return bor(shr(x, 16), band(y, 0xFFFF0000)); };
  return {low(p, s), low(q, t), high(p, s), high(q, t)};
}

void KernelBuilder::storeStep(ArrayRef<Value> loaded, int buffer) {
  if (plan.w4a8)
    return storeW4A8Step(loaded, buffer);
  AffineExpr d0 = b.getAffineDimExpr(0);
  // loadStep's chunks, zeroed where their masks say.
  size_t count = aPerThread + bPerThread * bRows;
  SmallVector<Value> values(loaded.take_front(count));
  for (size_t i = 0; i < count; ++i)
    if (Value mask = loaded[count + i])
      values[i] = zeroUnless(mask, values[i]);
  // Floats wider than the compute type (loadChunk's deferred conversions,
  // and the window table's chunks) arrive as loaded: converted here, where
  // they are stored, so that the conversion does not wait for the loads
  // before the step's multiplies.
  for (auto [i, v] : llvm::enumerate(values)) {
    Type elem = getElementTypeOrSelf(v.getType());
    if (deferredConversion(elem)) {
      auto vecType = dyn_cast<VectorType>(v.getType());
      v = toComputeType(i < static_cast<size_t>(aPerThread) ? plan.a : plan.b, v, elem,
                        vecType ? vecType.getNumElements() : 1);
    }
  }
  for (int64_t j = 0; j < aPerThread; ++j) {
    const Chunk &ch = aChunkAt[j];
    OpBuilder::InsertionGuard guard(b);
    // Only a thread's last chunk can lie past the panel.
    if ((j + 1) * shape.threads > aChunks) {
      auto store = scf::IfOp::create(b, loc, cmpLt(ch.chunk, aChunks), false);
      b.setInsertionPointToStart(store.thenBlock());
    }
    vector::StoreOp::create(b, loc, values[j], aLds[buffer],
                            ValueRange{ch.row, swizzled(ch.row, ch.col)});
  }
  for (int64_t j = 0; j < bPerThread; ++j) {
    const Chunk &ch = bChunkAt[j];
    Value kLocal = bAlongN ? ch.row : ch.col, nLocal = bAlongN ? ch.col : ch.row;
    ArrayRef<Value> rows = ArrayRef<Value>(values).slice(aPerThread + j * bRows, bRows);
    Value value = rows.front();
    OpBuilder::InsertionGuard guard(b);
    if ((j + 1) * shape.threads > bChunks) {
      auto store = scf::IfOp::create(b, loc, cmpLt(ch.chunk, bChunks), false);
      b.setInsertionPointToStart(store.thenBlock());
    }
    if (!bAlongN) {
      vector::StoreOp::create(b, loc, value, bLds[buffer],
                              ValueRange{nLocal, swizzled(nLocal, kLocal)});
    } else if (bRows == 1) {
      for (int64_t i = 0; i < vb; ++i) {
        Value e = vector::ExtractOp::create(b, loc, value, ArrayRef<int64_t>{i});
        Value n = apply(d0 + i, {nLocal});
        memref::StoreOp::create(b, loc, e, bLds[buffer], ValueRange{n, swizzled(n, kLocal)});
      }
    } else if (bRows == 4) {
      // Four rows of bytes: column i of them is 4 consecutive k of panel
      // row n + i, one 32-bit store; the 4 x 4 byte blocks are transposed a
      // word at a time.
      SmallVector<Value> columns = transposeBytes(rows);
      auto oneWord = VectorType::get({1}, b.getI32Type());
      auto fourBytes = VectorType::get({4}, plan.computeType);
      for (int64_t i = 0; i < vb; ++i) {
        Value word = vector::ExtractOp::create(b, loc, columns[i % 4], ArrayRef<int64_t>{i / 4});
        Value column = vector::BitCastOp::create(
            b, loc, fourBytes, vector::BroadcastOp::create(b, loc, oneWord, word));
        Value n = apply(d0 + i, {nLocal});
        vector::StoreOp::create(b, loc, column, bLds[buffer], ValueRange{n, swizzled(n, kLocal)});
      }
    } else {
      // Transposed in registers: column i of the bRows rows is bRows
      // consecutive k of panel row n + i, one 32-bit store.
      auto columnType = VectorType::get({bRows}, plan.computeType);
      for (int64_t i = 0; i < vb; ++i) {
        SmallVector<Value> column;
        for (Value row : rows)
          column.push_back(vector::ExtractOp::create(b, loc, row, ArrayRef<int64_t>{i}));
        Value packed = vector::FromElementsOp::create(b, loc, columnType, column);
        Value n = apply(d0 + i, {nLocal});
        vector::StoreOp::create(b, loc, packed, bLds[buffer], ValueRange{n, swizzled(n, kLocal)});
      }
    }
  }
}

// The main loop: accumulators of the wave's instruction tiles. It takes two
// K steps per iteration, one from each pair of panels, with one barrier per
// step:
//   prologue:  stage step 0 into panels 0; barrier
//   iteration: load step s+1 | multiply from panels 0 | store it to panels 1
//              barrier
//              load step s+2 | multiply from panels 1 | store it to panels 0
//              barrier
// A wave stores into a pair only after the barrier that follows every wave's
// reads of it. Steps past K load zeros and add nothing. With the tiling's
// loadAhead the loads run a step further ahead, their chunks held in
// registers (carried by the loop) through one step:
//   prologue:  stage step 0 into panels 0, load step 1; barrier
//   iteration: load step s+2 | multiply from panels 0 | store step s+1 to
//              panels 1; barrier
//              load step s+3 | multiply from panels 1 | store step s+2 to
//              panels 0; barrier
// A step's matrix work alone (16 WMMAs of the small tiling) is shorter than
// a global load's latency. 4096^3 and 1024^3 GEMMs, one wave against the
// bound, in GfxTargets.cpp. The barriers are LDS barriers (amdgpu.lds_barrier):
// gpu.barrier's workgroup fence made gfx12 wait for every global load,
// those of the next steps too, before each barrier (s_wait_loadcnt_dscnt 0).
scf::ForOp KernelBuilder::mainLoop() {
  auto accVec = VectorType::get({inst.accPerLane}, plan.accType);
  Value zero = arith::ConstantOp::create(b, loc, accVec, b.getZeroAttr(accVec));
  int64_t tiles = shape.waveTilesM * shape.waveTilesN;
  SmallVector<Value> init(tiles + corrections(), zero);
  if (plan.w4a8) {
    // Then the f32 sums of the groups done.
    auto sumVec = VectorType::get({inst.accPerLane}, b.getF32Type());
    init.append(tiles, arith::ConstantOp::create(b, loc, sumVec, b.getZeroAttr(sumVec)));
  }
  // Loads two steps ahead: step 1's chunks are loaded in the prologue and
  // carried into the loop, whose steps store the chunks loaded one step
  // earlier (null masks are not carried: they are null in every step).
  bool ahead = shape.loadAhead;
  SmallVector<Value> pending;
  std::vector<bool> present;
  storeStep(loadStep(c(0)), 0);
  if (ahead) {
    pending = loadStep(c(shape.kt));
    for (Value v : pending) {
      present.push_back(bool(v));
      if (v)
        init.push_back(v);
    }
  }
  amdgpu::LDSBarrierOp::create(b, loc);
  size_t accCount = init.size() - llvm::count(present, true);
  auto loop = scf::ForOp::create(b, loc, c(0), c(K), c(2 * shape.kt), init);
  // Fully unrolling a short main loop hoists every step's LDS reads and
  // spills (seen on gfx1100): keep the loop.
  MLIRContext *mctx = b.getContext();
  auto noUnroll = LLVM::LoopUnrollAttr::get(mctx, b.getBoolAttr(true), {}, {}, {}, {}, {}, {});
  loop->setAttr("llvm.loop_annotation",
                LLVM::LoopAnnotationAttr::get(mctx, {}, {}, {}, noUnroll, {}, {}, {}, {}, {},
                                              {}, {}, {}, {}, {}, {}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value k0 = loop.getInductionVar();
  SmallVector<Value> acc(loop.getRegionIterArgs().begin(),
                         loop.getRegionIterArgs().begin() + accCount);
  if (ahead) {
    auto carried = loop.getRegionIterArgs().drop_front(accCount).begin();
    for (size_t i = 0; i < pending.size(); ++i)
      pending[i] = present[i] ? Value(*carried++) : Value();
  }
  for (int buffer = 0; buffer < 2; ++buffer) {
    SmallVector<Value> next =
        loadStep(apply(b.getAffineDimExpr(0) + (buffer + (ahead ? 2 : 1)) * shape.kt, {k0}));
    // The next step's global loads are issued before this step's
    // multiplies, whose time hides their latency: LLVM's scheduler would
    // otherwise sink them next to their stores (as branches around them
    // used to prevent).
    amdgpu::SchedBarrierOp::create(b, loc, amdgpu::sched_barrier_opt_enum::none);
    multiplyStep(buffer, acc, k0);
    storeStep(ahead ? pending : next, 1 - buffer);
    scheduleStep();
    amdgpu::LDSBarrierOp::create(b, loc);
    if (ahead)
      pending = next;
  }
  // W4A8 groups of two or more iterations end after one, every G / (2 KT).
  if (plan.w4a8 && shape.kt % quantGroup() != 0) {
    int64_t G = quantGroup();
    AffineExpr d0 = b.getAffineDimExpr(0);
    Value qg = apply(d0.floorDiv(G), {k0});
    if (G == 2 * shape.kt) {
      flushGroup(acc, qg, /*guarded=*/false);
    } else {
      Value ends = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         apply((d0 + 2 * shape.kt) % G, {k0}), c(0));
      auto ifOp = scf::IfOp::create(b, loc, ValueRange(acc).getTypes(), ends, true, true);
      OpBuilder::InsertionGuard ig(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      SmallVector<Value> flushed(acc);
      flushGroup(flushed, qg, /*guarded=*/false);
      scf::YieldOp::create(b, loc, flushed);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, loc, acc);
      acc.assign(ifOp.getResults().begin(), ifOp.getResults().end());
    }
  }
  SmallVector<Value> yielded(acc);
  for (Value v : pending)
    if (v)
      yielded.push_back(v);
  scf::YieldOp::create(b, loc, yielded);
  return loop;
}

// How LLVM's scheduler is asked to order one K step's multiplies and stores
// (the tiling's StepSchedule for the operands' width; amdgpu
// sched_group_barrier groups, filled in order). A matrix instruction keeps
// its pipe busy for several clocks in which the wave can issue others.
// LLVM's own schedule (StepSchedule::Llvm) ran up to 24 matrix instructions
// back to back on gfx942 and put the stores, which wait for the step's
// global loads, near the top: the wave stalled on the loads, then on the
// matrix pipe.
// - Matrix: the fragments of the first instruction depth, then one matrix
//   instruction per group, the rest left to LLVM between them.
// - Interleaved: the same, each matrix instruction followed by an LDS read
//   in the step's first half and by two vector ALU instructions and an LDS
//   store in its second half, by which time the global loads issued before
//   the multiplies are back.
// The figures per target are in GfxTargets.cpp.
void KernelBuilder::scheduleStep() {
  if (shape.schedule == gfx::StepSchedule::Llvm)
    return;
  // The groups' instruction classes (LLVM's AMDGPU SchedGroupMask).
  enum : int32_t { kValu = 0x2, kMatrix = 0x8, kDsRead = 0x100, kDsWrite = 0x200 };
  auto group = [&](int32_t mask, int64_t size) {
    ROCDL::SchedGroupBarrier::create(b, loc, mask, int32_t(size), 0);
  };
  bool interleaved = shape.schedule == gfx::StepSchedule::Interleaved;
  int64_t n = shape.waveTilesM * shape.waveTilesN * (shape.kt / inst.k);
  group(kDsRead, shape.waveTilesM + shape.waveTilesN);
  for (int64_t i = 0; i < n; ++i) {
    group(kMatrix, 1);
    if (!interleaved)
      continue;
    if (i < n / 2) {
      group(kDsRead, 1);
    } else {
      group(kValu, 2);
      group(kDsWrite, 1);
    }
  }
}

void KernelBuilder::multiplyStep(int buffer, MutableArrayRef<Value> acc, Value k0) {
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  for (int64_t kk = 0; kk < shape.kt; kk += inst.k) {
    SmallVector<Value> aFrag, bFrag;
    for (int64_t t = 0; t < std::max(shape.waveTilesM, shape.waveTilesN); ++t) {
      AffineExpr aLane = fault == Fault::ShiftLanes ? (d1 + 1) % inst.m : d1;
      Value aRow, bRow;
      if (t < shape.waveTilesM)
        aRow = apply(d0 * shape.waveM + t * inst.m + aLane, {waveM, laneInGroup});
      if (t < shape.waveTilesN)
        bRow = apply(d0 * shape.waveN + t * inst.n + d1, {waveN, laneInGroup});
      if (aRow)
        aFrag.push_back(fragment(aLds[buffer], aRow, c(kk)));
      if (bRow)
        bFrag.push_back(fragment(bLds[buffer], bRow, c(kk)));
    }
    // W4A8 groups within a step end after their last instruction (the
    // steps past K, of a K that is not a multiple of 2 KT, add nothing); a
    // group shorter than the instruction is one instruction of its own, on
    // A's elements of that group (kOf of the lane layout), the others zero.
    bool flushes = plan.w4a8 && shape.kt % quantGroup() == 0;
    int64_t parts = std::max<size_t>(partMasks.size(), 1);
    for (int64_t part = 0; part < parts; ++part) {
      SmallVector<Value> aPart(aFrag);
      if (parts > 1)
        for (Value &frag : aPart)
          frag = zeroUnless(partMasks[part], frag);
      for (int64_t tm = 0; tm < shape.waveTilesM; ++tm)
        for (int64_t tn = 0; tn < shape.waveTilesN; ++tn) {
          Value &a = acc[tm * shape.waveTilesN + tn];
          a = multiply(aPart[tm], bFrag[tn], a);
        }
      int64_t kEnd = kk + (part + 1) * (inst.k / parts);
      if (flushes && kEnd % quantGroup() == 0)
        flushGroup(acc,
                   apply((d0 + buffer * shape.kt + kEnd - 1).floorDiv(quantGroup()), {k0}),
                   /*guarded=*/K % (2 * shape.kt) != 0);
    }
    if (corrections() == 0)
      continue;
    auto fragType = cast<VectorType>(aFrag.front().getType());
    Value minus128 = arith::ConstantOp::create(
        b, loc, fragType, DenseElementsAttr::get(fragType, APInt(8, 0x80)));
    int64_t tiles = shape.waveTilesM * shape.waveTilesN;
    for (int64_t t = 0; t < corrections(); ++t) {
      Value &corr = acc[tiles + t];
      corr = plan.a.flipSign ? multiply(minus128, bFrag[t], corr)
                             : multiply(aFrag[t], minus128, corr);
    }
  }
}

// W4A8. The value is kiln.matmul_int4's definition to the bit (the cpu
// kernel's): per row and group of G along K, amax = max |a| (as the f32's
// bits, an unsigned maximum), x = round_half_even(a * (127 / amax)) in int8,
// each group's sum of x (q - z) exact in i32 on the int8 matrix cores, then
// in f32, group after group: sum += float(sum_g) * ((amax / 127) * s).
void KernelBuilder::quantizationScales() {
  AffineExpr d0 = b.getAffineDimExpr(0);
  int64_t G = quantGroup(), groups = quantGroups();
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto words = VectorType::get({4}, i32);
  auto floats = VectorType::get({4}, f32);
  // One (row, group) per thread at a time, the group's 4-float vectors in
  // turn. Rows past M get amax 0: 127 / amax and amax / 127 are then 0.
  auto pairs = scf::ForOp::create(b, loc, tid, c(shape.tileM * groups), c(shape.threads));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(pairs.getBody());
    Value p = pairs.getInductionVar();
    Value row = apply(d0.floorDiv(groups), {p});
    Value qg = apply(d0 % groups, {p});
    Value m = apply(d0 + b.getAffineDimExpr(1), {m0, row});
    Value mc = arith::MinUIOp::create(b, loc, m, c(M - 1));
    Value zeros = arith::ConstantOp::create(b, loc, words, b.getZeroAttr(words));
    auto scan = scf::ForOp::create(b, loc, c(0), c(G), c(4), ValueRange{zeros});
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(scan.getBody());
      Value k = apply(d0 * G + b.getAffineDimExpr(1), {qg, scan.getInductionVar()});
      Value v = vector::LoadOp::create(b, loc, floats, aMem, ValueRange{mc, k});
      Value bits = arith::BitcastOp::create(b, loc, words, math::AbsFOp::create(b, loc, v));
      scf::YieldOp::create(
          b, loc, ValueRange{arith::MaxUIOp::create(b, loc, scan.getRegionIterArgs()[0], bits)});
    }
    Value amaxBits =
        vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXUI, scan.getResult(0));
    if (M % shape.tileM != 0)
      amaxBits = arith::SelectOp::create(b, loc, cmpLt(m, M), amaxBits,
                                         arith::ConstantIntOp::create(b, loc, i32, 0));
    Value amax = arith::BitcastOp::create(b, loc, f32, amaxBits);
    auto f = [&](double v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v)); };
    Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, amax, f(0.0));
    Value inv = arith::SelectOp::create(b, loc, positive,
                                        arith::DivFOp::create(b, loc, f(127.0), amax), f(0.0));
    memref::StoreOp::create(b, loc, inv, invLds, ValueRange{row, qg});
    memref::StoreOp::create(b, loc, arith::DivFOp::create(b, loc, amax, f(127.0)), ascaleLds,
                            ValueRange{row, qg});
  }
  gpu::BarrierOp::create(b, loc);
}

// loadW4A8Step's values: A chunks (f32), B chunks (16 code bytes), then the
// masks of each (null: always in bounds), A's 127 / amax, B's zero points
// (4 f32) and nibble shifts (0 or 4).
SmallVector<Value> KernelBuilder::loadW4A8Step(Value k0) {
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  int64_t G = quantGroup(), P = plan.w4a8->panel, groups = quantGroups();
  SmallVector<Value> values, masks, invs, zeros, shifts;
  for (int64_t j = 0; j < aPerThread; ++j) {
    const Chunk &ch = aChunkAt[j];
    Value k;
    masks.emplace_back();
    values.push_back(loadAChunk(j, k0, &masks.back(), &k));
    // (Indices past the tile or K clamped: those chunks are zeroed.)
    Value row = arith::MinUIOp::create(b, loc, ch.row, c(shape.tileM - 1));
    Value qg = arith::MinUIOp::create(b, loc, apply(d0.floorDiv(G), {k}), c(groups - 1));
    invs.push_back(memref::LoadOp::create(b, loc, invLds, ValueRange{row, qg}));
  }
  for (int64_t j = 0; j < bPerThread; ++j) {
    const Chunk &ch = bChunkAt[j];
    Value k = apply(d0 + d1, {k0, ch.row});
    Value n = apply(d0 + d1, {n0, ch.col});
    masks.push_back(allOf({N % shape.tileN ? cmpLt(n, N) : Value(), cmpLt(k, K),
                           bChunks % shape.threads ? cmpLt(ch.chunk, bChunks) : Value()}));
    Value kc = arith::MinUIOp::create(b, loc, k, c(K - 4));
    Value nc = arith::MinUIOp::create(b, loc, n, c(N - 4));
    // Row k = g G + h G / 2 + 4 t of column n = c P + l: bytes [c, g, t, l:
    // l + 4, 0:4], nibble h.
    Value panelIdx = apply(d0.floorDiv(P), {nc}), l = apply(d0 % P, {nc});
    Value qg = apply(d0.floorDiv(G), {kc});
    Value t = apply((d0 % (G / 2)).floorDiv(4), {kc});
    Value h = apply((d0 % G).floorDiv(G / 2), {kc});
    values.push_back(vector::LoadOp::create(b, loc, VectorType::get({16}, b.getI8Type()), bMem,
                                            ValueRange{panelIdx, qg, t, l, c(0)}));
    zeros.push_back(vector::LoadOp::create(b, loc, VectorType::get({4}, b.getF32Type()), zeroMem,
                                           ValueRange{panelIdx, qg, l}));
    shifts.push_back(arith::IndexCastOp::create(b, loc, b.getI32Type(), apply(d0 * 4, {h})));
  }
  // (Reordered to: A values, B values, masks, invs, zeros, shifts.)
  SmallVector<Value> out;
  out.append(values.begin(), values.end());
  out.append(masks.begin(), masks.end());
  out.append(invs.begin(), invs.end());
  out.append(zeros.begin(), zeros.end());
  out.append(shifts.begin(), shifts.end());
  return out;
}

void KernelBuilder::storeW4A8Step(ArrayRef<Value> loaded, int buffer) {
  AffineExpr d0 = b.getAffineDimExpr(0);
  size_t count = aPerThread + bPerThread;
  ArrayRef<Value> masks = loaded.slice(count, count), invs = loaded.slice(2 * count, aPerThread),
                  zeros = loaded.slice(2 * count + aPerThread, bPerThread),
                  shifts = loaded.slice(2 * count + aPerThread + bPerThread, bPerThread);
  Type i32 = b.getI32Type();
  auto words = VectorType::get({4}, i32);
  auto splat = [&](VectorType type, Value v) { return vector::BroadcastOp::create(b, loc, type, v); };
  auto wordsOf = [&](uint32_t v) {
    return arith::ConstantOp::create(b, loc, words, DenseElementsAttr::get(words, APInt(32, v)));
  };
  for (int64_t j = 0; j < aPerThread; ++j) {
    const Chunk &ch = aChunkAt[j];
    Value v = loaded[j];
    if (masks[j])
      v = zeroUnless(masks[j], v);
    auto floats = cast<VectorType>(v.getType());
    Value x = math::RoundEvenOp::create(
        b, loc, arith::MulFOp::create(b, loc, v, splat(floats, invs[j])));
    auto wide = VectorType::get({va}, i32);
    Value q = arith::TruncIOp::create(b, loc, VectorType::get({va}, b.getI8Type()),
                                      arith::FPToSIOp::create(b, loc, wide, x));
    OpBuilder::InsertionGuard guard(b);
    if ((j + 1) * shape.threads > aChunks) {
      auto store = scf::IfOp::create(b, loc, cmpLt(ch.chunk, aChunks), false);
      b.setInsertionPointToStart(store.thenBlock());
    }
    vector::StoreOp::create(b, loc, q, aLds[buffer], ValueRange{ch.row, swizzled(ch.row, ch.col)});
  }
  for (int64_t j = 0; j < bPerThread; ++j) {
    const Chunk &ch = bChunkAt[j];
    // Per 32-bit word (four rows of one column): the nibbles, then code -
    // zero per byte without carries: (code + 0x80 - z) ^ 0x80, code and z
    // in 0..15.
    Value w = vector::BitCastOp::create(b, loc, words, loaded[aPerThread + j]);
    w = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, w, splat(words, shifts[j])),
                              wordsOf(0x0F0F0F0F));
    Value z = arith::FPToSIOp::create(b, loc, words, zeros[j]);
    Value bias = arith::MulIOp::create(b, loc, arith::SubIOp::create(b, loc, wordsOf(0x80), z),
                                       wordsOf(0x01010101));
    w = arith::XOrIOp::create(b, loc, arith::AddIOp::create(b, loc, w, bias), wordsOf(0x80808080));
    if (Value mask = masks[aPerThread + j])
      w = zeroUnless(mask, w);
    OpBuilder::InsertionGuard guard(b);
    if ((j + 1) * shape.threads > bChunks) {
      auto store = scf::IfOp::create(b, loc, cmpLt(ch.chunk, bChunks), false);
      b.setInsertionPointToStart(store.thenBlock());
    }
    auto bytes = VectorType::get({4}, b.getI8Type());
    for (int64_t i = 0; i < 4; ++i) {
      Value word = vector::ExtractOp::create(b, loc, w, ArrayRef<int64_t>{i});
      Value column = vector::BitCastOp::create(
          b, loc, bytes, vector::BroadcastOp::create(b, loc, VectorType::get({1}, i32), word));
      Value n = apply(d0 + i, {ch.col});
      vector::StoreOp::create(b, loc, column, bLds[buffer], ValueRange{n, swizzled(n, ch.row)});
    }
  }
}

void KernelBuilder::createPartMasks() {
  int64_t G = quantGroup();
  if (shape.kt % G != 0 || G >= inst.k)
    return;
  AffineExpr d0 = b.getAffineDimExpr(0);
  for (int64_t part = 0; part < inst.k / G; ++part) {
    SmallVector<Value> inPart;
    for (int64_t i = 0; i < inst.perLane; ++i) {
      AffineExpr k =
          (i / inst.kChunk) * inst.kBlockStride + d0 * inst.kGroupStride + i % inst.kChunk;
      inPart.push_back(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                             apply(k.floorDiv(G), {group}), c(part)));
    }
    partMasks.push_back(vector::FromElementsOp::create(
        b, loc, VectorType::get({inst.perLane}, b.getI1Type()), inPart));
  }
}

void KernelBuilder::flushGroup(MutableArrayRef<Value> acc, Value qg, bool guarded) {
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1),
             d2 = b.getAffineDimExpr(2);
  int64_t P = plan.w4a8->panel, tiles = shape.waveTilesM * shape.waveTilesN;
  Value qc = guarded ? arith::MinUIOp::create(b, loc, qg, c(quantGroups() - 1)) : qg;
  auto sumVec = VectorType::get({inst.accPerLane}, b.getF32Type());
  // amax / 127 of each accumulator element's row (rows past M have 0).
  SmallVector<Value> rowScales;
  for (int64_t tm = 0; tm < shape.waveTilesM; ++tm) {
    SmallVector<Value> scales;
    for (int64_t r = 0; r < inst.accPerLane; ++r) {
      Value row = apply(d0 * shape.waveM + tm * inst.m + d1 * inst.dGroupStride +
                            inst.dRowOffset(r),
                        {waveM, group});
      scales.push_back(memref::LoadOp::create(b, loc, ascaleLds, ValueRange{row, qc}));
    }
    rowScales.push_back(vector::FromElementsOp::create(b, loc, sumVec, scales));
  }
  Value inRange = guarded ? cmpLt(qg, quantGroups()) : Value();
  for (int64_t tn = 0; tn < shape.waveTilesN; ++tn) {
    // The lane's column: one weight scale for all its elements.
    Value n = apply(d0 + d1 * shape.waveN + tn * inst.n + d2, {n0, waveN, laneInGroup});
    Value nc = arith::MinUIOp::create(b, loc, n, c(N - 1));
    Value s = memref::LoadOp::create(
        b, loc, scaleMem, ValueRange{apply(d0.floorDiv(P), {nc}), qc, apply(d0 % P, {nc})});
    Value sv = vector::BroadcastOp::create(b, loc, sumVec, s);
    for (int64_t tm = 0; tm < shape.waveTilesM; ++tm) {
      Value &sums = acc[tm * shape.waveTilesN + tn];
      Value &total = acc[tiles + tm * shape.waveTilesN + tn];
      Value term = arith::MulFOp::create(b, loc, arith::SIToFPOp::create(b, loc, sumVec, sums),
                                         arith::MulFOp::create(b, loc, rowScales[tm], sv));
      Value next = arith::AddFOp::create(b, loc, total, term);
      total = inRange ? Value(arith::SelectOp::create(b, loc, inRange, next, total)) : next;
      sums = arith::ConstantOp::create(b, loc, sums.getType(), b.getZeroAttr(sums.getType()));
    }
  }
}

Value KernelBase::evaluate(linalg::GenericOp generic, const DenseMap<Value, Value> &values,
                           ArrayRef<Value> outIdx, ArrayRef<Value> args) {
  IRMapping map;
  Block *body = generic.getBody();
  for (OpOperand *input : generic.getDpsInputOperands()) {
    BlockArgument arg = generic.getMatchingBlockArgument(input);
    if (Value value = values.lookup(input->get())) {
      map.map(arg, value);
      continue;
    }
    SmallVector<Value> idx = indices(generic.getMatchingIndexingMap(input), outIdx);
    if (auto side = input->get().getDefiningOp<linalg::GenericOp>()) {
      // A side value (isSideValue), evaluated at its element.
      map.map(arg, evaluate(side, {}, idx, args));
      continue;
    }
    Value mem = memrefOf(input->get(), args);
    map.map(arg, memref::LoadOp::create(b, loc, mem, idx));
  }
  for (Operation &op : body->without_terminator()) {
    for (Value operand : op.getOperands())
      if (!map.contains(operand))
        if (auto cst = operand.getDefiningOp<arith::ConstantOp>();
            cst && !body->getParent()->isAncestor(cst->getParentRegion()))
          map.map(operand, b.clone(*cst)->getResult(0));
    b.clone(op, map);
  }
  return map.lookup(cast<linalg::YieldOp>(body->getTerminator()).getOperand(0));
}

void KernelBase::storeElement(Value value, Value m, Value n, ArrayRef<Value> args, Value output) {
  Type resultElem = getElementTypeOrSelf(plan.contraction->getResult(0).getType());
  SmallVector<Value> outIdx = indices(plan.outMap, loopValues(m, n, nullptr));
  if (plan.init) {
    // The contraction accumulated from its init: add it, in the
    // accumulator's type.
    Value start = evaluate(plan.init, {}, outIdx, args);
    if (isa<FloatType>(plan.accType)) {
      if (start.getType() != plan.accType)
        start = arith::ExtFOp::create(b, loc, plan.accType, start);
      value = arith::AddFOp::create(b, loc, value, start);
    } else {
      value = arith::AddIOp::create(b, loc, value, start);
    }
  }
  if (value.getType() != resultElem)
    value = arith::TruncFOp::create(b, loc, resultElem, value);
  DenseMap<Value, Value> values;
  values[plan.contraction->getResult(0)] = value;
  for (linalg::GenericOp generic : plan.epilogue)
    value = values[generic->getResult(0)] = evaluate(generic, values, outIdx, args);
  if (!plan.resultPermutation.empty()) {
    // Through the reshapes (split dimensions delinearized, merged ones
    // linearized), then the permutation.
    for (Operation *op : plan.resultReshapes) {
      SmallVector<Value> next;
      if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
        ArrayRef<int64_t> shape = expand.getResultType().getShape();
        for (auto [g, group] : llvm::enumerate(expand.getReassociationIndices())) {
          int64_t stride = 1;
          SmallVector<Value> parts;
          for (int64_t d : llvm::reverse(group)) {
            AffineExpr e = b.getAffineDimExpr(0).floorDiv(stride);
            if (d != group.front())
              e = e % shape[d];
            parts.push_back(apply(e, {outIdx[g]}));
            stride *= shape[d];
          }
          next.append(parts.rbegin(), parts.rend());
        }
      } else {
        auto collapse = cast<tensor::CollapseShapeOp>(op);
        ArrayRef<int64_t> shape = collapse.getSrcType().getShape();
        for (const ReassociationIndices &group : collapse.getReassociationIndices()) {
          AffineExpr e = b.getAffineConstantExpr(0);
          SmallVector<Value> operands;
          for (int64_t d : group) {
            e = e * shape[d] + b.getAffineDimExpr(operands.size());
            operands.push_back(outIdx[d]);
          }
          next.push_back(apply(e, operands));
        }
      }
      outIdx = std::move(next);
    }
    outIdx = llvm::map_to_vector(plan.resultPermutation, [&](int64_t d) { return outIdx[d]; });
  }
  memref::StoreOp::create(b, loc, value, output, outIdx);
}

// Epilogue: each accumulator element, through the dispatch's elementwise
// ops, to the output.
void KernelBuilder::epilogue(scf::ForOp loop, ArrayRef<Value> args, Value output) {
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1),
             d2 = b.getAffineDimExpr(2);
  for (int64_t tm = 0; tm < shape.waveTilesM; ++tm) {
    for (int64_t tn = 0; tn < shape.waveTilesN; ++tn) {
      // (W4A8: the f32 sums after the i32 ones.)
      int64_t tiles = shape.waveTilesM * shape.waveTilesN;
      Value acc = loop.getResult((plan.w4a8 ? tiles : 0) + tm * shape.waveTilesN + tn);
      for (int64_t r = 0; r < inst.accPerLane; ++r) {
        Value m = apply(d0 + d1 * shape.waveM + tm * inst.m + d2 * inst.dGroupStride +
                            inst.dRowOffset(r),
                        {m0, waveM, group});
        Value n = apply(d0 + d1 * shape.waveN + tn * inst.n + d2, {n0, waveN, laneInGroup});
        OpBuilder::InsertionGuard ig(b);
        if (Value ok = allOf({M % shape.tileM ? cmpLt(m, M) : Value(),
                              N % shape.tileN ? cmpLt(n, N) : Value()})) {
          auto guard = scf::IfOp::create(b, loc, ok, false);
          b.setInsertionPointToStart(guard.thenBlock());
        }
        Value value = vector::ExtractOp::create(b, loc, acc, ArrayRef<int64_t>{r});
        if (int64_t ci = correctionIndex(tm, tn); ci >= 0) {
          // sum (x - 128) w - sum (-128) w = sum x w.
          Value corr = vector::ExtractOp::create(b, loc, loop.getResult(ci), ArrayRef<int64_t>{r});
          value = arith::SubIOp::create(b, loc, value, corr);
        }
        storeElement(value, m, n, args, output);
      }
    }
  }
}

/// The shape of a GEMV kernel (GemmPlan::gemvPanel): one workgroup of
/// `threads` per panel of P columns; a panel row read by `lanesPerRow`
/// lanes, 16 bytes (`v` elements) each, so that one load instruction of a
/// wave covers consecutive rows, one contiguous run; `rowGroups` =
/// threads / lanesPerRow split K. The M x P sums of the row groups meet in
/// LDS, `parts` threads per output element adding rowGroups / parts each.
struct GemvShape {
  /// 256 threads, or up to 1024 where fewer than 256 workgroups would keep
  /// too few loads in flight (a few heads' scores x V).
  int64_t threads = 256;
  /// Loads a lane issues before it uses any: 16 x unroll bytes in flight
  /// (up to 8, fewer where K has fewer rows per row group): 1024 waves
  /// of 64 with 8 KiB each cover MI355X's 8 TB/s over the memory latency.
  int64_t unroll = 0;
  int64_t v = 0, lanesPerRow = 0, rowGroups = 0, outputs = 0, parts = 0;
  int64_t workgroups = 0, batches = 1, panels = 0;
  int64_t ldsBytes = 0;

  /// Nullopt where the panel does not split into 16-byte lane chunks that
  /// tile the workgroup, M x P outputs exceed its threads, or its LDS
  /// exceeds `ldsLimit`.
  static std::optional<GemvShape> of(const GemmPlan &plan, int64_t ldsLimit) {
    GemvShape s;
    int64_t P = plan.gemvPanel, M = plan.bounds[plan.mDim];
    // (A W4A16 GEMV's rows are rows of code bytes, two k each.)
    int64_t K = plan.int4Gemv ? plan.bounds[plan.kDim] / 2 : plan.bounds[plan.kDim];
    int64_t bytes = plan.computeType.getIntOrFloatBitWidth() / 8;
    if (bytes == 0)
      return std::nullopt;
    s.v = plan.int4Gemv ? plan.int4Gemv : std::min<int64_t>(16 / bytes, P);
    while (s.v > 1 && P % s.v != 0)
      s.v /= 2;
    s.lanesPerRow = P / s.v;
    s.outputs = M * P;
    for (unsigned d : plan.batchDims)
      s.batches *= plan.bounds[d];
    s.panels = llvm::divideCeil(plan.bounds[plan.nDim], P);
    s.workgroups = s.batches * s.panels;
    int64_t accBytes = plan.accType.getIntOrFloatBitWidth() / 8;
    for (int64_t threads : {1024, 512, 256}) {
      if (threads > 256 && s.workgroups >= 256)
        continue;
      s.threads = threads;
      if (threads % s.lanesPerRow != 0 || s.outputs > threads)
        return std::nullopt;
      s.rowGroups = threads / s.lanesPerRow;
      s.parts = int64_t(1) << llvm::Log2_64(std::min(threads / s.outputs, s.rowGroups));
      s.ldsBytes = (s.rowGroups * s.outputs + s.parts * s.outputs) * accBytes;
      // (More threads than rows leave row groups idle.)
      if (s.ldsBytes <= ldsLimit && (threads == 256 || K >= 4 * s.rowGroups))
        break;
    }
    if (s.ldsBytes > ldsLimit)
      return std::nullopt;
    s.unroll = std::clamp<int64_t>(llvm::divideCeil(K, s.rowGroups), 1, 8);
    // A W4A16 row group reads `unroll` consecutive code rows of one group
    // (one load of its scales and zero points): a power of two dividing
    // the group's G / 2 rows.
    if (plan.int4Gemv) {
      s.unroll = int64_t(1) << llvm::Log2_64(s.unroll);
      while (plan.int4->group / 2 % s.unroll != 0)
        s.unroll /= 2;
    }
    return s;
  }
};

/// Builds the GEMV kernel of a few-row product by a weight in column panels
/// (kiln.matmul_panels: out[m, n] += lhs[m, k] w[n / P, k, n mod P], M <=
/// kMaxGemvRows), which streams the weight once and is bound by memory
/// bandwidth, not by arithmetic: no matrix instructions. Row group g of a
/// workgroup takes rows g, g + RG, ... of its panel; each iteration a lane
/// issues `unroll` 16-byte loads of its rows before using any, then
/// multiplies each by the M activations of its row (scalar loads, the same
/// for every workgroup: cached) into M vector accumulators, in f32 (or i32
/// for 8-bit operands). The row groups' sums meet in LDS, and one thread
/// per output element adds them up and runs the dispatch's epilogue.
class GemvBuilder : KernelBase {
public:
  GemvBuilder(OpBuilder &b, Location loc, const GemmPlan &plan, const GemvShape &shape,
              Fault fault)
      : KernelBase(b, loc, plan), shape(shape), fault(fault) {}

  /// Builds the kernel; `workgroups` receives its workgroup count.
  void build(ArrayRef<Value> args, Value output, int64_t &workgroups);

private:
  /// The main loop of a W4A16 GEMV (GemmPlan::int4Gemv); returns each
  /// row's vector of this lane's sums.
  SmallVector<Value> int4Loop(ArrayRef<Value> args, Value rowGroup, Value n0, Value columnOk);
  /// The row groups' sums `rowSums` (one vector per row) added up across
  /// the workgroup in LDS; each output element through the epilogue.
  void reduceAndStore(ValueRange rowSums, Value tid, Value rowGroup, Value column, Value panel,
                      ArrayRef<Value> args, Value output);
  /// A loaded vector or scalar of the panels' or lhs's type in the
  /// accumulator's type.
  Value widen(Value value, bool isUnsigned) {
    Type acc = plan.accType;
    if (auto vec = dyn_cast<VectorType>(value.getType()))
      acc = VectorType::get(vec.getShape(), plan.accType);
    if (value.getType() == acc)
      return value;
    if (isa<FloatType>(plan.accType))
      return arith::ExtFOp::create(b, loc, acc, value);
    return isUnsigned ? Value(arith::ExtUIOp::create(b, loc, acc, value))
                      : Value(arith::ExtSIOp::create(b, loc, acc, value));
  }
  Value workgroupBuffer(ArrayRef<int64_t> shape) {
    auto alloca = memref::AllocaOp::create(b, loc, MemRefType::get(shape, plan.accType));
    alloca->setAttr(kWorkgroupMemoryAttr, b.getUnitAttr());
    return alloca.getResult();
  }
  /// sum over i in [0, count) of load(i), in the accumulator's type.
  Value sumOf(int64_t count, function_ref<Value(Value)> load) {
    Value zero = arith::ConstantOp::create(b, loc, plan.accType, b.getZeroAttr(plan.accType));
    auto loop = scf::ForOp::create(b, loc, c(0), c(count), c(1), ValueRange{zero});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value term = load(loop.getInductionVar());
    Value sum = isa<FloatType>(plan.accType)
                    ? Value(arith::AddFOp::create(b, loc, loop.getRegionIterArgs()[0], term))
                    : Value(arith::AddIOp::create(b, loc, loop.getRegionIterArgs()[0], term));
    scf::YieldOp::create(b, loc, sum);
    return loop.getResult(0);
  }

  const GemvShape &shape;
  /// ShiftLanes: each lane multiplies its weights by the activations of the
  /// next row (a test of the emulation; swap-operands does not apply).
  Fault fault;
};

void GemvBuilder::build(ArrayRef<Value> args, Value output, int64_t &workgroups) {
  const int64_t M = plan.bounds[plan.mDim], N = plan.bounds[plan.nDim],
                K = plan.bounds[plan.kDim], P = plan.gemvPanel, v = shape.v,
                RG = shape.rowGroups, U = shape.unroll;
  workgroups = shape.workgroups;
  Value aMem = reshapeMemref(b, loc, args[plan.a.arg.getArgNumber()], plan.a.reshapes);
  Value wMem = plan.int4 ? Value()
                        : reshapeMemref(b, loc, args[plan.b.arg.getArgNumber()], plan.b.reshapes);
  // Workgroup -> (batch, panel).
  Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value panel = block;
  if (shape.batches > 1) {
    auto wg = affine::AffineDelinearizeIndexOp::create(
        b, loc, block, ArrayRef<int64_t>{shape.batches, shape.panels});
    SmallVector<int64_t> batchBounds;
    for (unsigned d : plan.batchDims)
      batchBounds.push_back(plan.bounds[d]);
    auto del = affine::AffineDelinearizeIndexOp::create(b, loc, wg.getResult(0), batchBounds);
    batchIdx.assign(del.getResults().begin(), del.getResults().end());
    panel = wg.getResult(1);
  } else {
    for (size_t i = 0; i < plan.batchDims.size(); ++i)
      batchIdx.push_back(c(0));
  }
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  Value rowGroup = apply(d0.floorDiv(shape.lanesPerRow), {tid});
  Value column = apply((d0 % shape.lanesPerRow) * v, {tid});

  auto accVec = VectorType::get({v}, plan.accType);
  Value zero = arith::ConstantOp::create(b, loc, accVec, b.getZeroAttr(accVec));
  SmallVector<Value> init(M, zero);
  // Rows past K only where the row groups' steps do not divide it: their
  // loads are clamped into the panel (no branch) and their products zeroed;
  // likewise a row-major B's columns past N in its last column block.
  bool ragged = K % (RG * U) != 0;
  Value n0 = apply(d0 * P + d1, {panel, column}), columnOk;
  if (plan.gemvRowMajor && N % P != 0) {
    columnOk = cmpLt(n0, N);
    n0 = arith::MinUIOp::create(b, loc, n0, c(N - v));
  }
  if (plan.int4Gemv) {
    reduceAndStore(int4Loop(args, rowGroup, n0, columnOk), tid, rowGroup, column, panel, args,
                   output);
    return;
  }
  auto loop = scf::ForOp::create(b, loc, c(0), c(K), c(RG * U), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value k0 = loop.getInductionVar();
    auto wType = VectorType::get({v}, plan.computeType);
    SmallVector<Value> rows, weights, inRange;
    SmallVector<SmallVector<Value>> xs(U);
    for (int64_t u = 0; u < U; ++u) {
      Value k = apply(d0 + d1 + u * RG, {k0, rowGroup});
      inRange.push_back(ragged ? cmpLt(k, K) : Value());
      if (ragged)
        k = arith::MinUIOp::create(b, loc, k, c(K - 1));
      SmallVector<Value> at = plan.gemvRowMajor
                                  ? indices(plan.b.map, loopValues(nullptr, n0, k))
                                  : SmallVector<Value>{panel, k, column};
      weights.push_back(vector::LoadOp::create(b, loc, wType, wMem, at));
      Value xk = fault == Fault::ShiftLanes ? apply((d0 + 1) % K, {k}) : k;
      for (int64_t m = 0; m < M; ++m)
        xs[u].push_back(memref::LoadOp::create(
            b, loc, aMem, indices(plan.a.map, loopValues(c(m), nullptr, xk))));
    }
    // The loads stay ahead of the arithmetic that waits for them.
    amdgpu::SchedBarrierOp::create(b, loc, amdgpu::sched_barrier_opt_enum::none);
    SmallVector<Value> acc(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
    for (int64_t u = 0; u < U; ++u) {
      Value w = widen(weights[u], plan.b.isUnsigned);
      if (Value ok = inRange[u] && columnOk
                         ? Value(arith::AndIOp::create(b, loc, inRange[u], columnOk))
                         : inRange[u] ? inRange[u] : columnOk)
        w = zeroUnless(ok, w);
      for (int64_t m = 0; m < M; ++m) {
        Value x = vector::BroadcastOp::create(b, loc, accVec, widen(xs[u][m], plan.a.isUnsigned));
        acc[m] = isa<FloatType>(plan.accType)
                     ? Value(vector::FMAOp::create(b, loc, x, w, acc[m]))
                     : Value(arith::AddIOp::create(b, loc, acc[m],
                                                   arith::MulIOp::create(b, loc, x, w)));
      }
    }
    scf::YieldOp::create(b, loc, acc);
  }

  reduceAndStore(loop.getResults(), tid, rowGroup, column, panel, args, output);
}

/// W4A16: row group rg takes the `unroll` consecutive code rows r0 = (k0 +
/// rg) U .. of one quantization group g (U divides G / 2), whose bytes hold
/// k = g G + j and g G + G / 2 + j in their low and high nibbles. With
/// sum_k x_k (c_k - z) s = s (sum_k x_k c_k - z sum_k x_k) per group and
/// column, each code costs a conversion and one multiply-add per row; the
/// scales and zero points are read once per U rows.
SmallVector<Value> GemvBuilder::int4Loop(ArrayRef<Value> args, Value rowGroup, Value n0,
                                         Value columnOk) {
  const int64_t M = plan.bounds[plan.mDim], K = plan.bounds[plan.kDim], rows = K / 2,
                G = plan.int4->group, H = G / 2, v = shape.v, RG = shape.rowGroups,
                U = shape.unroll;
  Value aMem = reshapeMemref(b, loc, args[plan.a.arg.getArgNumber()], plan.a.reshapes);
  Value codes = memrefOf(plan.int4->codes, args);
  Value scales = memrefOf(plan.int4->scale, args), zeros = memrefOf(plan.int4->zero, args);
  auto accVec = VectorType::get({v}, plan.accType);
  Value zero = arith::ConstantOp::create(b, loc, accVec, b.getZeroAttr(accVec));
  SmallVector<Value> init(M, zero);
  // Rows past the last only where the row groups' steps do not divide
  // them: the whole step of U rows is out (U divides the rows), its loads
  // clamped to the last step and its sums zeroed.
  bool ragged = rows % (RG * U) != 0;
  auto loop = scf::ForOp::create(b, loc, c(0), c(rows), c(RG * U), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  Value r0 = apply(d0 + d1 * U, {loop.getInductionVar(), rowGroup});
  Value ok = columnOk;
  if (ragged) {
    Value inRange = cmpLt(r0, rows);
    ok = ok ? Value(arith::AndIOp::create(b, loc, ok, inRange)) : inRange;
    r0 = arith::MinUIOp::create(b, loc, r0, c(rows - U));
  }
  Value g = apply(d0.floorDiv(H), {r0}), j0 = apply(d0 % H, {r0});
  SmallVector<Value> bytes;
  for (int64_t u = 0; u < U; ++u)
    bytes.push_back(vector::LoadOp::create(b, loc, VectorType::get({v}, b.getI8Type()), codes,
                                           ValueRange{g, apply(d0 + u, {j0}), n0}));
  Type paramType = cast<MemRefType>(scales.getType()).getElementType();
  auto paramVec = VectorType::get({v}, paramType);
  Value scale = vector::LoadOp::create(b, loc, paramVec, scales, ValueRange{g, n0});
  Value zeroPoint = vector::LoadOp::create(b, loc, paramVec, zeros, ValueRange{g, n0});
  // xs[m][h]: row m's U activations at k = g G + h H + j0 .. (contiguous:
  // one vector load each).
  Type aType = cast<MemRefType>(aMem.getType()).getElementType();
  SmallVector<SmallVector<Value>> xs(M);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t h = 0; h < 2; ++h) {
      Value k = apply(d0 * G + d1 + h * H, {g, j0});
      if (fault == Fault::ShiftLanes)
        k = arith::MinUIOp::create(b, loc, apply(d0 + 1, {k}), c(K - U));
      xs[m].push_back(vector::LoadOp::create(b, loc, VectorType::get({U}, aType), aMem,
                                             indices(plan.a.map, loopValues(c(m), nullptr, k))));
    }
  // The loads stay ahead of the arithmetic that waits for them.
  amdgpu::SchedBarrierOp::create(b, loc, amdgpu::sched_barrier_opt_enum::none);
  // Per nibble (low ones, then high ones), its floats times each row's
  // activation: dots[m] = sum_k x_k c_k, xsums[m] = sum_k x_k.
  auto wide = VectorType::get({v}, b.getI32Type());
  SmallVector<Value> dots(M), xsums(M);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t u = 0; u < U; ++u) {
      Value w = arith::ExtUIOp::create(b, loc, wide, bytes[u]);
      Value nibble =
          h == 0 ? Value(arith::AndIOp::create(
                       b, loc, w,
                       arith::ConstantOp::create(b, loc, wide,
                                                 DenseElementsAttr::get(wide, APInt(32, 15)))))
                 : Value(arith::ShRUIOp::create(
                       b, loc, w,
                       arith::ConstantOp::create(b, loc, wide,
                                                 DenseElementsAttr::get(wide, APInt(32, 4)))));
      Value f = arith::UIToFPOp::create(b, loc, accVec, nibble);
      for (int64_t m = 0; m < M; ++m) {
        Value x = widen(vector::ExtractOp::create(b, loc, xs[m][h], u), false);
        Value xv = vector::BroadcastOp::create(b, loc, accVec, x);
        dots[m] = dots[m] ? Value(vector::FMAOp::create(b, loc, xv, f, dots[m]))
                          : Value(arith::MulFOp::create(b, loc, xv, f));
        xsums[m] = xsums[m] ? Value(arith::AddFOp::create(b, loc, xsums[m], x)) : x;
      }
    }
  Value s = widen(scale, false), z = widen(zeroPoint, false);
  SmallVector<Value> acc(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
  for (int64_t m = 0; m < M; ++m) {
    Value dot = dots[m], xsum = xsums[m];
    // (dot - z xsum) s, added to the row's sums.
    Value minusSum =
        vector::BroadcastOp::create(b, loc, accVec, arith::NegFOp::create(b, loc, xsum));
    Value t = vector::FMAOp::create(b, loc, minusSum, z, dot);
    if (ok)
      t = zeroUnless(ok, t);
    acc[m] = vector::FMAOp::create(b, loc, t, s, acc[m]);
  }
  scf::YieldOp::create(b, loc, acc);
  return SmallVector<Value>(loop.getResults());
}

void GemvBuilder::reduceAndStore(ValueRange rowSums, Value tid, Value rowGroup, Value column,
                                 Value panel, ArrayRef<Value> args, Value output) {
  const int64_t M = plan.bounds[plan.mDim], N = plan.bounds[plan.nDim], P = plan.gemvPanel,
                RG = shape.rowGroups;
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  // The row groups' sums: [RG][M][P], then [parts][M x P].
  Value sums = workgroupBuffer({RG, M, P});
  Value partial = workgroupBuffer({shape.parts, M * P});
  for (int64_t m = 0; m < M; ++m)
    vector::StoreOp::create(b, loc, rowSums[m], sums, ValueRange{rowGroup, c(m), column});
  gpu::BarrierOp::create(b, loc);
  const int64_t O = shape.outputs, perPart = RG / shape.parts;
  {
    OpBuilder::InsertionGuard guard(b);
    if (O * shape.parts < shape.threads) {
      auto active = scf::IfOp::create(b, loc, cmpLt(tid, O * shape.parts), false);
      b.setInsertionPointToStart(active.thenBlock());
    }
    Value o = apply(d0 % O, {tid}), part = apply(d0.floorDiv(O), {tid});
    Value m = apply(d0.floorDiv(P), {o}), col = apply(d0 % P, {o});
    Value sum = sumOf(perPart, [&](Value r) {
      Value row = apply(d0 * perPart + d1, {part, r});
      return memref::LoadOp::create(b, loc, sums, ValueRange{row, m, col});
    });
    memref::StoreOp::create(b, loc, sum, partial, ValueRange{part, o});
  }
  gpu::BarrierOp::create(b, loc);
  OpBuilder::InsertionGuard guard(b);
  Value n = apply(d0 * P + d1 % P, {panel, tid});
  Value ok = cmpLt(tid, O);
  if (N % P != 0)
    ok = arith::AndIOp::create(b, loc, ok, cmpLt(n, N));
  auto active = scf::IfOp::create(b, loc, ok, false);
  b.setInsertionPointToStart(active.thenBlock());
  Value sum = sumOf(shape.parts, [&](Value part) {
    return memref::LoadOp::create(b, loc, partial, ValueRange{part, tid});
  });
  storeElement(sum, apply(d0.floorDiv(P), {tid}), n, args, output);
}

struct KilnGPUBuildGemmsPass : kiln::impl::KilnGPUBuildGemmsBase<KilnGPUBuildGemmsPass> {
  using KilnGPUBuildGemmsBase::KilnGPUBuildGemmsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    bool failed = false;
    const gfx::Target *target = gfx::builderTarget(func, chip, failed);
    if (failed)
      return signalPassFailure();
    if (!target)
      return;
    gfx::Precision prec = precision == "f16"    ? gfx::Precision::F16
                          : precision == "bf16" ? gfx::Precision::BF16
                                                : gfx::Precision::F32;
    std::optional<GemmPlan> plan = matchGemm(func, *target, prec);
    if (!plan)
      return;
    Fault fault = testFault == "swap-operands" ? Fault::SwapOperands
                  : testFault == "shift-lanes" ? Fault::ShiftLanes
                  : testFault == "window-taps" ? Fault::WindowTaps
                                               : Fault::None;
    // (skip-lane is kiln-gpu-build-row-reductions' fault: the driver hands
    // both passes the same one.)
    if (fault == Fault::None && !testFault.empty() && testFault != "skip-lane") {
      func.emitError("unknown test fault '")
          << testFault << "' (known: swap-operands, shift-lanes, window-taps, skip-lane)";
      return signalPassFailure();
    }
    std::optional<gfx::StepSchedule> schedule;
    if (!testLoadAhead.empty() && testLoadAhead != "on" && testLoadAhead != "off") {
      func.emitError("test-load-ahead must be on or off, not '") << testLoadAhead << "'";
      return signalPassFailure();
    }
    if (!testStepSchedule.empty() && !(schedule = gfx::parseStepSchedule(testStepSchedule))) {
      func.emitError("unknown test step schedule '")
          << testStepSchedule << "' (known: llvm, matrix, interleaved)";
      return signalPassFailure();
    }
    // A GEMV, or a GEMM of the target table's tiling.
    std::optional<GemvShape> gemv;
    std::optional<KernelShape> shape;
    if (plan->gemvPanel) {
      gemv = GemvShape::of(*plan, target->ldsPerWorkgroup);
      if (!gemv)
        return;
    } else {
      int64_t batch = 1;
      for (unsigned d : plan->batchDims)
        batch *= plan->bounds[d];
      bool w4a16 = plan->int4.has_value();
      // W4A8 keeps the small tiling: its f32 sums double the accumulators.
      gfx::GemmTiling tiling = plan->w4a8 ? target->gemm
                                          : target->gemmTiling(*plan->inst, batch,
                                                               plan->bounds[plan->mDim],
                                                               plan->bounds[plan->nDim], w4a16);
      if (testWaveTiles > 0)
        tiling.waveTilesM = tiling.waveTilesN = testWaveTiles;
      if (const gfx::GemmTiling *large = target->largeTiling(*plan->inst, w4a16);
          large && testLargeTiling)
        tiling = *large;
      if (schedule)
        tiling.schedule16 = tiling.schedule8 = *schedule;
      // 32 x 32 instructions where the tiling asks for them, each in place
      // of 2 x 2 of its 16 x 16 tiles: plain products (not implicit GEMMs,
      // 4-bit weights or values, or sign-corrected bytes).
      bool implicitGemm = linalg::isaConvolutionOpInterface(plan->contraction);
      bool wide = plan->computeType.getIntOrFloatBitWidth() == 16 ? tiling.wide16 : tiling.wide8;
      if (wide && !plan->int4 && !plan->w4a8 && !plan->a.flipSign && !plan->b.flipSign &&
          !plan->a.fourBit && !plan->b.fourBit && !implicitGemm &&
          tiling.waveTilesM % 2 == 0 && tiling.waveTilesN % 2 == 0) {
        if (const MatrixInstruction *wideInst = target->gemmInstruction(plan->inst->input, 32)) {
          plan->inst = wideInst;
          tiling.waveTilesM /= 2;
          tiling.waveTilesN /= 2;
        }
      }
      // Implicit GEMMs keep their loads one step ahead: their B is gathered
      // element by element, many registers to carry through a step
      // (ResNet-50 in f16, whole model: MI300X 3.09 ms with every GEMM one
      // step ahead, 3.11 with all two, 3.07 with the convolutions one).
      if (implicitGemm)
        tiling.loadAhead16 = tiling.loadAhead8 = false;
      if (!testLoadAhead.empty())
        tiling.loadAhead16 = tiling.loadAhead8 = testLoadAhead == "on";
      // 16-bit operands on 16-deep instructions step K by 64 in the small
      // tiling: a 64 x 64 tile's B panel then has a 16-byte chunk for every
      // thread (by 32 it had 128 chunks for 256 threads: idle threads and a
      // branch around the stores in the main loop), and each barrier covers
      // twice the matrix work. The BERT-style encoder's projections on
      // gfx942: 5.66x -> 3.44x the matrix-pipe bound. The same for a B
      // stored k-fastest (kiln-transpose-matmul-weights: 64 x 32 is one
      // chunk per thread, but 64 deep halves the barriers per matrix
      // instruction; the LLaMA-style prefill's projections on gfx942:
      // 3.04x -> 2.29x). The large tilings
      // keep 32 (gfx942's LDS would hold one workgroup per CU; gfx1100
      // spilled), and so do W4A16 (19 VGPRs spilled on gfx1100) and
      // implicit GEMMs, whose B (the image through the window) is gathered
      // element by element anyway, and K under 256, whose main loop would
      // run once and vanish (ResNet-50's 1x1 convolutions of 128 channels
      // became loop-free kernels: 3.21 -> 3.43 ms on MI300X).
      bool large = tiling.waveTilesM * tiling.waveTilesN > 4;
      if (!large && !plan->int4 && !implicitGemm && plan->bounds[plan->kDim] >= 256 &&
          plan->computeType.getIntOrFloatBitWidth() == 16 &&
          plan->inst->k * tiling.stepInstructions < 64)
        tiling.stepInstructions = 64 / plan->inst->k;
      if (plan->w4a8) {
        // A group ends within a step (G divides KT) or after whole
        // iterations (2 KT divides G), on an instruction boundary; fewer
        // instructions per step where that makes it so. Other groups stay on
        // the generic path.
        // Groups shorter than an instruction's k take an instruction per
        // group, each with the other groups' activations zeroed.
        int64_t G = plan->w4a8->group, k = plan->inst->k;
        while (tiling.stepInstructions > 1 && k * tiling.stepInstructions % G != 0 &&
               G % (2 * k * tiling.stepInstructions) != 0)
          tiling.stepInstructions /= 2;
        int64_t kt = k * tiling.stepInstructions;
        if ((G % k != 0 && k % G != 0) || (kt % G != 0 && G % (2 * kt) != 0))
          return;
      }
      if (!plan->w4a8) {
        shape.emplace(*target, tiling, *plan->inst, plan->computeType);
      } else {
        // 127 / amax and amax / 127 per tile row and group in LDS: one
        // instruction tile per wave for a decode step's few rows (a 16 x 32
        // tile: twice the workgroups of 16 x 64, which kiln-inspect --perf
        // puts at 4.6 instead of 6.1 us for 4096 x 4096 on MI300X, memory
        // latency-bound), and fewer rows per tile while a K of many groups
        // does not fit (none fit: the generic path).
        int64_t groups = plan->bounds[plan->kDim] / plan->w4a8->group;
        if (plan->bounds[plan->mDim] <= plan->inst->m)
          tiling.wavesM = tiling.waveTilesM = tiling.waveTilesN = 1;
        while (true) {
          shape.emplace(*target, tiling, *plan->inst, plan->computeType);
          shape->ldsBytes += 2 * shape->tileM * groups * 4;
          if (shape->ldsBytes <= target->ldsPerWorkgroup)
            break;
          if (tiling.waveTilesM > 1)
            tiling.waveTilesM /= 2;
          else if (tiling.wavesM > 1)
            tiling.wavesM /= 2;
          else
            return;
        }
      }
      if (shape->ldsBytes > target->ldsPerWorkgroup) {
        func.emitError() << "the " << shape->tileM << " x " << shape->tileN
                         << " GEMM tile needs " << shape->ldsBytes
                         << " bytes of LDS, more than the " << target->ldsPerWorkgroup
                         << " a workgroup can allocate on " << target->name;
        return signalPassFailure();
      }
    }

    // The kernel takes memrefs: the inputs, then the output.
    Block &entry = func.getBody().front();
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    auto resultType = cast<RankedTensorType>(ret.getOperand(0).getType());
    SmallVector<Type> argTypes;
    // (4-bit tensors are one element per byte in memory: read as bytes,
    // 16 per load, their low nibbles packed per fragment. Loaded as i4, each
    // element took a load of its own.)
    for (Type t : func.getArgumentTypes()) {
      auto tensor = cast<RankedTensorType>(t);
      Type elem = tensor.getElementType();
      if (elem.isInteger(4))
        elem = IntegerType::get(func.getContext(), 8);
      argTypes.push_back(MemRefType::get(tensor.getShape(), elem));
    }
    argTypes.push_back(MemRefType::get(resultType.getShape(), resultType.getElementType()));
    Block *newEntry = new Block();
    SmallVector<Value> args;
    for (Type t : argTypes)
      args.push_back(newEntry->addArgument(t, func.getLoc()));

    OpBuilder b(func.getContext());
    b.setInsertionPointToStart(newEntry);
    // The output as the last epilogue value's shape: undo the trailing
    // reshapes on the memref.
    // (With a transposed result, the stores compute their indices.)
    Value output = args.back();
    for (Operation *op : llvm::reverse(plan->resultPermutation.empty()
                                           ? ArrayRef<Operation *>(plan->resultReshapes)
                                           : ArrayRef<Operation *>())) {
      if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
        output = memref::CollapseShapeOp::create(b, func.getLoc(), output,
                                                 expand.getReassociationIndices());
      } else {
        auto collapse = cast<tensor::CollapseShapeOp>(op);
        auto type = MemRefType::get(collapse.getSrcType().getShape(),
                                    collapse.getSrcType().getElementType());
        output = memref::ExpandShapeOp::create(b, func.getLoc(), type, output,
                                               collapse.getReassociationIndices());
      }
    }
    int64_t workgroups = 0;
    if (gemv)
      GemvBuilder(b, func.getLoc(), *plan, *gemv, fault).build(args, output, workgroups);
    else
      KernelBuilder(b, func.getLoc(), *plan, *target, *shape, fault)
          .build(args, output, workgroups);
    func::ReturnOp::create(b, func.getLoc());

    // Swap the bodies.
    func.getBody().push_front(newEntry);
    entry.dropAllDefinedValueUses();
    entry.erase();
    func.setType(b.getFunctionType(argTypes, {}));
    func->setAttr(kWorkgroupCountAttr, b.getI64IntegerAttr(workgroups));
    func->setAttr(kWorkgroupSizeAttr,
                  b.getI64IntegerAttr(gemv ? gemv->threads : shape->threads));
    func->setAttr(kLdsBytesAttr, b.getI64IntegerAttr(gemv ? gemv->ldsBytes : shape->ldsBytes));
    if (plan->inst)
      func->setAttr(kMatrixInstructionAttr, b.getStringAttr(plan->inst->mnemonic));
  }
};
} // namespace
