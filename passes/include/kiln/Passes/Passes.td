//===- Passes.td -------------------------------------------*- tablegen -*-===//
//
// Graph-level passes on kiln IR (passes/): fusion into dispatches, weight
// layouts, outlining and memory planning.
// Each pass is a kiln-opt flag with a lit test named after that flag.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnRaiseRmsNorms : Pass<"kiln-raise-rms-norms", "mlir::func::FuncOp"> {
  let summary = "RMSNorm written out in elementwise ops and a mean, as one kiln.rms_norm";
  let description = [{
    ONNX before opset 23 has no RMSNormalization, so exporters write
    LLaMA-style models' RMSNorm out: `x * (1 / sqrt(mean(x^2) + eps)) * w`.
    As such it is three kernels (the squares and their mean, the square
    root and its reciprocal, the products), with the row's mean between
    them in memory. This pass replaces the chain by `kiln.rms_norm`, which
    every target computes as one kernel.

    Taken: `kiln.mul(n, w)` (either order) where `n` is `x / s`,
    `x * (1 / s)`, `x * reciprocal(s)` or `x * rsqrt(v)`, `s = sqrt(v)`,
    `v = mean + eps` (eps a scalar constant), `mean` a `kiln.reduce_mean`
    keeping its axes, which are x's trailing ones, of `x * x` or
    `x ^ 2`; every value in the chain but x read once; `w` of x's element
    type, shaped like the last of the normalized dimensions; static shapes. The result is
    the same up to rounding (kiln.rms_norm divides by the root instead of
    multiplying by its reciprocal).

    ```mlir
    %q = kiln.pow %x, %two : (tensor<1x128x256xf32>, tensor<f32>) -> tensor<1x128x256xf32>
    %m = kiln.reduce_mean %q {axes = array<i64: 2>} : (tensor<1x128x256xf32>) -> tensor<1x128x1xf32>
    %v = kiln.add %m, %eps : (tensor<1x128x1xf32>, tensor<f32>) -> tensor<1x128x1xf32>
    %s = kiln.sqrt %v : tensor<1x128x1xf32>
    %r = kiln.div %one, %s : (tensor<f32>, tensor<1x128x1xf32>) -> tensor<1x128x1xf32>
    %n = kiln.mul %x, %r : (tensor<1x128x256xf32>, tensor<1x128x1xf32>) -> tensor<1x128x256xf32>
    %y = kiln.mul %n, %w : (tensor<1x128x256xf32>, tensor<256xf32>) -> tensor<1x128x256xf32>
    // becomes
    %y = kiln.rms_norm %x, %w {axis = 2 : i64, epsilon = 9.9999999747524271E-7 : f64} : (tensor<1x128x256xf32>, tensor<256xf32>) -> tensor<1x128x256xf32>
    ```
  }];
}

def KilnRaiseRotaryEmbeddings : Pass<"kiln-raise-rotary-embeddings", "mlir::func::FuncOp"> {
  let summary = "rotary position embeddings written out in slices, a concat and products, as one kiln.rotary_embedding";
  let description = [{
    LLaMA-style exports write the rotary embedding of the query and key
    heads out as `x * cos + rotate_half(x) * sin`, with `rotate_half(x) =
    concat(-x[..., D/2:], x[..., :D/2])`: two slices, a negation, a concat,
    two products and a sum, which fusion makes three kernels per head
    tensor (the rotated half goes through memory twice). This pass replaces
    the chain by `kiln.rotary_embedding`, one kernel that reads each
    element's partner itself.

    Taken: `kiln.add` (either order) of `x * cos` and `r * sin` (products
    in either order) where `r` is `kiln.concat` along the last dimension of
    `-(x[..., D/2:])` (`kiln.neg`, or a product by a scalar -1) and
    `x[..., :D/2]` (`kiln.slice`s of the last dimension, step 1); every
    value in the chain but x, cos and sin read once; cos and sin of x's
    element type, broadcasting to it; static shapes; float. The result is
    the same up to rounding (half-precision inputs compute in f32 and round
    once).

    Also taken, as `{interleaved = true}` (GPT-J-style pairs (2i, 2i+1)):
    `r` = rotate_every_two(x), `stack(-x[..., 1::2], x[..., ::2], -1)`
    flattened back to x's shape, as exporters write it: two `kiln.slice`s
    of the last dimension with step 2, the negation (before or after its
    unsqueeze), each unsqueezed at -1 (a `kiln.reshape`), a `kiln.concat`
    along the new last axis and a `kiln.reshape` to x's shape.

    ```mlir
    %c  = kiln.mul %x, %cos : (tensor<1x8x128x32xf32>, tensor<128x32xf32>) -> tensor<1x8x128x32xf32>
    %hi = kiln.slice %x {starts = array<i64: 0, 0, 0, 16>, ends = array<i64: 1, 8, 128, 32>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x8x128x32xf32> -> tensor<1x8x128x16xf32>
    %n  = kiln.neg %hi : tensor<1x8x128x16xf32>
    %lo = kiln.slice %x {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 8, 128, 16>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x8x128x32xf32> -> tensor<1x8x128x16xf32>
    %r  = kiln.concat %n, %lo {axis = 3 : i64} : (tensor<1x8x128x16xf32>, tensor<1x8x128x16xf32>) -> tensor<1x8x128x32xf32>
    %s  = kiln.mul %r, %sin : (tensor<1x8x128x32xf32>, tensor<128x32xf32>) -> tensor<1x8x128x32xf32>
    %y  = kiln.add %c, %s : (tensor<1x8x128x32xf32>, tensor<1x8x128x32xf32>) -> tensor<1x8x128x32xf32>
    // becomes
    %y = kiln.rotary_embedding %x, %cos, %sin : (tensor<1x8x128x32xf32>, tensor<128x32xf32>, tensor<128x32xf32>) -> tensor<1x8x128x32xf32>
    ```
  }];
}

