//===- kiln-compile.cpp - The Kiln compiler driver ------------------------===//
//
// Compiles an ONNX model into a .kiln artifact (`--target=cpu -o m.kiln`),
// or stops after any stage and prints its IR (`--emit=kiln|dispatch|linalg|
// llvm|asm`); `--dump-ir=DIR` writes every stage.
//
//===----------------------------------------------------------------------===//

#include "codegen/amdgpu/Passes.h"
#include "driver/CommandLine.h"
#include "driver/Driver.h"
#include "import/onnx/OnnxImporter.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Passes/Passes.h"
#include "quantize/PostTraining.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory kilnCategory("kiln-compile options");

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<model.onnx | model.onnxtxt | kiln.mlir>"),
                                      cl::Required, cl::cat(kilnCategory));
static cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(kilnCategory));

using kiln::driver::Stage;
static cl::opt<Stage> emit(
    "emit", cl::desc("Stage to stop after and print (default: artifact when "
                     "--target is given, else kiln)"),
    cl::values(
        clEnumValN(Stage::Kiln, "kiln", "kiln IR after import"),
        clEnumValN(Stage::Dispatch, "dispatch",
                   "kiln IR after fusion into dispatches and memory planning"),
        clEnumValN(Stage::Linalg, "linalg",
                   "dispatches lowered to linalg and tiled into workgroups / threads"),
        clEnumValN(Stage::Gpu, "gpu",
                   "gfx targets: the kernels in a gpu.module, bufferized"),
        clEnumValN(Stage::LLVM, "llvm", "the kernels in the LLVM (and ROCDL) dialect"),
        clEnumValN(Stage::Assembly, "isa", "the kernels as assembly (gfx ISA, x86-64)"),
        clEnumValN(Stage::Assembly, "asm", "same as isa"),
        clEnumValN(Stage::Artifact, "artifact", "the .kiln artifact (needs -o)")),
    cl::cat(kilnCategory));
static cl::opt<std::string> targets(
    "target",
    cl::desc("Comma-separated targets: cpu and gfx names or chips (gfx942 = mi300x, "
             "mi325x; gfx950 = mi355x; gfx1250 = mi455x; gfx1100; gfx1201)"),
    cl::value_desc("gfx942,cpu"), cl::cat(kilnCategory));
static cl::opt<kiln::gfx::Precision> precision(
    "precision",
    cl::desc("gfx targets: precision of the matmuls and convolutions of f32 models"),
    cl::values(clEnumValN(kiln::gfx::Precision::F32, "f32", "f32 (default)"),
               clEnumValN(kiln::gfx::Precision::F16, "f16",
                          "f16 operands on the matrix cores, f32 accumulation"),
               clEnumValN(kiln::gfx::Precision::BF16, "bf16",
                          "bf16 operands on the matrix cores, f32 accumulation")),
    cl::init(kiln::gfx::Precision::F32), cl::cat(kilnCategory));
namespace {
enum class WinogradMode { Auto, On, Off };
} // namespace
static cl::opt<WinogradMode> winograd(
    "winograd",
    cl::desc("3x3 stride-1 float convolutions (32 channels or more) by Winograd F(4,3) / "
             "F(2,3) transforms and GEMMs: about half the time of the direct convolution, "
             "results within rounding (about 1e-5 relative)"),
    cl::values(clEnumValN(WinogradMode::Auto, "auto",
                          "on when every target is the cpu (default)"),
               clEnumValN(WinogradMode::On, "on", "on for every target"),
               clEnumValN(WinogradMode::Off, "off", "direct convolutions")),
    cl::init(WinogradMode::Auto), cl::cat(kilnCategory));
static cl::list<std::string> winogradExclude(
    "winograd-exclude", cl::desc("Node names of convolutions kept direct (comma-separated)"),
    cl::CommaSeparated, cl::value_desc("NAME,..."), cl::cat(kilnCategory));
static cl::opt<int64_t> matmulPanelRows(
    "matmul-panel-rows",
    cl::desc("Matmuls by a constant weight of at most N rows (default: any number for the cpu "
             "alone, 8 with gfx targets), or for the cpu alone of any number whose product no "
             "elementwise op reads, read it from column panels packed at compile time "
             "(kiln-pack-matmul-panels; -1: never)"),
    cl::value_desc("N"), cl::init(std::numeric_limits<int64_t>::max()), cl::cat(kilnCategory));
static cl::opt<bool> emulation(
    "emulation",
    cl::desc("Also store each gfx target's kernels built for the host, so that kiln-run "
             "--device=emu:<gfx> runs them on the CPU (emu:<gfx> code objects)"),
    cl::init(false), cl::cat(kilnCategory));
static cl::opt<bool> kMajorWeights(
    "k-major-weights",
    cl::desc("With gfx targets alone: store the constant weight of a matmul k-fastest and "
             "read it through a transpose, so that the GEMM kernels load it along k as the "
             "matrix cores take it instead of transposing it every K step "
             "(kiln-transpose-matmul-weights; default on)"),
    cl::init(true), cl::cat(kilnCategory));
static cl::opt<bool> raiseRmsNorms(
    "raise-rms-norms",
    cl::desc("Compute RMSNorm written out in elementwise ops and a mean (Pow, ReduceMean, Add, "
             "Sqrt, Div, Mul, Mul) as one normalization kernel (kiln-raise-rms-norms; "
             "default on)"),
    cl::init(true), cl::cat(kilnCategory));
static cl::opt<bool> raiseRotaryEmbeddings(
    "raise-rotary-embeddings",
    cl::desc("Compute rotary position embeddings written out (x * cos + rotate_half(x) * sin: "
             "Slice, Neg, Slice, Concat, Mul, Mul, Add) as one kernel "
             "(kiln-raise-rotary-embeddings; default on)"),
    cl::init(true), cl::cat(kilnCategory));
