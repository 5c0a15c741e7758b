// The sampling options of the commands that generate (run, chat, serve), with their ranges (the
// same SamplerOptions::validate() holds; checked here, an error quotes the value as it was typed).
#pragma once

#include <CLI/CLI.hpp>

#include "runtime/sampler.h"
#include "tools/tandem/numeric_options.h"

namespace tandem::cli {

inline void add_sampler_options(CLI::App* sub, SamplerOptions& s) {
  sub->add_option("--temp", s.temperature, "temperature, >= 0 (0: greedy)")->transform(real_at_least(0))->capture_default_str();
  sub->add_option("--top-k", s.top_k, "top-k, >= 0 (0: off)")->transform(integer_at_least(0))->capture_default_str();
  sub->add_option("--top-p", s.top_p, "top-p, in (0, 1] (1: off)")->transform(real_in({0, 1, true}))->capture_default_str();
  sub->add_option("--min-p", s.min_p, "min-p, in [0, 1] (0: off)")->transform(real_in({0, 1}))->capture_default_str();
  sub->add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty, > 0 (1: off)")
      ->transform(real_above(0))
      ->capture_default_str();
  sub->add_option("--repeat-last-n", s.repeat_last_n, "tokens the penalty looks back, >= 0")
      ->transform(integer_at_least(0))
      ->capture_default_str();
  sub->add_option("--seed", s.seed, "sampling seed, 0..2^64-1")->transform(any_uint64())->capture_default_str();
}

}  // namespace tandem::cli
