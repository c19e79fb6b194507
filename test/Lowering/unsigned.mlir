// RUN: kiln-opt --kiln-lower-to-linalg -split-input-file %s | FileCheck %s

// Unsigned tensors lower to signless ones of the same width (the signature
// too); the signedness is in the arith ops chosen, and no cast is left.
// CHECK-LABEL: func @div_mod_max_min
// CHECK-SAME: (%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>)
// CHECK-NOT: ui8
// CHECK-NOT: unrealized_conversion_cast
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4xi8>)
// CHECK:   arith.divui %{{.*}}, %{{.*}} : i8
// CHECK: linalg.generic
// CHECK:   arith.remui %{{.*}}, %{{.*}} : i8
// CHECK-NEXT: linalg.yield
// CHECK: linalg.generic
// CHECK:   arith.maxui %{{.*}}, %{{.*}} : i8
// CHECK: linalg.generic
// CHECK:   arith.minui %{{.*}}, %{{.*}} : i8
// CHECK-NOT: unrealized_conversion_cast
func.func @div_mod_max_min(%a: tensor<4xui8>, %b: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>) {
  %0 = kiln.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = kiln.mod %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %2 = kiln.max %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %3 = kiln.min %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0, %1, %2, %3 : tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>
}

// -----

// Unsigned comparisons; signed ones keep their predicates.
// CHECK-LABEL: func @compare
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK: arith.cmpi uge, %{{.*}}, %{{.*}} : i32
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i32
func.func @compare(%a: tensor<4xui32>, %b: tensor<4xui32>, %c: tensor<4xi32>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.less %a, %b : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
  %1 = kiln.greater_equal %a, %b : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
  %2 = kiln.less %c, %c : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// Casts from unsigned zero-extend and use uitofp; to unsigned, fptoui; the
// same width is a reinterpretation (no op).
// CHECK-LABEL: func @casts
// CHECK-SAME: (%[[U:.*]]: tensor<4xi16>, %[[F:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<4xi16>)
// CHECK: arith.uitofp %{{.*}} : i16 to f32
// CHECK: arith.extui %{{.*}} : i16 to i64
// CHECK: arith.fptoui %{{.*}} : f32 to i32
// CHECK: arith.extsi %{{.*}} : i16 to i64
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<4xi16>) outs(%{{.*}} : tensor<4xi16>)
// CHECK-NEXT: ^bb0(%[[SS:.*]]: i16, %{{.*}}: i16):
// CHECK-NEXT: linalg.yield %[[SS]] : i16
func.func @casts(%u: tensor<4xui16>, %f: tensor<4xf32>, %s: tensor<4xi16>) -> (tensor<4xf32>, tensor<4xi64>, tensor<4xui32>, tensor<4xui64>, tensor<4xui16>) {
  %0 = kiln.cast %u : tensor<4xui16> to tensor<4xf32>
  %1 = kiln.cast %u : tensor<4xui16> to tensor<4xi64>
  %2 = kiln.cast %f : tensor<4xf32> to tensor<4xui32>
  %3 = kiln.cast %s : tensor<4xi16> to tensor<4xui64>
  %4 = kiln.cast %s : tensor<4xi16> to tensor<4xui16>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xi64>, tensor<4xui32>, tensor<4xui64>, tensor<4xui16>
}

// -----

