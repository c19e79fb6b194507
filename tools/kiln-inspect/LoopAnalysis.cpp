//===- LoopAnalysis.cpp - A gfx kernel's main loop, timed -----------------===//

#include "LoopAnalysis.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCInstrAnalysis.h"
#include "llvm/MC/MCInstrDesc.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSchedule.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/MCA/Context.h"
#include "llvm/MCA/CustomBehaviour.h"
#include "llvm/MCA/InstrBuilder.h"
#include "llvm/MCA/Pipeline.h"
#include "llvm/MCA/SourceMgr.h"

#include <algorithm>
#include <deque>
#include <map>
#include <regex>

using namespace kiln;
using namespace kiln::inspect;
using namespace llvm;

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

namespace {

/// What kind of work one instruction is, from its mnemonic.
struct InstructionClass {
  const gfx::MatrixInstruction *matrix = nullptr;
  bool anyMatrix = false; // v_mfma*, v_wmma*, v_swmmac*, known to the table or not
  bool lds = false, memory = false, vectorFlop = false, conditionalBranch = false;
  double ldsBytesPerLane = 0;
  double loadBytesPerLane = 0; // a global/buffer/flat load's width
};

/// Bytes of LDS bandwidth one lane's access takes: the width in its name
/// (ds_read_b64, ds_load_u16, ds_write_b16_d16_hi), at least one 4-byte
/// bank (a 16-bit access occupies a bank for the clock as a 32-bit one
/// does), doubled for the two-address forms (ds_read2_b64,
/// ds_store_2addr_b32).
/// The access width an LDS or memory instruction's name gives in bits
/// (`_b64`, `_u16`, `_i8`), in bytes; nullopt when it gives none.
std::optional<double> widthInName(StringRef name) {
  static const std::regex width("_[bui](8|16|32|64|96|128)");
  std::string text = name.str();
  std::smatch match;
  if (!std::regex_search(text, match, width))
    return std::nullopt;
  return std::stoi(match[1].str()) / 8.0;
}

double ldsBytesPerLane(StringRef name) {
  std::optional<double> width = widthInName(name);
  if (!width)
    return 0;
  double bytes = std::max(4.0, *width);
  bool twice = name.contains("read2") || name.contains("write2") || name.contains("2addr");
  return twice ? 2 * bytes : bytes;
}

/// Bytes one lane's global, buffer or flat load brings from memory: the
/// width in its name (global_load_dwordx4, buffer_load_ushort,
/// global_load_b128, global_load_u8, global_load_lds_dwordx4); 0 for other
/// instructions.
double loadBytesPerLane(StringRef name) {
  if (!(name.starts_with("global_load") || name.starts_with("buffer_load") ||
        name.starts_with("flat_load")))
    return 0;
  static const std::regex dwords("dword(x([234]))?");
  std::string text = name.str();
  std::smatch match;
  if (std::regex_search(text, match, dwords))
    return 4.0 * (match[2].matched ? std::stoi(match[2].str()) : 1);
  if (std::optional<double> width = widthInName(name))
    return *width;
  if (name.contains("byte"))
    return 1;
  if (name.contains("short"))
    return 2;
  return 4;
}

/// Floating-point (or dot-product) vector arithmetic: what a vector kernel's
/// flops are made of. Conversions, moves and integer address arithmetic
/// are not.
bool isVectorFlop(StringRef name) {
  if (!name.starts_with("v_") || name.starts_with("v_cvt") || name.starts_with("v_mov"))
    return false;
  if (name.contains("dot"))
    return true;
  bool floatType = name.contains("_f16") || name.contains("_f32") || name.contains("_bf16") ||
                   name.contains("_f64");
  if (!floatType)
    return false;
  for (StringRef op : {"fma", "mac", "mad", "add", "sub", "mul", "max", "min", "exp", "log",
                       "rcp", "rsq", "sqrt"})
    if (name.contains(op))
      return true;
  return false;
}

InstructionClass classify(const gfx::Target &target, StringRef name) {
  InstructionClass c;
  c.matrix = target.instruction(name);
  c.anyMatrix = c.matrix || name.starts_with("v_mfma") || name.starts_with("v_wmma") ||
                name.starts_with("v_swmmac");
  c.lds = name.starts_with("ds_");
  if (c.lds)
    c.ldsBytesPerLane = ldsBytesPerLane(name);
  c.memory = name.starts_with("global_") || name.starts_with("buffer_") ||
             name.starts_with("flat_") || name.starts_with("scratch_");
  c.loadBytesPerLane = loadBytesPerLane(name);
  c.vectorFlop = !c.anyMatrix && isVectorFlop(name);
  c.conditionalBranch = name.starts_with("s_cbranch");
  return c;
}

struct Region {
  size_t begin = 0, end = 0; // instructions [begin, end], end the back edge
  bool loop = false;
};

/// The loops: every backward branch to an address inside the function,
/// one region per loop header, ending at the last branch back to it (a
/// loop's conditional back edge may be followed by an unconditional one).
std::vector<Region> findLoops(const std::vector<DecodedInstruction> &code, uint64_t base) {
  std::vector<Region> loops;
  for (size_t i = 0; i < code.size(); ++i) {
    const DecodedInstruction &d = code[i];
    if (!d.branchTarget || *d.branchTarget < base || *d.branchTarget - base > d.offset)
      continue;
    uint64_t target = *d.branchTarget - base;
    for (size_t j = 0; j <= i; ++j)
      if (code[j].offset == target) {
        auto same = std::find_if(loops.begin(), loops.end(),
                                 [&](const Region &r) { return r.begin == j; });
        if (same != loops.end())
          same->end = i;
        else
          loops.push_back({j, i, true});
        break;
      }
  }
  return loops;
}

/// Runs `region` through LLVM MCA for `iterations` iterations: cycles per
/// iteration, or an error. Instructions the scheduling model does not
/// describe are left out and counted in `skipped`.
Expected<double> runMca(const MCTools &tools, ArrayRef<const MCInst *> region, unsigned iterations,
                        unsigned &skipped) {
  const MCSubtargetInfo &sti = *tools.subtarget;
  const MCInstrInfo &mcii = *tools.instrInfo;
  const llvm::Target &target = *tools.target;
  std::unique_ptr<mca::InstrumentManager> instruments(target.createInstrumentManager(sti, mcii));
  if (!instruments)
    instruments = std::make_unique<mca::InstrumentManager>(sti, mcii);
  std::unique_ptr<mca::InstrPostProcess> post(target.createInstrPostProcess(sti, mcii));
  if (!post)
    post = std::make_unique<mca::InstrPostProcess>(sti, mcii);
  mca::InstrBuilder builder(sti, mcii, *tools.registers, tools.analysis.get(), *instruments,
                            /*CallLatency=*/100);
  SmallVector<std::unique_ptr<mca::Instruction>> sequence;
  skipped = 0;
  for (const MCInst *original : region) {
    const MCInstrDesc &desc = mcii.get(original->getOpcode());
    // The end of the program (s_endpgm is a return to LLVM) is not timed,
    // and InstrBuilder would warn about it on stderr.
    if (desc.isReturn())
      continue;
    // InstrBuilder reads every operand the instruction's description lists;
    // the disassembler leaves trailing modifier operands out of a few
    // encodings (v_pack_b32_f16's op_sel): they are added as 0, their
    // default.
    MCInst padded = *original;
    while (padded.getNumOperands() < desc.getNumOperands())
      padded.addOperand(MCOperand::createImm(0));
    const MCInst *inst = &padded;
    Expected<std::unique_ptr<mca::Instruction>> built = builder.createInstruction(*inst, {});
    if (!built) {
      consumeError(built.takeError());
      ++skipped;
      continue;
    }
    post->postProcessInstruction(**built, *inst);
    sequence.push_back(std::move(*built));
  }
  if (sequence.empty())
    return makeError("LLVM's scheduling model describes none of the loop's instructions");
  mca::CircularSourceMgr source(sequence, iterations);
  std::unique_ptr<mca::CustomBehaviour> behaviour(target.createCustomBehaviour(sti, source, mcii));
  if (!behaviour)
    behaviour = std::make_unique<mca::CustomBehaviour>(sti, source, mcii);
  mca::Context context(*tools.registers, sti);
  mca::PipelineOptions options(/*UOPQSize=*/0, /*DecThr=*/0, /*DW=*/0, /*RFS=*/0, /*LQS=*/0,
                               /*SQS=*/0, /*NoAlias=*/true);
  std::unique_ptr<mca::Pipeline> pipeline = context.createDefaultPipeline(options, source,
                                                                          *behaviour);
  Expected<unsigned> cycles = pipeline->run();
  if (!cycles)
    return makeError("LLVM MCA: " + toString(cycles.takeError()));
  return double(*cycles) / iterations;
}

/// Cycles each of the scheduling model's resources is busy for `inst`
/// (its write resources, resolved through variant classes as MCA does).
StringMap<double> pressureOf(const MCTools &tools, const MCInst &inst) {
  StringMap<double> pressure;
  const MCSubtargetInfo &sti = *tools.subtarget;
  const MCSchedModel &model = sti.getSchedModel();
  unsigned cls = tools.instrInfo->get(inst.getOpcode()).getSchedClass();
  const MCSchedClassDesc *desc = model.getSchedClassDesc(cls);
  for (int depth = 0; desc && desc->isVariant() && depth < 8; ++depth) {
    cls = sti.resolveVariantSchedClass(cls, &inst, tools.instrInfo.get(), model.getProcessorID());
    desc = cls ? model.getSchedClassDesc(cls) : nullptr;
  }
  if (!desc || !desc->isValid() || desc->isVariant())
    return pressure;
  for (const MCWriteProcResEntry *w = sti.getWriteProcResBegin(desc),
                                 *e = sti.getWriteProcResEnd(desc);
       w != e; ++w) {
    const MCProcResourceDesc *resource = model.getProcResource(w->ProcResourceIdx);
    pressure[resource->Name] +=
        double(w->ReleaseAtCycle - w->AcquireAtCycle) / std::max(1u, resource->NumUnits);
  }
  return pressure;
}

/// A readable name for one of LLVM's AMDGPU scheduling resources.
std::string resourceName(StringRef name) {
  if (name == "HWXDL")
    return "matrix pipe";
  if (name == "HWVALU")
    return "vector ALU";
  if (name == "HWLGKM")
    return "LDS and scalar memory issue";
  if (name == "HWVMEM")
    return "vector memory issue";
  if (name == "HWSALU")
    return "scalar ALU";
  if (name == "HWBranch")
    return "branch";
  return name.str();
}

} // namespace

