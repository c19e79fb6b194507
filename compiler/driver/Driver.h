//===- Driver.h - the kiln-compile pipeline ---------------------*- C++ -*-===//
//
// The stages of the compiler after import, each one stop-able with
// --emit=<stage>, and the emission of the .kiln artifact.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_DRIVER_H
#define KILN_DRIVER_DRIVER_H

#include "codegen/amdgpu/GPUCodegen.h"
#include "codegen/cpu/CPUCodegen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"

#include <functional>
#include <limits>
#include <string>

namespace kiln::driver {

enum class Stage { Kiln, Dispatch, Linalg, Gpu, LLVM, Assembly, Artifact };

/// One target to compile for: "cpu" or a gfx target.
struct TargetSpec {
  std::string name;               // "cpu", "gfx942", ...
  const gfx::Target *gfx = nullptr; // null for cpu
};

/// Parses "gfx942,mi355x,cpu" (gfx names or chip names); on failure,
/// `error` says which name is unknown and lists the known ones.
mlir::FailureOr<std::vector<TargetSpec>> parseTargets(llvm::StringRef list,
                                                       std::string &error);

/// What a stage after dispatch formation produced for one target.
struct StageOutput {
  std::string target;
  mlir::OwningOpRef<mlir::ModuleOp> module; // Linalg, Gpu, LLVM
  std::string text;                         // Assembly
};

/// Follows a compile as it goes (kiln-compile's progress line). Calls come
/// from the compiling thread, except kernelDone, which MLIR's pass manager
/// may call from its worker threads (one at a time: the driver serializes).
class ProgressObserver {
public:
  virtual ~ProgressObserver();
  /// A step starts: `stage` is "graph passes", "linalg", "gpu", "llvm",
  /// "emulation", "code object" or "artifact"; `target` is empty for the
  /// graph passes and the artifact.
  virtual void beginStep(llvm::StringRef stage, llvm::StringRef target) = 0;
  /// Pass `pass` of the step finished on its `done`-th kernel of `total`.
  virtual void kernelDone(llvm::StringRef pass, int64_t done, int64_t total) = 0;
};

struct CompileOptions {
  Stage stopAfter = Stage::Artifact;
  std::vector<TargetSpec> targets;
  cpu::CPUOptions cpu;
  gfx::GfxOptions gfx; // its target is set per gfx target
  /// Also store each gfx target's kernels built for the host ("emu:<gfx>"
  /// code objects), which the runtime's emu:<gfx> device runs.
  bool emulation = false;
  /// Post-training quantization: the float weights of contractions whose
  /// activation the importer quantized become int8 (kiln-quantize-weights).
  bool quantizeWeights = false;
  /// Weight-only 4-bit quantization (kiln-quantize-int4-weights): rows of K
  /// per group (0: off), and whether groups get zero points.
  int64_t int4GroupSize = 0;
  bool int4ZeroPoints = false;
  /// W4A8: the activations of every kiln.matmul_int4 quantized to int8 at
  /// run time (kiln-quantize-int4-activations).
  bool int4Int8Activations = false;
  /// 3x3 stride-1 float convolutions by Winograd transforms and GEMMs
  /// (kiln-winograd-convs), except the nodes named in `winogradExclude`.
  bool winograd = false;
  /// Their transforms as kiln.winograd_input / kiln.winograd_output, which
  /// only the cpu has kernels for (set when every target is the cpu).
  bool winogradTransformOps = false;
  /// Columns per panel of grouped 4-bit weights (kiln-pack-int4-weights;
  /// the cpu's layout), 0 to keep them row-major.
  int64_t int4Panel = 0;
  /// kiln-space-to-depth-convs, kiln-unstride-pointwise-convs and
  /// kiln-transpose-pointwise-convs (set when every target is the cpu).
  bool unstridePointwise = false;
  /// Columns per panel of the constant weights of float matmuls
  /// (kiln-pack-matmul-panels; the cpu's layout, which the gfx GEMV kernels
  /// read too; widened to the cpu's widest register tile when the cpu reads
  /// them), 0 to keep them row-major.
  int64_t matmulPanel = 0;
  /// Rows a matmul may have at most to be packed so (kiln-compile: any
  /// when every target is the cpu, 8 with gfx targets).
  int64_t matmulPanelRows = std::numeric_limits<int64_t>::max();
  /// Also any number of rows whose product no elementwise op reads (the
  /// cpu's GEMM register tiles read panels; the gfx GEMM kernels do not).
  bool matmulPanelUnfused = true;
  /// Whether a cpu target reads the panels: then they are as wide as its
  /// widest register tile, and only f32 weights are packed. Without one (gfx
  /// targets alone, whose GEMV kernels read any panels) f16 and bf16
  /// weights are packed too.
  bool matmulPanelCpu = true;
  /// Constant f32 weights of matmuls and convolutions stored in the gfx
  /// precision (kiln-narrow-matmul-weights; gfx targets alone, with
  /// `gfx.precision` f16 or bf16).
  bool narrowWeights = false;
  /// Constant weights of matmuls stored k-fastest ([N, K]) and read through a
  /// transpose (kiln-transpose-matmul-weights; gfx targets alone), so the
  /// gfx GEMM kernels read B along k without transposing it.
  bool kMajorWeights = false;
  /// Matmuls take in the transposes of values they alone read
  /// (kiln-form-dispatches' transposed-operands; gfx targets alone, whose
  /// GEMM kernels read their operands through them).
  bool transposedOperands = false;
  /// One-element elementwise dispatches read only by elementwise dispatches
  /// are computed again in each (kiln-form-dispatches' inline-scalars).
  bool inlineScalars = true;
  /// kiln-split-k-convs for a chip of this many CUs (gfx targets alone: the
  /// largest of their chips), 0 to keep every convolution whole.
  int64_t splitKComputeUnits = 0;
  /// RMSNorm written out in elementwise ops and a mean raised to one
  /// kiln.rms_norm (kiln-raise-rms-norms).
  bool raiseRmsNorms = true;
  /// Rotary embeddings written out (slices, a concat, products) raised to
  /// one kiln.rotary_embedding (kiln-raise-rotary-embeddings).
  bool raiseRotaryEmbeddings = true;
  /// kiln-split-reductions (gfx targets alone): reductions of few outputs
  /// split so that this many threads reduce at once, 0 to keep them whole.
  int64_t splitReductionThreads = 0;
  /// ... except reductions of the last axis alone over rows of at most this
  /// many elements, which the gfx row kernels reduce whole (0: none).
  int64_t splitReductionMaxRow = 0;
  /// kiln-merge-range-reductions (gfx targets alone): a minimum and a
  /// maximum of the same rows as one reduction of [x; -x].
  bool mergeRangeReductions = false;
  /// kiln-form-dispatches' epilogue-operands (gfx targets alone): small
  /// elementwise results only an integer matmul's epilogue reads are
  /// computed in its dispatch.
  bool epilogueOperands = false;
  std::vector<std::string> winogradExclude;
  std::string modelPath;
  std::string commandLine; // recorded in the artifact
  /// Testing only: the first stage after dispatch formation fails on the
  /// first kernel, as a pass with a bug would.
  bool testInternalError = false;
  /// Progress reports; may be null.
  ProgressObserver *progress = nullptr;
  /// Every step is timed in a scope nested under this one, named like the
  /// step ("linalg gfx942"); may be null.
  mlir::TimingScope *timing = nullptr;
  /// Called after every stage with the stage name and the IR (for
  /// --dump-ir); may be empty.
  std::function<void(llvm::StringRef stage, mlir::Operation *ir)> dumpStage;
};

/// One batch bucket (kiln-compile --batch-sizes): the model imported with
/// its batch dimension at `batchSize`.
struct BatchBucket {
  int64_t batchSize = 0;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// Registers every dialect and interface the pipeline uses.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// Runs the pipeline on an imported module up to `options.stopAfter`.
/// The import has checked the model, so a diagnostic from a later stage is a
/// compiler bug: it is printed as one line, "MODEL: error: internal error in
/// STAGE at node NODE: MESSAGE" (never an IR dump), and compile fails.
/// For Stage::Kiln and Dispatch, `module` holds the IR of that stage on
/// return; for the later stages, `outputs` holds one entry per target (the
/// cpu target has no Gpu stage). For Artifact, the artifact with a code
/// object per target is written to `outputPath`.
mlir::LogicalResult compile(mlir::OwningOpRef<mlir::ModuleOp> &module,
                            const CompileOptions &options,
                            const std::string &outputPath,
                            std::vector<StageOutput> &outputs);

/// compile() for several batch buckets of one model. Each bucket runs the
/// graph passes on its own; then their public programs become "batch_N"
/// (with kBatchSizeAttr), their executables and private programs get the
/// suffix "_bN", and everything moves into the first bucket's module, which
/// code generation (one code object per target for all buckets) and the
/// artifact see as one model. The artifact stores equal constants once, so
/// the buckets share their weights. On return the first bucket's module
/// holds the IR of Stage::Kiln (the first bucket) or Dispatch (all).
mlir::LogicalResult compileBuckets(std::vector<BatchBucket> &buckets,
                                   const CompileOptions &options,
                                   const std::string &outputPath,
                                   std::vector<StageOutput> &outputs);

} // namespace kiln::driver

#endif // KILN_DRIVER_DRIVER_H