def KilnMergeHeadProjections : Pass<"kiln-merge-head-projections", "mlir::func::FuncOp"> {
  let summary = "an attention layer's query, key and value projections as one GEMM split into heads";
  let description = [{
    An attention layer's query, key and value projections read one
    activation `x` (`[1, S, K]`) and are each split into heads:
    `transpose(reshape(x W_i (+ b_i)))`, to `[1, H_i, S, D]` (or `[1, H_i,
    D, S]`, K^T). They are three GEMMs, each of a fraction of the chip's
    worth of work, and three launches. This pass puts the weights (and
    biases) side by side at compile time: one product `x [W_1 ... W_n]`,
    split into `sum H_i` heads of D and transposed to `[1, sum H_i, S, D]`
    once. Each projection's heads are then a contiguous range of that
    result, a `kiln.slice` that programs keep as a view of its bytes
    (kiln-form-dispatches, kiln-plan-memory); K^T is the transpose of its
    slice, which the attention's matmul takes in.

    Taken: two or more `kiln.matmul`s of one `x` of static shape `[1, S,
    K]` (batch 1: the heads of several rows would not be contiguous) by a
    constant `[K, N_i]` weight of x's element type, each read once, by an
    optional `kiln.add` of a constant `[N_i]` bias and then a reshape to
    `[1, S, H_i, D]` (D the same for all) and a transpose by `(0, 2, 1,
    3)` or `(0, 2, 3, 1)`, each read once. A projection without a bias
    gets zeros where the others have one. Results are unchanged. kiln-
    compile runs it with gfx targets alone, whose GEMM kernels store
    through the transpose.

    Then `kiln.rotary_embedding`s of adjacent head ranges of the merged
    result (each through its slice, read once) with the same cos and sin
    tables (broadcast along the heads) and pairing become one rotation of
    the union of the ranges, each range a slice of it: a LLaMA-style
    layer rotates its query and key heads in one kernel.

    ```mlir
    %q = kiln.matmul %x, %wq : (tensor<1x128x256xf32>, tensor<256x256xf32>) -> tensor<1x128x256xf32>
    %q4 = kiln.reshape %q : tensor<1x128x256xf32> -> tensor<1x128x8x32xf32>
    %qh = kiln.transpose %q4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x128x8x32xf32> -> tensor<1x8x128x32xf32>
    // ... %kh and %vh likewise with 2 heads each, becomes
    %y = kiln.matmul %x, %w : (tensor<1x128x256xf32>, tensor<256x384xf32>) -> tensor<1x128x384xf32>
    %y4 = kiln.reshape %y : tensor<1x128x384xf32> -> tensor<1x128x12x32xf32>
    %h = kiln.transpose %y4 {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x128x12x32xf32> -> tensor<1x12x128x32xf32>
    %qh = kiln.slice %h {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 8, 128, 32>, steps = array<i64: 1, 1, 1, 1>} : tensor<1x12x128x32xf32> -> tensor<1x8x128x32xf32>
    ```
  }];
}

