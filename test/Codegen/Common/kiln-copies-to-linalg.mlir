// RUN: kiln-opt %s --kiln-copies-to-linalg | FileCheck %s

// Every memref.copy becomes a linalg.copy with the same source and target
// (strided views included), in any function, nested or not, so that no copy
// is left to lower to a call into MLIR's runner library.
// CHECK-LABEL: func @copies
// CHECK-SAME: (%[[A:.*]]: memref<8x8xf32>, %[[B:.*]]: memref<8x8xf32>, %[[N:.*]]: index)
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%[[A]] : memref<8x8xf32>) outs(%[[B]] : memref<8x8xf32>)
// CHECK: %[[S:.*]] = memref.subview %[[A]][0, 2] [8, 4] [1, 1]
// CHECK: %[[T:.*]] = memref.subview %[[B]][0, 1] [8, 4] [1, 2]
// CHECK: scf.for
// CHECK-NEXT: linalg.copy ins(%[[S]] : memref<8x4xf32, strided<[8, 1], offset: 2>>) outs(%[[T]] : memref<8x4xf32, strided<[8, 2], offset: 1>>)
// CHECK-NOT: memref.copy
func.func @copies(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %n: index) {
  memref.copy %a, %b : memref<8x8xf32> to memref<8x8xf32>
  %s = memref.subview %a[0, 2] [8, 4] [1, 1] : memref<8x8xf32> to memref<8x4xf32, strided<[8, 1], offset: 2>>
  %t = memref.subview %b[0, 1] [8, 4] [1, 2] : memref<8x8xf32> to memref<8x4xf32, strided<[8, 2], offset: 1>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    memref.copy %s, %t : memref<8x4xf32, strided<[8, 1], offset: 2>> to memref<8x4xf32, strided<[8, 2], offset: 1>>
  }
  return
}
