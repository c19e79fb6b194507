// RUN: kiln-opt --kiln-lower-to-linalg -split-input-file %s | FileCheck %s

// CHECK-LABEL: func @transpose
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x2x3xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<2x3x4xf32>) outs(%[[E]] : tensor<4x2x3xf32>) permutation = [2, 0, 1]
// CHECK: return %[[T]]
func.func @transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = kiln.transpose %x {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// Concat: each operand inserted at its offset along the axis.
// CHECK-LABEL: func @concat
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x6xf32>
// CHECK: %[[A:.*]] = tensor.insert_slice %arg0 into %[[E]][0, 0] [2, 1] [1, 1] : tensor<2x1xf32> into tensor<2x6xf32>
// CHECK: %[[B:.*]] = tensor.insert_slice %arg1 into %[[A]][0, 1] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x6xf32>
// CHECK: %[[C:.*]] = tensor.insert_slice %arg2 into %[[B]][0, 4] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x6xf32>
// CHECK: return %[[C]]
func.func @concat(%a: tensor<2x1xf32>, %b: tensor<2x3xf32>, %c: tensor<2x2xf32>) -> tensor<2x6xf32> {
  %0 = kiln.concat %a, %b, %c {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// Positive steps: one strided extract_slice.
// CHECK-LABEL: func @slice
// CHECK: %[[S:.*]] = tensor.extract_slice %arg0[1, 0] [4, 4] [1, 2] : tensor<6x7xf32> to tensor<4x4xf32>
// CHECK-NEXT: return %[[S]]
func.func @slice(%x: tensor<6x7xf32>) -> tensor<4x4xf32> {
  %0 = kiln.slice %x {starts = array<i64: 1, 0>, ends = array<i64: 5, 7>, steps = array<i64: 1, 2>} : tensor<6x7xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Negative steps: a generic over the result reads element
// (5 - 2 i, 2 + j) of the input (rows 5, 3, 1).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @slice_reverse
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID]]], iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : tensor<3x4xf32>)
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: %[[MI:.*]] = arith.muli %[[I]], %c-2
// CHECK: %[[RI:.*]] = arith.addi %[[MI]], %c5
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: %[[MJ:.*]] = arith.muli %[[J]], %c1
// CHECK: %[[RJ:.*]] = arith.addi %[[MJ]], %c2
// CHECK: %[[V:.*]] = tensor.extract %arg0[%[[RI]], %[[RJ]]] : tensor<6x7xf32>
// CHECK: linalg.yield %[[V]]
// CHECK: return %[[R]]
func.func @slice_reverse(%x: tensor<6x7xf32>) -> tensor<3x4xf32> {
  %0 = kiln.slice %x {starts = array<i64: 5, 2>, ends = array<i64: 0, 6>, steps = array<i64: -2, 1>} : tensor<6x7xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Constant padding; negative pads crop first.
// CHECK-LABEL: func @pad_constant
// CHECK: %[[CROP:.*]] = tensor.extract_slice %arg0[1, 0] [3, 3] [1, 1] : tensor<4x5xf32> to tensor<3x3xf32>
// CHECK: %[[V:.*]] = arith.constant 1.500000e+00 : f32
// CHECK: %[[P:.*]] = tensor.pad %[[CROP]] low[0, 1] high[2, 0]
// CHECK:   tensor.yield %[[V]] : f32
// CHECK: } : tensor<3x3xf32> to tensor<5x4xf32>
// CHECK: return %[[P]]
func.func @pad_constant(%x: tensor<4x5xf32>) -> tensor<5x4xf32> {
  %0 = kiln.pad %x {pads = array<i64: -1, 1, 2, -2>, value = 1.5 : f64} : tensor<4x5xf32> -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// CHECK-LABEL: func @pad_int
// CHECK: %[[V:.*]] = arith.constant -3 : i32
// CHECK: tensor.pad %arg0 low[1] high[2]
// CHECK:   tensor.yield %[[V]] : i32
func.func @pad_int(%x: tensor<4xi32>) -> tensor<7xi32> {
  %0 = kiln.pad %x {pads = array<i64: 1, 2>, value = -3.7 : f64} : tensor<4xi32> -> tensor<7xi32>
  return %0 : tensor<7xi32>
}

// -----

// Reflect: per padded dimension, j = i - low, mirrored at both ends, read with
// tensor.extract; the unpadded dimension reads its own index.
// CHECK-LABEL: func @pad_reflect
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<3x9xf32>)
// CHECK:   %[[I0:.*]] = linalg.index 0 : index
// CHECK:   %[[I1:.*]] = linalg.index 1 : index
// CHECK:   %[[J:.*]] = arith.subi %[[I1]], %c2
// CHECK:   %[[NEG:.*]] = arith.cmpi slt, %[[J]], %c0
// CHECK:   %[[MJ:.*]] = arith.subi %c0{{.*}}, %[[J]]
// CHECK:   %[[J1:.*]] = arith.select %[[NEG]], %[[MJ]], %[[J]]
// CHECK:   %[[PAST:.*]] = arith.cmpi sgt, %[[J1]], %c4
// CHECK:   %[[FJ:.*]] = arith.subi %c8, %[[J1]]
// CHECK:   %[[J2:.*]] = arith.select %[[PAST]], %[[FJ]], %[[J1]]
// CHECK:   %[[LO:.*]] = arith.maxsi %[[J2]], %c0
// CHECK:   %[[HI:.*]] = arith.minsi %[[LO]], %c4
// CHECK:   %[[V:.*]] = tensor.extract %arg0[%[[I0]], %[[HI]]] : tensor<3x5xf32>
// CHECK:   linalg.yield %[[V]]
func.func @pad_reflect(%x: tensor<3x5xf32>) -> tensor<3x9xf32> {
  %0 = kiln.pad %x {pads = array<i64: 0, 2, 0, 2>, mode = "reflect"} : tensor<3x5xf32> -> tensor<3x9xf32>
  return %0 : tensor<3x9xf32>
}

// Edge: clamp only.
// CHECK-LABEL: func @pad_edge
// CHECK: linalg.generic
// CHECK:   %[[I:.*]] = linalg.index 0 : index
// CHECK:   %[[J:.*]] = arith.subi %[[I]], %c1
// CHECK-NOT: arith.select
// CHECK:   %[[LO:.*]] = arith.maxsi %[[J]], %c0
// CHECK:   %[[HI:.*]] = arith.minsi %[[LO]], %c3
// CHECK:   tensor.extract %arg0[%[[HI]]] : tensor<4xi8>
func.func @pad_edge(%x: tensor<4xi8>) -> tensor<7xi8> {
  %0 = kiln.pad %x {pads = array<i64: 1, 2>, mode = "edge"} : tensor<4xi8> -> tensor<7xi8>
  return %0 : tensor<7xi8>
}

// -----

// Gather along axis 1: the index tensor is read at the result dimensions it
// occupies, normalized when negative, clamped into [0, 5), and the data is
// read with tensor.extract.
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func @gather
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2x3xi32>) outs(%{{.*}} : tensor<4x2x3x6xf32>)
// CHECK: ^bb0(%[[IN:.*]]: i32, %{{.*}}: f32):
// CHECK:   %[[I:.*]] = arith.index_cast %[[IN]] : i32 to index
// CHECK:   %[[NEG:.*]] = arith.cmpi slt, %[[I]], %c0
// CHECK:   %[[WRAP:.*]] = arith.addi %[[I]], %c5
// CHECK:   %[[N:.*]] = arith.select %[[NEG]], %[[WRAP]], %[[I]]
// CHECK:   %[[LO:.*]] = arith.maxsi %[[N]], %c0
// CHECK:   %[[HI:.*]] = arith.minsi %[[LO]], %c4
// CHECK:   %[[D0:.*]] = linalg.index 0 : index
// CHECK:   %[[D3:.*]] = linalg.index 3 : index
// CHECK:   %[[V:.*]] = tensor.extract %arg0[%[[D0]], %[[HI]], %[[D3]]] : tensor<4x5x6xf32>
// CHECK:   linalg.yield %[[V]]
func.func @gather(%data: tensor<4x5x6xf32>, %idx: tensor<2x3xi32>) -> tensor<4x2x3x6xf32> {
  %0 = kiln.gather %data, %idx {axis = 1 : i64} : (tensor<4x5x6xf32>, tensor<2x3xi32>) -> tensor<4x2x3x6xf32>
  return %0 : tensor<4x2x3x6xf32>
}

