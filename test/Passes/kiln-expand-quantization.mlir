// RUN: kiln-opt %s --kiln-expand-quantization | FileCheck %s

// quantize: cast(clip(round(x / scale) + float(zero_point))) over the
// integer type's range; dequantize: (float(q) - float(zero_point)) * scale.
// CHECK-LABEL: func.func @expand
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4xf32>, %[[S:[a-z0-9]+]]: tensor<f32>, %[[Z:[a-z0-9]+]]: tensor<i8>, %[[Q:[a-z0-9]+]]: tensor<4xui8>
// CHECK-NEXT: %[[D:.*]] = kiln.div %[[X]], %[[S]]
// CHECK-NEXT: %[[R:.*]] = kiln.round %[[D]]
// CHECK-NEXT: %[[ZF:.*]] = kiln.cast %[[Z]] : tensor<i8> to tensor<f32>
// CHECK-NEXT: %[[A:.*]] = kiln.add %[[R]], %[[ZF]]
// CHECK-NEXT: %[[C:.*]] = kiln.clip %[[A]] {max = 1.270000e+02 : f64, min = -1.280000e+02 : f64}
// CHECK-NEXT: %[[QX:.*]] = kiln.cast %[[C]] : tensor<4xf32> to tensor<4xi8>
// CHECK-NEXT: %[[QF:.*]] = kiln.cast %[[Q]] : tensor<4xui8> to tensor<4xf32>
// CHECK-NEXT: %[[DQ:.*]] = kiln.mul %[[QF]], %[[S]]
// CHECK-NEXT: return %[[QX]], %[[DQ]]
func.func @expand(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<i8>, %q: tensor<4xui8>) -> (tensor<4xi8>, tensor<4xf32>) {
  %0 = kiln.quantize %x, %s zero_point(%z) : (tensor<4xf32>, tensor<f32>, tensor<i8>) -> tensor<4xi8>
  %1 = kiln.dequantize %q, %s : (tensor<4xui8>, tensor<f32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xi8>, tensor<4xf32>
}
