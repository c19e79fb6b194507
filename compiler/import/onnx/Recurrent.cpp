//===- Recurrent.cpp - ONNX LSTM, GRU and RNN -> kiln ---------------------===//
//
// The recurrent ops, unrolled over their static sequence length into kiln
// ops. The input projection X * W^T (plus both biases, where they are plain
// sums) is one kiln.matmul per direction over all time steps, hoisted before
// the loop; each step then adds the recurrent product H * R^T, slices the
// gates out of it and applies the gate arithmetic and activations. Reverse
// directions walk the steps backwards. A constant `sequence_lens` masks the
// steps past a batch entry's length: its state stays where it was (so Y_h
// holds the state after its last step, and the initial state for a length
// of 0) and Y holds zeros there. `layout = 1` (batch-major X, Y, states) is
// transposed to the time-major form at the edges.
//
//===----------------------------------------------------------------------===//

#include "llvm/Support/CheckedArithmetic.h"
#include "import/onnx/ImportPatterns.h"

#include "llvm/ADT/StringExtras.h"

#include <optional>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

namespace {

/// The three ONNX recurrent ops.
enum class CellKind { Rnn, Gru, Lstm };

/// One entry of the `activations` attribute, with its alpha and beta.
struct Activation {
  enum class Kind {
    Relu,
    Tanh,
    Sigmoid,
    Affine,
    LeakyRelu,
    ThresholdedRelu,
    ScaledTanh,
    HardSigmoid,
    Elu,
    Softsign,
    Softplus
  };
  Kind kind;
  double alpha = 0, beta = 0;
};

/// An activation's ONNX name, how many of activation_alpha and
/// activation_beta it takes, and its defaults (those of the ONNX operator of
/// the same name).
struct ActivationInfo {
  llvm::StringLiteral name;
  Activation::Kind kind;
  bool takesAlpha, takesBeta;
  double alpha, beta;
};

constexpr ActivationInfo kActivations[] = {
    {"Relu", Activation::Kind::Relu, false, false, 0, 0},
    {"Tanh", Activation::Kind::Tanh, false, false, 0, 0},
    {"Sigmoid", Activation::Kind::Sigmoid, false, false, 0, 0},
    {"Affine", Activation::Kind::Affine, true, true, 1.0, 0.0},
    {"LeakyRelu", Activation::Kind::LeakyRelu, true, false, 0.01, 0},
    {"ThresholdedRelu", Activation::Kind::ThresholdedRelu, true, false, 1.0, 0},
    {"ScaledTanh", Activation::Kind::ScaledTanh, true, true, 1.0, 1.0},
    {"HardSigmoid", Activation::Kind::HardSigmoid, true, true, 0.2, 0.5},
    {"Elu", Activation::Kind::Elu, true, false, 1.0, 0},
    {"Softsign", Activation::Kind::Softsign, false, false, 0, 0},
    {"Softplus", Activation::Kind::Softplus, false, false, 0, 0},
};

/// What the three ops share once their attributes and operand shapes are
/// checked: sizes in the time-major layout, and the per-step options.
struct Recurrence {
  CellKind kind;
  /// Gates per direction: 1 (RNN), 3 (GRU: z, r, h), 4 (LSTM: i, o, f, c).
  int64_t gates = 1;
  int64_t seqLength = 0, batch = 0, inputSize = 0, hidden = 0;
  int64_t directions = 1;
  /// `direction = "reverse"`: the one direction walks backwards.
  bool reverse = false;
  /// `layout = 1`: X, Y and the states have the batch dimension first.
  bool batchMajor = false;
  Type element;
  /// The length of each batch entry's sequence; empty when all are
  /// seqLength.
  SmallVector<int64_t> lengths;
  /// The activations of each direction, one after the other.
  SmallVector<Activation> activations;
  std::optional<double> clip;
  /// LSTM: the forget gate is 1 - the input gate.
  bool inputForget = false;
  /// GRU: apply the reset gate after the recurrent product.
  bool linearBeforeReset = false;
};

} // namespace

