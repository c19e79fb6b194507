//===- PostTraining.cpp - kiln-compile --quantize -------------------------===//

#include "quantize/PostTraining.h"

#include "kiln/Dialect/KilnDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <fstream>

using namespace mlir;
using namespace kiln;
using namespace kiln::quantize;

PostTrainingState::~PostTrainingState() {
  if (!floatArtifact.empty())
    llvm::sys::fs::remove(floatArtifact);
}

namespace {

/// A new temporary file name for an artifact (the file exists, empty).
bool temporaryArtifact(const char *prefix, std::string &path, std::string &error) {
  llvm::SmallString<256> name;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(prefix, "kiln", name)) {
    error = std::string("cannot create a temporary file: ") + ec.message();
    return false;
  }
  path = std::string(name);
  return true;
}

/// Imports the model with `importOptions` and compiles it for this host's
/// CPU into `path`. The module's observed tensors go to `observed`.
bool compileForHost(MLIRContext &context, const std::string &modelPath,
                    const onnx_import::ImportOptions &importOptions,
                    const driver::CompileOptions &base, bool quantizeWeights,
                    const std::string &path, std::vector<std::string> *observed) {
  OwningOpRef<ModuleOp> module = onnx_import::importOnnxFile(context, modelPath, importOptions);
  if (!module || failed(verify(*module)))
    return false;
  if (observed)
    if (auto names = (*module)->getAttrOfType<ArrayAttr>(kObservedTensorsAttr))
      for (auto name : names.getAsValueRange<StringAttr>())
        observed->push_back(name.str());
  driver::CompileOptions options;
  options.stopAfter = driver::Stage::Artifact;
  options.targets = {driver::TargetSpec{"cpu", nullptr}};
  options.cpu = base.cpu;
  options.cpu.cpu = "host"; // it runs here
  options.modelPath = modelPath;
  options.quantizeWeights = quantizeWeights;
  std::vector<driver::StageOutput> outputs;
  return succeeded(driver::compile(module, options, path, outputs));
}

bool openSession(const std::string &path, Session &session, std::string &error) {
  Artifact artifact;
  Device device;
  Status status = Artifact::open(path, artifact);
  if (status.ok())
    status = Device::create("cpu", 0, device);
  if (status.ok())
    status = Session::create(device, artifact, nullptr, session);
  if (!status.ok()) {
    error = path + ": " + status.message();
    return false;
  }
  return true;
}

/// The inputs of the artifact at `path`, which `artifact` keeps open (the
/// infos point into it).
std::vector<kiln_tensor_info_t> artifactInputs(const std::string &path, Artifact &artifact) {
  if (!Artifact::open(path, artifact).ok())
    return {};
  return artifact.inputs();
}

int64_t fileBytes(const std::string &path) {
  uint64_t size = 0;
  if (llvm::sys::fs::file_size(path, size))
    return -1;
  return static_cast<int64_t>(size);
}

} // namespace

bool quantize::prepare(MLIRContext &context, onnx_import::ImportOptions &importOptions,
                       const driver::CompileOptions &base, const PostTrainingOptions &options,
                       PostTrainingState &state, std::string &error) {
  importOptions.quantizeExclude.assign(options.exclude.begin(), options.exclude.end());
  std::vector<Sample> calibration;
  if (!options.calibrationDir.empty()) {
    // The float model, with every activation to quantize as an output.
    onnx_import::ImportOptions observe = importOptions;
    observe.observeQuantizable = true;
    if (!temporaryArtifact("kiln-float", state.floatArtifact, error))
      return false;
    std::vector<std::string> observed;
    if (!compileForHost(context, options.modelPath, observe, base, false, state.floatArtifact,
                        &observed)) {
      error.clear(); // the diagnostics said it
      return false;
    }
    state.floatArtifactBytes = fileBytes(state.floatArtifact);
    Artifact open;
    std::vector<kiln_tensor_info_t> inputs = artifactInputs(state.floatArtifact, open);
    if (!readSamples(options.calibrationDir, inputs, calibration, error))
      return false;
    if (!options.validationDir.empty()) {
      if (!readSamples(options.validationDir, inputs, state.validation, error))
        return false;
    } else if (calibration.size() >= 2) {
      // Hold back the last fifth (at least one sample) for validation.
      size_t held = std::max<size_t>(1, calibration.size() / 5);
      state.validation.assign(calibration.end() - held, calibration.end());
      calibration.resize(calibration.size() - held);
    }
    Session session;
    if (!openSession(state.floatArtifact, session, error))
      return false;
    CalibrationOptions calibrate = options.calibration;
    if (options.progress)
      calibrate.progress = [&](size_t sample, size_t count, int pass) {
        llvm::errs() << "\rcalibration: " << (calibrate.method == Method::MinMax ? "" : (pass == 1 ? "pass 1/2, " : "pass 2/2, "))
                     << "sample " << sample + 1 << "/" << count;
        llvm::errs().flush();
      };
    bool ok = quantize::calibrate(session, observed, calibration, calibrate, state.table, error);
    if (options.progress)
      llvm::errs() << "\n";
    if (!ok)
      return false;
    state.table.model = llvm::sys::path::filename(options.modelPath).str();
    if (!writeTable(state.table, options.tablePath, error))
      return false;
    state.quantizableNodes = static_cast<int64_t>(observed.size());
  } else {
    if (!readTable(options.tablePath, state.table, error))
      return false;
    if (!options.validationDir.empty()) {
      if (!temporaryArtifact("kiln-float", state.floatArtifact, error))
        return false;
      if (!compileForHost(context, options.modelPath, importOptions, base, false,
                          state.floatArtifact, nullptr)) {
        error.clear();
        return false;
      }
      state.floatArtifactBytes = fileBytes(state.floatArtifact);
      Artifact open;
      if (!readSamples(options.validationDir, artifactInputs(state.floatArtifact, open),
                       state.validation, error))
        return false;
    }
    state.quantizableNodes = static_cast<int64_t>(state.table.tensors.size());
  }
  importOptions.quantize = true;
  importOptions.quantizeActivations.clear();
  for (const TensorRange &range : state.table.tensors)
    importOptions.quantizeActivations[range.name] = activationQuantization(range);
  return true;
}

