// RUN: kiln-opt %s -split-input-file --kiln-gpu-build-gemms --canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-gpu-build-gemms=chip=mi355x --canonicalize | FileCheck %s --check-prefix=GFX950
// RUN: kiln-opt %s -split-input-file --kiln-gpu-build-gemms=chip=gfx1100 --canonicalize | FileCheck %s --check-prefix=GFX1100
// RUN: kiln-opt %s -split-input-file --kiln-gpu-build-gemms=chip=gfx1201 --canonicalize | FileCheck %s --check-prefix=GFX1201
// RUN: kiln-opt %s -split-input-file --kiln-gpu-build-gemms=chip=gfx1250 --canonicalize | FileCheck %s --check-prefix=GFX1250
// RUN: kiln-opt %s -split-input-file --kiln-gpu-build-gemms=precision=f16 --canonicalize | FileCheck %s --check-prefix=F16
// RUN: kiln-opt %s -split-input-file --kiln-gpu-build-gemms=test-wave-tiles=4 --canonicalize | FileCheck %s --check-prefix=TILES4
// RUN: not kiln-opt %s -split-input-file --kiln-gpu-build-gemms=chip=gfx999 2>&1 | FileCheck %s --check-prefix=BADCHIP
// RUN: not kiln-opt %s -split-input-file --kiln-gpu-build-gemms=test-fault=nonsense 2>&1 | FileCheck %s --check-prefix=BADFAULT
// RUN: not kiln-opt %s -split-input-file --kiln-gpu-build-gemms=test-step-schedule=fast 2>&1 | FileCheck %s --check-prefix=BADSCHEDULE
// RUN: not kiln-opt %s -split-input-file --kiln-gpu-build-gemms=test-load-ahead=maybe 2>&1 | FileCheck %s --check-prefix=BADAHEAD
// RUN: kiln-opt %s -split-input-file --kiln-gpu-build-gemms=test-load-ahead=off --canonicalize | FileCheck %s --check-prefix=NOAHEAD
// RUN: kiln-opt %s -split-input-file --kiln-gpu-build-gemms=test-step-schedule=matrix --canonicalize | FileCheck %s --check-prefix=MATRIX
//
// A dispatch that is one contraction (plus elementwise ops) becomes a
// matrix-core kernel on memrefs whose shape comes from the gfx target
// table: the instruction for the operand type, its m/n/k, the tiling (2 x 2
// waves of 2 x 2 instruction tiles, K steps of two instructions, 64 deep
// for 16-bit operands of a K of 256 or more) and the LDS
// limit. The pipeline canonicalizes afterwards; so does this test.

