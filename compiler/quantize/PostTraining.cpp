//===- PostTraining.cpp - kiln-compile --quantize -------------------------===//

#include "quantize/PostTraining.h"

#include "kiln/Dialect/KilnDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

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

/// The strings of the module's array attribute `name`.
std::vector<std::string> moduleNames(ModuleOp module, llvm::StringRef name) {
  std::vector<std::string> names;
  if (auto array = module->getAttrOfType<ArrayAttr>(name))
    for (auto s : array.getAsValueRange<StringAttr>())
      names.push_back(s.str());
  return names;
}

/// Imports the model with `importOptions` and compiles it for this host's
/// CPU into `path`. The module's observed tensors go to `observed`, its
/// shadowed nodes (ImportOptions::shadowQuantized) to `shadowed`.
bool compileForHost(MLIRContext &context, const std::string &modelPath,
                    const onnx_import::ImportOptions &importOptions,
                    const driver::CompileOptions &base, bool quantizeWeights,
                    const std::string &path, std::vector<std::string> *observed,
                    std::vector<std::string> *shadowed = nullptr) {
  OwningOpRef<ModuleOp> module = onnx_import::importOnnxFile(context, modelPath, importOptions);
  if (!module || failed(verify(*module)))
    return false;
  if (observed)
    *observed = moduleNames(*module, kObservedTensorsAttr);
  if (shadowed)
    *shadowed = moduleNames(*module, kShadowedNodesAttr);
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

/// Runs the artifacts `referencePath` (float) and `quantizedPath` on
/// `samples` and compares their outputs.
bool compareArtifacts(const std::string &referencePath, const std::string &quantizedPath,
                      const std::vector<Sample> &samples, std::vector<OutputReport> &outputs,
                      std::string &error) {
  Session reference, quantized;
  return openSession(referencePath, reference, error) &&
         openSession(quantizedPath, quantized, error) &&
         compareOutputs(reference, quantized, samples, outputs, error);
}

/// Compiles the model as `importOptions` quantize it for this CPU (into a
/// temporary, removed again) and compares it with the float build on the
/// validation samples.
bool validateBuild(MLIRContext &context, const onnx_import::ImportOptions &importOptions,
                   const driver::CompileOptions &base, const PostTrainingOptions &options,
                   const PostTrainingState &state, std::vector<OutputReport> &outputs,
                   std::string &error) {
  std::string temporary;
  if (!temporaryArtifact("kiln-quantized", temporary, error))
    return false;
  bool ok = compileForHost(context, options.modelPath, importOptions, base, true, temporary,
                           nullptr);
  if (!ok)
    error.clear(); // the diagnostics said it
  else
    ok = compareArtifacts(state.floatArtifact, temporary, state.validation, outputs, error);
  llvm::sys::fs::remove(temporary);
  return ok;
}

/// The accuracy search of --accuracy-target on the sensitivity build
/// `sensitivity` (whose gates are `nodes`, in state.layers' order): ranks the
/// layers by the output cosine (mean over the samples) with each quantized alone (lowest
/// first), finds the fewest of them (doubling, then bisecting) that, kept in
/// float, reach the target with every other layer quantized, quantizes again
/// each of those the target does not need after all, and confirms the set
/// with a real build (adding the next layers until one reaches it). Gated
/// runs cost one run of the samples each, no compile.
bool searchAccuracy(MLIRContext &context, onnx_import::ImportOptions &importOptions,
                    const driver::CompileOptions &base, const PostTrainingOptions &options,
                    PostTrainingState &state, Session &sensitivity,
                    const std::vector<std::string> &nodes, std::string &error) {
  Session reference;
  std::vector<std::vector<Tensor>> expected;
  if (!openSession(state.floatArtifact, reference, error) ||
      !referenceOutputs(reference, state.validation, expected, error))
    return false;
  const size_t count = nodes.size();
  // The worst cosine, or with `mean` the lowest mean over the samples.
  auto gatedCosine = [&](const std::vector<float> &gates, double &cosine, bool mean = false) {
    std::vector<OutputReport> outputs;
    if (!compareGated(sensitivity, nodes, gates, state.validation, expected, outputs, error))
      return false;
    ++state.gatedRuns;
    cosine = mean ? worstMeanCosine(outputs) : worstCosine(outputs);
    return true;
  };
  // Each layer's effect on the outputs, quantized alone.
  for (size_t i = 0; i < count; ++i) {
    if (options.progress) {
      llvm::errs() << "\raccuracy search: layer " << i + 1 << "/" << count << " quantized alone";
      llvm::errs().flush();
    }
    std::vector<float> gates(count, 0.0f);
    gates[i] = 1.0f;
    if (!gatedCosine(gates, state.layers[i].cosineAlone, /*mean=*/true))
      return false;
  }
  if (options.progress && count)
    llvm::errs() << "\n";
  std::vector<size_t> ranked(count);
  for (size_t i = 0; i < count; ++i)
    ranked[i] = i;
  auto effect = [&](size_t i) { // NaN (a broken output) ranks first
    double c = state.layers[i].cosineAlone;
    return std::isnan(c) ? -2.0 : c;
  };
  std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
    if (effect(a) != effect(b))
      return effect(a) < effect(b);
    return state.layers[a].sqnr < state.layers[b].sqnr;
  });
  // The worst cosine with the first `kept` ranked layers in float.
  std::map<size_t, double> cosines;
  auto cosineWith = [&](size_t kept, double &cosine) {
    if (auto it = cosines.find(kept); it != cosines.end()) {
      cosine = it->second;
      return true;
    }
    std::vector<float> gates(count, 1.0f);
    for (size_t i = 0; i < kept; ++i)
      gates[ranked[i]] = 0.0f;
    if (!gatedCosine(gates, cosine))
      return false;
    cosines[kept] = cosine;
    return true;
  };
  const double target = options.accuracyTarget;
  double cosine;
  if (!cosineWith(0, cosine))
    return false;
  state.cosineAllQuantized = cosine;
  size_t good = 0, bad = 0; // cosineWith(good) >= target; bad < good fails
  if (cosine < target) {
    size_t kept = 1;
    for (;;) {
      kept = std::min(kept, count);
      if (!cosineWith(kept, cosine))
        return false;
      if (cosine >= target || kept == count)
        break;
      bad = kept;
      kept *= 2;
    }
    good = kept; // (all of them when even that misses: the real build says)
    while (cosine >= target && good - bad > 1) {
      size_t mid = bad + (good - bad) / 2;
      double c;
      if (!cosineWith(mid, c))
        return false;
      (c >= target ? good : bad) = mid;
    }
  }
  // The layers kept: the prefix, then each of it (least harmful first)
  // quantized again where the target still holds without it. (The ranking
  // measures layers alone; together, some of the prefix is not needed.)
  std::vector<bool> kept(count, false);
  for (size_t i = 0; i < good; ++i)
    kept[ranked[i]] = true;
  auto keptGates = [&] {
    std::vector<float> gates(count, 1.0f);
    for (size_t i = 0; i < count; ++i)
      if (kept[i])
        gates[i] = 0.0f;
    return gates;
  };
  double predicted = cosines[good];
  if (predicted >= target)
    for (size_t r = good; r-- > 0;) {
      kept[ranked[r]] = false;
      double c;
      if (!gatedCosine(keptGates(), c))
        return false;
      if (c >= target)
        predicted = c;
      else
        kept[ranked[r]] = true;
    }
  // The real build, with as many more layers (in rank order) as it takes.
  for (;;) {
    onnx_import::ImportOptions trial = importOptions;
    size_t keptCount = 0;
    for (size_t r = 0; r < count; ++r)
      if (kept[ranked[r]]) {
        trial.quantizeExclude.push_back(nodes[ranked[r]]);
        ++keptCount;
      }
    std::vector<OutputReport> outputs;
    if (!validateBuild(context, trial, base, options, state, outputs, error))
      return false;
    ++state.searchCompiles;
    cosine = worstCosine(outputs);
    if (options.progress)
      llvm::errs() << "accuracy search: " << keptCount << " of " << count
                   << " layers in float: worst cosine " << llvm::format("%.6f", cosine)
                   << " (predicted " << llvm::format("%.6f", predicted) << ")\n";
    if (cosine >= target)
      break;
    auto next = llvm::find_if(ranked, [&](size_t i) { return !kept[i]; });
    if (next == ranked.end()) {
      error = "--accuracy-target=" + std::to_string(target) + ": not reached with every " +
              "quantized layer kept in float (worst cosine " + std::to_string(cosine) +
              "): the float build itself differs that much";
      return false;
    }
    kept[*next] = true;
    if (!gatedCosine(keptGates(), predicted))
      return false;
  }
  state.cosineAfterSearch = cosine;
  for (size_t r = 0; r < count; ++r)
    if (kept[ranked[r]]) {
      state.keptForAccuracy.push_back(nodes[ranked[r]]);
      importOptions.quantizeExclude.push_back(nodes[ranked[r]]);
    }
  return true;
}

