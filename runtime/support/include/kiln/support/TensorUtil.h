//===- TensorUtil.h - Helpers for the runtime tools -------------*- C++ -*-===//
//
// What kiln-run, kiln-bench and the tests share: deterministic random
// inputs, half-precision conversions, output summaries, file name
// sanitizing, strict number parsing and JSON string escaping.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SUPPORT_TENSORUTIL_H
#define KILN_RUNTIME_SUPPORT_TENSORUTIL_H

#include "kiln/runtime.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::support {

float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value); // round to nearest even
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value); // round to nearest even

/// A seed for one input derived from the run's seed and the input's name,
/// so adding an input does not change the values of the others.
uint64_t inputSeed(uint64_t seed, const std::string &name);

/// Fills `tensor.data` (resized to fit dtype and shape) with deterministic
/// values: floats uniform in [-1, 1), integers in [0, 4), bools 0 or 1.
void fillRandom(Tensor &tensor, uint64_t seed);

/// Element `index` as a double.
double elementAsDouble(const Tensor &tensor, uint64_t index);

struct Summary {
  uint64_t count = 0;    // elements
  uint64_t nanCount = 0; // NaNs (not part of min, max and mean)
  double min = 0, max = 0, mean = 0;
};
Summary summarize(const Tensor &tensor);

/// "[4, 8]".
std::string shapeString(const std::vector<int64_t> &shape);

/// A file name for output `name`: characters other than letters, digits,
/// '-', '_' and '.' become '_', and a leading '.' too; "" becomes "output".
std::string sanitizeFileName(const std::string &name);

/// Whole-string decimal parses; false on anything else or overflow.
bool parseUint64(const std::string &text, uint64_t &out);
/// When `arg` starts with `flag` (e.g. "--seed="), stores the rest in `into`.
bool flagValue(const std::string &arg, const char *flag, std::string &into);
bool parseDouble(const std::string &text, double &out);
/// Whether `tensor` holds exactly the values of `list` ("16000",
/// "1,3,224,224", "true"), element by element in row-major order, compared as
/// the tensor's element type would store them (a float32 tensor's 0.1 equals
/// the list's 0.1).
bool equalsValueList(const Tensor &tensor, const std::string &list);

/// `text` as a JSON string literal, quotes included.
std::string jsonString(const std::string &text);

} // namespace kiln::support

#endif // KILN_RUNTIME_SUPPORT_TENSORUTIL_H