// gfx942, f16: v_mfma_f32_16x16x16_f16, a 64 x 64 tile per workgroup of 4
// waves (256 threads), 2 x 2 = 4 workgroups for 128 x 128; KT = 64 (16-bit
// operands on 16-deep instructions step K by 64 in this tiling, four
// instructions), four panels of 64 x 64 f16 = 32 KiB of LDS. The main loop
// takes two K steps per iteration (step 128 over K = 256): it multiplies
// from panels 0 while the next step goes to panels 1, then the other way, a
// barrier after each. The global loads are buffer loads (past the end of
// an operand they read zeros: no clamped indices) and take no branches: M
// and N divide the tile, and the step past K that the last iteration
// prefetches is never multiplied (2 KT divides K), so no select zeroes it
// (@matmul_f16_odd_steps keeps one). A scheduling barrier keeps the loads
// ahead of the step's multiplies; gfx942's small tiling leaves the order of
// the rest to LLVM (no sched_group_barrier). A is 512 chunks of 16 bytes, two
// per thread; B is read along n, two k rows per chunk (256 chunks: one per
// thread, no guard), and stored transposed two k at a time (a
// vector<2xf16>, one 32-bit LDS store).
// CHECK-LABEL: func @matmul_f16
// CHECK-SAME: (%[[A:.*]]: memref<128x256xf16>, %[[B:.*]]: memref<256x128xf16>, %[[C:.*]]: memref<128x128xf16>)
// CHECK-SAME: kiln.lds_bytes = 32768 : i64, kiln.matrix_instruction = "v_mfma_f32_16x16x16_f16", kiln.workgroup_count = 4 : i64, kiln.workgroup_size = 256 : i64
// CHECK: %[[A0:.*]] = memref.alloca() {kiln.workgroup_memory} : memref<64x64xf16>
// CHECK: %[[A1:.*]] = memref.alloca() {kiln.workgroup_memory} : memref<64x64xf16>
// CHECK: %[[B0:.*]] = memref.alloca() {kiln.workgroup_memory} : memref<64x64xf16>
// CHECK: %[[B1:.*]] = memref.alloca() {kiln.workgroup_memory} : memref<64x64xf16>
// CHECK: gpu.block_id x
// CHECK: gpu.thread_id x
// CHECK: affine.delinearize_index %{{.*}} into (2, 2)
// The prologue stages step 0 into panels 0 and loads step 1 (the small
// tiling loads two steps ahead): its chunks are carried into the loop.
// CHECK: amdgpu.raw_buffer_load %[[A]]
// CHECK: amdgpu.raw_buffer_load %[[A]]
// CHECK: amdgpu.raw_buffer_load %[[B]]
// CHECK: amdgpu.raw_buffer_load %[[B]]
// CHECK: vector.store %{{.*}}, %[[A0]]
// CHECK: vector.store %{{.*}}, %[[A0]]
// CHECK: vector.store %{{.*}}, %[[B0]]{{.*}} vector<2xf16>
// CHECK: %[[SA0:.*]] = amdgpu.raw_buffer_load %[[A]]
// CHECK: %[[SA1:.*]] = amdgpu.raw_buffer_load %[[A]]
// CHECK: %[[SB0:.*]] = amdgpu.raw_buffer_load %[[B]]
// CHECK: %[[SB1:.*]] = amdgpu.raw_buffer_load %[[B]]
// The barriers wait for LDS only, not for the global loads in flight.
// CHECK-NEXT: amdgpu.lds_barrier
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128 iter_args(%{{.*}} = %[[Z:.*]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]], %[[CA0:.*]] = %[[SA0]], %[[CA1:.*]] = %[[SA1]], %[[CB0:.*]] = %[[SB0]], %[[CB1:.*]] = %[[SB1]]) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<8xf16>, vector<8xf16>, vector<8xf16>, vector<8xf16>)
// CHECK-NOT: scf.if
// CHECK-NOT: arith.minui
// Step s + 2's loads, step s's multiplies from panels 0, step s + 1 (loaded
// a step earlier) stored into panels 1.
// CHECK: %[[NA0:.*]] = amdgpu.raw_buffer_load %[[A]]
// CHECK: %[[NA1:.*]] = amdgpu.raw_buffer_load %[[A]]
// CHECK: %[[NB0:.*]] = amdgpu.raw_buffer_load %[[B]]
// CHECK: %[[NB1:.*]] = amdgpu.raw_buffer_load %[[B]]
// CHECK: amdgpu.sched_barrier allow = <none>
// CHECK: vector.load %[[A0]]
// CHECK: vector.load %[[B0]]
// CHECK-NOT: rocdl.sched.group.barrier
// CHECK-COUNT-16: amdgpu.mfma 16x16x16
// CHECK-NOT: arith.select
// CHECK: vector.store %[[CA0]], %[[A1]]
// CHECK: vector.store %[[CA1]], %[[A1]]
// CHECK: vector.extract %[[CB0]][0]
// CHECK: vector.store %{{.*}}, %[[B1]]{{.*}} vector<2xf16>
// CHECK: amdgpu.lds_barrier
// Step s + 3's loads (carried to the next iteration), step s + 1's
// multiplies from panels 1, step s + 2 stored into panels 0.
// CHECK: %[[MA0:.*]] = amdgpu.raw_buffer_load %[[A]]
// CHECK: %[[MA1:.*]] = amdgpu.raw_buffer_load %[[A]]
// CHECK: %[[MB0:.*]] = amdgpu.raw_buffer_load %[[B]]
// CHECK: %[[MB1:.*]] = amdgpu.raw_buffer_load %[[B]]
// CHECK: vector.load %[[A1]]
// CHECK: vector.load %[[B1]]
// CHECK-COUNT-16: amdgpu.mfma 16x16x16
// CHECK: vector.store %[[NA0]], %[[A0]]
// CHECK: vector.store %[[NA1]], %[[A0]]
// CHECK: vector.extract %[[NB0]][0]
// CHECK: vector.store %{{.*}}, %[[B0]]{{.*}} vector<2xf16>
// CHECK: amdgpu.lds_barrier
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MA0]], %[[MA1]], %[[MB0]], %[[MB1]] :
// CHECK-NEXT: } {llvm.loop_annotation = #{{.*}}}
// CHECK-NOT: amdgpu.mfma
// CHECK-NOT: scf.if
// The epilogue: each of the 4 x 4 accumulator elements of a lane, in f16,
// stored without bounds checks (M and N divide the tile).
// CHECK-COUNT-16: memref.store %{{.*}}, %[[C]]
// CHECK-NOT: memref.store
// CHECK: return
// gfx950: the double-K instruction, KT = 64, 32 KiB of LDS.
// GFX950-LABEL: func @matmul_f16
// GFX950-SAME: kiln.lds_bytes = 32768 : i64, kiln.matrix_instruction = "v_mfma_f32_16x16x32_f16", kiln.workgroup_count = 4 : i64, kiln.workgroup_size = 256 : i64
// GFX950-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<64x64xf16>
// GFX950: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128
// GFX950: amdgpu.mfma 16x16x32
// gfx1100: WMMA, wave32: 4 waves are 128 threads; 8 accumulators per lane.
// GFX1100-LABEL: func @matmul_f16
// GFX1100-SAME: kiln.lds_bytes = 32768 : i64, kiln.matrix_instruction = "v_wmma_f32_16x16x16_f16", kiln.workgroup_count = 4 : i64, kiln.workgroup_size = 128 : i64
// GFX1100: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>,
// GFX1100: amdgpu.wmma 16x16x16
// GFX1100-NOT: amdgpu.mfma
// 4 x 4 instruction tiles per wave (a test option): a 128 x 128 tile, one
// workgroup, panels of 128 x 32, 16 accumulators.
// TILES4-LABEL: func @matmul_f16
// TILES4-SAME: kiln.lds_bytes = 32768 : i64, kiln.matrix_instruction = "v_mfma_f32_16x16x16_f16", kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 256 : i64
// TILES4-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<128x32xf16>
// TILES4: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>,
// BADCHIP: error: unknown gfx target 'gfx999'
// BADFAULT: error: unknown test fault 'nonsense' (known: swap-operands, shift-lanes, window-taps, skip-lane)
// BADSCHEDULE: error: unknown test step schedule 'fast' (known: llvm, matrix, interleaved)
// BADAHEAD: error: test-load-ahead must be on or off, not 'maybe'
// Loads one step ahead (test-load-ahead=off): nothing carried, the loop's
// loads stored at the end of their step.
// NOAHEAD-LABEL: func @matmul_f16
// NOAHEAD: amdgpu.lds_barrier
// NOAHEAD-NEXT: scf.for %{{.*}} iter_args(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
// NOAHEAD: %[[NA:.*]] = amdgpu.raw_buffer_load %arg0
// NOAHEAD: amdgpu.mfma
// NOAHEAD: vector.store %[[NA]], %{{.*}} : memref<64x64xf16>, vector<8xf16>
// With test-step-schedule=matrix: the first fragments (2 + 2 LDS reads) in
// a group, then each of the step's 16 MFMAs in a group of its own.
// MATRIX-LABEL: func @matmul_f16
// MATRIX: amdgpu.sched_barrier allow = <none>
// MATRIX: rocdl.sched.group.barrier 256, 4, 0
// MATRIX-COUNT-16: rocdl.sched.group.barrier 8, 1, 0
// MATRIX-NOT: rocdl.sched.group.barrier 2,
func.func @matmul_f16(%a: tensor<128x256xf16>, %b: tensor<256x128xf16>) -> tensor<128x128xf16> attributes {kiln.dispatch} {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<128x128xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<128x128xf16>) -> tensor<128x128xf16>
  %0 = linalg.matmul ins(%a, %b : tensor<128x256xf16>, tensor<256x128xf16>) outs(%f : tensor<128x128xf16>) -> tensor<128x128xf16>
  return %0 : tensor<128x128xf16>
}

