// The subcommands of the `tandem` CLI. Each registers its options on the CLI11 app and returns
// the function that runs it; errors come back as a Status and main() prints them on one line.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace tandem::cli {

struct Command {
  CLI::App* app;                // the subcommand, to see whether it was chosen
  std::function<Status()> run;  // runs it with the parsed options
};

Command add_run(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_info(CLI::App& app);
Command add_tokenize(CLI::App& app);
Command add_template(CLI::App& app);  // the chat template applied to a messages file
Command add_chat(CLI::App& app);      // an interactive conversation
Command add_serve(CLI::App& app);     // the OpenAI-compatible server (without cpp-httplib it says how to get it)
Command add_gen_model(CLI::App& app);
Command add_quantize(CLI::App& app);
Command add_devices(CLI::App& app);
Command add_simulate(CLI::App& app);
Command add_profile(CLI::App& app);
Command add_plan(CLI::App& app);
Command add_report(CLI::App& app);
Command add_buckets(CLI::App& app);
Command add_compile(CLI::App& app);  // without the MLIR compiler (-DTANDEM_COMPILER=OFF) it says how to get it
// What `tandem` does with no subcommand: build the default model, generate, bench.
Status run_default_job();

// Where the repo's data/ folder is (the built-in tokenizer): $TANDEM_DATA_DIR, else the source
// tree the binary was built from.
std::string data_dir();
// Where tandem keeps what it makes once and reuses (the default model, device profiles):
// $XDG_CACHE_HOME/tandem, else ~/.cache/tandem.
std::string user_cache_dir();
int default_threads();

}  // namespace tandem::cli
