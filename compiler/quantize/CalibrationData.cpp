//===- CalibrationData.cpp - calibration samples and tables ---------------===//

#include "quantize/CalibrationData.h"

#include "kiln/support/Npy.h"
#include "kiln/support/TensorUtil.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <nlohmann/json.hpp>
#include <zip.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

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

} // namespace

bool quantize::parseNpz(const void *data, size_t size, const std::string &path,
                        const std::vector<kiln_tensor_info_t> &inputs, Sample &sample,
                        std::string &error) {
  zip_error_t z;
  zip_error_init(&z);
  zip_source_t *source = zip_source_buffer_create(data, size, /*freep=*/0, &z);
  zip_t *archive = source ? zip_open_from_source(source, ZIP_RDONLY, &z) : nullptr;
  if (!archive) {
    error = path + ": not a readable .npz (zip) archive: " + zip_error_strerror(&z);
    zip_error_fini(&z);
    if (source)
      zip_source_free(source);
    return false;
  }
  zip_error_fini(&z);
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
    if (zip_stat_index(archive, index, 0, &stat) != 0 || !(stat.valid & ZIP_STAT_SIZE)) {
      error = path + ": member '" + member + "' has no readable size";
      return false;
    }
    // The size comes from the archive, which may claim anything: nothing
    // larger than the input's data and a generous .npy header is read.
    uint64_t expected = kiln_dtype_size(info.dtype);
    for (int64_t r = 0; r < info.rank; ++r)
      expected *= uint64_t(std::max<int64_t>(info.shape[r], 0));
    if (stat.size > expected + (uint64_t(1) << 20)) {
      error = path + ": member '" + member + "' holds " + std::to_string(stat.size) +
              " bytes, more than a .npy of input '" + info.name + "' (" +
              std::to_string(expected) + " bytes of data) can";
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
    if (npz) {
      auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                                /*RequiresNullTerminator=*/false);
      if (!buffer) {
        error = path + ": " + buffer.getError().message();
        return false;
      }
      if (!parseNpz((*buffer)->getBufferStart(), (*buffer)->getBufferSize(), path, inputs,
                    sample, error))
        return false;
    } else if (!readFolder(path, inputs, sample, error)) {
      return false;
    }
    samples.push_back(std::move(sample));
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Tables
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
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = path + ": cannot read the calibration table";
    return false;
  }
  return parseTable((*buffer)->getBuffer().str(), path, table, error);
}

bool quantize::parseTable(const std::string &text, const std::string &path, Table &table,
                          std::string &error) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
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