/// The number of activations each direction of `kind` takes (f; f, g; or
/// f, g, h) and their defaults.
static ArrayRef<StringLiteral> defaultActivations(CellKind kind) {
  static constexpr StringLiteral rnn[] = {"Tanh"};
  static constexpr StringLiteral gru[] = {"Sigmoid", "Tanh"};
  static constexpr StringLiteral lstm[] = {"Sigmoid", "Tanh", "Tanh"};
  switch (kind) {
  case CellKind::Rnn:
    return rnn;
  case CellKind::Gru:
    return gru;
  case CellKind::Lstm:
    return lstm;
  }
  llvm_unreachable("unknown cell kind");
}

/// The node's activations (the attribute or the defaults), one set per
/// direction, with activation_alpha and activation_beta consumed in order by
/// the activations that take them; failure after a diagnostic.
static FailureOr<SmallVector<Activation>>
parseActivations(NodeContext &node, CellKind kind, int64_t directions) {
  ArrayRef<StringLiteral> defaults = defaultActivations(kind);
  auto perDirection = (int64_t)defaults.size();
  SmallVector<std::string> names = node.stringsAttr("activations");
  if (names.empty())
    for (int64_t d = 0; d < directions; ++d)
      for (StringLiteral name : defaults)
        names.push_back(name.str());
  auto count = (int64_t)names.size();
  if (count != perDirection && count != perDirection * directions) {
    InFlightDiagnostic diag = node.emitError();
    diag << "expected " << perDirection;
    if (directions > 1)
      diag << " or " << perDirection * directions;
    diag << " activations (" << perDirection << " per direction), got "
         << count;
    return failure();
  }
  SmallVector<double> alphas = node.floatsAttr("activation_alpha");
  SmallVector<double> betas = node.floatsAttr("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  SmallVector<Activation> result;
  for (const std::string &name : names) {
    const ActivationInfo *info = nullptr;
    for (const ActivationInfo &candidate : kActivations)
      if (StringRef(name).equals_insensitive(candidate.name))
        info = &candidate;
    if (!info) {
      InFlightDiagnostic diag = node.emitError();
      diag << "unsupported activation '" << name << "' (supported: ";
      llvm::interleaveComma(kActivations, diag,
                            [&](const ActivationInfo &a) { diag << a.name; });
      diag << ")";
      return failure();
    }
    Activation activation{info->kind, info->alpha, info->beta};
    if (info->takesAlpha && nextAlpha < alphas.size())
      activation.alpha = alphas[nextAlpha++];
    if (info->takesBeta && nextBeta < betas.size())
      activation.beta = betas[nextBeta++];
    result.push_back(activation);
  }
  // One set given for two directions: both use it.
  if (count != perDirection * directions)
    result.append(SmallVector<Activation>(result));
  return result;
}

/// Checks that optional input `i` (`what`) has type `expected` when present.
static LogicalResult checkInputType(NodeContext &node, unsigned i,
                                    StringRef what,
                                    RankedTensorType expected) {
  if (!node.hasInput(i))
    return success();
  RankedTensorType type = node.inputType(i);
  if (type == expected)
    return success();
  node.emitError() << what << " must be " << expected << ", got " << type;
  return failure();
}

/// The attributes and operand shapes of a recurrent node, checked; failure
/// after a diagnostic at the node.
static FailureOr<Recurrence> analyze(NodeContext &node, CellKind kind) {
  Recurrence r;
  r.kind = kind;
  r.gates = kind == CellKind::Rnn ? 1 : kind == CellKind::Gru ? 3 : 4;

  // (The ONNX checker rejects `layout` before opset 14.)
  int64_t layout = node.intAttr("layout", 0);
  if (layout != 0 && layout != 1) {
    node.emitError() << "layout must be 0 or 1, got " << layout;
    return failure();
  }
  r.batchMajor = layout == 1;

  std::string direction = node.stringAttr("direction", "forward");
  if (direction == "bidirectional")
    r.directions = 2;
  else if (direction == "reverse")
    r.reverse = true;
  else if (direction != "forward") {
    node.emitError() << "direction must be forward, reverse or "
                        "bidirectional, got '"
                     << direction << "'";
    return failure();
  }

  // (X, W and R are required inputs: the importer has checked that they are
  // given.)
  RankedTensorType x = node.inputType(0);
  if (x.getRank() != 3 || !isa<FloatType>(x.getElementType()) ||
      !x.hasStaticShape()) {
    node.emitError() << "X must be a floating-point tensor of rank 3 with a "
                        "static shape, got "
                     << x;
    return failure();
  }
  r.element = x.getElementType();
  r.seqLength = x.getDimSize(r.batchMajor ? 1 : 0);
  r.batch = x.getDimSize(r.batchMajor ? 0 : 1);
  r.inputSize = x.getDimSize(2);
  if (r.seqLength < 1) {
    node.emitError() << "X of type " << x << " has no time steps";
    return failure();
  }

  RankedTensorType rType = node.inputType(2);
  if (node.hasAttr("hidden_size")) {
    r.hidden = node.intAttr("hidden_size", 0);
    if (r.hidden < 1) {
      node.emitError() << "hidden_size must be positive, got " << r.hidden;
      return failure();
    }
  } else if (rType.getRank() == 3 && rType.hasStaticShape() &&
             rType.getDimSize(2) > 0) {
    r.hidden = rType.getDimSize(2);
  } else {
    node.emitError() << "without hidden_size, R must have the shape "
                        "[num_directions, "
                     << r.gates << " * hidden_size, hidden_size], got "
                     << rType;
    return failure();
  }

  // B holds 2 * gates * hidden values per direction (LSTM's P, 3 * hidden,
  // is less): a fuzzed hidden_size must not overflow it.
  if (!llvm::checkedMul<int64_t>(2 * r.gates, r.hidden)) {
    node.emitError() << "hidden_size " << r.hidden << " is too large (2 * " << r.gates
                     << " * hidden_size overflows)";
    return failure();
  }
  int64_t gateRows = r.gates * r.hidden;
  auto tensor = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, r.element);
  };
  // The states' shapes in the node's layout.
  RankedTensorType stateType =
      r.batchMajor ? tensor({r.batch, r.directions, r.hidden})
                   : tensor({r.directions, r.batch, r.hidden});
  if (failed(checkInputType(node, 1, "W",
                            tensor({r.directions, gateRows, r.inputSize}))) ||
      failed(checkInputType(node, 2, "R",
                            tensor({r.directions, gateRows, r.hidden}))) ||
      failed(checkInputType(node, 3, "B",
                            tensor({r.directions, 2 * gateRows}))) ||
      failed(checkInputType(node, 5, "initial_h", stateType)))
    return failure();
  if (kind == CellKind::Lstm &&
      (failed(checkInputType(node, 6, "initial_c", stateType)) ||
       failed(checkInputType(node, 7, "P",
                             tensor({r.directions, 3 * r.hidden})))))
    return failure();

  if (node.hasInput(4)) {
    RankedTensorType lensType = node.inputType(4);
    if (lensType.getShape() != ArrayRef<int64_t>{r.batch} ||
        !isa<IntegerType>(lensType.getElementType())) {
      node.emitError() << "sequence_lens must be an integer tensor of shape ["
                       << r.batch << "], got " << lensType;
      return failure();
    }
    FailureOr<SmallVector<int64_t>> lengths =
        node.constantInts(4, "sequence_lens");
    if (failed(lengths))
      return failure();
    for (int64_t length : *lengths) {
      if (length < 0 || length > r.seqLength) {
        node.emitError() << "sequence_lens value " << length
                         << " is outside [0, " << r.seqLength
                         << "], the sequence length of X";
        return failure();
      }
    }
    // All full lengths need no masks.
    if (llvm::any_of(*lengths, [&](int64_t l) { return l != r.seqLength; }))
      r.lengths = *lengths;
  }

  FailureOr<SmallVector<Activation>> activations =
      parseActivations(node, kind, r.directions);
  if (failed(activations))
    return failure();
  r.activations = std::move(*activations);

  if (node.hasAttr("clip")) {
    double clip = node.floatAttr("clip", 0);
    if (!(clip > 0)) {
      node.emitError() << "clip must be positive, got " << clip;
      return failure();
    }
    r.clip = clip;
  }
  if (kind == CellKind::Lstm) {
    int64_t inputForget = node.intAttr("input_forget", 0);
    if (inputForget != 0 && inputForget != 1) {
      node.emitError() << "input_forget must be 0 or 1, got " << inputForget;
      return failure();
    }
    r.inputForget = inputForget;
  }
  if (kind == CellKind::Gru)
    r.linearBeforeReset = node.intAttr("linear_before_reset", 0) != 0;
  return r;
}