def KilnFoldWeightLayouts : Pass<"kiln-fold-weight-layouts", "mlir::func::FuncOp"> {
  let summary = "apply data movement on weights at compile time";
  let description = [{
    A `kiln.transpose` of a constant (as `Gemm` with `transB = 1` imports:
    the fully connected layer's weight) is computed once here, whatever its
    size, into a new `dense_resource` blob, instead of every run moving the
    bytes. Likewise a transcendental of an f32 constant (`kiln.cos`,
    `kiln.sin`, `kiln.exp`, `kiln.log`, `kiln.sqrt`, `kiln.tanh`,
    `kiln.sigmoid`: a rotary embedding's cosine and sine of a table of
    angles), evaluated in double and rounded once. (The folders stop at a
    size limit because they work on `dense` attributes; this pass works on
    blobs.)
  }];
}

def KilnFoldBatchNorms : Pass<"kiln-fold-batch-norms", "mlir::func::FuncOp"> {
  let summary = "fold inference-mode batch normalization into the convolution before it";
  let description = [{
    A `kiln.batch_norm` whose input is a single-use `kiln.conv` with an f32
    constant filter (and a constant bias, or none), and whose scale, bias,
    mean and variance are constant, becomes part of the convolution:
    `s = scale / sqrt(variance + epsilon)` per output channel, the filter's
    channel `c` times `s[c]`, the bias `(bias - mean) * s + beta`. What
    stays a separate op: a normalization of anything else, of a convolution
    with other users, or with parameters known only at run time. Runs before
    weight quantization, so that `--quantize=int8` quantizes the weights
    that run (as ONNX Runtime's quantizer does after its own folding).
  }];
}

def KilnQuantizeWeights : Pass<"kiln-quantize-weights", "mlir::func::FuncOp"> {
  let summary = "quantize the float weights of contractions whose activation is quantized";
  let description = [{
    Post-training quantization (`kiln-compile --quantize=int8`): a `kiln.conv`
    whose input, or a `kiln.matmul` whose `lhs`, is a `kiln.dequantize` and
    whose weight is an f32 constant (a `[K, N]` one for matmul) gets the
    weight as `kiln.dequantize` of int8 constants: symmetric, one scale per
    output channel (conv's filter dimension 0, matmul's column),
    `scale = max |w| / 127`, values rounded half to even into [-127, 127].
    `kiln-fold-quantized-ops` then makes the contraction an integer one.
  }];
}

def KilnQuantizeInt4Weights : Pass<"kiln-quantize-int4-weights", "mlir::func::FuncOp"> {
  let summary = "grouped 4-bit weights for float matmuls (weight-only quantization)";
  let description = [{
    `kiln-compile --quantize=int4-weights`: a `kiln.matmul` with an f32 `lhs`
    and an f32 constant `[K, N]` `rhs` becomes `kiln.matmul_int4`, its weight
    quantized per column in groups of `group-size` consecutive rows along K.
    Symmetric by default: `scale = max |w| / 7` over the group, codes
    `rint(w / scale) + 8` (zero point 8). With `zero-points`, asymmetric over
    `[min(w, 0), max(w, 0)]`: `scale = (max - min) / 15`, zero point
    `rint(-min / scale)`, codes `rint(w / scale) + zero point` clipped to
    0..15. Arithmetic in f32, rounding half to even. When K is not a
    multiple of the group size the weight gains zero rows up to the next
    multiple (their codes dequantize to 0) and the activation zero columns
    (a `kiln.pad`), as MatMulNBits' last block does. The nodes the module's
    `kiln.float_nodes` names (`--quantize-exclude`) keep their float weight.
  }];
  let options = [
    Option<"groupSize", "group-size", "int64_t", "128",
           "rows of K per scale and zero point (even)">,
    Option<"zeroPoints", "zero-points", "bool", "false",
           "asymmetric groups with a zero point each (else symmetric)">,
  ];
}

def KilnPackInt4Weights : Pass<"kiln-pack-int4-weights", "mlir::func::FuncOp"> {
  let summary = "grouped 4-bit weights stored in column panels (the cpu's layout)";
  let description = [{
    A `kiln.matmul_int4` whose codes, scales and zero points are constants
    and whose N is a multiple of `panel` gets them in column panels of
    `panel` columns: codes `[K / B, B / 2, N]` become `[N / P, K / B, B / 2,
    P]` and scales and zero points `[K / B, N]` become `[N / P, K / B, P]`,
    rearranged here, at compile time, into new blobs (the old ones go when
    nothing else reads them). A kernel that computes P columns then reads its
    codes as one contiguous run through all of K, where the row-major layout
    puts consecutive byte rows N bytes apart (a new page per row at N = 4096,
    which the hardware prefetchers do not follow). kiln-compile runs it when
    every target is the cpu; the gfx W4A16 kernels read the row-major form.

    An op with `int8_activations` (W4A8) gets the dot-product kernel's
    panels instead, `[N / P, K / B, B / 8, P, 4]`: each column's codes four
    rows at a time, the form `vpdpbusd` multiplies. Its N need not be a
    multiple of `panel`: the last panel's columns past N get codes, scales
    and zero points of 0 (which add exactly 0), and a `kiln.slice` takes the
    N columns of the result.

    With `w4a8-only`, only the ops with `int8_activations` are packed: the
    gfx GEMM builder reads the W4A8 panels too (four rows of a column are
    one 32-bit word of its LDS panel), so an artifact for the cpu and gfx
    targets stores them once, in this form, while its W4A16 ops keep the
    row-major codes the gfx W4A16 kernels read.
  }];
  let options = [
    Option<"panel", "panel", "int64_t", "32", "columns per panel (a multiple of 16)">,
    Option<"w4a8Only", "w4a8-only", "bool", "false",
           "pack only the ops with int8_activations (W4A8)">,
  ];
}

def KilnQuantizeInt4Activations : Pass<"kiln-quantize-int4-activations", "mlir::func::FuncOp"> {
  let summary = "W4A8: every kiln.matmul_int4 quantizes its activations to int8 at run time";
  let description = [{
    Sets `int8_activations` on every `kiln.matmul_int4` (from
    `--quantize=int4-weights`, MatMulNBits or a QDQ int4 weight): each row's
    activations are quantized per group of B along K to int8 at run time
    (symmetric, as ONNX Runtime's MatMulNBits with `accuracy_level = 4`),
    and the cpu kernel multiplies them with the 4-bit codes by dot-product
    instructions (`kiln-compile --int4-activations=int8`). Only ops with f32
    activations and constant zero points that are whole numbers from 0 to
    15 (what every 4-bit scheme writes; MatMulNBits also allows float ones)
    are changed: the kernel's integer zero-point correction is exact for
    those. The others keep float activations (kiln-compile says which).
  }];
}

def KilnNarrowMatmulWeights : Pass<"kiln-narrow-matmul-weights", "mlir::func::FuncOp"> {
  let summary = "constant f32 weights of matmuls and convolutions stored in f16 or bf16, read through a cast";
  let description = [{
    With `precision` f16 or bf16 (kiln-compile's `--precision` for gfx
    targets alone), the constant f32 weight of a `kiln.matmul`, a
    `kiln.matmul_panels` or the filter of a `kiln.conv` is stored rounded
    to that type (to nearest, ties to even, as the kernels' conversion
    rounds it) and read through `kiln.cast` back to f32: the artifact holds
    half the bytes, the gfx GEMM kernels stage the narrow weight as it is
    (they rounded f32 weights the same way on their way into LDS), and the
    GEMV kernels stream half the bytes. kiln-compile runs it after the last
    folding before dispatch formation (a cast of a constant would fold
    back); kiln-form-dispatches takes the cast into the contraction's
    dispatch.

    ```mlir
    %y = kiln.matmul %x, %w : (tensor<64x256xf32>, tensor<256x512xf32>) -> tensor<64x512xf32>
    // becomes
    %h = kiln.constant dense_resource<narrow_weight_0> : tensor<256x512xf16>
    %c = kiln.cast %h : tensor<256x512xf16> to tensor<256x512xf32>
    %y = kiln.matmul %x, %c : (tensor<64x256xf32>, tensor<256x512xf32>) -> tensor<64x512xf32>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"f16\"", "f16 or bf16">,
  ];
}

def KilnTransposeMatmulWeights : Pass<"kiln-transpose-matmul-weights", "mlir::func::FuncOp"> {
  let summary = "constant matmul weights stored k-fastest ([N, K]) for the gfx matrix cores, read through a kiln.transpose";
  let description = [{
    The B operand of a matrix instruction holds, per lane, consecutive k of
    one column. A weight stored row-major ([K, N], n fastest) makes every
    GEMM kernel transpose its B panel in registers each K step (16-bit
    pairs packed with `v_perm_b32`, bytes in 4 x 4 word transposes) on its
    way into LDS. This pass stores the constant weight of a `kiln.matmul`
    (f32, f16 or bf16, also when read through the cast
    kiln-narrow-matmul-weights puts in front of it) and the 8-bit weight of
    a `kiln.matmul_integer` without a weight zero point (one would make the
    lowering sum the weight's columns in the product's dispatch) transposed,
    `[N, K]`, read through a
    `kiln.transpose` back to `[K, N]`: the graph means what it meant, and
    kiln-form-dispatches takes the transpose (and the cast) into the
    product's dispatch, where the gfx GEMM builder reads the stored weight
    along k, as it reads A. kiln-compile runs it for gfx targets alone (the
    cpu kernels read their own panel layouts), after the last folding (a
    transpose of a constant would fold back).

    Only rank-2 weights that nothing else reads, of products of more than
    `min-rows` rows (few-row products are GEMVs, which stream their weight
    along n or in panels).

    ```mlir
    %c = kiln.cast %h : tensor<256x512xf16> to tensor<256x512xf32>
    %y = kiln.matmul %x, %c : (tensor<64x256xf32>, tensor<256x512xf32>) -> tensor<64x512xf32>
    // becomes
    %t = kiln.constant dense_resource<k_major_weight_0> : tensor<512x256xf16>
    %w = kiln.transpose %t {permutation = array<i64: 1, 0>} : tensor<512x256xf16> -> tensor<256x512xf16>
    %c = kiln.cast %w : tensor<256x512xf16> to tensor<256x512xf32>
    %y = kiln.matmul %x, %c : (tensor<64x256xf32>, tensor<256x512xf32>) -> tensor<64x512xf32>
    ```
  }];
  let options = [
    Option<"minRows", "min-rows", "int64_t", "8",
           "products of at most this many rows keep their weights as they are">,
  ];
}

def KilnPackMatmulPanels : Pass<"kiln-pack-matmul-panels", "mlir::func::FuncOp"> {
  let summary = "constant weights of few-row matmuls (float, and int8 of integer ones) stored in column panels (the cpu's layout)";
  let description = [{
    A `kiln.matmul` of at most `max-rows` rows (the product of the lhs's
    leading dimensions), or with `unfused` of any number of rows when no
    elementwise op reads its result (an LLM head, attention projections
    before their reshapes), by a constant f32 `[K, N]` weight becomes
    `kiln.matmul_panels`, the weight rearranged here, at compile time, into
    `[ceil(N / P), K, P]` (P = `panel`; the last panel's columns past N are
    zero). A panel is one contiguous run through K: the cpu kernels read it
    in place, where a row-major weight gives every column block one short
    run per row, N elements from the next (a page per row for N = 4096,
    which the hardware prefetchers do not follow), and the GEMM tiles copied
    each block into a panel at run time. Few rows take the panel kernel
    (bound by streaming the weights), more the GEMM register tiles
    (kiln-cpu-vectorize-gemm's panel-gemm-rows). kiln-compile runs it when
    every target is the cpu, with P the widest register tile's columns (32
    with AVX-512, 16 with AVX2) and no row limit (`--matmul-panel-rows`);
    with gfx targets, for products of at most 8 rows and without `unfused`
    (the gfx GEMV kernels stream any panels; the gfx GEMM kernels read
    row-major weights), P = 16 and `half-floats` when no cpu target reads
    the panels.
    Rows spread over more than 8 indices of the lhs's dimensions before the
    rows (a `[16, 1, 768]` sequence-first attention input) stay unpacked:
    the panel kernel would stream the weight once per index; with 128 rows
    or more (every workgroup then takes the GEMM register tiles, which fold
    those dimensions into M) unit dimensions do not count (`[197, 1, 768]`
    is packed). A product of at most 8 rows whose N is not whole panels,
    where the padding is at most N / 8, is computed for whole panels (its
    workgroups can then split the columns in panels) and sliced to N; a
    bias add that alone reads it takes the padding too (a constant bias
    padded with zeros), so that it stays in the product's dispatch.

    A `kiln.matmul_integer` of at most 8 rows (and `max-rows`) of 8-bit
    activations by a constant int8 `[K, N]` weight without zero points (the
    form kiln-fold-quantized-ops leaves) becomes an 8-bit
    `kiln.matmul_panels` the same way (computing a last partial panel whole
    and slicing the result to N, where that padding is at most N / 8): a quantized LLM's decode step and a
    quantized classifier's last layer stream their weights as panels, where
    the row-major weight cost a page per row (lm_head 256 x 32000: 7 GB/s,
    28 in panels). Its panels are products of the GEMM register tiles with
    dot-product instructions (kiln-cpu-vectorize-gemm). More rows keep the
    row-major weight, whose column blocks the GEMM tiles interleave once per
    workgroup.
  }];
  let options = [
    Option<"panel", "panel", "int64_t", "16", "columns per panel (a multiple of 16)">,
    Option<"maxRows", "max-rows", "int64_t", "64", "rows of lhs a matmul may have at most">,
    Option<"unfused", "unfused", "bool", "true",
           "also pack a matmul of any number of rows whose result no elementwise op reads">,
    Option<"halfFloats", "half-floats", "bool", "false",
           "also pack f16 and bf16 weights (of products with an lhs of the same type)">,
  ];
}

def KilnFoldQuantizedOps : Pass<"kiln-fold-quantized-ops", "mlir::func::FuncOp"> {
  let summary = "conv and matmul of dequantized 8-bit (matmul: or 4-bit) operands become integer contractions";
  let description = [{
    `kiln.conv(kiln.dequantize(x), kiln.dequantize(w), bias)` with f32
    results, 8-bit `x` and `w`, constant scales and zero points (`x` per
    tensor; `w` per tensor or per output channel) becomes
    `float(kiln.conv_integer(x, w, zx, zw)) * (sx * sw) + bias`; likewise
    `kiln.matmul` of a per-tensor `lhs` and a `[K, N]` `rhs` per tensor or per
    column becomes `kiln.matmul_integer`, with both operands 8-bit or both
    4-bit. 4-bit ones (a QDQ model quantized to int4 on both sides) become
    bytes holding the same values, marked `kiln.four_bit`: the weight an
    int8 constant, the activation cast to 8 bits (a signed one moved to
    unsigned, `a + 8` with its zero point + 8, for the cpu's uint8 x int8
    kernels); the gfx targets with a 4-bit matrix instruction (RDNA's iu4
    WMMA) take it for such products. The float scaling and bias are
    elementwise consumers of the integer op, which dispatch formation fuses
    into its epilogue (together with the next layer's `kiln.quantize`). This
    is how pre-quantized QDQ models and Kiln's own quantization reach the
    integer kernels; anything else keeps its float contraction.

    A `kiln.conv_integer` (ungrouped) or `kiln.matmul_integer` (`[K, N]`
    rhs) whose activations have one zero point z and whose weights are an
    int8 constant without one (or with zero) gets z at compile time: the
    input is padded with z (what zero padding of `x - z` means) and
    contracted raw, and `z * (the weight sums per output channel)` is
    subtracted as an i32 constant, since sum (x - z) * w = sum x * w -
    z * sum w. The integer kernels then read plain bytes and need no weight
    sums at run time. A zero point known only at run time (one value,
    DynamicQuantizeLinear's) is taken off the same way, as `i32(z) * (the
    sums)` with the sums still a constant; a convolution's input is then
    padded with 0 and z added on the border through a constant 0/1 mask.

    A `kiln.matmul` of an f32 `lhs` by a `[K, N]` dequantization of a
    constant 4-bit weight (int4 or uint4: per tensor, per column, or blocked
    along K as `[K / B, B, N]` reshaped to `[K, N]`, how blocked
    DequantizeLinear imports) becomes `kiln.matmul_int4`, the codes moved
    to 0..15 and packed two per byte.
  }];
}

def KilnExpandQuantization : Pass<"kiln-expand-quantization", "mlir::func::FuncOp"> {
  let summary = "write the remaining kiln.quantize and kiln.dequantize as elementwise ops";
  let description = [{
    `kiln.quantize` becomes `cast(clip(round(x / scale) + zero_point))` and
    `kiln.dequantize` `(cast(x) - zero_point) * scale`, in the float type;
    runs after `kiln-fold-quantized-ops`, so that only what no integer
    contraction took is expanded.
  }];
}

def KilnSpaceToDepthConvs : Pass<"kiln-space-to-depth-convs", "mlir::func::FuncOp"> {
  let summary = "convolutions whose windows tile the image as space to depth and a 1x1 convolution";
  let description = [{
    A 2-d float `kiln.conv` with one group, strides equal to its kernel
    (larger than 1 x 1), no padding, no dilation, and an image whose height
    and width the kernel divides (ViT's patch embedding, ConvNeXt's stem and
    downsampling layers) reads each input pixel once: its im2col is a
    permutation of the input. The input becomes `kiln.reshape` to
    `[N, C, OH, KH, OW, KW]`, `kiln.transpose` to `[N, C, KH, KW, OH, OW]`
    and `kiln.reshape` to `[N, C KH KW, OH, OW]`; the filter is reshaped to
    `[F, C KH KW, 1, 1]` (folded when it is a constant) and the strides
    become 1. The convolution is then a 1x1 one, which the cpu code
    generator runs as a GEMM tiled by rows and columns, after one transpose
    dispatch, instead of an im2col GEMM that gathers strided pixels in
    every workgroup. The sums are the same products in the same order.
    kiln-compile runs it when every target is the cpu.

    ```mlir
    %y = kiln.conv %x, %w, %b {strides = array<i64: 16, 16>, pads = array<i64: 0, 0, 0, 0>, ...}
        : (tensor<1x3x224x224xf32>, tensor<768x3x16x16xf32>, tensor<768xf32>) -> tensor<1x768x14x14xf32>
    // becomes
    %0 = kiln.reshape %x : tensor<1x3x224x224xf32> -> tensor<1x3x14x16x14x16xf32>
    %1 = kiln.transpose %0 {permutation = array<i64: 0, 1, 3, 5, 2, 4>} : ... -> tensor<1x3x16x16x14x14xf32>
    %2 = kiln.reshape %1 : tensor<1x3x16x16x14x14xf32> -> tensor<1x768x14x14xf32>
    %y = kiln.conv %2, %w1, %b {strides = array<i64: 1, 1>, ...}
        : (tensor<1x768x14x14xf32>, tensor<768x768x1x1xf32>, tensor<768xf32>) -> tensor<1x768x14x14xf32>
    ```
  }];
}

def KilnUnstridePointwiseConvs : Pass<"kiln-unstride-pointwise-convs", "mlir::func::FuncOp"> {
  let summary = "strided 1x1 convolutions as a strided slice and an unstrided 1x1 convolution";
  let description = [{
    A `kiln.conv` whose filter is 1 x 1 (in every spatial dimension), with
    strides above 1 and no padding, reads every s-th input pixel: its input
    becomes a `kiln.slice` with those steps, and its strides 1. The
    convolution is then a plain pointwise one, which the cpu code generator
    runs as a GEMM reading the image in place (split into workgroups by rows
    and columns), instead of gathering the strided pixels inside every
    workgroup of an im2col GEMM split by image rows only. The slice is a
    copy of the pixels the convolution reads. kiln-compile runs it when
    every target is the cpu. The results are the same to the bit.

    ```mlir
    %y = kiln.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ...}
        : (tensor<1x256x56x56xf32>, tensor<512x256x1x1xf32>) -> tensor<1x512x28x28xf32>
    // becomes
    %s = kiln.slice %x {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 256, 55, 55>,
                        steps = array<i64: 1, 1, 2, 2>} : tensor<1x256x56x56xf32> -> tensor<1x256x28x28xf32>
    %y = kiln.conv %s, %w {strides = array<i64: 1, 1>, ...}
    ```
  }];
}

def KilnTransposePointwiseConvs : Pass<"kiln-transpose-pointwise-convs", "mlir::func::FuncOp"> {
  let summary = "1x1 convolutions on small images as transposed GEMMs by constant weights";
  let description = [{
    A 2-d `kiln.conv` with a constant f32 1 x 1 filter, unit strides, no
    padding, one group, at least `min-channels` input and output channels
    and an image of at most `max-points` points is the GEMM
    W[F, C] x X[C, H*W], which the cpu code generator vectorizes along the
    image: on ResNet-50's last stage (7 x 7 = 49 points) most vector lanes
    idle. It becomes the transposed product X^T[N*H*W, C] x W^T[C, F], the
    filter transposed at compile time into a constant right-hand side that
    kiln-pack-matmul-panels then stores in column panels, between a
    transpose of the image in and of the result out (which takes the
    convolution's elementwise epilogue along into its dispatch). kiln-compile
    runs it when every target is the cpu. The same products are summed in
    another order: the results agree within rounding.

    ```mlir
    %y = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ...}
        : (tensor<1x2048x7x7xf32>, tensor<512x2048x1x1xf32>, tensor<512xf32>) -> tensor<1x512x7x7xf32>
    // becomes
    %r = kiln.reshape %x : tensor<1x2048x7x7xf32> -> tensor<1x2048x49xf32>
    %t = kiln.transpose %r {permutation = array<i64: 0, 2, 1>} : tensor<1x2048x49xf32> -> tensor<1x49x2048xf32>
    %a = kiln.reshape %t : tensor<1x49x2048xf32> -> tensor<49x2048xf32>
    %m = kiln.matmul %a, %wt : (tensor<49x2048xf32>, tensor<2048x512xf32>) -> tensor<49x512xf32>
    %s = kiln.add %m, %b : (tensor<49x512xf32>, tensor<512xf32>) -> tensor<49x512xf32>
    %e = kiln.reshape %s : tensor<49x512xf32> -> tensor<1x7x7x512xf32>
    %y = kiln.transpose %e {permutation = array<i64: 0, 3, 1, 2>} : tensor<1x7x7x512xf32> -> tensor<1x512x7x7xf32>
    ```
  }];
  let options = [
    Option<"maxPoints", "max-points", "int64_t", "64",
           "largest image (H * W) taken">,
    Option<"minChannels", "min-channels", "int64_t", "32",
           "fewest input and output channels taken">,
  ];
}

def KilnWinogradConvs : Pass<"kiln-winograd-convs", "mlir::func::FuncOp"> {
  let summary = "3x3 stride-1 convolutions as Winograd F(4,3) or F(2,3) transforms and GEMMs";
  let description = [{
    A 2-d `kiln.conv` with a constant f32 3x3 filter, unit strides and
    dilations, one group and at least `min-channels` input and output
    channels is computed by Winograd's minimal filtering (Lavin and Gray,
    2016): the output in m x m tiles (m = 4, F(4,3), when both output
    dimensions are at least `min-f4-size`; else m = 2, F(2,3)), each from an
    (m + 2) x (m + 2) tile of the padded input. Per layer:

    - the filter transform `U = G g G^T` is done here, at compile time, into
      a new weight `[(m+2)^2, F, C]` (computed in double, stored as f32);
    - the input tiles are `(m+2)^2` strided `kiln.slice`s of the padded
      input, concatenated, and transformed by two `kiln.matmul`s with
      `B^T` (rows, then columns: `V = B^T d B`);
    - one batched `kiln.matmul` per tile element, `M = U V`
      (`[(m+2)^2, F, C] x [(m+2)^2, C, N * tiles]`): the multiplications,
      (m+2)^2 / m^2 per output element and channel instead of 9;
    - two `kiln.matmul`s with `A^T` give the m x m outputs (`Y = A^T M A`),
      which a transpose and a reshape put back in NCHW (and a slice crops
      when m does not divide the output), then the bias is added.

    With `transform-ops` (what kiln-compile sets when every target is the
    cpu) the two transforms are instead one op each, `kiln.winograd_input`
    (padding, tile gather and `B^T d B`) and `kiln.winograd_output`
    (`A^T M A`, the bias, and the convolution's consumers it takes in: a
    residual `kiln.add` of the output's shape that only reads the
    convolution, then a `kiln.relu`), each a dispatch of its own with a
    vector kernel on the cpu (kiln-cpu-winograd-kernels): three dispatches
    per convolution instead of nine. Padding up to 16 is taken; a
    convolution padded more keeps the ordinary ops.

    Without it, everything it makes is ordinary kiln ops, so fusion, memory
    planning and every code generator take it as they take the rest of the
    graph. The results differ from the direct convolution by rounding only
    (F(4,3): about 1e-5 relative in f32). `exclude` names nodes (ONNX node
    names) to keep direct.
  }];
  let options = [
    Option<"minChannels", "min-channels", "int64_t", "32",
           "input and output channels a convolution needs at least">,
    Option<"minF4Size", "min-f4-size", "int64_t", "12",
           "output height and width from which F(4,3) is used instead of F(2,3)">,
    ListOption<"exclude", "exclude", "std::string",
               "node names of convolutions kept direct">,
    Option<"transformOps", "transform-ops", "bool", "false",
           "the transforms as kiln.winograd_input / kiln.winograd_output (cpu kernels) "
           "instead of slices, matmuls and a transpose">,
  ];
}

def KilnMergeRangeReductions : Pass<"kiln-merge-range-reductions", "mlir::func::FuncOp"> {
  let summary = "the minimum and the maximum of the same value, as one reduction: the minima of [x; -x]";
  let description = [{
    A range (what `--quantize=int8-dynamic` takes of every activation at run
    time, in two steps: the minimum and the maximum of rows of up to 4096
    elements, then of the rows' results) is two reductions of the same
    value, two kernels. This pass makes the rows' step one: the minima of
    the value stacked with its negation, `[1; -1] * x` (a broadcast product,
    an elementwise producer that the reduction's kernel computes as it
    reads x), whose first half is the minimum and whose second half,
    negated, the maximum (exactly: max(x) = -min(-x)). Each half of the
    stacked `[2, R]` result is a 64-byte aligned view (R a multiple of 16),
    so the second step reads them without a copy, the negation fused into
    it.

    Taken: a `kiln.reduce_max` and a `kiln.reduce_min` of the same static
    f32 value in one block, over its last axis alone, keepdims false, at
    most `max-reduced` elements per output, the outputs a multiple of 16.
    The stacked value is read twice, once per half: one kernel, not one
    read. kiln-compile runs it with gfx targets alone, where each kernel is
    a launch and the row kernels (kiln-gpu-build-row-reductions) take the
    stacked rows whole with their product; the cpu target would
    materialize the product.

    ```mlir
    %lo = kiln.reduce_min %x {axes = array<i64: 1>, keepdims = false} : (tensor<16x2048xf32>) -> tensor<16xf32>
    %hi = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<16x2048xf32>) -> tensor<16xf32>
    // becomes
    %s = kiln.constant dense<[[[1.0]], [[-1.0]]]> : tensor<2x1x1xf32>
    %v = kiln.reshape %x : tensor<16x2048xf32> -> tensor<1x16x2048xf32>
    %p = kiln.mul %v, %s : (tensor<1x16x2048xf32>, tensor<2x1x1xf32>) -> tensor<2x16x2048xf32>
    %e = kiln.reduce_min %p {axes = array<i64: 2>, keepdims = false} : (tensor<2x16x2048xf32>) -> tensor<2x16xf32>
    %a = kiln.slice %e {starts = array<i64: 0, 0>, ends = array<i64: 1, 16>, ...} // %lo, reshaped to [16]
    %b = kiln.slice %e {starts = array<i64: 1, 0>, ends = array<i64: 2, 16>, ...}
    %hi = kiln.neg %b2 : tensor<16xf32>                                          // %b, reshaped to [16]
    ```
  }];
  let options = [
    Option<"maxReduced", "max-reduced", "int64_t", "8192",
           "most elements per output of a pair that is merged (the rows the "
           "gfx row kernels take whole)">,
  ];
}

def KilnSplitReductions : Pass<"kiln-split-reductions", "mlir::func::FuncOp"> {
  let summary = "reductions of few outputs over many elements, split in two so that many threads reduce at once";
  let description = [{
    The gfx generic path gives each thread whole outputs of a reduction: a
    reduction to a few values (the range of an activation that
    `--quantize=int8-dynamic` quantizes at run time, a global average pool
    of one image) runs on a handful of threads, each reducing thousands of
    elements one after another. This pass reshapes the reduced elements of
    each output into P equal parts (a view: the reduced axes must be the
    trailing ones), reduces each part (outputs x P threads), then the parts:
    two dispatches instead of one, the second tiny.

    Taken: `kiln.reduce_sum`, `kiln.reduce_mean` (a mean of equal parts'
    means), `kiln.reduce_max` and `kiln.reduce_min` of floats with static
    shapes whose outputs are fewer than `threads`, each of at least
    `min-reduced` elements (a thread reduces a few thousand in about the
    time of the second dispatch's launch; and an elementwise producer that
    the reduction's dispatch took in gets a dispatch of its own, since the
    split's reshape stands between them). P is the smallest power
    of two that gives `threads` outputs times parts, dividing the reduced
    elements and leaving at least `min-part` in each part; none below 2.
    Sums and means are the same up to the order of the additions; maxima
    and minima are exact. kiln-compile runs it with gfx targets alone.

    With `max-row` (kiln-compile: 8192), a reduction of the last axis alone
    over rows of at most that many elements stays whole: the gfx row
    kernels (kiln-gpu-build-row-reductions) give each row up to 256 lanes
    that meet in LDS, so it is one launch, and it keeps an elementwise
    producer its dispatch took in (dynamic quantization's stacked
    `[x; -x]`, whose minima are both ends of x's range).

    ```mlir
    %r = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<16x8192xf32>) -> tensor<16xf32>
    // becomes (threads = 4096: P = 256)
    %v = kiln.reshape %x : tensor<16x8192xf32> -> tensor<16x256x32xf32>
    %p = kiln.reduce_max %v {axes = array<i64: 2>, keepdims = false} : (tensor<16x256x32xf32>) -> tensor<16x256xf32>
    %r = kiln.reduce_max %p {axes = array<i64: 1>, keepdims = false} : (tensor<16x256xf32>) -> tensor<16xf32>
    ```
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "4096",
           "outputs times parts to reach (0: keep every reduction whole)">,
    Option<"minPart", "min-part", "int64_t", "8",
           "fewest elements in a part">,
    Option<"minReduced", "min-reduced", "int64_t", "2048",
           "fewest elements per output of a reduction that is split">,
    Option<"maxRow", "max-row", "int64_t", "0",
           "a reduction of the last axis alone over at most this many "
           "elements per output stays whole (0: none)">,
  ];
}

def KilnSplitKConvs : Pass<"kiln-split-k-convs", "mlir::func::FuncOp"> {
  let summary = "convolutions with too few output tiles for the chip, split along their input channels";
  let description = [{
    A gfx convolution is one GEMM kernel with a workgroup per 64 x 64 tile of
    its output (output channels x pixels). Late in a CNN the images are
    small and the channels many: ResNet-50's last 3x3 convolutions are 8
    tiles on a chip of 304 CUs, each workgroup running the whole reduction
    over 4608 inputs. This pass splits such a convolution's input channels
    into S parts, so that its tiles times S reach `compute-units`: a grouped
    convolution with S groups computes each part's sums into its own
    channels (the filter rearranged at compile time, [F, C, KH, KW] ->
    [S F, C / S, KH, KW]: part s's filters are channels s C / S.. of every
    output channel's), `kiln.reduce_sum` adds the parts, then the bias. The
    reduction takes in the elementwise ops after the convolution (ReLU,
    a residual add) as its epilogue when dispatches form.

    Taken: 2-d float convolutions (f32 ones only with `split-f32`) of one
    group with a constant filter and static shapes, fewer tiles than `compute-units`, at least `min-reduction`
    products per output. S is the smallest
    power of two that gives `compute-units` tiles, at most `max-splits`,
    dividing C, with at least `min-depth` products per output (C / S KH KW)
    left in each part; none below 2. The sums are the same up to the order
    of the additions (the parts are rounded to the result's type before they
    are added). kiln-compile runs it with gfx targets alone, for the largest
    chip of those targets.

    ```mlir
    %y = kiln.conv %x, %w, %b {groups = 1, ...}
        : (tensor<1x512x7x7xf32>, tensor<512x512x3x3xf32>, tensor<512xf32>) -> tensor<1x512x7x7xf32>
    // becomes (S = 16)
    %p = kiln.conv %x, %w16 {groups = 16, ...}
        : (tensor<1x512x7x7xf32>, tensor<8192x32x3x3xf32>) -> tensor<1x8192x7x7xf32>
    %r = kiln.reshape %p : (tensor<1x8192x7x7xf32>) -> tensor<1x16x512x7x7xf32>
    %s = kiln.reduce_sum %r {axes = array<i64: 1>, keepdims = false} : ... -> tensor<1x512x7x7xf32>
    %y = kiln.add %s, %b3 : (tensor<1x512x7x7xf32>, tensor<512x1x1xf32>) -> tensor<1x512x7x7xf32>
    ```
  }];
  let options = [
    Option<"computeUnits", "compute-units", "int64_t", "0",
           "workgroups a convolution should have at least (the CUs of the largest "
           "chip); 0 leaves every convolution whole">,
    Option<"tile", "tile", "int64_t", "64",
           "output rows and columns per workgroup of the GEMM kernels">,
    Option<"maxSplits", "max-splits", "int64_t", "16",
           "parts a convolution is split into at most">,
    Option<"minDepth", "min-depth", "int64_t", "128",
           "products per output (C / S x KH x KW) each part keeps at least">,
    Option<"splitF32", "split-f32", "bool", "true",
           "split f32 convolutions too (the gfx kernels compute them on the matrix "
           "cores on CDNA or with --precision=f16|bf16; elsewhere in f32 they take "
           "the generic path, where a grouped convolution gains nothing)">,
    Option<"minReduction", "min-reduction", "int64_t", "1024",
           "products per output (C x KH x KW) a convolution needs to be split: a "
           "shorter one's whole reduction takes about as long as the launch of the "
           "sum would">,
  ];
}

def KilnFormDispatches : Pass<"kiln-form-dispatches", "mlir::func::FuncOp"> {
  let summary = "group kiln ops into kiln.dispatch regions (one kernel each)";
  let description = [{
    Every root op (matmul, conv, pooling, reductions, softmax, normalizations)
    starts a dispatch. Elementwise ops whose operand comes from a dispatch and
    that are its only user join it as consumers (conv + bias + relu + residual
    add is one dispatch). Then elementwise ops of the group's shape that read
    only the group's values, constants and values defined before the root
    join too, even when they read a member twice (HardSwish x *
    hard_sigmoid(x), SiLU x * sigmoid(x) after a conv), as long as exactly
    one value of the group is still read outside it. Elementwise producers
    used only by a root that is not a contraction join it as well, and a
    `kiln.rotary_embedding` used only by an elementwise op joins that op's
    dispatch when it holds elementwise ops alone (a decode step's key cache
    write selects the rotated row into the cache in the kernel that rotates
    it; an epilogue of a contraction takes no rotation). Small
    constants are cloned into the region; weights stay operands.
    The remaining ops other than constants and reshapes become dispatches of
    their own. Reshapes stay outside: they are views of a buffer. With
    `slice-views` (the default), so do slices that take one contiguous,
    64-byte aligned range of a value and are not returned
    (`kiln::sliceViewOffset`: the heads of kiln-merge-head-projections, a
    recurrent layer's steps and directions).

    A contraction takes in the cast of a constant weight only it reads, and
    the transpose of one (kiln-transpose-matmul-weights' k-fastest weights).
    With `transposed-operands`, a `kiln.matmul` or `kiln.matmul_integer`
    also takes in the transpose of any value it alone reads (attention's
    heads: Q, K and V transposed from `[B, S, H, D]`), which the gfx GEMM
    kernels read through; before that transpose (or without one), the
    `kiln.expand` of an operand, and the reshape after it, that it alone
    reads (grouped-query attention's K and V heads repeated to the query
    heads: `[B, G, 1, S, D]` to `[B, G, R, S, D]`, reshaped to `[B, G R, S,
    D]`), which they read at head `h / R` instead of a kernel copying
    them; and (a `kiln.matmul_panels` too) the transpose
    that alone reads its result
    (the context back to `[B, S, H, D]`) or a reshape of it (a projection
    split into heads and transposed to them), which they store through
    (kiln-compile sets it with gfx targets alone). Without
    `transposed-f32`, a `kiln.matmul` of f32 operands takes in none of
    these: kiln-compile clears it at f32 precision when a gfx target has no
    f32 matrix instruction (RDNA3/4, gfx1250), whose generic kernels do not
    read or store through them.

    With `inline-scalars` (the default), a dispatch of elementwise ops whose
    results are one element each (a dynamic quantization's zero point and
    its casts), read only by dispatches of elementwise ops, is computed
    again at the start of each of them instead of launched.

    With `epilogue-operands` (kiln-compile sets it with gfx targets alone),
    a dispatch of elementwise ops whose results have at most 4096 elements
    each, read only by one dispatch whose root is a `kiln.matmul_integer`
    or `kiln.conv_integer`, and there only by its epilogue's elementwise
    ops, is computed in that dispatch instead (a dynamic quantization's
    per-channel products: the activation's zero point times the weight's
    column sums, its scale times the weight's scales): the gfx GEMM kernels
    evaluate them per output element as they store it.
  }];
  let options = [
    Option<"epilogueOperands", "epilogue-operands", "bool", "false",
           "an integer matmul's or convolution's dispatch takes in the "
           "elementwise dispatches of small results that only its epilogue "
           "reads">,
    Option<"transposedOperands", "transposed-operands", "bool", "false",
           "matmuls take in the transposes of values they alone read">,
    Option<"transposedF32", "transposed-f32", "bool", "true",
           "with transposed-operands, matmuls of f32 operands too">,
    Option<"inlineScalars", "inline-scalars", "bool", "true",
           "an elementwise dispatch of one-element results read only by "
           "elementwise dispatches is computed again in each of them">,
    Option<"sliceViews", "slice-views", "bool", "true",
           "contiguous, 64-byte aligned slices of computed values stay outside "
           "as views (kiln::sliceViewOffset)">
  ];
  let dependentDialects = ["kiln::KilnDialect"];
}

def KilnMaterializeExecutables : Pass<"kiln-materialize-executables", "mlir::ModuleOp"> {
  let summary = "wrap each dispatch function in a kiln.executable with one variant per target";
  let description = [{
    Each dispatch function becomes a `kiln.executable` of the same name (so
    the program's launches now name executables) holding one `kiln.variant`
    per target of `targets`, each with its own copy of the function in a
    `builtin.module` and a `kiln.export` naming it. The export starts with
    the bytes the dispatch reads and writes (from its signature: every
    argument read whole, every result written, except that an argument only
    gathered from, an embedding table, counts as the gathers' results), one
    workgroup of one thread, no LDS and no FLOPs; each target's pipeline
    fills in what it decides. gfx variants carry `precision` in their
    `#kiln.target` options unless it is f32.
  }];
  let options = [
    ListOption<"targets", "targets", "std::string", "targets to compile for: cpu, gfx942, ...">,
    Option<"precision", "precision", "std::string", "\"f32\"",
           "matrix-core precision of the gfx targets: f32, f16 or bf16">
  ];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def KilnOutlineDispatches : Pass<"kiln-outline-dispatches", "mlir::ModuleOp"> {
  let summary = "turn each kiln.dispatch into a function and @main into a kiln.program";
  let description = [{
    Each `kiln.dispatch` region becomes a `func.func` named after it (marked
    `kiln.dispatch`), and the region is replaced by a `kiln.launch` of it.
    The model entry then becomes a `kiln.program` of launches, constants and
    reshapes, without a memory plan yet.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def KilnPlanMemory : Pass<"kiln-plan-memory", "mlir::ModuleOp"> {
  let summary = "place every tensor of each kiln.program in one arena";
  let description = [{
    Assigns each tensor that a `kiln.program` computes (and each model
    input) a 64-byte aligned offset in one arena, reusing bytes whose tensor
    is no longer live (best fit by liveness over the launch order), and each
    constant a place in the program's constant pool (in first-use order).
    Reshapes alias their operand. Writes the plan as `#kiln.binding`s: the
    program's `arena_size`, `input_bindings` and `output_bindings`, and every
    launch's `operand_bindings` and `result_bindings` (`input`, `constant`,
    `arena`, or `output` for a tensor the program returns), which the
    dialect verifies against the tensor types.
  }];
}

#endif // KILN_PASSES_PASSES_TD
