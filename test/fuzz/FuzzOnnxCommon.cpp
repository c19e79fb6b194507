//===- FuzzOnnxCommon.cpp - The ONNX importer's fuzz target body ----------===//
//
// importOnnxFile reads a path (it maps binary models and resolves external
// data next to them), so each input is written to model.onnx or
// model.onnxtxt in a directory of this process's own under $TMPDIR (or
// /tmp), removed at exit. External data the input names is looked up in that
// directory, which holds nothing else.
//
//===----------------------------------------------------------------------===//

#include "FuzzOnnxCommon.h"

#include "import/onnx/OnnxImporter.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

using namespace mlir;

namespace {

std::string gDir;

void removeDir() {
  std::remove((gDir + "/model.onnx").c_str());
  std::remove((gDir + "/model.onnxtxt").c_str());
  rmdir(gDir.c_str());
}

const std::string &workDir() {
  if (gDir.empty()) {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-fuzz-onnx.XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("kiln-fuzz-onnx: mkdtemp");
      std::abort();
    }
    gDir = pattern;
    std::atexit(removeDir);
  }
  return gDir;
}

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "kiln-fuzz-onnx: %s\n", what.c_str());
  std::abort();
}

} // namespace

void kiln::fuzz::initImport() { (void)workDir(); }

int kiln::fuzz::importModel(const uint8_t *data, size_t size, bool text) {
  std::string path = workDir() + (text ? "/model.onnxtxt" : "/model.onnx");
  if (FILE *file = std::fopen(path.c_str(), "wb")) {
    bool ok = std::fwrite(data, 1, size, file) == size;
    ok = std::fclose(file) == 0 && ok;
    if (!ok)
      fail("cannot write " + path);
  } else {
    fail("cannot create " + path);
  }

  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  context.printStackTraceOnDiagnostic(false);
  unsigned errors = 0;
  std::string firstError;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && errors++ == 0)
      firstError = diag.str();
    return success();
  });

  onnx_import::ImportOptions options;
  OwningOpRef<ModuleOp> module =
      onnx_import::importOnnxFile(context, path, options);
  if (!module) {
    if (errors == 0)
      fail("the import failed without an error");
    return 0;
  }
  if (errors != 0)
    fail("the import returned a module after an error: " + firstError);
  if (failed(verify(*module)))
    fail("the imported module does not verify: " + firstError);
  return 0;
}
