// RUN: kiln-opt %s -split-input-file --kiln-gpu-lower-math | FileCheck %s
//
// No math op may reach convert-gpu-to-rocdl, which would call ROCm's device
// libraries (__ocml_*): the ops the AMDGPU backend expands itself become
// calls of their LLVM intrinsics (with the type's overload suffix), the
// others polynomials built from those and arith.

// CHECK-LABEL: func @native
// CHECK-SAME: (%[[X:.*]]: f32, %[[V:.*]]: vector<4xf32>, %[[H:.*]]: f16)
// CHECK-DAG: llvm.call_intrinsic "llvm.sqrt.v4f32"(%[[V]]) : (vector<4xf32>) -> vector<4xf32>
// CHECK-DAG: llvm.call_intrinsic "llvm.floor.f16"(%[[H]]) : (f16) -> f16
// CHECK-DAG: llvm.call_intrinsic "llvm.fabs.f32"(%[[X]]) : (f32) -> f32
// rsqrt is 1 / sqrt.
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[S:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%[[X]]) : (f32) -> f32
// CHECK-DAG: arith.divf %[[ONE]], %[[S]] : f32
// CHECK-NOT: math.
// CHECK: return
func.func @native(%x: f32, %v: vector<4xf32>, %h: f16) -> (vector<4xf32>, f16, f32, f32) {
  %0 = math.sqrt %v : vector<4xf32>
  %1 = math.floor %h : f16
  %2 = math.rsqrt %x : f32
  %3 = math.absf %x : f32
  return %0, %1, %2, %3 : vector<4xf32>, f16, f32, f32
}

// -----

// tanh, erf and powf have no intrinsic the backend expands: they become
// polynomials (with fma and floor intrinsics), no math op left.
// CHECK-LABEL: func @approximated
// CHECK-NOT: math.
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK-NOT: math.
// CHECK: return
func.func @approximated(%x: f32, %y: f32) -> (f32, f32, f32) {
  %0 = math.tanh %x : f32
  %1 = math.erf %x : f32
  %2 = math.powf %x, %y : f32
  return %0, %1, %2 : f32, f32, f32
}

// -----

// f32 erf is the cpu's rational function (codegen/common/Erf.cpp): x clamped
// to [-3.925, 3.925], five FMAs for each polynomial of x^2, one division,
// the result clamped to [-1, 1]; not MLIR's three intervals of selects.
// CHECK-LABEL: func @erf
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: arith.cmpf olt
// CHECK: %[[X:.*]] = arith.select
// CHECK: %[[T:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-COUNT-5: llvm.call_intrinsic "llvm.fma.f32"({{.*}}, %[[T]], {{.*}})
// CHECK: %[[P:.*]] = arith.mulf %[[X]], {{.*}} : f32
// CHECK-COUNT-5: llvm.call_intrinsic "llvm.fma.f32"({{.*}}, %[[T]], {{.*}})
// CHECK: arith.divf %[[P]], {{.*}} : f32
// CHECK-COUNT-2: arith.select
// CHECK-NOT: arith.select
// CHECK: return
func.func @erf(%x: f32) -> f32 {
  %0 = math.erf %x : f32
  return %0 : f32
}

// -----

// Integer math has no device-library call: left alone.
// CHECK-LABEL: func @integer
// CHECK: math.absi %{{.*}} : i32
func.func @integer(%i: i32) -> i32 {
  %0 = math.absi %i : i32
  return %0 : i32
}
