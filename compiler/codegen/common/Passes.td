//===- Passes.td -------------------------------------------*- tablegen -*-===//
//
// Code generation steps every target shares (compiler/codegen/common/).
// Each pass is a kiln-opt flag with a lit test named after that flag.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_COMMON_PASSES_TD
#define KILN_CODEGEN_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnConvToGemm : Pass<"kiln-conv-to-gemm", "mlir::func::FuncOp"> {
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
    Last, an elementwise epilogue that reads a grouped convolution
    (`conv_2d_ngchw_gfchw`, layout `[N, G, F/G, H, W]`) through the collapse
    to `[N, F, H, W]` is expanded to the grouped layout, the collapse moving
    after it, so that tiling the epilogue fuses the convolution (and its
    padded input, which the collapsing above leaves under it).
  }];
  let options = [
    Option<"im2col", "im2col", "bool", "true",
           "rewrite convolutions other than 1x1 through an im2col gather">
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

def KilnCountFlops : Pass<"kiln-count-flops", "mlir::func::FuncOp"> {
  let summary = "count the arithmetic of a dispatch function on its linalg form";
  let description = [{
    Run right after `kiln-lower-to-linalg`, before any tiling: sums, over the
    linalg ops of a dispatch function, the points of each op's iteration
    space (twice for ops with a reduction: a multiply and an add) into the
    function's `kiln.flops` (i64), which the driver copies into the
    variant's `kiln.export`. Functions not marked `kiln.dispatch` are left
    alone.
  }];
}

def KilnCopiesToLinalg : Pass<"kiln-copies-to-linalg", "mlir::func::FuncOp"> {
  let summary = "turn memref.copy into linalg.copy";
  let description = [{
    Kernels are self-contained: a strided `memref.copy` would otherwise lower
    to a call into MLIR's runner library. As `linalg.copy` it becomes loops
    (and vector code) like any other linalg op.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def KilnDestinationArgs : Pass<"kiln-destination-args", "mlir::func::FuncOp"> {
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

#endif // KILN_CODEGEN_COMMON_PASSES_TD
