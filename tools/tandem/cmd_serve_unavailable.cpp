// `tandem serve` in a build without cpp-httplib (a cross build, or a machine without
// libcpp-httplib-dev): the command is there to say how to get it.
#include "tools/tandem/commands.h"

namespace tandem::cli {

Command add_serve(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("serve", "an OpenAI-compatible HTTP server (not in this build: no cpp-httplib)");
  sub->allow_extras();
  return {sub, [] {
            return Unsupported(
                "serve: this tandem was built without cpp-httplib; install it (apt-get install libcpp-httplib-dev, "
                "or scripts/install-deps.sh) and configure again");
          }};
}

}  // namespace tandem::cli
