// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-gpu-outline-kernels | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-gpu-outline-kernels=chip=gfx1100 | FileCheck %s --check-prefix=GFX1100
//
// Each bufferized dispatch function becomes a gpu.func kernel of one
// gpu.module @kernels for the chip (code object v5), with its known block
// and grid sizes; kernel arguments move to the global address space,
// allocas to the private one, workgroup buffers (kiln.workgroup_memory) to
// LDS attributions, and referenced globals into the gpu.module.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK-NOT: func.func @dispatch_0
// CHECK: func.func @host
// CHECK: gpu.module @kernels [#rocdl.target<O = 3, chip = "gfx942", abi = "500">] {
// CHECK: memref.global "private" constant @table : memref<4xf32, #gpu.address_space<global>>
// CHECK: gpu.func @dispatch_0(%[[A:.*]]: memref<256xf32, #gpu.address_space<global>>, %[[OUT:.*]]: memref<256xf32, #gpu.address_space<global>>)
// CHECK-SAME: workgroup(%[[LDS:.*]] : memref<64xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel
// CHECK-SAME: kiln.lds_bytes = 256 : i64
// CHECK-SAME: kiln.workgroup_count = 4 : i64, kiln.workgroup_size = 64 : i64
// CHECK-SAME: known_block_size = array<i32: 64, 1, 1>, known_grid_size = array<i32: 4, 1, 1>
// CHECK: %[[P:.*]] = memref.alloca() : memref<4xf32, #gpu.address_space<private>>
// CHECK: %[[T:.*]] = memref.get_global @table : memref<4xf32, #gpu.address_space<global>>
// CHECK: %[[V:.*]] = memref.subview %[[A]][%{{.*}}] [4] [1] : memref<256xf32, #gpu.address_space<global>> to memref<4xf32, strided<[1], offset: ?>, #gpu.address_space<global>>
// CHECK: memref.copy %[[V]], %[[P]]
// CHECK: memref.copy %[[T]], %[[P]]
// CHECK: memref.store %{{.*}}, %[[LDS]][%{{.*}}] : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.return
// GFX1100: gpu.module @kernels [#rocdl.target<O = 3, chip = "gfx1100", abi = "500">]
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @dispatch_0(%a: memref<256xf32>, %out: memref<256xf32>) attributes {kiln.dispatch, kiln.lds_bytes = 256 : i64, kiln.workgroup_count = 4 : i64, kiln.workgroup_size = 64 : i64} {
  %p = memref.alloca() : memref<4xf32>
  %lds = memref.alloca() {kiln.workgroup_memory} : memref<64xf32>
  %t = memref.get_global @table : memref<4xf32>
  %tid = gpu.thread_id x
  %v = memref.subview %a[%tid] [4] [1] : memref<256xf32> to memref<4xf32, strided<[1], offset: ?>>
  memref.copy %v, %p : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
  memref.copy %t, %p : memref<4xf32> to memref<4xf32>
  %c0 = arith.constant 0 : index
  %x = memref.load %p[%c0] : memref<4xf32>
  memref.store %x, %lds[%tid] : memref<64xf32>
  return
}
func.func @host(%a: memref<4xf32>) {
  return
}

// -----

// expected-error @+1 {{expected a bufferized dispatch function without results}}
func.func @results(%a: memref<4xf32>) -> memref<4xf32> attributes {kiln.dispatch, kiln.workgroup_count = 1 : i64, kiln.workgroup_size = 64 : i64} {
  return %a : memref<4xf32>
}

// -----

// expected-error @+1 {{dispatch function was not distributed to gfx threads}}
func.func @not_distributed(%a: memref<4xf32>) attributes {kiln.dispatch} {
  return
}
