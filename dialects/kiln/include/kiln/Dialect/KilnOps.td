//===- KilnOps.td - kiln dialect operations ----------------*- tablegen -*-===//
//
// The op families of the kiln graph dialect: constants, elementwise (binary
// with ONNX/numpy broadcasting, unary math, parametric activations), matmul,
// convolution, their 8-bit integer forms, pooling, reductions, normalizations
// and data movement.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILNOPS_TD
#define KILN_DIALECT_KILNOPS_TD

include "kiln/Dialect/KilnDialect.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

def Kiln_Tensor : RankedTensorOf<[AnyType]>;
def Kiln_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Kiln_IndexTensor : RankedTensorOf<[I32, I64]>;
def Kiln_BoolTensor : RankedTensorOf<[I1]>;

/// A 64-bit integer attribute read back as a signed value (upstream's
/// I64Attr returns uint64_t, which makes `axis < 0` checks silently wrong).
def Kiln_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                                "64-bit signless integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a tensor constant (weights, shapes, scalars)";
  let description = [{
    Holds a tensor value. Weights imported from a model are
    `dense_resource` blobs, which reference the model's bytes without
    copying them and are elided from IR dumps; small constants (shapes,
    scalars) are `dense` and take part in folding.

    ```mlir
    %w = kiln.constant dense_resource<conv1.weight> : tensor<64x3x7x7xf32>
    %s = kiln.constant dense<[1, 2048]> : tensor<2xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops with broadcasting
//===----------------------------------------------------------------------===//

class Kiln_BinaryOp<string mnemonic, string desc, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits,
        [Pure, InferTypeOpAdaptor])> {
  let summary = "elementwise " # desc # " with broadcasting";
  let description = [{
    Computes the elementwise }] # desc # [{ of two tensors of the same
    element type. Shapes broadcast as in numpy and ONNX (multidirectional
    broadcasting): dimensions are aligned from the right and a dimension of
    size 1 stretches to the other operand's size.
  }];
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Kiln_AddOp : Kiln_BinaryOp<"add", "sum", [Commutative]>;
def Kiln_SubOp : Kiln_BinaryOp<"sub", "difference">;
def Kiln_MulOp : Kiln_BinaryOp<"mul", "product", [Commutative]>;
def Kiln_DivOp : Kiln_BinaryOp<"div", "quotient (truncating for integers)">;
def Kiln_PowOp : Kiln_BinaryOp<"pow", "power (`lhs` raised to `rhs`)">;
def Kiln_MaxOp : Kiln_BinaryOp<"max", "maximum", [Commutative]>;
def Kiln_MinOp : Kiln_BinaryOp<"min", "minimum", [Commutative]>;
def Kiln_ModOp : Kiln_BinaryOp<"mod", "remainder (sign of the divisor for integers, fmod for floats)">;
def Kiln_AndOp : Kiln_BinaryOp<"and", "logical and", [Commutative]>;
def Kiln_OrOp : Kiln_BinaryOp<"or", "logical or", [Commutative]>;
def Kiln_XorOp : Kiln_BinaryOp<"xor", "exclusive or (logical for `i1`, bitwise for other integers)", [Commutative]>;
def Kiln_EqualOp : Kiln_BinaryOp<"equal", "comparison `lhs == rhs` (an `i1` tensor)", [Commutative]>;
def Kiln_LessOp : Kiln_BinaryOp<"less", "comparison `lhs < rhs` (an `i1` tensor)">;
def Kiln_LessEqualOp : Kiln_BinaryOp<"less_equal", "comparison `lhs <= rhs` (an `i1` tensor)">;
def Kiln_GreaterOp : Kiln_BinaryOp<"greater", "comparison `lhs > rhs` (an `i1` tensor)">;
def Kiln_GreaterEqualOp : Kiln_BinaryOp<"greater_equal", "comparison `lhs >= rhs` (an `i1` tensor)">;
def Kiln_ShiftLeftOp : Kiln_BinaryOp<"shift_left", "left shift of `lhs` by `rhs` bits (integers; 0 from a shift by the width or more)"> {
  let hasFolder = 0;
}
def Kiln_ShiftRightOp : Kiln_BinaryOp<"shift_right", "right shift of `lhs` by `rhs` bits (integers: logical for unsigned, arithmetic for signed; 0 from a shift by the width or more)"> {
  let hasFolder = 0;
}

def Kiln_SelectOp : Kiln_Op<"select",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise choice between two tensors (ONNX Where)";
  let description = [{
    `result[i] = condition[i] ? true_value[i] : false_value[i]`, with the
    three operands broadcast together as in numpy.
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$true_value,
                       Kiln_Tensor:$false_value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$condition `,` $true_value `,` $false_value attr-dict "
                       "`:` functional-type(operands, results)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

class Kiln_UnaryOp<string mnemonic, string desc, Type operandType = Kiln_Tensor,
                   list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits,
        [Pure, SameOperandsAndResultType])> {
  let summary = "elementwise " # desc;
  let description = [{
    Applies }] # desc # [{ to every element; the result has the operand's
    type.
  }];
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Kiln_AbsOp : Kiln_UnaryOp<"abs", "absolute value"> { let hasFolder = 1; }
def Kiln_NegOp : Kiln_UnaryOp<"neg", "negation"> { let hasFolder = 1; }
def Kiln_SignOp : Kiln_UnaryOp<"sign", "sign (-1, 0 or 1)">;
def Kiln_ReluOp : Kiln_UnaryOp<"relu", "rectified linear unit `max(x, 0)`"> {
  let hasFolder = 1;
}
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", "logistic sigmoid `1 / (1 + exp(-x))`", Kiln_FloatTensor>;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", "hyperbolic tangent", Kiln_FloatTensor>;
def Kiln_ExpOp : Kiln_UnaryOp<"exp", "natural exponential", Kiln_FloatTensor>;
def Kiln_LogOp : Kiln_UnaryOp<"log", "natural logarithm", Kiln_FloatTensor>;
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", "square root", Kiln_FloatTensor>;
def Kiln_RsqrtOp : Kiln_UnaryOp<"rsqrt", "reciprocal square root", Kiln_FloatTensor>;
def Kiln_ReciprocalOp : Kiln_UnaryOp<"reciprocal", "reciprocal `1 / x`", Kiln_FloatTensor>;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", "Gauss error function", Kiln_FloatTensor>;
def Kiln_SinOp : Kiln_UnaryOp<"sin", "sine", Kiln_FloatTensor>;
def Kiln_CosOp : Kiln_UnaryOp<"cos", "cosine", Kiln_FloatTensor>;
def Kiln_TanOp : Kiln_UnaryOp<"tan", "tangent", Kiln_FloatTensor>;
def Kiln_AsinOp : Kiln_UnaryOp<"asin", "arcsine", Kiln_FloatTensor>;
def Kiln_AcosOp : Kiln_UnaryOp<"acos", "arccosine", Kiln_FloatTensor>;
def Kiln_AtanOp : Kiln_UnaryOp<"atan", "arctangent", Kiln_FloatTensor>;
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", "hyperbolic sine", Kiln_FloatTensor>;
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", "hyperbolic cosine", Kiln_FloatTensor>;
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", "inverse hyperbolic sine", Kiln_FloatTensor>;
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", "inverse hyperbolic cosine", Kiln_FloatTensor>;
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", "inverse hyperbolic tangent", Kiln_FloatTensor>;
def Kiln_FloorOp : Kiln_UnaryOp<"floor", "rounding towards negative infinity", Kiln_FloatTensor> {
  let hasFolder = 1;
}
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", "rounding towards positive infinity", Kiln_FloatTensor> {
  let hasFolder = 1;
}
def Kiln_RoundOp : Kiln_UnaryOp<"round", "rounding to nearest, ties to even", Kiln_FloatTensor> {
  let hasFolder = 1;
}
def Kiln_SoftplusOp : Kiln_UnaryOp<"softplus", "softplus `log(1 + exp(x))`", Kiln_FloatTensor>;
def Kiln_NotOp : Kiln_UnaryOp<"not", "logical negation", Kiln_BoolTensor> {
  let hasFolder = 1;
}

def Kiln_GeluOp : Kiln_Op<"gelu", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise Gaussian error linear unit";
  let description = [{
    `x * 0.5 * (1 + erf(x / sqrt(2)))`; with `approximate = "tanh"`,
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`.
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_ClipOp : Kiln_Op<"clip", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise clamp to `[min, max]`";
  let description = [{
    `min(max(x, min), max)`. The bounds are attributes; `Relu6` is
    `kiln.clip` with `min = 0.0, max = 6.0`.
  }];
  let arguments = (ins Kiln_Tensor:$input, F64Attr:$min, F64Attr:$max);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_LeakyReluOp : Kiln_Op<"leaky_relu", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise leaky rectified linear unit";
  let description = [{ `x >= 0 ? x : alpha * x`. }];
  let arguments = (ins Kiln_FloatTensor:$input, F64Attr:$alpha);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Kiln_EluOp : Kiln_Op<"elu", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise exponential linear unit";
  let description = [{ `x >= 0 ? x : alpha * (exp(x) - 1)`. }];
  let arguments = (ins Kiln_FloatTensor:$input, F64Attr:$alpha);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Kiln_HardSigmoidOp : Kiln_Op<"hard_sigmoid", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise hard sigmoid";
  let description = [{ `max(0, min(1, alpha * x + beta))`. }];
  let arguments = (ins Kiln_FloatTensor:$input, F64Attr:$alpha, F64Attr:$beta);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Kiln_CastOp : Kiln_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Converts each element to the result's element type: float to integer
    truncates towards zero, integer widths sign-extend or truncate, any
    nonzero value becomes `true` when casting to `i1`.
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Kiln_MatmulOp : Kiln_Op<"matmul",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "batched matrix product with broadcast batch dimensions";
  let description = [{
    Multiplies `lhs` of shape `[..., M, K]` by `rhs` of shape `[..., K, N]`.
    Both operands have rank 2 or more; their leading (batch) dimensions
    broadcast as in numpy. The element types match; the result has the
    same element type.
  }];
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_MatmulPanelsOp : Kiln_Op<"matmul_panels", [Pure, InferTypeOpAdaptor]> {
  let summary = "matrix product by a weight stored in column panels";
  let description = [{
    `lhs` `[..., M, K]` times a `[K, N]` weight stored as `weights`
    `[ceil(N / P), K, P]`: element `[c, k, l]` is the weight's `[k, c P + l]`,
    the columns after N (the last panel's padding) zero. `columns` is N;
    the result is `[..., M, N]`. Float: the element types match. 8-bit
    integer: `lhs` is `i8` or `ui8`, `weights` `i8`, and the result is the
    `i32` sum of the products, each operand extended by its own signedness
    (a `kiln.matmul_integer` without zero points).

    kiln-pack-matmul-panels makes it from a `kiln.matmul` (or a
    `kiln.matmul_integer` of few rows) by a constant weight when every
    target is the cpu: the P columns of a panel are then one contiguous run
    through all of K, where a row-major weight puts each of a column block's
    rows N elements from the next.

    ```mlir
    %y = kiln.matmul_panels %x, %w {columns = 40 : i64}
        : (tensor<1x256xf32>, tensor<3x256x16xf32>) -> tensor<1x40xf32>
    %q = kiln.matmul_panels %a, %b {columns = 1000 : i64}
        : (tensor<1x2048xui8>, tensor<32x2048x32xi8>) -> tensor<1x1000xi32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$weights, Kiln_I64Attr:$columns);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$lhs `,` $weights attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The columns of a panel, P.
    int64_t getPanelWidth() { return getWeights().getType().getDimSize(2); }
  }];
}

def Kiln_ConvOp : Kiln_Op<"conv",
    [Pure,
     InferTypeOpAdaptor]> {
  let summary = "N-d grouped, strided, dilated, padded convolution (NC...)";
  let description = [{
    Input `[N, C, D1, ..., Dn]`, filter `[F, C / groups, K1, ..., Kn]`,
    optional bias `[F]`. `strides` and `dilations` have one entry per
    spatial dimension; `pads` has the begin paddings of every spatial
    dimension followed by the end paddings, as in ONNX.
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_Tensor:$filter,
                       Optional<Kiln_Tensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<Kiln_I64Attr, "1">:$groups);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input `,` $filter (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Winograd transforms (kiln-winograd-convs)
//===----------------------------------------------------------------------===//

def Kiln_WinogradInputOp : Kiln_Op<"winograd_input", [Pure]> {
  let summary = "Winograd F(m x m, 3 x 3) input transform of every image tile";
  let description = [{
    The input side of a 3x3 stride-1 convolution by Winograd's minimal
    filtering with output tiles of `tile` x `tile` (m = 2 or 4, a = m + 2).
    For input `[N, C, H, W]` and `pads` `[top, left, bottom, right]`, the
    convolution's output is OH x OW (OH = H + top + bottom - 2), covered by
    TY x TX tiles (TY = ceil(OH / m), TX = ceil(OW / m)). The result is
    `[a * a, C, N * TY * TX]`:

        result[alpha * a + beta, c, (n * TY + ty) * TX + tx]
          = sum_ij BT[alpha, i] d[i, j] BT[beta, j],
        d[i, j] = input[n, c, m ty + i - top, m tx + j - left]

    (zero outside the input), B^T the a x a matrix of F(m, 3) with the
    interpolation points 0, 1, -1 (and 2, -2 for m = 4) and infinity: the
    right-hand side of the a * a GEMMs with the transformed filters.
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input, Kiln_I64Attr:$tile,
                       DenseI64ArrayAttr:$pads);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_WinogradOutputOp : Kiln_Op<"winograd_output",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "Winograd F(m x m, 3 x 3) output transform, bias, residual and ReLU";
  let description = [{
    The output side of kiln.winograd_input's convolution: `input` is the
    `[a * a, F, N * TY * TX]` product of the transformed filters and inputs,
    the result `[N, F, OH, OW]` (TY = ceil(OH / m), TX = ceil(OW / m)):

        result[n, f, m ty + p, m tx + q]
          = act(sum_(alpha, beta) AT[p, alpha] M[alpha * a + beta, f, t]
                AT[q, beta] + bias[f] + residual[n, f, m ty + p, m tx + q]),
        t = (n * TY + ty) * TX + tx

    with A^T the m x a matrix of F(m, 3); `bias` `[F]` and `residual`
    (the result's shape) are optional, and `act` is ReLU with `relu`, else
    the identity.
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input,
                       Optional<RankedTensorOf<[F32]>>:$bias,
                       Optional<RankedTensorOf<[F32]>>:$residual,
                       Kiln_I64Attr:$tile, UnitAttr:$relu);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$input (`bias` `(` $bias^ `)`)? (`residual` `(` $residual^ `)`)? "
                       "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Integer contractions
//===----------------------------------------------------------------------===//

/// 8-bit integers: `i8` holds signed values (-128..127), `ui8` unsigned ones
/// (0..255), as the importer maps ONNX INT8 and UINT8. 4-bit integers (`i4`,
/// `ui4`, one element per byte until packed int4 weights arrive with the
/// quantizer) feed the int4 matrix instructions of RDNA.
def Kiln_Int8Tensor : RankedTensorOf<[I8, UI8, I<4>, UI<4>]>;
def Kiln_I32Tensor : RankedTensorOf<[I32]>;

def Kiln_MatmulIntegerOp : Kiln_Op<"matmul_integer",
    [Pure, AttrSizedOperandSegments, InferTypeOpAdaptor]> {
  let summary = "batched 8-bit integer matrix product with zero points, in i32";
  let description = [{
    ONNX MatMulInteger. `lhs` `[..., M, K]` and `rhs` `[..., K, N]` hold
    8-bit integers, each either signed (`i8`) or unsigned (`ui8`); batch
    dimensions broadcast as for `kiln.matmul`. The result is

    `result[..., m, n] = sum_k (lhs[..., m, k] - lhs_zero_point[..., m]) *
                                (rhs[..., k, n] - rhs_zero_point[..., n])`

    computed in `i32` arithmetic, every operand first extended by its own
    signedness. A missing zero point is 0. A zero point has the element type
    of its operand and broadcasts (numpy rules) to the operand's shape with
    size 1 along K: a scalar (per tensor), `[M, 1]` (per row of `lhs`), `[N]`
    (per column of `rhs`), or with batch dimensions `[..., M, 1]` and
    `[..., 1, N]`.

    ```mlir
    %y = kiln.matmul_integer %a, %b rhs_zero_point(%zb)
        : (tensor<4x8xui8>, tensor<8x16xi8>, tensor<16xi8>) -> tensor<4x16xi32>
    ```
  }];
  let arguments = (ins Kiln_Int8Tensor:$lhs, Kiln_Int8Tensor:$rhs,
                       Optional<Kiln_Int8Tensor>:$lhs_zero_point,
                       Optional<Kiln_Int8Tensor>:$rhs_zero_point);
  let results = (outs Kiln_I32Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`lhs_zero_point` `(` $lhs_zero_point^ `)`)?
    (`rhs_zero_point` `(` $rhs_zero_point^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Kiln_MatmulInt4Op : Kiln_Op<"matmul_int4", [Pure, InferTypeOpAdaptor]> {
  let summary = "float activations times grouped 4-bit weights packed two per byte";
  let description = [{
    Weight-only 4-bit quantization (`kiln-compile --quantize=int4-weights`,
    ONNX Runtime's MatMulNBits). `lhs` is `[..., M, K]` in a float type;
    the weight matrix `[K, N]` is stored as 4-bit unsigned codes `q` in
    groups of `B` consecutive rows (along K), each group with its own scale
    and zero point per column:

    `result[..., m, n] = sum_k lhs[..., m, k] * (q[k, n] - zero_point[k / B, n]) * scale[k / B, n]`

    `weights` is `[K / B, B / 2, N]` bytes (`i8`): byte `[g, j, n]` holds
    `q[g * B + j, n]` in its low four bits and `q[g * B + B / 2 + j, n]` in
    its high four bits, so that one byte row feeds two rows of `lhs` per
    column. `scale` and `zero_point` are `[K / B, N]` in the type of `lhs`
    (a zero point of 8 makes the codes the signed range -8..7). `B` is even
    and divides K. The result is `[..., M, N]` in the type of `lhs`.

    Column panels (the cpu's layout, `kiln-pack-int4-weights`): with
    `weights` of rank 4, `[N / P, K / B, B / 2, P]`, and `scale` and
    `zero_point` `[N / P, K / B, P]`, the columns are stored in panels of P:
    byte `[c, g, j, l]` is byte `[g, j, c * P + l]` of the form above, and
    `scale[c, g, l]` is `scale[g, c * P + l]`. A panel's codes for all of K
    are then one contiguous run.

    `int8_activations` (W4A8, `kiln-compile --int4-activations=int8`):
    each row's activations are quantized to int8 at run time, per group of
    B along K, symmetrically, as ONNX Runtime's MatMulNBits does with
    `accuracy_level = 4`: `a = max |lhs[m, group g]|`, `inv = a > 0 ? 127 /
    a : 0`, `x[m, k] = round_half_even(lhs[m, k] * inv)` (in -127..127),
    and

    `result[m, n] = sum_g float(sum_{k in g} x[m, k] * (q[k, n] - zero_point[g, n])) * ((a / 127) * scale[g, n])`

    with the inner sum exact in i32 (zero points are whole numbers) and the
    outer one in f32, group after group. The cpu kernel multiplies the
    bytes with dot-product instructions.

    Column panels for the W4A8 kernel (`kiln-pack-int4-weights` on ops with
    `int8_activations`): `weights` of rank 5, `[N / P, K / B, B / 8, P,
    4]`, each column's codes four rows at a time: byte `[c, g, t, l, i]`
    holds `q[g * B + 4 t + i, c * P + l]` in its low four bits and
    `q[g * B + B / 2 + 4 t + i, c * P + l]` in its high four bits, so that
    the low (high) nibbles of 64 bytes are 16 columns' four consecutive
    rows, the operand of `vpdpbusd`. `scale` and `zero_point` are `[N / P,
    K / B, P]` as above.

    ```mlir
    %y = kiln.matmul_int4 %x, %w, %scale, %zero
        : (tensor<1x256xf32>, tensor<8x16x64xi8>, tensor<8x64xf32>, tensor<8x64xf32>)
        -> tensor<1x64xf32>
    %z = kiln.matmul_int4 %x, %p, %scale2, %zero2 {int8_activations}
        : (tensor<1x256xf32>, tensor<2x8x4x32x4xi8>, tensor<2x8x32xf32>, tensor<2x8x32xf32>)
        -> tensor<1x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$lhs, RankedTensorOf<[I8]>:$weights,
                       Kiln_FloatTensor:$scale, Kiln_FloatTensor:$zero_point,
                       UnitAttr:$int8_activations);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $weights `,` $scale `,` $zero_point attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The rows of a group, B.
    int64_t getBlockSize() {
      auto type = getWeights().getType();
      if (type.getRank() == 5)
        return 8 * type.getDimSize(2);
      return 2 * type.getDimSize(type.getRank() - 2);
    }
    /// The columns of a panel, P, in the panelled layouts; 0 otherwise.
    int64_t getPanelWidth() {
      auto type = getWeights().getType();
      return type.getRank() >= 4 ? type.getDimSize(3) : 0;
    }
    /// The groups along K, K / B.
    int64_t getGroups() {
      auto type = getWeights().getType();
      return type.getDimSize(type.getRank() >= 4 ? 1 : 0);
    }
  }];
}

def Kiln_ConvIntegerOp : Kiln_Op<"conv_integer",
    [Pure, AttrSizedOperandSegments, InferTypeOpAdaptor]> {
  let summary = "8-bit integer convolution with zero points, in i32 (NC...)";
  let description = [{
    ONNX ConvInteger: the window of `kiln.conv` (input `[N, C, D1, ...]`,
    filter `[F, C / groups, K1, ...]`, `strides`, `dilations`, begin-then-end
    `pads`, `groups`, no bias) over 8-bit integers, each operand signed
    (`i8`) or unsigned (`ui8`). Every element is extended by its own
    signedness and has its zero point subtracted before the `i32`
    multiply-accumulate; padding contributes zero to the sum (as if padded
    with the input's zero point). `input_zero_point` is a scalar;
    `filter_zero_point` is a scalar or `[F]`, one per output channel.
    A missing zero point is 0.

    ```mlir
    %y = kiln.conv_integer %x, %w input_zero_point(%zx) {
           strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>,
           pads = array<i64: 1, 1, 1, 1>}
        : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xui8>, tensor<ui8>)
        -> tensor<1x4x8x8xi32>
    ```
  }];
  let arguments = (ins Kiln_Int8Tensor:$input, Kiln_Int8Tensor:$filter,
                       Optional<Kiln_Int8Tensor>:$input_zero_point,
                       Optional<Kiln_Int8Tensor>:$filter_zero_point,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<Kiln_I64Attr, "1">:$groups);
  let results = (outs Kiln_I32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`input_zero_point` `(` $input_zero_point^ `)`)?
    (`filter_zero_point` `(` $filter_zero_point^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Linear quantization
//===----------------------------------------------------------------------===//

def Kiln_QuantizedTensor : RankedTensorOf<[I<4>, UI<4>, I8, UI8, I16, UI16, I32]>;

def Kiln_QuantizeOp : Kiln_Op<"quantize", [Pure]> {
  let summary = "linear quantization of a float tensor to integers";
  let description = [{
    ONNX QuantizeLinear: `result = saturate(round_half_even(input / scale) +
    zero_point)`, saturated to the range of the result's integer type. `scale`
    (of the input's float type) and `zero_point` (of the result's type; 0 when
    missing) broadcast to the input's shape with numpy's rules: one value per
    tensor, or one per channel along an axis (`[1, C, 1, 1]`).

    Kept as one op until the graph passes have folded the quantized
    contractions (`kiln-fold-quantized-ops`); `kiln-expand-quantization` then
    writes what is left as elementwise ops.

    ```mlir
    %q = kiln.quantize %x, %scale zero_point(%zp)
        : (tensor<1x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x8xui8>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Optional<Kiln_QuantizedTensor>:$zero_point);
  let results = (outs Kiln_QuantizedTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`zero_point` `(` $zero_point^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_DequantizeOp : Kiln_Op<"dequantize", [Pure]> {
  let summary = "the float values of linearly quantized integers";
  let description = [{
    ONNX DequantizeLinear: `result = (input - zero_point) * scale`, computed in
    the float type of `scale` and the result. `scale` and `zero_point` (of the
    input's integer type; 0 when missing) broadcast to the input's shape as for
    `kiln.quantize`.

    ```mlir
    %w = kiln.dequantize %wq, %scale
        : (tensor<16x8x3x3xi8>, tensor<16x1x1x1xf32>) -> tensor<16x8x3x3xf32>
    ```
  }];
  let arguments = (ins Kiln_QuantizedTensor:$input, Kiln_FloatTensor:$scale,
                       Optional<Kiln_QuantizedTensor>:$zero_point);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`zero_point` `(` $zero_point^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

class Kiln_PoolOp<string mnemonic, string desc>
    : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = desc # " pooling over the spatial dimensions (NC...)";
  let description = [{
    Slides a window of `kernel` elements over each spatial dimension with
    the given `strides`, `dilations` and `pads` (begin paddings then end
    paddings). With `ceil_mode`, a partial window at the end produces an
    output element.
  }];
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_MaxPoolOp : Kiln_PoolOp<"max_pool", "maximum"> {
  let arguments = (ins Kiln_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
}

def Kiln_AvgPoolOp : Kiln_PoolOp<"avg_pool", "average"> {
  let arguments = (ins Kiln_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Kiln_ReduceOp<string mnemonic, string desc>
    : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = desc # " over the given axes";
  let description = [{
    Reduces the dimensions listed in `axes` (sorted, unique, non-negative).
    With `keepdims` they stay as size-1 dimensions; without, they are
    removed. An empty `axes` list is the identity.
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum", "sum">;
def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", "arithmetic mean">;
def Kiln_ReduceMaxOp : Kiln_ReduceOp<"reduce_max", "maximum">;
def Kiln_ReduceMinOp : Kiln_ReduceOp<"reduce_min", "minimum">;
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod", "product">;

class Kiln_ArgOp<string mnemonic, string desc>
    : Kiln_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = "index of the " # desc # " along an axis";
  let description = [{
    Returns `i64` indices of the }] # desc # [{ element along `axis`; ties
    resolve to the first occurrence unless `select_last_index` is set.
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  }

def Kiln_ArgMaxOp : Kiln_ArgOp<"argmax", "largest">;
def Kiln_ArgMinOp : Kiln_ArgOp<"argmin", "smallest">;

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

def Kiln_SoftmaxOp : Kiln_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one axis";
  let description = [{
    `exp(x - max(x)) / sum(exp(x - max(x)))` along `axis`; with `log`,
    the logarithm of that (ONNX LogSoftmax).
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$log);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_LayerNormOp : Kiln_Op<"layer_norm", [Pure]> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes over dimensions `[axis, rank)`:
    `(x - mean) / sqrt(variance + epsilon) * scale + bias`. `scale` and
    the optional `bias` broadcast against those trailing dimensions.
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Optional<Kiln_FloatTensor>:$bias, Kiln_I64Attr:$axis,
                       F64Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_RmsNormOp : Kiln_Op<"rms_norm", [Pure]> {
  let summary = "root-mean-square normalization over the trailing dimensions";
  let description = [{
    Normalizes over dimensions `[axis, rank)`:
    `x / sqrt(mean(x^2) + epsilon) * scale`.
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Kiln_I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_RotaryEmbeddingOp : Kiln_Op<"rotary_embedding", [Pure]> {
  let summary = "rotary position embedding along the last dimension";
  let description = [{
    Rotates pairs of elements of the last dimension (size `D`, even) of
    `input` by angles whose cosines and sines are `cos` and `sin`, which
    broadcast to `input`'s shape (numpy rules, no higher rank):

    `result[..., j] = x[..., j] * cos[..., j] + s(j) * x[..., p(j)] * sin[..., j]`

    Without `interleaved` the pairs are `(j, j + D/2)`: `p(j) = j + D/2`,
    `s(j) = -1` for `j < D/2`, and `p(j) = j - D/2`, `s(j) = +1` after
    (`x * cos + rotate_half(x) * sin`, as LLaMA-style models write it). With
    `interleaved` they are `(2i, 2i + 1)`: `p(j) = j xor 1`, `s(j) = -1` for
    even `j`. ONNX's RotaryEmbedding (opset 23) is this op with its half-width
    caches gathered by position and repeated to width `D` (twice
    concatenated, or each element twice when interleaved).
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$cos,
                       Kiln_FloatTensor:$sin,
                       DefaultValuedAttr<BoolAttr, "false">:$interleaved);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input `,` $cos `,` $sin attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_BatchNormOp : Kiln_Op<"batch_norm", [Pure]> {
  let summary = "inference-mode batch normalization over channel dimension 1";
  let description = [{
    `(x - mean) / sqrt(variance + epsilon) * scale + bias`, where `scale`,
    `bias`, `mean` and `variance` are `[C]` vectors applied along
    dimension 1 of an `[N, C, ...]` input.
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Kiln_FloatTensor:$bias, Kiln_FloatTensor:$mean,
                       Kiln_FloatTensor:$variance, F64Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale `,` $bias `,` $mean `,` $variance "
                       "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure]> {
  let summary = "reinterpretation of a tensor with another static shape";
  let description = [{
    Same elements in row-major order, new shape: the result type's shape,
    which has as many elements as the operand. ONNX `Reshape`, `Flatten`,
    `Squeeze` and `Unsqueeze` all import to this op.
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "permutation of the dimensions";
  let description = [{
    `result` dimension `i` is `input` dimension `permutation[i]`.
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "concatenation along one axis";
  let description = [{
    Joins the operands along `axis`; every other dimension matches.
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, Kiln_I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "strided slice with static bounds";
  let description = [{
    For every dimension `d`: elements `starts[d], starts[d] + steps[d], ...`
    up to but excluding `ends[d]` (steps may be negative). The importer
    normalizes ONNX's negative and clamped indices, so `starts` lie in
    `[0, dim)` and the bounds are exact.
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def Kiln_PadOp : Kiln_Op<"pad",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "padding of every dimension";
  let description = [{
    `pads` holds the begin padding of every dimension followed by the end
    padding (negative values crop). `mode` is `constant` (fill with
    `value`), `reflect` or `edge`.
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$pads,
                       DefaultValuedStrAttr<StrAttr, "constant">:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "selection of slices along an axis by index (ONNX Gather)";
  let description = [{
    The result shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`. Negative indices count from the end of the axis.
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                       Kiln_I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` "
                       "functional-type(operands, results)";
  let hasFolder = 1;
}

def Kiln_GatherElementsOp : Kiln_Op<"gather_elements",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "selection of single elements along an axis (ONNX GatherElements)";
  let description = [{
    `indices` has the rank of `data`; the result has the shape of `indices`
    and `result[p] = data[p with p[axis] replaced by indices[p]]`. Negative
    indices count from the end of the axis. Outside `axis`, `indices` is no
    larger than `data`.

    ```mlir
    %r = kiln.gather_elements %x, %i {axis = 1 : i64}
        : (tensor<3x5xf32>, tensor<3x1xi64>) -> tensor<3x1xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                       Kiln_I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` "
                       "functional-type(operands, results)";
}

def Kiln_ScatterElementsOp : Kiln_Op<"scatter_elements",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "update of single elements along an axis (ONNX ScatterElements)";
  let description = [{
    The result is `data` with, for every position `p` of `updates`, the
    element at `p` with `p[axis]` replaced by `indices[p]` combined with
    `updates[p]`: replaced (`reduction = "none"`; of duplicate indices the
    last update wins), or accumulated with `add`, `mul`, `max` or `min`.
    `indices` and `updates` have the same shape and the rank of `data`, and
    outside `axis` are no larger than it. Negative indices count from the
    end of the axis.

    ```mlir
    %r = kiln.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"}
        : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<1x5xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                       Kiln_Tensor:$updates, Kiln_I64Attr:$axis,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices `,` $updates attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_OneHotOp : Kiln_Op<"one_hot", [Pure, InferTypeOpAdaptor]> {
  let summary = "one-hot encoding of indices (ONNX OneHot)";
  let description = [{
    The result has the shape of `indices` with a dimension of size `depth`
    inserted at `axis` (in `[0, rank(indices)]`), and the element type of
    `values`, a `[2]` tensor holding the off value then the on value:
    `result[p] = indices[p without axis] == p[axis] ? values[1] : values[0]`.
    A negative index counts from `depth`; an index outside
    `[-depth, depth)` selects no position.

    ```mlir
    %r = kiln.one_hot %i, %v {axis = 1 : i64, depth = 10 : i64}
        : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x10xf32>
    ```
  }];
  let arguments = (ins Kiln_IndexTensor:$indices, Kiln_Tensor:$values,
                       Kiln_I64Attr:$axis, Kiln_I64Attr:$depth);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$indices `,` $values attr-dict `:` "
                       "functional-type(operands, results)";
}

def Kiln_ExpandOp : Kiln_Op<"expand", [Pure]> {
  let summary = "broadcast of a tensor to a larger static shape";
  let description = [{
    Broadcasts the operand to the result type's shape with numpy rules
    (the result's shape is the broadcast of the operand's shape and the
    requested one).
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Dispatch regions
//===----------------------------------------------------------------------===//

def Kiln_DispatchOp : Kiln_Op<"dispatch",
    [IsolatedFromAbove, RecursiveMemoryEffects, SingleBlock]> {
  let summary = "one fused kernel: a root op with its elementwise neighbours";
  let description = [{
    The body computes the results from the block arguments, which stand for
    `inputs` (the region is isolated from above: every value it reads comes
    in as an operand). Each dispatch becomes one kernel per target; the
    `kiln-form-dispatches` pass builds them around a root (matmul, conv,
    pooling, reduction, softmax, normalization) with the elementwise ops
    that feed it or consume its result. `name` is unique within the function
    and becomes the kernel's name.

    ```mlir
    %r = kiln.dispatch "dispatch_0_conv" (%x, %w, %b)
        : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x6x6xf32> {
    ^bb0(%a: tensor<1x3x8x8xf32>, %f: tensor<4x3x3x3xf32>, %c: tensor<4xf32>):
      %0 = kiln.conv %a, %f, %c {...} : ...
      %1 = kiln.relu %0 : tensor<1x4x6x6xf32>
      kiln.yield %1 : tensor<1x4x6x6xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name ` ` `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
    $body
  }];
  let hasVerifier = 1;
}

def Kiln_YieldOp : Kiln_Op<"yield",
    [Pure, Terminator, ReturnLike, HasParent<"DispatchOp">]> {
  let summary = "the results of a dispatch region";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

include "kiln/Dialect/KilnProgramOps.td"

#endif // KILN_DIALECT_KILNOPS_TD
