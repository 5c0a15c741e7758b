// `tandem compile` in a build without the MLIR compiler (-DTANDEM_COMPILER=OFF, the runtime-only
// build a device needs): the command is there to say how to get it.
#include "tools/tandem/commands.h"

namespace tandem::cli {

Command add_compile(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("compile", "compile NPU programs (not in this build: configured -DTANDEM_COMPILER=OFF)");
  sub->allow_extras();
  return {sub, [] {
            return Unsupported(
                "compile: this tandem was built without the MLIR compiler (-DTANDEM_COMPILER=OFF); configure with "
                "-DTANDEM_COMPILER=ON after scripts/install-deps.sh (MLIR 19) to get compile and tandem-opt");
          }};
}

}  // namespace tandem::cli
