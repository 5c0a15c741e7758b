#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tandem {

Status SamplerOptions::validate() const {
  // The documented ranges (run --help); values outside are errors, never quietly "off".
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
    return InvalidArgument("--temp: " + std::to_string(temperature) + " must be a finite number >= 0 (0: greedy)");
  }
  if (top_k < 0) return InvalidArgument("--top-k: " + std::to_string(top_k) + " must be >= 0 (0: off)");
  if (!(top_p > 0.0f && top_p <= 1.0f)) return InvalidArgument("--top-p: " + std::to_string(top_p) + " must be in (0, 1] (1: off)");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return InvalidArgument("--min-p: " + std::to_string(min_p) + " must be in [0, 1] (0: off)");
  if (!(repeat_penalty > 0.0f) || !std::isfinite(repeat_penalty)) {
    return InvalidArgument("--repeat-penalty: " + std::to_string(repeat_penalty) + " must be a finite number > 0 (1: off)");
  }
  if (repeat_last_n < 0) return InvalidArgument("--repeat-last-n: " + std::to_string(repeat_last_n) + " must be >= 0");
  return Status::Ok();
}

TokenId argmax(std::span<const float> logits) {
  return TokenId(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(SamplerOptions options) : opt_(options), rng_(options.seed) {}

void Sampler::accept(TokenId token) {
  if (opt_.repeat_last_n == 0) return;
  recent_.push_back(token);
  while (recent_.size() > size_t(opt_.repeat_last_n)) recent_.pop_front();
}

void Sampler::apply_repeat_penalty(std::vector<Candidate>& c) const {
  // As in llama.cpp (CTRL's rule): positive logits are divided, negative ones multiplied, once
  // per distinct recent token.
  std::vector<TokenId> seen(recent_.begin(), recent_.end());
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  for (TokenId t : seen) {
    if (t < 0 || size_t(t) >= c.size()) continue;
    float& l = c[size_t(t)].logit;  // candidates are still indexed by id here
    l = l > 0 ? l / opt_.repeat_penalty : l * opt_.repeat_penalty;
  }
}

TokenId Sampler::sample(std::span<const float> logits) {
  candidates_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) candidates_[i] = {TokenId(i), logits[i], 0.0f};
  std::vector<Candidate>& c = candidates_;
  if (opt_.repeat_penalty != 1.0f) apply_repeat_penalty(c);

  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (opt_.temperature <= 0.0f) return std::min_element(c.begin(), c.end(), by_logit)->id;

  // top-k: keep the k largest logits, sorted.
  size_t keep = c.size();
  if (opt_.top_k > 0) keep = std::min(keep, size_t(opt_.top_k));
  std::partial_sort(c.begin(), c.begin() + ptrdiff_t(keep), c.end(), by_logit);
  c.resize(keep);

  auto softmax = [&](float temp) {
    const float mx = c.front().logit;
    float sum = 0.0f;
    for (Candidate& x : c) sum += (x.p = std::exp((x.logit - mx) / temp));
    for (Candidate& x : c) x.p /= sum;
  };

  // top-p: the smallest prefix whose probability reaches top_p.
  if (opt_.top_p < 1.0f) {
    softmax(1.0f);
    float cum = 0.0f;
    size_t n = 0;
    while (n < c.size()) {
      cum += c[n++].p;
      if (cum >= opt_.top_p) break;
    }
    c.resize(std::max<size_t>(1, n));
  }
  // min-p: drop tokens less likely than min_p times the most likely one.
  if (opt_.min_p > 0.0f) {
    const float threshold = c.front().logit + std::log(opt_.min_p);
    size_t n = 1;
    while (n < c.size() && c[n].logit >= threshold) ++n;
    c.resize(n);
  }
  softmax(opt_.temperature);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  float r = uni(rng_), cum = 0.0f;
  for (const Candidate& x : c) {
    cum += x.p;
    if (r < cum) return x.id;
  }
  return c.back().id;
}

}  // namespace tandem
