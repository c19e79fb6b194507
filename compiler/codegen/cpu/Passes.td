//===- Passes.td -------------------------------------------*- tablegen -*-===//
//
// x86-64 code generation (compiler/codegen/cpu/).
// Each pass is a kiln-opt flag with a lit test named after that flag.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_PASSES_TD
#define KILN_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnCPUDistribute : Pass<"kiln-cpu-distribute", "mlir::func::FuncOp"> {
  let summary = "tile a dispatch function into workgroups and fuse its ops";
  let description = [{
    On a dispatch function in linalg-on-tensors form, first merges each
    elementwise generic (transposes generalized to such generics) that feeds
    only one other elementwise generic into it
    (linalg's elementwise fusion; the merged op reads a value it got twice
    through one operand: SiLU's `x * sigmoid(x)` reads `x` once, and so
    becomes a single-use epilogue of the product before it), then tiles the
    last op along its outer parallel dimensions into an `scf.forall` (one
    iteration per workgroup) and fuses every producer into the tile, so each
    workgroup computes its part of the whole fused chain. A GEMM whose last
    op is its matrix (the contraction or an elementwise epilogue, no im2col
    gather) gets the largest row and column tiles that still make
    min(8, target) workgroups: a workgroup of r rows and c columns reads
    r x K and K x c of the operands, so fewer, squarer workgroups read less
    (columns in multiples of `column-granule` when that divides them); a
    batched product's batch is split first (it adds no reads), into as
    many workgroups as target allows.
    Other dispatches split their outer loops first; the output rows of a
    window op (depthwise convolution, pool) in 4s at least, and the loop
    along which an input is read transposed in 16s. An im2col convolution
    splits its image only, in whole output rows: lcm(OW, 16) points (rows
    whose points fill 16-lane vectors) when at most 128 and its f32 gathered
    block of K x points stays within 768 KiB, else the fewest rows of 16
    points or more; a batch of images is split one image per workgroup
    first.
    Records the workgroup count as `kiln.workgroup_count`.
  }];
  let options = [
    Option<"targetWorkgroups", "target-workgroups", "int64_t", "64",
           "workgroups to aim for (more than threads, for load balance)">,
    Option<"columnGranule", "column-granule", "int64_t", "16",
           "columns of a GEMM workgroup are a multiple of this when it divides the matrix's "
           "(the widest register tile's columns)">,
    Option<"panelGemmRows", "panel-gemm-rows", "int64_t", "16",
           "rows from which a product by weights in panels is tiled like a GEMM "
           "(kiln-cpu-vectorize-gemm's option of that name)">
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::tensor::TensorDialect"];
}