// -----

// f32 operands: on CDNA, at f32 precision, the f32 instruction
// (v_mfma_f32_16x16x4_f32, one element per lane: amdgpu.mfma takes it as a
// scalar), staged and accumulated in f32; with precision=f16 (or bf16)
// converted to it while staging, accumulated in f32. A target without an
// f32 instruction (RDNA, gfx1250) leaves f32 to the generic path.
// CHECK-LABEL: func @matmul_f32
// CHECK-SAME: (%[[A:.*]]: memref<64x64xf32>, %{{.*}}: memref<64x64xf32>, %[[C:.*]]: memref<64x64xf32>)
// CHECK-SAME: kiln.lds_bytes = 8192 : i64, kiln.matrix_instruction = "v_mfma_f32_16x16x4_f32", kiln.workgroup_count = 1 : i64
// CHECK-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<64x8xf32>
// CHECK: %[[X:.*]] = vector.extract %{{.*}}[0] : f32 from vector<1xf32>
// CHECK: amdgpu.mfma 16x16x4 %[[X]] * %{{.*}} + %{{.*}} {{.*}} : f32, f32, vector<4xf32>
// CHECK: memref.store %{{.*}}, %[[C]]{{.*}} : memref<64x64xf32>
// GFX950-LABEL: func @matmul_f32
// GFX950-SAME: kiln.matrix_instruction = "v_mfma_f32_16x16x4_f32"
// GFX1100-LABEL: func @matmul_f32
// GFX1100-SAME: (%{{.*}}: tensor<64x64xf32>, %{{.*}}: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {kiln.dispatch}
// GFX1100-NOT: kiln.workgroup_count
// GFX1100: linalg.matmul
// GFX1250-LABEL: func @matmul_f32
// GFX1250-SAME: attributes {kiln.dispatch}
// GFX1250-NOT: kiln.workgroup_count
// GFX1250: linalg.matmul
// F16-LABEL: func @matmul_f32
// F16-SAME: (%[[A:.*]]: memref<64x64xf32>, %{{.*}}: memref<64x64xf32>, %[[C:.*]]: memref<64x64xf32>)
// F16-SAME: kiln.matrix_instruction = "v_mfma_f32_16x16x16_f16", kiln.workgroup_count = 1 : i64
// F16-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<64x32xf16>
// F16: %[[V:.*]] = amdgpu.raw_buffer_load %[[A]]{{.*}} vector<4xf32>
// F16: arith.truncf %[[V]] : vector<4xf32> to vector<4xf16>
// F16: amdgpu.mfma 16x16x16
// F16: memref.store %{{.*}}, %[[C]]{{.*}} : memref<64x64xf32>
func.func @matmul_f32(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {kiln.dispatch} {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}

// -----

// Not a contraction (or not a dispatch): left alone.
// CHECK-LABEL: func @elementwise
// CHECK-NOT: kiln.workgroup_count
// CHECK: linalg.generic
func.func @elementwise(%a: tensor<64xf16>) -> tensor<64xf16> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<64xf16>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<64xf16>) outs(%e : tensor<64xf16>) {
  ^bb0(%x: f16, %o: f16):
    %s = arith.addf %x, %x : f16
    linalg.yield %s : f16
  } -> tensor<64xf16>
  return %0 : tensor<64xf16>
}

