//===- FuzzCalibrationTable.cpp - Fuzz target for calibration tables ------===//
//
// kiln-fuzz-calibration-table: parses the input as a calibration table
// (JSON, compiler/quantize/CalibrationData.h). A table that parses has only
// finite ranges with lo <= hi and unique tensor names, and survives a write
// and read roundtrip unchanged; anything else is an error message, never a
// crash or an uncaught exception.
//
//===----------------------------------------------------------------------===//

#include "quantize/CalibrationData.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <unistd.h>

static void fail(const char *what) {
  std::fprintf(stderr, "kiln-fuzz-calibration-table: %s\n", what);
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace kiln::quantize;
  Table table;
  std::string error;
  std::string text(reinterpret_cast<const char *>(data), size);
  if (!parseTable(text, "fuzz.json", table, error)) {
    if (error.empty())
      fail("parse failed without an error message");
    return 0;
  }
  std::set<std::string> names;
  for (const TensorRange &r : table.tensors) {
    if (!std::isfinite(r.lo) || !std::isfinite(r.hi) || r.lo > r.hi)
      fail("a range that is not finite or not ordered was accepted");
    if (!names.insert(r.name).second)
      fail("a tensor name was accepted twice");
  }
  // Written and read back: the same table.
  char path[] = "/tmp/kiln-fuzz-table-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return 0;
  close(fd);
  Table again;
  bool ok = writeTable(table, path, error) && readTable(path, again, error);
  unlink(path);
  if (!ok)
    fail("a parsed table does not write and read back");
  if (again.tensors.size() != table.tensors.size())
    fail("the roundtrip changed the tensor count");
  for (size_t i = 0; i < table.tensors.size(); ++i)
    if (again.tensors[i].name != table.tensors[i].name ||
        again.tensors[i].lo != table.tensors[i].lo || again.tensors[i].hi != table.tensors[i].hi)
      fail("the roundtrip changed a range");
  return 0;
}
