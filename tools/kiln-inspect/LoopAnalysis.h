//===- LoopAnalysis.h - A gfx kernel's main loop, timed ---------*- C++ -*-===//
//
// Finds a gfx kernel's main loop in its machine code and times one
// iteration for one wave (kiln::gfx::LoopProfile, read by PerfModel.h):
//
//   - the main loop is the region from a backward branch's target to the
//     branch that holds the most matrix instructions (ties: the smallest),
//     or, in a kernel without matrix instructions, the innermost loop with
//     the most vector arithmetic; a kernel without loops is timed once
//     through;
//   - on targets whose LLVM scheduling model is real (the target table's
//     mcaCycleClocks, CDNA), LLVM MCA runs the region for 100 iterations
//     with the target's custom behaviour (s_waitcnt), as llvm-mca would:
//     cycles per iteration, and the pressure on each of the model's
//     resources (HWXDL is the matrix pipe, HWVALU the vector ALU, HWLGKM LDS
//     and scalar memory, HWVMEM vector memory);
//   - elsewhere (gfx11, gfx12, gfx1250, where LLVM 22's model carries
//     placeholder latencies) Kiln's cost table: one wave issues in order,
//     one cycle per instruction, a matrix instruction the clocks its chip's
//     published rate gives (PerfModel.h; LLVM's reciprocal throughput where
//     none is published), stalling at each s_waitcnt until its loads are
//     back (LLVM's CDNA load latencies in clocks); RDNA's WMMA counts on the
//     vector ALU.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_INSPECT_LOOPANALYSIS_H
#define KILN_TOOLS_KILN_INSPECT_LOOPANALYSIS_H

#include "CodeObject.h"
#include "targets/PerfModel.h"

#include "llvm/Support/Error.h"

namespace kiln::inspect {

/// Times the main loop of `code`, a kernel of `target` built for wave size
/// `waveSize`. Kiln's cost table takes the matrix instructions' clocks from
/// the target's first product with a published rate.
llvm::Expected<gfx::LoopProfile> analyzeMainLoop(const MCTools &tools, const FunctionCode &code,
                                                 const gfx::Target &target, unsigned waveSize);

} // namespace kiln::inspect

#endif // KILN_TOOLS_KILN_INSPECT_LOOPANALYSIS_H
