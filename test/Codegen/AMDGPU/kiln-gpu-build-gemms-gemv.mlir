// RUN: kiln-opt %s -split-input-file --kiln-lower-to-linalg --canonicalize --kiln-gpu-build-gemms --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-lower-to-linalg --canonicalize --kiln-gpu-build-gemms=chip=gfx1100 --canonicalize --cse | FileCheck %s --check-prefix=GFX1100
//
// kiln.matmul_panels of at most 8 rows (kiln-compile packs few-row products
// by constant weights into column panels [N / P, K, P] for gfx targets too)
// becomes a GEMV kernel: no matrix instructions, one workgroup of 256
// threads per panel, each lane reading 16 bytes of a panel row, the row
// groups splitting K and their sums meeting in LDS.

// f16, P = 16: two lanes per panel row (8 halves each), 128 row groups;
// K = 256 gives each row group two rows, so two loads per lane (the
// unroll is at most 8, no more than the rows a row group has), issued
// before a scheduling barrier and then multiplied in f32. The 128 x 1 x 16
// sums in LDS are added by 16 threads per output element (8 each), their
// 16 parts by one thread per element, which runs the epilogue: SiLU reads
// the product twice (x * sigmoid(x)), a graph, not a chain.
// CHECK-LABEL: func @gemv_f16_silu
// CHECK-SAME: (%[[X:.*]]: memref<1x256xf16>, %[[W:.*]]: memref<8x256x16xf16>, %[[OUT:.*]]: memref<1x128xf16>)
// CHECK-SAME: kiln.lds_bytes = 9216 : i64, kiln.workgroup_count = 8 : i64, kiln.workgroup_size = 256 : i64
// CHECK-NOT: kiln.matrix_instruction
// CHECK: %[[PANEL:.*]] = gpu.block_id x
// CHECK: gpu.thread_id x
// CHECK-NOT: scf.for
// CHECK: vector.load %[[W]][%[[PANEL]], %{{.*}}, %{{.*}}] : memref<8x256x16xf16>, vector<8xf16>
// CHECK: memref.load %[[X]]
// CHECK: vector.load %[[W]][%[[PANEL]], %{{.*}}, %{{.*}}] : memref<8x256x16xf16>, vector<8xf16>
// CHECK: memref.load %[[X]]
// CHECK-NEXT: amdgpu.sched_barrier allow = <none>
// CHECK: arith.extf %{{.*}} : vector<8xf16> to vector<8xf32>
// CHECK: vector.fma
// CHECK: vector.fma
// CHECK: %[[SUMS:.*]] = memref.alloca() {kiln.workgroup_memory} : memref<128x1x16xf32>
// CHECK: %[[PARTS:.*]] = memref.alloca() {kiln.workgroup_memory} : memref<16x16xf32>
// CHECK: vector.store %{{.*}}, %[[SUMS]]
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0 to %c8
// CHECK: memref.load %[[SUMS]]
// CHECK: memref.store %{{.*}}, %[[PARTS]]
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: scf.for %{{.*}} = %c0 to %c16
// CHECK: memref.load %[[PARTS]]
// CHECK: %[[S:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK: math.exp
// CHECK: %[[SIG:.*]] = arith.divf
// CHECK: %[[Y:.*]] = arith.mulf %[[S]], %[[SIG]] : f16
// CHECK: memref.store %[[Y]], %[[OUT]]
// The same kernel for wave32 (8 waves of 32).
// GFX1100-LABEL: func @gemv_f16_silu
// GFX1100-SAME: kiln.lds_bytes = 9216 : i64, kiln.workgroup_count = 8 : i64, kiln.workgroup_size = 256 : i64
// GFX1100-NOT: amdgpu.wmma
// GFX1100: vector.load {{.*}} vector<8xf16>
func.func @gemv_f16_silu(%x: tensor<1x256xf16>, %w: tensor<8x256x16xf16>) -> tensor<1x128xf16> attributes {kiln.dispatch} {
  %0 = kiln.matmul_panels %x, %w {columns = 128 : i64} : (tensor<1x256xf16>, tensor<8x256x16xf16>) -> tensor<1x128xf16>
  %1 = kiln.sigmoid %0 : tensor<1x128xf16>
  %2 = kiln.mul %0, %1 : (tensor<1x128xf16>, tensor<1x128xf16>) -> tensor<1x128xf16>
  return %2 : tensor<1x128xf16>
}

// -----

