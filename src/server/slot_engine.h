// Continuous batching over one forward pass with a KV cache per slot (a server's N slots).
//
// One engine thread owns the forward pass. Each step it admits queued jobs into free slots (the
// slot whose cache shares the longest prefix with the new prompt, so a conversation's next turn
// lands where its last one left its keys and values), then runs one pass holding every decoding
// slot's next token and as much of the prefilling slots' prompts as the batch has room for:
// decode rows of all slots share one read of the weights, and a long prompt arriving does not
// stall the others' decode for longer than one chunk.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "model/model.h"
#include "runtime/forward.h"
#include "runtime/sampler.h"
#include "server/completion_job.h"
#include "server/text_stream.h"

namespace tandem::server {

// Counters since the start, for /metrics and /health.
struct EngineCounters {
  uint64_t requests_finished = 0;
  uint64_t requests_cancelled = 0;
  uint64_t requests_failed = 0;
  uint64_t prompt_tokens = 0;         // evaluated (not reused)
  uint64_t prompt_tokens_reused = 0;  // found in a slot's cache
  uint64_t generated_tokens = 0;
  uint64_t passes = 0;                       // forward passes
  uint64_t decode_rows = 0;                  // decode tokens over all passes (decode_rows / passes: the batch)
  double prefill_seconds = 0;                // passes that held prompt tokens
  double decode_seconds = 0;                 // passes of decode tokens only
  double last_decode_tokens_per_second = 0;  // the latest decode-only pass, all its slots
  int slots = 0;
  int slots_busy = 0;
  int queued = 0;
};

class SlotEngine {
 public:
  // forward->sequences() slots, each with the context forward->context().
  SlotEngine(std::shared_ptr<const Model> model, std::unique_ptr<Forward> forward);
  ~SlotEngine();  // stop()

  // Ends the engine thread: queued and running jobs end as cancelled (their waiters return).
  void stop();

  void submit(std::shared_ptr<CompletionJob> job);
  EngineCounters counters() const;
  int context() const { return context_; }
  int slots() const { return int(slots_.size()); }
  const Model& model() const { return *model_; }

 private:
  struct Slot {
    std::shared_ptr<CompletionJob> job;
    std::vector<TokenId> cached;  // tokens whose keys and values this slot's cache holds
    size_t prefilled = 0;         // prompt tokens evaluated (or reused) so far
    TokenId next = 0;             // sampled, not yet evaluated (decoding)
    bool decoding = false;
    std::optional<Sampler> sampler;
    std::optional<TextStream> text;
    JobStats stats;
    CompletionJob::Clock::time_point admitted, first_token;
    uint64_t last_used = 0;  // step of its last admission (least recently used picks a slot)
  };

  void loop();
  void admit_locked();
  // Samples slot's next token from `logits` and sends what it makes; false when the job ended.
  bool advance(Slot& slot, std::span<const float> logits);
  void release(Slot& slot, FinishReason reason, Status error = Status::Ok());

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Forward> forward_;
  const int context_, max_batch_, n_vocab_;
  std::vector<Slot> slots_;
  std::vector<float> logits_;

  mutable std::mutex mu_;  // queue_, stopping_, counters_
  std::condition_variable wake_;
  std::deque<std::shared_ptr<CompletionJob>> queue_;
  bool stopping_ = false;
  EngineCounters counters_;
  uint64_t step_ = 0;
  std::thread thread_;
};

}  // namespace tandem::server
