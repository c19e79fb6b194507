//===- Version.cpp - What the runtime tools print for --version -----------===//

#include "kiln/support/Version.h"

#include "kiln/runtime.h"

std::string kiln::support::runtimeVersionText(const char *tool) {
  std::string text = std::string(tool) + " " + kiln_version() + " (revision " +
                     kiln_revision() + ")\nruntime devices: cpu, hip:N (HIP loaded at run time)";
  for (size_t i = 0; i < kiln_emulated_target_count(); ++i)
    text += std::string(", emu:") + kiln_emulated_target(i);
  return text + "\n";
}
