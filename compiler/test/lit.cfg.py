import os

import lit.formats
from lit.llvm import llvm_config

config.name = "TANDEM_COMPILER"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tandem_obj_root, "compiler", "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "inputs"]

llvm_config.with_system_environment(["HOME", "TMP", "TEMP", "ASAN_OPTIONS", "UBSAN_OPTIONS"])
# FileCheck, not, count come from the LLVM install (llvm-19-tools).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.use_default_substitutions()
llvm_config.add_tool_substitutions(["tandem-opt"], [config.tandem_tools_dir, config.llvm_tools_dir])
# Targets of the source tree (the passes' target= option), and a few test-only variants.
config.substitutions.append(("%data", os.path.join(config.tandem_src_root, "data")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "inputs")))