/// Each quantized layer's own error: one build where every quantized node
/// also runs from the float activation, run on the validation samples; with
/// an accuracy target, the search runs on the same build.
bool measureLayers(MLIRContext &context, onnx_import::ImportOptions &importOptions,
                   const driver::CompileOptions &base, const PostTrainingOptions &options,
                   PostTrainingState &state, std::string &error) {
  onnx_import::ImportOptions shadow = importOptions;
  shadow.shadowQuantized = true;
  std::string temporary;
  if (!temporaryArtifact("kiln-sensitivity", temporary, error))
    return false;
  std::vector<std::string> nodes;
  if (options.progress)
    llvm::errs() << "sensitivity: compiling every quantized layer beside its float copy\n";
  bool ok = compileForHost(context, options.modelPath, shadow, base, true, temporary, nullptr,
                           &nodes);
  if (!ok) {
    error.clear();
  } else {
    Session session;
    ok = openSession(temporary, session, error) &&
         layerSqnr(session, nodes, state.validation, state.layers, error) &&
         (options.accuracyTarget <= 0 ||
          searchAccuracy(context, importOptions, base, options, state, session, nodes, error));
  }
  llvm::sys::fs::remove(temporary);
  return ok;
}

/// The measured layers, lowest SQNR (where quantization hurts most) first.
std::vector<const LayerReport *> rankedLayers(const PostTrainingState &state) {
  std::vector<const LayerReport *> ranked;
  for (const LayerReport &layer : state.layers)
    ranked.push_back(&layer);
  std::stable_sort(ranked.begin(), ranked.end(), [](const LayerReport *a, const LayerReport *b) {
    return a->sqnr < b->sqnr;
  });
  return ranked;
}