static cl::opt<bool> transposedOperands(
    "transposed-operands",
    cl::desc("With gfx targets alone: a matmul takes in the transposes of the values it alone "
             "reads (attention's Q, K and V heads), which its GEMM kernel reads through instead "
             "of a transpose kernel each (kiln-form-dispatches; default on)"),
    cl::init(true), cl::cat(kilnCategory));
static cl::opt<bool> inlineScalars(
    "inline-scalars",
    cl::desc("Compute a one-element elementwise result (a dynamic quantization's zero point "
             "and its casts) again in each elementwise kernel that reads it instead of a "
             "kernel of its own (kiln-form-dispatches; default on)"),
    cl::init(true), cl::cat(kilnCategory));
static cl::opt<bool> splitReductions(
    "split-reductions",
    cl::desc("With gfx targets alone: split a float sum, mean, max or min of fewer than 4096 "
             "outputs in two, each output's reduced elements in parts that many threads reduce "
             "at once, then the parts; rows of at most 8192 reduced along the last axis alone "
             "stay whole, one row kernel (kiln-split-reductions; default on)"),
    cl::init(true), cl::cat(kilnCategory));
static cl::opt<bool> mergeRangeReductions(
    "merge-range-reductions",
    cl::desc("With gfx targets alone: take a minimum and a maximum of the same rows (a "
             "dynamic quantization's range) as one reduction, the minima of [x; -x] "
             "(kiln-merge-range-reductions; default on)"),
    cl::init(true), cl::cat(kilnCategory));
static cl::opt<bool> epilogueOperands(
    "epilogue-operands",
    cl::desc("With gfx targets alone: compute a small elementwise result that only an integer "
             "matmul's or convolution's epilogue reads (a dynamic quantization's per-channel "
             "products) in its kernel instead of a kernel of its own (kiln-form-dispatches; "
             "default on)"),
    cl::init(true), cl::cat(kilnCategory));
static cl::opt<bool> splitK(
    "split-k",
    cl::desc("With gfx targets alone: split a convolution whose output has fewer GEMM tiles "
             "than the largest chip has CUs along its input channels, into a grouped "
             "convolution and a sum (kiln-split-k-convs; default on)"),
    cl::init(true), cl::cat(kilnCategory));
static cl::opt<std::string> testFault(
    "gfx-test-fault",
    cl::desc("Testing only: make the gfx GEMM builder wire its kernels wrongly on purpose "
             "(swap-operands, shift-lanes, window-taps), or the row-reduction kernels leave a "
             "lane out (skip-lane), to prove --device=emu:<gfx> catches it"),
    cl::Hidden, cl::cat(kilnCategory));
static cl::opt<int64_t> testWaveTiles(
    "gfx-test-wave-tiles",
    cl::desc("Testing only: N x N matrix instruction tiles per wave in the gfx GEMM kernels "
             "instead of the target table's, to build deliberately different kernels"),
    cl::init(0), cl::Hidden, cl::cat(kilnCategory));
static cl::opt<std::string> testStepSchedule(
    "gfx-test-step-schedule",
    cl::desc("Testing only: schedule each K step of the gfx GEMM kernels as llvm (LLVM's own "
             "order), matrix or interleaved instead of the target table's choice, to compare "
             "them"),
    cl::Hidden, cl::cat(kilnCategory));
static cl::opt<std::string> testLoadAhead(
    "gfx-test-load-ahead",
    cl::desc("Testing only: on or off, the gfx GEMM kernels' global loads two K steps ahead "
             "or one, instead of the target table's choice, to compare them"),
    cl::Hidden, cl::cat(kilnCategory));
static cl::opt<bool> testLargeTiling(
    "gfx-test-large-tiling",
    cl::desc("Testing only: the target table's large-GEMM tiling in every gfx GEMM kernel, "
             "whatever its size, to run that tiling on small GEMMs"),
    cl::init(false), cl::Hidden, cl::cat(kilnCategory));
static cl::opt<bool> testInternalError(
    "test-internal-error",
    cl::desc("Testing only: make code generation fail as a compiler bug would, to prove "
             "the error reaches the user as one line"),
    cl::Hidden, cl::cat(kilnCategory));
static cl::opt<std::string> cpuName(
    "cpu", cl::desc("x86-64 CPU to compile for: host (default), x86-64-v3, "
                    "x86-64-v4, znver4, ..."),
    cl::init("host"), cl::cat(kilnCategory));
static cl::opt<int64_t> workgroups("workgroups",
                                   cl::desc("Workgroups per dispatch to aim for"),
                                   cl::init(64), cl::cat(kilnCategory));
static cl::opt<std::string> dumpDir("dump-ir",
                                    cl::desc("Write the IR of every stage into DIR"),
                                    cl::value_desc("DIR"), cl::cat(kilnCategory));
static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Static shape of a graph input, e.g. "
                         "--input-shape=input=1x3x224x224 (repeatable)"),
                cl::value_desc("NAME=DIMS"), cl::cat(kilnCategory));
static cl::list<std::string> inputValues(
    "input-value",
    cl::desc("Pin a graph input to a constant, so that what depends on it (shapes, "
             "branches) folds at compile time, e.g. --input-value=sample_rate=16000 or "
             "--input-value=shape=1,3,224,224 (repeatable; the artifact records it, and the "
             "input is no longer given at run time)"),
    cl::value_desc("NAME=V[,V...]"), cl::cat(kilnCategory));
