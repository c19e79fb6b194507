# Kiln lit configuration.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
# Fuzz regression inputs are replayed by ctest (test/fuzz), not lit tests.
config.excludes = ["Inputs", "regressions", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%kiln_src", config.kiln_src_root))
# Models exported by bench/models/export.py are cached across runs here.
config.substitutions.append(
    ("%models", os.path.join(config.kiln_obj_root, "models")))
config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(("%kiln_tools_dir", config.kiln_tools_dir))

llvm_config.with_system_environment(["HOME", "TMPDIR"])
llvm_config.use_default_substitutions()

tool_dirs = [config.kiln_tools_dir, config.llvm_tools_dir]
tools = ["kiln-opt", "kiln-compile", "kiln-run", "kiln-bench", "kiln-serve", "kiln-loadgen", "kiln-test-artifact", "not", "split-file"]
# kiln-inspect, and LLVM 22's own tools to build and read gfx code objects
# (the llvm-* in /usr/bin are version 14).
tools += ["kiln-inspect", "llc", "ld.lld", "llvm-readelf", "llvm-objcopy", "llvm-objdump", "llvm-mca"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