namespace {

/// Builds the unrolled steps of one node: small helpers over NodeContext
/// that treat a null Value as a tensor of zeros (the state before the first
/// step when no initial state is given), so that products with it vanish.
class Unroller {
public:
  Unroller(NodeContext &node, const Recurrence &r) : node(node), r(r) {}

  /// `value[..., begin:end, ...]` along dimension `dim`.
  Value slice(Value value, int64_t dim, int64_t begin, int64_t end) {
    auto shape = cast<RankedTensorType>(value.getType()).getShape();
    SmallVector<int64_t> starts(shape.size(), 0), ends(shape),
        steps(shape.size(), 1);
    starts[dim] = begin;
    ends[dim] = end;
    return node.create<SliceOp>(value, starts, ends, steps);
  }

  /// Entry `d` of the leading (direction) dimension, without that dimension.
  Value direction(Value value, int64_t d) {
    auto shape = cast<RankedTensorType>(value.getType()).getShape();
    return node.reshape(slice(value, 0, d, d + 1), shape.drop_front());
  }

  /// Gate `k` (of hidden_size columns) of `[batch, gates * hidden]` values.
  Value gate(Value value, int64_t k) {
    return slice(value, 1, k * r.hidden, (k + 1) * r.hidden);
  }

  Value transpose(Value value, ArrayRef<int64_t> permutation) {
    return node.create<TransposeOp>(value, permutation);
  }

