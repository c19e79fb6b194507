//===- kiln-compile.cpp - The Kiln compiler driver ------------------------===//
//
// Compiles an ONNX model. Today the pipeline stops after import
// (`--emit=kiln`) and prints or writes the kiln IR; later stages add their
// --emit levels here.
//
//===----------------------------------------------------------------------===//

#include "compiler/import/onnx/OnnxImporter.h"
#include "kiln/Dialect/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory kilnCategory("kiln-compile options");

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<model.onnx | model.onnxtxt>"),
                                      cl::Required, cl::cat(kilnCategory));
static cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(kilnCategory));

namespace {
enum class Emit { Kiln };
} // namespace
static cl::opt<Emit> emit("emit", cl::desc("Stage to stop after and print"),
                          cl::values(clEnumValN(Emit::Kiln, "kiln",
                                                "kiln IR after import")),
                          cl::init(Emit::Kiln), cl::cat(kilnCategory));
static cl::list<std::string>
    inputShapes("input-shape",
                cl::desc("Static shape of a graph input, e.g. "
                         "--input-shape=input=1x3x224x224 (repeatable)"),
                cl::value_desc("NAME=DIMS"), cl::cat(kilnCategory));
static cl::opt<bool> elideWeights(
    "elide-weights",
    cl::desc("Print weight blobs as __elided__ (default: on for stdout, off "
             "when writing a file with -o, so the file parses back)"),
    cl::cat(kilnCategory));
static cl::opt<bool> noChecker("no-onnx-checker",
                               cl::desc("Skip libonnx's model checker"),
                               cl::cat(kilnCategory));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  cl::HideUnrelatedOptions({&kilnCategory, &cl::getGeneralCategory()});
  cl::ParseCommandLineOptions(argc, argv, "Kiln: ONNX -> AMD gfx compiler\n");

  kiln::onnx_import::ImportOptions options;
  options.runChecker = !noChecker;
  for (const std::string &spec : inputShapes) {
    std::string message = kiln::onnx_import::parseInputShape(spec, options);
    if (!message.empty()) {
      llvm::errs() << "kiln-compile: error: --input-shape: " << message << "\n";
      return 1;
    }
  }

  MLIRContext context;
  context.loadDialect<kiln::KilnDialect, func::FuncDialect>();
  // One line per diagnostic: "<model>: error: <message>".
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
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

  OwningOpRef<ModuleOp> module =
      kiln::onnx_import::importOnnxFile(context, inputFile, options);
  if (!module || failed(verify(*module)))
    return 1;

  std::string errorMessage;
  auto output = openOutputFile(outputFile, &errorMessage);
  if (!output) {
    llvm::errs() << "kiln-compile: error: " << errorMessage << "\n";
    return 1;
  }
  OpPrintingFlags flags;
  bool elide = elideWeights.getNumOccurrences() ? elideWeights.getValue()
                                                : outputFile == "-";
  if (elide)
    flags.elideLargeResourceString(64);
  module->print(output->os(), flags);
  output->keep();
  return 0;
}
