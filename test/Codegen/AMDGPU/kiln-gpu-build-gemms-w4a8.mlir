// RUN: kiln-opt %s -split-input-file --kiln-lower-to-linalg --canonicalize --kiln-gpu-build-gemms --canonicalize --cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-lower-to-linalg --canonicalize --kiln-gpu-build-gemms=chip=gfx1100 --canonicalize --cse | FileCheck %s --check-prefix=GFX1100
//
// W4A8: kiln.matmul_int4 with int8_activations, codes in the W4A8 panels
// [N / 32, K / G, G / 8, 32, 4], on the int8 matrix cores. The kernel
// computes the op's value to the bit (the cpu kernel's): first each tile
// row's largest magnitude per group (the f32's bits, an unsigned maximum),
// kept in LDS as 127 / amax and amax / 127; then the GEMM, A quantized
// (round half to even) while staged, B's 16 code bytes (4 rows of 4
// columns) turned into code - zero per byte and stored a column word at a
// time; as each group ends, its i32 sums are scaled into f32 sums:
// sum += float(i32) * ((amax / 127) * scale).

// 40 rows, groups of 256 (four K steps of 64): the group ends after every
// second iteration of the main loop (128 deep), a conditional flush. LDS:
// the four 64 x 64 int8 panels (16 KiB) and 2 x 64 x 2 f32.
// CHECK-LABEL: func @w4a8
// CHECK-SAME: (%[[X:.*]]: memref<40x512xf32>, %[[W:.*]]: memref<2x2x32x32x4xi8>, %[[S:.*]]: memref<2x2x32xf32>, %[[Z:.*]]: memref<2x2x32xf32>, %[[OUT:.*]]: memref<40x64xf32>)
// CHECK-SAME: kiln.lds_bytes = 17408 : i64, kiln.matrix_instruction = "v_mfma_i32_16x16x32_i8", kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 256 : i64
// CHECK: %[[INV:.*]] = memref.alloca() {kiln.workgroup_memory} : memref<64x2xf32>
// CHECK: %[[ASCALE:.*]] = memref.alloca() {kiln.workgroup_memory} : memref<64x2xf32>
// CHECK: %[[A0:.*]] = memref.alloca() {kiln.workgroup_memory} : memref<64x64xi8>
// The scales: one (row, group) per thread, rows past M with amax 0.
// CHECK: scf.for %{{.*}} = %{{.*}} to %c128 step %c256 {
// CHECK: scf.for
// CHECK: vector.load %[[X]]{{.*}} : memref<40x512xf32>, vector<4xf32>
// CHECK: math.absf
// CHECK: arith.bitcast %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK: arith.maxui
// CHECK: vector.reduction <maxui>
// CHECK: arith.cmpi ult, %{{.*}}, %c40
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[INV]]
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[ASCALE]]
// CHECK: gpu.barrier
// The prologue: A's 4 floats (a buffer load) times 127 / amax, rounded,
// stored as a word.
// CHECK: amdgpu.raw_buffer_load %[[X]]
// CHECK: memref.load %[[INV]]
// CHECK: vector.load %[[W]]{{.*}} : memref<2x2x32x32x4xi8>, vector<16xi8>
// CHECK: vector.load %[[Z]]{{.*}} : memref<2x2x32xf32>, vector<4xf32>
// CHECK: arith.mulf %{{.*}} : vector<4xf32>
// CHECK: math.roundeven %{{.*}} : vector<4xf32>
// CHECK: arith.fptosi %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK: arith.trunci %{{.*}} : vector<4xi32> to vector<4xi8>
// CHECK: vector.store %{{.*}}, %[[A0]]{{.*}} : memref<64x64xi8>, vector<4xi8>
// B: the nibble (shift by 0 or 4, mask 0x0F0F0F0F), then (code + 0x80 - z)
// ^ 0x80 per byte, one word per column.
// CHECK: vector.bitcast %{{.*}} : vector<16xi8> to vector<4xi32>
// CHECK: arith.shrui %{{.*}} : vector<4xi32>
// CHECK: arith.andi %{{.*}} : vector<4xi32>
// CHECK: arith.fptosi %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK: arith.subi
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK: arith.xori
// CHECK-COUNT-4: vector.store %{{.*}} : memref<64x64xi8>, vector<4xi8>
// CHECK: amdgpu.lds_barrier
// Main loop: 4 i32 tiles, then 4 f32 sums.
// CHECK: scf.for %[[K0:.*]] = %c0 to %c512 step %c128 iter_args({{.*}}) -> (vector<4xi32>, vector<4xi32>, vector<4xi32>, vector<4xi32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>,
// CHECK-COUNT-8: amdgpu.mfma 16x16x32 {{.*}} : vector<8xi8>, vector<8xi8>, vector<4xi32>
// CHECK: amdgpu.lds_barrier
// CHECK-COUNT-8: amdgpu.mfma 16x16x32 {{.*}} : vector<8xi8>, vector<8xi8>, vector<4xi32>
// CHECK: amdgpu.lds_barrier
// CHECK: scf.if %{{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK: memref.load %[[ASCALE]]
// CHECK: vector.from_elements {{.*}} : vector<4xf32>
// CHECK: memref.load %[[S]]
// CHECK: arith.sitofp %{{.*}} : vector<4xi32> to vector<4xf32>
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.addf
// The epilogue stores the f32 sums.
// CHECK: } {llvm.loop_annotation
// CHECK: vector.extract %{{.*}}#4[0] : f32 from vector<4xf32>
// CHECK: memref.store %{{.*}}, %[[OUT]]
// GFX1100: func @w4a8
// GFX1100-SAME: kiln.matrix_instruction = "v_wmma_i32_16x16x16_iu8"
// GFX1100: amdgpu.wmma 16x16x16 {{.*}} : vector<16xi8>, vector<16xi8>, vector<8xi32>
// GFX1100: scf.if %{{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
func.func @w4a8(%x: tensor<40x512xf32>, %w: tensor<2x2x32x32x4xi8>, %s: tensor<2x2x32xf32>, %z: tensor<2x2x32xf32>) -> tensor<40x64xf32> attributes {kiln.dispatch} {
  %0 = kiln.matmul_int4 %x, %w, %s, %z {int8_activations} : (tensor<40x512xf32>, tensor<2x2x32x32x4xi8>, tensor<2x2x32xf32>, tensor<2x2x32xf32>) -> tensor<40x64xf32>
  return %0 : tensor<40x64xf32>
}