static cl::list<std::string> inputSequenceLengths(
    "input-sequence-length",
    cl::desc("Length of a graph input that is a sequence: its elements become the inputs "
             "NAME[0] ... NAME[N-1] (shapes from the model or --input-shape=NAME[i]=DIMS), "
             "e.g. --input-sequence-length=frames=4 (repeatable)"),
    cl::value_desc("NAME=N"), cl::cat(kilnCategory));
static cl::list<std::string> absentInputs(
    "input-absent",
    cl::desc("A graph input that is an optional is compiled without its element "
             "(repeatable; without it the element is an input of the same name)"),
    cl::value_desc("NAME"), cl::cat(kilnCategory));
static cl::opt<std::string> batchSizes(
    "batch-sizes",
    cl::desc("Compile one program per batch bucket, e.g. --batch-sizes=1,4,16,64: dimension "
             "0 of every input takes each size (the model must leave it dynamic); the "
             "programs share one copy of the weights, and kiln-run, kiln-bench and kiln-serve "
             "pick one by batch size"),
    cl::value_desc("N[,N...]"), cl::cat(kilnCategory));
static cl::opt<bool> elideWeights(
    "elide-weights",
    cl::desc("Print weight blobs as __elided__ (default: on for stdout, off "
             "when writing a file with -o, so the file parses back)"),
    cl::cat(kilnCategory));
static cl::OptionCategory quantCategory("kiln-compile quantization options");
static cl::opt<std::string> quantizeScheme(
    "quantize",
    cl::desc("Post-training quantization: int8 (uint8 activations per tensor from "
             "calibration, int8 weights per output channel, integer convolutions and "
             "matmuls), int8-dynamic (MatMul/Gemm activations quantized at run time), "
             "int4-weights (MatMul/Gemm weights as 4-bit codes in groups along K, "
             "float activations)"),
    cl::value_desc("int8|int8-dynamic|int4-weights"), cl::cat(quantCategory));
static cl::opt<int64_t> int4GroupSize(
    "int4-group-size",
    cl::desc("--quantize=int4-weights: rows of K per scale (32, 64, 128 or 256; default 128)"),
    cl::init(128), cl::cat(quantCategory));
static cl::opt<bool> int4ZeroPoints(
    "int4-zero-points",
    cl::desc("--quantize=int4-weights: asymmetric groups with a zero point each (default: "
             "symmetric)"),
    cl::cat(quantCategory));
static cl::opt<std::string> int4Activations(
    "int4-activations",
    cl::desc("What 4-bit weights (--quantize=int4-weights, MatMulNBits, int4 QDQ) are "
             "multiplied with: float (W4A16/W4A32, default), or int8 (W4A8: each row's "
             "activations quantized per group at run time, as ONNX Runtime's MatMulNBits "
             "with accuracy_level 4; integer dot products; cpu targets only)"),
    cl::value_desc("float|int8"), cl::init("float"), cl::cat(quantCategory));
static cl::opt<std::string> calibrationDir(
    "calibration",
    cl::desc("Calibration samples: one folder per sample holding one NAME.npy per model "
             "input; Kiln runs the float model on them and writes the calibration table"),
    cl::value_desc("DIR"), cl::cat(quantCategory));
static cl::opt<std::string> calibrationTable(
    "calibration-table",
    cl::desc("The calibration table (JSON): written with --calibration (default: "
             "OUTPUT.calibration.json), else read instead of calibrating"),
    cl::value_desc("FILE"), cl::cat(quantCategory));
static cl::opt<std::string> calibrationMethod(
    "calibration-method",
    cl::desc("How a range is chosen: minmax (default), percentile, entropy (KL divergence), "
             "mse"),
    cl::init("minmax"), cl::cat(quantCategory));
static cl::opt<double> calibrationPercentile(
    "calibration-percentile", cl::desc("--calibration-method=percentile: the percentile of |x| kept"),
    cl::init(99.999), cl::cat(quantCategory));
static cl::opt<std::string> validationDir(
    "validation",
    cl::desc("Samples to validate the quantized model on (same layout as --calibration; "
             "default: the last fifth of the calibration samples, held back)"),
    cl::value_desc("DIR"), cl::cat(quantCategory));
static cl::opt<std::string> quantReport(
    "quant-report", cl::desc("Write the quantization report as JSON"),
    cl::value_desc("FILE.json"), cl::cat(quantCategory));
static cl::opt<double> accuracyTarget(
    "accuracy-target",
    cl::desc("--quantize=int8: the worst cosine similarity of any output against the float "
             "model on the validation samples to reach (e.g. 0.999), by keeping the layers "
             "whose quantization hurts the outputs most in float"),
    cl::value_desc("COSINE"), cl::cat(quantCategory));
static cl::list<std::string> quantizeExclude(
    "quantize-exclude", cl::desc("Node names or op types kept in float (comma-separated)"),
    cl::CommaSeparated, cl::value_desc("NAME|OP,..."), cl::cat(quantCategory));
static cl::opt<bool> quiet(
    "quiet", cl::desc("No progress line and no summary lines (quantization) on stdout; "
                     "only errors and warnings"),
    cl::cat(kilnCategory));
static cl::opt<bool> timing(
    "timing", cl::desc("Print the time spent in every stage, per target, when done"),
    cl::cat(kilnCategory));
static cl::opt<bool> noChecker("no-onnx-checker",
                               cl::desc("Skip libonnx's model checker"),
                               cl::cat(kilnCategory));

namespace {
/// The progress line: on a terminal only (stdout and stderr), one line
/// redrawn in place, at most every 100 ms, e.g.
///   kiln-compile: [  4.2 s] linalg gfx942: 37/64 dispatches (kiln-tile-workgroups)
/// and erased when the compile ends or a diagnostic is printed. Pass
/// instrumentation reports from MLIR's worker threads and a diagnostic may
/// clear the line from another: one mutex orders them.
class ProgressLine : public kiln::driver::ProgressObserver {
public:
  ProgressLine() : start(std::chrono::steady_clock::now()) {}
  ~ProgressLine() override { clear(); }

