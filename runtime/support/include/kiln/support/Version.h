//===- Version.h - What the runtime tools print for --version ---*- C++ -*-===//

#ifndef KILN_SUPPORT_VERSION_H
#define KILN_SUPPORT_VERSION_H

#include <string>

namespace kiln::support {

/// `TOOL --version` of a tool that links only the runtime:
///   kiln-run 0.1.0 (revision 1a2b3c4d5e6f)
///   runtime devices: cpu, hip:N (HIP loaded at run time), emu:gfx942, ...
std::string runtimeVersionText(const char *tool);

} // namespace kiln::support

#endif // KILN_SUPPORT_VERSION_H
