//===- PerfModel.cpp - How fast a gfx kernel runs, estimated --------------===//

#include "targets/PerfModel.h"

#include <algorithm>
#include <cmath>

namespace kiln::gfx {

const char *boundName(Bound bound) {
  switch (bound) {
  case Bound::MatrixPipe:
    return "matrix pipe";
  case Bound::VectorAlu:
    return "vector ALU";
  case Bound::Issue:
    return "instruction issue";
  case Bound::LdsBandwidth:
    return "LDS bandwidth";
  case Bound::Latency:
    return "occupancy";
  case Bound::Grid:
    return "grid size";
  case Bound::Memory:
    return "memory bandwidth";
  case Bound::MemoryLatency:
    return "memory latency";
  case Bound::Launch:
    return "launch overhead";
  case Bound::Unknown:
    return "unknown";
  }
  return "unknown";
}

std::optional<double> matrixInstructionClocks(const Target &target, const Product &product,
                                              const MatrixInstruction &inst) {
  std::optional<double> peak = product.matrixPeak(inst.input);
  if (!peak || !product.computeUnits || !product.peakClockMHz || target.perf.simdsPerCU <= 0)
    return std::nullopt;
  double perSimdClock = *peak / (double(*product.computeUnits) * double(target.perf.simdsPerCU) *
                                 double(*product.peakClockMHz) * 1e6);
  return double(inst.m * inst.n * inst.k * 2) / perSimdClock;
}

KernelEstimate estimateKernel(const Target &target, const Product &product,
                              const KernelWork &work) {
  KernelEstimate e;
  e.launchSeconds = kLaunchSeconds;
  if (!product.memoryBandwidthGBs) {
    e.note = std::string("no memory bandwidth known for ") + product.name;
    return e;
  }
  e.memoryBandwidth = *product.memoryBandwidthGBs * 1e9;
  const LoopProfile *loop = work.loop ? &*work.loop : nullptr;
  // Little's law: the resident waves (the grid, or as many as the chip
  // holds at the kernel's occupancy) each with one iteration's loads in
  // flight.
  if (loop && loop->globalLoadBytes > 0 && product.computeUnits) {
    double simds = double(*product.computeUnits) * double(target.perf.simdsPerCU);
    double waves = double(work.workgroups) * double(std::max<uint64_t>(1, work.wavesPerWorkgroup));
    double resident = std::min(waves, simds * double(std::max(1u, work.wavesPerSimd)));
    double drawn = resident * loop->globalLoadBytes / kMemoryLatencySeconds;
    if (drawn < e.memoryBandwidth) {
      e.memoryBandwidth = drawn;
      e.memoryLatencyBound = true;
    }
  }
  e.memorySeconds = double(work.bytes) / e.memoryBandwidth;

  bool matrix = loop && loop->matrixInput.has_value();
  if (work.flops != 0) {
    std::optional<double> peak;
    if (matrix)
      peak = product.matrixPeak(*loop->matrixInput);
    else if (product.f32Tflops)
      peak = *product.f32Tflops * 1e12;
    if (!peak || !product.computeUnits || !product.peakClockMHz) {
      e.note = std::string("the ") + (matrix ? "matrix" : "fp32 vector") + " peak of " +
               product.name + " is not known";
      return e;
    }
    e.peak = *peak;
    e.clockMHz = double(*product.peakClockMHz);
    if (matrix && product.sustainedMatrixClockMHz)
      e.clockMHz = double(*product.sustainedMatrixClockMHz);
    double rate = *peak * e.clockMHz / double(*product.peakClockMHz);

    // The grid: how many SIMDs get a wave, and how many waves each.
    double simds = double(*product.computeUnits) * double(target.perf.simdsPerCU);
    double waves = double(work.workgroups) * double(std::max<uint64_t>(1, work.wavesPerWorkgroup));
    e.gridFill = std::min(1.0, waves / simds);
    double available = std::max(1.0, std::ceil(waves / simds));
    e.wavesPerSimd = work.wavesPerSimd ? std::min(double(work.wavesPerSimd), available) : 1.0;

    // The loop: its useful cycles against T(w).
    Bound inner = matrix ? Bound::MatrixPipe : Bound::VectorAlu;
    double useful = loop ? (matrix ? loop->matrixCycles : loop->vectorFlopCycles) : 0;
    if (useful > 0) {
      double latency = loop->cycles / e.wavesPerSimd;
      double lds = target.perf.ldsBytesPerClock > 0
                       ? loop->ldsBytes * double(target.perf.simdsPerCU) /
                             double(target.perf.ldsBytesPerClock) / loop->clocksPerCycle
                       : 0;
      double t = std::max({latency, loop->busiestCycles, lds, useful});
      e.loopEfficiency = useful / t;
      e.oneWaveRatio = loop->cycles / useful;
      if (t == useful)
        inner = matrix ? Bound::MatrixPipe : Bound::VectorAlu;
      else if (t == lds)
        inner = Bound::LdsBandwidth;
      else if (t == loop->busiestCycles)
        inner = Bound::Issue;
      else
        inner = Bound::Latency;
    } else {
      // Nothing to time the arithmetic by: the peak, and a note.
      e.loopEfficiency = 1;
      e.oneWaveRatio = 1;
      e.note = loop ? "no arithmetic found in the kernel's code: timed at the peak"
                    : "the kernel's code was not timed: at the peak";
    }
    e.computeSeconds = double(work.flops) / (rate * e.loopEfficiency * e.gridFill);
    e.bound = e.gridFill < 0.5 ? Bound::Grid : inner;
  }

  e.seconds = std::max({e.computeSeconds, e.memorySeconds, e.launchSeconds});
  if (e.seconds == e.launchSeconds)
    e.bound = Bound::Launch;
  else if (e.seconds == e.memorySeconds)
    e.bound = e.memoryLatencyBound ? Bound::MemoryLatency : Bound::Memory;
  e.achieved = double(work.flops) / e.seconds;
  e.peakFraction = e.peak > 0 ? e.achieved / e.peak : 0;
  e.known = true;
  return e;
}

} // namespace kiln::gfx