// -----

// Large GEMMs take the target table's large tiling where it has one (gfx942,
// gfx950: 4 x 4 instruction tiles per wave, a 128 x 128 tile) when the grid of
// those tiles still gives every CU of the largest product two workgroups:
// 3072 x 3072 is 24 x 24 = 576 tiles, under MI300X's 2 x 304 = 608 (the 64 x
// 64 tile on gfx942: 48 x 48 = 2304 workgroups) and over MI355X's 2 x 256 =
// 512 (the 128 x 128 tile on gfx950) and W7900's and R9700's 2 x 96 and
// 2 x 64: RDNA's large tilings, 2 x 2 waves of 4 x 4 tiles on gfx1100 (128
// threads of wave32) and 2 x 4 waves of 4 x 2 tiles on gfx1201 (256), both
// 128 x 128. gfx950's large tiling takes its 32 x 32 MFMA for 16-bit
// products (each in place of 2 x 2 of the 16 x 16 tiles: 2 x 2 per wave),
// K steps of 32 (K under 256).
// CHECK-LABEL: func @large_f16
// CHECK-SAME: kiln.lds_bytes = 16384 : i64, kiln.matrix_instruction = "v_mfma_f32_16x16x16_f16", kiln.workgroup_count = 2304 : i64
// GFX950-LABEL: func @large_f16
// GFX950-SAME: kiln.matrix_instruction = "v_mfma_f32_32x32x16_f16", kiln.workgroup_count = 576 : i64
// GFX950-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<128x32xf16>
// GFX950-COUNT-4: amdgpu.mfma 32x32x16 {{.*}} : vector<8xf16>, vector<8xf16>, vector<16xf32>
// GFX1100-LABEL: func @large_f16
// GFX1100-SAME: kiln.workgroup_count = 576 : i64, kiln.workgroup_size = 128 : i64
// GFX1100-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<128x32xf16>
// GFX1201-LABEL: func @large_f16
// GFX1201-SAME: kiln.workgroup_count = 576 : i64, kiln.workgroup_size = 256 : i64
// GFX1201-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<128x32xf16>
// gfx1250 (no product with a published size: sized as the largest chip in
// the table, MI300X's 304 CUs) keeps its 64 x 64 tile under 608 tiles.
// GFX1250-LABEL: func @large_f16
// GFX1250-SAME: kiln.workgroup_count = 2304 : i64, kiln.workgroup_size = 128 : i64
// GFX1250-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<64x64xf16>
func.func @large_f16(%a: tensor<3072x64xf16>, %b: tensor<64x3072xf16>) -> tensor<3072x3072xf16> attributes {kiln.dispatch} {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<3072x3072xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<3072x3072xf16>) -> tensor<3072x3072xf16>
  %0 = linalg.matmul ins(%a, %b : tensor<3072x64xf16>, tensor<64x3072xf16>) outs(%f : tensor<3072x3072xf16>) -> tensor<3072x3072xf16>
  return %0 : tensor<3072x3072xf16>
}

