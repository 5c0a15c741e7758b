// tandem: run LLMs across the processors of a device. See README.md for the commands.
#include <cstdio>
#include <vector>

#include "tools/tandem/commands.h"

int main(int argc, char** argv) {
  using namespace tandem;
  CLI::App app{"tandem: LLM inference across CPU, GPU and NPU"};
  app.require_subcommand(0, 1);
  std::vector<cli::Command> commands = {cli::add_run(app), cli::add_bench(app), cli::add_info(app),
                                       cli::add_tokenize(app), cli::add_gen_model(app),
                                       cli::add_devices(app), cli::add_simulate(app),
                                       cli::add_profile(app), cli::add_plan(app), cli::add_report(app), cli::add_buckets(app),
                                       cli::add_compile(app)};

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tandem: error: %s (see tandem --help)\n", e.what());
    return 2;
  }

  Status status = Status::Ok();
  bool ran = false;
  for (cli::Command& c : commands) {
    if (c.app->parsed()) {
      status = c.run();
      ran = true;
    }
  }
  if (!ran) status = cli::run_default_job();
  if (!status.ok()) {
    std::fprintf(stderr, "tandem: error: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
