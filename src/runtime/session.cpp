#include "runtime/session.h"

#include <chrono>

namespace tandem {
namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Model> model,
                                                 CpuForwardOptions options) {
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<GraphForward> f, make_cpu_forward(model, options));
  return over(std::move(model), std::move(f));
}

std::unique_ptr<Session> Session::over(std::shared_ptr<const Model> model, std::unique_ptr<Forward> forward) {
  std::unique_ptr<Session> s(new Session());
  s->model_ = std::move(model);
  s->forward_ = std::move(forward);
  s->logits_.resize(size_t(s->model_->config().n_vocab));
  return s;
}

Status Session::eval(std::span<const TokenId> tokens, int n_past) {
  return forward_->eval(tokens, n_past, logits_.data());
}

Status Session::generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                         const std::function<bool(TokenId)>& on_token, GenerateStats* stats) {
  cached_.clear();
  return generate_reusing(prompt, options, on_token, stats);
}

Status Session::generate_reusing(std::span<const TokenId> prompt, const GenerateOptions& options,
                                 const std::function<bool(TokenId)>& on_token, GenerateStats* stats) {
  if (prompt.empty()) return InvalidArgument("generate: the prompt is empty (no tokens)");
  if (options.n_predict < 0) return InvalidArgument("-n: " + std::to_string(options.n_predict) + " must be >= 0");
  TANDEM_RETURN_IF_ERROR(options.sampler.validate());
  const int room = forward_->context() - int(prompt.size());
  if (room < 0) {
    return OutOfRange("prompt: " + std::to_string(prompt.size()) + " tokens exceed the context of " +
                      std::to_string(forward_->context()));
  }
  GenerateStats st;
  st.n_prompt = int(prompt.size());
  Sampler sampler(options.sampler);
  for (TokenId t : prompt) sampler.accept(t);

  // Keep the cached prefix; at least the last prompt token is evaluated, for its logits.
  size_t reuse = 0;
  while (reuse < cached_.size() && reuse + 1 < prompt.size() && cached_[reuse] == prompt[reuse]) ++reuse;
  st.n_reused = int(reuse);
  cached_.clear();  // until the evaluation succeeds, the cache holds nothing we can name
  auto t0 = std::chrono::steady_clock::now();
  TANDEM_RETURN_IF_ERROR(eval(prompt.subspan(reuse), int(reuse)));
  st.prefill_seconds = seconds_since(t0);
  cached_.assign(prompt.begin(), prompt.end());

  t0 = std::chrono::steady_clock::now();
  int n_past = int(prompt.size());
  const int n_predict = std::min(options.n_predict, room);
  for (int i = 0; i < n_predict; ++i) {
    const TokenId next = sampler.sample(logits_);
    sampler.accept(next);
    ++st.n_generated;
    if (options.stop_at_eog && model_->tokenizer().is_eog(next)) {
      st.stopped_at_eog = true;
      break;
    }
    if (on_token && !on_token(next)) break;
    if (i + 1 == n_predict || n_past >= forward_->context()) {
      st.stopped_at_context = options.n_predict > i + 1;
      break;
    }
    const TokenId one[1] = {next};
    Status s = eval(one, n_past);
    if (!s.ok()) {
      cached_.clear();
      return s;
    }
    cached_.push_back(next);
    ++n_past;
  }
  st.decode_seconds = seconds_since(t0);
  if (stats) *stats = st;
  return Status::Ok();
}

}  // namespace tandem
