//===- Calibration.cpp - post-training quantization: data and ranges ------===//

#include "quantize/Calibration.h"

#include "kiln/Dialect/KilnDialect.h"
#include "kiln/support/Npy.h"
#include "kiln/support/TensorUtil.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <nlohmann/json.hpp>
#include <zip.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

using namespace kiln;
using namespace kiln::quantize;

const char *quantize::methodName(Method method) {
  switch (method) {
  case Method::MinMax:
    return "minmax";
  case Method::Percentile:
    return "percentile";
  case Method::Entropy:
    return "entropy";
  case Method::Mse:
    return "mse";
  }
  return "minmax";
}

std::optional<Method> quantize::parseMethod(const std::string &name) {
  for (Method m : {Method::MinMax, Method::Percentile, Method::Entropy, Method::Mse})
    if (name == methodName(m))
      return m;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Samples
//===----------------------------------------------------------------------===//

namespace {

/// Checks a sample's tensor against the model input it is for.
bool checkInput(const std::string &where, const kiln_tensor_info_t &info, Tensor &tensor,
                std::string &error) {
  std::vector<int64_t> shape(info.shape, info.shape + info.rank);
  if (tensor.dtype != info.dtype || tensor.shape != shape) {
    error = where + ": input '" + std::string(info.name) + "' is " +
            npy::descriptor(tensor.dtype) + " " + support::shapeString(tensor.shape) +
            ", the model takes " + npy::descriptor(info.dtype) + " " +
            support::shapeString(shape);
    return false;
  }
  tensor.name = info.name;
  return true;
}

/// A sample folder: one NAME.npy per input.
bool readFolder(const std::string &folder, const std::vector<kiln_tensor_info_t> &inputs,
                Sample &sample, std::string &error) {
  for (const kiln_tensor_info_t &info : inputs) {
    llvm::SmallString<256> path(folder);
    llvm::sys::path::append(path, support::sanitizeFileName(info.name) + ".npy");
    Tensor tensor;
    std::string message;
    if (!llvm::sys::fs::exists(path)) {
      error = std::string(path) + ": missing (sample '" + sample.name + "' needs input '" +
              info.name + "')";
      return false;
    }
    if (!npy::read(std::string(path), tensor, message)) {
      error = std::string(path) + ": " + message;
      return false;
    }
    if (!checkInput(std::string(path), info, tensor, error))
      return false;
    sample.inputs.push_back(std::move(tensor));
  }
  return true;
}

/// A sample archive (numpy.savez / savez_compressed): one NAME.npy member
/// per input, NAME the input's name (or its file-name form).
bool readNpz(const std::string &path, const std::vector<kiln_tensor_info_t> &inputs,
             Sample &sample, std::string &error) {
  int code = 0;
  zip_t *archive = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!archive) {
    zip_error_t z;
    zip_error_init_with_code(&z, code);
    error = path + ": not a readable .npz (zip) archive: " + zip_error_strerror(&z);
    zip_error_fini(&z);
    return false;
  }
  llvm::scope_exit close([&] { zip_discard(archive); });
  for (const kiln_tensor_info_t &info : inputs) {
    zip_int64_t index = -1;
    std::string member;
    for (const std::string &candidate :
         {std::string(info.name) + ".npy", support::sanitizeFileName(info.name) + ".npy"}) {
      index = zip_name_locate(archive, candidate.c_str(), 0);
      member = candidate;
      if (index >= 0)
        break;
    }
    if (index < 0) {
      error = path + ": no array '" + std::string(info.name) + "' (sample '" + sample.name +
              "' needs input '" + info.name + "'; the archive holds";
      zip_int64_t count = zip_get_num_entries(archive, 0);
      for (zip_int64_t i = 0; i < count && i < 8; ++i)
        if (const char *name = zip_get_name(archive, i, 0))
          error += std::string(i ? ", '" : " '") + name + "'";
      error += count ? ")" : " nothing)";
      return false;
    }
    zip_stat_t stat;
    zip_stat_init(&stat);
    // Sizes come from the archive: a hostile one may claim anything, so
    // the read below is bounded by what it holds.
    if (zip_stat_index(archive, index, 0, &stat) != 0 || !(stat.valid & ZIP_STAT_SIZE) ||
        stat.size > (uint64_t(1) << 40)) {
      error = path + ": member '" + member + "' has no readable size";
      return false;
    }
    std::vector<char> bytes(stat.size);
    zip_file_t *file = zip_fopen_index(archive, index, 0);
    zip_int64_t got = file ? zip_fread(file, bytes.data(), bytes.size()) : -1;
    std::string reason = !file     ? zip_strerror(archive)
                         : got < 0 ? zip_file_strerror(file)
                                   : "the member is shorter than the archive says";
    if (file)
      zip_fclose(file);
    if (got < 0 || uint64_t(got) != stat.size) {
      error = path + ": cannot read member '" + member + "': " + reason;
      return false;
    }
    Tensor tensor;
    std::string where = path + ":" + member, message;
    if (!npy::parse(bytes.data(), bytes.size(), where, tensor, message)) {
      error = message;
      return false;
    }
    if (!checkInput(where, info, tensor, error))
      return false;
    sample.inputs.push_back(std::move(tensor));
  }
  return true;
}

} // namespace

