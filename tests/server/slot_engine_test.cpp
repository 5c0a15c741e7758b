// The slot engine over stories260K: jobs run at once (decode rows batched, prompts chunked beside
// them) answer exactly as a session alone answers each; a cancelled job frees its slot; a prompt
// extending a slot's last one reuses its cache; every job ends with the right reason.
#include "server/slot_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "runtime/graph_forward.h"
#include "runtime/session.h"

namespace tandem::server {
namespace {

const std::string kModel = std::string(TANDEM_SHARED_DIR) + "/testdata/models/stories260K.gguf";

std::shared_ptr<Model> model() {
  static std::shared_ptr<Model> m = [] {
    auto r = Model::load(kModel);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return std::shared_ptr<Model>(std::move(r).value());
  }();
  return m;
}

std::unique_ptr<SlotEngine> engine(int slots, int context = 256, int batch = 64) {
  auto f = make_cpu_forward(model(), {2, context, batch, slots});
  EXPECT_TRUE(f.ok()) << f.status().message();
  return std::make_unique<SlotEngine>(model(), std::move(f).value());
}

std::shared_ptr<CompletionJob> job(const std::string& prompt, int max_tokens) {
  auto j = std::make_shared<CompletionJob>();
  j->prompt = model()->tokenizer().encode(prompt, true, false);
  j->max_tokens = max_tokens;
  j->sampler = SamplerOptions::greedy();
  j->ignore_eos = true;
  return j;
}

std::string wait_all(CompletionJob& j) {
  std::string text;
  while (!j.wait(std::chrono::milliseconds(100), text)) {
  }
  return text;
}

// What a session alone generates, greedy, for the same prompt: its raw bytes, and as the engine
// sends them (stories260K emits stray bytes, which leave as U+FFFD).
std::string alone_raw(const std::vector<TokenId>& prompt, int n) {
  auto s = Session::create(model(), {2, 256, 64});
  EXPECT_TRUE(s.ok());
  GenerateOptions o;
  o.n_predict = n;
  o.stop_at_eog = false;
  o.sampler = SamplerOptions::greedy();
  std::string text;
  EXPECT_TRUE((*s)->generate(prompt, o,
                             [&](TokenId t) {
                               text += model()->tokenizer().token_to_piece(t, false);
                               return true;
                             })
                  .ok());
  return text;
}
std::string alone(const std::vector<TokenId>& prompt, int n) { return valid_utf8(alone_raw(prompt, n)); }

TEST(SlotEngine, ConcurrentJobsAnswerAsEachWouldAlone) {
  auto e = engine(3);
  const std::vector<std::pair<std::string, int>> asks = {{"Once upon a time", 40},
                                                         {"The little dog", 25},
                                                         {"Lily went to the park and", 33},
                                                         {"Tom had a big red ball", 18},
                                                         {"One day", 45}};
  std::vector<std::shared_ptr<CompletionJob>> jobs;
  for (const auto& [p, n] : asks) {
    jobs.push_back(job(p, n));
    e->submit(jobs.back());
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string text = wait_all(*jobs[i]);
    EXPECT_EQ(jobs[i]->reason(), FinishReason::kLength) << i;
    EXPECT_EQ(jobs[i]->stats().completion_tokens, asks[i].second) << i;
    EXPECT_EQ(text, alone(jobs[i]->prompt, asks[i].second)) << "job " << i << ": " << asks[i].first;
  }
  const EngineCounters c = e->counters();
  EXPECT_EQ(c.requests_finished, 5u);
  EXPECT_EQ(c.slots_busy, 0);
  EXPECT_EQ(c.queued, 0);
  // Decode rows were batched: more decode tokens than passes.
  EXPECT_GT(c.decode_rows, c.passes);
}

TEST(SlotEngine, ACancelledJobFreesItsSlotForTheNext) {
  auto e = engine(1, 8192);  // room for a job that runs until it is cancelled
  auto endless = job("Once upon a time", 1 << 30);
  e->submit(endless);
  std::string text;
  while (text.size() < 20) ASSERT_FALSE(endless->wait(std::chrono::milliseconds(100), text));
  auto next = job("The little dog", 5);
  e->submit(next);  // queued behind the endless job: the only slot is busy
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(e->counters().queued, 1);
  endless->cancel();
  wait_all(*endless);
  EXPECT_EQ(endless->reason(), FinishReason::kCancelled);
  wait_all(*next);
  EXPECT_EQ(next->reason(), FinishReason::kLength);
  const EngineCounters c = e->counters();
  EXPECT_EQ(c.requests_cancelled, 1u);
  EXPECT_EQ(c.slots_busy, 0);
}

TEST(SlotEngine, APromptThatExtendsTheLastOneReusesTheSlotsCache) {
  auto e = engine(2);
  auto first = job("Once upon a time there was a", 10);
  e->submit(first);
  const std::string reply = wait_all(*first);
  // The next turn: the first prompt, its reply and more.
  auto second = job("x", 12);
  second->prompt = first->prompt;
  const std::vector<TokenId> more = model()->tokenizer().encode(reply + " and the dog", false, false);
  second->prompt.insert(second->prompt.end(), more.begin(), more.end());
  e->submit(second);
  const std::string text = wait_all(*second);
  EXPECT_EQ(second->stats().slot, first->stats().slot);
  EXPECT_GE(second->stats().reused_tokens, int(first->prompt.size()));
  EXPECT_EQ(text, alone(second->prompt, 12));
}

TEST(SlotEngine, StopsAtAStopStringAndAtTheContextsEnd) {
  auto e = engine(2, 48);
  const std::string raw = alone_raw(job("Once upon a time", 1)->prompt, 30);
  ASSERT_GT(raw.size(), 16u);
  auto stopped = job("Once upon a time", 30);
  stopped->stop = {raw.substr(12, 3)};
  e->submit(stopped);
  EXPECT_EQ(wait_all(*stopped), valid_utf8(raw.substr(0, raw.find(stopped->stop[0]))));
  EXPECT_EQ(stopped->reason(), FinishReason::kStop);

  auto full = job("Once upon a time", 1000);  // the context (48) ends it
  e->submit(full);
  wait_all(*full);
  EXPECT_EQ(full->reason(), FinishReason::kLength);
  EXPECT_EQ(full->stats().prompt_tokens + full->stats().completion_tokens, 48 + 1);
}

TEST(SlotEngine, StoppingEndsQueuedAndRunningJobs) {
  auto e = engine(1, 8192);
  auto running = job("Once", 1 << 30), queued = job("Lily", 5);
  e->submit(running);
  e->submit(queued);
  std::string text;
  while (text.empty()) running->wait(std::chrono::milliseconds(50), text);
  e->stop();
  wait_all(*running);
  wait_all(*queued);
  EXPECT_EQ(running->reason(), FinishReason::kCancelled);
  EXPECT_EQ(queued->reason(), FinishReason::kCancelled);
  auto late = job("Tom", 3);
  e->submit(late);
  wait_all(*late);
  EXPECT_EQ(late->reason(), FinishReason::kCancelled);
}

}  // namespace
}  // namespace tandem::server
