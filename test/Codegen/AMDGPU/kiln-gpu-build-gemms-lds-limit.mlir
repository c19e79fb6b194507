// RUN: kiln-opt %s -verify-diagnostics --kiln-gpu-build-gemms=test-wave-tiles=16
// RUN: kiln-opt %s --kiln-gpu-build-gemms='chip=gfx1250 test-wave-tiles=16' | FileCheck %s --check-prefix=GFX1250
//
// The GEMM builder checks its LDS panels against what a workgroup may
// allocate on the chip (the gfx target table: 65,536 bytes on gfx942,
// 327,680 on gfx1250). With 16 x 16 instruction tiles per wave (a test
// option) an f16 tile is 512 x 512: on gfx942 (K step 32) its four panels
// take 2 * (512 + 512) * 32 * 2 = 131,072 bytes, too many; on gfx1250 (K step
// 64) 262,144, which fits.

// GFX1250-LABEL: func @matmul_f16
// GFX1250-SAME: kiln.lds_bytes = 262144 : i64, kiln.matrix_instruction = "v_wmma_f32_16x16x32_f16"
// GFX1250-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<512x64xf16>
// expected-error @+1 {{the 512 x 512 GEMM tile needs 131072 bytes of LDS, more than the 65536 a workgroup can allocate on gfx942}}
func.func @matmul_f16(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf16> attributes {kiln.dispatch} {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<512x512xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<512x512xf16>) -> tensor<512x512xf16>
  %0 = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%f : tensor<512x512xf16>) -> tensor<512x512xf16>
  return %0 : tensor<512x512xf16>
}
