//===- Passes.td -------------------------------------------*- tablegen -*-===//
//
// AMD gfx code generation (compiler/codegen/amdgpu/).
// Each pass is a kiln-opt flag with a lit test named after that flag.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_AMDGPU_PASSES_TD
#define KILN_CODEGEN_AMDGPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnGPUBuildGemms : Pass<"kiln-gpu-build-gemms", "mlir::func::FuncOp"> {
  let summary = "rebuild contraction dispatches as matrix-core GEMM kernels";
  let description = [{
    A dispatch function (linalg on tensors) whose work is one contraction
    with one m, one n and one k loop (matmul, batched matmul, 1x1
    convolution) or one `linalg.conv_2d_nchw_fchw` (an implicit GEMM: m =
    output channel, n = output pixel, k = input channel and window; a zero
    `tensor.pad` of the image becomes bounds checks), starting from zero or
    from an elementwise function of the arguments (a bias, added after the
    K loop), followed by elementwise ops, is replaced by a matrix-core
    kernel on memrefs: 4 waves per workgroup, a 64 x 64 output tile (on
    targets with a large tiling, 128 x 128 when that grid still gives every
    CU of the largest product two workgroups: 2 x 2 waves of 4 x 4
    instruction tiles on gfx942, gfx950 and gfx1100, 2 x 4 waves of 4 x 2 on
    gfx1201; not for 4-bit operands, nor W4A16 on gfx1100), A and
    B panels staged in double-buffered LDS (one barrier per K step), operand
    fragments read in the lane layout of the target's MFMA or WMMA
    instruction, and the elementwise epilogue applied in registers (the
    tiling, the instruction and its layout come from the gfx target table).
    Global loads take no branches (clamped indices, zeros selected where a
    chunk is out of bounds; checks only where the tile does not divide M or
    N), and a scheduling barrier keeps the next step's loads ahead of the
    step's matrix instructions. A 16-bit B read along n is stored
    transposed two k at a time; the panels (of the large tiling: 16-bit
    operands only) are XOR-swizzled in 16-byte granules against LDS bank
    conflicts.
    The epilogue may be a graph, not only a chain: an elementwise op can read
    the product and earlier epilogue values (SiLU's x * sigmoid(x)). Its last
    value may be returned through reshapes, then one `linalg.transpose`
    (attention's context back to `[B, S, H, D]`; a projection split into
    heads and transposed to them), which the stores follow (indices carried
    through the reshapes); either operand may be read through a
    `linalg.transpose` of an argument (a weight stored k-fastest,
    attention's heads).
    A kernel whose panels need more LDS than a workgroup may allocate on the
    chip is an error.

    `kiln.matmul_panels` of at most 8 rows (a weight in column panels
    `[N / P, K, P]`, as kiln-pack-matmul-panels stores few-row products'
    constant weights for gfx targets) becomes a GEMV kernel instead, bound
    by streaming the weight, with no matrix instructions: a workgroup of 256
    threads per panel; each lane reads 16 bytes of a panel row, so that one
    load instruction of a wave covers consecutive rows (one contiguous
    run); the row groups split K, each lane with up to 8 loads in flight
    before it multiplies them by its rows' activations (f32 vector
    multiply-adds, i32 for 8-bit operands); their sums meet in LDS, and one
    thread per output element adds them and applies the epilogue. Float
    (f32, f16, bf16) and 8-bit operands. A contraction of at most 8 rows
    whose B is an argument contiguous along n (an attention's scores x V at
    a decode step, heads as the batch) takes the same GEMV kernel on B as it
    is, in column blocks of 8 lanes x 16 bytes; where there are fewer than
    256 workgroups they take up to 1024 threads, so that more loads are in
    flight.

    `kiln.matmul_int4` with `int8_activations` (W4A8, codes in the W4A8
    panels `[N / P, K / G, G / 8, P, 4]`) runs on the int8 instruction:
    each workgroup first computes its rows' largest magnitude per group
    into LDS (127 / amax, amax / 127), quantizes A while staging it, stages
    B's codes minus zero points as int8 (four rows of a column per 32-bit
    LDS word), and as each group ends adds its i32 sums, scaled, to f32 sums
    in the group's order: the value the op defines to the bit. Groups
    shorter than the instruction's k take one instruction each (the other
    groups' activations zeroed); a decode step (up to 16 rows) a 16 x 32
    tile; where the groups' scales do not fit in LDS, or a group is neither
    a divisor nor a multiple of the instruction's k, the generic path.

    The
    operands must be f16, bf16, i8 (signed on MFMA) or i4 (WMMA), or f32 with
    `precision` f16/bf16 (converted while staging; accumulation in f32).
    Anything else is left to the generic path. Sets `kiln.workgroup_count`,
    `kiln.workgroup_size`, `kiln.lds_bytes` and `kiln.matrix_instruction`.
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"gfx942\"", "gfx target or chip name">,
    Option<"precision", "precision", "std::string", "\"f32\"",
           "f32 (no matrix cores for f32 operands), f16 or bf16">,
    Option<"testFault", "test-fault", "std::string", "\"\"",
           "testing only: build a wrong kernel on purpose (swap-operands: A and "
           "B exchanged; shift-lanes: each lane reads the A row of the next lane, "
           "in a GEMV the activation of the next row; window-taps: an implicit "
           "GEMM's window table read transposed), "
           "to prove the emulation catches such wiring bugs">,
    Option<"testWaveTiles", "test-wave-tiles", "int64_t", "0",
           "testing only: N x N instruction tiles per wave instead of the target "
           "table's (0), to exercise the LDS limit">,
    Option<"testLargeTiling", "test-large-tiling", "bool", "false",
           "testing only: the target table's large-GEMM tiling whatever the GEMM's "
           "size, to run it on small GEMMs">,
    Option<"testStepSchedule", "test-step-schedule", "std::string", "\"\"",
           "testing only: how a K step's instructions are scheduled (llvm, "
           "matrix or interleaved) instead of the target table's choice, to "
           "compare them">,
    Option<"testLoadAhead", "test-load-ahead", "std::string", "\"\"",
           "testing only: on or off, a K step's global loads issued two steps "
           "ahead (on) or one (off) instead of the target table's choice">
  ];
  let dependentDialects = ["mlir::amdgpu::AMDGPUDialect", "mlir::gpu::GPUDialect",
                           "mlir::vector::VectorDialect", "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect", "mlir::scf::SCFDialect",
                           "mlir::bufferization::BufferizationDialect",
                           "mlir::ROCDL::ROCDLDialect"];
}