bool quantize::readSamples(const std::string &dir, const std::vector<kiln_tensor_info_t> &inputs,
                           std::vector<Sample> &samples, std::string &error) {
  std::error_code ec;
  std::vector<std::pair<std::string, bool>> entries; // path, is an .npz
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status))
      continue;
    if (status.type() == llvm::sys::fs::file_type::directory_file)
      entries.push_back({it->path(), false});
    else if (llvm::StringRef(it->path()).ends_with(".npz"))
      entries.push_back({it->path(), true});
  }
  if (ec) {
    error = dir + ": " + ec.message();
    return false;
  }
  if (entries.empty()) {
    error = dir + ": no samples (expected one folder per sample, each holding one NAME.npy "
                  "per model input, or one NAME.npz per sample)";
    return false;
  }
  std::sort(entries.begin(), entries.end());
  for (const auto &[path, npz] : entries) {
    Sample sample;
    sample.name = llvm::sys::path::filename(path).str();
    if (!(npz ? readNpz(path, inputs, sample, error) : readFolder(path, inputs, sample, error)))
      return false;
    samples.push_back(std::move(sample));
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Ranges
//===----------------------------------------------------------------------===//

namespace {

const float *floats(const Tensor &t) { return reinterpret_cast<const float *>(t.data.data()); }

/// The output of `outputs` named `name`, or null.
const Tensor *findOutput(const std::vector<Tensor> &outputs, const std::string &name) {
  for (const Tensor &t : outputs)
    if (t.name == name)
      return &t;
  return nullptr;
}

/// KL(P || Q) of two unnormalized histograms, Q smoothed where P has mass.
double divergence(const std::vector<double> &p, const std::vector<double> &q) {
  double sp = 0, sq = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    sp += p[i];
    sq += q[i];
  }
  if (sp == 0 || sq == 0)
    return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0)
      continue;
    double pi = p[i] / sp, qi = std::max(q[i] / sq, 1e-12);
    kl += pi * std::log(pi / qi);
  }
  return kl;
}

} // namespace