  /// The concatenation of `values` along `axis` (the value itself for one).
  Value concat(ArrayRef<Value> values, int64_t axis) {
    if (values.size() == 1)
      return values.front();
    return node.create<ConcatOp>(values, axis);
  }

  /// `a + b`, where a null operand is zero.
  Value add(Value a, Value b) {
    if (!a || !b)
      return a ? a : b;
    return node.create<AddOp>(a, b);
  }

  /// `a * b`, where a null operand is zero (and so is the product).
  Value mul(Value a, Value b) {
    if (!a || !b)
      return Value();
    return node.create<MulOp>(a, b);
  }

  /// `lhs * rhs` as a matrix product; null when `lhs` is zero.
  Value matmul(Value lhs, Value rhs) {
    if (!lhs)
      return Value();
    return node.create<MatmulOp>(lhs, rhs);
  }

  Value scalar(double value) { return node.scalar(r.element, value); }

  /// A `[batch, hidden]` state, materialized as zeros when null.
  Value state(Value value) {
    if (value)
      return value;
    return node.splat(RankedTensorType::get({r.batch, r.hidden}, r.element),
                      0);
  }

  /// The gate input `x` clipped to [-clip, clip] when the node has a clip
  /// (and `clipped` is set), then `activation` applied.
  Value activate(const Activation &activation, Value x, bool clipped = true) {
    OpBuilder &b = node.builder();
    if (r.clip && clipped)
      x = node.create<ClipOp>(x, b.getF64FloatAttr(-*r.clip),
                              b.getF64FloatAttr(*r.clip));
    auto alpha = b.getF64FloatAttr(activation.alpha);
    auto beta = b.getF64FloatAttr(activation.beta);
    switch (activation.kind) {
    case Activation::Kind::Relu:
      return node.create<ReluOp>(x);
    case Activation::Kind::Tanh:
      return node.create<TanhOp>(x);
    case Activation::Kind::Sigmoid:
      return node.create<SigmoidOp>(x);
    case Activation::Kind::Affine: {
      Value scaled = node.create<MulOp>(x, scalar(activation.alpha));
      return node.create<AddOp>(scaled, scalar(activation.beta));
    }
    case Activation::Kind::LeakyRelu:
      return node.create<LeakyReluOp>(x, alpha);
    case Activation::Kind::ThresholdedRelu: {
      Value above = node.create<GreaterOp>(x, scalar(activation.alpha));
      return node.create<SelectOp>(above, x, scalar(0));
    }
    case Activation::Kind::ScaledTanh: {
      Value inner = node.create<TanhOp>(
          node.create<MulOp>(x, scalar(activation.beta)));
      return node.create<MulOp>(inner, scalar(activation.alpha));
    }
    case Activation::Kind::HardSigmoid:
      return node.create<HardSigmoidOp>(x, alpha, beta);
    case Activation::Kind::Elu:
      return node.create<EluOp>(x, alpha);
    case Activation::Kind::Softsign: {
      Value magnitude = node.create<AbsOp>(x);
      Value denominator = node.create<AddOp>(magnitude, scalar(1.0));
      return node.create<DivOp>(x, denominator);
    }
    case Activation::Kind::Softplus:
      return node.create<SoftplusOp>(x);
    }
    llvm_unreachable("unknown activation");
  }