std::string sqnrText(double sqnr) {
  if (std::isinf(sqnr))
    return sqnr > 0 ? "exact" : "-inf dB";
  return llvm::formatv("{0:F1} dB", sqnr).str();
}

int64_t fileBytes(const std::string &path) {
  uint64_t size = 0;
  if (llvm::sys::fs::file_size(path, size))
    return -1;
  return static_cast<int64_t>(size);
}

/// The float model for this CPU (state.floatArtifact, from `importOptions`,
/// which must not quantize) and the --validation samples read against its
/// inputs.
bool floatModelAndValidation(MLIRContext &context,
                             const onnx_import::ImportOptions &importOptions,
                             const driver::CompileOptions &base,
                             const PostTrainingOptions &options, PostTrainingState &state,
                             std::string &error) {
  if (!temporaryArtifact("kiln-float", state.floatArtifact, error))
    return false;
  if (!compileForHost(context, options.modelPath, importOptions, base, false,
                      state.floatArtifact, nullptr)) {
    error.clear(); // the diagnostics said it
    return false;
  }
  state.floatArtifactBytes = fileBytes(state.floatArtifact);
  Artifact open;
  return readSamples(options.validationDir, artifactInputs(state.floatArtifact, open),
                     state.validation, error);
}

} // namespace

