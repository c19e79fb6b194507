//===- MergeHeadProjections.cpp - kiln-merge-head-projections -------------===//
//
// The query, key and value projections of an attention layer read one
// activation and are each split into heads: three GEMMs of one row block.
// They become one GEMM by the weights side by side, split into heads once;
// each projection's heads are then a contiguous range of the result, a
// slice that programs keep as a view. See the pass description in
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "llvm/ADT/MapVector.h"

#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_KILNMERGEHEADPROJECTIONS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// One projection `transpose(reshape(x W (+ b)))` into heads.
struct Projection {
  MatmulOp matmul;
  ConstantOp weight;         // [K, N]
  AddOp add;                 // the bias, or null
  ConstantOp bias;           // [N], or null
  ReshapeOp reshape;         // [1, S, N] -> [1, S, H, D]
  TransposeOp transpose;     // -> [1, H, S, D] (0, 2, 1, 3) or [1, H, D, S] (0, 2, 3, 1)
  int64_t heads = 0, headSize = 0;
  bool keyLayout = false;    // (0, 2, 3, 1): K^T
};

/// A rotary embedding of heads [start, end) of a merged projection, through
/// the slice that takes them.
struct RotaryPart {
  SliceOp slice;
  RotaryEmbeddingOp rope;
  int64_t start, end;
};

/// The row-major bytes of constant `cst` (splats repeated), when its
/// elements are whole bytes.
std::optional<std::vector<char>> constantBytes(ConstantOp cst) {
  auto type = cast<RankedTensorType>(cst.getType());
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  if (bits % 8 != 0 || !type.hasStaticShape())
    return std::nullopt;
  size_t size = size_t(type.getNumElements()) * (bits / 8);
  if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue()); dense && dense.isSplat()) {
    ArrayRef<char> one = dense.getRawData();
    if (one.size() != bits / 8)
      return std::nullopt;
    std::vector<char> bytes;
    bytes.reserve(size);
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      bytes.insert(bytes.end(), one.begin(), one.end());
    return bytes;
  }
  std::optional<ArrayRef<char>> raw = rawConstantBytes(cst.getValue());
  if (!raw || raw->size() != size)
    return std::nullopt;
  return std::vector<char>(raw->begin(), raw->end());
}

/// The single user of `v`, or null.
Operation *onlyUser(Value v) { return v.hasOneUse() ? *v.getUsers().begin() : nullptr; }

/// `matmul` as a projection into heads, or nullopt.
std::optional<Projection> matchProjection(MatmulOp matmul) {
  auto xType = cast<RankedTensorType>(matmul.getLhs().getType());
  auto type = cast<RankedTensorType>(matmul.getType());
  auto weight = matmul.getRhs().getDefiningOp<ConstantOp>();
  if (!weight || xType.getRank() != 3 || !xType.hasStaticShape() || xType.getDimSize(0) != 1 ||
      !isa<FloatType>(xType.getElementType()) ||
      cast<RankedTensorType>(weight.getType()).getRank() != 2 ||
      weight.getType().getElementType() != xType.getElementType() || !constantBytes(weight))
    return std::nullopt;
  Projection p;
  p.matmul = matmul;
  p.weight = weight;
  int64_t n = type.getDimSize(2);
  Operation *user = onlyUser(matmul.getResult());
  if (auto add = dyn_cast_or_null<AddOp>(user)) {
    Value other = add.getLhs() == matmul.getResult() ? add.getRhs() : add.getLhs();
    auto bias = other.getDefiningOp<ConstantOp>();
    auto biasType = cast<RankedTensorType>(other.getType());
    if (!bias || add.getType() != type || biasType.getRank() != 1 || biasType.getDimSize(0) != n ||
        !constantBytes(bias))
      return std::nullopt;
    p.add = add;
    p.bias = bias;
    user = onlyUser(add.getResult());
  }
  p.reshape = dyn_cast_or_null<ReshapeOp>(user);
  if (!p.reshape)
    return std::nullopt;
  auto heads = cast<RankedTensorType>(p.reshape.getType());
  if (heads.getRank() != 4 || heads.getDimSize(0) != 1 ||
      heads.getDimSize(1) != type.getDimSize(1) || heads.getDimSize(2) * heads.getDimSize(3) != n)
    return std::nullopt;
  p.transpose = dyn_cast_or_null<TransposeOp>(onlyUser(p.reshape.getResult()));
  if (!p.transpose)
    return std::nullopt;
  ArrayRef<int64_t> perm = p.transpose.getPermutation();
  if (perm == ArrayRef<int64_t>{0, 2, 3, 1})
    p.keyLayout = true;
  else if (perm != ArrayRef<int64_t>{0, 2, 1, 3})
    return std::nullopt;
  p.heads = heads.getDimSize(2);
  p.headSize = heads.getDimSize(3);
  return p;
}