  /// The mask of the batch entries whose sequence covers time step `t`
  /// (`[batch, 1]`), or null when all do.
  Value stepMask(int64_t t) {
    if (r.lengths.empty() ||
        llvm::all_of(r.lengths, [&](int64_t l) { return l > t; }))
      return Value();
    SmallVector<bool> live;
    for (int64_t l : r.lengths)
      live.push_back(l > t);
    auto type = RankedTensorType::get({r.batch, 1}, node.builder().getI1Type());
    return ConstantOp::create(node.builder(), node.loc(),
                              DenseElementsAttr::get(type, ArrayRef(live)));
  }

  /// `mask ? updated : previous` (a null mask keeps all of `updated`).
  Value keep(Value mask, Value updated, Value previous) {
    if (!mask)
      return updated;
    return node.create<SelectOp>(mask, updated, state(previous));
  }

  NodeContext &node;
  const Recurrence &r;
};

/// The weights one direction's steps use.
struct DirectionWeights {
  /// R^T, `[hidden, gates * hidden]`.
  Value recurrenceT;
  /// GRU with linear_before_reset = 0: the z and r columns of R^T and the h
  /// columns, multiplied separately.
  Value recurrenceZrT, recurrenceHT;
  /// GRU with linear_before_reset: Rbh, added inside the reset (or null).
  Value resetBias;
  /// LSTM peepholes Pi, Po, Pf (`[hidden]`, null without P).
  Value peepholeI, peepholeO, peepholeF;
  /// This direction's activations (f; f, g; or f, g, h).
  ArrayRef<Activation> activations;
};

/// The recurrent state between steps; a null value is zero.
struct CellState {
  Value h, c;
};

} // namespace

/// One RNN step: `H = f(Xt W^T + Wb + Rb + H R^T)`.
static CellState rnnStep(Unroller &u, const DirectionWeights &w, Value xt,
                         const CellState &s) {
  Value pre = u.add(xt, u.matmul(s.h, w.recurrenceT));
  return {u.activate(w.activations[0], pre), Value()};
}

/// One GRU step (gates z, r, h; `xt` holds the input projection with the
/// biases that are plain sums).
static CellState gruStep(Unroller &u, const DirectionWeights &w, Value xt,
                         const CellState &s) {
  const Recurrence &r = u.r;
  Value hiddenProduct, zrProduct;
  if (r.linearBeforeReset) {
    Value product = u.matmul(s.h, w.recurrenceT);
    zrProduct = product ? u.slice(product, 1, 0, 2 * r.hidden) : Value();
    hiddenProduct = product ? u.gate(product, 2) : Value();
  } else {
    zrProduct = u.matmul(s.h, w.recurrenceZrT);
  }
  Value zr = u.add(u.slice(xt, 1, 0, 2 * r.hidden), zrProduct);
  Value z = u.activate(w.activations[0], u.gate(zr, 0));
  Value reset = u.activate(w.activations[0], u.gate(zr, 1));
  Value candidateIn = u.gate(xt, 2);
  if (r.linearBeforeReset) {
    // r (.) (H Rh^T + Rbh)
    candidateIn =
        u.add(candidateIn, u.mul(reset, u.add(hiddenProduct, w.resetBias)));
  } else {
    // (r (.) H) Rh^T
    candidateIn =
        u.add(candidateIn, u.matmul(u.mul(reset, s.h), w.recurrenceHT));
  }
  Value candidate = u.activate(w.activations[1], candidateIn);
  // (1 - z) (.) h~ + z (.) H
  Value oneMinusZ = u.node.create<SubOp>(u.scalar(1.0), z);
  Value fresh = u.node.create<MulOp>(oneMinusZ, candidate);
  Value h = u.add(fresh, u.mul(z, s.h));
  return {h, Value()};
}

