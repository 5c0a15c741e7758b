// Picks the next token from logits. The chain runs in llama.cpp's default order:
// repetition penalty -> top-k -> top-p -> min-p -> temperature -> draw; temperature <= 0 is greedy.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/tokenizer/tokenizer.h"

namespace tandem {

struct SamplerOptions {
  float temperature = 0.8f;  // >= 0; 0: greedy (argmax)
  int top_k = 40;            // >= 0; 0: off
  float top_p = 0.95f;       // in (0, 1]; 1: off
  float min_p = 0.05f;       // in [0, 1]; 0: off
  float repeat_penalty = 1.0f;  // 1: off; > 1 discourages tokens seen in the last repeat_last_n
  int repeat_last_n = 64;
  uint64_t seed = 0;

  Status validate() const;  // error names the option and value
  static SamplerOptions greedy() {
    SamplerOptions o;
    o.temperature = 0.0f;
    return o;
  }
};

class Sampler {
 public:
  explicit Sampler(SamplerOptions options);

  TokenId sample(std::span<const float> logits);
  // Tells the sampler a token is now part of the context (prompt or generated), for penalties.
  void accept(TokenId token);

 private:
  struct Candidate {
    TokenId id;
    float logit;
    float p;
  };
  void apply_repeat_penalty(std::vector<Candidate>& c) const;

  SamplerOptions opt_;
  std::mt19937_64 rng_;
  std::deque<TokenId> recent_;
  std::vector<Candidate> candidates_;  // reused between calls
};

// Index of the largest value (first one on ties), as greedy decoding everywhere uses.
TokenId argmax(std::span<const float> logits);

}  // namespace tandem