// -----

// 3200 x 3200 is 25 x 25 = 625 tiles of 128 x 128: the large tiling on gfx942
// too (32 KiB of LDS for the four 128 x 32 f16 panels). Its K steps are
// interleaved (the target table's StepSchedule for 16-bit operands): after
// the stores, the groups ask for the first fragments (4 + 4 LDS reads), then
// each of the 32 MFMAs of a step followed by an LDS read (the first 16) or
// by two vector ALU instructions and an LDS store (the last 16). gfx950's
// steps are matrix groups (its target table's choice with 32 x 32 MFMAs):
// a group of the first fragments (2 + 2 LDS reads),
// then its 8 MFMAs one per group; gfx1100's large tiling keeps LLVM's
// order for 16-bit operands.
// CHECK-LABEL: func @larger_f16
// CHECK-SAME: kiln.lds_bytes = 32768 : i64, kiln.matrix_instruction = "v_mfma_f32_16x16x16_f16", kiln.workgroup_count = 625 : i64
// CHECK-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<128x32xf16>
// CHECK-COUNT-32: amdgpu.mfma 16x16x16
// CHECK: vector.store
// CHECK: rocdl.sched.group.barrier 256, 8, 0
// CHECK-COUNT-16: rocdl.sched.group.barrier 8, 1, 0{{[[:space:]]*}}rocdl.sched.group.barrier 256, 1, 0
// CHECK-COUNT-16: rocdl.sched.group.barrier 8, 1, 0{{[[:space:]]*}}rocdl.sched.group.barrier 2, 2, 0{{[[:space:]]*}}rocdl.sched.group.barrier 512, 1, 0
// CHECK-NEXT: amdgpu.lds_barrier
// GFX950-LABEL: func @larger_f16
// GFX950-SAME: kiln.matrix_instruction = "v_mfma_f32_32x32x16_f16", kiln.workgroup_count = 625 : i64
// GFX950: rocdl.sched.group.barrier 256, 4, 0
// GFX950-COUNT-8: rocdl.sched.group.barrier 8, 1, 0
// GFX950-NEXT: amdgpu.lds_barrier
// GFX1100-LABEL: func @larger_f16
// GFX1100-NOT: rocdl.sched.group.barrier
// GFX1100: return
// gfx1250's large tiling: 2 x 2 waves of 4 x 4 tiles of the 32-deep WMMA
// (128 threads), K steps of 64.
// GFX1250-LABEL: func @larger_f16
// GFX1250-SAME: kiln.lds_bytes = 65536 : i64, kiln.matrix_instruction = "v_wmma_f32_16x16x32_f16", kiln.workgroup_count = 625 : i64, kiln.workgroup_size = 128 : i64
// GFX1250-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<128x64xf16>
func.func @larger_f16(%a: tensor<3200x64xf16>, %b: tensor<64x3200xf16>) -> tensor<3200x3200xf16> attributes {kiln.dispatch} {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<3200x3200xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<3200x3200xf16>) -> tensor<3200x3200xf16>
  %0 = linalg.matmul ins(%a, %b : tensor<3200x64xf16>, tensor<64x3200xf16>) outs(%f : tensor<3200x3200xf16>) -> tensor<3200x3200xf16>
  return %0 : tensor<3200x3200xf16>
}