std::function<void(llvm::StringRef, Operation *)>
quantize::countIntegerOps(PostTrainingState &state,
                          std::function<void(llvm::StringRef, Operation *)> next) {
  return [&state, next](llvm::StringRef stage, Operation *ir) {
    if (stage == "dispatch") {
      // Once per executable: every variant holds a copy of the dispatch.
      state.integerOps = 0;
      ir->walk([&](ExecutableOp executable) {
        for (VariantOp variant : executable.getOps<VariantOp>()) {
          variant.walk([&](Operation *op) {
            state.integerOps += isa<ConvIntegerOp, MatmulIntegerOp>(op);
          });
          break;
        }
      });
    }
    if (next)
      next(stage, ir);
  };
}

bool quantize::report(MLIRContext &context, const onnx_import::ImportOptions &importOptions,
                      const driver::CompileOptions &base, const PostTrainingOptions &options,
                      PostTrainingState &state, const std::string &artifactPath,
                      std::string &error) {
  llvm::outs() << "quantization: " << state.table.tensors.size()
               << " activations to uint8 (" << methodName(state.table.method) << " ranges over "
               << state.table.samples << " calibration sample"
               << (state.table.samples == 1 ? "" : "s") << "), weights int8 per output channel; "
               << state.integerOps << " integer convolutions and matmuls\n";
  if (!options.calibrationDir.empty())
    llvm::outs() << "calibration table: " << options.tablePath << "\n";
  std::vector<OutputReport> outputs;
  if (!state.validation.empty()) {
    // The quantized model on this CPU: the artifact's own code when it has
    // cpu code, else a cpu build of the same quantized model.
    bool hasCpu = llvm::any_of(base.targets, [](const driver::TargetSpec &t) { return !t.gfx; });
    std::string quantizedPath = artifactPath, temporary;
    if (!hasCpu || base.cpu.cpu != "host") {
      if (!temporaryArtifact("kiln-quantized", temporary, error))
        return false;
      quantizedPath = temporary;
      if (!compileForHost(context, options.modelPath, importOptions, base, true, temporary,
                          nullptr)) {
        llvm::sys::fs::remove(temporary);
        error.clear();
        return false;
      }
    }
    Session reference, quantized;
    bool ok = openSession(state.floatArtifact, reference, error) &&
              openSession(quantizedPath, quantized, error) &&
              compareOutputs(reference, quantized, state.validation, outputs, error);
    if (!temporary.empty())
      llvm::sys::fs::remove(temporary);
    if (!ok)
      return false;
    llvm::outs() << "validation on " << state.validation.size() << " sample"
                 << (state.validation.size() == 1 ? "" : "s") << " not used for calibration"
                 << " (float vs int8, on this CPU):\n";
    for (const OutputReport &r : outputs) {
      llvm::outs() << "  output '" << r.name << "': cosine "
                   << llvm::format("%.6f", r.cosine) << " (worst sample), max abs error "
                   << llvm::format("%.6g", r.maxAbsError);
      if (r.top1Agree >= 0)
        llvm::outs() << ", top-1 agreement " << r.top1Agree << "/" << r.top1Total;
      llvm::outs() << "\n";
    }
  } else {
    llvm::outs() << "validation: no samples held back (give --validation=DIR, or two or more "
                    "calibration samples)\n";
  }
  int64_t bytes = fileBytes(artifactPath);
  llvm::outs() << "artifact: " << bytes << " bytes";
  if (state.floatArtifactBytes > 0)
    llvm::outs() << " (the float model for the cpu alone: " << state.floatArtifactBytes
                 << " bytes)";
  llvm::outs() << "\n";
  if (options.reportPath.empty())
    return true;
  nlohmann::ordered_json j;
  j["model"] = llvm::sys::path::filename(options.modelPath).str();
  j["scheme"] = "int8: uint8 asymmetric activations per tensor, int8 symmetric weights per "
                "output channel";
  j["method"] = methodName(state.table.method);
  j["calibration_samples"] = state.table.samples;
  j["validation_samples"] = state.validation.size();
  j["activations"] = state.table.tensors.size();
  j["integer_ops"] = state.integerOps;
  j["excluded"] = options.exclude;
  nlohmann::ordered_json outs = nlohmann::ordered_json::array();
  for (const OutputReport &r : outputs) {
    nlohmann::ordered_json o;
    o["name"] = r.name;
    o["cosine"] = r.cosine;
    o["max_abs_error"] = r.maxAbsError;
    if (r.top1Agree >= 0)
      o["top1_agreement"] = double(r.top1Agree) / double(std::max<int64_t>(1, r.top1Total));
    outs.push_back(std::move(o));
  }
  j["outputs"] = std::move(outs);
  j["artifact_bytes"] = bytes;
  if (state.floatArtifactBytes > 0)
    j["float_cpu_artifact_bytes"] = state.floatArtifactBytes;
  std::string text = j.dump(2) + "\n";
  std::ofstream out(options.reportPath, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(text.data(), std::streamsize(text.size()))) {
    error = options.reportPath + ": cannot write the report";
    return false;
  }
  return true;
}
