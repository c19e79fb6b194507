//===- CommandLine.h - The command line of Kiln's compiler tools -*- C++ -*-===//
//
// kiln-compile and kiln-opt link libLLVM and libMLIR, which register hundreds
// of their own options. A Kiln tool's --help lists Kiln's (and the generic
// --help, --version, --llvm-help); the others are hidden from the help and
// from "did you mean" suggestions, and `--llvm-help` lists every option.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_COMMANDLINE_H
#define KILN_DRIVER_COMMANDLINE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <string>
#include <vector>

namespace kiln::driver {

/// `TOOL --version` of a compiler tool: Kiln's version and source revision,
/// the LLVM it is built on and the targets it emits.
std::string compilerVersionText(llvm::StringRef tool);

/// Before cl::ParseCommandLineOptions (after every option is registered):
/// installs the --version printer and keeps only `categories` in --help.
/// Returns the arguments to parse: `--llvm-help` becomes --help-hidden with
/// nothing hidden.
std::vector<const char *> setUpCommandLine(llvm::StringRef tool, int argc, char **argv,
                                           llvm::ArrayRef<const llvm::cl::OptionCategory *>
                                               categories);

/// The options registered so far. At the start of main, before a tool
/// registers its own, these are libLLVM's and libMLIR's static options.
llvm::DenseSet<llvm::cl::Option *> registeredOptions();

/// Like setUpCommandLine, for a tool whose own options share LLVM's general
/// category (kiln-opt: mlir-opt's options and the pass list): hides the
/// `foreign` options (registeredOptions() from the start of main) instead.
std::vector<const char *> setUpCommandLineHiding(llvm::StringRef tool, int argc, char **argv,
                                                 const llvm::DenseSet<llvm::cl::Option *> &foreign);

} // namespace kiln::driver

#endif // KILN_DRIVER_COMMANDLINE_H