// -----

// K = 160 is five steps of 32 (the small tiling steps 16-bit K by 64 from
// K = 256 on): the last iteration multiplies the step past K it
// prefetched, so chunks past K are zeroed by a select.
// CHECK-LABEL: func @matmul_f16_odd_steps
// CHECK: scf.for
// CHECK-COUNT-16: amdgpu.mfma 16x16x16
// CHECK: arith.select
// CHECK: vector.store
func.func @matmul_f16_odd_steps(%a: tensor<128x160xf16>, %b: tensor<160x128xf16>) -> tensor<128x128xf16> attributes {kiln.dispatch} {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<128x128xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<128x128xf16>) -> tensor<128x128xf16>
  %0 = linalg.matmul ins(%a, %b : tensor<128x160xf16>, tensor<160x128xf16>) outs(%f : tensor<128x128xf16>) -> tensor<128x128xf16>
  return %0 : tensor<128x128xf16>
}

// -----

// int8 in gfx1250's large tiling: K steps of 128 (two 64-deep WMMAs), a B
// panel of 128 x 128 bytes staged as transposed 4 x 4 byte blocks, two
// blocks of 4 x 16 per thread of the 128 (32-bit stores of 4 k, 16 per
// block); never byte by byte.
// gfx942's large tiling takes its 32 x 32 MFMA for int8 (2 x 2 per wave,
// K steps of 32, the chunks carried a step ahead), in matrix groups.
// CHECK-LABEL: func @larger_i8
// CHECK-SAME: kiln.matrix_instruction = "v_mfma_i32_32x32x16_i8", kiln.workgroup_count = 625 : i64
// CHECK-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<128x32xi8>
// CHECK: scf.for {{.*}} -> (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>,
// CHECK-COUNT-8: amdgpu.mfma 32x32x16 {{.*}} : vector<8xi8>, vector<8xi8>, vector<16xi32>
// CHECK: rocdl.sched.group.barrier 256, 4, 0
// CHECK-COUNT-8: rocdl.sched.group.barrier 8, 1, 0
// CHECK-NEXT: amdgpu.lds_barrier
// GFX1250-LABEL: func @larger_i8
// GFX1250-SAME: kiln.matrix_instruction = "v_wmma_i32_16x16x64_iu8", kiln.workgroup_count = 625 : i64, kiln.workgroup_size = 128 : i64
// GFX1250-COUNT-4: memref.alloca() {kiln.workgroup_memory} : memref<128x128xi8>
// GFX1250-COUNT-8: vector.store {{.*}} : memref<128x128xi8>, vector<16xi8>
// GFX1250-COUNT-32: vector.store {{.*}} : memref<128x128xi8>, vector<4xi8>
// GFX1250-NOT: memref.store {{.*}} : memref<128x128xi8>
// GFX1250: return
func.func @larger_i8(%a: tensor<3200x256xi8>, %b: tensor<256x3200xi8>) -> tensor<3200x3200xi32> attributes {kiln.dispatch} {
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<3200x3200xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<3200x3200xi32>) -> tensor<3200x3200xi32>
  %0 = linalg.matmul ins(%a, %b : tensor<3200x256xi8>, tensor<256x3200xi8>) outs(%f : tensor<3200x3200xi32>) -> tensor<3200x3200xi32>
  return %0 : tensor<3200x3200xi32>
}

