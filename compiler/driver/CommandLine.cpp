//===- CommandLine.cpp - The command line of Kiln's compiler tools --------===//

#include "driver/CommandLine.h"

#include "targets/GfxTargets.h"

#include "kiln/runtime.h"       // KILN_VERSION_*
#include "kiln_revision.h"      // KILN_REVISION (cmake/KilnRevision.cmake)

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

namespace {
// In the tool's first category, so that --help shows it.
cl::opt<bool> llvmHelp("llvm-help",
                       cl::desc("Also list LLVM's and MLIR's own options (for compiler "
                                "developers; the same as --help-hidden with nothing hidden)"));
} // namespace

std::string kiln::driver::compilerVersionText(llvm::StringRef tool) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << tool << " " << KILN_VERSION_MAJOR << "." << KILN_VERSION_MINOR << "."
     << KILN_VERSION_PATCH << " (revision " << KILN_REVISION << ")\n"
     << "LLVM and MLIR " << LLVM_VERSION_STRING << "\n"
     << "targets: cpu (x86-64 host code objects)";
  for (const gfx::Target &target : gfx::allTargets())
    os << ", " << target.name << " (" << target.description << ")";
  os << "\n";
  return text;
}

namespace {
/// Installs the version printer; returns the arguments with --llvm-help
/// replaced by --help-hidden, and whether it was there.
std::vector<const char *> prepare(llvm::StringRef tool, int argc, char **argv,
                                  bool &showEverything) {
  std::string name = tool.str();
  cl::SetVersionPrinter([name](llvm::raw_ostream &os) { os << kiln::driver::compilerVersionText(name); });
  std::vector<const char *> args(argv, argv + argc);
  showEverything = false;
  for (const char *&arg : args)
    if (llvm::StringRef(arg) == "--llvm-help" || llvm::StringRef(arg) == "-llvm-help") {
      arg = "--help-hidden";
      showEverything = true;
    }
  return args;
}
} // namespace

std::vector<const char *>
kiln::driver::setUpCommandLine(llvm::StringRef tool, int argc, char **argv,
                               llvm::ArrayRef<const cl::OptionCategory *> categories) {
  bool showEverything;
  std::vector<const char *> args = prepare(tool, argc, argv, showEverything);
  if (!categories.empty())
    llvmHelp.addCategory(*const_cast<cl::OptionCategory *>(categories.front()));
  if (!showEverything)
    cl::HideUnrelatedOptions(categories);
  return args;
}

llvm::DenseSet<cl::Option *> kiln::driver::registeredOptions() {
  llvm::DenseSet<cl::Option *> options;
  for (auto &entry : cl::getRegisteredOptions())
    options.insert(entry.second);
  return options;
}

std::vector<const char *>
kiln::driver::setUpCommandLineHiding(llvm::StringRef tool, int argc, char **argv,
                                     const llvm::DenseSet<cl::Option *> &foreign) {
  bool showEverything;
  std::vector<const char *> args = prepare(tool, argc, argv, showEverything);
  if (showEverything)
    return args;
  for (auto &entry : cl::getRegisteredOptions()) {
    cl::Option *option = entry.second;
    if (!foreign.contains(option) || option == &llvmHelp)
      continue;
    // --help, --help-list, --version stay.
    bool generic = llvm::any_of(option->Categories, [](const cl::OptionCategory *category) {
      return category->getName() == "Generic Options";
    });
    if (!generic)
      option->setHiddenFlag(cl::ReallyHidden);
  }
  return args;
}
