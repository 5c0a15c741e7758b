// The same greedy generation run with each sync protocol, back to back: does fast sync ever lose
// to blocking in a real run? (The handoff microbenchmark, sync_handoff_bench, times one wait in
// isolation; this times what a user sees.) Prints a table, or JSON with --json; run it idle and
// beside a build to see both conditions.
//
//   sync_protocols_bench -m MODEL.gguf [--devices opencl,npu] [-n 32] [-p 8] [-r 5] [--json]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "model/model.h"
#include "runtime/hetero_forward.h"

namespace {

using namespace tandem;

struct Run {
  double seconds = 0;
  std::vector<TokenId> tokens;
  DriverStats stats;
};

Result<Run> generate(std::shared_ptr<const Model> model, const std::vector<std::string>& devices, SyncMode sync,
                     bool force_poll, const std::vector<TokenId>& prompt, int n_gen) {
  HeteroOptions o;
  o.devices = devices;
  o.sync = sync;
  o.poll_host_devices = force_poll;
  o.context = std::min(model->config().context_length, 1024);
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<HeteroForward> fwd, HeteroForward::create(model, o));
  const int n_vocab = model->config().n_vocab;
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  Run r;
  const auto t0 = std::chrono::steady_clock::now();
  TANDEM_RETURN_IF_ERROR(fwd->eval(prompt, 0, logits.data()));
  int pos = int(prompt.size());
  for (int i = 0; i < n_gen; ++i) {
    const TokenId next = TokenId(std::max_element(logits.begin(), logits.end()) - logits.begin());
    r.tokens.push_back(next);
    TANDEM_RETURN_IF_ERROR(fwd->eval(std::span(&next, 1), pos++, logits.data()));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.stats = fwd->stats();
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Greedy generation with the fast and the blocking sync protocol, back to back");
  std::string model_path, device_list = "opencl,npu";
  int n_gen = 32, n_prompt = 8, reps = 5;
  bool json = false, force_poll = false;
  app.add_option("-m,--model", model_path, "GGUF model")->required();
  app.add_option("--devices", device_list, "device set")->capture_default_str();
  app.add_option("-n", n_gen, "tokens generated")->capture_default_str();
  app.add_option("-p", n_prompt, "prompt tokens")->capture_default_str();
  app.add_option("-r", reps, "runs of each protocol (alternating)")->capture_default_str();
  app.add_flag("--json", json, "JSON instead of a table");
  app.add_flag("--poll-host-devices", force_poll,
               "fast sync polls even devices computing on every host core (what the old protocol did)");
  CLI11_PARSE(app, argc, argv);

  auto model = Model::load(model_path);
  if (!model.ok()) {
    std::fprintf(stderr, "sync_protocols_bench: %s\n", model.status().message().c_str());
    return 1;
  }
  std::vector<std::string> devices;
  for (size_t at = 0; at <= device_list.size();) {
    const size_t comma = std::min(device_list.find(',', at), device_list.size());
    devices.push_back(device_list.substr(at, comma - at));
    at = comma + 1;
  }
  std::vector<TokenId> prompt;
  for (int i = 0; i < n_prompt; ++i) prompt.push_back(TokenId((i * 7919 + 13) % (*model)->config().n_vocab));

  const SyncMode modes[] = {SyncMode::kFast, SyncMode::kBlocking};
  std::vector<double> seconds[2];
  Run last[2];
  for (int r = 0; r < reps; ++r) {
    for (int k = 0; k < 2; ++k) {
      const int m = (r % 2 == 0) ? k : 1 - k;  // alternate which protocol goes first
      auto run = generate(*model, devices, modes[m], force_poll, prompt, n_gen);
      if (!run.ok()) {
        std::fprintf(stderr, "sync_protocols_bench: %s\n", run.status().message().c_str());
        return 1;
      }
      seconds[m].push_back(run->seconds);
      last[m] = std::move(*run);
    }
  }
  if (last[0].tokens != last[1].tokens) {
    std::fprintf(stderr, "sync_protocols_bench: the protocols generated different tokens\n");
    return 1;
  }
  const double fast = median(seconds[0]), blocking = median(seconds[1]);
  const unsigned cores = std::thread::hardware_concurrency();
  if (json) {
    nlohmann::json j = {{"model", model_path}, {"devices", device_list}, {"tokens", n_gen}, {"prompt", n_prompt},
                        {"reps", reps}, {"host_cores", cores}, {"poll_host_devices", force_poll}, {"fast_s", seconds[0]}, {"blocking_s", seconds[1]},
                        {"fast_median_s", fast}, {"blocking_median_s", blocking}, {"fast_over_blocking", fast / blocking},
                        {"fast_waits", last[0].stats.fast_waits}, {"fast_fallbacks", last[0].stats.fast_fallbacks},
                        {"blocking_by_choice", last[0].stats.blocking_by_choice},
                        {"blocking_no_free_core", last[0].stats.blocking_no_free_core}};
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::printf("%s on %s, %d prompt + %d generated tokens, %d runs each, %u host cores\n", model_path.c_str(),
              device_list.c_str(), n_prompt, n_gen, reps, cores);
  std::printf("| protocol | median s | min s    | waits: polled / blocking by choice / blocking (no free core) |\n");
  std::printf("| -------- | -------: | -------: | --- |\n");
  for (int m = 0; m < 2; ++m) {
    const DriverStats& s = last[m].stats;
    std::printf("| %-8s | %8.3f | %8.3f | %llu / %llu / %llu |\n", sync_mode_name(modes[m]), median(seconds[m]),
                *std::min_element(seconds[m].begin(), seconds[m].end()), (unsigned long long)s.fast_waits,
                (unsigned long long)s.blocking_by_choice, (unsigned long long)s.blocking_no_free_core);
  }
  std::printf("fast / blocking: %.3fx\n", fast / blocking);
  return 0;
}