def KilnCPUWidenFourBit : Pass<"kiln-cpu-widen-four-bit", "mlir::func::FuncOp"> {
  let summary = "4-bit integer contractions read their operands as 8-bit values";
  let description = [{
    A `kiln.matmul_integer` of 4-bit operands (`i4`, `ui4`: a QDQ model
    quantized to 4 bits on both sides) gets each 4-bit operand and zero
    point through a `kiln.cast` to 8 bits of the same signedness (a
    constant's folds at compile time), so that the cpu's 8-bit integer
    kernels take the product: x86 has no 4-bit dot product, and a
    contraction of `i4` values would be a scalar loop. Runs on the cpu's
    dispatch functions only; the gfx targets keep the 4-bit operands, which
    RDNA's iu4 WMMA multiplies as they are.
  }];
}

def KilnCPUWinogradKernels : Pass<"kiln-cpu-winograd-kernels", "mlir::func::FuncOp"> {
  let summary = "vector kernels for kiln.winograd_input and kiln.winograd_output dispatches";
  let description = [{
    A dispatch function whose computation is one Winograd transform (its
    own dispatch: kiln-form-dispatches) becomes its workgroup loop here,
    before the lowering to linalg: an `scf.forall` over blocks of channels
    (the most workgroups up to `workgroups` that divide the channels; for
    the input transform, half as many, times the two halves of the rows of
    alpha, the outer dimension: the batched GEMM next splits its points
    first, so with two threads each core writes the points it reads next),
    each a loop over its channels, images and tile rows, and per tile row
    blocks of `vector-lanes` tiles, one tile per lane (a row of fewer tiles
    than lanes: as many whole rows as fit; more than 4 blocks: the middle
    ones a loop, the first and the last unrolled), with F(m, 3)'s constant
    matrices unrolled into vector adds and FMAs (their zeros skipped).
    The function is marked with its workgroup count and FLOPs, so
    kiln-cpu-distribute leaves it alone.

    Input transform, per block: the a input rows the tile row reads (rows
    outside the image are zeros: tile rows at the border are peeled with
    their rows known) are read as vectors of columns from the block's first
    column minus one vector (lanes past the image's right edge masked off,
    vectors left of it zeros), transformed along the rows (`B^T d`), then
    deinterleaved by shuffles into one vector per tile column `j`
    (m shuffle trees give the m phases of a stride-m column, the others are
    a phase shifted by a tile), transformed along the columns (`. B`) and
    stored at `[alpha * a + beta, c, tile]` (the last block masked).

    Output transform, per block: the a * a products of the block's tiles
    are read, transformed along alpha then beta (`A^T M A`), the bias added,
    and each of the m output rows interleaved by shuffles into vectors of
    contiguous columns; the residual is added and ReLU applied to those,
    which are stored (columns past the image's edge masked off, rows past
    it not stored).
  }];
  let options = [
    Option<"workgroups", "workgroups", "int64_t", "16",
           "workgroups to aim for (the most that divide the channels, at most this many)">,
    Option<"vectorLanes", "vector-lanes", "int64_t", "16",
           "tiles per vector (16: AVX-512, 8: AVX2)">
  ];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect", "mlir::arith::ArithDialect"];
}

def KilnCPUVectorizeGemm : Pass<"kiln-cpu-vectorize-gemm", "mlir::func::FuncOp"> {
  let summary = "register-tile and vectorize the contractions of a dispatch";
  let description = [{
    Inside each workgroup, im2col gathers (tagged `kiln.im2col` with their
    window by kiln-conv-to-gemm) become loops that copy one output row
    at a time, and depthwise and grouped convolutions and pools are tiled to
    one window tap over 4 output rows of `nr` pixels (4 independent
    accumulators), each tap vectorized as a multiply-add of the rows and a
    weight (FMA-contractible; a max for a pool); a row strided by s is read
    as the contiguous span it covers (`nr * s` lanes, those past its end
    masked off) and deinterleaved by one shuffle. Such a window op whose
    result only an elementwise chain reads (bias, ReLU6, SiLU) is one
    register tile with that chain and its initial value (one store per
    tile). A window whose input is padded inside the workgroup (a constant
    `tensor.pad`) reads the pad's source directly: rows clamped into it,
    lanes outside it masked off (read as the padding value), so the padded
    copy is never made; pads read otherwise become a fill of their border
    and a vector copy per row.
    Every contraction (matmul, batch_matmul, GEMM
    generic) with a reduction longer than `kc-cache` is first split into
    reduction blocks of at most that length (the outermost loop, so that a
    block of each operand stays in cache); when several row tiles read the
    same `nr`-column block of the right-hand side, the block is copied into
    a contiguous panel first (`pack-panels`, a row of `nr` elements per
    vector read and write); a contraction whose reduction is not blocked and
    whose result only an elementwise op reads (bias, activation, zero-point
    correction, requantization; or a chain of such ops, each the only user
    of the one before: a residual add, then a ReLU) is tiled together with
    those ops and with the producer of its accumulator's initial value (a
    fill or a broadcast bias) to one register tile (`fuse-epilogues`;
    `mr` x `nr`, or the wide tile): the tile starts from the initial value
    in registers, accumulates over the whole reduction and applies the
    epilogue before its one store. Then each other contraction
    is tiled to a register tile (`mr` x `nr` x `kc`), full tiles are
    peeled from partial ones and vectorized, the accumulator is hoisted out of
    the k loop, and `vector.contract` is lowered to outer products (FMAs);
    a float tile one column wide (the 49th pixel of a 7x7 image) instead
    carries `mr` x `kc` partial sums through its k loop (one vector FMA per
    row and k step) and adds them into the column after the loop.
    A float row reduction along the inputs' contiguous innermost dimension
    (softmax's maximum and sum of exponentials, a layer norm's mean) is
    reduced a row at a time into `nr` partial values (one vector op per
    `nr` elements) and those into the row's value after its loop; a
    reduction over trailing dimensions (a global pool) is collapsed to one
    such row per output first, and one over every dimension in a dispatch
    of one workgroup (a tensor's run-time range) to a single row.
    Elementwise ops are tiled to rows of `nr` along their innermost output
    dimension and vectorized (not those with i1 operands, stored a byte per
    element); one that reads an input transposed (contiguous along another
    loop) is tiled `nr` x `nr` over both loops, the input read as `nr`
    contiguous rows and transposed in registers (shuffles). f32 `math.tanh`
    becomes MLIR's polynomial approximation, f32 `math.erf` one rational
    function x P(x^2) / Q(x^2) on [-3.925, 3.925] (codegen/common/Erf.cpp:
    ten FMAs and a division, within 3.5e-7 of erf; GELU's epilogue), f32
    `math.exp` a degree-6 polynomial times 2^(n - 1) built from the rounded
    exponent's bits (codegen/common/Exp.cpp: 15 vector ops, within 8e-8 relative;
    softmax, sigmoid, SiLU), all vectorized or inline instead of libm calls.
    f32 `arith.maximumf` / `arith.minimumf` against a constant that is not
    NaN (ReLU, Clip, the hard activations) become an ordered compare and a
    select (codegen/common/Clamps.cpp), one vmaxps / vminps each.
    Integer contractions (i32 accumulators) are tiled the same way; with a
    `dot-isa`, a tile of 8-bit operands that the ISA's dot-product
    instruction takes (IntegerDot.h: `avx512vnni` vpdpbusd, `avx512bw` or
    `avx2` vpmaddwd; at most two instructions' columns, or 16 for a single
    row) is left as `vector.contract` for kiln-cpu-lower-dot-products
    instead of becoming widening i32 multiply-adds. With `avx512vnni`, such
    tiles read their columns from an interleaved copy of the block (each
    column's 4 k bytes side by side, the operand vpdpbusd takes) made once
    before the loops that do not move it, where 8 or more row tiles reread
    it; and they take the wide tile (8 x 32) in workgroups of 64 rows or
    more whose columns are mostly whole 32-column tiles. The 8-bit products
    by int8 weights in panels become one product per panel whatever their
    rows.
  }];
  let options = [
    Option<"mr", "mr", "int64_t", "16", "rows of the register tile">,
    Option<"nr", "nr", "int64_t", "16", "columns of the register tile (vector width)">,
    Option<"kc", "kc", "int64_t", "4", "k step of the register tile">,
    Option<"wideMr", "wide-mr", "int64_t", "0",
           "rows of the wide register tile (0: none), for contractions of 16-bit or wider "
           "operands with at least wide-nr columns and mr rows">,
    Option<"wideNr", "wide-nr", "int64_t", "0", "columns of the wide register tile">,
    Option<"panelGemmRows", "panel-gemm-rows", "int64_t", "16",
           "a product by weights in column panels (kiln.matmul_panels) with at least this many "
           "rows in a workgroup becomes one matmul per panel, register-tiled like any GEMM "
           "(0: never; fewer rows keep the panel kernel)">,
    Option<"kcCache", "kc-cache", "int64_t", "256",
           "reduction block kept in cache (0: no cache blocking)">,
    Option<"fuseEpilogueTiles", "fuse-epilogues", "bool", "true",
           "tile a contraction whose reduction is not cache-blocked together with the "
           "elementwise op that consumes it and its accumulator's initial value, so "
           "that the epilogue is applied in registers">,
    Option<"packPanels", "pack-panels", "bool", "true",
           "copy a right-hand column block reused by several row tiles into a contiguous panel">,
    Option<"vectorLanes", "vector-lanes", "int64_t", "16",
           "32-bit lanes of a vector register (16: AVX-512, 8: AVX2); register tiles of "
           "columns between one and two registers are split at a register">,
    Option<"dotISA", "dot-isa", "std::string", "\"none\"",
           "x86 dot-product instructions 8-bit tiles are left for: none, avx2, avx512bw, "
           "avx512vnni">
  ];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect"];
}

def KilnCPULowerDotProducts : Pass<"kiln-cpu-lower-dot-products", "mlir::func::FuncOp"> {
  let summary = "lower 8-bit vector.contract tiles to x86 dot-product instructions";
  let description = [{
    The integer register tiles kiln-cpu-vectorize-gemm leaves as
    `vector.contract` (with its `dot-isa`): an i32 accumulator of at most 16
    columns, 8-bit operands. With `isa=avx512vnni` and one operand
    zero-extended and the other sign-extended, each accumulator row gains,
    per 4 k steps, one `llvm.x86.avx512.vpdpbusd.512` of the row's four bytes
    broadcast and the 16 columns' four bytes side by side. Otherwise
    (`avx512bw`, `avx2`, or operands of one signedness) per 2 k steps one
    `vpmaddwd` (`llvm.x86.avx512.pmaddw.d.512`, or `llvm.x86.avx2.pmadd.wd`
    per 8 columns) of the row's two steps and the columns' two steps
    widened to 16 bits, then an add. All of these are exact (no 16-bit
    saturation). It runs after bufferization and deallocation, which do not
    know the memory effects of an intrinsic call.
  }];
  let options = [
    Option<"isaName", "isa", "std::string", "\"avx512vnni\"",
           "the dot-product instructions: avx2, avx512bw, avx512vnni (none: leave the tiles)">
  ];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::LLVM::LLVMDialect"];
}

def KilnCPULowerInt4Matmuls : Pass<"kiln-cpu-lower-int4-matmuls", "mlir::func::FuncOp"> {
  let summary = "vector kernels for the grouped 4-bit weight matmuls (kiln.matmul_int4)";
  let description = [{
    After bufferization: each `linalg.generic` marked `kiln.int4_matmul`
    (the lowering of `kiln.matmul_int4`: `out[m, n] += lhs[m, g, p, j] *
    (code - zero[g, n]) * scale[g, n]`, the code being the low or high four
    bits of `weights[g, j, n]`, or of `weights[n / P, g, j, n mod P]` in
    column panels) becomes loops over blocks of `vectors` x 16 columns. The
    codes are read as bytes and split into their two nibbles and converted
    to floats in registers, 16 per vector. Two kernels:

    - fewer than `buffer-rows` rows (decode): blocks of `rows` rows multiply
      the codes themselves, and apply each group's zero point and scale once
      to the group's sums, `s (sum x q - z sum x)`; a single row keeps its
      low and high nibbles' products in separate accumulators;
    - `buffer-rows` rows or more (prefill): each group's block of weights
      is dequantized once into a buffer on the stack, which register tiles
      of `tile-rows` rows then read like a float GEMM's panel.

    With row-major codes, blocks of 16 columns follow the blocks of
    `vectors` x 16, and the columns beyond the last 16 stay a (scalar)
    linalg.generic; with column panels the workgroup holds whole panels.

    W4A8 (`int8_activations`: the generic also reads each row's largest
    magnitude per group, `amax`), with the dot-product kernel's panels
    `[N / P, K / B, B / 8, P, 4]`: blocks of `rows` rows are first quantized
    to int8 into a buffer on the stack (`round_half_even(x * 127 / amax)`,
    and each group's sum of them), then every column block of the workgroup
    multiplies them with the codes: 64 code bytes are 16 columns' four rows
    twice (low and high nibbles, split by a mask and a shift), each one dot
    product of four bytes per i32 lane (`vpdpbusd` with `dot-isa` =
    avx512vnni; extended multiplies and a sum of 4 otherwise) with the row's
    four int8 activations broadcast. After each group, in f32:
    `acc += float(sum - zero * sum(x)) * ((amax / 127) * scale)`. Other
    W4A8 generics (row-major codes, groups of fewer than 32) stay the
    (scalar) generic.
  }];
  let options = [
    Option<"dotISA", "dot-isa", "std::string", "\"none\"",
           "the dot-product instructions W4A8 uses: avx512vnni (vpdpbusd), or none (plain integer vector ops)">,
    Option<"rows", "rows", "int64_t", "4", "rows of lhs per step of the few-rows kernel">,
    Option<"vectors", "vectors", "int64_t", "2", "16-column vectors per kernel step">,
    Option<"tileRows", "tile-rows", "int64_t", "8", "rows of the many-rows kernel's register tile">,
    Option<"bufferRows", "buffer-rows", "int64_t", "16",
           "rows from which the weights are dequantized once into a buffer">,
  ];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect", "mlir::LLVM::LLVMDialect"];
}

def KilnCPULowerPanelMatmuls : Pass<"kiln-cpu-lower-panel-matmuls", "mlir::func::FuncOp"> {
  let summary = "vector kernel for few-row float matmuls on weights in column panels (kiln.matmul_panels)";
  let description = [{
    After bufferization: each `linalg.generic` marked `kiln.panel_matmul`
    (the lowering of `kiln.matmul_panels`: `out[m, n] += lhs[m, k] *
    weights[n / P, k, n mod P]`) becomes loops over blocks of `vectors` x 16
    columns and `rows` rows, the accumulators in registers across K and each
    step's weights `vectors` loads of 16 from as many contiguous panels.
    Blocks of 16 columns follow, then one block whose loads and stores of
    the result are masked, for the last columns of an N that is not a
    multiple of 16 (the weights' padding columns are zero).
  }];
  let options = [
    Option<"rows", "rows", "int64_t", "4", "rows of lhs per kernel step">,
    Option<"vectors", "vectors", "int64_t", "4", "16-column vectors per kernel step">,
  ];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

def KilnCPUPrefetchTiles : Pass<"kiln-cpu-prefetch-tiles", "mlir::func::FuncOp"> {
  let summary = "prefetch the next register tile's operand block during the current tile's k loop";
  let description = [{
    After bufferization. A register tile's k loop (an `scf.for` that carries
    a vector accumulator) nested in a loop over tiles reads, for each operand
    whose address moves with that outer loop (the next rows of a weight
    matrix, the next Winograd point's filter), a block the tile before did
    not touch. At batch 1 such blocks come from memory, as 16 short streams
    the hardware prefetchers do not follow in time. For each such 2-D
    `vector.transfer_read`, the pass recomputes its address for the outer
    loop's next iteration (the last iteration: its own) and adds
    `memref.prefetch` ops to the k loop, spread over the k steps so that
    each cache line of the next tile's block is asked for once: every row's
    lines each step when a step reads a line or more of a row, else the
    rows whose turn it is (a step reading 16 bytes of each of 16 rows asks
    for 4 rows). A read whose address stays while that loop runs but moves
    with the loop around it (the right-hand panel of a column tile, read by
    every row tile under it) gets the next column tile's panel prefetched
    during the last row tiles, which run as a loop of their own after the
    row loop (a branch in every k loop slowed the other tiles): a float
    panel over the last 4 tiles, each asking for its share of the panel's
    rows (one tile asking for a whole 32 KB panel wanted more than a core's
    memory bandwidth: LLaMA prefill's vocabulary head 11% faster spread),
    an 8-bit one, a quarter of the bytes, during the last tile. Reads that move with
    neither get none, and so do reads of buffers
    smaller than `min-bytes`: those are mostly in cache already, and their
    prefetches only take issue slots from the FMAs.
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", "262144",
           "smallest buffer (a dispatch argument, an allocation) whose tiles are prefetched "
           "(256 KiB: below that they are mostly cached)">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

def KilnCPUWorkgroupToArgs : Pass<"kiln-cpu-workgroup-to-args", "mlir::func::FuncOp"> {
  let summary = "replace the workgroup scf.forall by the workgroup id argument";
  let description = [{
    After bufferization: the `scf.forall` that `kiln-cpu-distribute` created
    becomes straight-line code indexed by a new trailing `i64` argument, the
    workgroup id the runtime passes to each call.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::affine::AffineDialect"];
}

#endif // KILN_CODEGEN_CPU_PASSES_TD