Expected<gfx::LoopProfile> kiln::inspect::analyzeMainLoop(const MCTools &tools,
                                                          const FunctionCode &code,
                                                          const gfx::Target &target,
                                                          unsigned waveSize) {
  std::vector<DecodedInstruction> decoded = decode(tools, code);
  std::vector<std::string> names;
  std::vector<InstructionClass> classes;
  for (const DecodedInstruction &d : decoded) {
    names.push_back(d.valid ? mnemonic(tools, d.inst) : "<unknown>");
    classes.push_back(classify(target, names.back()));
  }

  // The main loop: most matrix instructions, else most vector arithmetic;
  // ties to the smallest (innermost) loop.
  auto score = [&](const Region &r) {
    uint64_t matrix = 0, flops = 0;
    for (size_t i = r.begin; i <= r.end; ++i) {
      matrix += classes[i].anyMatrix;
      flops += classes[i].vectorFlop;
    }
    return std::make_pair(matrix, flops);
  };
  Region best{0, decoded.empty() ? 0 : decoded.size() - 1, false};
  std::pair<uint64_t, uint64_t> bestScore{0, 0};
  bool haveLoop = false;
  for (const Region &r : findLoops(decoded, code.address)) {
    auto s = score(r);
    bool better = !haveLoop || s > bestScore ||
                  (s == bestScore && r.end - r.begin < best.end - best.begin);
    if (better) {
      best = r;
      bestScore = s;
      haveLoop = true;
    }
  }
  if (decoded.empty())
    return makeError("the kernel has no instructions");
  // A GEMM whose K loop was unrolled away (two K steps) keeps its matrix
  // instructions outside every loop; the loops left are the epilogue's
  // blocks laid out behind it. The whole kernel, run once, is its time.
  Region whole{0, decoded.size() - 1, false};
  if (haveLoop && bestScore.first == 0 && score(whole).first > 0)
    best = whole;

  gfx::LoopProfile p;
  p.loop = best.loop;
  std::vector<const MCInst *> region;
  std::map<std::string, uint64_t> matrixCounts;
  for (size_t i = best.begin; i <= best.end; ++i) {
    const InstructionClass &c = classes[i];
    if (!decoded[i].valid)
      continue;
    region.push_back(&decoded[i].inst);
    ++p.instructions;
    if (c.anyMatrix) {
      ++p.matrixInstructions;
      ++matrixCounts[names[i]];
    }
    p.ldsInstructions += c.lds;
    p.memoryInstructions += c.memory;
    p.ldsBytes += c.ldsBytesPerLane * waveSize;
    p.globalLoadBytes += c.loadBytesPerLane * waveSize;
    if (c.conditionalBranch && !(decoded[i].branchTarget && best.loop &&
                                 *decoded[i].branchTarget == code.address + decoded[best.begin].offset))
      ++p.conditionalBranches;
  }
  // The loop's matrix instruction: the one it issues most.
  const gfx::MatrixInstruction *matrix = nullptr;
  uint64_t mostIssued = 0;
  for (auto &[name, count] : matrixCounts)
    if (count > mostIssued) {
      mostIssued = count;
      p.matrixMnemonic = name;
      matrix = target.instruction(name);
    }
  if (matrix)
    p.matrixInput = matrix->input;

  if (target.perf.mcaCycleClocks > 0) {
    p.model = std::string("LLVM MCA (") + target.name + " scheduling model)";
    p.clocksPerCycle = double(target.perf.mcaCycleClocks);
    unsigned skipped = 0;
    Expected<double> cycles = runMca(tools, region, /*iterations=*/100, skipped);
    if (!cycles)
      return cycles.takeError();
    p.cycles = *cycles;
    if (skipped)
      p.model += ", " + std::to_string(skipped) + " instruction(s) it does not describe left out";
    StringMap<double> pressure;
    for (size_t i = best.begin; i <= best.end; ++i) {
      if (!decoded[i].valid)
        continue;
      StringMap<double> one = pressureOf(tools, decoded[i].inst);
      for (auto &entry : one)
        pressure[entry.first()] += entry.second;
      if (classes[i].vectorFlop)
        p.vectorFlopCycles += one.lookup("HWVALU");
    }
    p.matrixCycles = pressure.lookup("HWXDL");
    for (auto &entry : pressure)
      if (entry.second > p.busiestCycles ||
          (entry.second == p.busiestCycles && entry.first() < StringRef(p.busiest))) {
        p.busiestCycles = entry.second;
        p.busiest = resourceName(entry.first());
      }
    return p;
  }

  // Kiln's cost table: one issue cycle per instruction, a matrix
  // instruction the clocks its chip's published rate gives (LLVM's
  // reciprocal throughput where no product has a rate), issued in order by
  // one wave, which stalls at each s_waitcnt until the loads it waits for
  // are back (memory latencies below). The waves of a SIMD share the
  // vector ALU (which runs RDNA's WMMA), the LDS, memory and scalar issue.
  p.model = "Kiln cost table (issue cycles, load latencies of LLVM's CDNA model; matrix "
            "instructions at the chip's published rate)";
  const gfx::Product *rated = nullptr;
  for (const gfx::Product &product : target.products)
    if (matrix && gfx::matrixInstructionClocks(target, product, *matrix)) {
      rated = &product;
      break;
    }
  struct Step {
    double issue = 0; // clocks the wave's issue is busy
    enum Kind { Other, VectorLoad, LdsOrScalarLoad, Wait } kind = Other;
    int vm = -1, lgkm = -1; // Wait: the counts it waits for (-1: not this counter)
  };
  std::vector<Step> steps;
  double vector = 0, ldsIssue = 0, memoryIssue = 0, scalar = 0;
  bool llvmRate = false;
  for (size_t i = best.begin; i <= best.end; ++i) {
    if (!decoded[i].valid)
      continue;
    const InstructionClass &c = classes[i];
    StringRef name = names[i];
    Step step;
    step.issue = 1;
    if (c.anyMatrix) {
      const gfx::MatrixInstruction *inst = target.instruction(name);
      std::optional<double> clocks =
          inst && rated ? gfx::matrixInstructionClocks(target, *rated, *inst) : std::nullopt;
      if (!clocks) {
        double most = 0;
        for (auto &entry : pressureOf(tools, decoded[i].inst))
          most = std::max(most, entry.second);
        if (most <= 0)
          return makeError("no published rate for " + name + " on any " + target.name +
                           " product, and none in LLVM's model: the loop cannot be timed");
        clocks = most;
        llvmRate = true;
      }
      p.matrixCycles += *clocks;
      vector += *clocks;
      step.issue = *clocks;
    } else if (c.lds) {
      ldsIssue += 1;
      step.kind = name.contains("read") || name.contains("load") ? Step::LdsOrScalarLoad
                                                                 : Step::Other;
    } else if (c.memory) {
      memoryIssue += 1;
      if (name.contains("load"))
        step.kind = Step::VectorLoad;
    } else if (name.starts_with("s_")) {
      scalar += 1;
      if (name.starts_with("s_load") || name.starts_with("s_buffer_load"))
        step.kind = Step::LdsOrScalarLoad;
      if (name.starts_with("s_wait")) {
        // s_waitcnt vmcnt(N) lgkmcnt(M) (gfx9-11); s_wait_loadcnt N,
        // s_wait_dscnt N, s_wait_kmcnt N, s_wait_loadcnt_dscnt (gfx12).
        std::string text;
        raw_string_ostream os(text);
        tools.printer->printInst(&decoded[i].inst, 0, "", *tools.subtarget, os);
        auto count = [&](StringRef key) -> int {
          size_t at = StringRef(text).find(key);
          if (at == StringRef::npos)
            return -1;
          StringRef rest = StringRef(text).drop_front(at + key.size()).ltrim(" (");
          unsigned value = 0;
          rest.consumeInteger(0, value);
          return int(value);
        };
        step.kind = Step::Wait;
        step.vm = name == "s_waitcnt" ? count("vmcnt") : -1;
        step.lgkm = name == "s_waitcnt" ? count("lgkmcnt") : -1;
        if (name.starts_with("s_wait_loadcnt"))
          step.vm = count(name == "s_wait_loadcnt_dscnt" ? "s_wait_loadcnt_dscnt" : name);
        if (name == "s_wait_dscnt" || name == "s_wait_kmcnt")
          step.lgkm = count(name);
        if (name == "s_wait_loadcnt_dscnt")
          step.vm = step.lgkm = 0; // a combined encoding: treated as both drained
      }
    } else {
      vector += 1;
    }
    if (c.vectorFlop)
      p.vectorFlopCycles += 1;
    steps.push_back(step);
  }

  // One wave, in order. Loads return after LLVM's CDNA latencies converted
  // to clocks (80 passes of 4 clocks for vector memory, 5 for LDS and
  // scalar memory: the figures LLVM 22's gfx11 model also uses).
  const double vectorLoadLatency = 320, ldsLatency = 20;
  double t = 0;
  std::deque<double> vm, lgkm;
  auto drain = [&](std::deque<double> &queue, int keep) {
    while (keep >= 0 && int(queue.size()) > keep) {
      t = std::max(t, queue.front());
      queue.pop_front();
    }
  };
  auto pass = [&] {
    for (const Step &step : steps) {
      if (step.kind == Step::Wait) {
        drain(vm, step.vm);
        drain(lgkm, step.lgkm);
      }
      t += step.issue;
      if (step.kind == Step::VectorLoad)
        vm.push_back(t + vectorLoadLatency);
      else if (step.kind == Step::LdsOrScalarLoad)
        lgkm.push_back(t + ldsLatency);
    }
  };
  if (best.loop) {
    // The steady state: the third and fourth passes.
    pass();
    pass();
    double start = t;
    pass();
    pass();
    p.cycles = (t - start) / 2;
  } else {
    pass();
    drain(vm, 0);
    drain(lgkm, 0);
    p.cycles = t;
  }
  if (llvmRate)
    p.model = "Kiln cost table (issue cycles, load latencies of LLVM's CDNA model; matrix "
              "instructions at LLVM's reciprocal throughput: no published rate)";
  std::pair<double, const char *> units[] = {{vector, "vector ALU"},
                                             {ldsIssue, "LDS issue"},
                                             {memoryIssue, "vector memory issue"},
                                             {scalar, "scalar issue"}};
  for (auto &[cycles, unit] : units)
    if (cycles > p.busiestCycles) {
      p.busiestCycles = cycles;
      p.busiest = unit;
    }
  return p;
}
