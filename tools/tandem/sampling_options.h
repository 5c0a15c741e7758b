// The sampling options of the commands that generate (run, chat), with their ranges.
#pragma once

#include <CLI/CLI.hpp>

#include "runtime/sampler.h"

namespace tandem::cli {

inline void add_sampler_options(CLI::App* sub, SamplerOptions& s) {
  sub->add_option("--temp", s.temperature, "temperature, >= 0 (0: greedy)")->capture_default_str();
  sub->add_option("--top-k", s.top_k, "top-k, >= 0 (0: off)")->capture_default_str();
  sub->add_option("--top-p", s.top_p, "top-p, in (0, 1] (1: off)")->capture_default_str();
  sub->add_option("--min-p", s.min_p, "min-p, in [0, 1] (0: off)")->capture_default_str();
  sub->add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty, > 0 (1: off)")->capture_default_str();
  sub->add_option("--repeat-last-n", s.repeat_last_n, "tokens the penalty looks back, >= 0")->capture_default_str();
  sub->add_option("--seed", s.seed, "sampling seed, 0..2^64-1")->check(CLI::NonNegativeNumber)->capture_default_str();
}

}  // namespace tandem::cli