// A scalar index removes the axis.
// CHECK-LABEL: func @gather_scalar
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel"]} ins(%arg1 : tensor<i64>) outs(%{{.*}} : tensor<6xf32>)
// CHECK:   tensor.extract %arg0[%{{.*}}, %{{.*}}] : tensor<5x6xf32>
func.func @gather_scalar(%data: tensor<5x6xf32>, %idx: tensor<i64>) -> tensor<6xf32> {
  %0 = kiln.gather %data, %idx {axis = 0 : i64} : (tensor<5x6xf32>, tensor<i64>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// GatherElements: the index read at the result's own position, normalized
// and clamped like Gather's, replaces the axis coordinate of the data read.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @gather_elements
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<3x2xi64>) outs(%{{.*}} : tensor<3x2xf32>)
// CHECK: ^bb0(%[[IN:.*]]: i64, %{{.*}}: f32):
// CHECK:   %[[D0:.*]] = linalg.index 0 : index
// CHECK:   %[[I:.*]] = arith.index_cast %[[IN]] : i64 to index
// CHECK:   %[[NEG:.*]] = arith.cmpi slt, %[[I]], %c0
// CHECK:   %[[WRAP:.*]] = arith.addi %[[I]], %c5
// CHECK:   %[[N:.*]] = arith.select %[[NEG]], %[[WRAP]], %[[I]]
// CHECK:   %[[LO:.*]] = arith.maxsi %[[N]], %c0
// CHECK:   %[[HI:.*]] = arith.minsi %[[LO]], %c4
// CHECK:   %[[V:.*]] = tensor.extract %arg0[%[[D0]], %[[HI]]] : tensor<3x5xf32>
// CHECK:   linalg.yield %[[V]]
func.func @gather_elements(%data: tensor<3x5xf32>, %idx: tensor<3x2xi64>) -> tensor<3x2xf32> {
  %0 = kiln.gather_elements %data, %idx {axis = 1 : i64} : (tensor<3x5xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// ScatterElements: a generic over (result position, update index k along
// the axis), k a reduction loop, whose accumulator starts from the data
// element at k = 0 (the zero fill it is given is never used). The updates
// are also an input, read at (0, k) and unused: that map gives the k loop
// its range. An update combines into the element when its normalized index
// (not clamped: an out of range one matches nothing) is the element's axis
// coordinate.
// CHECK-DAG: #[[P:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-LABEL: func @scatter_elements_add
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[P]], #[[K]], #[[P]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg2 : tensor<3x5xf32>, tensor<3x2xf32>) outs(%[[FILL]] : tensor<3x5xf32>)
// CHECK: ^bb0(%[[DATA:.*]]: f32, %{{.*}}: f32, %[[OUT:.*]]: f32):
// CHECK:   %[[D0:.*]] = linalg.index 0 : index
// CHECK:   %[[K:.*]] = linalg.index 2 : index
// CHECK:   %[[RAW:.*]] = tensor.extract %arg1[%[[D0]], %[[K]]] : tensor<3x2xi64>
// CHECK:   %[[I:.*]] = arith.index_cast %[[RAW]] : i64 to index
// CHECK:   %[[NEG:.*]] = arith.cmpi slt, %[[I]], %c0
// CHECK:   %[[WRAP:.*]] = arith.addi %[[I]], %c5
// CHECK:   %[[T:.*]] = arith.select %[[NEG]], %[[WRAP]], %[[I]]
// CHECK-NOT: arith.minsi
// CHECK:   %[[D1:.*]] = linalg.index 1 : index
// CHECK:   %[[HIT:.*]] = arith.cmpi eq, %[[T]], %[[D1]]
// CHECK:   %[[U:.*]] = tensor.extract %arg2[%[[D0]], %[[K]]] : tensor<3x2xf32>
// CHECK:   %[[FIRST:.*]] = arith.cmpi eq, %[[K]], %c0
// CHECK:   %[[ACC:.*]] = arith.select %[[FIRST]], %[[DATA]], %[[OUT]]
// CHECK:   %[[SUM:.*]] = arith.addf %[[ACC]], %[[U]]
// CHECK:   %[[R:.*]] = arith.select %[[HIT]], %[[SUM]], %[[ACC]]
// CHECK:   linalg.yield %[[R]]
func.func @scatter_elements_add(%data: tensor<3x5xf32>, %idx: tensor<3x2xi64>, %upd: tensor<3x2xf32>) -> tensor<3x5xf32> {
  %0 = kiln.scatter_elements %data, %idx, %upd {axis = 1 : i64, reduction = "add"} : (tensor<3x5xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// Updates smaller than the data outside the axis: columns past them match
// nothing, and their reads are clamped into the updates. Without a
// reduction the update replaces the element.
// CHECK-LABEL: func @scatter_elements_none
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg2 : tensor<4x5xi32>, tensor<2x2xi32>)
// CHECK: ^bb0(%[[DATA:.*]]: i32, %{{.*}}: i32, %[[OUT:.*]]: i32):
// CHECK:   %[[K:.*]] = linalg.index 2 : index
// CHECK:   %[[D1:.*]] = linalg.index 1 : index
// CHECK:   %[[IN:.*]] = arith.cmpi slt, %[[D1]], %c2
// CHECK:   %[[COL:.*]] = arith.minsi %[[D1]], %c1
// CHECK:   %[[RAW:.*]] = tensor.extract %arg1[%[[K]], %[[COL]]] : tensor<2x2xi32>
// CHECK:   %[[D0:.*]] = linalg.index 0 : index
// CHECK:   %[[HIT:.*]] = arith.cmpi eq, %{{.*}}, %[[D0]]
// CHECK:   %[[BOTH:.*]] = arith.andi %[[HIT]], %[[IN]]
// CHECK:   %[[U:.*]] = tensor.extract %arg2[%[[K]], %[[COL]]] : tensor<2x2xi32>
// CHECK:   %[[ACC:.*]] = arith.select %{{.*}}, %[[DATA]], %[[OUT]]
// CHECK:   %[[R:.*]] = arith.select %[[BOTH]], %[[U]], %[[ACC]]
// CHECK:   linalg.yield %[[R]]
func.func @scatter_elements_none(%data: tensor<4x5xi32>, %idx: tensor<2x2xi32>, %upd: tensor<2x2xi32>) -> tensor<4x5xi32> {
  %0 = kiln.scatter_elements %data, %idx, %upd {axis = 0 : i64} : (tensor<4x5xi32>, tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<4x5xi32>
  return %0 : tensor<4x5xi32>
}

// -----

// OneHot: the index (read without the new axis), normalized but not
// clamped, picks values[1] where it equals the position along the axis.
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @one_hot
// CHECK: linalg.generic {indexing_maps = [#[[IDX]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<4xi32>) outs(%{{.*}} : tensor<4x6xf32>)
// CHECK: ^bb0(%[[IN:.*]]: i32, %{{.*}}: f32):
// CHECK:   %[[I:.*]] = arith.index_cast %[[IN]] : i32 to index
// CHECK:   %[[NEG:.*]] = arith.cmpi slt, %[[I]], %c0
// CHECK:   %[[WRAP:.*]] = arith.addi %[[I]], %c6
// CHECK:   %[[N:.*]] = arith.select %[[NEG]], %[[WRAP]], %[[I]]
// CHECK-NOT: arith.minsi
// CHECK:   %[[D1:.*]] = linalg.index 1 : index
// CHECK:   %[[HOT:.*]] = arith.cmpi eq, %[[N]], %[[D1]]
// CHECK:   %[[OFF:.*]] = tensor.extract %arg1[%c0{{.*}}] : tensor<2xf32>
// CHECK:   %[[ON:.*]] = tensor.extract %arg1[%c1{{.*}}] : tensor<2xf32>
// CHECK:   %[[R:.*]] = arith.select %[[HOT]], %[[ON]], %[[OFF]]
// CHECK:   linalg.yield %[[R]]
func.func @one_hot(%idx: tensor<4xi32>, %values: tensor<2xf32>) -> tensor<4x6xf32> {
  %0 = kiln.one_hot %idx, %values {axis = 1 : i64, depth = 6 : i64} : (tensor<4xi32>, tensor<2xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// Expand: a broadcasting copy (of the [3, 1] input with its broadcast unit
// dimension collapsed away).
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func @expand
// CHECK: %[[C:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<3x1xf32> into tensor<3xf32>
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[C]] : tensor<3xf32>) outs(%{{.*}} : tensor<2x3x4xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[X]] : f32
func.func @expand(%x: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = kiln.expand %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Constant padding of an unsigned tensor (uint8 activations padded with
// their zero point) pads its signless bits: 200 is the byte -56. Edge
// padding only moves elements.
// CHECK-LABEL: func @pad_unsigned
// CHECK: %[[V:.*]] = arith.constant -56 : i8
// CHECK: tensor.pad %arg0 low[1] high[1]
// CHECK: tensor.yield %[[V]] : i8
// CHECK: } : tensor<4xi8> to tensor<6xi8>
func.func @pad_unsigned(%x: tensor<4xui8>) -> (tensor<6xui8>, tensor<6xui8>) {
  %0 = kiln.pad %x {pads = array<i64: 1, 1>, value = 200.0} : tensor<4xui8> -> tensor<6xui8>
  %1 = kiln.pad %x {pads = array<i64: 1, 1>, mode = "edge"} : tensor<4xui8> -> tensor<6xui8>
  return %0, %1 : tensor<6xui8>, tensor<6xui8>
}

// -----

// The a x a windows of one source stepping by m along its last two
// dimensions, concatenated in row-major window order (kiln-winograd-convs'
// tile gather), are one gather generic, collapsed to the concat's shape.
// CHECK-DAG: #[[GATHER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d2, d3, d4 * 2 + d0, d5 * 2 + d1)>
// CHECK-LABEL: func.func @window_gather
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[GATHER]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : tensor<1x3x6x6xf32>) outs({{.*}} : tensor<2x2x1x3x2x2xf32>)
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[G]] {{\[}}[0, 1, 2], [3], [4], [5]] : tensor<2x2x1x3x2x2xf32> into tensor<4x3x2x2xf32>
// CHECK-NOT: tensor.insert_slice
// CHECK: return %[[C]]
func.func @window_gather(%x: tensor<1x3x6x6xf32>) -> tensor<4x3x2x2xf32> {
  %s0 = kiln.slice %x {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 3, 3, 3>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x3x6x6xf32> -> tensor<1x3x2x2xf32>
  %s1 = kiln.slice %x {starts = array<i64: 0, 0, 0, 1>, ends = array<i64: 1, 3, 3, 4>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x3x6x6xf32> -> tensor<1x3x2x2xf32>
  %s2 = kiln.slice %x {starts = array<i64: 0, 0, 1, 0>, ends = array<i64: 1, 3, 4, 3>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x3x6x6xf32> -> tensor<1x3x2x2xf32>
  %s3 = kiln.slice %x {starts = array<i64: 0, 0, 1, 1>, ends = array<i64: 1, 3, 4, 4>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x3x6x6xf32> -> tensor<1x3x2x2xf32>
  %c = kiln.concat %s0, %s1, %s2, %s3 {axis = 0 : i64} : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) -> tensor<4x3x2x2xf32>
  return %c : tensor<4x3x2x2xf32>
}

// -----

// The same windows in another order: inserted slices.
// CHECK-LABEL: func.func @windows_out_of_order
// CHECK-COUNT-4: tensor.insert_slice
func.func @windows_out_of_order(%x: tensor<1x3x6x6xf32>) -> tensor<4x3x2x2xf32> {
  %s0 = kiln.slice %x {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 3, 3, 3>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x3x6x6xf32> -> tensor<1x3x2x2xf32>
  %s1 = kiln.slice %x {starts = array<i64: 0, 0, 0, 1>, ends = array<i64: 1, 3, 3, 4>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x3x6x6xf32> -> tensor<1x3x2x2xf32>
  %s2 = kiln.slice %x {starts = array<i64: 0, 0, 1, 0>, ends = array<i64: 1, 3, 4, 3>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x3x6x6xf32> -> tensor<1x3x2x2xf32>
  %s3 = kiln.slice %x {starts = array<i64: 0, 0, 1, 1>, ends = array<i64: 1, 3, 4, 4>, steps = array<i64: 1, 1, 2, 2>} : tensor<1x3x6x6xf32> -> tensor<1x3x2x2xf32>
  %c = kiln.concat %s1, %s0, %s2, %s3 {axis = 0 : i64} : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) -> tensor<4x3x2x2xf32>
  return %c : tensor<4x3x2x2xf32>
}