struct KilnMergeHeadProjectionsPass
    : kiln::impl::KilnMergeHeadProjectionsBase<KilnMergeHeadProjectionsPass> {
  void runOnOperation() override {
    // Projections by the activation they read and their head size, in
    // block order.
    llvm::MapVector<std::pair<Value, int64_t>, SmallVector<Projection>> groups;
    getOperation().walk([&](MatmulOp matmul) {
      if (std::optional<Projection> p = matchProjection(matmul))
        groups[{matmul.getLhs(), p->headSize}].push_back(*p);
    });
    unsigned counter = 0;
    for (auto &[key, members] : groups) {
      if (members.size() < 2 || members.front().matmul->getBlock() != members.back().matmul->getBlock())
        continue;
      merge(members, counter++);
    }
  }

  /// Rotary embeddings of adjacent head ranges of `all` ([1, H, S, D]), with
  /// the same tables, become one over their union: a LLaMA-style layer
  /// rotates its query and key heads in one kernel. Each becomes a slice of
  /// the merged result (a view, like the ranges it rotated).
  static void mergeRotaryEmbeddings(Value all) {
    auto type = cast<RankedTensorType>(all.getType());
    // By (cos, sin, interleaved): the rotations of head ranges of `all`.
    llvm::MapVector<std::tuple<Value, Value, unsigned>, SmallVector<RotaryPart>> byTables;
    for (Operation *user : all.getUsers()) {
      auto slice = dyn_cast<SliceOp>(user);
      if (!slice || !slice->hasOneUse())
        continue;
      auto rope = dyn_cast<RotaryEmbeddingOp>(*slice->getUsers().begin());
      if (!rope || rope.getInput() != slice.getResult())
        continue;
      ArrayRef<int64_t> starts = slice.getStarts(), ends = slice.getEnds();
      bool headsOnly = llvm::all_of(slice.getSteps(), [](int64_t step) { return step == 1; });
      for (int64_t dim : {0, 2, 3})
        headsOnly &= starts[dim] == 0 && ends[dim] == type.getDimSize(dim);
      // The tables broadcast along the heads (their dimension there is 1,
      // or they have none), so they broadcast to any number of heads.
      for (Value table : {rope.getCos(), rope.getSin()}) {
        auto t = cast<RankedTensorType>(table.getType());
        int64_t at = t.getRank() - 3; // the heads' dimension, aligned right
        headsOnly &= at < 0 || t.getDimSize(at) == 1;
      }
      if (headsOnly)
        byTables[{rope.getCos(), rope.getSin(), unsigned(rope.getInterleaved())}].push_back(
            {slice, rope, starts[1], ends[1]});
    }
    for (auto &[tables, parts] : byTables) {
      llvm::sort(parts, [](const RotaryPart &a, const RotaryPart &b) { return a.start < b.start; });
      for (size_t i = 0; i < parts.size();) {
        size_t j = i + 1;
        while (j < parts.size() && parts[j].start == parts[j - 1].end)
          ++j;
        if (j - i >= 2)
          mergeRun(all, MutableArrayRef<RotaryPart>(parts).slice(i, j - i));
        i = j;
      }
    }
  }

  static void mergeRun(Value all, MutableArrayRef<RotaryPart> run) {
    Operation *first = run.front().rope;
    for (RotaryPart &p : run)
      if (p.rope->isBeforeInBlock(first))
        first = p.rope;
    auto type = cast<RankedTensorType>(all.getType());
    int64_t start = run.front().start, end = run.back().end;
    auto unionType = RankedTensorType::get(
        {type.getDimSize(0), end - start, type.getDimSize(2), type.getDimSize(3)},
        type.getElementType());
    OpBuilder b(first);
    Location loc = b.getFusedLoc(llvm::map_to_vector(run, [](RotaryPart &p) {
      return p.rope.getLoc();
    }));
    RotaryEmbeddingOp model = run.front().rope;
    Value heads = unionType == type
                      ? all
                      : SliceOp::create(b, loc, unionType, all,
                                        b.getDenseI64ArrayAttr({0, start, 0, 0}),
                                        b.getDenseI64ArrayAttr({type.getDimSize(0), end,
                                                                type.getDimSize(2),
                                                                type.getDimSize(3)}),
                                        b.getDenseI64ArrayAttr({1, 1, 1, 1}));
    Value rotated = RotaryEmbeddingOp::create(b, loc, unionType, heads, model.getCos(),
                                              model.getSin(), model.getInterleavedAttr());
    // Each part a slice of the merged rotation; erased once all are built
    // (the builder inserts before the first of them).
    SmallVector<Value> slices;
    for (RotaryPart &p : run)
      slices.push_back(SliceOp::create(
          b, p.rope.getLoc(), p.rope.getType(), rotated,
          b.getDenseI64ArrayAttr({0, p.start - start, 0, 0}),
          b.getDenseI64ArrayAttr({type.getDimSize(0), p.end - start, type.getDimSize(2),
                                  type.getDimSize(3)}),
          b.getDenseI64ArrayAttr({1, 1, 1, 1})));
    for (auto [p, slice] : llvm::zip(run, slices)) {
      p.rope.getResult().replaceAllUsesWith(slice);
      p.rope.erase();
      p.slice.erase();
    }
  }

  void merge(MutableArrayRef<Projection> members, unsigned index) {
    Projection first = members.front();
    for (Projection &p : members)
      if (p.matmul->isBeforeInBlock(first.matmul))
        first = p;
    Value x = first.matmul.getLhs();
    auto xType = cast<RankedTensorType>(x.getType());
    Type elem = xType.getElementType();
    int64_t k = xType.getDimSize(2), seq = xType.getDimSize(1), d = first.headSize;
    size_t elemBytes = elem.getIntOrFloatBitWidth() / 8;
    int64_t n = 0, heads = 0;
    bool anyBias = false;
    for (Projection &p : members) {
      n += p.heads * d;
      heads += p.heads;
      anyBias |= static_cast<bool>(p.bias);
    }
    // The weights side by side: row r of the merged one is row r of each.
    std::vector<char> weight(size_t(k) * n * elemBytes), bias;
    size_t column = 0;
    for (Projection &p : members) {
      std::vector<char> bytes = *constantBytes(p.weight);
      size_t width = size_t(p.heads * d) * elemBytes;
      for (int64_t r = 0; r < k; ++r)
        std::memcpy(weight.data() + (size_t(r) * n) * elemBytes + column, bytes.data() + r * width,
                    width);
      column += width;
      if (anyBias) {
        if (p.bias) {
          std::vector<char> b = *constantBytes(p.bias);
          bias.insert(bias.end(), b.begin(), b.end());
        } else {
          bias.insert(bias.end(), width, 0);
        }
      }
    }
    OpBuilder b(first.matmul);
    Location loc = b.getFusedLoc(llvm::map_to_vector(members, [](Projection &p) {
      return p.matmul.getLoc();
    }));
    std::string name = "merged_projection_" + std::to_string(index);
    Value w = bytesConstant(b, loc, RankedTensorType::get({k, n}, elem), weight, name);
    Value y = MatmulOp::create(b, loc, x, w);
    if (anyBias)
      y = AddOp::create(b, loc, y,
                        bytesConstant(b, loc, RankedTensorType::get({n}, elem), bias, name + "_bias"));
    Value split = ReshapeOp::create(b, loc, RankedTensorType::get({1, seq, heads, d}, elem), y);
    Value all = TransposeOp::create(b, loc, split, b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    int64_t head = 0;
    for (Projection &p : members) {
      Value part = SliceOp::create(
          b, p.transpose.getLoc(), RankedTensorType::get({1, p.heads, seq, d}, elem), all,
          b.getDenseI64ArrayAttr({0, head, 0, 0}), b.getDenseI64ArrayAttr({1, head + p.heads, seq, d}),
          b.getDenseI64ArrayAttr({1, 1, 1, 1}));
      if (p.keyLayout)
        part = TransposeOp::create(b, p.transpose.getLoc(), part, b.getDenseI64ArrayAttr({0, 1, 3, 2}));
      head += p.heads;
      p.transpose.getResult().replaceAllUsesWith(part);
    }
    // (The builder inserts before the first matmul: erased last.)
    mergeRotaryEmbeddings(all);
    for (Projection &p : members) {
      p.transpose.erase();
      p.reshape.erase();
      if (p.add)
        p.add.erase();
      p.matmul.erase();
      for (ConstantOp cst : {p.weight, p.bias})
        if (cst && cst->use_empty())
          cst.erase();
    }
  }
};

} // namespace