def KilnGPUBuildRowReductions : Pass<"kiln-gpu-build-row-reductions", "mlir::func::FuncOp"> {
  let summary = "rebuild dispatches that reduce rows and scale them as kernels with lanes per row";
  let description = [{
    A dispatch function (linalg on tensors) whose result is elementwise over
    a shape S (rows, then a row of at least 16 elements) and which reduces
    rows along the last dimension on the way (softmax's max and sum,
    LayerNorm's mean and variance, RMSNorm's mean of squares, ...) is
    replaced by a kernel on memrefs that gives each row L lanes instead of
    one thread. Its ops may be: elementwise over S, reductions of S's last
    dimension into the rows (the payload yields `combine(out, g)`, `combine`
    one of addf, mulf, maximumf, minimumf, maxnumf, minnumf or an integer
    add, mul, and, or, xor, max or min; the init a row value or an
    argument), elementwise ops over the rows (shaped `[R...]` or
    `[R..., 1]`), fills of the rows, and reshapes between the two row
    shapes; arguments and constants are read through any indexing map.
    The result may also be one value per row: the dispatch's first
    reduction (reading one value over S as it is), or elementwise over the
    rows after it (a range's minimum, a mean); the row's first lane stores
    it. (A contraction, which reads two values through other maps, is not
    taken.)

    Each lane holds up to 4 chunks of its row (16 bytes each where the row
    allows: 4 f32 or 8 f16 elements; adjacent lanes read adjacent chunks)
    and keeps every value shaped like the row in registers between the
    phases, so the row is read once. L is the power of two that covers the
    row in single chunks, at most 64, doubled up to 256 while a lane would
    have more than 4 chunks; rows longer than 8 chunks of 256 lanes stay on
    the generic path. Per reduction, in program order: each lane combines
    its chunks (from the combining op's neutral element; chunks past the
    row's end add it), the partials go to LDS, one barrier, and every lane
    of the row combines the row's L partials pairwise in the same order (so
    all lanes hold the same value) and then the init. Workgroups of 256 threads hold
    256 / L rows (fewer when there are fewer rows); rows past the last
    compute on the last row and store nothing. Sets
    `kiln.workgroup_count`, `kiln.workgroup_size` and `kiln.lds_bytes`.
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"gfx942\"", "gfx target or chip name">,
    Option<"testFault", "test-fault", "std::string", "\"\"",
           "testing only: build a wrong kernel on purpose (skip-lane: the row's "
           "first lane's partials are left out), to prove the emulation catches it">
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::vector::VectorDialect",
                           "mlir::memref::MemRefDialect", "mlir::affine::AffineDialect",
                           "mlir::scf::SCFDialect", "mlir::bufferization::BufferizationDialect"];
}

def KilnGPUDistribute : Pass<"kiln-gpu-distribute", "mlir::func::FuncOp"> {
  let summary = "tile a dispatch function into one fused tile per gfx thread";
  let description = [{
    The generic gfx path. On a dispatch function in linalg-on-tensors form,
    tiles the last op into per-thread tiles (an `scf.forall` with one
    iteration per thread) and fuses every producer into the tile, so each
    thread computes its slice of the whole fused chain with no
    synchronization. Tiles: 4 output channels of one pixel behind a
    convolution, 4 x 4 outputs behind a contraction, one row where a fused
    producer reduces the last dimension, one point per reduced row when the
    last op reduces, 4 elements of the last dimension otherwise. The threads are grouped into workgroups of
    `workgroup-size`; the pass records `kiln.workgroup_count` and
    `kiln.workgroup_size`.
  }];
  let options = [
    Option<"workgroupSize", "workgroup-size", "int64_t", "256",
           "threads per workgroup">
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::tensor::TensorDialect"];
}

def KilnGPULowerMath : Pass<"kiln-gpu-lower-math"> {
  let summary = "rewrite math ops with no LLVM intrinsic for gfx kernels";
  let description = [{
    `convert-gpu-to-rocdl` would turn math ops into calls to ROCm's device
    libraries (`__ocml_*`), which Debian does not ship for these chips. This
    pass rewrites the ops LLVM has no AMDGPU intrinsic for (tanh, erf, erfc,
    atan, ..., powf) into polynomials and `exp`/`log`, so that what remains
    (`exp`, `log`, `sqrt`, `fma`, ...) becomes LLVM intrinsics the AMDGPU
    backend expands itself, called as `llvm.call_intrinsic` (the matching
    `llvm.intr.*` ops are also turned into device-library calls). f32 erf
    becomes the rational function the cpu code generator uses too
    (codegen/common/Erf.cpp: x P(x^2) / Q(x^2) on [-3.925, 3.925], ten FMAs
    and a division), so that every target computes the same erf.
  }];
  let dependentDialects = ["mlir::math::MathDialect", "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect", "mlir::LLVM::LLVMDialect"];
}

def KilnGPUMapToThreads : Pass<"kiln-gpu-map-to-threads", "mlir::func::FuncOp"> {
  let summary = "map the per-thread scf.forall to gfx thread ids";
  let description = [{
    After bufferization: the `scf.forall` of `kiln-gpu-distribute` becomes
    its body, guarded by `id < tiles` and indexed by the global thread id
    `gpu.block_id x * workgroup_size + gpu.thread_id x` (grid and block
    sizes are compile-time constants: no `gpu.block_dim` / `gpu.grid_dim`,
    which would call into ROCm's device libraries). Temporary buffers
    (`memref.alloc`) become private-memory `memref.alloca`s at the function
    entry; their deallocations are dropped.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect",
                           "mlir::affine::AffineDialect", "mlir::scf::SCFDialect"];
}

def KilnGPUOutlineKernels : Pass<"kiln-gpu-outline-kernels", "mlir::ModuleOp"> {
  let summary = "move dispatch functions into a gpu.module of gfx kernels";
  let description = [{
    Each bufferized dispatch function becomes a `gpu.func` kernel (with its
    known block and grid sizes) in one `gpu.module @kernels` targeting
    `#rocdl.target<chip = ..., abi = "500">` (code object v5, which loads on
    ROCm 5 and 6). Kernel arguments are placed in the global address space,
    `memref.alloca`s in the private one, workgroup buffers
    (`kiln.workgroup_memory`) in LDS.
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"gfx942\"", "gfx target">
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::ROCDL::ROCDLDialect"];
}

#endif // KILN_CODEGEN_AMDGPU_PASSES_TD
