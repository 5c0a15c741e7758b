#include "server/completion_job.h"

namespace tandem::server {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
    case FinishReason::kNone:
      break;
  }
  return "none";
}

void CompletionJob::emit(const std::string& text) {
  if (text.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ += text;
  }
  cv_.notify_all();
}

void CompletionJob::finish(FinishReason reason, const JobStats& stats, Status error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    reason_ = reason;
    stats_ = stats;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

bool CompletionJob::wait(std::chrono::milliseconds timeout, std::string& text) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return finished_ || !pending_.empty(); });
  text += pending_;
  pending_.clear();
  return finished_;
}

FinishReason CompletionJob::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

}  // namespace tandem::server
