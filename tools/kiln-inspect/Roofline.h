//===- Roofline.h - A roofline picture as SVG -------------------*- C++ -*-===//
//
// Draws estimated kernels on the roofline of their chips: x is arithmetic
// intensity (operations per byte of memory traffic), y operations per
// second, both logarithmic; each chip is a roof (its memory bandwidth
// slope up to its peak) and each kernel a dot in its chip's colour.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_INSPECT_ROOFLINE_H
#define KILN_TOOLS_KILN_INSPECT_ROOFLINE_H

#include <string>
#include <vector>

namespace kiln::inspect {

struct RooflineChip {
  std::string name;      // "MI300X (gfx942)"
  double bandwidth = 0;  // bytes/s
  double peak = 0;       // ops/s of the highest roof drawn
  std::string peakLabel; // "f16 matrix 1307 TFLOP/s"
};

struct RooflinePoint {
  size_t chip = 0; // index into the chips
  std::string label;
  double intensity = 0; // ops per byte
  double rate = 0;      // ops/s, estimated
};

/// The SVG document.
std::string renderRoofline(const std::string &title, const std::vector<RooflineChip> &chips,
                           const std::vector<RooflinePoint> &points);

} // namespace kiln::inspect

#endif // KILN_TOOLS_KILN_INSPECT_ROOFLINE_H