/// One LSTM step (gates i, o, f, c; peepholes on i and f see the previous
/// cell state, on o the new one).
static CellState lstmStep(Unroller &u, const DirectionWeights &w, Value xt,
                          const CellState &s) {
  Value gates = u.add(xt, u.matmul(s.h, w.recurrenceT));
  // (Operands are named first throughout: the order in which function
  // arguments are evaluated is not specified, and the IR's order should not
  // depend on the compiler.)
  Value inPre = u.gate(gates, 0);
  Value in = u.activate(w.activations[0],
                        u.add(inPre, u.mul(w.peepholeI, s.c)));
  Value forget;
  if (u.r.inputForget) {
    forget = u.node.create<SubOp>(u.scalar(1.0), in);
  } else {
    Value forgetPre = u.gate(gates, 2);
    forget = u.activate(w.activations[0],
                        u.add(forgetPre, u.mul(w.peepholeF, s.c)));
  }
  Value candidate = u.activate(w.activations[1], u.gate(gates, 3));
  Value kept = u.mul(forget, s.c);
  Value c = u.add(kept, u.node.create<MulOp>(in, candidate));
  Value outPre = u.gate(gates, 1);
  Value out = u.activate(w.activations[0],
                         u.add(outPre, u.mul(w.peepholeO, c)));
  // h(Ct) is not clipped: clip bounds the gates' inputs.
  Value activated = u.activate(w.activations[2], c, /*clipped=*/false);
  return {u.node.create<MulOp>(out, activated), c};
}

/// A state input (initial_h, initial_c) as `[directions, batch, hidden]`, or
/// null when absent.
static Value timeMajorState(Unroller &u, unsigned i) {
  if (!u.node.hasInput(i))
    return Value();
  Value state = u.node.input(i);
  return u.r.batchMajor ? u.transpose(state, {1, 0, 2}) : state;
}