double quantize::threshold(const std::vector<double> &counts, double width, Method method,
                           double percentile, int levels) {
  const int bins = static_cast<int>(counts.size());
  double total = 0;
  for (double c : counts)
    total += c;
  if (total == 0 || bins == 0)
    return 0;
  if (method == Method::Percentile) {
    double target = total * percentile / 100.0, cumulative = 0;
    for (int i = 0; i < bins; ++i) {
      cumulative += counts[i];
      if (cumulative >= target)
        return (i + 1) * width;
    }
    return bins * width;
  }
  if (method == Method::Entropy) {
    // The threshold whose quantized distribution (levels bins, the mass
    // past it clipped into the last bin) is closest to the histogram.
    double best = std::numeric_limits<double>::infinity();
    int bestBins = bins;
    for (int i = std::min(levels, bins); i <= bins; ++i) {
      std::vector<double> p(counts.begin(), counts.begin() + i);
      double outliers = 0;
      for (int j = i; j < bins; ++j)
        outliers += counts[j];
      p.back() += outliers;
      std::vector<double> q(i, 0);
      for (int level = 0; level < levels; ++level) {
        int begin = static_cast<int>(int64_t(level) * i / levels);
        int end = static_cast<int>(int64_t(level + 1) * i / levels);
        double mass = 0;
        int nonzero = 0;
        for (int j = begin; j < end; ++j) {
          mass += counts[j];
          nonzero += counts[j] != 0;
        }
        for (int j = begin; j < end; ++j)
          if (counts[j] != 0)
            q[j] = mass / nonzero;
      }
      double kl = divergence(p, q);
      if (kl < best) {
        best = kl;
        bestBins = i;
      }
    }
    return bestBins * width;
  }
  if (method == Method::Mse) {
    // The threshold with the least expected squared error: rounding inside
    // [0, T] and clipping beyond it, each bin at its centre.
    double best = std::numeric_limits<double>::infinity(), bestT = bins * width;
    for (int i = 1; i <= bins; ++i) {
      double t = i * width, step = t / (levels - 1), error = 0;
      for (int j = 0; j < bins; ++j) {
        if (counts[j] == 0)
          continue;
        double x = (j + 0.5) * width;
        double e = x > t ? x - t : x - std::nearbyint(x / step) * step;
        error += counts[j] * e * e;
      }
      if (error < best) {
        best = error;
        bestT = t;
      }
    }
    return bestT;
  }
  return bins * width;
}

bool quantize::calibrate(Session &session, const std::vector<std::string> &observed,
                         const std::vector<Sample> &samples, const CalibrationOptions &options,
                         Table &table, std::string &error) {
  table.method = options.method;
  table.percentile = options.percentile;
  table.samples = static_cast<int64_t>(samples.size());
  table.tensors.assign(observed.size(), TensorRange());
  for (size_t i = 0; i < observed.size(); ++i) {
    table.tensors[i].name = observed[i];
    table.tensors[i].min = std::numeric_limits<double>::infinity();
    table.tensors[i].max = -std::numeric_limits<double>::infinity();
  }
  bool histograms = options.method != Method::MinMax;
  std::vector<std::vector<double>> counts(observed.size(), std::vector<double>(options.bins, 0));
  std::vector<double> widths(observed.size(), 0);
  for (int pass = 1; pass <= (histograms ? 2 : 1); ++pass) {
    for (size_t s = 0; s < samples.size(); ++s) {
      if (options.progress)
        options.progress(s, samples.size(), pass);
      std::vector<Tensor> outputs;
      Status status = session.run(samples[s].inputs, outputs);
      if (!status.ok()) {
        error = "sample '" + samples[s].name + "': " + status.message();
        return false;
      }
      for (size_t i = 0; i < observed.size(); ++i) {
        const Tensor *t = findOutput(outputs, observed[i]);
        if (!t || t->dtype != KILN_DTYPE_F32) {
          error = "the calibration model has no float32 output '" + observed[i] + "'";
          return false;
        }
        const float *data = floats(*t);
        uint64_t n = t->data.size() / 4;
        TensorRange &range = table.tensors[i];
        if (pass == 1) {
          for (uint64_t k = 0; k < n; ++k) {
            if (!std::isfinite(data[k])) {
              error = "sample '" + samples[s].name + "': tensor '" + observed[i] +
                      "' holds a value that is not finite";
              return false;
            }
            range.min = std::min(range.min, double(data[k]));
            range.max = std::max(range.max, double(data[k]));
          }
        } else {
          double width = widths[i];
          if (width == 0)
            continue;
          std::vector<double> &c = counts[i];
          for (uint64_t k = 0; k < n; ++k) {
            int bin = static_cast<int>(std::fabs(data[k]) / width);
            c[std::min(bin, options.bins - 1)] += 1;
          }
        }
      }
    }
    if (pass == 1)
      for (size_t i = 0; i < observed.size(); ++i) {
        TensorRange &range = table.tensors[i];
        double amax = std::max(std::fabs(range.min), std::fabs(range.max));
        widths[i] = amax / options.bins;
      }
  }
  for (size_t i = 0; i < observed.size(); ++i) {
    TensorRange &range = table.tensors[i];
    if (!histograms || widths[i] == 0) {
      range.lo = std::min(range.min, 0.0);
      range.hi = std::max(range.max, 0.0);
      continue;
    }
    // A tensor that is never negative is quantized over [0, T] (256
    // levels), any other over [-T, T] (128 on each side).
    bool nonNegative = range.min >= 0;
    double t = threshold(counts[i], widths[i], options.method, options.percentile,
                         nonNegative ? 256 : 128);
    range.lo = nonNegative ? 0.0 : -t;
    range.hi = t;
  }
  return true;
}

