//===- CalibrationData.h - calibration samples and tables -------*- C++ -*-===//
//
// What post-training quantization reads and writes besides the model: the
// calibration and validation samples (folders of .npy files, .npz archives)
// and the calibration table (JSON). No MLIR here: the fuzz targets and unit
// tests link it alone.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_QUANTIZE_CALIBRATIONDATA_H
#define KILN_COMPILER_QUANTIZE_CALIBRATIONDATA_H

#include "kiln/runtime.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kiln::quantize {

enum class Method { MinMax, Percentile, Entropy, Mse };
const char *methodName(Method method);
std::optional<Method> parseMethod(const std::string &name);

/// One set of model inputs, and where it came from (for messages).
struct Sample {
  std::string name;
  std::vector<Tensor> inputs;
};

/// Reads the samples of `dir`: one folder per sample holding one NAME.npy
/// per input of `inputs` (the name as kiln-run writes it), or one NAME.npz
/// per sample keyed by input name, in name order. Each input must match its
/// dtype and shape. False with `error` naming the file and what is wrong.
bool readSamples(const std::string &dir, const std::vector<kiln_tensor_info_t> &inputs,
                 std::vector<Sample> &samples, std::string &error);

/// Parses one .npz archive (numpy.savez or savez_compressed) held in memory
/// into `sample`: one member NAME.npy per input, NAME the input's name or
/// its file-name form. `path` names it in errors. Nothing an archive claims
/// (sizes, offsets, compression) is trusted.
bool parseNpz(const void *data, size_t size, const std::string &path,
              const std::vector<kiln_tensor_info_t> &inputs, Sample &sample,
              std::string &error);

/// What calibration decided for one activation.
struct TensorRange {
  std::string name;
  double min = 0, max = 0; // seen over all samples
  double lo = 0, hi = 0;   // the range quantized
};

struct Table {
  std::string model;
  Method method = Method::MinMax;
  double percentile = 99.999;
  int64_t samples = 0;
  std::vector<TensorRange> tensors;
};

bool writeTable(const Table &table, const std::string &path, std::string &error);
bool readTable(const std::string &path, Table &table, std::string &error);
/// readTable on the text of a table; `path` names it in errors.
bool parseTable(const std::string &text, const std::string &path, Table &table,
                std::string &error);

} // namespace kiln::quantize

#endif // KILN_COMPILER_QUANTIZE_CALIBRATIONDATA_H