  void beginStep(llvm::StringRef stage, llvm::StringRef target) override {
    std::lock_guard<std::mutex> lock(mutex);
    step = target.empty() ? stage.str() : (stage + " " + target).str();
    detail.clear();
    draw(/*force=*/true);
  }
  void kernelDone(llvm::StringRef pass, int64_t done, int64_t total) override {
    std::lock_guard<std::mutex> lock(mutex);
    detail = llvm::formatv("{0}/{1} dispatches ({2})", done, total, pass).str();
    draw(/*force=*/done == total);
  }
  /// Begins a step outside the driver (import, calibration).
  void phase(llvm::StringRef name) { beginStep(name, ""); }
  /// Erases the line (before anything else is printed).
  void clear() {
    std::lock_guard<std::mutex> lock(mutex);
    if (!shown)
      return;
    llvm::errs() << "\r\x1b[K";
    llvm::errs().flush();
    shown = false;
  }

private:
  void draw(bool force) {
    auto now = std::chrono::steady_clock::now();
    if (!force && now - lastDraw < std::chrono::milliseconds(100))
      return;
    lastDraw = now;
    double seconds = std::chrono::duration<double>(now - start).count();
    std::string line = llvm::formatv("kiln-compile: [{0,5:f1} s] {1}{2}{3}", seconds, step,
                                     detail.empty() ? "" : ": ", detail)
                           .str();
    // One terminal line: a longer one would wrap and not be redrawn.
    unsigned columns = llvm::sys::Process::StandardErrColumns();
    if (columns > 1 && line.size() >= columns)
      line.resize(columns - 1);
    llvm::errs() << "\r\x1b[K" << line;
    llvm::errs().flush();
    shown = true;
  }

  std::mutex mutex;
  std::chrono::steady_clock::time_point start, lastDraw;
  std::string step, detail;
  bool shown = false;
};
} // namespace

