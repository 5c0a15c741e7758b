// tandem: run LLMs across the processors of a device. See README.md for the commands.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/interrupt.h"
#include "tools/tandem/commands.h"

int main(int argc, char** argv) {
  using namespace tandem;
  CLI::App app{"tandem: LLM inference across CPU, GPU and NPU"};
  app.require_subcommand(0, 1);
  std::vector<cli::Command> commands = {cli::add_run(app), cli::add_bench(app), cli::add_info(app),
                                       cli::add_tokenize(app), cli::add_template(app), cli::add_chat(app), cli::add_serve(app),
                                       cli::add_gen_model(app), cli::add_quantize(app),
                                       cli::add_devices(app), cli::add_simulate(app),
                                       cli::add_profile(app), cli::add_plan(app), cli::add_report(app), cli::add_buckets(app),
                                       cli::add_compile(app)};

  // llama.cpp's -ctk / -ctv (and -ctk=T) as the long options CLI11 can name.
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::string& a : args) {
    for (const auto& [short_name, long_name] : {std::pair{"-ctk", "--cache-type-k"}, std::pair{"-ctv", "--cache-type-v"}}) {
      const std::string s = short_name;
      if (a == s || a.rfind(s + "=", 0) == 0) a = long_name + a.substr(s.size());
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments back to front

  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "tandem: error: %s (see tandem --help)\n", e.what());
    return 2;
  }

  install_interrupt_handlers();
  Status status = Status::Ok();
  bool ran = false;
  for (cli::Command& c : commands) {
    if (c.app->parsed()) {
      status = c.run();
      ran = true;
    }
  }
  if (!ran) status = cli::run_default_job();
  if (const int sig = interrupt_signal(); sig != 0) {
    // A deferred Ctrl-C or SIGTERM: the command stopped at a safe point (and said why if it
    // failed); exit as a shell reports the signal.
    if (!status.ok()) std::fprintf(stderr, "tandem: error: %s\n", status.message().c_str());
    std::fprintf(stderr, "tandem: interrupted (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    return 128 + sig;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "tandem: error: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
