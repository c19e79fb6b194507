// The registered cpu pipelines run any stage from a .mlir file. A fixed CPU
// (AVX2: a 4 x 16 register tile) keeps the output the same on every host.
// RUN: kiln-opt %s --kiln-cpu-linalg-pipeline='cpu=znver3 features=+avx2,+fma' | FileCheck %s --check-prefix=LINALG
// RUN: kiln-opt %s --kiln-cpu-pipeline='cpu=znver3 features=+avx2,+fma' | FileCheck %s --check-prefix=LLVM
// RUN: kiln-opt %s --kiln-cpu-linalg-pipeline='cpu=znver3 features=+avx2,+fma' | kiln-opt --kiln-cpu-llvm-pipeline='cpu=znver3 features=+avx2,+fma' | FileCheck %s --check-prefix=LLVM
// RUN: not kiln-opt %s --kiln-cpu-pipeline='chip=gfx942' 2>&1 | FileCheck %s --check-prefix=BADOPT

// The linalg stage: lowered, FLOPs counted on the untiled form (64x32x16
// matmul: 2 * 64 * 32 * 16 = 65536, plus 2048 each for the zero fill of the
// accumulator and the relu), tiled into
// workgroups and vectorized into FMAs on 16-lane vectors.
// LINALG-LABEL: func.func @dispatch_0
// LINALG-SAME: kiln.flops = 69632 : i64
// LINALG-SAME: kiln.workgroup_count = {{[1-9][0-9]*}} : i64
// LINALG: vector.fma {{.*}} : vector<16xf32>
// LINALG-NOT: kiln.matmul

// The LLVM stage: one llvm.func with memref arguments as bare pointers and
// the workgroup id last.
// LLVM-LABEL: llvm.func @dispatch_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64)
// LLVM: llvm.intr.fmuladd({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// LLVM-NOT: linalg.

// BADOPT: no such option chip
func.func @dispatch_0(%a: tensor<64x16xf32>, %b: tensor<16x32xf32>) -> tensor<64x32xf32> attributes {kiln.dispatch} {
  %0 = kiln.matmul %a, %b : (tensor<64x16xf32>, tensor<16x32xf32>) -> tensor<64x32xf32>
  %1 = kiln.relu %0 : tensor<64x32xf32>
  return %1 : tensor<64x32xf32>
}
