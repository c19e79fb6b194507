// RUN: kiln-opt %s --kiln-emu-lower-kernels=chip=gfx942 | FileCheck %s
// RUN: kiln-opt %s --kiln-emu-lower-kernels=chip=gfx942 | FileCheck %s --check-prefix=SITES

// Every load and store of LDS (workgroup memory) or global memory gets an
// access site, numbered in program order: a constant KilnEmuAccessSite {id,
// kind, bytes per lane, 0, op, location} and, before the op, a call of the
// lane's access hook (hooks[2]) guarded by the lane's accessStats flag
// (offset 48), read once at the entry. Private memory is not reported.

// Kinds: 0 LDS load, 1 LDS store, 2 global load, 3 global store. The private
// store has no site (sites are emitted at the top, the last first).
// SITES-NOT: @__kiln_emu_site_k_4
// SITES-DAG: llvm.mlir.global internal constant @__kiln_emu_site_k_0_op("vector.load vector<4xf16> from memref<64x16xf16>\00")
// SITES-DAG: llvm.mlir.global internal constant @__kiln_emu_site_k_1_op("vector.store vector<4xf16> to memref<64x32xf16>\00")
// SITES-DAG: llvm.mlir.global internal constant @__kiln_emu_site_k_2_op("memref.load f16 from memref<64x32xf16>\00")
// SITES-DAG: llvm.mlir.global internal constant @__kiln_emu_site_k_3_op("memref.store f16 to memref<64x16xf16>\00")
// SITES-DAG: llvm.mlir.global internal constant @__kiln_emu_site_k_3_loc("lower-kernels-access-sites.mlir:{{[0-9]+}}:7\00")

// CHECK: llvm.mlir.global internal constant @__kiln_emu_site_k_1()
// CHECK: %[[ID:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.insertvalue %[[ID]], %{{.*}}[0]
// CHECK: %[[KIND:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.insertvalue %[[KIND]], %{{.*}}[1]
// CHECK: %[[BYTES:.*]] = llvm.mlir.constant(8 : i32) : i32
// CHECK: llvm.insertvalue %[[BYTES]], %{{.*}}[2]
// CHECK: llvm.mlir.global internal constant @__kiln_emu_site_k_0()
// CHECK: llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[KIND0:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: llvm.insertvalue %[[KIND0]], %{{.*}}[1]

// CHECK-LABEL: func.func @k(
// CHECK-SAME: %[[LANE:[^:]*]]: !llvm.ptr
// CHECK: %[[FLAGP:.*]] = llvm.getelementptr %[[LANE]][48] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK: %[[FLAG:.*]] = llvm.load %[[FLAGP]] : !llvm.ptr -> i32
// CHECK: %[[ON:.*]] = arith.cmpi ne, %[[FLAG]], %{{.*}} : i32
// CHECK: scf.if %[[ON]] {
// CHECK:   memref.extract_strided_metadata %{{.*}} : memref<64x16xf16>
// CHECK:   %[[PTR:.*]] = memref.extract_aligned_pointer_as_index
// CHECK:   %[[ADDR:.*]] = arith.index_castui %{{.*}} : index to i64
// CHECK:   %[[SITE:.*]] = llvm.mlir.addressof @__kiln_emu_site_k_0 : !llvm.ptr
// CHECK:   %[[SLOT:.*]] = llvm.getelementptr %{{.*}}[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK:   %[[HOOK:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK:   llvm.call %[[HOOK]](%[[LANE]], %[[SITE]], %[[ADDR]]) {memory_effects = #llvm.memory_effects<other = none, argMem = read, inaccessibleMem = readwrite
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: vector.load
// CHECK: scf.if %[[ON]] {
// CHECK:   llvm.mlir.addressof @__kiln_emu_site_k_1
// CHECK:   llvm.call
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: vector.store
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<4xf32>
// CHECK-NEXT: scf.if %[[ON]] {
// CHECK:   llvm.mlir.addressof @__kiln_emu_site_k_2
// CHECK:   llvm.call
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: memref.load
// CHECK: scf.if %[[ON]] {
// CHECK:   llvm.mlir.addressof @__kiln_emu_site_k_3
// CHECK:   llvm.call
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: memref.store
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%arg0: memref<64x16xf16, #gpu.address_space<global>>)
        workgroup(%lds0 : memref<64x32xf16, #gpu.address_space<workgroup>>)
        private(%p : memref<4xf32, #gpu.address_space<private>>)
        kernel attributes {kiln.lds_bytes = 4096 : i64} {
      %c0 = arith.constant 0 : index
      %f = arith.constant 1.0 : f32
      %tid = gpu.thread_id x
      %x = vector.load %arg0[%tid, %c0] : memref<64x16xf16, #gpu.address_space<global>>, vector<4xf16>
      vector.store %x, %lds0[%tid, %c0] : memref<64x32xf16, #gpu.address_space<workgroup>>, vector<4xf16>
      memref.store %f, %p[%c0] : memref<4xf32, #gpu.address_space<private>>
      %y = memref.load %lds0[%c0, %tid] : memref<64x32xf16, #gpu.address_space<workgroup>>
      memref.store %y, %arg0[%tid, %c0] : memref<64x16xf16, #gpu.address_space<global>>
      gpu.return
    }
  }
}