// f32, two rows, K = 3000: with 3 workgroups (fewer than 256) the kernel
// takes 1024 threads, 256 row groups of 4 lanes, so that more loads are in
// flight; 8 loads per lane per iteration, and K is not a multiple of the
// 2048 rows an iteration covers: the rows past K read the panel's last row
// (clamped, no branch) and are zeroed by a select; 40 columns in 3 panels
// of 16: the threads of the last panel's columns past 40 store nothing. The
// bias add is the epilogue.
// CHECK-LABEL: func @gemv_f32_ragged
// CHECK-SAME: kiln.lds_bytes = 36864 : i64, kiln.workgroup_count = 3 : i64, kiln.workgroup_size = 1024 : i64
// CHECK: scf.for %{{.*}} = %c0 to %c3000 step %c2048 iter_args(%{{.*}} = %[[Z:.*]], %{{.*}} = %[[Z]]) -> (vector<4xf32>, vector<4xf32>)
// CHECK: arith.cmpi ult, %{{.*}}, %c3000
// CHECK: arith.minui %{{.*}}, %c2999
// CHECK-COUNT-8: vector.load {{.*}} : memref<3x3000x16xf32>, vector<4xf32>
// CHECK: amdgpu.sched_barrier
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[Z]] : vector<4xf32>
// CHECK: memref.alloca() {kiln.workgroup_memory} : memref<256x2x16xf32>
// CHECK: memref.alloca() {kiln.workgroup_memory} : memref<32x32xf32>
// CHECK: %[[ELEM:.*]] = arith.cmpi ult, %{{.*}}, %c32
// CHECK: %[[COL:.*]] = arith.cmpi ult, %{{.*}}, %c40
// CHECK: arith.andi %[[ELEM]], %[[COL]]
// CHECK: memref.load %{{.*}} : memref<40xf32>
// CHECK: arith.addf
// CHECK: memref.store {{.*}} : memref<2x40xf32>
func.func @gemv_f32_ragged(%x: tensor<2x3000xf32>, %w: tensor<3x3000x16xf32>, %bias: tensor<40xf32>) -> tensor<2x40xf32> attributes {kiln.dispatch} {
  %0 = kiln.matmul_panels %x, %w {columns = 40 : i64} : (tensor<2x3000xf32>, tensor<3x3000x16xf32>) -> tensor<2x40xf32>
  %1 = kiln.add %0, %bias : (tensor<2x40xf32>, tensor<40xf32>) -> tensor<2x40xf32>
  return %1 : tensor<2x40xf32>
}

// -----

// int8 x int8: 16 bytes per lane (one lane per row of 16 columns, two per
// 32-column panel row), each extended by its signedness and accumulated in
// i32.
// CHECK-LABEL: func @gemv_i8
// CHECK: vector.load {{.*}} : memref<2x512x32xi8>, vector<16xi8>
// CHECK: arith.extsi %{{.*}} : vector<16xi8> to vector<16xi32>
// CHECK: arith.extsi %{{.*}} : i8 to i32
// CHECK: arith.muli %{{.*}} : vector<16xi32>
// CHECK: memref.alloca() {kiln.workgroup_memory} : memref<128x1x32xi32>
// CHECK: memref.store %{{.*}} : memref<1x64xi32>
func.func @gemv_i8(%x: tensor<1x512xi8>, %w: tensor<2x512x32xi8>) -> tensor<1x64xi32> attributes {kiln.dispatch} {
  %0 = kiln.matmul_panels %x, %w {columns = 64 : i64} : (tensor<1x512xi8>, tensor<2x512x32xi8>) -> tensor<1x64xi32>
  return %0 : tensor<1x64xi32>
}

// -----

// A few-row product by an argument contiguous along n (scores x V at a
// decode step: 4 heads of [1, 512] x [512, 128]): a GEMV on the operand as
// it is, in column blocks of 64 f16 (8 lanes of 16 bytes, a 128-byte line
// per row), a workgroup per head and block, 1024 threads where there are so
// few workgroups; the head comes from the workgroup, the row from the loop.
// CHECK-LABEL: func @gemv_row_major_batched
// CHECK-SAME: (%[[P:.*]]: memref<4x1x512xf16>, %[[V:.*]]: memref<4x512x128xf16>, %{{.*}}: memref<4x1x128xf16>)
// CHECK-SAME: kiln.lds_bytes = 36864 : i64, kiln.workgroup_count = 8 : i64, kiln.workgroup_size = 1024 : i64
// CHECK-NOT: kiln.matrix_instruction
// CHECK: %[[WG:.*]]:2 = affine.delinearize_index %{{.*}} into (4, 2)
// CHECK: vector.load %[[V]][%[[WG]]#0, %{{.*}}, %{{.*}}] : memref<4x512x128xf16>, vector<8xf16>
// CHECK: memref.load %[[P]][%[[WG]]#0, %c0, %{{.*}}] : memref<4x1x512xf16>
// CHECK: memref.alloca() {kiln.workgroup_memory} : memref<128x1x64xf32>
func.func @gemv_row_major_batched(%p: tensor<4x1x512xf16>, %v: tensor<4x512x128xf16>) -> tensor<4x1x128xf16> attributes {kiln.dispatch} {
  %0 = kiln.matmul %p, %v : (tensor<4x1x512xf16>, tensor<4x512x128xf16>) -> tensor<4x1x128xf16>
  return %0 : tensor<4x1x128xf16>
}

