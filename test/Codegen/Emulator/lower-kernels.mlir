// RUN: kiln-opt %s --kiln-emu-lower-kernels=chip=gfx942 | FileCheck %s

// A gfx942 kernel with LDS, a barrier and an MFMA becomes a host function with
// the emulation ABI: lane and LDS bytes first, ids loaded from the lane, the
// barrier and the MFMA through the lane's hooks with their own site ids.

// CHECK: llvm.mlir.global internal constant @__kiln_emu_v_mfma_f32_16x16x16_f16("v_mfma_f32_16x16x16_f16\00")
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @k(
// CHECK-SAME: %[[LANE:.*]]: !llvm.ptr, %[[LDS:.*]]: memref<8192xi8>, %[[ARG:.*]]: memref<64x16xf16>)
// CHECK-SAME: kiln.emu_kernel
// CHECK-SAME: kiln.lds_bytes = 8192
// CHECK-DAG: memref.view %[[LDS]][%{{.*}}][] : memref<8192xi8> to memref<64x32xf16>
// CHECK-DAG: %[[TIDP:.*]] = llvm.getelementptr %[[LANE]][16] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-DAG: %[[TID:.*]] = llvm.load %[[TIDP]] : !llvm.ptr -> i32
// CHECK-DAG: arith.index_castui %[[TID]] : i32 to index
// CHECK-DAG: %[[BIDP:.*]] = llvm.getelementptr %[[LANE]][28] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[BSLOT:.*]] = llvm.getelementptr %{{.*}}[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[BARRIER:.*]] = llvm.load %[[BSLOT]]
// CHECK: %[[SITE0:.*]] = llvm.mlir.constant(0 : i32)
// CHECK: llvm.call %[[BARRIER]](%[[LANE]], %[[SITE0]]) : !llvm.ptr, (!llvm.ptr, i32) -> ()
// CHECK: vector.bitcast %{{.*}} : vector<4xf16> to vector<2xi32>
// CHECK: %[[MSLOT:.*]] = llvm.getelementptr %{{.*}}[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[MATRIX:.*]] = llvm.load %[[MSLOT]]
// CHECK: %[[SITE1:.*]] = llvm.mlir.constant(1 : i32)
// CHECK: %[[FLAGS:.*]] = llvm.mlir.constant(0 : i32)
// CHECK: %[[NAME:.*]] = llvm.mlir.addressof @__kiln_emu_v_mfma_f32_16x16x16_f16
// CHECK: llvm.call %[[MATRIX]](%[[LANE]], %[[SITE1]], %[[NAME]], %[[FLAGS]], %{{.*}}, %{{.*}}, %{{.*}}, %[[D:.*]]) : !llvm.ptr, (!llvm.ptr, i32, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK: llvm.load %[[D]] : !llvm.ptr -> vector<4xf32>
// CHECK-NOT: #gpu.address_space
// CHECK: return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%arg0: memref<64x16xf16, #gpu.address_space<global>>)
        workgroup(%lds0 : memref<64x32xf16, #gpu.address_space<workgroup>>,
                  %lds1 : memref<64x32xf16, #gpu.address_space<workgroup>>)
        kernel attributes {kiln.lds_bytes = 8192 : i64} {
      %c0 = arith.constant 0 : index
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %x = vector.load %arg0[%tid, %c0] : memref<64x16xf16, #gpu.address_space<global>>, vector<4xf16>
      vector.store %x, %lds0[%tid, %bid] : memref<64x32xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      gpu.barrier
      %a = vector.load %lds0[%c0, %tid] : memref<64x32xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      %b = vector.load %lds1[%c0, %tid] : memref<64x32xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      %c = arith.constant dense<0.0> : vector<4xf32>
      %d = amdgpu.mfma 16x16x16 %a * %b + %c blgp = none : vector<4xf16>, vector<4xf16>, vector<4xf32>
      %h = arith.truncf %d : vector<4xf32> to vector<4xf16>
      vector.store %h, %arg0[%tid, %c0] : memref<64x16xf16, #gpu.address_space<global>>, vector<4xf16>
      gpu.return
    }
  }
}