/// LSTM, GRU and RNN: checks the node, unrolls every direction's steps and
/// sets the outputs that are used.
static LogicalResult convertRecurrent(NodeContext &node, CellKind kind) {
  FailureOr<Recurrence> analyzed = analyze(node, kind);
  if (failed(analyzed))
    return failure();
  const Recurrence &r = *analyzed;
  Unroller u(node, r);
  int64_t gateColumns = r.gates * r.hidden;

  Value x = node.input(0);
  if (r.batchMajor)
    x = u.transpose(x, {1, 0, 2});
  // All time steps' rows at once, for the hoisted input projection.
  Value rows = node.reshape(x, {r.seqLength * r.batch, r.inputSize});
  Value initialH = timeMajorState(u, 5);
  Value initialC = kind == CellKind::Lstm ? timeMajorState(u, 6) : Value();
  auto step = kind == CellKind::Rnn   ? rnnStep
              : kind == CellKind::Gru ? gruStep
                                      : lstmStep;
  auto numActivations = (int64_t)defaultActivations(kind).size();

  SmallVector<Value> yPerDirection, hPerDirection, cPerDirection;
  for (int64_t d = 0; d < r.directions; ++d) {
    bool backwards = r.reverse || d == 1;
    DirectionWeights w;
    w.activations =
        ArrayRef(r.activations).slice(d * numActivations, numActivations);
    // X W^T + Wb + Rb for every time step: [seq * batch, gates * hidden].
    Value wT = u.transpose(u.direction(node.input(1), d), {1, 0});
    Value projection = node.create<MatmulOp>(rows, wT);
    if (node.hasInput(3)) {
      Value bias = u.direction(node.input(3), d);
      Value inputBias = u.slice(bias, 0, 0, gateColumns);
      Value recurrenceBias = u.slice(bias, 0, gateColumns, 2 * gateColumns);
      Value summed;
      if (kind == CellKind::Gru && r.linearBeforeReset) {
        // Rbh stays inside the reset gate's product.
        Value inputZr = u.slice(inputBias, 0, 0, 2 * r.hidden);
        Value recurrenceZr = u.slice(recurrenceBias, 0, 0, 2 * r.hidden);
        Value zr = u.add(inputZr, recurrenceZr);
        summed = u.concat(
            {zr, u.slice(inputBias, 0, 2 * r.hidden, gateColumns)}, 0);
        w.resetBias =
            u.slice(recurrenceBias, 0, 2 * r.hidden, gateColumns);
      } else {
        summed = u.add(inputBias, recurrenceBias);
      }
      projection = u.add(projection, summed);
    }
    w.recurrenceT = u.transpose(u.direction(node.input(2), d), {1, 0});
    if (kind == CellKind::Gru && !r.linearBeforeReset) {
      w.recurrenceZrT = u.slice(w.recurrenceT, 1, 0, 2 * r.hidden);
      w.recurrenceHT = u.slice(w.recurrenceT, 1, 2 * r.hidden, gateColumns);
    }
    if (kind == CellKind::Lstm && node.hasInput(7)) {
      Value p = u.direction(node.input(7), d);
      w.peepholeI = u.slice(p, 0, 0, r.hidden);
      w.peepholeO = u.slice(p, 0, r.hidden, 2 * r.hidden);
      w.peepholeF = u.slice(p, 0, 2 * r.hidden, 3 * r.hidden);
    }

    CellState s;
    s.h = initialH ? u.direction(initialH, d) : Value();
    s.c = initialC ? u.direction(initialC, d) : Value();
    SmallVector<Value> ys(r.seqLength);
    for (int64_t n = 0; n < r.seqLength; ++n) {
      int64_t t = backwards ? r.seqLength - 1 - n : n;
      Value xt = u.slice(projection, 0, t * r.batch, (t + 1) * r.batch);
      CellState next = step(u, w, xt, s);
      Value mask = u.stepMask(t);
      if (node.hasOutput(0))
        ys[t] = node.reshape(mask ? node.create<SelectOp>(mask, next.h,
                                                          u.scalar(0))
                                  : next.h,
                             {1, 1, r.batch, r.hidden});
      s.h = u.keep(mask, next.h, s.h);
      if (next.c)
        s.c = u.keep(mask, next.c, s.c);
    }
    if (node.hasOutput(0))
      yPerDirection.push_back(u.concat(ys, 0));
    hPerDirection.push_back(
        node.reshape(u.state(s.h), {1, r.batch, r.hidden}));
    if (kind == CellKind::Lstm)
      cPerDirection.push_back(
          node.reshape(u.state(s.c), {1, r.batch, r.hidden}));
  }

  // Y: [seq, directions, batch, hidden]; Y_h, Y_c: [directions, batch,
  // hidden] (batch first with layout = 1).
  if (node.hasOutput(0)) {
    Value y = u.concat(yPerDirection, 1);
    node.setOutput(0, r.batchMajor ? u.transpose(y, {2, 0, 1, 3}) : y);
  }
  auto finalState = [&](ArrayRef<Value> perDirection) {
    Value state = u.concat(perDirection, 0);
    return r.batchMajor ? u.transpose(state, {1, 0, 2}) : state;
  };
  if (node.hasOutput(1))
    node.setOutput(1, finalState(hPerDirection));
  if (kind == CellKind::Lstm && node.hasOutput(2))
    node.setOutput(2, finalState(cPerDirection));
  return success();
}

void onnx_import::registerRecurrentPatterns(PatternRegistry &r) {
  for (int64_t since : {7, 14}) {
    r.add("RNN", since,
          [](NodeContext &n) { return convertRecurrent(n, CellKind::Rnn); });
    r.add("GRU", since,
          [](NodeContext &n) { return convertRecurrent(n, CellKind::Gru); });
    r.add("LSTM", since,
          [](NodeContext &n) { return convertRecurrent(n, CellKind::Lstm); });
  }
}
