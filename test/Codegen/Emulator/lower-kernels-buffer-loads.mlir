// RUN: kiln-opt %s --kiln-emu-lower-kernels=chip=gfx942 | FileCheck %s

// amdgpu.raw_buffer_load runs as the chip runs it: the indices linearized
// over the (contiguous) operand, a load when the whole vector lies inside
// it, zeros past its end (no fault). The load is a global access site named
// after the buffer load.
// CHECK-LABEL: func.func @k
// CHECK: %[[ROW:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: arith.muli %[[ROW]], %c16
// CHECK: %[[COL:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[LIN:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[END:.*]] = arith.addi %[[LIN]], %c8 : index
// CHECK: %[[LO:.*]] = arith.cmpi sge, %[[LIN]], %c0
// CHECK: %[[HI:.*]] = arith.cmpi sle, %[[END]], %c128
// CHECK: %[[IN:.*]] = arith.andi %[[LO]], %[[HI]]
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [128], strides: [1] : memref<8x16xf16> to memref<128xf16>
// CHECK: scf.if %[[IN]] -> (vector<8xf16>) {
// CHECK:   vector.load %[[FLAT]][%[[LIN]]] {kiln_emu_site_text = "amdgpu.raw_buffer_load vector<8xf16> from memref<8x16xf16>"}
// CHECK: } else {
// CHECK:   arith.constant dense<0.000000e+00> : vector<8xf16>
// CHECK-NOT: amdgpu.raw_buffer_load
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%in: memref<8x16xf16, #gpu.address_space<global>>, %out: memref<8xf16, #gpu.address_space<global>>, %row: i32, %col: i32) kernel {
      %c0 = arith.constant 0 : index
      %v = amdgpu.raw_buffer_load %in[%row, %col] : memref<8x16xf16, #gpu.address_space<global>>, i32, i32 -> vector<8xf16>
      vector.store %v, %out[%c0] : memref<8xf16, #gpu.address_space<global>>, vector<8xf16>
      gpu.return
    }
  }
}