// Shifts: logical right shift for unsigned; a shift by the width or more
// gives 0.
// CHECK-LABEL: func @shifts
// CHECK: %[[L:.*]] = arith.shli %[[X:.*]], %[[Y:.*]] : i16
// CHECK: %[[W:.*]] = arith.constant 16 : i16
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[Y]], %[[W]] : i16
// CHECK: arith.select %[[OK]], %[[L]], %{{.*}} : i16
// CHECK: arith.shrui %{{.*}}, %{{.*}} : i16
// CHECK: arith.shrsi %{{.*}}, %{{.*}} : i16
// Xor on integers is bitwise.
// CHECK: arith.xori %{{.*}}, %{{.*}} : i16
func.func @shifts(%a: tensor<4xui16>, %b: tensor<4xui16>, %c: tensor<4xi16>) -> (tensor<4xui16>, tensor<4xui16>, tensor<4xi16>, tensor<4xui16>) {
  %0 = kiln.shift_left %a, %b : (tensor<4xui16>, tensor<4xui16>) -> tensor<4xui16>
  %1 = kiln.shift_right %a, %b : (tensor<4xui16>, tensor<4xui16>) -> tensor<4xui16>
  %2 = kiln.shift_right %c, %c : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  %3 = kiln.xor %a, %b : (tensor<4xui16>, tensor<4xui16>) -> tensor<4xui16>
  return %0, %1, %2, %3 : tensor<4xui16>, tensor<4xui16>, tensor<4xi16>, tensor<4xui16>
}

// -----

// Integer pow is binary exponentiation unrolled over the exponent's bits
// (no math.ipowi): a select of the product per bit, the base squared in
// between. A signed exponent's negative values are handled after the loop.
// CHECK-LABEL: func @integer_pow
// CHECK: linalg.generic
// CHECK-NOT: math.ipowi
// CHECK: %[[ONE:.*]] = arith.constant 1 : i8
// CHECK: %[[BIT0:.*]] = arith.andi %[[Y:.*]], %{{.*}} : i8
// CHECK: %[[SET0:.*]] = arith.cmpi ne, %[[BIT0]], %{{.*}} : i8
// CHECK: %[[P0:.*]] = arith.muli %[[ONE]], %[[X:.*]] : i8
// CHECK: %[[R0:.*]] = arith.select %[[SET0]], %[[P0]], %[[ONE]] : i8
// CHECK: %[[X2:.*]] = arith.muli %[[X]], %[[X]] : i8
// CHECK: arith.constant -128 : i8
// CHECK-NOT: arith.cmpi slt
// CHECK: linalg.yield
// CHECK: linalg.generic
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// CHECK-NOT: math.ipowi
func.func @integer_pow(%a: tensor<4xui8>, %b: tensor<4xui8>, %c: tensor<4xi32>) -> (tensor<4xui8>, tensor<4xi32>) {
  %0 = kiln.pow %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %1 = kiln.pow %c, %c : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1 : tensor<4xui8>, tensor<4xi32>
}

// -----

// Abs and Relu of unsigned values are the identity; Sign is x > 0 (unsigned);
// Clip bounds saturate to the unsigned range.
// CHECK-LABEL: func @unary
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:.*]]: i8, %{{.*}}: i8):
// CHECK-NEXT: linalg.yield %[[X]] : i8
// CHECK: linalg.generic
// CHECK: arith.cmpi ugt
// CHECK: linalg.generic
// CHECK: %[[LO:.*]] = arith.constant 0 : i8
// CHECK: arith.maxui %{{.*}}, %[[LO]] : i8
// CHECK: %[[HI:.*]] = arith.constant -56 : i8
// CHECK: arith.minui %{{.*}}, %[[HI]] : i8
func.func @unary(%a: tensor<4xui8>) -> (tensor<4xui8>, tensor<4xui8>, tensor<4xui8>) {
  %0 = kiln.abs %a : tensor<4xui8>
  %1 = kiln.sign %a : tensor<4xui8>
  %2 = kiln.clip %a {min = -3.0 : f64, max = 200.0 : f64} : tensor<4xui8>
  return %0, %1, %2 : tensor<4xui8>, tensor<4xui8>, tensor<4xui8>
}

// -----

// Unsigned constants become signless ones with the same bits.
// CHECK-LABEL: func @constant
// CHECK: arith.constant dense<[1, -1]> : tensor<2xi8>
func.func @constant() -> tensor<2xui8> {
  %0 = kiln.constant dense<[1, 255]> : tensor<2xui8>
  return %0 : tensor<2xui8>
}