// -----

// A decode step: one instruction tile per wave (a 16 x 32 tile, two
// waves, two workgroups for 64 columns), groups of 128 = one iteration: the
// flush ends every iteration, and the i32 sums start at zero in each.
// CHECK-LABEL: func @w4a8_decode
// CHECK-SAME: kiln.lds_bytes = 7168 : i64, kiln.matrix_instruction = "v_mfma_i32_16x16x32_i8", kiln.workgroup_count = 2 : i64, kiln.workgroup_size = 128 : i64
// CHECK: memref.alloca() {kiln.workgroup_memory} : memref<16x8xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c1024 step %c128 iter_args({{.*}}) -> (vector<4xf32>, {{.*}}vector<16xi8>
// CHECK-NOT: scf.if %{{.*}} -> (vector<4xf32>
// CHECK: arith.sitofp
// GFX1100-LABEL: func @w4a8_decode
// GFX1100-SAME: kiln.workgroup_size = 64 : i64
func.func @w4a8_decode(%x: tensor<1x1024xf32>, %w: tensor<2x8x16x32x4xi8>, %s: tensor<2x8x32xf32>, %z: tensor<2x8x32xf32>) -> tensor<1x64xf32> attributes {kiln.dispatch} {
  %0 = kiln.matmul_int4 %x, %w, %s, %z {int8_activations} : (tensor<1x1024xf32>, tensor<2x8x16x32x4xi8>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<1x64xf32>
  return %0 : tensor<1x64xf32>
}

// -----

// Groups of 16 on a 32-deep instruction: two instructions per tile and k
// step, each on the A elements of one group (the lane layout's k of each
// element), the others zeroed; a flush after each.
// CHECK-LABEL: func @w4a8_group16
// CHECK-SAME: kiln.matrix_instruction = "v_mfma_i32_16x16x32_i8"
// CHECK: %[[FIRST:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xi8>
// CHECK: amdgpu.mfma 16x16x32 %[[FIRST]]
// CHECK: arith.sitofp
// CHECK: %[[SECOND:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xi8>
// CHECK: amdgpu.mfma 16x16x32 %[[SECOND]]
// CHECK: arith.sitofp
// On gfx1100 (16 deep) a group is an instruction: no masks.
// GFX1100-LABEL: func @w4a8_group16
// GFX1100-NOT: vector<16xi1>
// GFX1100: amdgpu.wmma
func.func @w4a8_group16(%x: tensor<5x128xf32>, %w: tensor<1x8x2x32x4xi8>, %s: tensor<1x8x32xf32>, %z: tensor<1x8x32xf32>) -> tensor<5x32xf32> attributes {kiln.dispatch} {
  %0 = kiln.matmul_int4 %x, %w, %s, %z {int8_activations} : (tensor<5x128xf32>, tensor<1x8x2x32x4xi8>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<5x32xf32>
  return %0 : tensor<5x32xf32>
}

// -----

// Groups of 48 neither divide the 32-deep instruction nor are a multiple of
// it: the generic path.
// CHECK-LABEL: func @w4a8_group48
// CHECK-NOT: kiln.workgroup_count
// CHECK: linalg.generic
func.func @w4a8_group48(%x: tensor<5x96xf32>, %w: tensor<1x2x6x32x4xi8>, %s: tensor<1x2x32xf32>, %z: tensor<1x2x32xf32>) -> tensor<5x32xf32> attributes {kiln.dispatch} {
  %0 = kiln.matmul_int4 %x, %w, %s, %z {int8_activations} : (tensor<5x96xf32>, tensor<1x2x6x32x4xi8>, tensor<1x2x32xf32>, tensor<1x2x32xf32>) -> tensor<5x32xf32>
  return %0 : tensor<5x32xf32>
}

// -----

// 1024 groups: their scales would need 128 KiB of LDS even for a tile of 16
// rows (64 KiB on gfx942): the generic path.
// CHECK-LABEL: func @w4a8_many_groups
// CHECK-NOT: kiln.workgroup_count
// CHECK: linalg.generic
func.func @w4a8_many_groups(%x: tensor<40x16384xf32>, %w: tensor<1x1024x2x32x4xi8>, %s: tensor<1x1024x32xf32>, %z: tensor<1x1024x32xf32>) -> tensor<40x32xf32> attributes {kiln.dispatch} {
  %0 = kiln.matmul_int4 %x, %w, %s, %z {int8_activations} : (tensor<40x16384xf32>, tensor<1x1024x2x32x4xi8>, tensor<1x1024x32xf32>, tensor<1x1024x32xf32>) -> tensor<40x32xf32>
  return %0 : tensor<40x32xf32>
}