// -----

// Attention's context: B read through a transpose of an argument (V as
// [S, H, D]) and the product returned through a transpose back to
// [S, H, D]: one MFMA kernel whose stores follow the permutation (row m,
// batch = head, column n).
// CHECK-LABEL: func @heads_transposed
// CHECK-SAME: (%arg0: memref<2x32x64xf16>, %arg1: memref<64x2x32xf16>, %arg2: memref<32x2x32xf32>)
// CHECK-SAME: kiln.matrix_instruction = "v_mfma_f32_16x16x16_f16"
// CHECK: %[[B:.*]] = gpu.block_id x
// CHECK: amdgpu.mfma
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}, %[[B]], %{{.*}}] : memref<32x2x32xf32>
func.func @heads_transposed(%a: tensor<2x32x64xf16>, %v: tensor<64x2x32xf16>) -> tensor<32x2x32xf32> attributes {kiln.dispatch} {
  %e = tensor.empty() : tensor<2x64x32xf16>
  %vt = linalg.transpose ins(%v : tensor<64x2x32xf16>) outs(%e : tensor<2x64x32xf16>) permutation = [1, 0, 2]
  %cst = arith.constant 0.000000e+00 : f32
  %o0 = tensor.empty() : tensor<2x32x32xf32>
  %z = linalg.fill ins(%cst : f32) outs(%o0 : tensor<2x32x32xf32>) -> tensor<2x32x32xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %vt : tensor<2x32x64xf16>, tensor<2x64x32xf16>) outs(%z : tensor<2x32x32xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xe = arith.extf %x : f16 to f32
    %ye = arith.extf %y : f16 to f32
    %m = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x32x32xf32>
  %e2 = tensor.empty() : tensor<32x2x32xf32>
  %c = linalg.transpose ins(%p : tensor<2x32x32xf32>) outs(%e2 : tensor<32x2x32xf32>) permutation = [1, 0, 2]
  return %c : tensor<32x2x32xf32>
}
