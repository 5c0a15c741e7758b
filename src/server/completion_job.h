// One request's generation, shared by the HTTP thread that waits on it and the engine thread that
// runs it: what to generate (set before submit), and what came out (a channel of text pieces and
// the end), guarded by one mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/sampler.h"

namespace tandem::server {

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "length", ... (as OpenAI names them)

struct JobStats {
  int prompt_tokens = 0;
  int reused_tokens = 0;  // of the prompt, already in the slot's KV cache
  int completion_tokens = 0;
  double queue_seconds = 0;    // submitted -> admitted to a slot
  double prefill_seconds = 0;  // admitted -> first token sampled
  double decode_seconds = 0;   // first token -> end
  int slot = -1;
};

class CompletionJob {
 public:
  using Clock = std::chrono::steady_clock;

  // What to generate.
  std::vector<TokenId> prompt;
  int max_tokens = 0;  // > 0; the engine also stops where the context ends
  SamplerOptions sampler;
  std::vector<std::string> stop;
  bool ignore_eos = false;

  // Engine side.
  void emit(const std::string& text);
  void finish(FinishReason reason, const JobStats& stats, Status error = Status::Ok());

  // Client side: waits up to `timeout` for text or the end; appends new text to `text` and
  // returns whether the job has finished.
  bool wait(std::chrono::milliseconds timeout, std::string& text);
  // The client went away (or the server stops): the engine frees the slot at its next step.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // After wait() returned true.
  FinishReason reason() const;
  const JobStats& stats() const { return stats_; }
  const Status& error() const { return error_; }

  const Clock::time_point submitted = Clock::now();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  bool finished_ = false;
  FinishReason reason_ = FinishReason::kNone;
  JobStats stats_;
  Status error_ = Status::Ok();
  std::atomic<bool> cancelled_{false};
};

}  // namespace tandem::server