onnx_import::ImportOptions::Quantization quantize::activationQuantization(const TensorRange &range) {
  onnx_import::ImportOptions::Quantization q;
  double lo = std::min(range.lo, 0.0), hi = std::max(range.hi, 0.0);
  if (!(hi - lo > 1e-30)) { // a tensor that is all zeros
    q.scale = 1;
    q.zeroPoint = 0;
    return q;
  }
  // The float32 scale the kernels use, and the zero point that maps lo to 0.
  q.scale = static_cast<float>((hi - lo) / 255.0);
  q.zeroPoint = static_cast<int64_t>(std::clamp(std::nearbyint(-lo / q.scale), 0.0, 255.0));
  q.isSigned = false;
  return q;
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

bool quantize::writeTable(const Table &table, const std::string &path, std::string &error) {
  nlohmann::ordered_json j;
  j["format"] = "kiln-calibration-table";
  j["version"] = 1;
  j["model"] = table.model;
  j["method"] = methodName(table.method);
  if (table.method == Method::Percentile)
    j["percentile"] = table.percentile;
  j["samples"] = table.samples;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
  for (const TensorRange &r : table.tensors)
    tensors[r.name] = {{"range", {r.lo, r.hi}}, {"min", r.min}, {"max", r.max}};
  j["tensors"] = std::move(tensors);
  std::string text = j.dump(2) + "\n";
  // Written next to its final name and renamed: never half a table.
  std::string temporary = path + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out || !out.write(text.data(), std::streamsize(text.size())) || !out.flush()) {
      error = path + ": cannot write the calibration table";
      std::remove(temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = path + ": cannot write the calibration table: " + std::strerror(errno);
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

bool quantize::readTable(const std::string &path, Table &table, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot read the calibration table";
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string &what) {
    error = path + ": not a Kiln calibration table: " + what;
    return false;
  };
  if (j.is_discarded())
    return bad("not valid JSON");
  // (No exceptions here: every access checks the type it reads first.)
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
      j["format"] != "kiln-calibration-table")
    return bad("\"format\" is not \"kiln-calibration-table\"");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != 1)
    return bad("\"version\" is not 1");
  if (!j.contains("tensors") || !j["tensors"].is_object())
    return bad("no \"tensors\" object");
  if (j.contains("model") && j["model"].is_string())
    table.model = j["model"];
  if (j.contains("method") && j["method"].is_string()) {
    std::optional<Method> m = parseMethod(j["method"]);
    if (!m)
      return bad("unknown \"method\" " + j["method"].dump());
    table.method = *m;
  }
  if (j.contains("samples") && j["samples"].is_number_integer())
    table.samples = j["samples"];
  for (const auto &[name, entry] : j["tensors"].items()) {
    const nlohmann::json *range = entry.is_object() && entry.contains("range") ? &entry["range"] : nullptr;
    if (!range || !range->is_array() || range->size() != 2 || !(*range)[0].is_number() ||
        !(*range)[1].is_number())
      return bad("tensor '" + name + "' has no \"range\": [lo, hi]");
    TensorRange r;
    r.name = name;
    r.lo = (*range)[0];
    r.hi = (*range)[1];
    if (!std::isfinite(r.lo) || !std::isfinite(r.hi) || r.lo > r.hi)
      return bad("tensor '" + name + "' has the range [" + (*range)[0].dump() + ", " +
                 (*range)[1].dump() + "]");
    r.min = entry.contains("min") && entry["min"].is_number() ? double(entry["min"]) : r.lo;
    r.max = entry.contains("max") && entry["max"].is_number() ? double(entry["max"]) : r.hi;
    table.tensors.push_back(std::move(r));
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

bool quantize::compareOutputs(Session &reference, Session &quantized,
                              const std::vector<Sample> &samples,
                              std::vector<OutputReport> &report, std::string &error) {
  report.clear();
  for (const Sample &sample : samples) {
    std::vector<Tensor> expected, actual;
    Status status = reference.run(sample.inputs, expected);
    if (status.ok())
      status = quantized.run(sample.inputs, actual);
    if (!status.ok()) {
      error = "sample '" + sample.name + "': " + status.message();
      return false;
    }
    if (report.empty())
      for (const Tensor &t : actual)
        if (t.dtype == KILN_DTYPE_F32) {
          report.push_back(OutputReport());
          report.back().name = t.name;
        }
    for (OutputReport &r : report) {
      const Tensor *a = findOutput(actual, r.name), *e = findOutput(expected, r.name);
      if (!a || !e || a->data.size() != e->data.size()) {
        error = "output '" + r.name + "' differs in shape between the float and the "
                "quantized model";
        return false;
      }
      const float *x = floats(*a), *y = floats(*e);
      uint64_t n = a->data.size() / 4;
      double dot = 0, xx = 0, yy = 0;
      for (uint64_t k = 0; k < n; ++k) {
        dot += double(x[k]) * y[k];
        xx += double(x[k]) * x[k];
        yy += double(y[k]) * y[k];
        r.maxAbsError = std::max(r.maxAbsError, std::fabs(double(x[k]) - y[k]));
      }
      double cosine = xx == 0 && yy == 0 ? 1.0 : dot / std::sqrt(std::max(xx * yy, 1e-300));
      r.cosine = std::isnan(cosine) || std::isnan(r.cosine) ? NAN : std::min(r.cosine, cosine);
      // Top-1 agreement of a classifier's scores [N, C].
      if (a->shape.size() == 2 && a->shape[1] > 1) {
        int64_t rows = a->shape[0], classes = a->shape[1];
        if (r.top1Agree < 0)
          r.top1Agree = 0;
        for (int64_t row = 0; row < rows; ++row) {
          const float *xr = x + row * classes, *yr = y + row * classes;
          r.top1Agree += std::max_element(xr, xr + classes) - xr ==
                         std::max_element(yr, yr + classes) - yr;
          r.top1Total += 1;
        }
      }
    }
  }
  return true;
}

bool quantize::layerSqnr(Session &session, const std::vector<std::string> &nodes,
                         const std::vector<Sample> &samples, std::vector<LayerReport> &layers,
                         std::string &error) {
  std::vector<double> signal(nodes.size(), 0), noise(nodes.size(), 0);
  for (const Sample &sample : samples) {
    std::vector<Tensor> outputs;
    Status status = session.run(sample.inputs, outputs);
    if (!status.ok()) {
      error = "sample '" + sample.name + "': " + status.message();
      return false;
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Tensor *real = findOutput(outputs, nodes[i] + kiln::kShadowFloatSuffix.str());
      const Tensor *quantized = findOutput(outputs, nodes[i] + kiln::kShadowQuantizedSuffix.str());
      if (!real || !quantized || real->dtype != KILN_DTYPE_F32 ||
          quantized->dtype != KILN_DTYPE_F32 || real->data.size() != quantized->data.size()) {
        error = "node '" + nodes[i] + "': the sensitivity build has no float and quantized "
                "output of it";
        return false;
      }
      const float *y = floats(*real), *q = floats(*quantized);
      for (uint64_t k = 0, n = real->data.size() / 4; k < n; ++k) {
        double d = double(y[k]) - q[k];
        signal[i] += double(y[k]) * y[k];
        noise[i] += std::isfinite(d) ? d * d : std::numeric_limits<double>::infinity();
      }
    }
  }
  layers.clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    LayerReport layer;
    layer.node = nodes[i];
    if (noise[i] == 0)
      layer.sqnr = std::numeric_limits<double>::infinity();
    else if (signal[i] == 0 || !std::isfinite(noise[i]))
      layer.sqnr = -std::numeric_limits<double>::infinity();
    else
      layer.sqnr = 10 * std::log10(signal[i] / noise[i]);
    layers.push_back(std::move(layer));
  }
  return true;
}

double quantize::worstCosine(const std::vector<OutputReport> &report) {
  double worst = 1;
  for (const OutputReport &r : report)
    worst = std::isnan(r.cosine) ? -1 : std::min(worst, r.cosine);
  return worst;
}
