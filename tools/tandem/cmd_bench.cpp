#include <chrono>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "devices/cpu/matmul/matmul.h"
#include "runtime/session.h"
#include "tools/tandem/bench.h"
#include "tools/tandem/bench_stats.h"
#include "tools/tandem/execution_report_view.h"
#include "tools/tandem/model_options.h"
#include "tools/tandem/numeric_options.h"
#include "tools/tandem/session_factory.h"
#include "tools/tandem/progress_bar.h"

namespace tandem::cli {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Pseudo-random prompt ids in a safe range, like llama-bench (the content does not change the
// work done).
std::vector<TokenId> bench_tokens(int n, int n_vocab, uint32_t seed) {
  std::vector<TokenId> out(static_cast<size_t>(n));
  uint32_t x = seed;
  const uint32_t range = uint32_t(std::max(1, std::min(n_vocab - 100, 900)));
  for (TokenId& t : out) {
    x = x * 1664525u + 1013904223u;
    t = TokenId(std::min<uint32_t>(uint32_t(n_vocab - 1), 100 + x % range));
  }
  return out;
}

std::string human_size(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string human_params(uint64_t n) {
  char buf[64];
  if (n >= 1000000000ull) std::snprintf(buf, sizeof buf, "%.2f B", double(n) / 1e9);
  else std::snprintf(buf, sizeof buf, "%.2f M", double(n) / 1e6);
  return buf;
}

}  // namespace

Result<BenchResult> run_bench(std::shared_ptr<const Model> model, const BenchOptions& o) {
  if (o.n_prompt < 0 || o.n_gen < 0 || (o.n_prompt == 0 && o.n_gen == 0)) {
    return InvalidArgument("bench: -p " + std::to_string(o.n_prompt) + " and -n " + std::to_string(o.n_gen) +
                           ": need a positive prompt or generation length");
  }
  if (o.reps < 1) return InvalidArgument("bench: -r " + std::to_string(o.reps) + " must be >= 1");
  if (o.depth < 0) return InvalidArgument("bench: -d " + std::to_string(o.depth) + " must be >= 0");
  const int n_vocab = model->config().n_vocab;
  const int64_t needed = int64_t(o.depth) + std::max(o.n_prompt, o.n_gen) + 1;
  if (needed > 1 << 20) return InvalidArgument("bench: -d " + std::to_string(o.depth) + " is too deep (at most 1048576 tokens)");
  if (model->config().context_length > 0 && needed - 1 > model->config().context_length) {
    // As llama-bench: measured anyway (the cost does not depend on the model having been trained
    // that far), with a word that the outputs themselves would not be meaningful.
    std::fprintf(stderr, "bench: warning: -d %d + max(-p, -n) = %lld tokens exceed the model's context (%d)\n", o.depth,
                 static_cast<long long>(needed - 1), model->config().context_length);
  }
  const int context = int(needed);
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Forward> forward,
                          make_forward(model, o.devices, o.threads, context,
                                                       std::max(1, std::min(std::max(o.n_prompt, o.depth), 512))));
  std::unique_ptr<Session> s = Session::over(model, std::move(forward));
  BenchResult r;
  // The first repetition warms caches, page-ins and thread spin-up, and is not counted.
  for (int rep = 0; rep <= o.reps; ++rep) {
    // -d: the cache is filled with `depth` tokens before each test (not timed), as llama-bench does.
    auto fill_depth = [&]() -> Status {
      if (o.depth == 0) return Status::Ok();
      return s->eval(bench_tokens(o.depth, n_vocab, 3 + uint32_t(rep)), 0);
    };
    if (o.n_prompt > 0) {
      TANDEM_RETURN_IF_ERROR(fill_depth());
      const std::vector<TokenId> toks = bench_tokens(o.n_prompt, n_vocab, 7 + uint32_t(rep));
      const double t0 = now_seconds();
      TANDEM_RETURN_IF_ERROR(s->eval(toks, o.depth));
      const double dt = now_seconds() - t0;
      if (rep > 0) r.pp_tok_s.push_back(o.n_prompt / dt);
    }
    if (o.n_gen > 0) {
      // tgN: N single-token steps after the depth's tokens, as llama-bench measures generation.
      TANDEM_RETURN_IF_ERROR(fill_depth());
      TokenId t = bench_tokens(1, n_vocab, 99)[0];
      const double t0 = now_seconds();
      for (int i = 0; i < o.n_gen; ++i) {
        const TokenId one[1] = {t};
        TANDEM_RETURN_IF_ERROR(s->eval(one, o.depth + i));
        t = argmax(s->logits());
      }
      const double dt = now_seconds() - t0;
      if (rep > 0) r.tg_tok_s.push_back(o.n_gen / dt);
    }
    if (o.progress) o.progress(double(rep + 1) / double(o.reps + 1));
  }
  if (!o.devices.trace.empty()) TANDEM_RETURN_IF_ERROR(s->forward().write_trace(o.devices.trace));
  r.execution = s->forward().execution_report();
  return r;
}

void print_bench(const Model& model, const BenchOptions& o, const BenchResult& r, bool json,
                 const std::string& model_path) {
  const MeanStd pp = mean_std(r.pp_tok_s), tg = mean_std(r.tg_tok_s);
  if (json) {
    nlohmann::json j = {{"engine", "tandem"},
                        {"model", model_path},
                        {"model_type", model.config().arch_name + " " + model.weight_type_summary()},
                        {"size_bytes", model.weight_bytes()},
                        {"n_params", model.n_params()},
                        {"threads", o.threads},
                        {"isa", cpu::matmul_isa()},
                        {"prefill_arithmetic", cpu::prefill_arithmetic(model.dominant_weight_type())},
                        {"core_gmacs", {{"fp32_fma", cpu::prefill_dot_rates().fp32_fma_macs / 1e9},
                                        {"bf16_dot", cpu::prefill_dot_rates().bf16_dot_macs / 1e9},
                                        {"amx_bf16", cpu::prefill_dot_rates().amx_bf16_macs / 1e9},
                                        {"int8_dot", cpu::prefill_dot_rates().int8_dot_macs / 1e9}}},
                        {"devices", o.devices.devices},
                        {"strategy", o.devices.several() ? o.devices.strategy : ""},
                        {"pp", o.n_prompt},
                        {"tg", o.n_gen},
                        {"depth", o.depth},
                        {"cache_type_k", o.devices.cache_type_k},
                        {"cache_type_v", o.devices.cache_type_v},
                        {"kv_bytes", r.execution.kv_bytes},
                        {"reps", o.reps},
                        {"pp_tok_s", pp.mean},
                        {"pp_tok_s_stddev", pp.stddev},
                        {"tg_tok_s", tg.mean},
                        {"tg_tok_s_stddev", tg.stddev},
                        {"pp_all", r.pp_tok_s},
                        {"tg_all", r.tg_tok_s},
                        {"execution", execution_json(r.execution)}};
    std::cout << j.dump() << "\n";
    return;
  }
  const std::string type = model.config().arch_name + " " + model.weight_type_summary();
  std::printf("| %-18s | %12s | %9s | %-24s | %7s | %7s | %20s |\n", "model", "size", "params", "backend",
              "threads", "test", "t/s");
  std::printf("| %-18s | %12s | %9s | %-24s | %7s | %7s | %20s |\n", "------------------", "-----------:",
              "--------:", "------------------------", "------:", "------:", "-------------------:");
  const std::string backend = o.devices.devices == "cpu" ? std::string("cpu-") + cpu::matmul_isa()
                              : o.devices.several() ? o.devices.devices + ":" + o.devices.strategy
                                                                                 : o.devices.devices;
  auto row = [&](const char* kind, int n, MeanStd m) {
    char test[32], rate[64];
    if (o.depth > 0) std::snprintf(test, sizeof test, "%s%d @ d%d", kind, n, o.depth);
    else std::snprintf(test, sizeof test, "%s%d", kind, n);
    std::snprintf(rate, sizeof rate, "%.2f ± %.2f", m.mean, m.stddev);
    std::printf("| %-18s | %12s | %9s | %-24s | %7d | %7s | %20s |\n", type.c_str(),
                human_size(model.weight_bytes()).c_str(), human_params(model.n_params()).c_str(),
                backend.c_str(), o.threads, test, rate);
  };
  if (o.n_prompt > 0) row("pp", o.n_prompt, pp);
  if (o.n_gen > 0) row("tg", o.n_gen, tg);
  if (o.devices.devices != "cpu") std::printf("\n%s", execution_table(r.execution).c_str());
}

Command add_bench(CLI::App& app) {
  struct Opts {
    ModelOptions model;
    BenchOptions bench;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("bench", "Measure prompt processing (ppN) and generation (tgN) speed");
  o->model.add_to(sub);
  o->bench.devices.add_to(sub);
  sub->add_option("-p,--n-prompt", o->bench.n_prompt, "prompt tokens (ppN; 0: skip), 0..1048576")->transform(integer_in(0, 1 << 20))->capture_default_str();
  sub->add_option("-n,--n-gen", o->bench.n_gen, "generated tokens (tgN; 0: skip), 0..1048576")->transform(integer_in(0, 1 << 20))->capture_default_str();
  sub->add_option("-d,--n-depth", o->bench.depth, "tokens in the KV cache before each test (prompt processed untimed), 0..1048576")
      ->transform(integer_in(0, 1 << 20))
      ->capture_default_str();
  sub->add_option("-r,--repetitions", o->bench.reps, "measured repetitions after one warm-up, 1..1000")->transform(integer_in(1, 1000))->capture_default_str();
  sub->add_flag("--json", o->json, "print one JSON object");
  return {sub, [o]() -> Status {
            TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Model> model, Model::load(o->model.model));
            o->bench.threads = o->model.threads;
            ProgressBar bar("bench");
            if (!o->json) o->bench.progress = [&bar](double f) { bar.update(f); };
            o->bench.devices.model_file = o->model.model;
            TANDEM_ASSIGN_OR_RETURN(BenchResult r, run_bench(model, o->bench));
            print_bench(*model, o->bench, r, o->json, o->model.model);
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