/// Parses "1,4,16,64" into ascending distinct positive sizes; returns an
/// error message, or an empty string.
static std::string parseBatchSizes(llvm::StringRef list, std::vector<int64_t> &sizes) {
  llvm::SmallVector<llvm::StringRef> parts;
  list.split(parts, ',');
  for (llvm::StringRef part : parts) {
    int64_t size = 0;
    if (part.trim().getAsInteger(10, size) || size < 1 || size > 65536)
      return "'" + part.str() + "' is not a batch size (a whole number from 1 to 65536)";
    if (llvm::is_contained(sizes, size))
      return "batch size " + std::to_string(size) + " is given twice";
    sizes.push_back(size);
  }
  llvm::sort(sizes);
  return "";
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  // Only Kiln's own options (and --help, --version, --llvm-help): libLLVM
  // and libMLIR put hundreds of backend options in the general category.
  std::vector<const char *> args =
      kiln::driver::setUpCommandLine("kiln-compile", argc, argv, {&kilnCategory, &quantCategory});
  cl::ParseCommandLineOptions(int(args.size()), args.data(),
                              "Kiln: ONNX -> AMD gfx compiler\n");

  kiln::onnx_import::ImportOptions options;
  options.runChecker = !noChecker;
  for (const std::string &spec : inputShapes) {
    std::string message = kiln::onnx_import::parseInputShape(spec, options);
    if (!message.empty()) {
      llvm::errs() << "kiln-compile: error: --input-shape: " << message << "\n";
      return 1;
    }
  }

  for (const std::string &spec : inputValues) {
    std::string message = kiln::onnx_import::parseInputValue(spec, options);
    if (!message.empty()) {
      llvm::errs() << "kiln-compile: error: --input-value: " << message << "\n";
      return 1;
    }
  }

  for (const std::string &spec : inputSequenceLengths) {
    std::string message = kiln::onnx_import::parseInputSequenceLength(spec, options);
    if (!message.empty()) {
      llvm::errs() << "kiln-compile: error: --input-sequence-length: " << message << "\n";
      return 1;
    }
  }
  for (const std::string &name : absentInputs)
    options.absentInputs[name] = true;
  std::vector<int64_t> buckets;
  if (batchSizes.getNumOccurrences()) {
    std::string message = parseBatchSizes(batchSizes, buckets);
    if (!message.empty()) {
      llvm::errs() << "kiln-compile: error: --batch-sizes=" << batchSizes << ": " << message
                   << "\n";
      return 1;
    }
    if (llvm::StringRef(inputFile).ends_with(".mlir")) {
      llvm::errs() << "kiln-compile: error: --batch-sizes needs an ONNX model, not a .mlir "
                      "file\n";
      return 1;
    }
    // Import (and calibration) start at the smallest bucket.
    options.batchSize = buckets.front();
  }

  Stage stage = emit.getNumOccurrences() ? emit.getValue()
                                         : (targets.empty() ? Stage::Kiln : Stage::Artifact);
  if (stage > Stage::Dispatch && targets.empty()) {
    llvm::errs() << "kiln-compile: error: --emit beyond dispatch needs --target "
                    "(e.g. --target=cpu or --target=gfx942)\n";
    return 1;
  }
  std::vector<kiln::driver::TargetSpec> targetSpecs;
  if (!targets.empty()) {
    std::string error;
    auto parsed = kiln::driver::parseTargets(targets, error);
    if (failed(parsed)) {
      llvm::errs() << "kiln-compile: error: --target=" << targets << ": " << error << "\n";
      return 1;
    }
    targetSpecs = std::move(*parsed);
  }
  if (stage == Stage::Gpu &&
      llvm::none_of(targetSpecs, [](const auto &t) { return t.gfx != nullptr; })) {
    llvm::errs() << "kiln-compile: error: --emit=gpu needs a gfx target (e.g. --target=gfx942)\n";
    return 1;
  }
  if (stage == Stage::Artifact && outputFile == "-") {
    llvm::errs() << "kiln-compile: error: an artifact needs an output file (-o model.kiln)\n";
    return 1;
  }

  // Progress on a terminal; per-stage times with --timing (MLIR's timing
  // manager, printed as a tree on stderr when it goes out of scope).
  std::unique_ptr<ProgressLine> progress;
  if (!quiet && llvm::sys::Process::StandardOutIsDisplayed() &&
      llvm::sys::Process::StandardErrIsDisplayed())
    progress = std::make_unique<ProgressLine>();
  DefaultTimingManager timingManager;
  timingManager.setEnabled(timing);
  timingManager.setDisplayMode(DefaultTimingManager::DisplayMode::Tree);
  TimingScope rootTiming = timingManager.getRootScope();

  DialectRegistry registry;
  kiln::driver::registerCompilerDialects(registry);
  MLIRContext context(registry);
  context.loadDialect<kiln::KilnDialect, func::FuncDialect>();
  // One line per diagnostic: "<model>: error: <message>".
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (progress)
      progress->clear();
    llvm::errs() << inputFile << ": ";
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Error:
      llvm::errs() << "error: ";
      break;
    case DiagnosticSeverity::Warning:
      llvm::errs() << "warning: ";
      break;
    default:
      llvm::errs() << "note: ";
      break;
    }
    llvm::errs() << diag.str() << "\n";
    for (Diagnostic &note : diag.getNotes())
      llvm::errs() << inputFile << ": note: " << note.str() << "\n";
    return success();
  });

  kiln::driver::CompileOptions compileOptions;
  compileOptions.stopAfter = stage;
  compileOptions.modelPath = inputFile;
  compileOptions.cpu.cpu = cpuName;
  compileOptions.cpu.workgroups = workgroups;
  compileOptions.targets = targetSpecs;
  compileOptions.gfx.precision = precision;
  compileOptions.emulation = emulation;
  // Every target is the cpu: the cpu's own layouts and algorithms apply.
  bool cpuOnly = !targetSpecs.empty() && !emulation &&
                 llvm::all_of(targetSpecs, [](const auto &t) { return t.gfx == nullptr; });
  compileOptions.winograd =
      winograd == WinogradMode::On || (winograd == WinogradMode::Auto && cpuOnly);
  compileOptions.winogradTransformOps = cpuOnly;
  compileOptions.winogradExclude.assign(winogradExclude.begin(), winogradExclude.end());
  compileOptions.raiseRmsNorms = raiseRmsNorms;
  compileOptions.raiseRotaryEmbeddings = raiseRotaryEmbeddings;
  // Column panels of 4-bit weights and of few-row float matmuls' weights:
  // the cpu kernels' layouts, which the gfx code generator does not read.
  if (matmulPanelRows < -1) {
    llvm::errs() << "kiln-compile: error: --matmul-panel-rows must be -1 (never) or a row count, got "
                 << matmulPanelRows << "\n";
    return 1;
  }
  if (cpuOnly) {
    compileOptions.unstridePointwise = true;
    compileOptions.int4Panel = 32;
    compileOptions.matmulPanel = matmulPanelRows >= 0 ? 16 : 0;
    compileOptions.matmulPanelRows = std::max<int64_t>(matmulPanelRows, 0);
  } else if (!targetSpecs.empty()) {
    // With gfx targets, products of at most 8 rows (an LLM's decode step, a
    // classifier's head) in panels too: the gfx GEMV kernels stream them.
    compileOptions.matmulPanel = matmulPanelRows >= 0 ? 16 : 0;
    compileOptions.matmulPanelRows = std::clamp<int64_t>(matmulPanelRows, 0, 8);
    compileOptions.matmulPanelUnfused = false;
    compileOptions.matmulPanelCpu =
        llvm::any_of(targetSpecs, [](const auto &t) { return t.gfx == nullptr; });
    // Weights in the precision of the gfx matrix cores, where no cpu reads
    // them in f32.
    compileOptions.narrowWeights = !compileOptions.matmulPanelCpu;
    compileOptions.kMajorWeights = kMajorWeights && !compileOptions.matmulPanelCpu;
    compileOptions.transposedOperands = transposedOperands && !compileOptions.matmulPanelCpu;
    compileOptions.inlineScalars = inlineScalars;
    // Convolutions too small for the largest of the chips split along their
    // input channels, where no cpu runs the program.
    if (splitReductions && !compileOptions.matmulPanelCpu) {
      compileOptions.splitReductionThreads = 4096;
      // 256 lanes of 8 chunks of 4 f32 (kiln-gpu-build-row-reductions).
      compileOptions.splitReductionMaxRow = 8192;
    }
    compileOptions.mergeRangeReductions = mergeRangeReductions && !compileOptions.matmulPanelCpu;
    compileOptions.epilogueOperands = epilogueOperands && !compileOptions.matmulPanelCpu;
    if (splitK && !compileOptions.matmulPanelCpu)
      for (const auto &t : targetSpecs)
        compileOptions.splitKComputeUnits =
            std::max(compileOptions.splitKComputeUnits, t.gfx->largestComputeUnits());
  }
  compileOptions.gfx.testFault = testFault;
  if (testWaveTiles < 0 || testWaveTiles > 8) {
    llvm::errs() << "kiln-compile: error: --gfx-test-wave-tiles must be 0 to 8\n";
    return 1;
  }
  compileOptions.gfx.testWaveTiles = testWaveTiles;
  compileOptions.gfx.testLargeTiling = testLargeTiling;
  if (!testStepSchedule.empty() && !kiln::gfx::parseStepSchedule(testStepSchedule)) {
    llvm::errs() << "kiln-compile: error: --gfx-test-step-schedule must be llvm, matrix or "
                    "interleaved, not '"
                 << testStepSchedule << "'\n";
    return 1;
  }
  compileOptions.gfx.testStepSchedule = testStepSchedule;
  if (!testLoadAhead.empty() && testLoadAhead != "on" && testLoadAhead != "off") {
    llvm::errs() << "kiln-compile: error: --gfx-test-load-ahead must be on or off, not '"
                 << testLoadAhead << "'\n";
    return 1;
  }
  compileOptions.gfx.testLoadAhead = testLoadAhead;
  compileOptions.testInternalError = testInternalError;
  compileOptions.progress = progress.get();
  compileOptions.timing = &rootTiming;

  // Post-training quantization: calibrate (or read the table) first.
  kiln::quantize::PostTrainingOptions ptq;
  kiln::quantize::PostTrainingState ptqState;
  bool quantizing = !quantizeScheme.empty();
  auto quantError = [](const std::string &message) {
    llvm::errs() << "kiln-compile: error: " << message << "\n";
    return 1;
  };
  if (!quantizing && (calibrationDir.getNumOccurrences() || calibrationTable.getNumOccurrences() ||
                      validationDir.getNumOccurrences() || quantReport.getNumOccurrences() ||
                      accuracyTarget.getNumOccurrences() || quantizeExclude.getNumOccurrences()))
    return quantError("--calibration, --calibration-table, --validation, --quant-report, "
                      "--accuracy-target and --quantize-exclude need --quantize=int8");
  // Options that only static int8 (calibration) takes.
  auto calibrating = [] {
    return calibrationDir.getNumOccurrences() || calibrationTable.getNumOccurrences() ||
           validationDir.getNumOccurrences() || quantReport.getNumOccurrences() ||
           calibrationMethod.getNumOccurrences() || calibrationPercentile.getNumOccurrences() ||
           accuracyTarget.getNumOccurrences();
  };
  bool int4 = quantizeScheme == "int4-weights";
  if (!int4 && (int4GroupSize.getNumOccurrences() || int4ZeroPoints.getNumOccurrences()))
    return quantError("--int4-group-size and --int4-zero-points need --quantize=int4-weights");
  if (int4) {
    // Weight-only: nothing to calibrate.
    if (calibrating())
      return quantError("--quantize=int4-weights quantizes weights only: --calibration, "
                        "--calibration-table, --calibration-method, --calibration-percentile, "
                        "--validation, --quant-report and --accuracy-target are for "
                        "--quantize=int8");
    if (int4GroupSize != 32 && int4GroupSize != 64 && int4GroupSize != 128 &&
        int4GroupSize != 256)
      return quantError("--int4-group-size=" + std::to_string(int4GroupSize) +
                        ": expected 32, 64, 128 or 256");
    if (llvm::StringRef(inputFile).ends_with(".mlir"))
      return quantError("--quantize needs an ONNX model, not a .mlir file");
    options.int4Weights = true;
    options.quantizeExclude.assign(quantizeExclude.begin(), quantizeExclude.end());
    compileOptions.int4GroupSize = int4GroupSize;
    compileOptions.int4ZeroPoints = int4ZeroPoints;
    quantizing = false;
  }
  if (int4Activations != "float" && int4Activations != "int8")
    return quantError("--int4-activations=" + int4Activations + ": expected float or int8");
  if (int4Activations == "int8") {
    compileOptions.int4Int8Activations = true;
  }
  bool dynamic = quantizeScheme == "int8-dynamic";
  if (dynamic) {
    // Activation ranges at run time: no calibration, no table.
    if (calibrationDir.getNumOccurrences() || calibrationTable.getNumOccurrences() ||
        calibrationMethod.getNumOccurrences() || calibrationPercentile.getNumOccurrences())
      return quantError("--quantize=int8-dynamic computes activation ranges at run time: "
                        "--calibration, --calibration-table, --calibration-method and "
                        "--calibration-percentile are for --quantize=int8");
    if (llvm::StringRef(inputFile).ends_with(".mlir"))
      return quantError("--quantize needs an ONNX model, not a .mlir file");
    options.quantizeDynamic = true;
    options.quantizeExclude.assign(quantizeExclude.begin(), quantizeExclude.end());
    compileOptions.quantizeWeights = true;
    // Validation, the report and the accuracy search go the way of int8's.
    quantizing = validationDir.getNumOccurrences() || quantReport.getNumOccurrences() ||
                 accuracyTarget.getNumOccurrences();
  }
  if (quantizing) {
    if (quantizeScheme != "int8" && !dynamic)
      return quantError("--quantize=" + quantizeScheme +
                        ": expected int8, int8-dynamic or int4-weights");
    if (llvm::StringRef(inputFile).ends_with(".mlir"))
      return quantError("--quantize needs an ONNX model, not a .mlir file");
    std::optional<kiln::quantize::Method> method =
        kiln::quantize::parseMethod(calibrationMethod);
    if (!method)
      return quantError("--calibration-method=" + calibrationMethod +
                        ": expected minmax, percentile, entropy or mse");
    if (!(calibrationPercentile > 0 && calibrationPercentile <= 100))
      return quantError("--calibration-percentile must be in (0, 100]");
    if (accuracyTarget.getNumOccurrences() && !(accuracyTarget > 0 && accuracyTarget <= 1))
      return quantError("--accuracy-target=" + std::to_string(accuracyTarget) +
                        ": expected a cosine similarity in (0, 1], such as 0.999");
    if (!dynamic && calibrationDir.empty() && calibrationTable.empty())
      return quantError("--quantize=int8 needs calibration data (--calibration=DIR) or a "
                        "calibration table (--calibration-table=FILE); Kiln never makes "
                        "ranges up");
    ptq.modelPath = inputFile;
    ptq.dynamic = dynamic;
    ptq.calibrationDir = calibrationDir;
    ptq.tablePath = calibrationTable;
    if (ptq.tablePath.empty() && !dynamic)
      ptq.tablePath = (outputFile == "-" ? llvm::sys::path::stem(inputFile).str()
                                         : std::string(outputFile)) +
                      ".calibration.json";
    ptq.validationDir = validationDir;
    ptq.reportPath = quantReport;
    ptq.calibration.method = *method;
    ptq.calibration.percentile = calibrationPercentile;
    ptq.exclude.assign(quantizeExclude.begin(), quantizeExclude.end());
    ptq.accuracyTarget = accuracyTarget;
    ptq.progress = !quiet && llvm::sys::Process::StandardErrIsDisplayed();
    ptq.quiet = quiet;
    compileOptions.quantizeWeights = true;
  }

  // A .mlir input is a kiln-dialect program (@main calling kiln ops), as
  // the importer would produce: lit tests use it for ops no ONNX op
  // produces directly (integer and i4 matmuls).
  if (quantizing) {
    if (progress)
      progress->phase("calibration");
    TimingScope calibrationTiming = rootTiming.nest("calibration");
    std::string error;
    if (!kiln::quantize::prepare(context, options, compileOptions, ptq, ptqState, error))
      return error.empty() ? 1 : quantError(error);
  }
  if (progress)
    progress->phase("import");
  TimingScope importTiming = rootTiming.nest("import");
  OwningOpRef<ModuleOp> module =
      llvm::StringRef(inputFile).ends_with(".mlir")
          ? parseSourceFile<ModuleOp>(inputFile, &context)
          : kiln::onnx_import::importOnnxFile(context, inputFile, options);
  if (!module || failed(verify(*module)))
    return 1;
  importTiming.stop();
  if (dynamic && !quantizing && outputFile != "-" && !quiet) {
    int64_t activations = 0;
    module->walk([&](kiln::QuantizeOp) { ++activations; });
    llvm::outs() << "quantization: " << activations
                 << " activations to uint8 at run time (per tensor, from each run's range), "
                    "weights int8 per output channel\n";
  }

  for (int i = 1; i < argc; ++i)
    compileOptions.commandLine += (i > 1 ? " " : "") + std::string(argv[i]);
  if (!dumpDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir)) {
      llvm::errs() << "kiln-compile: error: --dump-ir=" << dumpDir << ": " << ec.message() << "\n";
      return 1;
    }
    auto counter = std::make_shared<int>(0);
    compileOptions.dumpStage = [counter](llvm::StringRef name, Operation *ir) {
      llvm::SmallString<128> path(dumpDir);
      llvm::sys::path::append(path, llvm::formatv("{0:D2}-{1}.mlir", (*counter)++, name).str());
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      if (!ec) {
        OpPrintingFlags flags;
        flags.elideLargeResourceString(64);
        ir->print(os, flags);
      }
    };
  }
  if (quantizing)
    compileOptions.dumpStage =
        kiln::quantize::countIntegerOps(ptqState, std::move(compileOptions.dumpStage));
  // --quantize=int4-weights: the matmuls with constant weights before the
  // graph passes, and those that became kiln.matmul_int4.
  // --int4-activations=int8: the kiln.matmul_int4 ops, and those that take
  // int8 activations (zero points that are whole numbers 0..15), with the
  // name of the first that does not.
  // On each gfx target, the W4A8 dispatches whose kernel is not on the
  // matrix cores (no kiln.matrix_instruction at the gpu stage: the
  // per-thread path), with the node of the first.
  struct W4A8Counts {
    int64_t ops = 0, int8 = 0;
    std::string firstFloat;
    llvm::StringMap<std::string> dispatchNodes; // W4A8 dispatch -> node
    std::vector<std::pair<std::string, std::pair<int64_t, std::string>>> perThread;
  };
  auto w4a8Counts = std::make_shared<W4A8Counts>();
  auto int4Counts = std::make_shared<std::pair<int64_t, int64_t>>(0, 0);
  if (compileOptions.int4Int8Activations)
    compileOptions.dumpStage = [w4a8Counts, next = std::move(compileOptions.dumpStage)](
                                   llvm::StringRef stage, Operation *ir) {
      if (stage == "dispatch") {
        *w4a8Counts = W4A8Counts();
        ir->walk([&](kiln::ExecutableOp executable) {
          for (kiln::VariantOp variant : executable.getOps<kiln::VariantOp>()) {
            variant.walk([&](kiln::MatmulInt4Op op) {
              ++w4a8Counts->ops;
              if (op.getInt8Activations()) {
                ++w4a8Counts->int8;
                w4a8Counts->dispatchNodes[executable.getSymName()] =
                    kiln::nodeNameOf(op.getLoc()).str();
              } else if (w4a8Counts->firstFloat.empty()) {
                w4a8Counts->firstFloat = kiln::nodeNameOf(op.getLoc()).str();
              }
            });
            break;
          }
        });
      }
      if (stage.starts_with("gpu-")) {
        std::pair<int64_t, std::string> slow{0, ""};
        ir->walk([&](Operation *op) {
          auto name = op->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
          auto node = name ? w4a8Counts->dispatchNodes.find(name.getValue())
                           : w4a8Counts->dispatchNodes.end();
          if (node == w4a8Counts->dispatchNodes.end() || !op->hasAttr(kiln::kWorkgroupSizeAttr) ||
              op->hasAttr(kiln::kMatrixInstructionAttr))
            return;
          if (slow.first++ == 0)
            slow.second = node->second;
        });
        if (slow.first)
          w4a8Counts->perThread.push_back({stage.drop_front(4).str(), slow});
      }
      if (next)
        next(stage, ir);
    };
  if (int4)
    compileOptions.dumpStage = [int4Counts, next = std::move(compileOptions.dumpStage)](
                                   llvm::StringRef stage, Operation *ir) {
      if (stage == "kiln")
        ir->walk([&](kiln::MatmulOp op) {
          Value rhs = op.getRhs();
          if (auto t = rhs.getDefiningOp<kiln::TransposeOp>())
            rhs = t.getInput();
          int4Counts->first += rhs.getDefiningOp<kiln::ConstantOp>() != nullptr;
        });
      if (stage == "dispatch") {
        int4Counts->second = 0;
        ir->walk([&](kiln::ExecutableOp executable) {
          for (kiln::VariantOp variant : executable.getOps<kiln::VariantOp>()) {
            variant.walk([&](kiln::MatmulInt4Op) { ++int4Counts->second; });
            break;
          }
        });
      }
      if (next)
        next(stage, ir);
    };
  std::vector<kiln::driver::StageOutput> outputs;
  std::vector<kiln::driver::BatchBucket> bucketModules(1);
  bucketModules[0].module = std::move(module);
  if (!buckets.empty()) {
    bucketModules[0].batchSize = buckets.front();
    for (int64_t batch : llvm::drop_begin(buckets)) {
      options.batchSize = batch;
      if (progress)
        progress->phase(llvm::formatv("import (batch size {0})", batch).str());
      TimingScope bucketTiming = rootTiming.nest(llvm::formatv("import batch {0}", batch).str());
      OwningOpRef<ModuleOp> bucket = kiln::onnx_import::importOnnxFile(context, inputFile, options);
      if (!bucket || failed(verify(*bucket))) {
        llvm::errs() << inputFile << ": note: importing the model at batch size " << batch
                     << " (--batch-sizes)\n";
        return 1;
      }
      bucketModules.push_back({batch, std::move(bucket)});
    }
    options.batchSize = buckets.front();
  }
  LogicalResult compiled =
      kiln::driver::compileBuckets(bucketModules, compileOptions, outputFile, outputs);
  module = std::move(bucketModules[0].module);
  if (progress)
    progress->clear();
  if (failed(compiled))
    return 1;
  if (int4 && outputFile != "-" && !quiet)
    llvm::outs() << "quantization: " << int4Counts->second
                 << " MatMul/Gemm weights to int4 (groups of " << int4GroupSize
                 << " rows along K, " << (int4ZeroPoints ? "with zero points" : "symmetric")
                 << "), " << int4Counts->first - int4Counts->second
                 << " kept in float (--quantize-exclude, or weights that are not finite); "
                 << (compileOptions.int4Int8Activations
                         ? "activations to int8 per row and group at run time (W4A8)"
                         : "float activations")
                 << "\n";
  if (compileOptions.int4Int8Activations && outputFile != "-" && !quiet &&
      w4a8Counts->ops != w4a8Counts->int8)
    llvm::outs() << "W4A8: " << w4a8Counts->int8 << " of " << w4a8Counts->ops
                 << " 4-bit matmuls take int8 activations; the others ('"
                 << w4a8Counts->firstFloat
                 << "' first) keep float ones: their zero points are not whole numbers from 0 "
                    "to 15\n";
  if (compileOptions.int4Int8Activations && outputFile != "-" && !quiet)
    for (const auto &[chip, slow] : w4a8Counts->perThread)
      llvm::outs() << "W4A8 on " << chip << ": " << slow.first << " of " << w4a8Counts->int8
                   << " 4-bit matmuls run per thread in f32 arithmetic, not on the int8 matrix "
                      "cores ('"
                   << slow.second
                   << "' first): their groups' scales do not fit in LDS, or a group is neither "
                      "a divisor nor a multiple of the instruction's k\n";
  if (stage == Stage::Artifact) {
    if (quantizing) {
      std::string error;
      if (!kiln::quantize::report(context, options, compileOptions, ptq, ptqState, outputFile,
                                  error))
        return error.empty() ? 1 : quantError(error);
    }
    return 0;
  }

  std::string errorMessage;
  auto output = openOutputFile(outputFile, &errorMessage);
  if (!output) {
    llvm::errs() << "kiln-compile: error: " << errorMessage << "\n";
    return 1;
  }
  OpPrintingFlags flags;
  bool elide = elideWeights.getNumOccurrences() ? elideWeights.getValue()
                                                : outputFile == "-";
  if (elide) {
    flags.elideLargeResourceString(64);
    // The printer hex-encodes a blob before deciding to elide it, reading
    // every weight (and faulting in the whole mapped model). Nothing uses
    // the blobs after this point: drop them, so they are never read.
    auto &blobs =
        DenseResourceElementsHandle::getManagerInterface(&context).getBlobManager();
    std::vector<std::string> names;
    blobs.getBlobMap([&](const llvm::StringMap<DialectResourceBlobManager::BlobEntry> &map) {
      for (const auto &entry : map)
        names.push_back(entry.getKey().str());
    });
    for (const std::string &name : names)
      blobs.update(name, AsmResourceBlob());
  }
  if (stage <= Stage::Dispatch) {
    module->print(output->os(), flags);
  } else {
    for (kiln::driver::StageOutput &out : outputs) {
      if (outputs.size() > 1)
        output->os() << "// ----- target " << out.target << " -----\n";
      if (out.module)
        out.module->print(output->os(), flags);
      else
        output->os() << out.text;
    }
  }
  output->keep();
  return 0;
}
