//===- Handles.h - The objects behind the C API handles ---------*- C++ -*-===//
//
// Each C handle is a reference-counted struct wrapping the C++ object that
// does the work.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_HANDLES_H
#define KILN_RUNTIME_SRC_HANDLES_H

#include "kiln/artifact.hpp"
#include "EmuMatrix.h"
#include "HipDevice.h"
#include "Session.h"
#include "ThreadPool.h"

#include <atomic>
#include <memory>
#include <string>

struct kiln_artifact_s {
  std::atomic<int> references{1};
  std::unique_ptr<kiln::rt::Artifact> artifact;
};

struct kiln_device_s {
  std::atomic<int> references{1};
  std::string name;   // "cpu", "hip:0", "emu:gfx942"
  std::string target; // the code object target it runs: "cpu", "gfx942",
                      // "emu:gfx942"
  // Exactly one of these: the threads of the cpu and emu devices, or the HIP
  // device.
  std::unique_ptr<kiln::rt::ThreadPool> pool;
  std::unique_ptr<kiln::rt::HipDevice> hip;
  // The emulated chip of an emu device (with `pool`).
  const kiln::emu::Chip *emuChip = nullptr;
};

struct kiln_session_s {
  std::atomic<int> references{1};
  std::unique_ptr<kiln::rt::Session> session;
};

#endif // KILN_RUNTIME_SRC_HANDLES_H