// -----

// Nine rows are more than a GEMV takes: left to the generic path.
// CHECK-LABEL: func @nine_rows
// CHECK-SAME: (%{{.*}}: tensor<9x64xf32>, %{{.*}}: tensor<1x64x16xf32>) -> tensor<9x16xf32>
// CHECK-NOT: kiln.workgroup_count
// CHECK: linalg.generic
func.func @nine_rows(%x: tensor<9x64xf32>, %w: tensor<1x64x16xf32>) -> tensor<9x16xf32> attributes {kiln.dispatch} {
  %0 = kiln.matmul_panels %x, %w {columns = 16 : i64} : (tensor<9x64xf32>, tensor<1x64x16xf32>) -> tensor<9x16xf32>
  return %0 : tensor<9x16xf32>
}

// -----

// The matrix-core GEMM takes an epilogue graph too: SiLU after an f16
// GEMM, per accumulator element (four per lane and tile).
// CHECK-LABEL: func @gemm_silu
// CHECK-SAME: kiln.matrix_instruction = "v_mfma_f32_16x16x16_f16"
// CHECK: amdgpu.mfma
// CHECK: %[[V:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK-NEXT: arith.negf %[[V]] : f16
// CHECK-NEXT: math.exp
// CHECK-NEXT: arith.addf
// CHECK-NEXT: %[[SIG:.*]] = arith.divf
// CHECK-NEXT: %[[Y:.*]] = arith.mulf %[[V]], %[[SIG]] : f16
// CHECK-NEXT: memref.store %[[Y]]
func.func @gemm_silu(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf16> attributes {kiln.dispatch} {
  %0 = kiln.matmul %a, %b : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  %1 = kiln.sigmoid %0 : tensor<64x64xf16>
  %2 = kiln.mul %0, %1 : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>
  return %2 : tensor<64x64xf16>
}

// -----

// W4A16 of at most 8 rows (kiln.matmul_int4: codes [K / G, G / 2, N], a
// byte's low nibble row g G + j, its high one g G + G / 2 + j) is a GEMV on
// the codes as they are, in f32 arithmetic with any float activations. 3
// rows: 8 columns per lane (N = 200 is not a multiple of 16), 2 lanes per
// row (under 128 panels of 8 lanes), 13 panels of 16 columns, the last
// partial. 256 threads, 128 row groups of 2 consecutive code rows each (of
// one group of 32: the scales and zero points loaded once), 192 code rows:
// the row groups past them clamp to the last two rows (190) and select
// zeros. Per nibble one conversion and a multiply-add per row; per row and
// step, (sum x c - sum x z) s.
// CHECK-LABEL: func @gemv_int4_f32
// CHECK-SAME: (%[[X:.*]]: memref<3x384xf32>, %[[W:.*]]: memref<12x16x200xi8>, %[[S:.*]]: memref<12x200xf32>, %[[Z:.*]]: memref<12x200xf32>, %[[OUT:.*]]: memref<3x200xf32>)
// CHECK-SAME: kiln.lds_bytes = 25344 : i64, kiln.workgroup_count = 13 : i64, kiln.workgroup_size = 256 : i64
// CHECK-NOT: kiln.matrix_instruction
// CHECK: %[[COL:.*]] = arith.cmpi ult, %{{.*}}, %c200
// CHECK: %[[N0:.*]] = arith.minui %{{.*}}, %c192
// CHECK: %[[ROW:.*]] = arith.cmpi ult, %{{.*}}, %c192
// CHECK: %[[OK:.*]] = arith.andi %[[COL]], %[[ROW]]
// CHECK: arith.minui %{{.*}}, %c190
// CHECK-COUNT-2: vector.load %[[W]][%{{.*}}, %{{.*}}, %[[N0]]] : memref<12x16x200xi8>, vector<8xi8>
// CHECK: %[[SCALE:.*]] = vector.load %[[S]][%{{.*}}, %[[N0]]] : memref<12x200xf32>, vector<8xf32>
// CHECK: %[[ZERO:.*]] = vector.load %[[Z]][%{{.*}}, %[[N0]]] : memref<12x200xf32>, vector<8xf32>
// CHECK-COUNT-6: vector.load %[[X]]{{.*}} : memref<3x384xf32>, vector<2xf32>
// CHECK-NEXT: amdgpu.sched_barrier allow = <none>
// CHECK: arith.andi %{{.*}}, %{{.*}} : vector<8xi32>
// CHECK: arith.uitofp %{{.*}} : vector<8xi32> to vector<8xf32>
// CHECK: arith.shrui %{{.*}} : vector<8xi32>
// CHECK: vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: %[[NEG:.*]] = arith.negf %{{.*}} : f32
// CHECK: %[[NEGV:.*]] = vector.broadcast %[[NEG]] : f32 to vector<8xf32>
// CHECK: %[[T:.*]] = vector.fma %[[NEGV]], %[[ZERO]], %{{.*}} : vector<8xf32>
// CHECK: %[[TOK:.*]] = arith.select %[[OK]], %[[T]], %{{.*}} : vector<8xf32>
// CHECK: vector.fma %[[TOK]], %[[SCALE]], %{{.*}} : vector<8xf32>
// CHECK: memref.alloca() {kiln.workgroup_memory} : memref<128x3x16xf32>
// CHECK: memref.store %{{.*}}, %[[OUT]]
func.func @gemv_int4_f32(%x: tensor<3x384xf32>, %w: tensor<12x16x200xi8>, %s: tensor<12x200xf32>, %z: tensor<12x200xf32>) -> tensor<3x200xf32> attributes {kiln.dispatch} {
  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<3x384xf32>, tensor<12x16x200xi8>, tensor<12x200xf32>, tensor<12x200xf32>) -> tensor<3x200xf32>
  return %0 : tensor<3x200xf32>
}

