// A generation session: a model on a device, a KV cache, a sampler, and the loop that feeds
// the prompt (prefill) and then one token at a time (decode).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "runtime/graph_forward.h"
#include "runtime/sampler.h"

namespace tandem {

struct GenerateOptions {
  int n_predict = 64;       // tokens to generate at most
  bool stop_at_eog = true;  // stop on EOS / end-of-turn
  SamplerOptions sampler;
};

struct GenerateStats {
  int n_prompt = 0;
  int n_reused = 0;  // prompt tokens already in the KV cache (generate_reusing), not evaluated again
  int n_generated = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
  bool stopped_at_eog = false;
  // Generation ended because the context was full, before n_predict tokens.
  bool stopped_at_context = false;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> create(std::shared_ptr<const Model> model,
                                                 CpuForwardOptions options);  // the decoder on the cpu device
  // A session over any forward pass (a single device's graph, or several devices at once).
  static std::unique_ptr<Session> over(std::shared_ptr<const Model> model, std::unique_ptr<Forward> forward);

  // Starts from an empty context. on_token is called for each generated token and may return
  // false to stop early.
  Status generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                  const std::function<bool(TokenId)>& on_token, GenerateStats* stats = nullptr);

  // As generate, but keeps the KV cache between calls (a conversation's turns, a server slot's
  // requests): `prompt` is the whole context, and its longest prefix shared with the tokens the
  // last call evaluated is not evaluated again (stats->n_reused).
  Status generate_reusing(std::span<const TokenId> prompt, const GenerateOptions& options,
                          const std::function<bool(TokenId)>& on_token, GenerateStats* stats = nullptr);
  // The tokens whose keys and values the cache holds, in order; forget_cache() empties it.
  const std::vector<TokenId>& cached_tokens() const { return cached_; }
  void forget_cache() { cached_.clear(); }

  // Lower-level steps (bench uses them): evaluate tokens after the first n_past positions.
  Status eval(std::span<const TokenId> tokens, int n_past);
  std::span<const float> logits() const { return logits_; }

  Forward& forward() { return *forward_; }
  const Model& model() const { return *model_; }

 private:
  Session() = default;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Forward> forward_;
  std::vector<float> logits_;
  std::vector<TokenId> cached_;  // what the KV cache holds (generate_reusing)
};

}  // namespace tandem
