//===- PostTraining.h - kiln-compile --quantize ------------------*- C++ -*-===//
//
// Post-training quantization as kiln-compile runs it: before the compile,
// calibrate (or read a table) and tell the importer how to quantize each
// activation; after it, run the float and the quantized model on held-back
// samples and report what the quantization cost.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_QUANTIZE_POSTTRAINING_H
#define KILN_COMPILER_QUANTIZE_POSTTRAINING_H

#include "driver/Driver.h"
#include "quantize/Calibration.h"

#include "mlir/IR/MLIRContext.h"

namespace kiln::quantize {

struct PostTrainingOptions {
  std::string modelPath;
  std::string calibrationDir;   // --calibration
  std::string tablePath;        // --calibration-table: read, or written with --calibration
  std::string validationDir;    // --validation (else held back from --calibration)
  std::string reportPath;       // --quant-report (JSON)
  CalibrationOptions calibration;
  std::vector<std::string> exclude; // --quantize-exclude
  /// --accuracy-target: the worst cosine similarity of any output against
  /// the float model, on the validation samples, to reach by keeping the
  /// layers whose quantization hurts the outputs most in float (0: no
  /// search).
  double accuracyTarget = 0;
  /// --quantize=int8-dynamic: no calibration and no table (ranges at run
  /// time); validation, the report and the accuracy search as for int8.
  bool dynamic = false;
  bool progress = false;            // a progress line on stderr
  bool quiet = false;               // no report on stdout (kiln-compile --quiet)
};

/// What prepare() found, for report().
struct PostTrainingState {
  Table table;
  std::vector<Sample> validation;
  std::string floatArtifact; // the float model for the cpu (temporary)
  int64_t floatArtifactBytes = 0;
  int64_t quantizableNodes = 0;
  int64_t integerOps = 0; // conv_integer / matmul_integer after the graph passes
  int64_t activations = 0; // activations quantized (kiln.quantize after import)
  /// Per quantized node, in graph order: its own quantization error (with
  /// validation samples only).
  std::vector<LayerReport> layers;
  /// What the accuracy search kept in float (largest effect on the outputs
  /// first), the worst cosine with every layer quantized (predicted by the
  /// sensitivity build) and with those kept (a real build's).
  std::vector<std::string> keptForAccuracy;
  double cosineAllQuantized = -2, cosineAfterSearch = -2; // -2: not searched
  int64_t searchCompiles = 0; // real builds
  int64_t gatedRuns = 0;      // runs of the validation samples on the sensitivity build
  ~PostTrainingState();
};

/// Calibrates (or reads the table) and fills `importOptions` for the
/// quantized import; `base` gives the cpu options to compile the calibration
/// model with. With validation samples it then measures each layer's SQNR
/// (one build where every quantized node also runs in float on the same
/// input, each behind a gate) and, with an accuracy target, each layer's
/// effect on the outputs on the same build, and adds the layers it keeps in
/// float to `importOptions.quantizeExclude`. False with `error` set (empty when the
/// diagnostics already said it).
bool prepare(mlir::MLIRContext &context, onnx_import::ImportOptions &importOptions,
             const driver::CompileOptions &base, const PostTrainingOptions &options,
             PostTrainingState &state, std::string &error);

/// A dumpStage hook that counts the quantized activations of the imported
/// program and the integer contractions of the dispatch stage into `state`
/// and calls `next` (may be empty).
std::function<void(llvm::StringRef, mlir::Operation *)>
countIntegerOps(PostTrainingState &state,
                std::function<void(llvm::StringRef, mlir::Operation *)> next);

/// After the quantized artifact `artifactPath` was written: validation on
/// the held-back samples (its cpu code, or a cpu build made here when it
/// has none), the summary on stdout, the JSON report. False with `error`.
bool report(mlir::MLIRContext &context, const onnx_import::ImportOptions &importOptions,
            const driver::CompileOptions &base, const PostTrainingOptions &options,
            PostTrainingState &state, const std::string &artifactPath, std::string &error);

} // namespace kiln::quantize

#endif // KILN_COMPILER_QUANTIZE_POSTTRAINING_H