// -----

// One row of f16: 16 columns (16 code bytes) per lane, 2 lanes per row (64
// panels of 32 columns), 4 code rows per row group and step, the
// activations loaded 4 at a time and widened to f32, the f16 scales and
// zero points too.
// CHECK-LABEL: func @gemv_int4_f16
// CHECK-SAME: kiln.lds_bytes = 17408 : i64, kiln.workgroup_count = 64 : i64, kiln.workgroup_size = 256 : i64
// CHECK-COUNT-4: vector.load %{{.*}} : memref<16x32x2048xi8>, vector<16xi8>
// CHECK-COUNT-2: vector.load %{{.*}} : memref<16x2048xf16>, vector<16xf16>
// CHECK-COUNT-2: vector.load %{{.*}} : memref<1x1024xf16>, vector<4xf16>
// CHECK: amdgpu.sched_barrier
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.extf %{{.*}} : vector<16xf16> to vector<16xf32>
// CHECK: memref.alloca() {kiln.workgroup_memory} : memref<128x1x32xf32>
func.func @gemv_int4_f16(%x: tensor<1x1024xf16>, %w: tensor<16x32x2048xi8>, %s: tensor<16x2048xf16>, %z: tensor<16x2048xf16>) -> tensor<1x2048xf16> attributes {kiln.dispatch} {
  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<1x1024xf16>, tensor<16x32x2048xi8>, tensor<16x2048xf16>, tensor<16x2048xf16>) -> tensor<1x2048xf16>
  return %0 : tensor<1x2048xf16>
}

// -----

// Nine rows of f32 activations: neither a GEMV nor W4A16 (which needs
// 16-bit ones): the generic path.
// CHECK-LABEL: func @int4_nine_rows
// CHECK-NOT: kiln.workgroup_count
// CHECK: linalg.generic
func.func @int4_nine_rows(%x: tensor<9x64xf32>, %w: tensor<2x16x16xi8>, %s: tensor<2x16xf32>, %z: tensor<2x16xf32>) -> tensor<9x16xf32> attributes {kiln.dispatch} {
  %0 = kiln.matmul_int4 %x, %w, %s, %z : (tensor<9x64xf32>, tensor<2x16x16xi8>, tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<9x16xf32>
  return %0 : tensor<9x16xf32>
}
