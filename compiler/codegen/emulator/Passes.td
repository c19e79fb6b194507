//===- Passes.td -------------------------------------------*- tablegen -*-===//
//
// The gfx kernels compiled for the host, for emulation
// (compiler/codegen/emulator/).
// Each pass is a kiln-opt flag with a lit test named after that flag.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_EMULATOR_PASSES_TD
#define KILN_CODEGEN_EMULATOR_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnEmuLowerKernels : Pass<"kiln-emu-lower-kernels", "mlir::ModuleOp"> {
  let summary = "turn the gfx kernels of a gpu.module into host functions for emulation";
  let description = [{
    Takes the gfx kernels at the last point before the ROCDL conversion and
    rewrites each `gpu.func` into a `func.func` with the emulation ABI of
    `runtime/include/kiln/emu_abi.h`, so that the very same kernel (tiling, LDS
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
                           "mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
}

#endif // KILN_CODEGEN_EMULATOR_PASSES_TD
