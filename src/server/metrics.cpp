#include "server/metrics.h"

#include <sstream>

namespace tandem::server {
namespace {

void family(std::ostringstream& o, const char* name, const char* type, const char* help) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

template <typename T>
void sample(std::ostringstream& o, const char* name, const char* type, const char* help, T value) {
  family(o, name, type, help);
  o << name << ' ' << value << '\n';
}

}  // namespace

void HttpMetrics::count(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

void HttpMetrics::observe_latency(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i)
    if (seconds <= kLatencyBuckets[i]) ++buckets_[i];
  ++latency_count_;
  latency_sum_ += seconds;
}

std::string HttpMetrics::render(const EngineCounters& e, int preparing) const {
  std::ostringstream o;
  o.precision(9);
  {
    std::lock_guard<std::mutex> lock(mu_);
    family(o, "tandem_requests_total", "counter", "HTTP requests answered, by endpoint and status code.");
    for (const auto& [key, n] : requests_)
      o << "tandem_requests_total{endpoint=\"" << key.first << "\",code=\"" << key.second << "\"} " << n << '\n';
    family(o, "tandem_request_duration_seconds", "histogram",
           "Generation requests (chat and text completions): received to the answer's last byte.");
    for (size_t i = 0; i < kLatencyBuckets.size(); ++i)
      o << "tandem_request_duration_seconds_bucket{le=\"" << kLatencyBuckets[i] << "\"} " << buckets_[i] << '\n';
    o << "tandem_request_duration_seconds_bucket{le=\"+Inf\"} " << latency_count_ << '\n';
    o << "tandem_request_duration_seconds_sum " << latency_sum_ << '\n';
    o << "tandem_request_duration_seconds_count " << latency_count_ << '\n';
  }
  sample(o, "tandem_generations_finished_total", "counter", "Generations that ended (stop or length).",
         e.requests_finished);
  sample(o, "tandem_generations_cancelled_total", "counter", "Generations whose client went away.",
         e.requests_cancelled);
  sample(o, "tandem_generations_failed_total", "counter", "Generations that ended in an error.", e.requests_failed);
  sample(o, "tandem_prompt_tokens_total", "counter", "Prompt tokens evaluated.", e.prompt_tokens);
  sample(o, "tandem_prompt_tokens_reused_total", "counter", "Prompt tokens found in a slot's KV cache (not evaluated).",
         e.prompt_tokens_reused);
  sample(o, "tandem_generated_tokens_total", "counter", "Tokens generated.", e.generated_tokens);
  sample(o, "tandem_prompt_seconds_total", "counter", "Time in forward passes that held prompt tokens.",
         e.prefill_seconds);
  sample(o, "tandem_decode_seconds_total", "counter", "Time in forward passes of decode tokens only.",
         e.decode_seconds);
  sample(o, "tandem_forward_passes_total", "counter", "Forward passes run.", e.passes);
  sample(o, "tandem_decode_rows_total", "counter", "Decode tokens over all passes (per pass: the decode batch).",
         e.decode_rows);
  sample(o, "tandem_decode_tokens_per_second", "gauge",
         "Tokens per second of the latest decode pass, all slots together.", e.last_decode_tokens_per_second);
  sample(o, "tandem_requests_processing", "gauge", "Slots generating now.", e.slots_busy);
  sample(o, "tandem_requests_queued", "gauge", "Requests waiting for a slot.", e.queued);
  sample(o, "tandem_requests_preparing", "gauge",
         "Requests being parsed, rendered through the chat template or tokenized (no slot yet).", preparing);
  sample(o, "tandem_slots", "gauge", "Slots (requests served at once).", e.slots);
  return o.str();
}

}  // namespace tandem::server
