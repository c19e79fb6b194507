//===- Passes.td - Kiln passes ------------------------------*- tablegen -*-===//
//
// Every pass of the Kiln pipeline, from graph-level transforms on kiln IR to
// the per-target code generation steps. Each is a kiln-opt flag and has a lit
// test named after that flag.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Graph level (passes/)
//===----------------------------------------------------------------------===//

def KilnFormDispatches : Pass<"kiln-form-dispatches", "mlir::func::FuncOp"> {
  let summary = "group kiln ops into kiln.dispatch regions (one kernel each)";
  let description = [{
    Every root op (matmul, conv, pooling, reductions, softmax, normalizations)
    starts a dispatch. Elementwise ops whose operand comes from a dispatch and
    that are its only user join it as consumers (conv + bias + relu + residual
    add is one dispatch); elementwise producers used only by a root join it
    too. Small constants are cloned into the region; weights stay operands.
    The remaining ops other than constants and reshapes become dispatches of
    their own. Reshapes stay outside: they are views of a buffer.
  }];
  let dependentDialects = ["kiln::KilnDialect"];
}

def KilnFoldWeightLayouts : Pass<"kiln-fold-weight-layouts", "mlir::func::FuncOp"> {
  let summary = "apply data movement on weights at compile time";
  let description = [{
    A `kiln.transpose` of a constant (as `Gemm` with `transB = 1` imports:
    the fully connected layer's weight) is computed once here, whatever its
    size, into a new `dense_resource` blob, instead of every run moving the
    bytes. (The folders stop at a size limit because they work on `dense`
    attributes; this pass works on blobs.)
  }];
}

def KilnOutlineDispatches : Pass<"kiln-outline-dispatches", "mlir::ModuleOp"> {
  let summary = "turn each kiln.dispatch into a function called from @main";
  let description = [{
    Each `kiln.dispatch` region becomes a `func.func` named after it (marked
    `kiln.dispatch`), and the region is replaced by a `func.call`.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def KilnPlanMemory : Pass<"kiln-plan-memory", "mlir::ModuleOp"> {
  let summary = "place every intermediate tensor of @main in one arena";
  let description = [{
    Assigns each tensor that `@main` computes (and each model input) a
    64-byte aligned offset in one arena, reusing bytes whose tensor is no
    longer live (best fit by liveness over the call order). Reshapes alias
    their operand. Records `kiln.arena_offset` on every value-producing op,
    `kiln.input_offsets` and `kiln.arena_size` on `@main`.
  }];
}

//===----------------------------------------------------------------------===//
// Lowering (compiler/lowering/)
//===----------------------------------------------------------------------===//

def KilnLowerToLinalg : Pass<"kiln-lower-to-linalg"> {
  let summary = "lower kiln ops to linalg, tensor, arith and math";
  let description = [{
    Lowers every kiln op except `kiln.dispatch`, `kiln.yield` and (outside
    dispatch regions) `kiln.reshape` to upstream dialects on tensors: linalg
    named ops for contractions, convolutions and pooling, `linalg.generic`
    for elementwise ops (with numpy broadcasting as indexing maps) and
    reductions, `tensor` ops for data movement.
  }];
  let dependentDialects = [
    "mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
    "mlir::arith::ArithDialect", "mlir::math::MathDialect",
    "mlir::scf::SCFDialect"
  ];
}

//===----------------------------------------------------------------------===//
// CPU code generation (compiler/codegen/cpu/)
//===----------------------------------------------------------------------===//

def KilnCPUDistribute : Pass<"kiln-cpu-distribute", "mlir::func::FuncOp"> {
  let summary = "tile a dispatch function into workgroups and fuse its ops";
  let description = [{
    On a dispatch function in linalg-on-tensors form, tiles the last op along
    its outer parallel dimensions into an `scf.forall` (one iteration per
    workgroup) and fuses every producer into the tile, so each workgroup
    computes its part of the whole fused chain. Records the workgroup count
    as `kiln.workgroup_count`.
  }];
  let options = [
    Option<"targetWorkgroups", "target-workgroups", "int64_t", "64",
           "workgroups to aim for (more than threads, for load balance)">
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::tensor::TensorDialect"];
}

def KilnCPUDestinationArgs : Pass<"kiln-cpu-destination-args", "mlir::func::FuncOp"> {
  let summary = "make a dispatch function take its inputs and outputs as memrefs";
  let description = [{
    Before bufferization: each tensor argument becomes a memref read through
    `bufferization.to_tensor restrict`, and each result is written into a
    new trailing memref argument with `bufferization.materialize_in_destination`
    (trailing reshapes of the result become reshapes of that memref, so the
    computation writes the caller's buffer directly). The function then
    returns nothing: the kernel ABI is "pointers in, pointers out".
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect",
                           "mlir::memref::MemRefDialect"];
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

def KilnCPUCopiesToLinalg : Pass<"kiln-cpu-copies-to-linalg", "mlir::func::FuncOp"> {
  let summary = "turn memref.copy into linalg.copy";
  let description = [{
    Kernels are self-contained: a strided `memref.copy` would otherwise lower
    to a call into MLIR's runner library. As `linalg.copy` it becomes loops
    (and vector code) like any other linalg op.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def KilnCPUConvToGemm : Pass<"kiln-cpu-conv-to-gemm", "mlir::func::FuncOp"> {
  let summary = "rewrite 2-d convolutions as GEMMs";
  let description = [{
    A 1x1 stride-1 `linalg.conv_2d_nchw_fchw` is already a GEMM over the
    flattened image (`out[n, f, hw] = w[f, c] * in[n, c, hw]`); any other
    becomes an im2col gather (tagged `kiln.im2col`) feeding a GEMM. The
    elementwise epilogue is then collapsed to the GEMM's 3-d iteration space
    so that the dispatch stays one fusable loop nest (the same collapsing
    moves the reshapes of a matmul's leading dimensions past its epilogue).
    With `im2col=false` only the 1x1 convolutions are rewritten (the gfx
    targets, whose per-thread tiles would cut the gather's output rows).
  }];
  let options = [
    Option<"im2col", "im2col", "bool", "true",
           "rewrite convolutions other than 1x1 through an im2col gather">
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

def KilnCPUVectorizeGemm : Pass<"kiln-cpu-vectorize-gemm", "mlir::func::FuncOp"> {
  let summary = "register-tile and vectorize the contractions of a dispatch";
  let description = [{
    Inside each workgroup, im2col gathers (tagged `kiln.im2col` with their
    window by kiln-cpu-conv-to-gemm) become loops that copy one output row
    at a time, and depthwise convolutions are tiled to one window tap
    over `nr` output pixels (unit stride) or `nr` channels (strided windows),
    each tap vectorized as a multiply-add of a row segment and a weight.
    Every contraction (matmul, batch_matmul, GEMM
    generic) with a reduction longer than `kc-cache` is first split into
    reduction blocks of at most that length (the outermost loop, so that a
    block of each operand stays in cache); when several row tiles read the
    same `nr`-column block of the right-hand side, the block is copied into
    a contiguous panel first (`pack-panels`); then each contraction is tiled
    to a register tile (`mr` x `nr` x `kc`), full tiles are
    peeled from partial ones and vectorized, the accumulator is hoisted out of
    the k loop, and `vector.contract` is lowered to outer products (FMAs).
    Elementwise ops are tiled to rows of `nr` along their innermost output
    dimension and vectorized (not those with i1 operands, stored a byte per
    element). f32 `math.exp`, `math.erf` and `math.tanh` become MLIR's
    polynomial approximations (vectorized or inline instead of libm calls).
  }];
  let options = [
    Option<"mr", "mr", "int64_t", "16", "rows of the register tile">,
    Option<"nr", "nr", "int64_t", "16", "columns of the register tile (vector width)">,
    Option<"kc", "kc", "int64_t", "4", "k step of the register tile">,
    Option<"kcCache", "kc-cache", "int64_t", "256",
           "reduction block kept in cache (0: no cache blocking)">,
    Option<"packPanels", "pack-panels", "bool", "true",
           "copy a right-hand column block reused by several row tiles into a contiguous panel">
  ];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect"];
}

//===----------------------------------------------------------------------===//
// AMD gfx code generation (compiler/codegen/amdgpu/)
//===----------------------------------------------------------------------===//

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

def KilnGPULowerMath : Pass<"kiln-gpu-lower-math"> {
  let summary = "rewrite math ops with no LLVM intrinsic for gfx kernels";
  let description = [{
    `convert-gpu-to-rocdl` would turn math ops into calls to ROCm's device
    libraries (`__ocml_*`), which Debian does not ship for these chips. This
    pass rewrites the ops LLVM has no AMDGPU intrinsic for (tanh, erf, erfc,
    atan, ..., powf) into polynomials and `exp`/`log`, so that what remains
    (`exp`, `log`, `sqrt`, `fma`, ...) becomes LLVM intrinsics the AMDGPU
    backend expands itself, called as `llvm.call_intrinsic` (the matching
    `llvm.intr.*` ops are also turned into device-library calls).
  }];
  let dependentDialects = ["mlir::math::MathDialect", "mlir::arith::ArithDialect",
                           "mlir::vector::VectorDialect", "mlir::LLVM::LLVMDialect"];
}

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
    kernel on memrefs: 4 waves per workgroup, a 64 x 64 output tile, A and
    B panels staged in double-buffered LDS (one barrier per K step), operand
    fragments read in the lane layout of the target's MFMA or WMMA
    instruction, and the elementwise epilogue applied in registers. The
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
           "B exchanged; shift-lanes: each lane reads the A row of the next lane), "
           "to prove the emulation catches such wiring bugs">
  ];
  let dependentDialects = ["mlir::amdgpu::AMDGPUDialect", "mlir::gpu::GPUDialect",
                           "mlir::vector::VectorDialect", "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect", "mlir::scf::SCFDialect",
                           "mlir::bufferization::BufferizationDialect"];
}

#endif // KILN_PASSES_PASSES_TD

def KilnEmuLowerKernels : Pass<"kiln-emu-lower-kernels", "mlir::ModuleOp"> {
  let summary = "turn the gfx kernels of a gpu.module into host functions for emulation";
  let description = [{
    Takes the gfx kernels at the last point before the ROCDL conversion and
    rewrites each `gpu.func` into a `func.func` with the emulation ABI of
    `runtime/src/EmuAbi.h`, so that the very same kernel (tiling, LDS
    staging, matrix-core instructions) can run on the host, one fiber per
    lane:

    - the function takes the lane (`!llvm.ptr` to a `KilnEmuLane`) and the
      workgroup's LDS bytes (`memref<Nxi8>`) before the kernel's arguments;
      workgroup attributions become `memref.view`s of the LDS bytes, private
      attributions `memref.alloca`s;
    - `gpu.thread_id` and `gpu.block_id` load from the lane;
    - `gpu.barrier` calls the lane's barrier hook, and `amdgpu.mfma` /
      `amdgpu.wmma` its matrix hook with the ISA mnemonic (from the target's
      instruction table), this lane's A and B as packed 32-bit registers and
      C and D through memory; every call site gets its own id, so lanes that
      reach different wave-wide operations are caught;
    - gfx address spaces are dropped and the gpu.module's globals move to the
      module.

    Any other gpu, amdgpu or rocdl operation is an error: the emulation must
    not silently give it another meaning.
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"gfx942\"", "gfx target">
  ];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect", "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect"];
}
