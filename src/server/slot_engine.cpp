#include "server/slot_engine.h"

#include <algorithm>

namespace tandem::server {
namespace {

double seconds_between(CompletionJob::Clock::time_point a, CompletionJob::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

size_t common_prefix(const std::vector<TokenId>& a, const std::vector<TokenId>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

SlotEngine::SlotEngine(std::shared_ptr<const Model> model, std::unique_ptr<Forward> forward)
    : model_(std::move(model)),
      forward_(std::move(forward)),
      context_(forward_->context()),
      max_batch_(std::max(1, forward_->max_batch())),
      n_vocab_(model_->config().n_vocab),
      slots_(size_t(forward_->sequences())) {
  // One logits row per part of a pass: at most one part per slot.
  logits_.resize(slots_.size() * size_t(n_vocab_));
  counters_.slots = int(slots_.size());
  thread_ = std::thread([this] { loop(); });
}

SlotEngine::~SlotEngine() { stop(); }

void SlotEngine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SlotEngine::submit(std::shared_ptr<CompletionJob> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      job->finish(FinishReason::kCancelled, {}, Internal("the server is stopping"));
      return;
    }
    queue_.push_back(std::move(job));
    counters_.queued = int(queue_.size());
  }
  wake_.notify_all();
}

EngineCounters SlotEngine::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void SlotEngine::admit_locked() {
  while (!queue_.empty()) {
    std::shared_ptr<CompletionJob> job = queue_.front();
    if (job->cancelled()) {  // gone before it started
      queue_.pop_front();
      job->finish(FinishReason::kCancelled, {});
      ++counters_.requests_cancelled;
      continue;
    }
    // The free slot whose cache holds the longest prefix of this prompt; else the least recently used.
    Slot* best = nullptr;
    size_t best_shared = 0;
    for (Slot& s : slots_) {
      if (s.job) continue;
      const size_t shared = common_prefix(s.cached, job->prompt);
      if (!best || shared > best_shared || (shared == best_shared && s.last_used < best->last_used)) {
        best = &s;
        best_shared = shared;
      }
    }
    if (!best) break;
    queue_.pop_front();
    Slot& s = *best;
    // At least the prompt's last token is evaluated again: its logits pick the first token.
    const size_t reuse = std::min(best_shared, job->prompt.size() - 1);
    s.cached.resize(reuse);
    s.prefilled = reuse;
    s.decoding = false;
    s.sampler.emplace(job->sampler);
    for (TokenId t : job->prompt) s.sampler->accept(t);
    s.text.emplace(job->stop);
    s.stats = JobStats{};
    s.stats.prompt_tokens = int(job->prompt.size());
    s.stats.reused_tokens = int(reuse);
    s.stats.slot = int(&s - slots_.data());
    s.admitted = CompletionJob::Clock::now();
    s.stats.queue_seconds = seconds_between(job->submitted, s.admitted);
    s.last_used = ++step_;
    s.job = std::move(job);
    counters_.prompt_tokens_reused += reuse;
    ++counters_.slots_busy;
  }
  counters_.queued = int(queue_.size());
}

void SlotEngine::release(Slot& slot, FinishReason reason, Status error) {
  if (reason == FinishReason::kStop || reason == FinishReason::kLength) slot.job->emit(slot.text->finish());
  const auto now = CompletionJob::Clock::now();
  if (slot.stats.completion_tokens > 0) {
    slot.stats.prefill_seconds = seconds_between(slot.admitted, slot.first_token);
    slot.stats.decode_seconds = seconds_between(slot.first_token, now);
  } else {
    slot.stats.prefill_seconds = seconds_between(slot.admitted, now);
  }
  {
    // Counted before the job ends, so whoever waits on it sees the counters with it.
    std::lock_guard<std::mutex> lock(mu_);
    --counters_.slots_busy;
    if (reason == FinishReason::kCancelled) {
      ++counters_.requests_cancelled;
    } else if (reason == FinishReason::kError) {
      ++counters_.requests_failed;
    } else {
      ++counters_.requests_finished;
    }
  }
  slot.job->finish(reason, slot.stats, std::move(error));
  slot.job.reset();
  slot.decoding = false;
  slot.sampler.reset();
  slot.text.reset();
}

bool SlotEngine::advance(Slot& slot, std::span<const float> logits) {
  const Tokenizer& tok = model_->tokenizer();
  const TokenId t = slot.sampler->sample(logits);
  slot.sampler->accept(t);
  if (slot.stats.completion_tokens++ == 0) slot.first_token = CompletionJob::Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.generated_tokens;
  }
  const CompletionJob& job = *slot.job;
  if (!job.ignore_eos && tok.is_eog(t)) {
    release(slot, FinishReason::kStop);
    return false;
  }
  slot.job->emit(slot.text->push(tok.token_to_piece(t, false)));
  if (slot.text->stopped()) {
    release(slot, FinishReason::kStop);
    return false;
  }
  // The token just sampled is evaluated next, at position cached.size(): it must fit the context.
  if (slot.stats.completion_tokens >= job.max_tokens || slot.cached.size() >= size_t(context_)) {
    release(slot, FinishReason::kLength);
    return false;
  }
  slot.next = t;
  slot.decoding = true;
  return true;
}

void SlotEngine::loop() {
  struct Owner {
    Slot* slot;
    size_t tokens;  // prompt tokens of a prefill part; 0 for a decode row
    bool logits;
  };
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] {
        return stopping_ || !queue_.empty() ||
               std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return bool(s.job); });
      });
      if (stopping_) break;
      admit_locked();
    }
    for (Slot& s : slots_)
      if (s.job && s.job->cancelled()) release(s, FinishReason::kCancelled);

    // The pass: every decoding slot's token, then prompt chunks, earliest admitted first.
    std::vector<SequenceTokens> parts;
    std::vector<Owner> owners;
    int room = max_batch_;
    for (Slot& s : slots_) {
      if (!s.job || !s.decoding) continue;
      parts.push_back({int(&s - slots_.data()), std::span(&s.next, 1), int(s.cached.size()), true});
      owners.push_back({&s, 0, true});
      --room;
    }
    std::vector<Slot*> prefilling;
    for (Slot& s : slots_)
      if (s.job && !s.decoding) prefilling.push_back(&s);
    std::sort(prefilling.begin(), prefilling.end(),
              [](const Slot* a, const Slot* b) { return a->last_used < b->last_used; });
    bool has_prompt = false;
    for (Slot* s : prefilling) {
      const std::vector<TokenId>& prompt = s->job->prompt;
      const size_t n = std::min(prompt.size() - s->prefilled, size_t(std::max(room, 0)));
      if (n == 0) continue;
      const bool last = s->prefilled + n == prompt.size();
      parts.push_back({int(s - slots_.data()), std::span(prompt).subspan(s->prefilled, n), int(s->prefilled), last});
      owners.push_back({s, n, last});
      room -= int(n);
      has_prompt = true;
    }
    if (parts.empty()) continue;

    const auto t0 = CompletionJob::Clock::now();
    Status status = forward_->eval_sequences(parts, logits_.data());
    const double dt = seconds_between(t0, CompletionJob::Clock::now());
    if (!status.ok()) {
      // What the failed pass left in these caches is unknown: forget them.
      for (Owner& o : owners) {
        o.slot->cached.clear();
        release(*o.slot, FinishReason::kError, status);
      }
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.passes;
      const size_t decode_rows =
          std::count_if(owners.begin(), owners.end(), [](const Owner& o) { return o.tokens == 0; });
      counters_.decode_rows += decode_rows;
      for (const Owner& o : owners) counters_.prompt_tokens += o.tokens;
      if (has_prompt) {
        counters_.prefill_seconds += dt;
      } else {
        counters_.decode_seconds += dt;
        counters_.last_decode_tokens_per_second = dt > 0 ? double(decode_rows) / dt : 0;
      }
    }
    size_t row = 0;
    for (size_t i = 0; i < owners.size(); ++i) {
      Slot& s = *owners[i].slot;
      if (owners[i].tokens > 0) {
        s.cached.insert(s.cached.end(), parts[i].tokens.begin(), parts[i].tokens.end());
        s.prefilled += owners[i].tokens;
      } else {
        s.cached.push_back(s.next);
      }
      if (owners[i].logits) advance(s, std::span(logits_).subspan(row++ * size_t(n_vocab_), size_t(n_vocab_)));
    }
  }
  // Stopping: every job still here ends, so no client waits forever.
  for (Slot& s : slots_)
    if (s.job) release(s, FinishReason::kCancelled, Internal("the server is stopping"));
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& job : queue_) job->finish(FinishReason::kCancelled, {}, Internal("the server is stopping"));
  queue_.clear();
}

}  // namespace tandem::server