bool quantize::prepare(MLIRContext &context, onnx_import::ImportOptions &importOptions,
                       const driver::CompileOptions &base, const PostTrainingOptions &options,
                       PostTrainingState &state, std::string &error) {
  importOptions.quantizeExclude.assign(options.exclude.begin(), options.exclude.end());
  std::vector<Sample> calibration;
  if (options.dynamic) {
    // Ranges at run time: the float model only to validate against.
    importOptions.quantizeDynamic = true;
    onnx_import::ImportOptions real = importOptions;
    real.quantizeDynamic = false;
    if (!options.validationDir.empty() &&
        !floatModelAndValidation(context, real, base, options, state, error))
      return false;
    if (state.validation.empty()) {
      if (options.accuracyTarget > 0) {
        error = "--accuracy-target needs samples to validate on: --validation=DIR";
        return false;
      }
      return true;
    }
    return measureLayers(context, importOptions, base, options, state, error);
  }
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
    if (!options.validationDir.empty() &&
        !floatModelAndValidation(context, importOptions, base, options, state, error))
      return false;
    state.quantizableNodes = static_cast<int64_t>(state.table.tensors.size());
  }
  importOptions.quantize = true;
  importOptions.quantizeActivations.clear();
  for (const TensorRange &range : state.table.tensors)
    importOptions.quantizeActivations[range.name] = activationQuantization(range);
  if (state.validation.empty()) {
    if (options.accuracyTarget > 0) {
      error = "--accuracy-target needs samples to validate on: --validation=DIR, or two or "
              "more --calibration samples (the last fifth is held back)";
      return false;
    }
    return true;
  }
  return measureLayers(context, importOptions, base, options, state, error);
}

