// RUN: kiln-opt %s --kiln-emu-lower-kernels=chip=gfx1100 | FileCheck %s

// RDNA3's unsigned 8-bit WMMA carries its signedness flags (1 = unsigned A,
// 2 = unsigned B).

// CHECK-LABEL: func.func @wmma(
// CHECK: vector.bitcast %{{.*}} : vector<16xi8> to vector<4xi32>
// CHECK: %[[FLAGS:.*]] = llvm.mlir.constant(3 : i32)
// CHECK: llvm.mlir.addressof @__kiln_emu_v_wmma_i32_16x16x16_iu8
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<8xi32>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @wmma(%arg0: memref<16xi8, #gpu.address_space<global>>, %out: memref<8xi32, #gpu.address_space<global>>) kernel {
      %c0 = arith.constant 0 : index
      %a = vector.load %arg0[%c0] : memref<16xi8, #gpu.address_space<global>>, vector<16xi8>
      %c = arith.constant dense<0> : vector<8xi32>
      %d = amdgpu.wmma 16x16x16 %a * %a + %c {unsignedA, unsignedB} : vector<16xi8>, vector<16xi8>, vector<8xi32>
      vector.store %d, %out[%c0] : memref<8xi32, #gpu.address_space<global>>, vector<8xi32>
      gpu.return
    }
  }
}