std::function<void(llvm::StringRef, Operation *)>
quantize::countIntegerOps(PostTrainingState &state,
                          std::function<void(llvm::StringRef, Operation *)> next) {
  return [&state, next](llvm::StringRef stage, Operation *ir) {
    if (stage == "kiln") {
      // One kiln.quantize per quantized activation, however many read it.
      state.activations = 0;
      ir->walk([&](QuantizeOp) { ++state.activations; });
    }
    if (stage == "dispatch") {
      // Once per executable: every variant holds a copy of the dispatch.
      state.integerOps = 0;
      ir->walk([&](ExecutableOp executable) {
        for (VariantOp variant : executable.getOps<VariantOp>()) {
          variant.walk([&](Operation *op) {
            // (and integer products by weights in column panels)
            auto panels = dyn_cast<MatmulPanelsOp>(op);
            state.integerOps += isa<ConvIntegerOp, MatmulIntegerOp>(op) ||
                                (panels && !isa<FloatType>(panels.getType().getElementType()));
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
  // The report on stdout (not with kiln-compile --quiet; --quant-report still
  // writes the JSON).
  llvm::raw_ostream &summary = options.quiet ? llvm::nulls() : llvm::outs();
  summary << "quantization: " << state.activations << " activations to uint8 ";
  if (options.dynamic)
    summary << "at run time (per tensor, from each run's range)";
  else
    summary << "(" << methodName(state.table.method) << " ranges over " << state.table.samples
            << " calibration sample" << (state.table.samples == 1 ? "" : "s") << ")";
  summary << ", weights int8 per output channel; " << state.integerOps
          << " integer convolutions and matmuls\n";
  if (!options.calibrationDir.empty())
    summary << "calibration table: " << options.tablePath << "\n";
  std::vector<OutputReport> outputs;
  if (!state.validation.empty()) {
    // The quantized model on this CPU: the artifact's own code when it has
    // cpu code, else a cpu build of the same quantized model.
    bool hasCpu = llvm::any_of(base.targets, [](const driver::TargetSpec &t) { return !t.gfx; });
    if (!(hasCpu && base.cpu.cpu == "host"
              ? compareArtifacts(state.floatArtifact, artifactPath, state.validation, outputs,
                                 error)
              : validateBuild(context, importOptions, base, options, state, outputs, error)))
      return false;
    summary << "validation on " << state.validation.size() << " sample"
                 << (state.validation.size() == 1 ? "" : "s")
                 << (options.dynamic ? "" : " not used for calibration")
                 << " (float vs int8, on this CPU):\n";
    for (const OutputReport &r : outputs) {
      summary << "  output '" << r.name << "': cosine "
                   << llvm::format("%.6f", r.cosine) << " (worst sample), max abs error "
                   << llvm::format("%.6g", r.maxAbsError);
      if (r.top1Agree >= 0)
        summary << ", top-1 agreement " << r.top1Agree << "/" << r.top1Total;
      summary << "\n";
    }
  } else {
    summary << (options.dynamic ? "validation: no samples (give --validation=DIR)\n"
                                : "validation: no samples held back (give --validation=DIR, or "
                                  "two or more calibration samples)\n");
  }
  if (!state.layers.empty()) {
    std::vector<const LayerReport *> ranked = rankedLayers(state);
    summary << "per-layer SQNR (each layer's own quantization error, from the float "
                    "model's input; "
                 << ranked.size() << " layers): median " << sqnrText(ranked[ranked.size() / 2]->sqnr)
                 << ", lowest";
    for (size_t i = 0; i < std::min<size_t>(5, ranked.size()); ++i)
      summary << (i ? ", " : " ") << "'" << ranked[i]->node << "' "
                   << sqnrText(ranked[i]->sqnr);
    summary << "\n";
    std::vector<const LayerReport *> alone; // measured by the accuracy search
    for (const LayerReport &layer : state.layers)
      if (state.cosineAfterSearch > -2)
        alone.push_back(&layer);
    if (!alone.empty()) {
      std::stable_sort(alone.begin(), alone.end(), [](const LayerReport *a, const LayerReport *b) {
        auto key = [](const LayerReport *l) {
          return std::isnan(l->cosineAlone) ? -2.0 : l->cosineAlone;
        };
        return key(a) < key(b);
      });
      summary << "effect on the outputs (mean cosine with only that layer quantized): lowest";
      for (size_t i = 0; i < std::min<size_t>(5, alone.size()); ++i)
        summary << (i ? ", " : " ") << "'" << alone[i]->node << "' "
                << llvm::format("%.6f", alone[i]->cosineAlone);
      summary << "\n";
    }
  }
  if (state.cosineAfterSearch > -2) {
    summary << "accuracy target " << llvm::format("%g", options.accuracyTarget)
                 << ": worst cosine " << llvm::format("%.6f", state.cosineAllQuantized)
                 << " with every layer quantized";
    if (state.keptForAccuracy.empty())
      summary << ", met without keeping any in float";
    else {
      summary << "; " << state.keptForAccuracy.size()
              << " kept in float (largest effect on the outputs first; " << state.gatedRuns
              << " gated runs, " << state.searchCompiles << " trial build"
              << (state.searchCompiles == 1 ? "" : "s") << ") reach "
              << llvm::format("%.6f", state.cosineAfterSearch) << ":";
      for (size_t i = 0; i < state.keptForAccuracy.size(); ++i)
        summary << (i ? ", '" : " '") << state.keptForAccuracy[i] << "'";
    }
    summary << "\n";
  }
  int64_t bytes = fileBytes(artifactPath);
  summary << "artifact: " << bytes << " bytes";
  if (state.floatArtifactBytes > 0)
    summary << " (the float model for the cpu alone: " << state.floatArtifactBytes
                 << " bytes)";
  summary << "\n";
  if (options.reportPath.empty())
    return true;
  nlohmann::ordered_json j;
  j["model"] = llvm::sys::path::filename(options.modelPath).str();
  if (options.dynamic) {
    j["scheme"] = "int8-dynamic: uint8 asymmetric activations per tensor from each run's "
                  "range, int8 symmetric weights per output channel";
    j["method"] = "dynamic";
    j["calibration_samples"] = 0;
  } else {
    j["scheme"] = "int8: uint8 asymmetric activations per tensor, int8 symmetric weights per "
                  "output channel";
    j["method"] = methodName(state.table.method);
    j["calibration_samples"] = state.table.samples;
  }
  j["validation_samples"] = state.validation.size();
  j["activations"] = state.activations;
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
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerReport &layer : state.layers) {
    nlohmann::ordered_json l;
    l["node"] = layer.node;
    // JSON has no infinity: null is an exact layer (no error at all).
    l["sqnr_db"] = std::isfinite(layer.sqnr) ? nlohmann::ordered_json(layer.sqnr)
                                             : nlohmann::ordered_json(nullptr);
    if (!std::isnan(layer.cosineAlone))
      l["cosine_alone"] = layer.cosineAlone;
    l["float"] = llvm::is_contained(state.keptForAccuracy, layer.node);
    layers.push_back(std::move(l));
  }
  j["layers"] = std::move(layers);
  if (state.cosineAfterSearch > -2) {
    nlohmann::ordered_json search;
    search["target"] = options.accuracyTarget;
    search["cosine_all_quantized"] = state.cosineAllQuantized;
    search["cosine"] = state.cosineAfterSearch;
    search["kept_float"] = state.keptForAccuracy;
    search["gated_runs"] = state.gatedRuns;
    search["trial_builds"] = state.searchCompiles;
    j["accuracy_search"] = std::move(search);
  }
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
